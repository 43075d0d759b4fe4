//go:build !amd64 || purego

package kern

import "os"

const useAVX2 = false

// envErr is KernelsEnv's error here, where only the portable kernels are
// built.
var _, envErr = choose(os.Getenv(KernelsEnv), false)

// Stubs for the assembly kernels; useAVX2 is false so they are never called.

func corr3AVX2(dst, x []float32, w0, w1, w2 float32) { panic("kern: no asm") }
func corrKAVX2(dst, x, w []float32)                  { panic("kern: no asm") }
func dot3AVX2(dy, x []float32) (s0, s1, s2 float32)  { panic("kern: no asm") }
func dotAVX2(x, y []float32) float32                 { panic("kern: no asm") }
func sumAVX2(x []float32) float32                    { panic("kern: no asm") }
func axpyAVX2(dst, x []float32, a float32)           { panic("kern: no asm") }
func scaleAVX2(x []float32, a float32)               { panic("kern: no asm") }

func dotCols16AVX2(y *float32, x *float32, xStride int, w *float32, in int) { panic("kern: no asm") }
func addConstAVX2(x []float32, c float32)                                   { panic("kern: no asm") }
func reluAVX2(x []float32)                                                  { panic("kern: no asm") }

func convx4AVX2(dst *float32, dstStride int, x *float32, xStride int, wp *float32, bias, rel *float32, C, K, T int) {
	panic("kern: no asm")
}

func gradw3x4AVX2(out *[12]float32, dy *float32, dyStride int, x *float32, T int) {
	panic("kern: no asm")
}

func gradw4x3AVX2(out *[12]float32, dy *float32, dyStride int, x0, x1, x2 *float32, T int) {
	panic("kern: no asm")
}

func reluToAVX2(dst, x []float32)                                { panic("kern: no asm") }
func reluGradAVX2(dx, dy, y []float32)                           { panic("kern: no asm") }
func maxPoolAVX2(dst *float32, idx *int32, x *float32, n, k int) { panic("kern: no asm") }
func maxPoolGradAVX2(dx, dy *float32, idx *int32, m, k int)      { panic("kern: no asm") }
func argMaxAVX2(x []float32) int                                 { panic("kern: no asm") }
func sum64AVX2(x []float32) float64                              { panic("kern: no asm") }
func sqDev64AVX2(x []float32, c float64) float64                 { panic("kern: no asm") }
func sumDot64AVX2(x, y []float32) (sx, sxy float64)              { panic("kern: no asm") }
func normalizeAVX2(xh, y, x []float32, mu, s, g, b float32)      { panic("kern: no asm") }
func normalizeGradAVX2(dx, dy, xh []float32, k, md, mdx float32) {
	panic("kern: no asm")
}

func gerAVX2(a *float32, lda int, x, y []float32)             { panic("kern: no asm") }
func gemvTAVX2(y []float32, a *float32, lda int, x []float32) { panic("kern: no asm") }

func expAVX2(dst, x []float32, c *[12]float32) { panic("kern: no asm") }

func fmaPeakAVX2(n int) { panic("kern: no asm") }

func normalizeYAVX2(y, x []float32, mu, sc, ga, be float32, relu int) { panic("kern: no asm") }
func centerAVX2(xh, x []float32, mu, sc float32)                      { panic("kern: no asm") }
