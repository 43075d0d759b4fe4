package graph

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/uaxai/uaxai/sdk/nn/ops"
)

// This file computes the class probability of perturbed copies of one
// input (occlusion's windows, LIME's masked spans) incrementally. A copy
// differs from the input x only on the input steps [lo, hi). The input is
// run once keeping every node's value (the base values); then, node by
// node, a copy's changed range propagates through the graph:
//
//   - a node whose op has a Local field (Field.Local: output step t reads
//     input steps t*Stride - PadLeft + k*Dilation, k < Kernel) changes at
//     most the output steps whose window reads a changed input step,
//
//     [ceil((a - (Kernel-1)*Dilation + PadLeft) / Stride), floor((b - 1 + PadLeft) / Stride) + 1)
//
//     clipped to the output, for the changed input steps [a, b) (the hull
//     over the node's inputs for add and concat); only those output steps
//     are recomputed, from the copy's values where its inputs changed and
//     the base values elsewhere, with the op's padding written out (zeros
//     for conv1d and avgpool1d, -inf for maxpool1d, the pad's value), and
//     the rest of the output is the base value;
//   - from the first node that is not Local (a global pool, flatten,
//     linear), or whose padding is not written out above, every later
//     node is computed in full for each copy (after a global pool those
//     values are C x 1).
//
// The copies are computed in batches of winBatch: a node recomputes the
// same number of steps, the widest changed range of the batch, for every
// copy, so that its kernel runs once on the batch. Each value is the op's
// own arithmetic at that step, so the probabilities equal full forward
// passes' up to float32 rounding (a kernel may sum a step's terms in
// another order on a shorter row).

// ChannelSpan is the half-open range [Lo, Hi) of time steps of channel Ch
// of the input, or of every channel when Ch is AllChannels.
type ChannelSpan struct{ Ch, Lo, Hi int }

// AllChannels as a ChannelSpan's channel covers every channel.
const AllChannels = -1

// Path says how WindowProbs or SpanProbs computed its copies.
type Path struct {
	// Copies is the number of perturbed copies computed, Incremental how
	// many of them by the incremental path (the others by batched forward
	// passes: when the changed ranges are so wide that recomputing them,
	// with the unperturbed pass, costs at least full passes).
	Copies, Incremental int
	// Full is the first node computed in full for every copy on the
	// incremental path ("" when none was).
	Full string
	// Done is the floating-point work done (the unperturbed pass
	// included), Dense that of a forward pass of every copy, as counted
	// by Net.Cost.
	Done, Dense float64
}

// Fraction is Done / Dense, the share of the full passes' work done (1
// when nothing was computed).
func (p Path) Fraction() float64 {
	if p.Dense == 0 {
		return 1
	}
	return p.Done / p.Dense
}

// Add returns the path of p's and q's copies together.
func (p Path) Add(q Path) Path {
	r := Path{Copies: p.Copies + q.Copies, Incremental: p.Incremental + q.Incremental, Full: p.Full, Done: p.Done + q.Done, Dense: p.Dense + q.Dense}
	if r.Full == "" {
		r.Full = q.Full
	}
	return r
}

func (p Path) String() string {
	if p.Copies == 0 {
		return "no perturbed copies"
	}
	s := "receptive-field recomputation"
	switch {
	case p.Incremental == 0:
		s = "batched forward passes"
	case p.Incremental < p.Copies:
		s = fmt.Sprintf("receptive-field recomputation for %d, batched forward passes for %d", p.Incremental, p.Copies-p.Incremental)
	}
	s += fmt.Sprintf(" of %d perturbed copies: %.1f%% of their forward passes' FLOPs", p.Copies, 100*p.Fraction())
	if p.Full != "" && p.Incremental > 0 {
		s += ", in full from node " + strconv.Quote(p.Full)
	}
	return s
}

// winBatch is the number of copies one pass of the graph computes.
const winBatch = 64

// winNode is what the incremental path knows of node i.
type winNode struct {
	f Field
	// local: the node recomputes a range of output steps, with attrs
	// (the node's, its padding set to zero) on inputs whose padding, pad,
	// is written out.
	local bool
	attrs Attrs
	pad   float32
	// step is the work of one output step of one copy (Net.Cost).
	step float64
}

