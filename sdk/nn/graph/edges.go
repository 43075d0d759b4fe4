package graph

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// This file is the boundary plan of a network with a trunk plan
// (trunk.go) for copies of x perturbed on spans of every channel: x with
// the baseline input u (a constant, or a baseline signal z) on some
// spans, as occlusion's wide windows and LIME's masked segments are. A
// step t of the pool's input value reads input samples
// [t*S + Lo, t*S + Hi] (the trunk's span), so at a boundary b of a copy,
// where x gives way to u (a fall) or u to x (a rise), only the steps that
// read both b-1 and b see both sides: the boundary's dirty steps D(b).
// The others read x alone, and equal the unperturbed input's values, or u
// alone, and equal the all-baseline input's. When the boundaries of a
// copy are at least Hi-Lo samples apart no step reads two of them, and a
// dirty step's value depends only on its boundary and direction. So:
//
//   - each boundary (position and direction) of the call is computed
//     once, by the incremental path's nodes on the dirty steps alone, the
//     values left and right of them taken from the x pass or the u pass
//     (Net.gather's sides), and reduced to its maximum per channel;
//   - a copy's pooled vector is the first maximum, in time order, of its
//     regions' range maxima (over the x pass's or the u pass's values)
//     and its boundaries' maxima.
//
// Every value is the op's own arithmetic at that step, so the pooled
// vectors equal full forward passes' up to float32 rounding, and the head
// runs on them as on any pooled vector (trunk.go).

// The directions of a boundary.
const (
	fall int8 = 1 // x before the boundary, u from it on
	rise int8 = 2 // u before the boundary, x from it on
)

// edgeWS is the boundary plan's workspace.
type edgeWS struct {
	u    []float32 // the all-baseline input
	emax [2][]float32
	at   [2][]int // per direction and position: 1 + the boundary's index in the work list, 0 none
	dlo  []int    // per position: D(b) = [dlo, dhi) of the pool's input
	dhi  []int
	rng  []float32      // a range's maxima (edgeCombine)
	tm   [2][]float32   // the x pass's and the u pass's pool input, time major (edgeCombine)
	sp   [2][][]float32 // their sparse tables
	pre  [2][]float32   // their prefix maxima
	suf  [2][]float32   // and suffix maxima
	list []edgeAt
	side []int8 // a batch's directions
	// row holds per input position a batch's gathered inputs as one
	// row (edgeNode), and out the node's output on it.
	row [][]float32
	out []float32
	// pl is the planes path's workspace (planes.go), nil when the trunk
	// does not run on planes; plOnce: it was looked for.
	pl     *planeWS
	plOnce bool
}

type edgeAt struct {
	b   int
	dir int8
}

// cutCopy is one copy for the boundary plan: its boundaries in order,
// 0 < b < T, and whether the first region is u.
type cutCopy struct {
	bnd    []int
	firstU bool
}

// edgeOK reports whether the boundary plan computes the copies: a trunk
// plan, and the boundaries of each copy in order and at least reach-1
// samples apart.
func (n *Net) edgeOK(cps []cutCopy) bool {
	p := n.trunk()
	if p == nil {
		return false
	}
	nb, ok := cutBoundaries(cps, n.shapes[0].T, p.reach()-1)
	if !ok {
		return false
	}
	// It pays when the x and u passes, the boundaries and the head cost
	// less than the copies' forward passes.
	w := n.window()
	work := 2*w.dense + float64(nb)*n.boundaryCost() + float64(len(cps)+1)*n.headCost()
	return work < float64(len(cps))*w.dense
}

// cutBoundaries returns the number of distinct boundaries (position and
// direction) of the copies cps of an input of T steps, and whether each
// copy's boundaries are in order, inside (0, T) and at least gap apart.
func cutBoundaries(cps []cutCopy, T, gap int) (int, bool) {
	seen := make([]int8, T+1) // per position, the directions of its boundaries
	nb := 0
	for _, c := range cps {
		u := c.firstU
		for k, b := range c.bnd {
			if b <= 0 || b >= T || (k > 0 && b-c.bnd[k-1] < gap) {
				return 0, false
			}
			d := fall
			if u {
				d = rise
			}
			if seen[b]&d == 0 {
				seen[b] |= d
				nb++
			}
			u = !u
		}
	}
	return nb, true
}

