package kern

import (
	"fmt"
	"math"
)

// The kernels of the network's other layers. The element-wise and pooling
// ones round every operation (no fused multiply-adds), so their plain Go
// code has the assembly's bits; the float64 sums, Ger, GemvT and Exp have
// Go twins of their assembly (lanes.go).

// Relu writes the rectified x to dst:
//
//	dst[i] = max(x[i], 0),  i = 0..len(dst)-1,
//
// with NaN and -0 passed through as ReluInPlace does. len(x) must be at
// least len(dst); dst may be x.
func Relu(dst, x []float32) {
	if len(x) < len(dst) {
		shortPanic("Relu x", len(x), len(dst))
	}
	if useAVX2 && len(dst) >= minVec {
		reluToAVX2(dst, x)
		return
	}
	reluToGeneric(dst, x)
}

// ReluGrad writes the input gradient of a ReLU from its output y:
//
//	dx[i] = 0 if y[i] <= 0, else dy[i],  i = 0..len(dx)-1,
//
// PyTorch's threshold_backward: -0 blocks the gradient, NaN passes it.
// len(dy) and len(y) must be at least len(dx); dx may be dy.
func ReluGrad(dx, dy, y []float32) {
	if len(dy) < len(dx) {
		shortPanic("ReluGrad dy", len(dy), len(dx))
	}
	if len(y) < len(dx) {
		shortPanic("ReluGrad y", len(y), len(dx))
	}
	if useAVX2 && len(dx) >= minVec {
		reluGradAVX2(dx, dy, y)
		return
	}
	reluGradGeneric(dx, dy, y)
}

// checkPool validates the arguments of the pooling kernels: n outputs of a
// k-window over x of n+k-1 samples, with positions that fit an int32.
func checkPool(fn string, n, k, nx, nidx int) {
	if k < 1 {
		panic(fmt.Sprintf("kern: %s: window %d, need >= 1", fn, k))
	}
	if n == 0 {
		return
	}
	if nx < n+k-1 {
		shortPanic(fn+" x", nx, n+k-1)
	}
	if nidx < n {
		shortPanic(fn+" idx", nidx, n)
	}
	if n+k-1 > math.MaxInt32 {
		panic(fmt.Sprintf("kern: %s: %d samples do not fit int32 positions", fn, n+k-1))
	}
}

// MaxPool computes a max pool with window k and stride 1:
//
//	dst[t] = max_{j<k} x[t+j],  idx[t] = t+j of the first maximum,
//
// for t = 0..len(dst)-1: a later sample replaces the running maximum only
// when it is strictly greater (PyTorch's tie rule; a NaN is never picked
// unless it is first). len(idx) must be at least len(dst) and len(x) at
// least len(dst)+k-1.
func MaxPool(dst []float32, idx []int32, x []float32, k int) {
	n := len(dst)
	checkPool("MaxPool", n, k, len(x), len(idx))
	if n == 0 {
		return
	}
	if useAVX2 && n >= minVec {
		maxPoolAVX2(&dst[0], &idx[0], &x[0], n, k)
		return
	}
	maxPoolGeneric(dst, idx, x, k)
}

// MaxPoolGrad writes the input gradient of MaxPool with window k:
//
//	dx[s] = sum_{t : idx[t] = s} dy[t],  s = 0..len(dy)+k-2,
//
// summed in increasing t, for idx as MaxPool writes it (t <= idx[t] < t+k;
// other entries contribute nothing). len(idx) must be at least len(dy) and
// len(dx) at least len(dy)+k-1; dx is overwritten (nothing is written when
// dy is empty).
func MaxPoolGrad(dx, dy []float32, idx []int32, k int) {
	n := len(dy)
	checkPool("MaxPoolGrad", n, k, len(dx), len(idx))
	if n == 0 {
		return
	}
	m := n - k + 1 // interior outputs s = k-1..n-1 see all k windows
	if !useAVX2 || m < minVec {
		maxPoolGradGeneric(dx, dy, idx, k, 0, n+k-1)
		return
	}
	maxPoolGradAVX2(&dx[k-1], &dy[0], &idx[0], m, k)
	maxPoolGradGeneric(dx, dy, idx, k, 0, k-1)
	maxPoolGradGeneric(dx, dy, idx, k, n, n+k-1)
}

// ArgMax returns the largest element of x and the index of its first
// occurrence, scanning from x[0] and replacing only on a strictly greater
// value (a NaN is returned only when it is x[0]). x must not be empty.
func ArgMax(x []float32) (float32, int) {
	n := len(x)
	if n == 0 {
		panic("kern: ArgMax of an empty slice")
	}
	if !useAVX2 || n < minVec || x[0] != x[0] {
		return argMaxGeneric(x)
	}
	// The maximum of the non-NaN elements, found first by value, is what
	// the scan keeps: == and > both treat -0 and +0 as equal.
	p := argMaxAVX2(x)
	return x[p], p
}