// winWS is the incremental path's workspace.
type winWS struct {
	nodes []winNode
	dense float64     // the work of one forward pass
	base  [][]float32 // per value: the unperturbed input's (v = 0: x)
	in    []float32   // value 0 of a batch
	slots [][]float32 // the inference plan's slots, winBatch copies each
	gat   [][]float32 // per input position of a node: its gathered input
	idx   []int32
	probs []float32
	calls []Call
	// Per value: the stored width W (0: unchanged in every copy) and, per
	// copy, the stored window's start and the changed range [clo, chi)
	// (empty when clo >= chi) inside [slo, slo+W). A value with W = T is
	// stored whole.
	w             []int
	slo, clo, chi [][]int
	// pre and suf, per node whose op has MaxOverTime, are the prefix and
	// suffix maxima of its unperturbed input (maxpool.go).
	pre, suf [][]float32
	// side, while the boundary plan runs (edges.go), is each copy's
	// boundary direction, and ubase the all-baseline input's values
	// (per value of the trunk); nil otherwise.
	side  []int8
	ubase [][]float32
	edge  *edgeWS
}

// window returns the workspace of the incremental path, built on first
// use, without its value buffers (winBuffers).
func (n *Net) window() *winWS {
	if n.win != nil {
		return n.win
	}
	w := &winWS{nodes: make([]winNode, len(n.nodes))}
	nv := len(n.shapes)
	w.calls = make([]Call, len(n.nodes))
	for i := range n.nodes {
		nd := &n.nodes[i]
		wn := &w.nodes[i]
		wn.f = nd.op.Field(nd.attrs)
		wn.attrs, wn.pad, wn.local = unpadded(nd)
		wn.step = n.stepCost(i)
		if n.anc[i] {
			w.dense += wn.step * float64(nd.out.T)
		}
		c := &w.calls[i]
		c.X = make([][]float32, len(nd.inputs))
		c.In = make([]Shape, len(nd.inputs))
		c.P = make([][]float32, len(nd.params))
	}
	w.probs = make([]float32, winBatch*n.Classes())
	w.w = make([]int, nv)
	w.pre, w.suf = make([][]float32, len(n.nodes)), make([][]float32, len(n.nodes))
	for range nv {
		w.slo = append(w.slo, make([]int, winBatch))
		w.clo = append(w.clo, make([]int, winBatch))
		w.chi = append(w.chi, make([]int, winBatch))
	}
	n.win = w
	return w
}

// winBuffers returns the workspace with its value buffers, made on first
// use: the base values, and winBatch copies of the input, of the
// inference plan's slots and of each input position's gathered input (a
// network whose trunk cache hits runs its head without them).
func (n *Net) winBuffers() *winWS {
	w := n.window()
	if w.base != nil {
		return w
	}
	nv := len(n.shapes)
	w.base = make([][]float32, nv)
	for v := 1; v < nv; v++ {
		w.base[v] = make([]float32, n.shapes[v].Size())
	}
	w.in = make([]float32, winBatch*n.shapes[0].Size())
	for _, s := range n.fwdSize {
		w.slots = append(w.slots, make([]float32, winBatch*s))
	}
	gat, idx := n.gatherSizes()
	for _, g := range gat {
		w.gat = append(w.gat, make([]float32, winBatch*g))
	}
	w.idx = make([]int32, winBatch*idx)
	return w
}

// gatherSizes are, per input position of a node, the most values one
// copy's gathered input holds (the whole input with its padding), and the
// most index scratch a node's call needs for one copy.
func (n *Net) gatherSizes() (gat []int, idx int) {
	w := n.window()
	for i := range n.nodes {
		nd := &n.nodes[i]
		f := w.nodes[i].f
		for j, s := range nd.in {
			if j == len(gat) {
				gat = append(gat, 0)
			}
			gat[j] = max(gat[j], s.C*(s.T+f.PadLeft+f.PadRight))
		}
		idx = max(idx, nd.idx)
	}
	return gat, idx
}

// unpadded returns node nd's attributes with its padding set to zero and
// the value its padding holds, and whether the incremental path
// recomputes ranges of it: a Local field, and padding written out as the
// op pads (conv1d, pad, maxpool1d, avgpool1d) or none.
func unpadded(nd *node) (Attrs, float32, bool) {
	f := nd.op.Field(nd.attrs)
	if !f.Local {
		return nil, 0, false
	}
	if f.PadLeft == 0 && f.PadRight == 0 {
		return nd.attrs, 0, true
	}
	a := Attrs{}
	for k, v := range nd.attrs {
		a[k] = v
	}
	switch nd.op.Kind {
	case "conv1d":
		a["padding"] = []int64{0, 0}
		return a, 0, true
	case "pad":
		a["left"], a["right"] = int64(0), int64(0)
		return a, float32(nd.attrs.Float("value")), true
	case "maxpool1d":
		a["padding"] = int64(0)
		return a, float32(math.Inf(-1)), true
	case "avgpool1d":
		a["padding"] = int64(0) // counted zeros: count_include_pad
		return a, 0, true
	}
	return nil, 0, false
}

