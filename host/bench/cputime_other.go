//go:build !linux

package bench

// threadCPU is not available here.
func threadCPU() (int64, bool) { return 0, false }
