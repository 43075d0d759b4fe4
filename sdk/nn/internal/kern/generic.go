package kern

// Portable implementations. They are the reference the accelerated kernels
// are tested against, and the implementation used on other architectures,
// on CPUs without AVX2/FMA, with the purego build tag, and for short inputs
// where a vector kernel has nothing to gain. They assume the argument
// checks of the exported functions have been done.

func corr3Generic(dst, x []float32, w0, w1, w2 float32) {
	n := len(dst)
	if n == 0 {
		return
	}
	x = x[:n+2]
	dst = dst[:n]
	for t := range dst {
		dst[t] += w0*x[t] + w1*x[t+1] + w2*x[t+2]
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
			dst[t] += wj * xj[t]
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
		s0 += d * x[t]
		s1 += d * x[t+1]
		s2 += d * x[t+2]
	}
	return
}

func dotGeneric(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
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
		dst[i] += a * x[i]
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