// stepCost is the floating-point work of one output step of node i for
// one input: its op's Cost over its output's steps, or by default the
// input's size for an op that is not Local (a global pool, flatten), the
// output channels times the number of inputs otherwise.
func (n *Net) stepCost(i int) float64 {
	nd := &n.nodes[i]
	out := nd.out
	if nd.op.Cost != nil {
		return nd.op.Cost(nd.attrs, nd.in, out) / float64(out.T)
	}
	if f := nd.op.Field(nd.attrs); !f.Local {
		return float64(nd.in[0].Size()) / float64(out.T)
	}
	return float64(out.C * len(nd.in))
}

// Cost is the floating-point work of one forward pass of one input, as
// Path counts it (see stepCost): the sum over the nodes the output
// depends on of their work a step times their output's steps.
func (n *Net) Cost() float64 { return n.window().dense }

// WindowProbs writes dst[j] = p_class(x with steps starts[j] ..
// starts[j]+width-1 of every channel replaced), for the one input x (C x
// T): by the constant baseline when z is nil, else by z's values there (z
// a signal of x's layout). The copies are computed incrementally (see the
// file's comment) unless that costs at least their forward passes; the
// returned Path says how. Errors: x or z of the wrong length or not
// finite, a non-finite baseline, width outside 1..T, a window outside the
// input (0 <= start <= T - width), class outside 0..K-1, a non-finite
// probability.
func (n *Net) WindowProbs(dst, x, z []float32, starts []int, width int, baseline float32, class int) (Path, error) {
	if len(dst) < len(starts) {
		panic(fmt.Sprintf("graph: WindowProbs: dst has length %d for %d windows", len(dst), len(starts)))
	}
	if err := n.checkCopies(x, z, baseline, class); err != nil {
		return Path{}, err
	}
	in := n.shapes[0]
	if width < 1 || width > in.T {
		return Path{}, fmt.Errorf("graph %q: window width %d; need 1 <= width <= %d (the input's steps)", n.spec.Name, width, in.T)
	}
	for j, s := range starts {
		if s < 0 || s > in.T-width {
			return Path{}, fmt.Errorf("graph %q: window %d starts at %d; need 0 <= start <= %d (a window of %d steps inside the input's %d)", n.spec.Name, j, s, in.T-width, width, in.T)
		}
	}
	if p := n.trunk(); p != nil && width >= p.reach()-1 {
		if path, ok, err := n.edgeProbs(dst, x, z, baseline, class, n.windowCuts(starts, width)); ok {
			return path, err
		}
	}
	rng := func(j int) (int, int) { return starts[j], starts[j] + width }
	fill := func(j int, row []float32, slo, W int) {
		lo, hi := max(starts[j], slo), min(starts[j]+width, slo+W)
		for c := 0; c < in.C; c++ {
			r := row[c*W+lo-slo : c*W+hi-slo]
			if z != nil {
				copy(r, z[c*in.T+lo:c*in.T+hi])
				continue
			}
			for t := range r {
				r[t] = baseline
			}
		}
	}
	return n.copies(dst[:len(starts)], x, class, rng, fill)
}