// Sum64 returns sum_i x[i] accumulated in float64.
func Sum64(x []float32) float64 {
	n := len(x)
	if n < minVec {
		return sum64Generic(x)
	}
	s := sum64Vec(x[:n&^3])
	for _, v := range x[n&^3:] {
		s += float64(v)
	}
	return s
}

// SqDev64 returns sum_i (x[i] - c)^2 accumulated in float64.
func SqDev64(x []float32, c float64) float64 {
	n := len(x)
	if n < minVec {
		return sqDev64Generic(x, c)
	}
	s := sqDev64Vec(x[:n&^3], c)
	for _, v := range x[n&^3:] {
		d := float64(v) - c
		s += float64(d * d)
	}
	return s
}

// SumDot64 returns sx = sum_i x[i] and sxy = sum_i x[i]*y[i], accumulated
// in float64. len(y) must be at least len(x).
func SumDot64(x, y []float32) (sx, sxy float64) {
	n := len(x)
	if len(y) < n {
		shortPanic("SumDot64 y", len(y), n)
	}
	if n < minVec {
		return sumDot64Generic(x, y)
	}
	sx, sxy = sumDot64Vec(x[:n&^3], y)
	for i := n &^ 3; i < n; i++ {
		a := float64(x[i])
		sx += a
		sxy += float64(a * float64(y[i]))
	}
	return sx, sxy
}

// Normalize is the batchnorm map of one channel row:
//
//	xh[t] = (x[t] - mu) * s,  y[t] = xh[t]*g + b,  t = 0..len(x)-1,
//
// every operation rounded to float32. len(xh) and len(y) must be at least
// len(x).
func Normalize(xh, y, x []float32, mu, s, g, b float32) {
	n := len(x)
	if len(xh) < n {
		shortPanic("Normalize xh", len(xh), n)
	}
	if len(y) < n {
		shortPanic("Normalize y", len(y), n)
	}
	if useAVX2 && n >= minVec {
		normalizeAVX2(xh[:n], y[:n], x, mu, s, g, b)
		return
	}
	normalizeGeneric(xh[:n], y[:n], x, mu, s, g, b)
}

// NormalizeY is Normalize's y alone, rectified if relu is set:
//
//	y[t] = ((x[t] - mu) * s) * g + b,  then max(y[t], 0) with relu,
//
// every operation rounded to float32, the bits of Normalize's y (and of
// Relu after it): a training pass's batchnorm, which keeps no xh, in one
// pass over the row. len(x) must be at least len(y); y may be x.
func NormalizeY(y, x []float32, mu, s, g, b float32, relu bool) {
	n := len(y)
	if len(x) < n {
		shortPanic("NormalizeY x", len(x), n)
	}
	if useAVX2 && n >= minVec {
		r := 0
		if relu {
			r = 1
		}
		normalizeYAVX2(y, x, mu, s, g, b, r)
		return
	}
	normalizeYGeneric(y, x[:n], mu, s, g, b, relu)
}

// Center is Normalize's xh alone: xh[t] = (x[t] - mu) * s, each operation
// rounded to float32. len(x) must be at least len(xh); xh may be x.
func Center(xh, x []float32, mu, s float32) {
	n := len(xh)
	if len(x) < n {
		shortPanic("Center x", len(x), n)
	}
	if useAVX2 && n >= minVec {
		centerAVX2(xh, x, mu, s)
		return
	}
	for i, v := range x[:n] {
		xh[i] = float32(v-mu) * s
	}
}

// NormalizeGrad is the train-mode batchnorm input gradient of one channel
// row:
//
//	dx[t] = k * ((dy[t] - md) - xh[t]*mdx),  t = 0..len(dx)-1,
//
// with k = gamma/sqrt(var+eps), md = mean(dy) and mdx = mean(dy*xh), every
// operation rounded to float32. len(dy) and len(xh) must be at least
// len(dx); dx may be dy.
func NormalizeGrad(dx, dy, xh []float32, k, md, mdx float32) {
	n := len(dx)
	if len(dy) < n {
		shortPanic("NormalizeGrad dy", len(dy), n)
	}
	if len(xh) < n {
		shortPanic("NormalizeGrad xh", len(xh), n)
	}
	if useAVX2 && n >= minVec {
		normalizeGradAVX2(dx, dy, xh, k, md, mdx)
		return
	}
	normalizeGradGeneric(dx, dy, xh, k, md, mdx)
}

