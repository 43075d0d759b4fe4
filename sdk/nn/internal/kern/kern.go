package kern

import (
	"fmt"
	"math"
)

// Accelerated reports whether the AVX2+FMA assembly kernels are in use.
func Accelerated() bool { return useAVX2 }

// KernelsEnv is the environment variable that chooses the kernels once
// at start: "avx2", "portable", or unset (the best the CPU has). The two
// paths give the same bits (the portable one runs the assembly's
// arithmetic in Go: lanes.go); a run records which it took, for its
// speed.
const KernelsEnv = "UAXAI_KERNELS"

// Path names the kernels in use: "avx2" or "portable".
func Path() string {
	if useAVX2 {
		return "avx2"
	}
	return "portable"
}

// EnvError is the error of a KernelsEnv value that cannot be had (the
// kernels are then the CPU's best), or nil.
func EnvError() error { return envErr }

// choose is the kernels' choice for the KernelsEnv value env on a CPU
// (and build) that has the assembly or not: whether to use it, and the
// error of a value that cannot be had.
func choose(env string, has bool) (bool, error) {
	switch env {
	case "":
		return has, nil
	case "portable":
		return false, nil
	case "avx2":
		if !has {
			return false, fmt.Errorf("%s=avx2: this CPU or build has no AVX2+FMA kernels (accepted: portable, or unset for the CPU's best)", KernelsEnv)
		}
		return true, nil
	}
	return has, fmt.Errorf("%s=%q (accepted: avx2, portable, or unset for the CPU's best)", KernelsEnv, env)
}

// minVec is the shortest length the vector kernels accept: their tails
// reuse an overlapping 8-lane chunk.
const minVec = 8

func shortPanic(what string, have, need int) {
	panic(fmt.Sprintf("kern: %s has length %d, need %d", what, have, need))
}

// Corr3 adds a 3-tap valid cross-correlation of x to dst:
//
//	dst[t] += w0*x[t] + w1*x[t+1] + w2*x[t+2],  t = 0..len(dst)-1.
//
// len(x) must be at least len(dst)+2. It is the forward convolution of one
// (output, input) channel pair; with the taps reversed (w2, w1, w0) on a dy
// padded by two zeros on both sides it is the input gradient.
func Corr3(dst, x []float32, w0, w1, w2 float32) {
	n := len(dst)
	if len(x) < n+2 {
		shortPanic("Corr3 x", len(x), n+2)
	}
	if n >= minVec {
		if useAVX2 {
			corr3AVX2(dst, x, w0, w1, w2)
		} else {
			corr3Lanes(dst, x, w0, w1, w2)
		}
		return
	}
	if n > 0 {
		// The vector kernel on a padded copy: a step's bits do not
		// depend on how many steps the call has.
		var d [minVec]float32
		var xb [minVec + 2]float32
		copy(d[:], dst)
		copy(xb[:], x[:n+2])
		if useAVX2 {
			corr3AVX2(d[:], xb[:], w0, w1, w2)
		} else {
			corr3Lanes(d[:], xb[:], w0, w1, w2)
		}
		copy(dst, d[:n])
	}
}

// CorrK adds a valid cross-correlation with k = len(w) taps to dst:
//
//	dst[t] += sum_{j<k} w[j]*x[t+j],  t = 0..len(dst)-1.
//
// len(x) must be at least len(dst)+k-1. With k = 0 it does nothing.
func CorrK(dst, x, w []float32) {
	n, k := len(dst), len(w)
	if k == 0 || n == 0 {
		return
	}
	if len(x) < n+k-1 {
		shortPanic("CorrK x", len(x), n+k-1)
	}
	if k == 3 {
		Corr3(dst, x, w[0], w[1], w[2])
		return
	}
	if n >= minVec {
		if useAVX2 {
			corrKAVX2(dst, x, w)
		} else {
			corrKLanes(dst, x, w)
		}
		return
	}
	// The vector kernel on a padded copy, as Corr3.
	var st [padStack]float32
	buf := padBuf(st[:], minVec+minVec+k-1)
	d, xb := buf[:minVec], buf[minVec:]
	copy(d, dst)
	copy(xb, x[:n+k-1])
	if useAVX2 {
		corrKAVX2(d, xb, w)
	} else {
		corrKLanes(d, xb, w)
	}
	copy(dst, d[:n])
}

