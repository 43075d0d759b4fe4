package graph

import (
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk/nn/ops"
)

// This file computes chains of perturbed copies: the explanation metrics'
// curves (region perturbation, pixel flipping, infidelity), where copy k
// of an input is copy k-1 with a few more samples changed. A chain keeps
// its current copy's every value (the chain's state, full length); a
// step's edit changes the input on a range of steps, and node by node
// only the output steps whose receptive field reads a changed step are
// recomputed (the ranges of window.go's file comment), from the state's
// values, and written back into the state over the changed range. From
// the first node that is not Local every node is computed in full. So a
// step costs what the edit reaches, not a forward pass, and the values
// are the op's own arithmetic at each step: the outputs equal forward
// passes' of the copies up to float32 rounding. After FoldEval the chains
// run the folded pass (a batchnorm and ReLU computed in the convolution's
// call), as Forward does.
//
// ChainBatch chains run side by side, a node's kernel called once for
// all of them on the widest changed range of the step.
//
// A restart (every copy a change of the input itself, each undoing the
// last: faithfulness estimate's groups removed one at a time) is not
// recomputed. In a chain with restarts, a node's recomputed window is
// kept in an overlay of its value instead of written into it: the
// nodes that read the value take its changed range from the overlay,
// and a restart discards it. What is written into the values (a node
// computed in full, an overlay that a node computed in full or the
// output reads, or that the next copy goes on from) is first appended
// to an undo log (a window's range, or a value computed in full the
// first time since the start), and a restart writes the log back in
// reverse order and the input's changed range from the inputs given.
// The log is read and written in order, so a restart costs about what
// the step's own write-back did; with the overlay, a step that a
// restart follows writes back only what is read whole. When the log since the start outgrows the values
// themselves (a long stretch between restarts: infidelity removes 640
// patches before it starts again), it is compacted into one copy of each
// value's start, the log replayed onto the current values in reverse,
// and from then on holds each value whole, once.

// ChainBatch is the most chains one ChainOutputs call runs.
const ChainBatch = 64

// ChainRestart reports the steps k before which every chain returns to
// its start (its input and every value computed from it), so that copy
// k is made by the edit from the input itself.
type ChainRestart func(k int) bool

// ChainEdit changes chain b's current input cur (C x T, channel-major:
// the previous copy's values, or the input itself before step 0) in
// place before step k, and returns the half-open range [lo, hi) of time
// steps it changed in any channel (lo >= hi: none). Values outside the
// range must not change.
type ChainEdit func(b, k int, cur []float32) (lo, hi int)

// chainWS is ChainOutputs's workspace, for up to ChainBatch chains.
type chainWS struct {
	st   [][]float32 // per value: the chains' current values, B x size
	tmp  []float32   // a node's recomputed window, B x C x W
	gat  [][]float32 // per input position: a node's gathered input
	idx  []int32
	out  []float32 // B x K: the output values, probabilities made
	clo  [][]int   // per value, per chain: the changed range [clo, chi)
	chi  [][]int
	slo  []int // per chain: the recomputed window's start
	size []int // per value: one chain's values
	// fold: the call runs the folded pass (FoldEval): a node absorbed
	// into another is skipped, and the absorbing node writes the value
	// of the last node of its group.
	fold  bool
	calls []Call
	p     [][][]float32 // per node: its parameters' slices of Theta
	// For restarts (track): the undo log, its entries, and per value
	// whether it was logged whole since the start; the input's range
	// changed since the start, per chain [dlo, dhi).
	track    bool
	whole    bool // the log holds every value whole since its compaction
	state    int  // the values a compacted log holds (B x their sizes)
	undo     []float32
	ulog     []undoEntry
	ufull    []bool
	dlo, dhi []int
	// The overlay (restarts only): a windowed node's recomputed window
	// is kept in ovl[v] (B x C x ow[v], chain b's from step oslo[v][b])
	// instead of written into the values, while ovOn[v]; its readers
	// take the changed range [clo, chi) from it. A restart then discards
	// it, neither logged nor written back. A reader that needs the
	// values whole (a node computed in full, the output), or a step that
	// goes on from this one, writes it into the values first, logged
	// (materialise).
	ovl  [][]float32
	oslo [][]int
	ow   []int
	ovOn []bool
}

// undoEntry is one overwrite in the undo log: value v's values of chain
// b on steps [lo, hi) of every channel, or (b < 0) all of the chains'
// values, kept at undo[off:].
type undoEntry struct{ v, b, lo, hi, off int }

