package kern

import "math"

// The Go twins of the assembly kernels. Each does the arithmetic of its
// AVX2 kernel in kern_amd64.s operation for operation: the same fused
// multiply-adds (fma32), the same 8-lane accumulators fed in the same
// blocks, the same masked tail and the same horizontal reduction, so the
// portable path gives the AVX2 path's bits on any CPU and architecture.
// They assume the checks of the exported functions, and the lengths the
// assembly assumes (see kern_amd64.go).
//
// No float32 expression here has a multiply whose product meets an add:
// every fused operation is fma32's (or its loops', axpyFMA and fmaVV),
// and every other product is
// rounded before it is used, so a compiler that fuses (arm64, GOAMD64=v3)
// changes nothing.

// fma32 returns a*b + c rounded once to float32, as an FMA instruction
// computes it. The product of two float32 values is exact in float64, so
// r = a*b + c in float64 is rounded once; rounding r again to float32 is
// then exact unless r landed on a float32 midpoint or below float32's
// normal range, where the sum is redone by rounding to odd: the float64
// neighbour of r on the side of the sum's exact error (TwoSum) when r is
// even and inexact, which float32's rounding turns into the correctly
// rounded value (Boldo and Melquiond's round-to-odd: 53 >= 24+2 bits).
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	r := p + float64(c)
	if roundsOnce(r) {
		return float32(r)
	}
	return roundOdd32(p, float64(c), r)
}

// roundsOnce reports whether rounding r, a*b + c rounded to float64, to
// float32 gives a*b + c rounded once: r is not a float32 midpoint (the 29
// bits float32 drops are not 1 followed by zeros) and |r| >= 2^-126
// (float32's normal range, a float64 exponent field of 1023-126, the sign
// shifted out).
func roundsOnce(r float64) bool {
	u := math.Float64bits(r)
	return u&(1<<29-1) != 1<<28 && u<<1 >= (1023-126)<<53
}

// roundOdd32 is fma32's rare case: r = p + c rounded to float64, the
// float32 rounding of the exact p + c by way of r rounded to odd.
func roundOdd32(p, c, r float64) float32 {
	u := math.Float64bits(r)
	bv := r - p
	if e := (p - (r - bv)) + (c - bv); e != 0 && e == e && u&1 == 0 {
		if (e > 0) == (r > 0) {
			u++
		} else {
			u--
		}
		r = math.Float64frombits(u)
	}
	return float32(r)
}

// axpyFMA sets dst[i] = fma32(a, x[i], dst[i]), fma32 written out in the
// loop (the compiler would not inline it): axpyAVX2's twin, and the row
// operation of the other twins.
func axpyFMA(dst, x []float32, a float32) {
	x = x[:len(dst)]
	a64 := float64(a)
	for i, d := range dst {
		p := a64 * float64(x[i])
		r := p + float64(d)
		if roundsOnce(r) {
			dst[i] = float32(r)
			continue
		}
		dst[i] = roundOdd32(p, float64(d), r)
	}
}

// fmaVV sets acc[i] = fma32(a[i], b[i], acc[i]), fma32 written out as in
// axpyFMA.
func fmaVV(acc, a, b []float32) {
	a, b = a[:len(acc)], b[:len(acc)]
	for i, c := range acc {
		p := float64(a[i]) * float64(b[i])
		r := p + float64(c)
		if roundsOnce(r) {
			acc[i] = float32(r)
			continue
		}
		acc[i] = roundOdd32(p, float64(c), r)
	}
}

// vecLanes is the AVX2 register width in float32 lanes.
const vecLanes = 8

// tailLoad returns the masked load of the assembly's last chunk: the 8
// values from x[n-8], with lanes l < 8-rem (done by the previous chunks)
// zero.
func tailLoad(x []float32, n, rem int) (v [vecLanes]float32) {
	for l := vecLanes - rem; l < vecLanes; l++ {
		v[l] = x[n-vecLanes+l]
	}
	return v
}

// redPairs is the reduction of an accumulator by VHADDPS and a final add
// of the two 128-bit halves: ((a0+a1)+(a2+a3)) + ((a4+a5)+(a6+a7)).
func redPairs(a *[vecLanes]float32) float32 {
	return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
}

