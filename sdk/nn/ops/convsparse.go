package ops

import (
	"math"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// convBackwardSparse is the direct convolution's (stride, dilation and
// groups 1) backward pass of one sample whose output gradient dy (Cout x
// L) is nonzero at the positions steps (o*L + t, increasing) only: every
// other term of the dense sums is an exact zero, so
//
//	dw[o,i,k] += v x[i,t+k-PadLeft],  dx[i,t+k-PadLeft] += w[o,i,k] v,  v = dy[o,t],
//
// the padding's terms left out (they read or write zeros). dx (Cin x T,
// nil if not wanted) is written, dw (nil if not wanted) added to. The
// sums take another order than the dense kernels' (rounding only).
func convBackwardSparse(c Conv1D, dx, dw, dy, x, w []float32, T, L int, steps []int32) {
	if dx != nil {
		clear(dx)
	}
	K := c.Kernel
	for _, s := range steps {
		o, t := int(s)/L, int(s)%L
		v := dy[s]
		// Taps k0..k1-1 read input steps inside 0..T-1.
		u0 := t - c.PadLeft
		k0, k1 := max(0, -u0), min(K, T-u0)
		for i := 0; i < c.Cin; i++ {
			xi := x[i*T : (i+1)*T]
			wk := w[(o*c.Cin+i)*K : (o*c.Cin+i+1)*K]
			if dw != nil {
				dwk := dw[(o*c.Cin+i)*K : (o*c.Cin+i+1)*K]
				for k := k0; k < k1; k++ {
					dwk[k] += v * xi[u0+k]
				}
			}
			if dx != nil {
				dxi := dx[i*T : (i+1)*T]
				for k := k0; k < k1; k++ {
					dxi[u0+k] += wk[k] * v
				}
			}
		}
	}
}

// The sparse training backward (graph's Op.SparseBackward): a gradient
// handed on without being formed. "Hot": one value per row, v[r] at step
// at[r] of row r (a global max pool's input gradient), zero elsewhere.
// "Steps": per sample b, the gradient is zero but at the steps steps[b]
// (increasing, the same for every channel), the only ones written; a nil
// list stands for a dense (fully written) sample.

// ReLUBackwardHot masks the hot values v (at[r] in row r of y, rows of T
// steps) as ReLUBackward masks dy: v[r] = 0 where y[r*T+at[r]] <= 0 (a
// NaN passes); y is the ReLU's input or its output.
func ReLUBackwardHot(v []float32, at []int32, y []float32, T int) {
	need("relu hot at", len(at), len(v))
	need("relu hot y", len(y), len(v)*T)
	for r, t := range at {
		if !(y[r*T+int(t)] > 0) && y[r*T+int(t)] == y[r*T+int(t)] {
			v[r] = 0
		}
	}
}

// ReLUBackwardSteps is ReLUBackward of the B = len(steps) samples of C
// rows of T steps on their supports: dx = dy masked at the steps of
// steps[b] only (every step of a sample whose list is nil). dx may be dy.
func ReLUBackwardSteps(dx, dy, y []float32, C, T int, steps [][]int32) {
	n := C * T
	need("relu steps dy", len(dy), len(steps)*n)
	need("relu steps dx", len(dx), len(dy))
	need("relu steps y", len(y), len(dy))
	for b, P := range steps {
		if P == nil {
			kern.ReluGrad(dx[b*n:(b+1)*n], dy[b*n:(b+1)*n], y[b*n:(b+1)*n])
			continue
		}
		for c := 0; c < C; c++ {
			r := b*n + c*T
			d, g, o := dx[r:r+T], dy[r:r+T], y[r:r+T]
			for _, u := range P {
				d[u] = math.Float32frombits(math.Float32bits(g[u]) & reluPass(o[u]))
			}
		}
	}
}

// reluPass is all ones when a ReLU passes the gradient at y (y > 0 or
// NaN), else 0; branchless, as ReLU signs are unpredictable.
func reluPass(y float32) uint32 {
	b := math.Float32bits(y)
	a := b & 0x7fffffff
	nz := uint32(-int32(a)) >> 31                   // a != 0
	nan := uint32(int32(0x7f800000)-int32(a)) >> 31 // a > inf bits
	return -(nz&(b>>31^1) | nan)
}

// Densify zeroes the rows of C rows of T steps of each sample b outside
// steps[b] (nothing for a nil list), making a steps gradient dense.
func Densify(g []float32, C, T int, steps [][]int32) {
	n := C * T
	need("densify g", len(g), len(steps)*n)
	for b, P := range steps {
		if P == nil {
			continue
		}
		for c := 0; c < C; c++ {
			row := g[b*n+c*T : b*n+(c+1)*T]
			prev := 0
			for _, u := range P {
				clear(row[prev:u])
				prev = int(u) + 1
			}
			clear(row[prev:])
		}
	}
}

// DensifyHot writes the hot values v (at[r] in row r) to g as a dense
// gradient of rows of T steps (GlobalMaxPoolBackward).
func DensifyHot(g, v []float32, at []int32, T int) { GlobalMaxPoolBackward(g, v, at, T) }

// SparseBackward reports whether the convolution has BackwardHot and
// BackwardSteps: stride, dilation and groups 1.
func (c Conv1D) SparseBackward() bool { return c.direct() }

// expandSteps writes to dst[:0] the distinct input steps u = t - pl + k,
// t in ts (increasing), k < K, 0 <= u < T, increasing, and returns them.
func expandSteps(dst, ts []int32, K, pl, T int) []int32 {
	dst = dst[:0]
	last := int32(-1)
	for _, t := range ts {
		for k := 0; k < K; k++ {
			u := t - int32(pl) + int32(k)
			if u > last && u >= 0 && int(u) < T {
				dst = append(dst, u)
				last = u
			}
		}
	}
	return dst
}

// sortSteps sorts a short list in place (insertion sort) and drops
// repeats, returning the list.
func sortSteps(a []int32) []int32 {
	for i := 1; i < len(a); i++ {
		v, j := a[i], i
		for ; j > 0 && a[j-1] > v; j-- {
			a[j] = a[j-1]
		}
		a[j] = v
	}
	n := 0
	for i, v := range a {
		if i == 0 || v != a[n-1] {
			a[n] = v
			n++
		}
	}
	return a[:n]
}

// BackwardHot is Backward (stride, dilation and groups 1) of a batch
// whose output gradient is hot: v[b*Cout+o] at step at[b*Cout+o] of
// output row (b, o), zero elsewhere. Every other term of the dense sums
// is an exact zero, so with t = at[r], u = t - PadLeft,
//
//	db[o] += v,  dw[o,i,k] += v x[b,i,u+k],  dx[b,i,u+k] += w[o,i,k] v,
//
// rows in order, the padding's terms left out. dx, if not nil, is written
// at the steps dxSteps[b] (set to the distinct u+k inside 0..T-1 of the
// rows with v != 0; its capacity must be at least T) only: it is a steps
// gradient. dw and db are added to; either may be nil.
func (c Conv1D) BackwardHot(dx, dw, db, v []float32, at []int32, x, w []float32, T int, dxSteps [][]int32) {
	if !c.direct() {
		panic("ops: conv1d BackwardHot needs stride, dilation and groups 1")
	}
	L := c.mustOut(T)
	B := len(x) / (c.Cin * T)
	need("conv1d x", len(x), B*c.Cin*T)
	need("conv1d hot v", len(v), B*c.Cout)
	need("conv1d hot at", len(at), B*c.Cout)
	need("conv1d w", len(w), c.WeightLen())
	needOpt("conv1d dx", dx, len(x))
	needOpt("conv1d dw", dw, c.WeightLen())
	needOpt("conv1d db", db, c.Cout)
	if dx != nil {
		need("conv1d dxSteps", len(dxSteps), B)
	}
	sc := convPool.Get().(*convScratch)
	defer convPool.Put(sc)
	if cap(sc.steps) < c.Cout {
		sc.steps = make([]int32, c.Cout)
	}
	K, Cin := c.Kernel, c.Cin
	n := Cin * T
	for b := 0; b < B; b++ {
		vb, ab := v[b*c.Cout:(b+1)*c.Cout], at[b*c.Cout:(b+1)*c.Cout]
		xb := x[b*n : (b+1)*n]
		var dxb []float32
		if dx != nil {
			dxb = dx[b*n : (b+1)*n]
			ts := sc.steps[:0]
			for o, t := range ab {
				if int(t) >= L {
					panic("ops: conv1d hot step past the output")
				}
				if vb[o] != 0 {
					ts = append(ts, t)
				}
			}
			P := expandSteps(dxSteps[b][:0], sortSteps(ts), K, c.PadLeft, T)
			dxSteps[b] = P
			for i := 0; i < Cin; i++ {
				row := dxb[i*T : (i+1)*T]
				for _, u := range P {
					row[u] = 0
				}
			}
		}
		for o, val := range vb {
			if val == 0 {
				continue
			}
			u0 := int(ab[o]) - c.PadLeft
			k0, k1 := max(0, -u0), min(K, T-u0)
			if db != nil {
				db[o] += val
			}
			if K == 3 && k0 == 0 && k1 == 3 && dw != nil && dxb != nil {
				// the paper's kernel inside the input, unrolled: the
				// same products and sums
				for i := 0; i < Cin; i++ {
					xr := xb[i*T+u0 : i*T+u0+3]
					gr := dw[(o*Cin+i)*3 : (o*Cin+i)*3+3]
					gr[0] += val * xr[0]
					gr[1] += val * xr[1]
					gr[2] += val * xr[2]
					dr := dxb[i*T+u0 : i*T+u0+3]
					wr := w[(o*Cin+i)*3 : (o*Cin+i)*3+3]
					dr[0] += wr[0] * val
					dr[1] += wr[1] * val
					dr[2] += wr[2] * val
				}
				continue
			}
			for i := 0; i < Cin; i++ {
				if dw != nil {
					xr := xb[i*T : (i+1)*T]
					gr := dw[(o*Cin+i)*K : (o*Cin+i+1)*K]
					for k := k0; k < k1; k++ {
						gr[k] += val * xr[u0+k]
					}
				}
				if dxb != nil {
					dr := dxb[i*T : (i+1)*T]
					wr := w[(o*Cin+i)*K : (o*Cin+i+1)*K]
					for k := k0; k < k1; k++ {
						dr[u0+k] += wr[k] * val
					}
				}
			}
		}
	}
}

// BackwardSteps is Backward (stride, dilation and groups 1) of a batch
// whose output gradient dy is a steps gradient (steps[b] per sample, nil
// for a dense sample). A sample whose support holds at most one step in
// supportShare of L goes by its support P: with u = t - PadLeft,
//
//	db[o] += sum_{t in P} dy[o,t],  dw[o,i,k] += sum_{t in P} dy[o,t] x[i,u+k],
//	dx[i,u+k] += sum_o w[o,i,k] dy[o,t]   (t in P, in order),
//
// the columns of dy and windows of x gathered into compact matrices (a
// rank-1 update of dw and a product with the weights per step), and its
// dx is written on the steps dxSteps[b] (the distinct u+k in 0..T-1;
// capacity at least T) only. Any other sample is densified in dy (Densify)
// and goes by the dense kernels, its dxSteps[b] set to nil. With relu not
// nil (the output of a ReLU after the convolution, B*Cout*L values) dy is
// first masked by it as ReLUBackward masks (in the gathered columns only,
// or in dy for a dense sample). dw and db are added to; dx, dw, db may be
// nil.
func (c Conv1D) BackwardSteps(dx, dw, db, dy, relu []float32, steps [][]int32, x, w []float32, T int, dxSteps [][]int32) {
	if !c.direct() {
		panic("ops: conv1d BackwardSteps needs stride, dilation and groups 1")
	}
	L := c.mustOut(T)
	B := len(steps)
	O, Cin, K := c.Cout, c.Cin, c.Kernel
	need("conv1d x", len(x), B*Cin*T)
	need("conv1d dy", len(dy), B*O*L)
	need("conv1d w", len(w), c.WeightLen())
	needOpt("conv1d dx", dx, len(x))
	needOpt("conv1d dw", dw, c.WeightLen())
	needOpt("conv1d db", db, O)
	needOpt("conv1d relu", relu, len(dy))
	if dx != nil {
		need("conv1d dxSteps", len(dxSteps), B)
	}
	ck, n, m := Cin*K, Cin*T, O*L
	for b := 0; b < B; b++ {
		P := steps[b]
		xb, dyb := x[b*n:(b+1)*n], dy[b*m:(b+1)*m]
		var dxb []float32
		if dx != nil {
			dxb = dx[b*n : (b+1)*n]
		}
		if P == nil || supportShare*len(P) > L {
			if P != nil {
				Densify(dyb, O, L, steps[b:b+1])
			}
			if relu != nil {
				kern.ReluGrad(dyb, dyb, relu[b*m:(b+1)*m])
			}
			convBackward32(c, dxb, dw, db, dyb, xb, w, T, false)
			if dx != nil {
				dxSteps[b] = nil
			}
			continue
		}
		np := len(P)
		sc := convPool.Get().(*convScratch)
		buf := sc.take(np*O + 2*np*ck + O*ck + O)
		DY, XW, DX := buf[:np*O], buf[np*O:np*(O+ck)], buf[np*(O+ck):np*(O+2*ck)]
		G, bs := buf[np*(O+2*ck):np*(O+2*ck)+O*ck], buf[np*(O+2*ck)+O*ck:]
		for o := 0; o < O; o++ {
			row := dyb[o*L : (o+1)*L]
			if relu == nil {
				for j, t := range P {
					DY[j*O+o] = row[t]
				}
				continue
			}
			yr := relu[b*m+o*L : b*m+(o+1)*L]
			for j, t := range P {
				DY[j*O+o] = math.Float32frombits(math.Float32bits(row[t]) & reluPass(yr[t]))
			}
		}
		// The sample's sums first, each from zero in order of the steps,
		// then added: the layer-list engine's order.
		if db != nil {
			clear(bs)
			for j := 0; j < np; j++ {
				for o, v := range DY[j*O : (j+1)*O] {
					bs[o] += v
				}
			}
			for o, v := range bs {
				db[o] += v
			}
		}
		if dw != nil {
			for i := 0; i < Cin; i++ {
				row := xb[i*T : (i+1)*T]
				for j, t := range P {
					u0 := int(t) - c.PadLeft
					win := XW[j*ck+i*K : j*ck+(i+1)*K]
					if K == 3 && u0 >= 0 && u0+3 <= T { // the paper's kernel inside the row
						win, r := win[:3], row[u0:u0+3]
						win[0], win[1], win[2] = r[0], r[1], r[2]
						continue
					}
					for k := range win {
						if u := u0 + k; u >= 0 && u < T {
							win[k] = row[u]
						} else {
							win[k] = 0
						}
					}
				}
			}
			clear(G)
			for j := 0; j < np; j++ {
				kern.Ger(G, ck, DY[j*O:(j+1)*O], XW[j*ck:(j+1)*ck])
			}
			for k, v := range G {
				dw[k] += v
			}
		}
		if dxb != nil {
			for j := 0; j < np; j++ {
				kern.GemvT(DX[j*ck:(j+1)*ck], w, ck, DY[j*O:(j+1)*O])
			}
			Q := expandSteps(dxSteps[b][:0], P, K, c.PadLeft, T)
			dxSteps[b] = Q
			for i := 0; i < Cin; i++ {
				row := dxb[i*T : (i+1)*T]
				for _, u := range Q {
					row[u] = 0
				}
				for j, t := range P {
					u0 := int(t) - c.PadLeft
					if K == 3 && u0 >= 0 && u0+3 <= T {
						d, r := DX[j*ck+i*3:j*ck+i*3+3], row[u0:u0+3]
						r[0] += d[0]
						r[1] += d[1]
						r[2] += d[2]
						continue
					}
					for k, v := range DX[j*ck+i*K : j*ck+(i+1)*K] {
						if u := u0 + k; u >= 0 && u < T {
							row[u] += v
						}
					}
				}
			}
		}
		convPool.Put(sc)
	}
}
