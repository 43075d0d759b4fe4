//go:build !amd64 || purego

package kern

func firstMaxAVX2(dst, a, b *float32, n int) { panic("kern: no asm") }