// ConvMultiBias is ConvMulti on a dst that starts from the bias:
//
//	dst[o*dstStride+t] = bias[o] + sum_{i<C} sum_{k<K} w[(o*C+i)*K+k] * x[i*xStride+t+k]
//
// for o < O and t < T, summed in the order of ConvMulti (bias first). If
// rel is not nil it also gets the rectified result, at the same offsets:
// rel[o*dstStride+t] = max(dst[o*dstStride+t], 0) (as Relu). pw, if not
// nil, holds w as PackConv packs it, saving the vector path the packing.
func ConvMultiBias(dst, rel []float32, dstStride int, x []float32, xStride int, w, pw, bias []float32, O, C, K, T int) {
	checkDims("ConvMultiBias", O, C, K, T)
	checkRows("ConvMultiBias", "dst", dst, O, dstStride, T)
	if rel != nil {
		checkRows("ConvMultiBias", "rel", rel, O, dstStride, T)
	}
	if n := PackedLen(O, C, K); pw != nil && len(pw) < n {
		shortPanic("ConvMultiBias pw", len(pw), n)
	}
	if len(bias) < O {
		shortPanic("ConvMultiBias bias", len(bias), O)
	}
	if O == 0 || T == 0 {
		return
	}
	if C == 0 || K == 0 || T < minVec || 4*K > packMax {
		for o := 0; o < O; o++ {
			d := dst[o*dstStride : o*dstStride+T]
			for t := range d {
				d[t] = bias[o]
			}
		}
		ConvMulti(dst, dstStride, x, xStride, w, O, C, K, T)
		if rel != nil {
			for o := 0; o < O; o++ {
				Relu(rel[o*dstStride:o*dstStride+T], dst[o*dstStride:o*dstStride+T])
			}
		}
		return
	}
	checkRows("ConvMultiBias", "x", x, C, xStride, T+K-1)
	checkW("ConvMultiBias", w, O, C, K)
	convMulti(dst, rel, dstStride, x, xStride, w, pw, bias, O, C, K, T)
}

// Ger adds the outer product of x and y to the rows of a:
//
//	a[i*lda+j] += x[i]*y[j],  i = 0..len(x)-1, j = 0..len(y)-1.
//
// The multiply-adds are fused (for len(y) >= 8).
func Ger(a []float32, lda int, x, y []float32) {
	checkRows("Ger", "a", a, len(x), lda, len(y))
	if len(x) == 0 || len(y) == 0 {
		return
	}
	if len(y) >= minVec {
		gerVec(a, lda, x, y)
		return
	}
	gerGeneric(a, lda, x, y)
}

// GemvT writes the product of x with the rows of a:
//
//	y[j] = sum_i x[i]*a[i*lda+j],  j = 0..len(y)-1, i = 0..len(x)-1,
//
// summed in increasing i (fused multiply-adds for len(y) >= 8).
func GemvT(y, a []float32, lda int, x []float32) {
	checkRows("GemvT", "a", a, len(x), lda, len(y))
	if len(y) == 0 {
		return
	}
	if len(x) == 0 {
		clear(y)
		return
	}
	if len(y) >= minVec {
		gemvTVec(y, a, lda, x)
		return
	}
	gemvTGeneric(y, a, lda, x)
}

// expConsts are the constants of Exp: the clamp range, log2(e), ln(2) in
// two parts, and the coefficients of Cephes' expf polynomial.
var expConsts = [12]float32{
	-87.33654, 88.37626, 1.44269504088896341, 0.693359375, -2.12194440e-4,
	1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1, 1,
}

// Exp writes dst[i] = e^x[i], i < len(dst), in float32 with a relative
// error of a few ulps (Cephes' expf): x is clamped to [-87.34, 88.38],
// split as x = f ln2 + r with f = round(x log2(e)) and |r| <= ln2/2, and
//
//	e^x = 2^f (1 + r + r^2 (1/2 + r/6 + ... + 1.99e-4 r^5)).
//
// The multiply-adds are fused. A NaN gives an unspecified
// value. len(x) must be at least len(dst); dst may be x.
func Exp(dst, x []float32) {
	if len(x) < len(dst) {
		shortPanic("Exp x", len(x), len(dst))
	}
	n := 0
	if len(dst) >= minVec {
		expVec(dst, x, &expConsts)
		n = len(dst) &^ 7
	}
	if n < len(dst) {
		// The tail by the vector kernel on a padded copy: a value's bits
		// do not depend on its place in dst nor on len(dst).
		var t [minVec]float32
		copy(t[:], x[n:len(dst)])
		expVec(t[:], t[:], &expConsts)
		copy(dst[n:], t[:])
	}
}
