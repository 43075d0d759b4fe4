package graph

import (
	"slices"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// This file runs the boundary plan's nodes (edges.go) on planes, where
// every trunk node has a field of stride 1. A value v's dirty steps of a
// boundary b are then the steps b+d for the offsets d in [lo[v], hi[v]),
// the same for every boundary:
//
//	lo[v] = min_u lo[u] - (Kernel-1)*Dilation + PadLeft,  hi[v] = max_u hi[u] + PadLeft
//
// over the node's inputs u, lo = hi = 0 at the input (its steps before b
// are x's, from b on u's). So a batch of B boundaries of one direction is
// computed by offset: plane d of value v is the C values of step b+d of
// each boundary, boundary j in column j, and a value's planes are kept as
// C rows of (hi-lo)*B values, row c holding planes lo..hi-1 one after the
// other. A node computes all its planes by one call:
//
//   - an op with Taps (a convolution, a max pool) gets its taps, row
//     c*K+k of its input channel c's tap k: the input's planes d -
//     PadLeft + k*Dilation, a run of them copied in one piece from the
//     input's planes where they are dirty, taken from the x pass's or the
//     u pass's values (the boundary's side) where they are not, and the
//     op's padding where the step lies outside the value; a convolution
//     is then one matrix product of its (Cout, C*K) weights with the taps
//     over (hi-lo)*B columns;
//   - a per-step op (Kernel 1, no padding) runs Columns on its input's
//     planes.
//
// The kernels run on rows of (hi-lo)*B columns instead of a few steps
// per boundary, and the copies are rows of B values, one piece for
// consecutive boundaries (occlusion's windows). Steps b+d outside a
// value are computed too and never read: a reader takes its padding
// there, and a boundary's maximum reads only the steps inside the
// pool's input. Every column is computed alone (the kernels' bits do not
// depend on the number of columns), so a boundary's maxima do not depend
// on the other boundaries of its batch.

// planeWS is the planes path's workspace.
type planeWS struct {
	lo, hi []int       // per value: the dirty offsets [lo, hi) from a boundary
	val    [][]float32 // per value of the trunk: C rows of (hi-lo)*winBatch values
	taps   [][]float32 // per input position of a node: its taps
	pos    []int       // the batch's boundaries' positions
	acc    []float32   // the batch's maxima, C rows of B
	list   []edgeAt    // the call's boundaries by direction and position
}

// planes returns the planes path's workspace, made on first use, or nil
// when a trunk node's field has a stride other than 1 or its op has
// neither Taps (with one input) nor, for a per-step op, Columns.
func (n *Net) planes() *planeWS {
	p, e := n.tplan, n.win.edge
	if e.plOnce {
		return e.pl
	}
	e.plOnce = true
	pl := &planeWS{lo: make([]int, len(n.shapes)), hi: make([]int, len(n.shapes)), val: make([][]float32, len(n.shapes)), pos: make([]int, winBatch)}
	var taps []int
	for _, i := range p.trunk {
		nd, f := &n.nodes[i], n.win.nodes[i].f
		perStep := f.Kernel == 1 && f.PadLeft == 0 && f.PadRight == 0 && nd.op.Columns != nil
		if f.Stride != 1 || !(nd.op.Taps != nil && len(nd.inputs) == 1 || perStep) {
			return nil
		}
		a, c := pl.lo[nd.inputs[0]], pl.hi[nd.inputs[0]]
		for _, u := range nd.inputs[1:] {
			a, c = min(a, pl.lo[u]), max(c, pl.hi[u])
		}
		v := i + 1
		pl.lo[v], pl.hi[v] = a-(f.Kernel-1)*f.Dilation+f.PadLeft, c+f.PadLeft
		P := pl.hi[v] - pl.lo[v]
		pl.val[v] = make([]float32, nd.out.C*P*winBatch)
		for j, s := range nd.in {
			if j == len(taps) {
				taps = append(taps, 0)
			}
			taps[j] = max(taps[j], s.C*f.Kernel*P*winBatch)
		}
	}
	for _, t := range taps {
		pl.taps = append(pl.taps, make([]float32, t))
	}
	pl.acc = make([]float32, n.shapes[p.in].C*winBatch)
	e.pl = pl
	return pl
}

// planeBatches computes the boundaries of the list on planes, by
// direction and in order of position, winBatch at a time, and returns
// the work done.
func (n *Net) planeBatches(pl *planeWS, list []edgeAt) float64 {
	pl.list = append(pl.list[:0], list...)
	slices.SortFunc(pl.list, func(a, b edgeAt) int {
		if a.dir != b.dir {
			return int(a.dir) - int(b.dir)
		}
		return a.b - b.b
	})
	var work float64
	for e0 := 0; e0 < len(pl.list); {
		e1 := e0 + 1
		for e1 < len(pl.list) && e1-e0 < winBatch && pl.list[e1].dir == pl.list[e0].dir {
			e1++
		}
		work += n.planeBatch(pl, pl.list[e0:e1])
		e0 = e1
	}
	return work
}

// planeBatch computes the dirty steps of the boundaries eb (at most
// winBatch, of one direction, in order of position) through the trunk
// on planes, keeps each one's maximum per channel and its D(b), and
// returns the work done.
func (n *Net) planeBatch(pl *planeWS, eb []edgeAt) float64 {
	p, w := n.tplan, n.win
	e := w.edge
	B, dir := len(eb), eb[0].dir
	pos := pl.pos[:B]
	for j, x := range eb {
		pos[j] = x.b
	}
	var work float64
	for _, i := range p.trunk {
		nd, wn := &n.nodes[i], &w.nodes[i]
		v := i + 1
		N := (pl.hi[v] - pl.lo[v]) * B
		if N == 0 {
			continue
		}
		c := n.winCall(i, 1, wn.attrs, Shape{nd.out.C, N})
		for j := range nd.inputs {
			c.In[j] = Shape{nd.in[j].C, N}
			c.X[j] = n.planeTaps(pl, i, j, pos, dir)
		}
		c.Y = pl.val[v][:nd.out.C*N]
		c.Idx = nil
		if nd.op.Taps != nil {
			nd.op.Taps(c)
		} else {
			nd.op.Columns(c)
		}
		work += float64(N) * wn.step
	}
	// Each boundary's dirty steps inside the pool's input, and their
	// first maximum per channel, in time order.
	s := n.shapes[p.in]
	lo0, P := pl.lo[p.in], pl.hi[p.in]-pl.lo[p.in]
	val := pl.val[p.in]
	// The maxima over all P planes of every boundary, column by column
	// (kern.FirstMax over the batch), for the boundaries whose dirty
	// steps all lie inside the value; the others' below, step by step.
	acc := pl.acc[:s.C*B]
	if P > 0 {
		for ch := 0; ch < s.C; ch++ {
			a, row := acc[ch*B:(ch+1)*B], val[ch*P*B:(ch+1)*P*B]
			copy(a, row[:B])
			for q := 1; q < P; q++ {
				kern.FirstMax(a, a, row[q*B:(q+1)*B])
			}
		}
	}
	for j, b := range pos {
		lo := min(max(b+lo0, 0), s.T)
		hi := min(max(b+lo0+P, lo), s.T)
		e.dlo[b], e.dhi[b] = lo, hi
		m := e.emax[dir-1][b*p.P : (b+1)*p.P]
		if lo == b+lo0 && hi == b+lo0+P && P > 0 {
			for ch := range s.C {
				m[ch] = acc[ch*B+j]
			}
			continue
		}
		for ch := 0; ch < s.C && lo < hi; ch++ {
			row := val[ch*P*B+j : (ch+1)*P*B]
			q := lo - b - lo0
			v := row[q*B]
			for q++; q < hi-b-lo0; q++ {
				v = firstMax(v, row[q*B])
			}
			m[ch] = v
		}
	}
	return work
}

// planeTaps returns the taps of input j of node i for the batch's
// boundaries at pos: Kernel rows a channel of (hi-lo)*B values (the
// node's output planes), or the input's planes themselves when they are
// the taps (a per-step op on a value of the same dirty offsets).
func (n *Net) planeTaps(pl *planeWS, i, j int, pos []int, dir int8) []float32 {
	w := n.win
	nd, wn := &n.nodes[i], &w.nodes[i]
	f, u, v := wn.f, nd.inputs[j], i+1
	B := len(pos)
	P := pl.hi[v] - pl.lo[v]
	N := P * B
	s := n.shapes[u]
	ulo, Pu := pl.lo[u], pl.hi[u]-pl.lo[u]
	if f.Kernel == 1 && f.PadLeft == 0 && ulo == pl.lo[v] && Pu == P {
		return pl.val[u][:s.C*N]
	}
	left, right := w.base[u], w.ubase[u]
	if dir == rise {
		left, right = right, left
	}
	K := f.Kernel
	dst := pl.taps[j][:s.C*K*N]
	first, last := pos[0], pos[B-1]
	for k := 0; k < K; k++ {
		off := pl.lo[v] + k*f.Dilation - f.PadLeft // plane q reads the input's offset q+off
		qa := min(max(ulo-off, 0), P)              // planes [qa, qb) read dirty ones
		qb := min(max(ulo+Pu-off, qa), P)
		for ch := 0; ch < s.C; ch++ {
			row := dst[(ch*K+k)*N : (ch*K+k+1)*N]
			src := pl.val[u][ch*Pu*B:]
			copy(row[qa*B:qb*B], src[(qa+off-ulo)*B:(qb+off-ulo)*B])
			for q := 0; q < qa; q++ {
				fillPlane(row[q*B:(q+1)*B], left[ch*s.T:(ch+1)*s.T], pos, q+off, wn.pad)
			}
			for q := qb; q < P; q++ {
				fillPlane(row[q*B:(q+1)*B], right[ch*s.T:(ch+1)*s.T], pos, q+off, wn.pad)
			}
			if qa < qb && (first+qa+off < 0 || last+qb-1+off >= s.T) {
				for q := qa; q < qb; q++ { // dirty planes' steps outside the value: the padding
					// pos is sorted: b+q+off < 0 for the first ja, >= T from jb on
					ja, _ := slices.BinarySearch(pos, -q-off)
					jb, _ := slices.BinarySearch(pos, s.T-q-off)
					fill(row[q*B:q*B+ja], wn.pad)
					fill(row[q*B+jb:(q+1)*B], wn.pad)
				}
			}
		}
	}
	return dst
}

// fillPlane writes dst[j] = src[pos[j]+d], or pad where that step lies
// outside src.
func fillPlane(dst, src []float32, pos []int, d int, pad float32) {
	B := len(pos)
	if t0 := pos[0] + d; pos[B-1]-pos[0] == B-1 && t0 >= 0 && t0+B <= len(src) {
		copy(dst, src[t0:t0+B])
		return
	}
	for j, b := range pos {
		if t := b + d; t >= 0 && t < len(src) {
			dst[j] = src[t]
		} else {
			dst[j] = pad
		}
	}
}

// fill sets every value of dst to v.
func fill(dst []float32, v float32) {
	for i := range dst {
		dst[i] = v
	}
}