// dirtyRange is the range of output steps, of To, of a node of field f
// that read a step of its input's dirty range [a, c), or both a-1 and a
// when it is empty (a boundary between steps): [lo, hi), empty at lo
// when no step does.
func dirtyRange(f Field, a, c, To int) (int, int) {
	lo := min(max(ceilDiv(a-(f.Kernel-1)*f.Dilation+f.PadLeft, f.Stride), 0), To)
	return lo, max(min(floorDiv(c-1+f.PadLeft, f.Stride)+1, To), lo)
}

// boundaryCost is the work of one boundary in the middle of the input:
// each trunk node's dirty steps times its work a step.
func (n *Net) boundaryCost() float64 {
	p, w := n.tplan, n.win
	lo, hi := make([]int, len(n.shapes)), make([]int, len(n.shapes))
	lo[0], hi[0] = n.shapes[0].T/2, n.shapes[0].T/2
	var work float64
	for _, i := range p.trunk {
		nd, f := &n.nodes[i], w.nodes[i].f
		a, c := lo[nd.inputs[0]], hi[nd.inputs[0]]
		for _, u := range nd.inputs[1:] {
			a, c = min(a, lo[u]), max(c, hi[u])
		}
		lo[i+1], hi[i+1] = dirtyRange(f, a, c, nd.out.T)
		work += float64(hi[i+1]-lo[i+1]) * w.nodes[i].step
	}
	return work
}

// edgeProbs writes dst[j] = p_class of copy cps[j] of x, u being the
// constant baseline or, when z is not nil, z, by the boundary plan, and
// reports whether it could (edgeOK).
func (n *Net) edgeProbs(dst, x, z []float32, baseline float32, class int, cps []cutCopy) (Path, bool, error) {
	if !n.edgeOK(cps) {
		return Path{}, false, nil
	}
	pooled := make([]float32, (len(cps)+1)*n.tplan.P)
	path := n.edgePooled(pooled, x, n.baselineInput(z, baseline), cps)
	if err := n.headProbs(dst[:len(cps)], pooled, pooled[len(cps)*n.tplan.P:], class); err != nil {
		return Path{}, true, err
	}
	return path, true, nil
}

// baselineInput is z, or the input of the constant baseline everywhere.
func (n *Net) baselineInput(z []float32, baseline float32) []float32 {
	if z != nil {
		return z
	}
	u := make([]float32, n.shapes[0].Size())
	for i := range u {
		u[i] = baseline
	}
	return u
}

// windowCuts are the boundary plan's copies of windows of width at the
// starts.
func (n *Net) windowCuts(starts []int, width int) []cutCopy {
	T := n.shapes[0].T
	cps := make([]cutCopy, len(starts))
	bnd := make([]int, 0, 2*len(starts))
	for j, s := range starts {
		k := len(bnd)
		if s > 0 {
			bnd = append(bnd, s)
		}
		if s+width < T {
			bnd = append(bnd, s+width)
		}
		cps[j] = cutCopy{bnd: bnd[k:len(bnd):len(bnd)], firstU: s == 0}
	}
	return cps
}

// spanCuts are the boundary plan's copies of the spans, or false when a
// span covers one channel only.
func (n *Net) spanCuts(spans [][]ChannelSpan) ([]cutCopy, bool) {
	T := n.shapes[0].T
	cps := make([]cutCopy, len(spans))
	var sorted []ChannelSpan
	for j, sp := range spans {
		sorted = append(sorted[:0], sp...)
		for _, s := range sorted {
			if s.Ch != AllChannels {
				return nil, false
			}
		}
		slices.SortFunc(sorted, func(a, b ChannelSpan) int { return a.Lo - b.Lo })
		var bnd []int
		end := -1 // the end of the u region so far (-1: none)
		for _, s := range sorted {
			if s.Lo >= s.Hi {
				continue
			}
			switch {
			case end >= s.Lo: // overlapping or adjacent: one region
				end = max(end, s.Hi)
				continue
			case end >= 0:
				bnd = append(bnd, end)
			}
			if s.Lo > 0 {
				bnd = append(bnd, s.Lo)
			} else {
				cps[j].firstU = true
			}
			end = s.Hi
		}
		if end >= 0 && end < T {
			bnd = append(bnd, end)
		}
		cps[j].bnd = bnd
	}
	return cps, true
}

