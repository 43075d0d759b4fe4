package ops

import "fmt"

// Conv1D is a 1-D convolution (PyTorch's Conv1d, cross-correlation) of Cin
// input channels into Cout output channels with kernel size Kernel, stride,
// dilation, Groups groups and zero padding PadLeft before and PadRight after
// the input (PyTorch's symmetric padding p is PadLeft = PadRight = p; an
// asymmetric pair is F.pad followed by an unpadded conv). With g = Groups,
// ci = Cin/g and co = Cout/g, output channel o reads the input channels of
// its group, g(o) = floor(o/co):
//
//	y[b,o,t] = bias[o] + sum_{i<ci} sum_{k<Kernel} w[o,i,k] x[b, g(o)*ci+i, t*Stride + k*Dilation - PadLeft],
//
// x taken as 0 outside 0..T-1, t = 0..L-1 with L = ConvOutLen. Weights are
// PyTorch's (Cout, Cin/Groups, Kernel), row-major. Depthwise convolution is
// Groups = Cin.
type Conv1D struct {
	Cin, Cout, Kernel        int
	Stride, Dilation, Groups int
	PadLeft, PadRight        int
}

// Check reports whether the hyper-parameters are valid: sizes >= 1,
// paddings >= 0, Groups dividing both Cin and Cout.
func (c Conv1D) Check() error {
	switch {
	case c.Cin < 1 || c.Cout < 1:
		return fmt.Errorf("conv1d: %d input and %d output channels; need >= 1 each", c.Cin, c.Cout)
	case c.Groups < 1:
		return fmt.Errorf("conv1d: groups %d; need >= 1", c.Groups)
	case c.Cin%c.Groups != 0 || c.Cout%c.Groups != 0:
		return fmt.Errorf("conv1d: groups %d does not divide %d input and %d output channels; need a common divisor", c.Groups, c.Cin, c.Cout)
	}
	return convParams(c.Kernel, c.Stride, c.PadLeft, c.PadRight, c.Dilation)
}

// OutLen is ConvOutLen for this convolution, after Check.
func (c Conv1D) OutLen(T int) (int, error) {
	if err := c.Check(); err != nil {
		return 0, err
	}
	return ConvOutLen(T, c.Kernel, c.Stride, c.PadLeft, c.PadRight, c.Dilation)
}

// WeightLen is the number of weights: Cout * Cin/Groups * Kernel.
func (c Conv1D) WeightLen() int { return c.Cout * (c.Cin / c.Groups) * c.Kernel }

func (c Conv1D) mustOut(T int) int {
	L, err := c.OutLen(T)
	if err != nil {
		panic("ops: " + err.Error())
	}
	return L
}

// tapRange returns the output steps t0 <= t < t1 at which tap k reads
// inside the input (0 <= t*s + off < T with off = k*d - padLeft).
func tapRange(off, s, T, L int) (t0, t1 int) {
	// smallest t with t*s + off >= 0
	if off < 0 {
		t0 = (-off + s - 1) / s
	}
	// largest t with t*s + off <= T-1, plus one
	if T-1-off < 0 {
		return t0, t0
	}
	t1 = min(L, (T-1-off)/s+1)
	if t1 < t0 {
		t1 = t0
	}
	return t0, t1
}

// Forward computes y (dst, B*Cout*L values) from x (B*Cin*T), the weights w
// (WeightLen) and bias (Cout values, or nil for none); B = len(x)/(Cin*T).
// It panics if the hyper-parameters are invalid for T (see OutLen). It
// runs on sdk/nn's packed kernels (see convfast.go); sums are in float32,
// in an order that differs from the formula's.
func (c Conv1D) Forward(dst, x, w, bias []float32, T int) {
	convForward32(c, dst, x, w, bias, T, false)
}

// ForwardReLU is Forward followed by ReLU, y = max(conv(x), 0) (a NaN
// kept, as ReLU keeps it), each sample rectified right after it is
// computed, while its values are in cache: the same bits as Forward then
// ReLU, one pass over the batch's output fewer.
func (c Conv1D) ForwardReLU(dst, x, w, bias []float32, T int) {
	convForward32(c, dst, x, w, bias, T, true)
}

// Backward, from dy = dLoss/dy (B*Cout*L values), writes
//
//	dx[b,j,u] = sum_{o,k: t*Stride + k*Dilation - PadLeft = u} w[o,i,k] dy[b,o,t]   (j = g(o)*ci+i)
//
// and adds dw[o,i,k] += sum_{b,t} dy[b,o,t] x[b, g(o)*ci+i, t*Stride + k*Dilation - PadLeft]
// and db[o] += sum_{b,t} dy[b,o,t]. Any of dx, dw, db may be nil.
//
// A direct convolution's sample whose dy is nonzero at one step of each
// channel at most (behind a global max pool), or at a few steps (at most
// one in supportShare), takes the sparse or the support pass; the others
// take the dense kernels.
func (c Conv1D) Backward(dx, dw, db, dy, x, w []float32, T int) {
	convBackward32(c, dx, dw, db, dy, x, w, T, true)
}

