package kern

import "math"

// Plain implementations: the references the vector kernels (the assembly
// and their Go twins in lanes.go) are tested against within rounding, and,
// on every path alike, the code of the inputs a vector kernel does not
// take (shorter than 8, or taps past packMax/4). They assume the argument
// checks of the exported functions have been done. Every product is
// rounded before its sum (an explicit float32 or float64 conversion), so
// a compiler that fuses multiply-adds (arm64, GOAMD64=v3) gives the same
// bits as one that does not.

func corr3Generic(dst, x []float32, w0, w1, w2 float32) {
	n := len(dst)
	if n == 0 {
		return
	}
	x = x[:n+2]
	dst = dst[:n]
	for t := range dst {
		dst[t] += float32(w0*x[t]) + float32(w1*x[t+1]) + float32(w2*x[t+2])
	}
}

func corrKGeneric(dst, x, w []float32) {
	n := len(dst)
	if n == 0 {
		return
	}
	for j, wj := range w {
		xj := x[j : j+n]
		for t := range dst {
			dst[t] += float32(wj * xj[t])
		}
	}
}

func dot3Generic(dy, x []float32) (s0, s1, s2 float32) {
	n := len(dy)
	if n == 0 {
		return
	}
	x = x[:n+2]
	for t, d := range dy {
		s0 += float32(d * x[t])
		s1 += float32(d * x[t+1])
		s2 += float32(d * x[t+2])
	}
	return
}

func dotGeneric(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float32(x[i] * y[i])
		s1 += float32(x[i+1] * y[i+1])
		s2 += float32(x[i+2] * y[i+2])
		s3 += float32(x[i+3] * y[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float32(x[i] * y[i])
	}
	return (s0 + s1) + (s2 + s3)
}

func sumGeneric(x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i]
		s1 += x[i+1]
		s2 += x[i+2]
		s3 += x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpyGeneric(dst, x []float32, a float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += float32(a * x[i])
	}
}

func scaleGeneric(x []float32, a float32) {
	for i := range x {
		x[i] *= a
	}
}

func addConstGeneric(x []float32, c float32) {
	for i := range x {
		x[i] += c
	}
}

func reluGeneric(x []float32) {
	for i, v := range x {
		if v < 0 {
			x[i] = 0
		}
	}
}

// convMultiGeneric: dst[o*ds+t] += sum_{i,k} w[(o*C+i)*K+k] * x[i*xs+t+k].
func convMultiGeneric(dst []float32, ds int, x []float32, xs int, w []float32, O, C, K, T int) {
	for o := 0; o < O; o++ {
		d := dst[o*ds : o*ds+T]
		for i := 0; i < C; i++ {
			xi := x[i*xs : i*xs+T+K-1]
			wi := w[(o*C+i)*K : (o*C+i+1)*K]
			if K == 3 {
				corr3Generic(d, xi, wi[0], wi[1], wi[2])
			} else {
				corrKGeneric(d, xi, wi)
			}
		}
	}
}

// convGradWGeneric: dw[(o*C+i)*K+k] += sum_t dy[o*dys+t] * x[i*xs+t+k].
func convGradWGeneric(dw, dy []float32, dys int, x []float32, xs int, O, C, K, T int) {
	for o := 0; o < O; o++ {
		d := dy[o*dys : o*dys+T]
		for i := 0; i < C; i++ {
			xi := x[i*xs : i*xs+T+K-1]
			g := dw[(o*C+i)*K : (o*C+i+1)*K]
			for k := range g {
				g[k] += dotGeneric(d, xi[k:k+T])
			}
		}
	}
}

// gradw4x3Generic: out[r*3+j] = sum_{t<T} dy[r*dys+t] * xj[t], each sum
// dotGeneric's.
func gradw4x3Generic(out *[12]float32, dy []float32, dys int, x0, x1, x2 []float32, T int) {
	for r := 0; r < 4; r++ {
		d := dy[r*dys : r*dys+T]
		out[r*3] = dotGeneric(d, x0[:T])
		out[r*3+1] = dotGeneric(d, x1[:T])
		out[r*3+2] = dotGeneric(d, x2[:T])
	}
}

// convGradXGeneric: dx[i*dxs+t+k] += sum_o w[(o*C+i)*K+k] * dy[o*dys+t].
func convGradXGeneric(dx []float32, dxs int, dy []float32, dys int, w []float32, O, C, K, T int) {
	for o := 0; o < O; o++ {
		d := dy[o*dys : o*dys+T]
		for i := 0; i < C; i++ {
			xi := dx[i*dxs : i*dxs+T+K-1]
			wi := w[(o*C+i)*K : (o*C+i+1)*K]
			for k, wk := range wi {
				axpyGeneric(xi[k:k+T], d, wk)
			}
		}
	}
}

func reluToGeneric(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		if v < 0 {
			v = 0
		}
		dst[i] = v
	}
}

