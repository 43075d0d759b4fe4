//go:build amd64 && !purego

package kern

// setAVX2 switches the kernels' path in this test binary.
func setAVX2(on bool) { useAVX2 = on }
