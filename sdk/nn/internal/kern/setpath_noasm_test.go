//go:build !amd64 || purego

package kern

// setAVX2: this build has the portable path only.
func setAVX2(bool) {}