// BackwardDense is Backward by the dense kernels alone, without looking
// for zeros in dy: for a gradient known to be formed dense (a training
// pass hands sparse gradients on in their own forms, Op.SparseGrad).
func (c Conv1D) BackwardDense(dx, dw, db, dy, x, w []float32, T int) {
	convBackward32(c, dx, dw, db, dy, x, w, T, false)
}

func convForward[F Float](c Conv1D, dst, x, w, bias []F, T int) {
	L := c.mustOut(T)
	B := len(x) / (c.Cin * T)
	need("conv1d x", len(x), B*c.Cin*T)
	need("conv1d dst", len(dst), B*c.Cout*L)
	need("conv1d w", len(w), c.WeightLen())
	needOptF("conv1d bias", bias, c.Cout)
	ci, co, K := c.Cin/c.Groups, c.Cout/c.Groups, c.Kernel
	s, d := c.Stride, c.Dilation
	for b := 0; b < B; b++ {
		for o := 0; o < c.Cout; o++ {
			y := dst[(b*c.Cout+o)*L : (b*c.Cout+o+1)*L]
			var b0 F
			if bias != nil {
				b0 = bias[o]
			}
			for t := range y {
				y[t] = b0
			}
		}
		for o := 0; o < c.Cout; o++ {
			y := dst[(b*c.Cout+o)*L : (b*c.Cout+o+1)*L]
			g := o / co
			// two output channels of a group share the loads of x
			pair := o+1 < c.Cout && (o+1)/co == g
			for i := 0; i < ci; i++ {
				xi := x[(b*c.Cin+g*ci+i)*T : (b*c.Cin+g*ci+i+1)*T]
				wi := w[(o*ci+i)*K : (o*ci+i+1)*K]
				if !pair {
					convRow(y, nil, xi, wi, nil, s, d, c.PadLeft)
					continue
				}
				y1 := dst[(b*c.Cout+o+1)*L : (b*c.Cout+o+2)*L]
				w1 := w[((o+1)*ci+i)*K : ((o+1)*ci+i+1)*K]
				convRow(y, y1, xi, wi, w1, s, d, c.PadLeft)
			}
			if pair {
				o++
			}
		}
	}
}

// convRow adds to y[t] (t < len(y)) sum_k w[k] x[t*s + k*d - padL], x
// taken as 0 outside its range, and the same with w1 to y1 if y1 is not
// nil. Where the whole dilated kernel lies in x (the interior) the taps are
// summed per output step in registers; at the edges tap by tap with a
// range check.
func convRow[F Float](y, y1, x, w, w1 []F, s, d, padL int) {
	T, L, K := len(x), len(y), len(w)
	span := (K-1)*d + 1
	// interior: t*s - padL >= 0 and t*s - padL + span <= T
	lo := (padL + s - 1) / s
	hi := 0
	if T-span+padL >= 0 {
		hi = min(L, (T-span+padL)/s+1)
	}
	if hi <= lo {
		lo, hi = 0, 0
	}
	switch {
	case hi == lo:
	case s == 1 && d == 1 && y1 != nil:
		corrInterior2(y[lo:hi], y1[lo:hi], x[lo-padL:hi-padL+K-1], w, w1)
	case s == 1 && d == 1:
		corrInterior(y[lo:hi], x[lo-padL:hi-padL+K-1], w)
	default:
		convInterior(y, x, w, s, d, padL, lo, hi)
		if y1 != nil {
			convInterior(y1, x, w1, s, d, padL, lo, hi)
		}
	}
	convEdges(y, x, w, s, d, padL, lo, hi)
	if y1 != nil {
		convEdges(y1, x, w1, s, d, padL, lo, hi)
	}
}

// convInterior: y[t] += sum_k w[k] x[t*s + k*d - padL] for lo <= t < hi,
// all in range.
func convInterior[F Float](y, x, w []F, s, d, padL, lo, hi int) {
	span := (len(w)-1)*d + 1
	for t := lo; t < hi; t++ {
		xs := x[t*s-padL : t*s-padL+span]
		acc := y[t]
		for k, wk := range w {
			acc += wk * xs[k*d]
		}
		y[t] = acc
	}
}

// convEdges: the same sum for the steps outside lo..hi-1, x taken as 0
// outside its range.
func convEdges[F Float](y, x, w []F, s, d, padL, lo, hi int) {
	T := len(x)
	for t := 0; t < len(y); t++ {
		if t == lo && hi > lo {
			t = hi - 1
			continue
		}
		base := t*s - padL
		acc := y[t]
		for k, wk := range w {
			if u := base + k*d; u >= 0 && u < T {
				acc += wk * x[u]
			}
		}
		y[t] = acc
	}
}

// corrInterior: y[t] += sum_k w[k] x[t+k], len(x) >= len(y)+len(w)-1,
// four output steps at a time.
func corrInterior[F Float](y, x, w []F) {
	n, K := len(y), len(w)
	x = x[:n+K-1]
	t := 0
	for ; t+4 <= n; t += 4 {
		a0, a1, a2, a3 := y[t], y[t+1], y[t+2], y[t+3]
		xs := x[t : t+K+3]
		for k, wk := range w {
			xk := xs[k : k+4 : k+4]
			a0 += wk * xk[0]
			a1 += wk * xk[1]
			a2 += wk * xk[2]
			a3 += wk * xk[3]
		}
		y[t], y[t+1], y[t+2], y[t+3] = a0, a1, a2, a3
	}
	for ; t < n; t++ {
		acc := y[t]
		for k, wk := range w {
			acc += wk * x[t+k]
		}
		y[t] = acc
	}
}