// SpanProbs writes dst[j] = p_class(x with the steps of every span of
// spans[j] set to baseline, each span in its channel or in every channel),
// for the one input x (C x T), incrementally with a copy's changed range
// the hull of its spans, or by forward passes when that costs at least as
// much (see WindowProbs). Spans may overlap and come in any order.
// Errors: as WindowProbs's, and a span outside the input (Ch outside
// AllChannels, 0..C-1 or not 0 <= Lo <= Hi <= T).
func (n *Net) SpanProbs(dst, x []float32, spans [][]ChannelSpan, baseline float32, class int) (Path, error) {
	if len(dst) < len(spans) {
		panic(fmt.Sprintf("graph: SpanProbs: dst has length %d for %d perturbations", len(dst), len(spans)))
	}
	if err := n.checkCopies(x, nil, baseline, class); err != nil {
		return Path{}, err
	}
	in := n.shapes[0]
	for j, sp := range spans {
		for _, s := range sp {
			if s.Ch != AllChannels && (s.Ch < 0 || s.Ch >= in.C) || s.Lo < 0 || s.Lo > s.Hi || s.Hi > in.T {
				return Path{}, fmt.Errorf("graph %q: perturbation %d: span %+v; need channel %d (every channel) or 0..%d and 0 <= Lo <= Hi <= %d", n.spec.Name, j, s, AllChannels, in.C-1, in.T)
			}
		}
	}
	if cps, ok := n.spanCuts(spans); ok {
		if path, ok, err := n.edgeProbs(dst, x, nil, baseline, class, cps); ok {
			return path, err
		}
	}
	rng := func(j int) (int, int) {
		lo, hi := in.T, 0
		for _, s := range spans[j] {
			if s.Lo < s.Hi {
				lo, hi = min(lo, s.Lo), max(hi, s.Hi)
			}
		}
		return lo, hi
	}
	fill := func(j int, row []float32, slo, W int) {
		for _, s := range spans[j] {
			lo, hi := max(s.Lo, slo), min(s.Hi, slo+W)
			c0, c1 := s.Ch, s.Ch+1
			if s.Ch == AllChannels {
				c0, c1 = 0, in.C
			}
			for c := c0; c < c1 && lo < hi; c++ {
				r := row[c*W+lo-slo : c*W+hi-slo]
				for t := range r {
					r[t] = baseline
				}
			}
		}
	}
	return n.copies(dst[:len(spans)], x, class, rng, fill)
}

// checkCopies checks the arguments WindowProbs and SpanProbs share.
func (n *Net) checkCopies(x, z []float32, baseline float32, class int) error {
	in := n.shapes[0]
	if len(x) != in.Size() {
		return fmt.Errorf("graph %q: input of %d values; need one input of %d channels x %d steps = %d", n.spec.Name, len(x), in.C, in.T, in.Size())
	}
	if z != nil && len(z) != in.Size() {
		return fmt.Errorf("graph %q: baseline signal of %d values; need one of the input's %d", n.spec.Name, len(z), in.Size())
	}
	for _, s := range []struct {
		what string
		v    []float32
	}{{"input", x}, {"baseline signal", z}} {
		for i, v := range s.v {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("graph %q: %s value %d (channel %d, step %d) is %v; need finite values", n.spec.Name, s.what, i, i/in.T, i%in.T, v)
			}
		}
	}
	if math.IsNaN(float64(baseline)) || math.IsInf(float64(baseline), 0) {
		return fmt.Errorf("graph %q: baseline %v; need a finite number", n.spec.Name, baseline)
	}
	if k := n.Classes(); class < 0 || class >= k {
		return fmt.Errorf("graph %q: class %d; need 0 <= class < %d", n.spec.Name, class, k)
	}
	return nil
}

// copies writes dst[j] = p_class of copy j of x, which differs from x on
// the input steps rng(j) = [lo, hi) (empty when lo >= hi) at most: fill
// writes its values there into row (C rows of W steps from step slo,
// holding x), for the steps of [lo, hi) inside [slo, slo+W).
//
// A network whose head runs in columns computes the copies' pooled
// vectors and runs the head on them by headProbs, as the boundary plan
// does (edgeProbs), so that a copy gets the same bits whichever of the
// two the call takes: the choice depends on the other copies of the call.
func (n *Net) copies(dst, x []float32, class int, rng func(j int) (int, int), fill func(j int, row []float32, slo, W int)) (Path, error) {
	if p := n.trunk(); p != nil && p.columns {
		N := len(dst)
		pooled := make([]float32, (N+1)*p.P)
		path, err := n.copiesThrough(N, x, rng, fill, p.g, func(j0, B int) error {
			n.keepPooled(pooled[j0*p.P:(j0+B)*p.P], B)
			return nil
		})
		if err != nil {
			return Path{}, err
		}
		if path.Incremental == 0 {
			n.winBase(x) // x's own pooled vector (forward passes did not keep it)
		}
		copy(pooled[N*p.P:], n.win.base[p.g+1])
		if err := n.headProbs(dst, pooled, pooled[N*p.P:], class); err != nil {
			return Path{}, err
		}
		return path, nil
	}
	return n.copiesThrough(len(dst), x, rng, fill, n.output, func(j0, B int) error {
		if err := n.winProbs(dst[j0:j0+B], class); err != nil {
			return fmt.Errorf("perturbed copy %d..%d: %w", j0, j0+B-1, err)
		}
		return nil
	})
}