// edgePooled writes the pooled vectors of the copies cps of x (edgeOK),
// with u the all-baseline input, then x's own: (len(cps)+1)*P values.
func (n *Net) edgePooled(pooled, x, u []float32, cps []cutCopy) Path {
	p, w := n.trunk(), n.winBuffers()
	if w.edge == nil {
		T, P := n.shapes[0].T, p.P
		w.edge = &edgeWS{dlo: make([]int, T+1), dhi: make([]int, T+1), u: make([]float32, n.shapes[0].Size()), side: make([]int8, winBatch)}
		for d := range 2 {
			w.edge.emax[d] = make([]float32, (T+1)*P)
			w.edge.at[d] = make([]int, T+1)
		}
		w.ubase = make([][]float32, len(n.shapes))
		for _, i := range p.trunk {
			w.ubase[i+1] = make([]float32, n.shapes[i+1].Size())
		}
	}
	e := w.edge
	N := len(cps)
	path := Path{Copies: N, Incremental: N, Dense: float64(N) * w.dense, Done: 2 * w.dense}
	n.winBase(x)
	w.ubase[0] = u
	for _, i := range p.trunk {
		nd := &n.nodes[i]
		c := n.winCall(i, 1, nd.attrs, nd.out)
		for j, v := range nd.inputs {
			c.X[j], c.In[j] = w.ubase[v], nd.in[j]
		}
		c.Y = w.ubase[i+1]
		c.Idx = w.idx[:nd.idx]
		nd.op.Forward(c)
	}
	// The boundaries the copies have.
	clear(e.at[0])
	clear(e.at[1])
	e.list = e.list[:0]
	for _, c := range cps {
		u := c.firstU
		for _, b := range c.bnd {
			d := fall
			if u {
				d = rise
			}
			if e.at[d-1][b] == 0 {
				e.list = append(e.list, edgeAt{b, d})
				e.at[d-1][b] = len(e.list)
			}
			u = !u
		}
	}
	if pl := n.planes(); pl != nil {
		path.Done += n.planeBatches(pl, e.list)
	} else {
		for e0 := 0; e0 < len(e.list); e0 += winBatch {
			path.Done += n.edgeBatch(e.list[e0:min(e0+winBatch, len(e.list))])
		}
	}
	n.edgeCombine(pooled, cps)
	copy(pooled[N*p.P:], w.base[p.g+1])
	path.Done += float64(N+1) * n.headCost()
	return path
}

// edgeBatch computes the dirty steps of the boundaries eb (at most
// winBatch) through the trunk, keeps each one's maximum per channel and
// its D(b), and returns the work done.
func (n *Net) edgeBatch(eb []edgeAt) float64 {
	p, w := n.tplan, n.win
	e := w.edge
	B := len(eb)
	w.side = e.side[:B]
	for j, x := range eb {
		w.clo[0][j], w.chi[0][j], w.slo[0][j] = x.b, x.b, x.b
		w.side[j] = x.dir
	}
	defer func() { w.side = nil }()
	w.w[0] = 0
	var work float64
	for _, i := range p.trunk {
		nd, wn := &n.nodes[i], &w.nodes[i]
		f, v, To := wn.f, i+1, nd.out.T
		W := 0
		for j := 0; j < B; j++ {
			a, c := w.clo[nd.inputs[0]][j], w.chi[nd.inputs[0]][j]
			for _, u := range nd.inputs[1:] {
				a, c = min(a, w.clo[u][j]), max(c, w.chi[u][j])
			}
			lo, hi := dirtyRange(f, a, c, To)
			w.clo[v][j], w.chi[v][j] = lo, hi
			W = max(W, hi-lo)
		}
		w.w[v] = W
		for j := 0; j < B; j++ {
			w.slo[v][j] = min(w.clo[v][j], To-W)
		}
		work += float64(B*W) * wn.step
		if f.Kernel == 1 && f.Stride == 1 && f.PadLeft == 0 || W == 0 || W == To {
			n.winNode(B, i)
		} else {
			n.edgeNode(B, i)
		}
	}
	s := n.shapes[p.in]
	W := w.w[p.in]
	var stored []float32
	if W > 0 {
		stored = n.winVal(p.in, B)
	}
	for j, x := range eb {
		lo, hi, off := w.clo[p.in][j], w.chi[p.in][j], w.slo[p.in][j]
		e.dlo[x.b], e.dhi[x.b] = lo, hi
		m := e.emax[x.dir-1][x.b*p.P : (x.b+1)*p.P]
		for c := 0; c < s.C && lo < hi; c++ {
			row := stored[(j*s.C+c)*W : (j*s.C+c+1)*W]
			v := row[lo-off]
			for _, y := range row[lo-off+1 : hi-off] {
				v = firstMax(v, y)
			}
			m[c] = v
		}
	}
	return work
}

