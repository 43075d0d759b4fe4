//go:build amd64 && !purego

package kern

// firstMaxAVX2 is FirstMax on n elements, n a multiple of 8.
//
//go:noescape
func firstMaxAVX2(dst, a, b *float32, n int)