// copiesThrough computes the N copies of copies, winBatch at a time,
// through the nodes up to last, and calls sink(j0, B) after each batch of
// copies j0..j0+B-1 (their values then in the stored windows).
func (n *Net) copiesThrough(N int, x []float32, rng func(j int) (int, int), fill func(j int, row []float32, slo, W int), last int, sink func(j0, B int) error) (Path, error) {
	w := n.winBuffers()
	p := Path{Copies: N, Dense: float64(N) * w.dense}
	if N == 0 {
		return p, nil
	}
	// The incremental path's work, from the ranges alone.
	done := w.dense
	for j0 := 0; j0 < N; j0 += winBatch {
		d, _ := n.winRanges(min(winBatch, N-j0), j0, rng, false)
		done += d
	}
	plain := done >= p.Dense
	if plain {
		p.Done = p.Dense
	} else {
		p.Done, p.Incremental = done, N
		n.winBase(x)
	}
	for j0 := 0; j0 < N; j0 += winBatch {
		B := min(winBatch, N-j0)
		_, full := n.winRanges(B, j0, rng, plain)
		if p.Full == "" && full >= 0 && !plain {
			p.Full = n.nodes[full].name
		}
		n.winInput(B, j0, x, fill)
		for i := 0; i <= last; i++ {
			if n.anc[i] {
				n.winNode(B, i)
			}
		}
		if err := sink(j0, B); err != nil {
			return Path{}, err
		}
	}
	return p, nil
}

// winRanges sets the changed ranges and stored windows of every value for
// the copies j0..j0+B-1 (all of every value when plain) and returns the
// work of recomputing them, and the first node stored whole for a copy
// that changed it (-1: none).
func (n *Net) winRanges(B, j0 int, rng func(j int) (int, int), plain bool) (float64, int) {
	w := n.win
	T0 := n.shapes[0].T
	W := 0
	for j := 0; j < B; j++ {
		lo, hi := rng(j0 + j)
		lo, hi = max(lo, 0), min(hi, T0)
		if plain {
			lo, hi = 0, T0
		}
		w.clo[0][j], w.chi[0][j] = lo, hi
		W = max(W, hi-lo)
	}
	n.place(0, B, W)
	var work float64
	first := -1
	for i := 0; i <= n.output; i++ {
		if !n.anc[i] {
			continue
		}
		nd, wn := &n.nodes[i], &w.nodes[i]
		v, To := i+1, nd.out.T
		clo, chi := w.clo[v], w.chi[v]
		W := 0
		for j := 0; j < B; j++ {
			lo, hi := n.reach(i, w.clo, w.chi, j, plain)
			clo[j], chi[j] = lo, hi
			W = max(W, hi-lo)
		}
		if W > 0 && (plain || !wn.local) {
			W = To
		}
		n.place(v, B, W)
		if u := nd.inputs[0]; W > 0 && n.maxShortcut(i) {
			work += float64(B * nd.in[0].C * (w.w[u] + 2)) // maxWindows
		} else {
			work += float64(B*w.w[v]) * wn.step
		}
		if w.w[v] == To && W > 0 && first < 0 {
			first = i
		}
	}
	return work, first
}

// reach is the range [lo, hi) of node i's output steps that copy j
// changes, from the changed ranges clo, chi of its inputs (per value, per
// copy; empty when lo >= hi): the steps whose window reads a changed step
// of the inputs' hull (the file's comment), clipped to the output; every
// step when the node is not Local or whole is set; none when no input
// changed.
func (n *Net) reach(i int, clo, chi [][]int, j int, whole bool) (lo, hi int) {
	a, b := math.MaxInt, -1 // the hull of the inputs' changed steps
	for _, u := range n.nodes[i].inputs {
		if clo[u][j] < chi[u][j] {
			a, b = min(a, clo[u][j]), max(b, chi[u][j])
		}
	}
	To, wn := n.nodes[i].out.T, &n.win.nodes[i]
	switch {
	case b < 0:
		return 0, 0
	case whole || !wn.local:
		return 0, To
	}
	f := wn.f
	lo = max(ceilDiv(a-(f.Kernel-1)*f.Dilation+f.PadLeft, f.Stride), 0)
	hi = min(floorDiv(b-1+f.PadLeft, f.Stride)+1, To)
	return lo, max(hi, lo)
}

