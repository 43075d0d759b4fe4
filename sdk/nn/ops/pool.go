package ops

import "github.com/uaxai/uaxai/sdk/nn/internal/kern"

// MaxPool1D is PyTorch's MaxPool1d(Kernel, Stride, Pad) with ceil_mode=False
// and dilation 1: the input is padded with -Inf at both ends and
//
//	y[b,c,t] = max_{k<Kernel} x[b,c,t*Stride + k - Pad],  t = 0..PoolOutLen-1,
//
// the argmax (the first index of the maximum on ties, as PyTorch's CPU
// kernel; a NaN wins and propagates) recorded as an input position.
type MaxPool1D struct{ Kernel, Stride, Pad int }

// OutLen is PoolOutLen.
func (m MaxPool1D) OutLen(T int) (int, error) { return PoolOutLen(T, m.Kernel, m.Stride, m.Pad) }

// Forward writes y (dst) and the argmax positions idx (both rows*L values,
// rows = B*C) from x (rows*T values).
func (m MaxPool1D) Forward(dst []float32, idx []int32, x []float32, T int) {
	maxPoolForward32(m, dst, idx, x, T)
}

// Backward writes dx[b,c,u] = sum_{t: idx[b,c,t] = u} dy[b,c,t], from the
// idx of Forward.
func (m MaxPool1D) Backward(dx, dy []float32, idx []int32, T int) {
	L := mustPool(m.Kernel, m.Stride, m.Pad, T)
	if m.Stride != 1 || m.Pad != 0 {
		scatter(dx, dy, idx, T, L)
		return
	}
	// Stride 1 unpadded: kern.MaxPoolGrad per row, the same sums in the
	// same order (it adds +0 for the steps that are not the maximum).
	rows := len(dx) / T
	need("pool dx", len(dx), rows*T)
	need("pool dy", len(dy), rows*L)
	need("pool idx", len(idx), rows*L)
	for r := 0; r < rows; r++ {
		kern.MaxPoolGrad(dx[r*T:(r+1)*T], dy[r*L:(r+1)*L], idx[r*L:(r+1)*L], m.Kernel)
	}
}

func mustPool(K, s, p, T int) int {
	L, err := PoolOutLen(T, K, s, p)
	if err != nil {
		panic("ops: " + err.Error())
	}
	return L
}

func maxPoolForward[F Float](m MaxPool1D, dst []F, idx []int32, x []F, T int) {
	L := mustPool(m.Kernel, m.Stride, m.Pad, T)
	rows := len(x) / T
	need("maxpool x", len(x), rows*T)
	need("maxpool dst", len(dst), rows*L)
	need("maxpool idx", len(idx), rows*L)
	for r := 0; r < rows; r++ {
		xr := x[r*T : (r+1)*T]
		for t := 0; t < L; t++ {
			lo := t*m.Stride - m.Pad
			hi := min(lo+m.Kernel, T)
			lo = max(lo, 0)
			// pad <= kernel/2 puts at least one input step in every window
			best, at := xr[lo], lo
			for u := lo + 1; u < hi; u++ {
				if v := xr[u]; v > best || v != v {
					best, at = v, u
					if v != v {
						break
					}
				}
			}
			dst[r*L+t], idx[r*L+t] = best, int32(at)
		}
	}
}

// scatter: dx[r,u] = sum_{t: idx[r,t] = u} dy[r,t].
func scatter[F Float](dx, dy []F, idx []int32, T, L int) {
	rows := len(dx) / T
	need("pool dx", len(dx), rows*T)
	need("pool dy", len(dy), rows*L)
	need("pool idx", len(idx), rows*L)
	clear(dx)
	for r := 0; r < rows; r++ {
		for t := 0; t < L; t++ {
			dx[r*T+int(idx[r*L+t])] += dy[r*L+t]
		}
	}
}

// AvgPool1D is PyTorch's AvgPool1d(Kernel, Stride, Pad) with its defaults
// ceil_mode=False and count_include_pad=True: the input is padded with
// zeros that count in the mean, so every window divides by Kernel,
//
//	y[b,c,t] = (1/Kernel) sum_{k<Kernel} x[b,c,t*Stride + k - Pad]   (x = 0 outside 0..T-1).
type AvgPool1D struct{ Kernel, Stride, Pad int }

// OutLen is PoolOutLen.
func (a AvgPool1D) OutLen(T int) (int, error) { return PoolOutLen(T, a.Kernel, a.Stride, a.Pad) }

// Forward writes y (dst, rows*L values) from x (rows*T values).
func (a AvgPool1D) Forward(dst, x []float32, T int) { avgPoolForward(a, dst, x, T) }

// Backward writes dx[b,c,u] = (1/Kernel) sum_{t: u in window t} dy[b,c,t].
func (a AvgPool1D) Backward(dx, dy []float32, T int) { avgPoolBackward(a, dx, dy, T) }

func avgPoolForward[F Float](a AvgPool1D, dst, x []F, T int) {
	L := mustPool(a.Kernel, a.Stride, a.Pad, T)
	rows := len(x) / T
	need("avgpool x", len(x), rows*T)
	need("avgpool dst", len(dst), rows*L)
	inv := 1 / F(a.Kernel)
	for r := 0; r < rows; r++ {
		xr := x[r*T : (r+1)*T]
		for t := 0; t < L; t++ {
			lo := t*a.Stride - a.Pad
			hi := min(lo+a.Kernel, T)
			var s F
			for u := max(lo, 0); u < hi; u++ {
				s += xr[u]
			}
			dst[r*L+t] = s * inv
		}
	}
}

