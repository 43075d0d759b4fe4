// Package kern holds the float32 kernels of the nn package's 1-D
// convolutional network: cross-correlations with short kernels, their
// gradients, max pooling, batchnorm rows, ReLU, a few matrix-vector and
// vector primitives.
//
// Every kernel has a portable pure-Go implementation. On amd64 CPUs with
// AVX2 and FMA (detected at run time with golang.org/x/sys/cpu) hand-written
// assembly is used instead; the build tag purego, or UAXAI_KERNELS=portable
// at start, forces the portable code. The two give the same bits for every
// input without NaNs (a NaN stays a NaN; its payload may differ): where
// the assembly fuses multiply-adds and sums in 8-lane partial sums, the
// portable path runs a Go twin of it (lanes.go) that does the same
// operations in the same order, with fma32, an exactly rounded fused
// multiply-add in float64 arithmetic; where the assembly rounds every
// operation (the element-wise ops, pooling), plain Go code has its bits.
// Inputs shorter than 8 elements take plain Go code on both paths.
// TestPathsSameBits runs every exported kernel on both paths, bit for
// bit, and TestFMA32 checks fma32 against math/big and the CPU's FMA. The
// price is speed: the twins' fma32 makes the portable convolution about
// 3x slower than plain Go loops would be.
//
// Sums accumulate in float32, except those of Sum64, SqDev64 and SumDot64
// (float64). Slices that are too short, negative sizes or strides are
// programmer errors and make the kernels panic before anything is written.
// Output slices must not overlap the inputs unless a doc comment says so;
// the result is unspecified otherwise.
//
// The convolution's weight gradient is register-blocked for every K: 4 dy
// rows by 3 taps for K = 3 (gradw3x4AVX2), by 3 of the C*K shifted x
// columns otherwise (gradw4x3AVX2). Accelerated reports whether the
// assembly is in use: on amd64 without -tags purego, where x/sys/cpu finds
// AVX2 and FMA (TestPath checks that against /proc/cpuinfo).
package kern
