package nn

// corrK: dst[t] += sum_j w[j] x[t+j], t = 0..len(dst)-1.
func corrK(dst, x, w []float32) {
	n := len(dst)
	if len(w) == 3 {
		w0, w1, w2 := w[0], w[1], w[2]
		x = x[:n+2]
		for t := range dst {
			dst[t] += w0*x[t] + w1*x[t+1] + w2*x[t+2]
		}
		return
	}
	for j, wj := range w {
		axpy(dst, x[j:j+n], wj)
	}
}

// dotK: dst[j] += sum_t dy[t] x[t+j], j = 0..len(dst)-1.
func dotK(dst, dy, x []float32) {
	n := len(dy)
	for j := range dst {
		dst[j] += dot(dy, x[j:j+n])
	}
}

// axpy: dst[i] += a x[i].
func axpy(dst, x []float32, a float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] += a * v
	}
}

// dot returns sum_i x[i] y[i].
func dot(x, y []float32) float32 {
	y = y[:len(x)]
	var s float32
	for i, v := range x {
		s += v * y[i]
	}
	return s
}
