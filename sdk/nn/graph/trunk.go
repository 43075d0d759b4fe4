package graph

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// This file is the trunk plan: a network whose output reads its input
// only through one node whose op has MaxOverTime (the global max pool,
// g), after a stack of Local nodes the incremental path recomputes by
// ranges (the trunk), splits into the trunk, which gives one pooled
// vector of P = g's channels per input, and the head, the nodes after g
// the output depends on, which read only g's value and each other's. The
// perturbed copies' pooled vectors are computed once (by the incremental
// path stopped at g, or by the boundary plan, edges.go) and the head runs
// on them in batches. Networks with the same trunk (the same ops,
// attributes, wiring and parameter bits up to g: the draws of MC dropout,
// which differ after the pool) give the same pooled vectors, so a
// TrunkCache shared between them computes the trunk of an input once.

// trunkPlan is the split of a network into trunk and head.
type trunkPlan struct {
	g     int   // the MaxOverTime node
	in    int   // the value g reads
	trunk []int // the nodes g depends on, in order, g not included
	// withPool is trunk and g.
	withPool []int
	head     []int // the nodes after g the output depends on, in order
	P        int   // g's channels: a pooled vector's length
	// columns: every head op has Columns, so the head runs on pooled
	// vectors laid out as columns (headColumns), in cols (per value,
	// C x headBatch) with calls (per node).
	columns bool
	cols    [][]float32
	calls   []Call
	sm      softmaxScratch
	// uniq, of and probs are headProbs's scratch, pooled and dst
	// WindowProbsCached's.
	pooled, dst []float32
	probs       []float32
	uniq, of    []int
	// digest is TrunkDigest's last result, for the trunk parameters
	// dparams; tparams is scratch.
	digest           [sha256.Size]byte
	digested         bool
	dparams, tparams []float32
	// span is value in's receptive field in input samples: step t reads
	// samples [t*span.Stride + span.Lo, t*span.Stride + span.Hi].
	span Span
}

// reach is the number of input samples a step of value in reads, the
// hull of its receptive field: two boundaries of a perturbation at least
// reach-1 samples apart are never read by one step.
func (p *trunkPlan) reach() int { return p.span.Hi - p.span.Lo + 1 }

// trunk returns the network's trunk plan, or nil when it has none.
func (n *Net) trunk() *trunkPlan {
	if n.trunkOnce {
		return n.tplan
	}
	n.trunkOnce = true
	w := n.window()
	for g := 0; g <= n.output; g++ {
		if n.anc[g] && n.nodes[g].op.MaxOverTime {
			n.tplan = n.splitAt(w, g)
			break // the first such node: a later one reads it or another path
		}
	}
	return n.tplan
}

// splitAt returns the split of the network at node g (MaxOverTime), or
// nil when the output reads the input other than through g, or a node g
// depends on is not recomputed by ranges, or its field is not one span.
func (n *Net) splitAt(w *winWS, g int) *trunkPlan {
	p := &trunkPlan{g: g, in: n.nodes[g].inputs[0], P: n.nodes[g].out.C}
	mark := make([]bool, len(n.nodes))
	mark[g] = true
	for i := g; i >= 0; i-- {
		if !mark[i] {
			continue
		}
		for _, v := range n.nodes[i].inputs {
			if v > 0 {
				mark[v-1] = true
			}
		}
		if i != g {
			p.trunk = append(p.trunk, i)
		}
	}
	slices.Reverse(p.trunk)
	p.withPool = append(slices.Clone(p.trunk), g)
	inHead := make([]bool, len(n.shapes)) // values the head may read
	inHead[g+1] = true
	for i := 0; i <= n.output; i++ {
		switch {
		case !n.anc[i] || mark[i]:
			continue
		case i < g:
			return nil // the output reads the trunk other than through g
		}
		for _, v := range n.nodes[i].inputs {
			if !inHead[v] {
				return nil
			}
		}
		inHead[i+1] = true
		p.head = append(p.head, i)
	}
	spans := make([]Span, len(n.shapes))
	spans[0] = Span{Stride: 1}
	for _, i := range p.trunk {
		nd := &n.nodes[i]
		if !w.nodes[i].local {
			return nil
		}
		f := w.nodes[i].f
		for j, v := range nd.inputs {
			if !spans[v].fits(f) {
				return nil
			}
			s := spans[v].after(f)
			switch {
			case j == 0:
				spans[i+1] = s
			case s.Stride != spans[i+1].Stride:
				return nil
			default:
				spans[i+1].Lo, spans[i+1].Hi = min(spans[i+1].Lo, s.Lo), max(spans[i+1].Hi, s.Hi)
			}
		}
	}
	p.span = spans[p.in]
	p.columns = true
	for _, i := range p.head {
		p.columns = p.columns && n.nodes[i].op.Columns != nil
	}
	if p.columns {
		p.cols = make([][]float32, len(n.shapes))
		p.calls = make([]Call, len(n.nodes))
		p.cols[g+1] = make([]float32, p.P*headBatch)
		for _, i := range p.head {
			nd := &n.nodes[i]
			p.cols[i+1] = make([]float32, nd.out.C*headBatch)
			p.calls[i] = Call{A: nd.attrs, B: 1, In: make([]Shape, len(nd.inputs)), X: make([][]float32, len(nd.inputs)), P: make([][]float32, len(nd.params))}
		}
	}
	return p
}