func avgPoolBackward[F Float](a AvgPool1D, dx, dy []F, T int) {
	L := mustPool(a.Kernel, a.Stride, a.Pad, T)
	rows := len(dx) / T
	need("avgpool dx", len(dx), rows*T)
	need("avgpool dy", len(dy), rows*L)
	clear(dx)
	inv := 1 / F(a.Kernel)
	for r := 0; r < rows; r++ {
		dr := dx[r*T : (r+1)*T]
		for t := 0; t < L; t++ {
			lo := t*a.Stride - a.Pad
			hi := min(lo+a.Kernel, T)
			g := dy[r*L+t] * inv
			for u := max(lo, 0); u < hi; u++ {
				dr[u] += g
			}
		}
	}
}

// GlobalAvgPool is the mean over time of every channel, summed in float64:
//
//	y[b,c] = (1/T) sum_t x[b,c,t].
//
// It is PyTorch's AdaptiveAvgPool1d(1) (output (B, C, 1)) and also its
// x.mean(-1), ONNX's ReduceMean over the time axis (output (B, C)): the
// same numbers.
func GlobalAvgPool(dst, x []float32, T int) { globalAvg32(dst, x, T) }

// GlobalAvgPoolBackward writes dx[b,c,t] = dy[b,c] / T.
func GlobalAvgPoolBackward(dx, dy []float32, T int) { globalAvgBackward(dx, dy, T) }

func globalAvgForward[F Float](dst, x []F, T int) {
	positive("global pool T", T)
	need("global pool x", len(x), len(dst)*T)
	for r := range dst {
		var s float64
		for _, v := range x[r*T : (r+1)*T] {
			s += float64(v)
		}
		dst[r] = F(s / float64(T))
	}
}

func globalAvgBackward[F Float](dx, dy []F, T int) {
	positive("global pool T", T)
	need("global pool dx", len(dx), len(dy)*T)
	for r, g := range dy {
		g /= F(T)
		for t := range T {
			dx[r*T+t] = g
		}
	}
}

// GlobalMaxPool is the maximum over time of every channel (PyTorch's
// AdaptiveMaxPool1d(1)), with its argmax in idx (the first on ties; a NaN
// wins):
//
//	y[b,c] = max_t x[b,c,t].
//
// A row is scanned by the vector kernels (kern.ArgMax, then kern.Sum to
// see that it holds no NaN, which must win), and by the loop only when
// its sum is NaN: the loop's values and positions either way.
func GlobalMaxPool(dst []float32, idx []int32, x []float32, T int) {
	positive("global pool T", T)
	need("global pool x", len(x), len(dst)*T)
	need("global pool idx", len(idx), len(dst))
	for r := range dst {
		xr := x[r*T : (r+1)*T]
		// kern.ArgMax is the scan's first strict maximum, NaN aside (it
		// skips a NaN past x[0]); a row whose sum is not NaN holds no NaN
		// (a NaN sum without one, +Inf and -Inf, takes the scan too).
		if s := kern.Sum(xr); s == s {
			best, at := kern.ArgMax(xr)
			dst[r], idx[r] = best, int32(at)
			continue
		}
		globalMaxForward(dst[r:r+1], idx[r:r+1], xr, T)
	}
}

// GlobalMaxPoolBackward writes dx[b,c,t] = dy[b,c] if t = idx[b,c], else 0.
func GlobalMaxPoolBackward(dx, dy []float32, idx []int32, T int) {
	positive("global pool T", T)
	scatter(dx, dy, idx, T, 1)
}

func globalMaxForward[F Float](dst []F, idx []int32, x []F, T int) {
	positive("global pool T", T)
	need("global pool x", len(x), len(dst)*T)
	need("global pool idx", len(idx), len(dst))
	for r := range dst {
		xr := x[r*T : (r+1)*T]
		best, at := xr[0], 0
		for u := 1; u < T; u++ {
			if v := xr[u]; v > best || v != v {
				best, at = v, u
				if v != v {
					break
				}
			}
		}
		dst[r], idx[r] = best, int32(at)
	}
}

// ForwardTaps computes n output steps of C channels from their taps:
// dst[c, j] is the first maximum (a NaN winning, as Forward's scan) over
// k < Kernel of taps[c*Kernel+k, j], row c*Kernel+k (of n values) holding
// the value of channel c that each step's tap k reads, the -Inf padding
// written out by the caller. Forward's values, without the argmax.
func (m MaxPool1D) ForwardTaps(dst, taps []float32, C, n int) {
	K := m.Kernel
	need("maxpool taps", len(taps), C*K*n)
	need("maxpool dst", len(dst), C*n)
	for c := 0; c < C; c++ {
		y, t := dst[c*n:(c+1)*n], taps[c*K*n:(c+1)*K*n]
		copy(y, t[:n])
		for k := 1; k < K; k++ {
			kern.FirstMax(y, y, t[k*n:(k+1)*n])
		}
	}
}