// chainBuffers returns the workspace, made on first use.
func (n *Net) chainBuffers() *chainWS {
	if n.chain != nil {
		return n.chain
	}
	nv := len(n.shapes)
	c := &chainWS{st: make([][]float32, nv), clo: make([][]int, nv), chi: make([][]int, nv), slo: make([]int, ChainBatch), size: make([]int, nv)}
	most := 0
	for v := range nv {
		c.size[v] = n.shapes[v].Size()
		c.clo[v], c.chi[v] = make([]int, ChainBatch), make([]int, ChainBatch)
		if v == 0 || n.anc[v-1] {
			c.st[v] = make([]float32, ChainBatch*c.size[v])
			most = max(most, c.size[v])
		}
	}
	c.tmp = make([]float32, ChainBatch*most)
	gat, idx := n.gatherSizes()
	for _, g := range gat {
		c.gat = append(c.gat, make([]float32, ChainBatch*g))
	}
	c.idx = make([]int32, ChainBatch*idx)
	c.out = make([]float32, ChainBatch*n.Classes())
	c.calls, c.p = make([]Call, len(n.nodes)), make([][][]float32, len(n.nodes))
	for i := range n.nodes {
		c.calls[i].X = make([][]float32, len(n.nodes[i].inputs))
		c.calls[i].In = make([]Shape, len(n.nodes[i].inputs))
	}
	n.chain = c
	return c
}

// ChainOutputs runs B = len(classes) chains of K perturbed copies each,
// chain b from input b of xs (B inputs of C x T): before step k, edit(b,
// k, cur) changes chain b's current input, and
//
//	dst[b*K+k] = f_classes[b](copy k of chain b),
//
// f the class probability, or the logit (the softmax's input) when
// logits is set. The copies are computed incrementally (see the file's
// comment); the returned Path says how much of their forward passes'
// work was done. restart, if not nil, reports the steps before which
// every chain returns to its input (ChainRestart). Errors: xs of the
// wrong length or not finite, a class outside 0..K-1, an edit that writes a non-finite value, a non-finite
// output. B must be at most ChainBatch and dst K values a chain.
func (n *Net) ChainOutputs(dst, xs []float32, K int, classes []int, logits bool, edit ChainEdit, restart ChainRestart) (Path, error) {
	B := len(classes)
	if B > ChainBatch || len(dst) != B*K || K < 0 {
		panic(fmt.Sprintf("graph: ChainOutputs: %d chains (at most %d) of %d steps with %d outputs", B, ChainBatch, K, len(dst)))
	}
	in := n.shapes[0]
	if len(xs) != B*in.Size() {
		return Path{}, fmt.Errorf("graph %q: %d input values for %d chains; need %d inputs of %d channels x %d steps", n.spec.Name, len(xs), B, B, in.C, in.T)
	}
	if err := n.finiteInput(xs, "input", 0, in.T); err != nil {
		return Path{}, err
	}
	for b, y := range classes {
		if k := n.Classes(); y < 0 || y >= k {
			return Path{}, fmt.Errorf("graph %q: chain %d: class %d; need 0 <= class < %d", n.spec.Name, b, y, k)
		}
	}
	if B == 0 || K == 0 {
		return Path{Copies: B * K}, nil
	}
	w, c := n.window(), n.chainBuffers()
	c.fold, c.track = n.evalOn, false
	p := Path{Copies: B * K, Incremental: B * K, Dense: float64(B*K) * w.dense, Done: float64(B) * w.dense}
	copy(c.st[0][:B*in.Size()], xs)
	for i := 0; i <= n.output; i++ {
		if n.anc[i] && !(c.fold && n.eskip[i]) {
			n.chainFull(B, i)
		}
	}
	never := restart != nil
	for k := 1; never && k < K; k++ {
		never = !restart(k)
	}
	if never {
		restart = nil // it never restarts: nothing to undo
	}
	c.track = restart != nil
	if c.track {
		n.chainTrackStart(B)
	}
	changed := true // the output's values are not yet read
	for k := range K {
		if restart != nil && k > 0 && restart(k) {
			n.chainRevert(B, xs)
			changed = true
		} else if c.track {
			n.materialiseAll(B) // copy k goes on from copy k-1
		}
		any := false
		for b := range B {
			cur := c.st[0][b*in.Size() : (b+1)*in.Size()]
			lo, hi := edit(b, k, cur)
			lo, hi = max(lo, 0), min(hi, in.T)
			if lo >= hi {
				lo, hi = 0, 0
			} else {
				any = true
				for ch := range in.C {
					if err := n.finiteInput(cur[ch*in.T+lo:ch*in.T+hi], fmt.Sprintf("chain %d step %d: edited input", b, k), ch*in.T+lo, in.T); err != nil {
						return Path{}, err
					}
				}
			}
			c.clo[0][b], c.chi[0][b] = lo, hi
		}
		if any {
			if c.track {
				for b := range B {
					if lo, hi := c.clo[0][b], c.chi[0][b]; lo < hi {
						c.dlo[b], c.dhi[b] = min(c.dlo[b], lo), max(c.dhi[b], hi)
					}
				}
			}
			p.Done += n.chainStep(B)
			changed = true
		}
		if changed {
			if err := n.chainOut(B, logits); err != nil {
				return Path{}, fmt.Errorf("step %d: %w", k, err)
			}
			changed = false
		}
		Kc := n.Classes()
		for b, y := range classes {
			dst[b*K+k] = c.out[b*Kc+y]
		}
	}
	if p.Done < p.Dense {
		return p, nil
	}
	p.Done = p.Dense // at least the forward passes' work was done
	return p, nil
}