// edgeCombine writes each copy's pooled vector: the first maximum, in
// time order, of its regions' range maxima and its boundaries' maxima.
// The tables of the x pass's and the u pass's pool input are kept time
// major (step t's channels at [t*C, (t+1)*C)), as the boundaries' maxima
// are, so every part of a copy is one contiguous vector of C values and a
// copy reads a few cache lines instead of C strided ones.
func (n *Net) edgeCombine(pooled []float32, cps []cutCopy) {
	p, w := n.tplan, n.win
	e := w.edge
	s := n.shapes[p.in]
	C, T := s.C, s.T
	var longest [2]int // per side, of the regions between two boundaries: the others are a prefix or a suffix
	for _, c := range cps {
		side := 0
		if c.firstU {
			side = 1
		}
		for k := 1; k < len(c.bnd); k++ {
			side = 1 - side
			longest[side] = max(longest[side], e.dlo[c.bnd[k]]-e.dhi[c.bnd[k-1]])
		}
	}
	if len(e.rng) < C {
		e.rng = make([]float32, C)
	}
	for d, v := range [2][]float32{w.base[p.in], w.ubase[p.in]} {
		if len(e.tm[d]) < s.Size() {
			e.tm[d] = make([]float32, s.Size())
			e.pre[d], e.suf[d] = make([]float32, s.Size()), make([]float32, s.Size())
		}
		tm := e.tm[d][:s.Size()]
		for c := 0; c < C; c++ {
			for t, y := range v[c*T : (c+1)*T] {
				tm[t*C+c] = y
			}
		}
		e.sp[d] = sparseMaxT(e.sp[d], tm, C, T, longest[d])
		prefixSuffixMaxT(e.pre[d], e.suf[d], tm, C)
	}
	type part struct {
		side, a, b int // a region's range of side 0 (x) or 1 (u); b < 0: the maxima at emax[side][a:]
	}
	var parts []part
	for j, cp := range cps {
		parts = parts[:0]
		t, side := 0, 0
		if cp.firstU {
			side = 1
		}
		for _, b := range cp.bnd {
			if t < e.dlo[b] {
				parts = append(parts, part{side, t, e.dlo[b]})
			}
			if e.dlo[b] < e.dhi[b] { // the boundary's maxima: a fall after x, a rise after u
				parts = append(parts, part{side, b * p.P, -1})
			}
			t, side = e.dhi[b], 1-side
		}
		if t < T {
			parts = append(parts, part{side, t, T})
		}
		out := pooled[j*p.P : j*p.P+C]
		for k, q := range parts {
			var x, y []float32 // the part's maxima: x's, or the first maxima of x's and y's
			switch {
			case q.b < 0:
				x = e.emax[q.side][q.a : q.a+C]
			case q.a == 0:
				x = e.pre[q.side][(q.b-1)*C : q.b*C]
			case q.b == T:
				x = e.suf[q.side][q.a*C : (q.a+1)*C]
			default:
				l := bits.Len(uint(q.b-q.a)) - 1
				x = e.sp[q.side][l][q.a*C : (q.a+1)*C]
				y = e.sp[q.side][l][(q.b-1<<l)*C : (q.b-1<<l+1)*C]
			}
			switch {
			case k == 0 && y == nil:
				copy(out, x)
			case k == 0:
				kern.FirstMax(out, x, y)
			case y == nil:
				kern.FirstMax(out, out, x)
			default:
				kern.FirstMax(e.rng, x, y)
				kern.FirstMax(out, out, e.rng)
			}
		}
	}
}

