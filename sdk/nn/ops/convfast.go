package ops

import (
	"math"
	"sync"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// The float32 convolution runs on sdk/nn's packed multi-output kernels
// (AVX2+FMA where the CPU has them, their portable twin otherwise):
//
//   - stride 1, dilation 1, one group ("direct"): each sample's input is
//     copied with its zero padding into a scratch of Cin rows of
//     T+PadLeft+PadRight = L+Kernel-1 steps (no copy when unpadded), and
//     kern.ConvMultiBias computes y[o,t] = bias[o] + sum_{i,k} w[o,i,k]
//     xp[i,t+k], 4 output channels by 16 steps per register block; the
//     backward pass is kern.ConvMultiGradW (dw[o,i,k] += sum_t dy[o,t]
//     xp[i,t+k]) and, for dx, kern.ConvMultiBias again with the roles of
//     Cin and Cout swapped: dy is copied between K-1 zeros on both sides
//     (dyq, Cout rows of L+2K-2 steps) and dx[i,u] = sum_{o,j}
//     w[o,i,K-1-j] dyq[o,PadLeft+u+j], the flipped weights packed once
//     per call; only the T steps of dx are computed;
//   - anything else ("im2col"): per sample and group, the column matrix
//     col[i*K+k, t] = x[g*ci+i, t*Stride + k*Dilation - PadLeft] (0
//     outside the input) turns the convolution into the product of the
//     group's (co, ci*K) weights with col, the same kernels with one tap:
//     y = W col, dW += dy col^T, dcol = W^T dy, and dx the column
//     gradients added back to their input steps (col2im).
//
// The float64 instantiation of the generic loops (convForward,
// convBackward) is the reference these paths are tested against. The
// scratch comes from a sync.Pool, so that a call allocates nothing once
// the pool holds a buffer large enough.

// direct reports whether the convolution takes the direct path.
func (c Conv1D) direct() bool { return c.Stride == 1 && c.Dilation == 1 && c.Groups == 1 }

type convScratch struct {
	buf    []float32
	steps  []int32  // sparseSteps' and supportSteps' list
	mark   []uint32 // supportSteps' marks
	csteps []int32  // channelSteps' list
}

var convPool = sync.Pool{New: func() any { return new(convScratch) }}

// take returns the scratch as n values (contents unspecified).
func (s *convScratch) take(n int) []float32 {
	if cap(s.buf) < n {
		s.buf = make([]float32, n)
	}
	return s.buf[:n]
}

// padRows writes the Cin rows of x (T steps each) to xp (rows of
// PadLeft+T+PadRight steps) between zeros.
func padRows(xp, x []float32, rows, T, pl, pr int) {
	Tp := pl + T + pr
	for i := 0; i < rows; i++ {
		r := xp[i*Tp : (i+1)*Tp]
		clear(r[:pl])
		copy(r[pl:pl+T], x[i*T:(i+1)*T])
		clear(r[pl+T:])
	}
}

// tapSpan is tapRange with both ends in 0..L (t0 may pass L when the tap
// never reads the input).
func tapSpan(off, s, T, L int) (t0, t1 int) {
	t0, t1 = tapRange(off, s, T, L)
	t0 = min(t0, L)
	return t0, min(max(t0, t1), L)
}

// im2col writes col[(i*K+k)*L+t] = x[i*T + t*s + k*d - pl] for i < ci,
// k < K, t < L, 0 where the index leaves the row.
func im2col(col, x []float32, ci, K, T, L, s, d, pl int) {
	for i := 0; i < ci; i++ {
		xi := x[i*T : (i+1)*T]
		for k := 0; k < K; k++ {
			r := col[(i*K+k)*L : (i*K+k+1)*L]
			off := k*d - pl
			t0, t1 := tapSpan(off, s, T, L)
			clear(r[:t0])
			if s == 1 && t1 > t0 {
				copy(r[t0:t1], xi[t0+off:t1+off])
			} else {
				for t := t0; t < t1; t++ {
					r[t] = xi[t*s+off]
				}
			}
			clear(r[t1:])
		}
	}
}

// col2im adds dcol back to the input steps it was read from:
// dx[i*T + t*s + k*d - pl] += dcol[(i*K+k)*L+t] where the index is in the row.
func col2im(dx, dcol []float32, ci, K, T, L, s, d, pl int) {
	for i := 0; i < ci; i++ {
		dxi := dx[i*T : (i+1)*T]
		for k := 0; k < K; k++ {
			r := dcol[(i*K+k)*L : (i*K+k+1)*L]
			off := k*d - pl
			t0, t1 := tapSpan(off, s, T, L)
			if s == 1 {
				if t1 > t0 {
					kern.Axpy(dxi[t0+off:t1+off], r[t0:t1], 1)
				}
				continue
			}
			for t := t0; t < t1; t++ {
				dxi[t*s+off] += r[t]
			}
		}
	}
}

// flipConvWeights writes the transposed, flipped weights of the input
// gradient: wt[(i*O+o)*K+j] = w[(o*C+i)*K+K-1-j] for o < O, i < C, j < K.
func flipConvWeights(wt, w []float32, O, C, K int) {
	for o := 0; o < O; o++ {
		for i := 0; i < C; i++ {
			src := w[(o*C+i)*K : (o*C+i+1)*K]
			dst := wt[(i*O+o)*K : (i*O+o+1)*K]
			for j, v := range src {
				dst[K-1-j] = v
			}
		}
	}
}

// convForward32 is Conv1D.Forward on the kernels of sdk/nn, or with relu
// set ForwardReLU.
func convForward32(c Conv1D, dst, x, w, bias []float32, T int, relu bool) {
	L := c.mustOut(T)
	B := len(x) / (c.Cin * T)
	need("conv1d x", len(x), B*c.Cin*T)
	need("conv1d dst", len(dst), B*c.Cout*L)
	need("conv1d w", len(w), c.WeightLen())
	needOpt("conv1d bias", bias, c.Cout)
	if B == 0 {
		return
	}
	ci, co, K, G := c.Cin/c.Groups, c.Cout/c.Groups, c.Kernel, c.Groups
	sc := convPool.Get().(*convScratch)
	defer convPool.Put(sc)
	if c.direct() {
		Tp := T + c.PadLeft + c.PadRight // = L+K-1
		pad := c.PadLeft+c.PadRight > 0
		nx := 0
		if pad {
			nx = c.Cin * Tp
		}
		np := kern.PackedLen(c.Cout, c.Cin, K)
		buf := sc.take(nx + np + c.Cout)
		xp, pw, zero := buf[:nx], buf[nx:nx+np], buf[nx+np:]
		if bias == nil {
			clear(zero)
			bias = zero
		}
		kern.PackConv(pw, w, c.Cout, c.Cin, K)
		for b := 0; b < B; b++ {
			xb := x[b*c.Cin*T : (b+1)*c.Cin*T]
			if pad {
				padRows(xp, xb, c.Cin, T, c.PadLeft, c.PadRight)
				xb = xp
			}
			y := dst[b*c.Cout*L : (b+1)*c.Cout*L]
			kern.ConvMultiBias(y, nil, L, xb, Tp, w, pw, bias, c.Cout, c.Cin, K, L)
			if relu {
				kern.Relu(y, y)
			}
		}
		return
	}
	n := ci * K * L
	buf := sc.take(n + c.Cout)
	col, zero := buf[:n], buf[n:]
	if bias == nil {
		clear(zero)
		bias = zero
	}
	for b := 0; b < B; b++ {
		for g := 0; g < G; g++ {
			im2col(col, x[(b*c.Cin+g*ci)*T:(b*c.Cin+(g+1)*ci)*T], ci, K, T, L, c.Stride, c.Dilation, c.PadLeft)
			y := dst[(b*c.Cout+g*co)*L : (b*c.Cout+(g+1)*co)*L]
			kern.ConvMultiBias(y, nil, L, col, L, w[g*co*ci*K:(g+1)*co*ci*K], nil, bias[g*co:(g+1)*co], co, ci*K, 1, L)
		}
		if relu {
			y := dst[b*c.Cout*L : (b+1)*c.Cout*L]
			kern.Relu(y, y)
		}
	}
}

// convBackward32 is Conv1D.Backward on the kernels of sdk/nn.
func convBackward32(c Conv1D, dx, dw, db, dy, x, w []float32, T int, scan bool) {
	L := c.mustOut(T)
	B := len(x) / (c.Cin * T)
	need("conv1d x", len(x), B*c.Cin*T)
	need("conv1d dy", len(dy), B*c.Cout*L)
	need("conv1d w", len(w), c.WeightLen())
	needOpt("conv1d dx", dx, len(x))
	needOpt("conv1d dw", dw, c.WeightLen())
	needOpt("conv1d db", db, c.Cout)
	if db != nil && !c.direct() {
		for b := 0; b < B; b++ {
			for o := 0; o < c.Cout; o++ {
				db[o] += kern.Sum(dy[(b*c.Cout+o)*L : (b*c.Cout+o+1)*L])
			}
		}
	}
	if B == 0 || (dx == nil && dw == nil && (db == nil || !c.direct())) {
		if dx != nil {
			clear(dx)
		}
		return
	}
	ci, co, K, G := c.Cin/c.Groups, c.Cout/c.Groups, c.Kernel, c.Groups
	sc := convPool.Get().(*convScratch)
	defer convPool.Put(sc)
	if c.direct() {
		Tp := T + c.PadLeft + c.PadRight
		pad := c.PadLeft+c.PadRight > 0
		n := 0
		if pad && dw != nil {
			n = c.Cin * Tp
		}
		Tq, nq, nt, np := 0, 0, 0, 0
		if dx != nil {
			Tq = L + 2*(K-1)
			nq, nt, np = c.Cout*Tq, c.WeightLen(), kern.PackedLen(c.Cin, c.Cout, K)
		}
		buf := sc.take(n + nq + nt + np + c.Cin)
		xp, buf := buf[:n], buf[n:]
		dyq, buf := buf[:nq], buf[nq:]
		wt, buf := buf[:nt], buf[nt:]
		pwt, zero := buf[:np], buf[np:]
		if dx != nil {
			flipConvWeights(wt, w, c.Cout, c.Cin, K)
			kern.PackConv(pwt, wt, c.Cin, c.Cout, K)
			clear(zero)
		}
		for b := 0; b < B; b++ {
			dyb := dy[b*c.Cout*L : (b+1)*c.Cout*L]
			xb := x[b*c.Cin*T : (b+1)*c.Cin*T]
			var dxb []float32
			if dx != nil {
				dxb = dx[b*c.Cin*T : (b+1)*c.Cin*T]
			}
			// A sample's gradient one step a channel (behind a global
			// max pool), or on a few steps (a layer further down): the
			// layer-list engine's sparse and support passes, whose sums'
			// order the paper's network keeps.
			if scan {
				if P, one, ok := sc.supportSteps(dyb, c.Cout, L); ok && one {
					steps := sc.channelSteps(dyb, c.Cout, L, P)
					if db != nil {
						for _, s := range steps {
							db[int(s)/L] += dyb[s]
						}
					}
					convBackwardSparse(c, dxb, dw, dyb, xb, w, T, L, steps)
					continue
				} else if ok && !pad {
					convBackwardSupport(c, sc, dxb, dw, db, dyb, xb, w, T, L, P)
					continue
				}
			}
			if db != nil {
				for o := 0; o < c.Cout; o++ {
					db[o] += kern.Sum(dyb[o*L : (o+1)*L])
				}
			}
			if dw != nil {
				if pad {
					padRows(xp, xb, c.Cin, T, c.PadLeft, c.PadRight)
					xb = xp
				}
				kern.ConvMultiGradW(dw, dyb, L, xb, Tp, c.Cout, c.Cin, K, L)
			}
			if dx == nil {
				continue
			}
			if !pad && K == 3 {
				// the layer-list engine's kernel (the paper's network's
				// bytes); other sizes take the one below, as fast or
				// faster (docs/speed.md, the kernel paths)
				clear(dxb)
				kern.ConvMultiGradX(dxb, T, dyb, L, w, c.Cout, c.Cin, K, L)
				continue
			}
			// dx[i,u] = sum_o sum_j wt[i,o,j] dyq[o, PadLeft+u+j] with dyq
			// = dy between K-1 zeros on both sides: a forward convolution
			// of Cout rows into Cin, every output seeing all K taps.
			padRows(dyq, dyb, c.Cout, L, K-1, K-1)
			kern.ConvMultiBias(dx[b*c.Cin*T:(b+1)*c.Cin*T], nil, T, dyq[c.PadLeft:], Tq, wt, pwt, zero, c.Cin, c.Cout, K, T)
		}
		return
	}
	if dx != nil {
		clear(dx)
	}
	n := ci * K * L
	buf := sc.take(2 * n)
	col, dcol := buf[:n], buf[n:]
	for b := 0; b < B; b++ {
		for g := 0; g < G; g++ {
			xg := x[(b*c.Cin+g*ci)*T : (b*c.Cin+(g+1)*ci)*T]
			dyg := dy[(b*c.Cout+g*co)*L : (b*c.Cout+(g+1)*co)*L]
			wg := w[g*co*ci*K : (g+1)*co*ci*K]
			if dw != nil {
				im2col(col, xg, ci, K, T, L, c.Stride, c.Dilation, c.PadLeft)
				kern.ConvMultiGradW(dw[g*co*ci*K:(g+1)*co*ci*K], dyg, L, col, L, co, ci*K, 1, L)
			}
			if dx != nil {
				clear(dcol)
				kern.ConvMultiGradX(dcol, L, dyg, L, wg, co, ci*K, 1, L)
				col2im(dx[(b*c.Cin+g*ci)*T:(b*c.Cin+(g+1)*ci)*T], dcol, ci, K, T, L, c.Stride, c.Dilation, c.PadLeft)
			}
		}
	}
}

// ForwardTaps computes n output steps of the convolution from their
// taps, the steps' im2col columns:
//
//	dst[o, j] = bias[o] + sum_{i<ci, k<Kernel} w[o,i,k] taps[(g(o)*ci+i)*Kernel+k, j]
//
// for o < Cout and j < n, ci = Cin/Groups and g(o) the group of output
// channel o: row c*Kernel+k of taps (Cin*Kernel rows of n) holds, for
// each step, the value of input channel c that its tap k reads (the
// stride, dilation and padding are the caller's). dst is Cout rows of n;
// bias may be nil. It is the im2col path's product (kern.ConvMultiBias
// with one tap), so a column's value does not depend on n or on the
// other columns.
func (c Conv1D) ForwardTaps(dst, taps, w, bias []float32, n int) {
	K := c.Kernel
	need("conv1d taps", len(taps), c.Cin*K*n)
	need("conv1d dst", len(dst), c.Cout*n)
	need("conv1d w", len(w), c.WeightLen())
	needOpt("conv1d bias", bias, c.Cout)
	if n == 0 {
		return
	}
	ci, co := c.Cin/c.Groups, c.Cout/c.Groups
	sc := convPool.Get().(*convScratch)
	defer convPool.Put(sc)
	if bias == nil {
		bias = sc.take(c.Cout)
		clear(bias)
	}
	for g := 0; g < c.Groups; g++ {
		kern.ConvMultiBias(dst[g*co*n:(g+1)*co*n], nil, n, taps[g*ci*K*n:(g+1)*ci*K*n], n,
			w[g*co*ci*K:(g+1)*co*ci*K], nil, bias[g*co:(g+1)*co], co, ci*K, 1, n)
	}
}

// channelSteps returns the nonzero values' positions o*L + t of dy
// (Cout rows of L) that is zero outside the steps P (supportSteps),
// increasing, in a buffer of the scratch's.
func (s *convScratch) channelSteps(dy []float32, Cout, L int, P []int32) []int32 {
	if cap(s.csteps) < len(P)*Cout {
		s.csteps = make([]int32, len(P)*Cout)
	}
	list := s.csteps[:0]
	for o := 0; o < Cout; o++ {
		for _, t := range P {
			if math.Float32bits(dy[o*L+int(t)])<<1 != 0 {
				list = append(list, int32(o*L)+t)
			}
		}
	}
	return list
}