// finiteInput reports the first value of v that is not finite; v starts
// at index off of a signal of T steps a channel.
func (n *Net) finiteInput(v []float32, what string, off, T int) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			j := off + i
			return fmt.Errorf("graph %q: %s value %d (channel %d, step %d) is %v; need finite values", n.spec.Name, what, j, j/T, j%T, x)
		}
	}
	return nil
}

// chainStep propagates the chains' changed input ranges through the
// nodes, recomputing what they reach, and returns the work done.
func (n *Net) chainStep(B int) float64 {
	w, c := n.win, n.chain
	var work float64
	for i := 0; i <= n.output; i++ {
		if !n.anc[i] || c.fold && n.eskip[i] {
			continue
		}
		nd, wn := &n.nodes[i], &w.nodes[i]
		v, To := n.chainOut1(i), nd.out.T
		W := 0
		for b := range B {
			lo, hi := n.reach(i, c.clo, c.chi, b, false)
			c.clo[v][b], c.chi[v][b] = lo, hi
			W = max(W, hi-lo)
		}
		switch {
		case W == 0:
		case !wn.local || W == To:
			n.chainFull(B, i)
			work += float64(B*To) * wn.step
		default:
			n.chainWindow(B, i, W)
			work += float64(B*W) * wn.step
		}
	}
	return work
}

// compactOver is the size of an undo log, as a multiple of the values'
// (chainWS.state), past which it is compacted; tests set it to 0 to
// compact at every window.
var compactOver = 1

// chainTrackStart starts the undo log at the B chains' start.
func (n *Net) chainTrackStart(B int) {
	c := n.chain
	if c.ufull == nil {
		c.ufull, c.dlo, c.dhi = make([]bool, len(c.st)), make([]int, ChainBatch), make([]int, ChainBatch)
		c.ovl, c.oslo, c.ow, c.ovOn = make([][]float32, len(c.st)), make([][]int, len(c.st)), make([]int, len(c.st)), make([]bool, len(c.st))
	}
	c.state = 0
	for v, s := range c.st {
		if s != nil && v > 0 {
			c.state += B * c.size[v]
		}
	}
	n.chainClean()
}

// chainClean empties the undo log.
func (n *Net) chainClean() {
	c := n.chain
	c.undo, c.ulog, c.whole = c.undo[:0], c.ulog[:0], false
	clear(c.ufull)
	clear(c.ovOn)
	for b := range c.dlo {
		c.dlo[b], c.dhi[b] = n.shapes[0].T, 0
	}
}

// chainLog appends to the undo log value v's values of chain b on steps
// [lo, hi) of every channel, or, b < 0 or in a stretch that logs values
// whole, the B chains' whole values the first time since the start.
func (n *Net) chainLog(B, v, b, lo, hi int) {
	c := n.chain
	sz := c.size[v]
	if b < 0 || c.whole {
		if c.ufull[v] {
			return
		}
		c.ufull[v] = true
		c.ulog = append(c.ulog, undoEntry{v: v, b: -1, off: len(c.undo)})
		c.undo = append(c.undo, c.st[v][:B*sz]...)
		return
	}
	c.ulog = append(c.ulog, undoEntry{v: v, b: b, lo: lo, hi: hi, off: len(c.undo)})
	sh := n.shapes[v]
	for ch := range sh.C {
		o := b*sz + ch*sh.T
		c.undo = append(c.undo, c.st[v][o+lo:o+hi]...)
	}
	if len(c.undo) > compactOver*c.state {
		n.chainCompact(B)
	}
}