// redHalves is the reduction of dotAVX2 and sumAVX2: the two 128-bit
// halves added first, then two VHADDPS: ((v0+v4)+(v1+v5)) +
// ((v2+v6)+(v3+v7)).
func redHalves(v *[vecLanes]float32) float32 {
	return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]))
}

// fmaLanes sets acc[l] = fma32(a[l], b[l], acc[l]).
func fmaLanes(acc *[vecLanes]float32, a, b []float32) {
	fmaVV(acc[:], a[:vecLanes], b[:vecLanes])
}

// corr3Lanes is corr3AVX2: dst[t] = fma(w2, x[t+2], fma(w1, x[t+1],
// fma(w0, x[t], dst[t]))).
func corr3Lanes(dst, x []float32, w0, w1, w2 float32) {
	n := len(dst)
	axpyFMA(dst, x[:n], w0)
	axpyFMA(dst, x[1:n+1], w1)
	axpyFMA(dst, x[2:n+2], w2)
}

// corrKLanes is corrKAVX2: dst[t] gets fma(w[j], x[t+j], .) for j = 0, 1,
// ..., K-1 in turn.
func corrKLanes(dst, x, w []float32) {
	n := len(dst)
	for j, wj := range w {
		axpyFMA(dst, x[j:j+n], wj)
	}
}

// dot3Lanes is dot3AVX2: per lag k, accumulators A_k (even chunks of 8, and
// a last odd one out) and B_k (odd chunks and the masked tail), reduced as
// redPairs(A_k + B_k).
func dot3Lanes(dy, x []float32) (s0, s1, s2 float32) {
	n := len(dy)
	x = x[:n+2]
	var acc [6][vecLanes]float32
	nb, rem := n/vecLanes, n%vecLanes
	b := 0
	for ; b+2 <= nb; b += 2 {
		for h := 0; h < 2; h++ {
			t := (b + h) * vecLanes
			d := dy[t : t+vecLanes]
			for k := 0; k < 3; k++ {
				fmaLanes(&acc[3*h+k], d, x[t+k:])
			}
		}
	}
	if b < nb {
		t := b * vecLanes
		for k := 0; k < 3; k++ {
			fmaLanes(&acc[k], dy[t:], x[t+k:])
		}
	}
	if rem != 0 {
		d := tailLoad(dy, n, rem)
		for k := 0; k < 3; k++ {
			xv := tailLoad(x[k:], n, rem)
			fmaLanes(&acc[3+k], d[:], xv[:])
		}
	}
	var s [3]float32
	for k := range s {
		var v [vecLanes]float32
		for l := range v {
			v[l] = acc[k][l] + acc[3+k][l]
		}
		s[k] = redPairs(&v)
	}
	return s[0], s[1], s[2]
}

// dotLanes is dotAVX2: four accumulators fed by groups of four chunks, the
// chunks left over into the first, the masked tail into the second,
// reduced as redHalves((A0+A1) + (A2+A3)).
func dotLanes(x, y []float32) float32 {
	n := len(x)
	y = y[:n]
	var acc [4][vecLanes]float32
	nb, rem := n/vecLanes, n%vecLanes
	b := 0
	for ; b+4 <= nb; b += 4 {
		for j := 0; j < 4; j++ {
			t := (b + j) * vecLanes
			fmaLanes(&acc[j], x[t:], y[t:])
		}
	}
	for ; b < nb; b++ {
		t := b * vecLanes
		fmaLanes(&acc[0], x[t:], y[t:])
	}
	if rem != 0 {
		xv, yv := tailLoad(x, n, rem), tailLoad(y, n, rem)
		fmaLanes(&acc[1], xv[:], yv[:])
	}
	return redHalves(sum4(&acc))
}

// sum4 returns (A0+A1) + (A2+A3) lane by lane, in acc[0].
func sum4(acc *[4][vecLanes]float32) *[vecLanes]float32 {
	for l := range acc[0] {
		acc[0][l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l])
	}
	return &acc[0]
}

