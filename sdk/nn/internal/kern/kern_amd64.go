//go:build amd64 && !purego

package kern

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernels. x/sys/cpu also checks that the OS
// saves the YMM registers.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

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
func addConstAVX2(x []float32, c float32)

//go:noescape
func reluAVX2(x []float32)

// convx4AVX2 computes 4 rows of ConvMulti from packed weights:
//
//	dst[r*dstStride+t] += sum_{c<C} sum_{k<K} wp[(c*K+k)*4+r] * x[c*xStride+t+k]
//
// for r < 4, t < T; T >= 8, C >= 1, K >= 1.
//
//go:noescape
func convx4AVX2(dst *float32, dstStride int, x *float32, xStride int, wp *float32, C, K, T int)

// gradw3x4AVX2 sets out[r*3+k] = sum_{t<T} dy[r*dyStride+t] * x[t+k] for
// r < 4, k < 3; T >= 8.
//
//go:noescape
func gradw3x4AVX2(out *[12]float32, dy *float32, dyStride int, x *float32, T int)