// Dot3 returns the three lagged dot products of dy with x
//
//	s0 = sum_t dy[t]*x[t],  s1 = sum_t dy[t]*x[t+1],  s2 = sum_t dy[t]*x[t+2]
//
// over t = 0..len(dy)-1: the weight gradient of one (output, input) channel
// pair of a 3-tap convolution. len(x) must be at least len(dy)+2. The sums
// accumulate in float32 (16 partial sums per lag on the vector path, which
// keeps the rounding error near sqrt(n/16) ulps for n = 640; float64
// accumulation would halve the vector width for no accuracy the network
// needs).
func Dot3(dy, x []float32) (s0, s1, s2 float32) {
	n := len(dy)
	if len(x) < n+2 {
		shortPanic("Dot3 x", len(x), n+2)
	}
	if n >= minVec {
		if useAVX2 {
			return dot3AVX2(dy, x)
		}
		return dot3Lanes(dy, x)
	}
	return dot3Generic(dy, x)
}

// DotK adds the lagged dot products of dy with x to dst:
//
//	dst[j] += sum_t dy[t]*x[t+j],  j = 0..len(dst)-1, t = 0..len(dy)-1.
//
// len(x) must be at least len(dy)+len(dst)-1.
func DotK(dst, dy, x []float32) {
	k, n := len(dst), len(dy)
	if k == 0 || n == 0 {
		return
	}
	if len(x) < n+k-1 {
		shortPanic("DotK x", len(x), n+k-1)
	}
	if k == 3 {
		s0, s1, s2 := Dot3(dy, x)
		dst[0] += s0
		dst[1] += s1
		dst[2] += s2
		return
	}
	for j := range dst {
		dst[j] += Dot(dy, x[j:j+n])
	}
}

// Dot returns sum_i x[i]*y[i] over i = 0..len(x)-1. len(y) must be at least
// len(x).
func Dot(x, y []float32) float32 {
	if len(y) < len(x) {
		shortPanic("Dot y", len(y), len(x))
	}
	if len(x) >= minVec {
		if useAVX2 {
			return dotAVX2(x, y)
		}
		return dotLanes(x, y)
	}
	return dotGeneric(x, y)
}

// Sum returns sum_i x[i].
func Sum(x []float32) float32 {
	if len(x) >= minVec {
		if useAVX2 {
			return sumAVX2(x)
		}
		return sumLanes(x)
	}
	return sumGeneric(x)
}

// Axpy adds a times x to dst: dst[i] += a*x[i], i = 0..len(dst)-1. len(x)
// must be at least len(dst).
func Axpy(dst, x []float32, a float32) {
	if len(x) < len(dst) {
		shortPanic("Axpy x", len(x), len(dst))
	}
	if len(dst) >= minVec {
		if useAVX2 {
			axpyAVX2(dst, x, a)
		} else {
			axpyFMA(dst, x, a)
		}
		return
	}
	axpyGeneric(dst, x, a)
}

// DotCols writes y[j] = the dot product of w (len(w) values) and column j
// of x, x[i*xStride+j] for i < len(w), for j < len(y), with the bits of a
// Go loop of four partial sums by i mod 4 (the tail into the first), each
// product rounded before its sum, combined as (s0+s1)+(s2+s3): sdk/nn/ops's
// dot, for many columns at a time.
func DotCols(y, x []float32, xStride int, w []float32) {
	n, in := len(y), len(w)
	if in == 0 {
		clear(y)
		return
	}
	if need := (in-1)*xStride + n; len(x) < need || xStride < n {
		shortPanic("DotCols x", len(x), need)
	}
	j := 0
	if useAVX2 {
		for ; j+16 <= n; j += 16 {
			dotCols16AVX2(&y[j], &x[j], xStride, &w[0], in)
		}
	}
	for ; j < n; j++ {
		var s0, s1, s2, s3 float32
		i := 0
		for ; i+4 <= in; i += 4 {
			s0 += float32(w[i] * x[i*xStride+j])
			s1 += float32(w[i+1] * x[(i+1)*xStride+j])
			s2 += float32(w[i+2] * x[(i+2)*xStride+j])
			s3 += float32(w[i+3] * x[(i+3)*xStride+j])
		}
		for ; i < in; i++ {
			s0 += float32(w[i] * x[i*xStride+j])
		}
		y[j] = (s0 + s1) + (s2 + s3)
	}
}