// sumLanes is sumAVX2: dotLanes' blocks and reduction with adds.
func sumLanes(x []float32) float32 {
	n := len(x)
	var acc [4][vecLanes]float32
	nb, rem := n/vecLanes, n%vecLanes
	add := func(a *[vecLanes]float32, v []float32) {
		v = v[:vecLanes]
		for l := range a {
			a[l] += v[l]
		}
	}
	b := 0
	for ; b+4 <= nb; b += 4 {
		for j := 0; j < 4; j++ {
			add(&acc[j], x[(b+j)*vecLanes:])
		}
	}
	for ; b < nb; b++ {
		add(&acc[0], x[b*vecLanes:])
	}
	if rem != 0 {
		v := tailLoad(x, n, rem)
		add(&acc[1], v[:])
	}
	return redHalves(sum4(&acc))
}

// convx4Lanes is convx4AVX2 on slices from the same places (bias and rel
// nil or not alike): row r < 4, step t < T starts from dst or bias[r], gets
// fma(x[c*xStride+t+k], wp[(c*K+k)*4+r], .) for c < C, and within c for
// k < K, in turn, and is written to dst, and rectified to rel if rel is
// not nil.
func convx4Lanes(dst []float32, dstStride int, x []float32, xStride int, wp, bias, rel []float32, C, K, T int) {
	for r := 0; r < 4; r++ {
		d := dst[r*dstStride : r*dstStride+T]
		if bias != nil {
			for t := range d {
				d[t] = bias[r]
			}
		}
		for c := 0; c < C; c++ {
			for k := 0; k < K; k++ {
				axpyFMA(d, x[c*xStride+k:c*xStride+k+T], wp[(c*K+k)*4+r])
			}
		}
		if rel != nil {
			reluToGeneric(rel[r*dstStride:r*dstStride+T], d)
		}
	}
}

// gradRows is the accumulation of gradw3x4AVX2 and gradw4x3AVX2: out[r*3+j]
// = redPairs(A_rj), A_rj lane l the fused sum over the chunks, then the
// masked tail, of dy[r*dyStride+t] * xs[j][t].
func gradRows(out *[12]float32, dy []float32, dyStride int, xs *[3][]float32, T int) {
	var acc [12][vecLanes]float32
	nb, rem := T/vecLanes, T%vecLanes
	for r := 0; r < 4; r++ {
		d := dy[r*dyStride : r*dyStride+T]
		for j, xj := range xs {
			a := &acc[r*3+j]
			for b := 0; b < nb; b++ {
				t := b * vecLanes
				fmaLanes(a, xj[t:], d[t:])
			}
			if rem != 0 {
				xv, dv := tailLoad(xj, T, rem), tailLoad(d, T, rem)
				fmaLanes(a, xv[:], dv[:])
			}
		}
	}
	for m := range out {
		out[m] = redPairs(&acc[m])
	}
}

// gradw3x4Lanes is gradw3x4AVX2: out[r*3+k] = sum_t dy[r*dyStride+t] *
// x[t+k], summed as gradRows.
func gradw3x4Lanes(out *[12]float32, dy []float32, dyStride int, x []float32, T int) {
	gradRows(out, dy, dyStride, &[3][]float32{x[:T], x[1 : T+1], x[2 : T+2]}, T)
}

// gradw4x3Lanes is gradw4x3AVX2: out[r*3+j] = sum_t dy[r*dyStride+t] *
// xj[t], summed as gradRows.
func gradw4x3Lanes(out *[12]float32, dy []float32, dyStride int, x0, x1, x2 []float32, T int) {
	gradRows(out, dy, dyStride, &[3][]float32{x0[:T], x1[:T], x2[:T]}, T)
}

// gerLanes is gerAVX2: a[i*lda+j] = fma(x[i], y[j], a[i*lda+j]).
func gerLanes(a []float32, lda int, x, y []float32) {
	for i, xi := range x {
		axpyFMA(a[i*lda:i*lda+len(y)], y, xi)
	}
}