// headBatch is the number of pooled vectors one pass of the head in
// columns computes.
const headBatch = 256

// PooledLen is the length of the pooled vector of the trunk plan (the
// channels of the global max pool that the output reads the input
// through), or 0 when the network has no trunk plan (then
// WindowProbsCached is an error).
func (n *Net) PooledLen() int {
	if p := n.trunk(); p != nil {
		return p.P
	}
	return 0
}

// TrunkDigest is the SHA-256 of the trunk (see the file's comment): the
// input's shape and, for each node up to the global max pool, its op, its
// attributes, which earlier node or the input each of its inputs is, and
// the bits of its parameters (Theta as it is now); names are left out.
// Two networks with the same digest compute the same pooled vectors.
func (n *Net) TrunkDigest() ([sha256.Size]byte, error) {
	p := n.trunk()
	if p == nil {
		return [sha256.Size]byte{}, n.noTrunk()
	}
	// The digest of the last call serves while the trunk's parameters
	// keep their bits (the rest of it depends on the spec alone).
	cur := p.tparams[:0]
	for _, i := range p.withPool {
		for _, q := range n.nodes[i].params {
			cur = append(cur, n.Theta[n.params[q].Offset:n.params[q].Offset+n.params[q].Len]...)
		}
	}
	p.tparams = cur
	if p.digested && sameBits(cur, p.dparams) {
		return p.digest, nil
	}
	h := sha256.New()
	var b [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	str := func(s string) {
		put(uint64(len(s)))
		h.Write([]byte(s))
	}
	str("uaxai graph trunk 1")
	put(uint64(n.shapes[0].C))
	put(uint64(n.shapes[0].T))
	pos := map[int]int{0: 0} // value -> its place among the trunk's values
	for k, i := range p.withPool {
		nd := &n.nodes[i]
		pos[i+1] = k + 1
		str(nd.op.Kind)
		keys := make([]string, 0, len(nd.attrs))
		for a := range nd.attrs {
			keys = append(keys, a)
		}
		slices.Sort(keys)
		for _, a := range keys {
			str(a)
			str(fmt.Sprintf("%T %v", nd.attrs[a], nd.attrs[a]))
		}
		put(uint64(len(nd.inputs)))
		for _, v := range nd.inputs {
			put(uint64(pos[v]))
		}
		put(uint64(len(nd.params)))
		for _, q := range nd.params {
			pr := n.params[q]
			put(uint64(pr.Len))
			for _, v := range n.Theta[pr.Offset : pr.Offset+pr.Len] {
				binary.LittleEndian.PutUint32(b[:4], math.Float32bits(v))
				h.Write(b[:4])
			}
		}
	}
	var d [sha256.Size]byte
	copy(d[:], h.Sum(nil))
	p.digest, p.digested, p.dparams = d, true, append(p.dparams[:0], cur...)
	return d, nil
}

func (n *Net) noTrunk() error {
	return fmt.Errorf("graph %q has no trunk plan; accepted: a network whose output reads its input only through a globalmaxpool node after convolutions, pads, pools, batchnorms, pointwise ops, add and concat of one stride", n.spec.Name)
}

// checkWindows checks WindowProbs's arguments.
func (n *Net) checkWindows(x, z []float32, starts []int, width int, baseline float32, class int) error {
	if err := n.checkCopies(x, z, baseline, class); err != nil {
		return err
	}
	in := n.shapes[0]
	if width < 1 || width > in.T {
		return fmt.Errorf("graph %q: window width %d; need 1 <= width <= %d (the input's steps)", n.spec.Name, width, in.T)
	}
	for j, s := range starts {
		if s < 0 || s > in.T-width {
			return fmt.Errorf("graph %q: window %d starts at %d; need 0 <= start <= %d (a window of %d steps inside the input's %d)", n.spec.Name, j, s, in.T-width, width, in.T)
		}
	}
	return nil
}

// WindowProbsCached is WindowProbs for a network with a trunk plan
// (PooledLen() > 0) that also returns p_class(x), the unperturbed input's
// probability, with the bits of ForwardUnfolded. The pooled vectors of the
// windows and of x are taken from c when a network with the same trunk
// (TrunkDigest) stored them for the same x, z, starts, width and baseline,
// and computed and stored in c otherwise (c nil: computed); the head runs
// on them either way, so the result is the same bytes whether c hits or
// not.
func (n *Net) WindowProbsCached(dst, x, z []float32, starts []int, width int, baseline float32, class int, c *TrunkCache) (float32, Path, error) {
	if len(dst) < len(starts) {
		panic(fmt.Sprintf("graph: WindowProbsCached: dst has length %d for %d windows", len(dst), len(starts)))
	}
	if err := n.checkWindows(x, z, starts, width, baseline, class); err != nil {
		return 0, Path{}, err
	}
	p := n.trunk()
	if p == nil {
		return 0, Path{}, n.noTrunk()
	}
	N := len(starts)
	p.pooled = slices.Grow(p.pooled[:0], (N+1)*p.P)[:(N+1)*p.P]
	pooled := p.pooled
	var key trunkKey
	hit := false
	if c != nil {
		d, _ := n.TrunkDigest()
		key = trunkKey{digest: d, x: x, z: z, starts: starts, width: width, baseline: math.Float32bits(baseline)}
		if z != nil {
			key.baseline = 0
		}
		hit = c.get(pooled, key)
	}
	path := Path{Copies: N, Incremental: N, Dense: float64(N) * n.window().dense}
	if hit {
		path.Done = float64(N+1) * n.headCost()
	} else {
		var err error
		if path, err = n.windowPooled(pooled, x, z, starts, width, baseline); err != nil {
			return 0, Path{}, err
		}
		if c != nil {
			c.put(pooled, key)
		}
	}
	p.dst = slices.Grow(p.dst[:0], N+1)[:N+1]
	probs := p.dst
	if err := n.headProbs(probs, pooled, pooled[N*p.P:], class); err != nil {
		return 0, Path{}, err
	}
	copy(dst, probs[:N])
	return probs[N], path, nil
}

// headCost is the work of the head on one pooled vector.
func (n *Net) headCost() float64 {
	var c float64
	for _, i := range n.tplan.head {
		c += n.win.nodes[i].step * float64(n.nodes[i].out.T)
	}
	return c
}

// windowPooled writes the pooled vectors of the copies of x occluded by
// the windows (WindowProbs's), then x's own, (len(starts)+1)*P values:
// by the boundary plan when the windows are at least reach-1 steps wide,
// else by the incremental path stopped at the pool.
func (n *Net) windowPooled(pooled, x, z []float32, starts []int, width int, baseline float32) (Path, error) {
	p := n.trunk()
	N := len(starts)
	if cps := n.windowCuts(starts, width); width >= p.reach()-1 && n.edgeOK(cps) {
		return n.edgePooled(pooled, x, n.baselineInput(z, baseline), cps), nil
	}
	in := n.shapes[0]
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
	return path, nil
}

// keepPooled copies the pool's values of the B copies just computed to
// dst (B*P): the stored ones, or the unperturbed input's when no copy
// changed them.
func (n *Net) keepPooled(dst []float32, B int) {
	p, w := n.tplan, n.win
	if w.w[p.g+1] > 0 {
		copy(dst, n.winVal(p.g+1, B))
		return
	}
	for j := 0; j < B; j++ {
		copy(dst[j*p.P:(j+1)*p.P], w.base[p.g+1])
	}
}

// headProbs writes dst[j] = p_class of the head on the pooled vector
// pooled[j*P:(j+1)*P], for j < len(dst): in columns when every head op
// has Columns, else winBatch vectors a pass of the incremental path's
// nodes. In columns, a vector equal to ref (the unperturbed input's, or
// nil) gets ForwardUnfolded's bits (Columns and Softmax's arithmetic on
// ref alone), so that a copy whose pooled vector is the input's (a window
// that moves no channel's maximum) has exactly the input's probability;
// the others are computed with FastColumns where an op has it and the
// float32 exponential's softmax (softmaxColumns), equal up to float32
// rounding.
func (n *Net) headProbs(dst, pooled, ref []float32, class int) error {
	p := n.trunk()
	if p.columns {
		// A vector equal to the one before it (a window that moves no
		// channel's maximum) takes that one's probability: the head on
		// the distinct vectors alone, the same bits.
		uniq, of := p.dedupe(pooled, len(dst))
		m := len(uniq)
		p.probs = slices.Grow(p.probs[:0], m)[:m]
		probs := p.probs
		if err := n.headColumns(probs, pooled, uniq, class, true); err != nil {
			return err
		}
		if ref != nil {
			var pref [1]float32
			done := false
			for k := range probs {
				if !sameBits(pooled[uniq[k]*p.P:(uniq[k]+1)*p.P], ref) {
					continue
				}
				if !done {
					if err := n.headColumns(pref[:], ref, firstOnly, class, false); err != nil {
						return err
					}
					done = true
				}
				probs[k] = pref[0]
			}
		}
		for j := range dst {
			dst[j] = probs[of[j]]
		}
		return nil
	}
	w := n.winBuffers()
	for j0 := 0; j0 < len(dst); j0 += winBatch {
		B := min(winBatch, len(dst)-j0)
		clear(w.w)
		w.w[p.g+1] = 1
		copy(n.winVal(p.g+1, B), pooled[j0*p.P:(j0+B)*p.P])
		for _, i := range p.head {
			n.place(i+1, B, n.nodes[i].out.T)
		}
		for _, i := range p.head {
			n.winNode(B, i)
		}
		if err := n.winProbs(dst[j0:j0+B], class); err != nil {
			return fmt.Errorf("pooled vectors %d..%d: %w", j0, j0+B-1, err)
		}
	}
	return nil
}

// firstOnly is headColumns's idx of one vector, the first.
var firstOnly = []int{0}

// headColumns is headProbs with the head in columns: headBatch pooled
// vectors are laid out as the steps of one P x headBatch value, and each
// head node computes them in one call (vector k is pooled[idx[k]*P:],
// for k < len(dst)), the probability of class taken
// from the last one's column. With fast, by the op's FastColumns where
// it has one and softmaxColumns: equal up to float32 rounding; else by
// Columns, with the bits of Forward on each vector, and Softmax's
// arithmetic (columnSoftmax): ForwardUnfolded's bits.
func (n *Net) headColumns(dst, pooled []float32, idx []int, class int, fast bool) error {
	p := n.tplan
	K := n.Classes()
	for j0 := 0; j0 < len(dst); j0 += headBatch {
		m := min(headBatch, len(dst)-j0)
		x := p.cols[p.g+1][:p.P*m]
		for j := 0; j < m; j++ {
			for c, v := range pooled[idx[j0+j]*p.P : (idx[j0+j]+1)*p.P] {
				x[c*m+j] = v
			}
		}
		for _, i := range p.head {
			nd := &n.nodes[i]
			c := &p.calls[i]
			for k, v := range nd.inputs {
				c.In[k] = Shape{nd.in[k].C, m}
				c.X[k] = p.cols[v][:nd.in[k].C*m]
			}
			c.Out = Shape{nd.out.C, m}
			c.Y = p.cols[i+1][:nd.out.C*m]
			for k, q := range nd.params {
				c.P[k] = n.Theta[n.params[q].Offset : n.params[q].Offset+n.params[q].Len]
			}
			if fast && nd.op.FastColumns != nil {
				nd.op.FastColumns(c)
			} else {
				nd.op.Columns(c)
			}
		}
		y := p.cols[n.output+1][:K*m]
		soft := n.nodes[n.output].op.Kind == "softmax"
		if !soft && fast {
			softmaxColumns(dst[j0:j0+m], y, K, m, class, &p.sm)
		}
		for j := 0; j < m; j++ {
			pr := dst[j0+j]
			switch {
			case soft:
				pr = y[class*m+j]
			case !fast:
				pr = columnSoftmax(y, K, m, j, class)
			}
			if math.IsNaN(float64(pr)) || math.IsInf(float64(pr), 0) {
				return fmt.Errorf("graph %q: pooled vector %d: probability %v (the parameters hold non-finite values)", n.spec.Name, j0+j, pr)
			}
			dst[j0+j] = pr
		}
	}
	return nil
}

// columnSoftmax is ops.Softmax's probability of class for column j of the
// K x m logits y, with its arithmetic: the maximum and the sum of
// exponentials in float64, in class order.
func columnSoftmax(y []float32, K, m, j, class int) float32 {
	mx := math.Inf(-1)
	for c := 0; c < K; c++ {
		mx = max(mx, float64(y[c*m+j]))
	}
	var s, e float64
	for c := 0; c < K; c++ {
		v := math.Exp(float64(y[c*m+j]) - mx)
		s += v
		if c == class {
			e = v
		}
	}
	return float32(e / s)
}

// dedupe returns the indices of the N vectors of P values of pooled that
// differ (in some bit) from the vector before them, and of[j], the place
// of vector j's among them (both in p's scratch, valid until the next
// call).
func (p *trunkPlan) dedupe(pooled []float32, N int) (uniq, of []int) {
	P := p.P
	uniq = p.uniq[:0]
	of = slices.Grow(p.of[:0], N)[:N]
	for j := 0; j < N; j++ {
		if j > 0 && sameBits(pooled[j*P:(j+1)*P], pooled[(j-1)*P:j*P]) {
			of[j] = of[j-1]
			continue
		}
		uniq = append(uniq, j)
		of[j] = len(uniq) - 1
	}
	p.uniq, p.of = uniq, of
	return uniq, of
}

// softmaxScratch is softmaxColumns's buffers.
type softmaxScratch struct {
	mx, e, ec []float32
	s         []float64
}

// softmaxColumns writes dst[j] = softmax(column j of the K x m block
// z)[class], as ops.Softmax computes it (the maximum subtracted, the sum
// in float64 in class order) but with the float32 exponential kern.Exp
// over a row of columns at a time (a relative difference of a few float32
// ulps).
func softmaxColumns(dst, z []float32, K, m, class int, sc *softmaxScratch) {
	if len(sc.mx) < m {
		sc.mx, sc.e, sc.ec, sc.s = make([]float32, m), make([]float32, m), make([]float32, m), make([]float64, m)
	}
	mx, e, ec, s := sc.mx[:m], sc.e[:m], sc.ec[:m], sc.s[:m]
	copy(mx, z[:m])
	for r := 1; r < K; r++ {
		for j, v := range z[r*m : (r+1)*m] {
			mx[j] = max(mx[j], v)
		}
	}
	clear(s)
	for r := 0; r < K; r++ {
		for j, v := range z[r*m : (r+1)*m] {
			e[j] = v - mx[j]
		}
		kern.Exp(e, e)
		if r == class {
			copy(ec, e)
		}
		for j, v := range e {
			s[j] += float64(v)
		}
	}
	for j := range dst[:m] {
		dst[j] = float32(float64(ec[j]) / s[j])
	}
}