// reluGradGeneric is branchless: a ReLU's sign pattern is random, so a
// branch mispredicts often. With a = |y| as bits, y <= 0 fails exactly when
// y is a NaN (a > inf) or positive and nonzero.
func reluGradGeneric(dx, dy, y []float32) {
	dy, y = dy[:len(dx)], y[:len(dx)]
	for i, v := range y {
		b := math.Float32bits(v)
		a := b & 0x7fffffff
		nz := uint32(-int32(a)) >> 31                   // a != 0
		nan := uint32(int32(0x7f800000)-int32(a)) >> 31 // a > inf bits
		pos := b>>31 ^ 1                                // sign clear
		m := -(nz&pos | nan)
		dx[i] = math.Float32frombits(math.Float32bits(dy[i]) & m)
	}
}

func maxPoolGeneric(dst []float32, idx []int32, x []float32, k int) {
	idx = idx[:len(dst)]
	for t := range dst {
		best, at := x[t], t
		for j := t + 1; j < t+k; j++ {
			if x[j] > best {
				best, at = x[j], j
			}
		}
		dst[t], idx[t] = best, int32(at)
	}
}

// maxPoolGradGeneric writes dx[s] for s in [s0, s1), adding the matching
// dy[t] in increasing t. The sum starts at +0 and never becomes -0, so
// adding +0 for a non-matching t (as the vector code does) changes nothing.
func maxPoolGradGeneric(dx, dy []float32, idx []int32, k, s0, s1 int) {
	n := len(dy)
	for s := s0; s < s1; s++ {
		var acc float32
		for t := max(0, s-k+1); t <= min(s, n-1); t++ {
			var m uint32
			if idx[t] == int32(s) {
				m = ^uint32(0)
			}
			acc += math.Float32frombits(math.Float32bits(dy[t]) & m)
		}
		dx[s] = acc
	}
}

func argMaxGeneric(x []float32) (float32, int) {
	best, at := x[0], 0
	for j, v := range x {
		if v > best {
			best, at = v, j
		}
	}
	return best, at
}

func sum64Generic(x []float32) float64 {
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(x); i += 2 {
		s0 += float64(x[i])
		s1 += float64(x[i+1])
	}
	if i < len(x) {
		s0 += float64(x[i])
	}
	return s0 + s1
}

func sqDev64Generic(x []float32, c float64) float64 {
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(x); i += 2 {
		d0, d1 := float64(x[i])-c, float64(x[i+1])-c
		s0 += float64(d0 * d0)
		s1 += float64(d1 * d1)
	}
	if i < len(x) {
		d := float64(x[i]) - c
		s0 += float64(d * d)
	}
	return s0 + s1
}

func sumDot64Generic(x, y []float32) (sx, sxy float64) {
	y = y[:len(x)]
	for i, v := range x {
		a := float64(v)
		sx += a
		sxy += float64(a * float64(y[i]))
	}
	return sx, sxy
}

// The explicit float32 conversions keep the compiler from fusing a
// multiply and an add, so the result is the assembly's.

func normalizeGeneric(xh, y, x []float32, mu, s, g, b float32) {
	xh, y = xh[:len(x)], y[:len(x)]
	for i, v := range x {
		h := float32(v-mu) * s
		xh[i] = h
		y[i] = float32(h*g) + b
	}
}

func normalizeYGeneric(y, x []float32, mu, s, g, b float32, relu bool) {
	x = x[:len(y)]
	for i, v := range x {
		h := float32(v-mu) * s
		v = float32(h*g) + b
		if relu && v < 0 {
			v = 0
		}
		y[i] = v
	}
}

func normalizeGradGeneric(dx, dy, xh []float32, k, md, mdx float32) {
	dy, xh = dy[:len(dx)], xh[:len(dx)]
	for i := range dx {
		dx[i] = k * ((dy[i] - md) - float32(xh[i]*mdx))
	}
}

func gerGeneric(a []float32, lda int, x, y []float32) {
	for i, xi := range x {
		row := a[i*lda : i*lda+len(y)]
		for j, yj := range y {
			row[j] += float32(xi * yj)
		}
	}
}

func gemvTGeneric(y, a []float32, lda int, x []float32) {
	clear(y)
	for i, xi := range x {
		row := a[i*lda : i*lda+len(y)]
		for j, v := range row {
			y[j] += float32(xi * v)
		}
	}
}

func expGeneric(dst, x []float32) {
	c := &expConsts
	for i, v := range x[:len(dst)] {
		v = min(max(v, c[0]), c[1])
		f := float32(math.RoundToEven(float64(v * c[2])))
		r := v - f*c[3]
		r -= f * c[4]
		z := r * r
		p := c[5]*r + c[6]
		p = p*r + c[7]
		p = p*r + c[8]
		p = p*r + c[9]
		p = p*r + c[10]
		p = p*z + r
		p += c[11]
		dst[i] = p * math.Float32frombits(uint32(int32(f)+127)<<23)
	}
}