// corrInterior2 is corrInterior for two kernels on the same x: y += w*x,
// y1 += w1*x, four output steps of each at a time.
func corrInterior2[F Float](y, y1, x, w, w1 []F) {
	n, K := len(y), len(w)
	x = x[:n+K-1]
	y1 = y1[:n]
	w1 = w1[:K]
	t := 0
	for ; t+4 <= n; t += 4 {
		a0, a1, a2, a3 := y[t], y[t+1], y[t+2], y[t+3]
		b0, b1, b2, b3 := y1[t], y1[t+1], y1[t+2], y1[t+3]
		xs := x[t : t+K+3]
		for k, wk := range w {
			xk := xs[k : k+4 : k+4]
			vk := w1[k]
			x0, x1, x2, x3 := xk[0], xk[1], xk[2], xk[3]
			a0 += wk * x0
			a1 += wk * x1
			a2 += wk * x2
			a3 += wk * x3
			b0 += vk * x0
			b1 += vk * x1
			b2 += vk * x2
			b3 += vk * x3
		}
		y[t], y[t+1], y[t+2], y[t+3] = a0, a1, a2, a3
		y1[t], y1[t+1], y1[t+2], y1[t+3] = b0, b1, b2, b3
	}
	if t < n {
		corrInterior(y[t:], x[t:], w)
		corrInterior(y1[t:], x[t:], w1)
	}
}

// axpy: y[t] += a x[t], four at a time.
func axpy[F Float](y, x []F, a F) {
	x = x[:len(y)]
	n := len(y) &^ 3
	for t := 0; t < n; t += 4 {
		yy, xx := y[t:t+4:t+4], x[t:t+4:t+4]
		yy[0] += a * xx[0]
		yy[1] += a * xx[1]
		yy[2] += a * xx[2]
		yy[3] += a * xx[3]
	}
	for t := n; t < len(y); t++ {
		y[t] += a * x[t]
	}
}

// dot returns sum_t x[t] y[t] with four partial sums.
func dot[F Float](x, y []F) F {
	y = y[:len(x)]
	var s0, s1, s2, s3 F
	n := len(x) &^ 3
	for t := 0; t < n; t += 4 {
		xx, yy := x[t:t+4:t+4], y[t:t+4:t+4]
		s0 += xx[0] * yy[0]
		s1 += xx[1] * yy[1]
		s2 += xx[2] * yy[2]
		s3 += xx[3] * yy[3]
	}
	for t := n; t < len(x); t++ {
		s0 += x[t] * y[t]
	}
	return (s0 + s1) + (s2 + s3)
}

func convBackward[F Float](c Conv1D, dx, dw, db, dy, x, w []F, T int) {
	L := c.mustOut(T)
	B := len(x) / (c.Cin * T)
	need("conv1d x", len(x), B*c.Cin*T)
	need("conv1d dy", len(dy), B*c.Cout*L)
	need("conv1d w", len(w), c.WeightLen())
	needOptF("conv1d dx", dx, len(x))
	needOptF("conv1d dw", dw, c.WeightLen())
	needOptF("conv1d db", db, c.Cout)
	ci, co, K := c.Cin/c.Groups, c.Cout/c.Groups, c.Kernel
	s, d := c.Stride, c.Dilation
	if dx != nil {
		clear(dx)
	}
	for b := 0; b < B; b++ {
		for o := 0; o < c.Cout; o++ {
			g := dy[(b*c.Cout+o)*L : (b*c.Cout+o+1)*L]
			if db != nil {
				var sum F
				for _, v := range g {
					sum += v
				}
				db[o] += sum
			}
			grp := o / co
			for i := 0; i < ci; i++ {
				row := (b*c.Cin + grp*ci + i) * T
				xi := x[row : row+T]
				wi := w[(o*ci+i)*K : (o*ci+i+1)*K]
				for k := 0; k < K; k++ {
					off := k*d - c.PadLeft
					t0, t1 := tapRange(off, s, T, L)
					if t0 >= t1 {
						continue
					}
					if s == 1 {
						if dw != nil {
							dw[(o*ci+i)*K+k] += dot(g[t0:t1], xi[t0+off:t1+off])
						}
						if dx != nil {
							axpy(dx[row+t0+off:row+t1+off], g[t0:t1], wi[k])
						}
						continue
					}
					if dw != nil {
						var sum F
						for t := t0; t < t1; t++ {
							sum += g[t] * xi[t*s+off]
						}
						dw[(o*ci+i)*K+k] += sum
					}
					if dx != nil {
						dxi, wk := dx[row:row+T], wi[k]
						for t := t0; t < t1; t++ {
							dxi[t*s+off] += wk * g[t]
						}
					}
				}
			}
		}
	}
}
