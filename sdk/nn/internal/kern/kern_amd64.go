//go:build amd64 && !purego

package kern

import (
	"os"

	"golang.org/x/sys/cpu"
)

// useAVX2 selects the assembly kernels: where the CPU has AVX2 and FMA
// (x/sys/cpu also checks that the OS saves the YMM registers), unless
// KernelsEnv says otherwise.
var useAVX2, envErr = choose(os.Getenv(KernelsEnv), cpu.X86.HasAVX2 && cpu.X86.HasFMA)

// The assembly kernels in kern_amd64.s. Slice arguments must hold at least
// 8 elements (the length the exported wrappers check); pointer arguments
// have been bounds-checked by the caller.

//go:noescape
func corr3AVX2(dst, x []float32, w0, w1, w2 float32)

//go:noescape
func corrKAVX2(dst, x, w []float32)

//go:noescape
func dot3AVX2(dy, x []float32) (s0, s1, s2 float32)

//go:noescape
func dotAVX2(x, y []float32) float32

//go:noescape
func sumAVX2(x []float32) float32

//go:noescape
func axpyAVX2(dst, x []float32, a float32)

//go:noescape
func scaleAVX2(x []float32, a float32)

//go:noescape
func dotCols16AVX2(y *float32, x *float32, xStride int, w *float32, in int)

//go:noescape
func addConstAVX2(x []float32, c float32)

//go:noescape
func reluAVX2(x []float32)

// convx4AVX2 computes 4 rows of ConvMulti from packed weights:
//
//	dst[r*dstStride+t] = a[r,t] + sum_{c<C} sum_{k<K} wp[(c*K+k)*4+r] * x[c*xStride+t+k]
//
// for r < 4, t < T, with a[r,t] = dst[r*dstStride+t] if bias is nil, else
// bias[r]; if rel is not nil, rel[r*dstStride+t] = max(dst[r*dstStride+t], 0)
// too. T >= 8, C >= 1, K >= 1.
//
//go:noescape
func convx4AVX2(dst *float32, dstStride int, x *float32, xStride int, wp *float32, bias, rel *float32, C, K, T int)

// gradw3x4AVX2 sets out[r*3+k] = sum_{t<T} dy[r*dyStride+t] * x[t+k] for
// r < 4, k < 3; T >= 8.
//
//go:noescape
func gradw3x4AVX2(out *[12]float32, dy *float32, dyStride int, x *float32, T int)

// gradw4x3AVX2 sets out[r*3+j] = sum_{t<T} dy[r*dyStride+t] * xj[t] for
// r < 4, j < 3 (x0, x1, x2 as xj); T >= 8.
//
//go:noescape
func gradw4x3AVX2(out *[12]float32, dy *float32, dyStride int, x0, x1, x2 *float32, T int)

//go:noescape
func reluToAVX2(dst, x []float32)

//go:noescape
func reluGradAVX2(dx, dy, y []float32)

// maxPoolAVX2 is MaxPool for n >= 8 outputs.
//
//go:noescape
func maxPoolAVX2(dst *float32, idx *int32, x *float32, n, k int)

// maxPoolGradAVX2 writes the m >= 8 interior outputs s = k-1..k-2+m of
// MaxPoolGrad, dx pointing at dx[k-1]:
//
//	dx[s] = sum_{j<k} (idx[s-k+1+j] == s ? dy[s-k+1+j] : 0).
//
//go:noescape
func maxPoolGradAVX2(dx, dy *float32, idx *int32, m, k int)

// argMaxAVX2 returns the first position of the largest element of x, NaNs
// skipped; x[0] is not a NaN and len(x) >= 8.
//
//go:noescape
func argMaxAVX2(x []float32) int

// The float64 reductions take a length that is a multiple of 4 (>= 8).

//go:noescape
func sum64AVX2(x []float32) float64

//go:noescape
func sqDev64AVX2(x []float32, c float64) float64

//go:noescape
func sumDot64AVX2(x, y []float32) (sx, sxy float64)

//go:noescape
func normalizeAVX2(xh, y, x []float32, mu, sc, ga, be float32)

//go:noescape
func normalizeYAVX2(y, x []float32, mu, sc, ga, be float32, relu int)

//go:noescape
func centerAVX2(xh, x []float32, mu, sc float32)

//go:noescape
func normalizeGradAVX2(dx, dy, xh []float32, k, md, mdx float32)

// gerAVX2 is Ger for len(x) >= 1, len(y) >= 8.
//
//go:noescape
func gerAVX2(a *float32, lda int, x, y []float32)

// gemvTAVX2 is GemvT for len(x) >= 1, len(y) >= 8.
//
//go:noescape
func gemvTAVX2(y []float32, a *float32, lda int, x []float32)

// expAVX2 is Exp for the len(dst)&^7 first elements.
//
//go:noescape
func expAVX2(dst, x []float32, c *[12]float32)

// fmaPeakAVX2 runs n iterations of 12 independent 8-lane FMAs (192 flops
// each): the core's AVX2 peak, for the benchmarks.
//
//go:noescape
func fmaPeakAVX2(n int)