// chainCompact replaces the undo log by one entry a value holding its
// start: the current values with the log written back onto them in
// reverse order; from then on the log holds values whole.
func (n *Net) chainCompact(B int) {
	c := n.chain
	old, oldLog := c.undo, c.ulog
	c.undo, c.ulog = nil, nil
	start := make([]int, len(c.st)) // value v's entry's offset in the new log
	for v, s := range c.st {
		if s == nil || v == 0 {
			continue
		}
		start[v] = len(c.undo)
		c.ulog = append(c.ulog, undoEntry{v: v, b: -1, off: len(c.undo)})
		c.undo = append(c.undo, s[:B*c.size[v]]...)
		c.ufull[v] = true
	}
	n.unwind(B, oldLog, old, func(v int) []float32 { return c.undo[start[v] : start[v]+B*c.size[v]] })
	c.whole = true
}

// unwind writes the undo log (entries ulog, values undo) back in reverse
// order onto the values into(v) holds, each laid out as the chains'
// values of v (B x its size).
func (n *Net) unwind(B int, ulog []undoEntry, undo []float32, into func(v int) []float32) {
	for j := len(ulog) - 1; j >= 0; j-- {
		e := ulog[j]
		s, sz := into(e.v), n.chain.size[e.v]
		if e.b < 0 {
			copy(s[:B*sz], undo[e.off:e.off+B*sz])
			continue
		}
		sh := n.shapes[e.v]
		w := e.hi - e.lo
		for ch := range sh.C {
			o := e.b*sz + ch*sh.T
			copyShort(s[o+e.lo:o+e.hi], undo[e.off+ch*w:e.off+(ch+1)*w])
		}
	}
}

// chainRevert returns the B chains to their start: the undo log written
// back in reverse order, and the inputs xs copied over the input's
// changed ranges.
func (n *Net) chainRevert(B int, xs []float32) {
	c := n.chain
	n.unwind(B, c.ulog, c.undo, func(v int) []float32 { return c.st[v] })
	in := n.shapes[0]
	for b := range B {
		for ch := range in.C {
			o := b*c.size[0] + ch*in.T
			if lo, hi := c.dlo[b], c.dhi[b]; lo < hi {
				copyShort(c.st[0][o+lo:o+hi], xs[o+lo:o+hi])
			}
		}
	}
	n.chainClean()
}

// materialise writes value v's overlay, if it has one, into the values
// over each chain's changed range, logging what it overwrites.
func (n *Net) materialise(B, v int) {
	c := n.chain
	if !c.track || !c.ovOn[v] {
		return
	}
	c.ovOn[v] = false
	n.writeBack(B, v, c.ovl[v], c.ow[v], c.oslo[v])
}

// materialiseAll writes every overlay into the values (materialise), in
// the values' order.
func (n *Net) materialiseAll(B int) {
	for v, on := range n.chain.ovOn {
		if on {
			n.materialise(B, v)
		}
	}
}

// chainOut1 is the value node i writes: its own, or in the folded pass
// the last of its group's.
func (n *Net) chainOut1(i int) int {
	if n.chain.fold {
		return n.egroup[i].last + 1
	}
	return i + 1
}

// chainCall prepares node i's Call of the chains: its parameters (the
// folded ones, and the fused ReLU, in the folded pass).
func (n *Net) chainCall(i, B int, a Attrs, out Shape) *Call {
	c := n.chain
	call := &c.calls[i]
	call.A, call.Out, call.B = a, out, B
	c.p[i] = n.theta(c.p[i][:0], i)
	call.P, call.Fused = c.p[i], false
	if g := n.egroup[i]; c.fold && g.last != i {
		call.Fused = g.relu >= 0
		if g.aff >= 0 {
			call.P = n.evP[i]
		}
	}
	return call
}

// chainFull computes node i's values of the B chains in full from their
// inputs' values.
func (n *Net) chainFull(B, i int) {
	c := n.chain
	nd := &n.nodes[i]
	call := n.chainCall(i, B, nd.attrs, nd.out)
	for j, u := range nd.inputs {
		n.materialise(B, u)
		call.X[j], call.In[j] = c.st[u][:B*c.size[u]], nd.in[j]
	}
	v := n.chainOut1(i)
	if c.track {
		n.chainLog(B, v, -1, 0, 0)
	}
	call.Y = c.st[v][:B*c.size[v]]
	call.Idx = c.idx[:B*nd.idx]
	nd.op.Forward(call)
}