// sparseMaxT returns st, the sparse table of the T steps of C channels of
// a, time major: st[q][t*C+c] is the first maximum of channel c over
// [t, t+2^q), for 2^q <= min(T, most), reusing st's buffers.
func sparseMaxT(st [][]float32, a []float32, C, T, most int) [][]float32 {
	levels := bits.Len(uint(max(min(T, most), 1)))
	if len(st) == 0 {
		st = append(st, nil)
	}
	st[0] = a
	for q := 1; q < levels; q++ {
		if len(st) <= q {
			st = append(st, make([]float32, C*T))
		}
		h := (1 << (q - 1)) * C
		prev, cur := st[q-1], st[q][:(T-2<<(q-1)+1)*C]
		kern.FirstMax(cur, prev, prev[h:])
	}
	return st[:levels]
}

// prefixSuffixMaxT is prefixSuffixMax on time-major values of C
// channels: pre[t*C+c] is the first maximum of channel c over steps 0..t,
// suf[t*C+c] over steps t..T-1.
func prefixSuffixMaxT(pre, suf, x []float32, C int) {
	n := len(x)
	copy(pre[:C], x[:C])
	for i := C; i < n; i += C {
		kern.FirstMax(pre[i:i+C], pre[i-C:i], x[i:i+C])
	}
	copy(suf[n-C:n], x[n-C:])
	for i := n - 2*C; i >= 0; i -= C {
		kern.FirstMax(suf[i:i+C], x[i:i+C], suf[i+C:i+2*C])
	}
}

// edgeNode computes node i's stored windows of W < T steps for the B
// boundary copies of a batch as one sample: copy j's gathered input is
// the segment [j*Gp, j*Gp+G) of one row of B*Gp steps (Gp, G rounded up
// to the node's stride, padded), so the op runs once on a long row
// instead of B times on short ones, and copy j's W steps are its output's
// steps from j*Gp/stride (they read only their own segment; the steps
// between read two and are dropped). The op's Shape gives the row's
// output length.
func (n *Net) edgeNode(B, i int) {
	w := n.win
	e := w.edge
	nd, wn := &n.nodes[i], &w.nodes[i]
	f, W := wn.f, w.w[i+1]
	G := (W-1)*f.Stride + (f.Kernel-1)*f.Dilation + 1
	Gp := (G + f.Stride - 1) / f.Stride * f.Stride
	L := B * Gp
	c := n.winCall(i, 1, wn.attrs, Shape{})
	for len(e.row) < len(nd.inputs) {
		e.row = append(e.row, nil)
	}
	for j, u := range nd.inputs {
		C := nd.in[j].C
		if len(e.row[j]) < C*L {
			e.row[j] = make([]float32, C*L)
		}
		g := e.row[j][:C*L]
		n.gatherAt(g, Gp, L, u, B, w.slo[i+1], f.Stride, G, f.PadLeft, wn.pad)
		for b := 0; b < B && Gp > G; b++ { // the segments' tails, read by dropped steps only
			for ch := 0; ch < C; ch++ {
				clear(g[ch*L+b*Gp+G : ch*L+(b+1)*Gp])
			}
		}
		c.In[j], c.X[j] = Shape{C, L}, g
	}
	out, err := nd.op.Shape(wn.attrs, c.In)
	if err != nil || out.T < (B-1)*Gp/f.Stride+W {
		panic(fmt.Sprintf("graph: node %q on a row of %d boundary windows: %v, %v", nd.name, B, out, err)) // the row holds every window
	}
	c.Out = out
	if len(e.out) < out.Size() {
		e.out = make([]float32, out.Size())
	}
	c.Y = e.out[:out.Size()]
	ni := 0
	if nd.op.Indices != nil {
		ni = nd.op.Indices(wn.attrs, c.In, out)
	}
	if len(w.idx) < ni {
		w.idx = make([]int32, ni)
	}
	c.Idx = w.idx[:ni]
	nd.op.Forward(c)
	st := n.winVal(i+1, B)
	for b := 0; b < B; b++ {
		o := b * Gp / f.Stride
		for ch := 0; ch < out.C; ch++ {
			copyShort(st[(b*out.C+ch)*W:(b*out.C+ch+1)*W], c.Y[ch*out.T+o:ch*out.T+o+W])
		}
	}
}