// gemvTLanes is gemvTAVX2: y[j] = x[0]*a[j] rounded, then fma(x[i],
// a[i*lda+j], .) for i = 1, 2, ... in turn.
func gemvTLanes(y, a []float32, lda int, x []float32) {
	row := a[:len(y)]
	for j, v := range row {
		y[j] = x[0] * v
	}
	for i := 1; i < len(x); i++ {
		axpyFMA(y, a[i*lda:i*lda+len(y)], x[i])
	}
}

// expLanes is expAVX2 on the len(dst)&^7 first elements: expGeneric's
// steps with the clamp of VMAXPS and VMINPS (a NaN becomes the bound) and
// every multiply-add fused.
func expLanes(dst, x []float32, c *[12]float32) {
	n := len(dst) &^ (vecLanes - 1)
	for i, v := range x[:n] {
		if !(v > c[0]) {
			v = c[0]
		}
		if !(v < c[1]) {
			v = c[1]
		}
		f := float32(math.RoundToEven(float64(v * c[2])))
		r := fma32(-f, c[3], v)
		r = fma32(-f, c[4], r)
		z := r * r
		p := fma32(r, c[5], c[6])
		p = fma32(r, p, c[7])
		p = fma32(r, p, c[8])
		p = fma32(r, p, c[9])
		p = fma32(r, p, c[10])
		p = fma32(z, p, r)
		p += c[11]
		dst[i] = p * math.Float32frombits(uint32(int32(f)+127)<<23)
	}
}

// The float64 reductions' twins take a length that is a multiple of 4
// (>= 8), as the assembly does: 4-lane accumulators, reduced as
// (v0+v2) + (v1+v3).

// sum64Lanes is sum64AVX2: groups of four 4-lane chunks into four
// accumulators, the chunks left over into the first, reduced from
// (A0+A1) + (A2+A3).
func sum64Lanes(x []float32) float64 { return chunks64(x, 0, false) }

// sqDev64Lanes is sqDev64AVX2: sum64Lanes' blocks with fma(d, d, .), d =
// x[i] - c in float64.
func sqDev64Lanes(x []float32, c float64) float64 { return chunks64(x, c, true) }

// chunks64 feeds the 4-lane chunks of x to four accumulators as
// sum64AVX2 does, adding x[i] or, if sq, fma(d, d, .) with d = x[i] - c,
// and reduces them.
func chunks64(x []float32, c float64, sq bool) float64 {
	var acc [4][4]float64
	feed := func(a *[4]float64, v []float32) {
		v = v[:4]
		for l := range a {
			if sq {
				d := float64(v[l]) - c
				a[l] = math.FMA(d, d, a[l])
			} else {
				a[l] += float64(v[l])
			}
		}
	}
	nb := len(x) / 4
	b := 0
	for ; b+4 <= nb; b += 4 {
		for j := 0; j < 4; j++ {
			feed(&acc[j], x[(b+j)*4:])
		}
	}
	for ; b < nb; b++ {
		feed(&acc[0], x[b*4:])
	}
	var v [4]float64
	for l := range v {
		v[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l])
	}
	return (v[0] + v[2]) + (v[1] + v[3])
}

// sumDot64Lanes is sumDot64AVX2: pairs of 4-lane chunks, the even one into
// (S0, P0) and the odd one into (S1, P1), a chunk left over into (S0, P0);
// sx from S0+S1 and sxy from P0+P1, each reduced as (v0+v2) + (v1+v3).
func sumDot64Lanes(x, y []float32) (sx, sxy float64) {
	var s, p [2][4]float64
	nb := len(x) / 4
	feed := func(h, b int) {
		for l := 0; l < 4; l++ {
			xv := float64(x[b*4+l])
			s[h][l] += xv
			p[h][l] = math.FMA(float64(y[b*4+l]), xv, p[h][l])
		}
	}
	b := 0
	for ; b+2 <= nb; b += 2 {
		feed(0, b)
		feed(1, b+1)
	}
	if b < nb {
		feed(0, b)
	}
	red := func(a *[2][4]float64) float64 {
		var v [4]float64
		for l := range v {
			v[l] = a[0][l] + a[1][l]
		}
		return (v[0] + v[2]) + (v[1] + v[3])
	}
	return red(&s), red(&p)
}