// place sets value v's stored width W for B copies and each copy's
// window start: its changed range's start, moved left to fit.
func (n *Net) place(v, B, W int) {
	w := n.win
	T := n.shapes[v].T
	w.w[v] = W
	for j := 0; j < B; j++ {
		w.slo[v][j] = 0
		if w.clo[v][j] < w.chi[v][j] {
			w.slo[v][j] = min(w.clo[v][j], T-W)
		}
	}
}

// ceilDiv and floorDiv are a/b rounded up and down, for b > 0.
func ceilDiv(a, b int) int { return -floorDiv(-a, b) }

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// winVal is the stored values of value v: B copies of C x W.
func (n *Net) winVal(v, B int) []float32 {
	w := n.win
	sz := B * n.shapes[v].C * w.w[v]
	if v == 0 {
		return w.in[:sz]
	}
	return w.slots[n.fwdSlot[v]][:sz]
}

// winBase runs x forward keeping every value in the base values.
func (n *Net) winBase(x []float32) {
	w := n.winBuffers()
	w.base[0] = x
	for i := 0; i <= n.output; i++ {
		if !n.anc[i] {
			continue
		}
		nd := &n.nodes[i]
		c := n.winCall(i, 1, nd.attrs, nd.out)
		for j, u := range nd.inputs {
			c.X[j], c.In[j] = w.base[u], nd.in[j]
		}
		c.Y = w.base[i+1]
		c.Idx = w.idx[:nd.idx]
		nd.op.Forward(c)
		if nd.op.MaxOverTime {
			n.maxBase(i)
		}
	}
}

// winCall prepares node i's Call of the incremental path.
func (n *Net) winCall(i, B int, a Attrs, out Shape) *Call {
	nd := &n.nodes[i]
	c := &n.win.calls[i]
	c.A, c.Out, c.B = a, out, B
	for j, p := range nd.params {
		c.P[j] = n.Theta[n.params[p].Offset : n.params[p].Offset+n.params[p].Len]
	}
	return c
}

// winInput writes value 0's stored windows of copies j0..j0+B-1: x, and
// the copy's values written by fill.
func (n *Net) winInput(B, j0 int, x []float32, fill func(j int, row []float32, slo, W int)) {
	w := n.win
	in := n.shapes[0]
	W := w.w[0]
	if W == 0 {
		return
	}
	buf := n.winVal(0, B)
	for j := 0; j < B; j++ {
		row := buf[j*in.C*W : (j+1)*in.C*W]
		s := w.slo[0][j]
		for c := 0; c < in.C; c++ {
			copy(row[c*W:(c+1)*W], x[c*in.T+s:c*in.T+s+W])
		}
		if w.clo[0][j] < w.chi[0][j] {
			fill(j0+j, row, s, W)
		}
	}
}

// winNode computes node i's stored windows for B copies: nothing when no
// copy changed it, the whole value for every copy when it is stored
// whole, else the W output steps from each copy's window start, from
// inputs gathered over the steps they read, padding written out.
func (n *Net) winNode(B, i int) {
	w := n.win
	nd, wn := &n.nodes[i], &w.nodes[i]
	W := w.w[i+1]
	if W == 0 {
		return
	}
	if W == nd.out.T && n.maxShortcut(i) {
		n.maxWindows(B, i)
		return
	}
	if W == nd.out.T {
		c := n.winCall(i, B, nd.attrs, nd.out)
		for j, u := range nd.inputs {
			c.In[j] = nd.in[j]
			if w.w[u] == nd.in[j].T {
				c.X[j] = n.winVal(u, B)
				continue
			}
			g := w.gat[j][:B*nd.in[j].Size()]
			n.gather(g, u, B, w.slo[i+1], 0, nd.in[j].T, 0, 0)
			c.X[j] = g
		}
		c.Y = n.winVal(i+1, B)
		c.Idx = w.idx[:B*nd.idx]
		nd.op.Forward(c)
		return
	}
	f := wn.f
	G := (W-1)*f.Stride + (f.Kernel-1)*f.Dilation + 1
	out := Shape{nd.out.C, W}
	c := n.winCall(i, B, wn.attrs, out)
	identity := f.Kernel == 1 && f.Stride == 1 && f.PadLeft == 0
	for j, u := range nd.inputs {
		c.In[j] = Shape{nd.in[j].C, G}
		if identity && w.w[u] == W && slices.Equal(w.slo[u][:B], w.slo[i+1][:B]) {
			c.X[j] = n.winVal(u, B) // the stored windows are the steps read
			continue
		}
		g := w.gat[j][:B*nd.in[j].C*G]
		n.gather(g, u, B, w.slo[i+1], f.Stride, G, f.PadLeft, wn.pad)
		c.X[j] = g
	}
	c.Y = n.winVal(i+1, B)
	ni := 0
	if nd.op.Indices != nil {
		ni = nd.op.Indices(wn.attrs, c.In, out)
	}
	if len(w.idx) < B*ni {
		w.idx = make([]int32, B*ni) // not for the table's ops: a window needs at most the whole's
	}
	c.Idx = w.idx[:B*ni]
	nd.op.Forward(c)
}