// chainWindow recomputes node i's output steps [slo, slo+W) of each
// chain, slo its changed range's start moved left to fit, from its
// inputs' values (padding written out), and writes the changed range
// into the chain's values.
func (n *Net) chainWindow(B, i, W int) {
	w, c := n.win, n.chain
	nd, wn := &n.nodes[i], &w.nodes[i]
	f := wn.f
	v, To, Co := n.chainOut1(i), nd.out.T, nd.out.C
	for b := range B {
		c.slo[b] = min(c.clo[v][b], To-W)
	}
	G := (W-1)*f.Stride + (f.Kernel-1)*f.Dilation + 1
	out := Shape{Co, W}
	call := n.chainCall(i, B, wn.attrs, out)
	for j, u := range nd.inputs {
		s := n.shapes[u]
		call.In[j] = Shape{s.C, G}
		g := c.gat[j][:B*s.C*G]
		for b := range B {
			if c.clo[v][b] >= c.chi[v][b] {
				continue // its window is not kept: its rows need no gathering
			}
			t0 := c.slo[b]*f.Stride - f.PadLeft
			lo, hi := max(t0, 0), min(t0+G, s.T)
			src := c.st[u][b*c.size[u] : (b+1)*c.size[u]]
			for ch := range s.C {
				row := g[(b*s.C+ch)*G : (b*s.C+ch+1)*G]
				for t := range row[:lo-t0] {
					row[t] = wn.pad
				}
				copyShort(row[lo-t0:hi-t0], src[ch*s.T+lo:ch*s.T+hi])
				for t := hi - t0; t < G; t++ {
					row[t] = wn.pad
				}
			}
			if c.track && c.ovOn[u] {
				// u's changed range, from its overlay
				olo, ohi := max(c.clo[u][b], lo), min(c.chi[u][b], hi)
				if olo < ohi {
					ow, os := c.ow[u], c.oslo[u][b]
					for ch := range s.C {
						o := (b*s.C + ch) * ow
						copyShort(g[(b*s.C+ch)*G+olo-t0:(b*s.C+ch)*G+ohi-t0], c.ovl[u][o+olo-os:o+ohi-os])
					}
				}
			}
		}
		call.X[j] = g
	}
	if c.track {
		// the window goes to v's overlay: a restart discards it
		if len(c.ovl[v]) < B*Co*W {
			c.ovl[v] = make([]float32, B*c.size[v])
			c.oslo[v] = make([]int, ChainBatch)
		}
		call.Y = c.ovl[v][:B*Co*W]
	} else {
		call.Y = c.tmp[:B*Co*W]
	}
	ni := 0
	if nd.op.Indices != nil {
		ni = nd.op.Indices(wn.attrs, call.In, out)
	}
	if len(c.idx) < B*ni {
		c.idx = make([]int32, B*ni)
	}
	call.Idx = c.idx[:B*ni]
	nd.op.Forward(call)
	if c.track {
		c.ovOn[v], c.ow[v] = true, W
		copy(c.oslo[v][:B], c.slo[:B])
		return
	}
	n.writeBack(B, v, c.tmp, W, c.slo)
}

// writeBack writes windows win (B x C x W, chain b's from step slo[b])
// into value v's values over each chain's changed range [clo, chi),
// logging what it overwrites when the chains track restarts.
func (n *Net) writeBack(B, v int, win []float32, W int, slo []int) {
	c := n.chain
	sh, sz := n.shapes[v], c.size[v]
	for b := range B {
		lo, hi := c.clo[v][b], c.chi[v][b]
		if lo >= hi {
			continue
		}
		if c.track {
			n.chainLog(B, v, b, lo, hi)
		}
		dst := c.st[v][b*sz : (b+1)*sz]
		for ch := range sh.C {
			o := (b*sh.C+ch)*W - slo[b]
			copyShort(dst[ch*sh.T+lo:ch*sh.T+hi], win[o+lo:o+hi])
		}
	}
}

// chainOut writes the chains' output values to the workspace's out:
// logits (the softmax's input when the output node is a softmax), or
// probabilities.
func (n *Net) chainOut(B int, logits bool) error {
	c := n.chain
	K := n.Classes()
	out := c.out[:B*K]
	soft := n.nodes[n.output].op.Kind == "softmax"
	if c.track {
		n.materialise(B, n.output+1)
		if soft {
			n.materialise(B, n.nodes[n.output].inputs[0])
		}
	}
	y := c.st[n.output+1][:B*K]
	switch {
	case logits && soft:
		copy(out, c.st[n.nodes[n.output].inputs[0]][:B*K])
	case logits, soft:
		copy(out, y)
	default:
		ops.Softmax(out, y, K, 1)
	}
	what := "probability"
	if logits {
		what = "logit"
	}
	for j, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("graph %q: chain %d class %d: %s %v (the parameters hold non-finite values)", n.spec.Name, j/K, j%K, what, v)
		}
	}
	return nil
}