// Scale multiplies x by a in place: x[i] *= a.
func Scale(x []float32, a float32) {
	if useAVX2 && len(x) >= minVec {
		scaleAVX2(x, a)
		return
	}
	scaleGeneric(x, a)
}

// AddConst adds c to every element in place: x[i] += c.
func AddConst(x []float32, c float32) {
	if useAVX2 && len(x) >= minVec {
		addConstAVX2(x, c)
		return
	}
	addConstGeneric(x, c)
}

// ReluInPlace sets the negative elements of x to zero: x[i] = max(x[i], 0).
// NaNs and negative zeros are left as they are.
func ReluInPlace(x []float32) {
	if useAVX2 && len(x) >= minVec {
		reluAVX2(x)
		return
	}
	reluGeneric(x)
}

// checkRows validates a matrix argument: a must hold rows rows of the given
// length, stride elements apart.
func checkRows(fn, what string, a []float32, rows, stride, length int) {
	if stride < 0 || length < 0 {
		panic(fmt.Sprintf("kern: %s: negative %s stride %d or row length %d", fn, what, stride, length))
	}
	if rows == 0 || length == 0 {
		return
	}
	// (rows-1)*stride + length, saturating instead of overflowing: the
	// assembly trusts this check.
	need := mulSat(rows-1, stride)
	if need > math.MaxInt-length {
		need = math.MaxInt
	} else {
		need += length
	}
	if len(a) < need {
		shortPanic(fn+" "+what, len(a), need)
	}
}