// gather writes to g, for each of B copies, value u's steps [t0, t0+G) of
// each channel, t0 = ostart[j]*stride - padLeft (stride 0: t0 = 0): the
// copy's stored values inside its window, the base values elsewhere in
// the value, pad outside it.
func (n *Net) gather(g []float32, u, B int, ostart []int, stride, G, padLeft int, pad float32) {
	C := n.shapes[u].C
	n.gatherAt(g, C*G, G, u, B, ostart, stride, G, padLeft, pad)
}

// gatherAt is gather writing copy j's channel c to g[j*js+c*cs:][:G].
func (n *Net) gatherAt(g []float32, js, cs, u, B int, ostart []int, stride, G, padLeft int, pad float32) {
	w := n.win
	s := n.shapes[u]
	W, base := w.w[u], w.base[u]
	var stored []float32
	if W > 0 {
		stored = n.winVal(u, B)
	}
	for j := 0; j < B; j++ {
		t0 := ostart[j]*stride - padLeft
		a, b := max(t0, 0), min(t0+G, s.T) // inside the value
		ws, we := w.slo[u][j], w.slo[u][j]+W
		ws, we = min(max(ws, a), b), max(min(we, b), a) // the stored part, clipped
		left, right := base, base
		if w.side != nil { // a boundary copy (edges.go): the baseline's values on one side
			switch w.side[j] {
			case fall:
				right = w.ubase[u]
			case rise:
				left = w.ubase[u]
			}
		}
		for c := 0; c < s.C; c++ {
			dst := g[j*js+c*cs : j*js+c*cs+G]
			for t := range dst[:a-t0] {
				dst[t] = pad
			}
			for t := b - t0; t < G; t++ {
				dst[t] = pad
			}
			copyShort(dst[a-t0:ws-t0], left[c*s.T+a:c*s.T+ws])
			copyShort(dst[we-t0:b-t0], right[c*s.T+we:c*s.T+b])
			if ws < we {
				srow := stored[(j*s.C+c)*W : (j*s.C+c+1)*W]
				off := w.slo[u][j]
				copyShort(dst[ws-t0:we-t0], srow[ws-off:we-off])
			}
		}
	}
}

// copyShort is copy(dst, src), len(dst) == len(src), for the few steps a
// window's pieces hold: a loop there costs less than memmove's call.
func copyShort(dst, src []float32) {
	if len(dst) > 32 {
		copy(dst, src)
		return
	}
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = v
	}
}

// winProbs writes each copy's probability of class from the output
// node's values (or the base output's, when no copy changed it).
func (n *Net) winProbs(dst []float32, class int) error {
	w := n.win
	B, K, v := len(dst), n.Classes(), n.output+1
	y := w.base[v]
	if w.w[v] > 0 {
		y = n.winVal(v, B)
	} else {
		y = y[:K]
	}
	probs := w.probs[:len(y)]
	if n.nodes[n.output].op.Kind == "softmax" {
		copy(probs, y)
	} else {
		ops.Softmax(probs, y, K, 1)
	}
	for j := range dst {
		p := probs[class]
		if len(probs) > K {
			p = probs[j*K+class]
		}
		if math.IsNaN(float64(p)) || math.IsInf(float64(p), 0) {
			return fmt.Errorf("graph %q: copy %d: probability %v (the parameters hold non-finite values)", n.spec.Name, j, p)
		}
		dst[j] = p
	}
	return nil
}