// mulSat returns a*b for a, b >= 0, or math.MaxInt if that overflows.
func mulSat(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

// checkW checks that w holds the O*C*K weights of a convolution.
func checkW(fn string, w []float32, O, C, K int) {
	if need := mulSat(mulSat(O, C), K); len(w) < need {
		shortPanic(fn+" weights", len(w), need)
	}
}

func checkDims(fn string, O, C, K, T int) {
	if O < 0 || C < 0 || K < 0 || T < 0 {
		panic(fmt.Sprintf("kern: %s: negative size O=%d C=%d K=%d T=%d", fn, O, C, K, T))
	}
}

// packMax bounds the packed weight block handed to the assembly: 4 output
// rows times up to packMax/(4K) input channels per call.
const packMax = 768

// ConvMulti adds a K-tap valid cross-correlation of C input rows into O
// output rows, PyTorch's conv1d without bias:
//
//	dst[o*dstStride+t] += sum_{i<C} sum_{k<K} w[(o*C+i)*K+k] * x[i*xStride+t+k]
//
// for o < O and t < T. w is laid out (O, C, K); input rows have T+K-1
// valid samples. The vector kernel computes 4 output rows by 16 time steps
// per register block, so every load of x feeds 4 output channels.
func ConvMulti(dst []float32, dstStride int, x []float32, xStride int, w []float32, O, C, K, T int) {
	checkDims("ConvMulti", O, C, K, T)
	checkRows("ConvMulti", "dst", dst, O, dstStride, T)
	if O == 0 || C == 0 || K == 0 || T == 0 {
		return
	}
	checkRows("ConvMulti", "x", x, C, xStride, T+K-1)
	checkW("ConvMulti", w, O, C, K)
	if 4*K > packMax {
		convMultiGeneric(dst, dstStride, x, xStride, w, O, C, K, T)
		return
	}
	if T < minVec {
		convPadded(dst, dstStride, x, xStride, w, O, C, K, T)
		return
	}
	convMulti(dst, nil, dstStride, x, xStride, w, nil, nil, O, C, K, T)
}

// padStack is the size of the stack buffer of the padded calls.
const padStack = 512

// padBuf is st[:n] when it is long enough, else a new buffer of n.
func padBuf(st []float32, n int) []float32 {
	if n <= len(st) {
		return st[:n]
	}
	return make([]float32, n)
}

// convPadded is ConvMulti's path for T < minVec: the vector kernel
// on copies padded to minVec steps, so that a step's bits are the same
// whatever the number of steps of the call (the incremental path of the
// perturbed copies computes a copy's changed steps in windows whose
// width depends on the other copies of its batch).
func convPadded(dst []float32, dstStride int, x []float32, xStride int, w []float32, O, C, K, T int) {
	xs := minVec + K - 1
	var st [padStack]float32
	buf := padBuf(st[:], O*minVec+C*xs)
	d, xb := buf[:O*minVec], buf[O*minVec:]
	for o := 0; o < O; o++ {
		copy(d[o*minVec:o*minVec+T], dst[o*dstStride:o*dstStride+T])
	}
	for c := 0; c < C; c++ {
		copy(xb[c*xs:c*xs+T+K-1], x[c*xStride:c*xStride+T+K-1])
	}
	convMulti(d, nil, minVec, xb, xs, w, nil, nil, O, C, K, minVec)
	for o := 0; o < O; o++ {
		copy(dst[o*dstStride:o*dstStride+T], d[o*minVec:o*minVec+T])
	}
}

// PackedLen is the length of the packed weights of a convolution with O
// outputs, C inputs and K taps (see PackConv).
func PackedLen(O, C, K int) int { return (O &^ 3) * C * K }

// PackConv writes the weights w, laid out (O, C, K), in the order the AVX2
// convolution reads them, for ConvMultiBias:
//
//	wp[o*C*K + (c*K+k)*4 + r] = w[((o+r)*C+c)*K+k]
//
// for o = 0, 4, 8, ... < O-3, r < 4, c < C, k < K (rows past the last
// group of 4 are read from w). len(wp) must be at least PackedLen(O, C, K).
func PackConv(wp, w []float32, O, C, K int) {
	checkDims("PackConv", O, C, K, 0)
	checkW("PackConv", w, O, C, K)
	if n := PackedLen(O, C, K); len(wp) < n {
		shortPanic("PackConv wp", len(wp), n)
	}
	ck := C * K
	for o := 0; o+4 <= O; o += 4 {
		blk := wp[o*ck : (o+4)*ck]
		for r := 0; r < 4; r++ {
			for j, v := range w[(o+r)*ck : (o+r+1)*ck] {
				blk[j*4+r] = v
			}
		}
	}
}

// convMulti is the vector path of ConvMulti (bias and rel nil) and
// ConvMultiBias (dst rows start from bias[o] instead of their contents;
// rel, if not nil, gets max(dst, 0) at the same offsets), with weights
// packed per block here or, if pw is not nil, by PackConv. The arguments
// have been checked; T >= minVec, C, K >= 1 and 4K <= packMax.
func convMulti(dst, rel []float32, dstStride int, x []float32, xStride int, w, pw, bias []float32, O, C, K, T int) {
	cb := packMax / (4 * K) // input channels per packed block
	var wp [packMax]float32
	o := 0
	for ; o+4 <= O; o += 4 {
		var b, rl []float32
		if bias != nil {
			b = bias[o : o+4]
		}
		for c0 := 0; c0 < C; c0 += cb {
			cn := min(cb, C-c0)
			// wp[(c*K+k)*4+r] = w[o+r, c0+c, k]
			var blk []float32
			if pw != nil {
				blk = pw[o*C*K+c0*K*4:]
			} else {
				for r := 0; r < 4; r++ {
					wr := w[((o+r)*C+c0)*K : ((o+r)*C+c0+cn)*K]
					for j, v := range wr {
						wp[j*4+r] = v
					}
				}
				blk = wp[:]
			}
			if rel != nil && c0+cn == C {
				rl = rel[o*dstStride:] // the last block writes the ReLU
			}
			convx4Vec(dst[o*dstStride:], dstStride, x[c0*xStride:], xStride, blk, b, rl, cn, K, T)
			b = nil // later blocks add to what the first wrote
		}
	}
	for ; o < O; o++ {
		d := dst[o*dstStride : o*dstStride+T]
		if bias != nil {
			for t := range d {
				d[t] = bias[o]
			}
		}
		for i := 0; i < C; i++ {
			CorrK(d, x[i*xStride:i*xStride+T+K-1], w[(o*C+i)*K:(o*C+i+1)*K])
		}
		if rel != nil {
			Relu(rel[o*dstStride:o*dstStride+T], d)
		}
	}
}

// Conv3Multi is ConvMulti with K = 3.
func Conv3Multi(dst []float32, dstStride int, x []float32, xStride int, w []float32, O, C, T int) {
	ConvMulti(dst, dstStride, x, xStride, w, O, C, 3, T)
}

// ConvMultiGradW adds the weight gradient of ConvMulti to dw:
//
//	dw[(o*C+i)*K+k] += sum_{t<T} dy[o*dyStride+t] * x[i*xStride+t+k]
//
// for o < O, i < C, k < K. dy has O rows of T samples, x has C rows of T+K-1.
// The vector path has register-blocked kernels, 12 vector accumulators each:
// for K = 3, 4 output rows by one input row by its 3 taps; for other K,
// 4 output rows by 3 of the C*K columns x[i*xStride+k : i*xStride+k+T]
// (j = i*K+k, so dw[o*C*K+j] is the sum of dy's row o times column j),
// every load of x feeding 4 rows. Rows past the last group of 4 use DotK.
func ConvMultiGradW(dw []float32, dy []float32, dyStride int, x []float32, xStride int, O, C, K, T int) {
	checkDims("ConvMultiGradW", O, C, K, T)
	checkW("ConvMultiGradW", dw, O, C, K)
	if O == 0 || C == 0 || K == 0 || T == 0 {
		return
	}
	checkRows("ConvMultiGradW", "dy", dy, O, dyStride, T)
	checkRows("ConvMultiGradW", "x", x, C, xStride, T+K-1)
	o := 0
	if K != 3 {
		// The column kernel; its rows of T < minVec sum as convGradWGeneric.
		o = gradWCols(dw, dy, dyStride, x, xStride, O, C, K, T)
	} else if T < minVec {
		convGradWGeneric(dw, dy, dyStride, x, xStride, O, C, K, T)
		return
	} else {
		var out [12]float32
		for ; o+4 <= O; o += 4 {
			for i := 0; i < C; i++ {
				gradw3x4Vec(&out, dy[o*dyStride:], dyStride, x[i*xStride:], T)
				for r := 0; r < 4; r++ {
					g := dw[((o+r)*C+i)*3 : ((o+r)*C+i)*3+3]
					g[0] += out[r*3]
					g[1] += out[r*3+1]
					g[2] += out[r*3+2]
				}
			}
		}
	}
	for ; o < O; o++ {
		d := dy[o*dyStride : o*dyStride+T]
		for i := 0; i < C; i++ {
			DotK(dw[(o*C+i)*K:(o*C+i+1)*K], d, x[i*xStride:i*xStride+T+K-1])
		}
	}
}

// gradWCols adds to dw the rows o < O&^3 of ConvMultiGradW, 4 rows of dy
// by 3 columns of x per gradw4x3 call:
//
//	dw[o*C*K+j] += sum_{t<T} dy[o*dyStride+t] * x[(j/K)*xStride + j%K + t],
//
// j < C*K (the last call of a row group repeats column C*K-1 where fewer
// than 3 are left, and drops those sums). It returns O&^3. The arguments
// have been checked.
func gradWCols(dw, dy []float32, dyStride int, x []float32, xStride, O, C, K, T int) int {
	ck := C * K
	var out [12]float32
	for o := 0; o+4 <= O; o += 4 {
		for j := 0; j < ck; j += 3 {
			gradw4x3(&out, dy[o*dyStride:], dyStride,
				gradWCol(x, xStride, K, T, j), gradWCol(x, xStride, K, T, min(j+1, ck-1)),
				gradWCol(x, xStride, K, T, min(j+2, ck-1)), T)
			n := min(3, ck-j)
			for r := 0; r < 4; r++ {
				g := dw[(o+r)*ck+j : (o+r)*ck+j+n]
				for jj := range g {
					g[jj] += out[r*3+jj]
				}
			}
		}
	}
	return O &^ 3
}

// gradWCol returns column j of ConvMultiGradW's x: the T samples from
// x[(j/K)*xStride + j%K].
func gradWCol(x []float32, xStride, K, T, j int) []float32 {
	i := j / K
	off := i*xStride + j - i*K
	return x[off : off+T]
}

// gradw4x3 sets out[r*3+j] = sum_{t<T} dy[r*dyStride+t] * xj[t] for r < 4
// and j < 3 (x0, x1, x2 as xj): for T >= minVec 12 vector accumulators,
// each load of xj feeding 4 rows; otherwise gradw4x3Generic.
func gradw4x3(out *[12]float32, dy []float32, dyStride int, x0, x1, x2 []float32, T int) {
	_ = dy[3*dyStride+T-1]
	x0, x1, x2 = x0[:T], x1[:T], x2[:T]
	if T >= minVec {
		gradw4x3Vec(out, dy, dyStride, x0, x1, x2, T)
		return
	}
	gradw4x3Generic(out, dy, dyStride, x0, x1, x2, T)
}

// ConvMultiGradX adds the input gradient of ConvMulti to dx:
//
//	dx[i*dxStride+t+k] += sum_{o<O} w[(o*C+i)*K+k] * dy[o*dyStride+t]
//
// for i < C, t < T, k < K; dx has C rows of T+K-1 samples. It is a full
// correlation of dy with the flipped taps; the vector path runs ConvMulti's
// kernel on the T-K+1 interior samples of each dx row (roles of C and O
// swapped) and adds the 2(K-1) edge samples with scalar code for K = 3 and
// for the rows past the last group of 4, and with the same kernel on
// windows of zero-padded dy otherwise (gradXEdges).
func ConvMultiGradX(dx []float32, dxStride int, dy []float32, dyStride int, w []float32, O, C, K, T int) {
	checkDims("ConvMultiGradX", O, C, K, T)
	if O == 0 || C == 0 || K == 0 || T == 0 {
		return
	}
	checkRows("ConvMultiGradX", "dx", dx, C, dxStride, T+K-1)
	checkRows("ConvMultiGradX", "dy", dy, O, dyStride, T)
	checkW("ConvMultiGradX", w, O, C, K)
	Ti := T - K + 1 // interior outputs s = K-1 .. T-1 see every tap
	if Ti < minVec || 4*K > packMax {
		convGradXGeneric(dx, dxStride, dy, dyStride, w, O, C, K, T)
		return
	}
	// Interior: dx[i, K-1+u] += sum_o sum_j w[o,i,K-1-j] * dy[o, u+j].
	ob := packMax / (4 * K) // dy rows per packed block
	var wp [packMax]float32
	i := 0
	for ; i+4 <= C; i += 4 {
		for o0 := 0; o0 < O; o0 += ob {
			on := min(ob, O-o0)
			// wp[(o*K+j)*4+r] = w[o0+o, i+r, K-1-j]; the 4 rows
			// w[o0+o, i..i+3, :] are contiguous.
			for o := 0; o < on; o++ {
				src := w[((o0+o)*C+i)*K : ((o0+o)*C+i+4)*K]
				dst := wp[o*K*4 : (o+1)*K*4]
				if K == 3 {
					src, dst := src[:12], dst[:12]
					dst[0], dst[1], dst[2], dst[3] = src[2], src[5], src[8], src[11]
					dst[4], dst[5], dst[6], dst[7] = src[1], src[4], src[7], src[10]
					dst[8], dst[9], dst[10], dst[11] = src[0], src[3], src[6], src[9]
					continue
				}
				for r := 0; r < 4; r++ {
					for j := 0; j < K; j++ {
						dst[j*4+r] = src[r*K+K-1-j]
					}
				}
			}
			convx4Vec(dx[i*dxStride+K-1:], dxStride, dy[o0*dyStride:], dyStride, wp[:], nil, nil, on, K, Ti)
			if K != 3 {
				gradXEdges(dx[i*dxStride:], dxStride, dy[o0*dyStride:], dyStride, wp[:], on, K, T)
			}
		}
	}
	edge0 := 0 // the first dx row whose edges the scalar code below adds
	if K != 3 {
		edge0 = i
	}
	var wf [packMax]float32
	for ; i < C; i++ {
		// Remaining rows: the same interior sum with CorrK on flipped taps.
		d := dx[i*dxStride+K-1 : i*dxStride+T]
		for o := 0; o < O; o++ {
			wr := w[(o*C+i)*K : (o*C+i+1)*K]
			for j := 0; j < K; j++ {
				wf[j] = wr[K-1-j]
			}
			CorrK(d, dy[o*dyStride:o*dyStride+T], wf[:K])
		}
	}
	// Edges: s < K-1 and s >= T, where only some taps land in dy.
	if K == 3 {
		for o := 0; o < O; o++ {
			d := dy[o*dyStride : o*dyStride+T]
			d0, d1, e1, e2 := d[0], d[1], d[T-1], d[T-2]
			wo := w[o*C*3 : (o+1)*C*3]
			for i := 0; i < C; i++ {
				wr := wo[i*3 : i*3+3]
				row := dx[i*dxStride : i*dxStride+T+2]
				row[0] += float32(wr[0] * d0)
				row[1] += float32(wr[0]*d1) + float32(wr[1]*d0)
				row[T] += float32(wr[1]*e1) + float32(wr[2]*e2)
				row[T+1] += float32(wr[2] * e1)
			}
		}
		return
	}
	for o := 0; o < O; o++ {
		d := dy[o*dyStride : o*dyStride+T]
		for i := edge0; i < C; i++ {
			wr := w[(o*C+i)*K : (o*C+i+1)*K]
			row := dx[i*dxStride : i*dxStride+T+K-1]
			for s := 0; s < K-1; s++ {
				var acc float32
				for k := 0; k <= s; k++ {
					acc += float32(wr[k] * d[s-k])
				}
				row[s] += acc
			}
			for s := T; s < T+K-1; s++ {
				var acc float32
				for k := s - T + 1; k < K; k++ {
					acc += float32(wr[k] * d[s-k])
				}
				row[s] += acc
			}
		}
	}
}

// gradXEdges adds to 4 rows of dx (dx[r*dxStride:], r < 4, of T+K-1
// samples) the edge samples s < K-1 and s >= T of ConvMultiGradX's sum
// over the on rows of dy (dy[o*dyStride:], o < on) whose flipped taps wp
// holds, packed as its interior call has them: the vector kernel on
// windows of W = max(K-1, minVec) samples at each end, against dy padded
// with K-1 zeros on both sides,
//
//	dx[r, s] += sum_{o<on} sum_{j<K} wp[(o*K+j)*4+r] * dyp[o, s+j],
//	dyp[o, q] = dy[o, q-K+1] for K-1 <= q < T+K-1, else 0,
//
// each sample's terms fused in the interior's order, the zeros included.
// The window samples that are not edges are computed and dropped. T-K+1
// >= minVec, K >= 1 and 4K <= packMax.
func gradXEdges(dx []float32, dxStride int, dy []float32, dyStride int, wp []float32, on, K, T int) {
	if K == 1 {
		return
	}
	W := max(K-1, minVec)
	ws := W + K - 1 // a window's padded dy row
	// on*ws <= (packMax/(4K)) * (max(K-1, minVec)+K-1) <= 864, and
	// 4W <= 4*(packMax/4-1).
	var pad [1024]float32
	var d [packMax]float32
	p := pad[:on*ws]
	for _, left := range []bool{true, false} {
		s0 := 0 // the window's first output sample
		if !left {
			s0 = T + K - 1 - W
		}
		for o := 0; o < on; o++ {
			row := p[o*ws : (o+1)*ws]
			for q := range row {
				// dyp[o, s0+q] = dy[o, s0+q-K+1] where that is in dy.
				if t := s0 + q - K + 1; t >= 0 && t < T {
					row[q] = dy[o*dyStride+t]
				} else {
					row[q] = 0
				}
			}
		}
		e0, e1 := 0, K-1 // the window's edge samples, from s0
		if !left {
			e0, e1 = W-K+1, W
		}
		for r := 0; r < 4; r++ {
			copy(d[r*W+e0:r*W+e1], dx[r*dxStride+s0+e0:r*dxStride+s0+e1])
		}
		convx4Vec(d[:], W, p, ws, wp, nil, nil, on, K, W)
		for r := 0; r < 4; r++ {
			copy(dx[r*dxStride+s0+e0:r*dxStride+s0+e1], d[r*W+e0:r*W+e1])
		}
	}
}
