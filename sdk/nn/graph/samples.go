package graph

import "github.com/uaxai/uaxai/sdk/nn/ops"

// A training pass runs the nodes between two TrainForward nodes (whose
// batch statistics couple the samples: batchnorm, dropout's masks drawn
// in order) sample group by sample group: each chunk of the batch (as
// chunked splits it) goes to a worker, which takes its samples SampleRun
// at a time through every node of the run while their values are in
// cache, as the layer-list engine ran the layers between two
// batchnorms. Each sample's values are its own, so the bytes are those
// of node-by-node calls on the whole batch.

// SampleRun is the number of samples a worker takes through a run of
// nodes at a time.
const SampleRun = 2

// forwardSamples runs the Forward of the nodes (their calls prepared in
// w.calls for the batch of B) sample group by sample group.
func (n *Net) forwardSamples(w *workspace, nodes []int, B int) {
	if len(nodes) == 0 {
		return
	}
	nc := min(B, TrainChunks)
	for _, i := range nodes {
		w.chunkCalls(i, &w.calls[i], nc)
	}
	w.sw = samplesWork{n: n, w: w, nodes: nodes, B: B, nc: nc}
	runStage(&w.st, &w.sw, nc, n.Workers)
	w.sw = samplesWork{}
}

// forwardChunk runs chunk k of nc of the batch of B through the nodes,
// SampleRun samples at a time.
func (n *Net) forwardChunk(w *workspace, nodes []int, B, nc, k int) {
	b0, b1 := k*B/nc, (k+1)*B/nc
	for s := b0; s < b1; s += SampleRun {
		e := min(s+SampleRun, b1)
		for _, i := range nodes {
			cc := &w.chunks[i][k]
			cutCall(cc, &w.calls[i], s, e)
			n.nodes[i].op.Forward(cc)
		}
	}
}

// The training backward runs the same way: the nodes between two
// TrainBackward nodes are planned one by one in backward order (the
// gradients' forms and buffers, as the node-by-node pass has them), then
// run sample group by sample group, each group through every node of the
// run (the gradient a node writes is read by the next while in cache).
// A run ends before a node that would touch a gradient buffer (a slot
// of the liveness plan, the input's dx, a summing scratch) that another
// value of the run holds: samples of two values of different sizes
// would overlap there.

// bstep is one planned node of a training backward run.
type bstep struct {
	i, ov int         // the node, the value whose gradient c.DY is
	fn    func(*Call) // Backward or SparseBackward
	from  GradForm    // c.DY is formed from this form first (DenseGrad: it is dense)
	hotDY []float32   // from's data
	hotAt []int32
	steps [][]int32
}

// backWork is a training backward run's stage.
type backWork struct {
	n     *Net
	w     *workspace
	steps []bstep
	B, nc int
	dx    []float32
}

func (b *backWork) chunk(k int) { b.n.backwardChunk(b, k) }

// gradSlot is the id of value v's gradient buffer in w.slotVal: its
// slot, or past them the input's dx.
func (n *Net) gradSlot(v int) int {
	if v == 0 {
		return len(n.bwdSize)
	}
	return n.bwdSlot[v]
}

// claim marks buffer id as held by value v in the current run, and
// reports false if another value holds it.
func (w *workspace) claim(id, v int, mark bool) bool {
	if h := w.slotVal[id]; h >= 0 && h != v {
		return false
	}
	if mark && w.slotVal[id] < 0 {
		w.slotVal[id] = v
		w.slotUsed = append(w.slotUsed, id)
	}
	return true
}

// claims claims node i's buffers: c.DY's (if read) and its inputs'
// gradients (and the scratch a summed one goes through).
func (n *Net) claims(w *workspace, i, ov int, readsDY, mark bool) bool {
	ok := !readsDY || w.claim(n.gradSlot(ov), ov, mark)
	c := &w.calls[i]
	scratch := len(n.bwdSize) + 1
	for j, v := range n.nodes[i].inputs {
		if c.DX[j] == nil {
			continue
		}
		ok = w.claim(n.gradSlot(v), v, mark) && ok
		if g := w.scratch[j]; &c.DX[j][0] == &g[0] {
			ok = w.claim(scratch+j, v, mark) && ok
		}
	}
	return ok
}

// backpropTrain is backprop of a training pass (dTheta and dx as there;
// sparse gradients, sparsegrad.go).
func (n *Net) backpropTrain(B int, x, dTheta, dx []float32) {
	w := n.ws
	val := func(v int) []float32 { return n.kept(w, B, x, v) }
	grad := func(v int) []float32 { return n.gradBuf(w, B, dx, v) }
	if w.slotVal == nil {
		w.slotVal = make([]int, len(n.bwdSize)+1+len(w.scratch))
		w.slotUsed = make([]int, 0, len(w.slotVal))
		w.bsteps = make([]bstep, 0, len(n.nodes))
		for id := range w.slotVal {
			w.slotVal[id] = -1
		}
	}
	clear(w.init)
	clear(w.form)
	w.init[n.output+1] = true
	steps := w.bsteps[:0]
	flush := func() {
		n.backwardSamples(w, steps, B, dx)
		steps = steps[:0]
		for _, id := range w.slotUsed {
			w.slotVal[id] = -1
		}
		w.slotUsed = w.slotUsed[:0]
	}
	for i := n.output; i >= 0; i-- {
		if !n.anc[i] || n.folded[i] || dx == nil && !n.learns[i+1] {
			continue // (the last: nothing below i learns, as a pad on the input)
		}
		nd := &n.nodes[i]
		c := n.call(w, i, B, val)
		c.Train = true
		c.DY = grad(i + 1)
		ov := i + 1
		if f := n.fuse[i]; f >= 0 {
			c.Y, c.DY, c.Fused = val(f+1), grad(f+1), true
			ov = f + 1
		}
		if !n.denseGrads && w.form[ov] == DenseGrad && n.handsOnHot(i) {
			if w.slotVal[n.gradSlot(ov)] >= 0 {
				flush() // c.DY's buffer is the run's: complete the run first
			}
			v := nd.inputs[0]
			copy(w.hotBuf(n, v, B), c.DY)
			w.hotAt[v], w.form[v], w.init[v] = c.Idx, HotGrad, true
			continue
		}
		st := bstep{i: i, ov: ov, from: w.form[ov]}
		sparse, to := false, DenseGrad
		if st.from != DenseGrad {
			if !n.denseGrads {
				to, sparse = n.sparseInput(i, st.from)
			}
			if sparse {
				st.from = DenseGrad
			} else {
				st.hotDY, st.hotAt, st.steps = w.hotDY[ov], w.hotAt[ov], w.sup[ov]
				w.form[ov] = DenseGrad
			}
		}
		n.gradTargets(w, c, i, B, dx, dTheta, grad)
		if sparse {
			if w.form[ov] == HotGrad {
				c.HotAt, c.HotDY = w.hotAt[ov], w.hotDY[ov][:B*n.shapes[ov].C]
			} else {
				c.Steps = w.sup[ov][:B]
			}
			if c.DX[0] != nil && to == StepsGrad {
				c.DXSteps = w.steps(n, nd.inputs[0], B)
			}
		}
		if n.backwardHook != nil {
			n.backwardHook(i, c) // as planned
		}
		if nd.op.TrainBackward != nil && !sparse {
			flush()
			if st.from != DenseGrad {
				n.densifyRange(&st, c.DY, 0, B)
			}
			c.State = n.state(w, i, B)
			c.Workers = n.Workers
			nd.op.TrainBackward(c)
			n.addInputs(w, i, B, dx, 0, B, c.DX)
		} else {
			st.fn = nd.op.Backward
			if sparse {
				st.fn = nd.op.SparseBackward
			}
			readsDY := !(sparse && c.HotAt != nil)
			if !n.claims(w, i, ov, readsDY, false) {
				flush()
			}
			n.claims(w, i, ov, readsDY, true)
			steps = append(steps, st)
		}
		for j, v := range nd.inputs {
			if c.DX[j] == nil {
				continue
			}
			w.init[v] = true
			if sparse {
				w.form[v] = to
				if to == HotGrad {
					w.hotDY[v], w.hotAt[v] = c.HotDY, c.HotAt
				}
			}
		}
	}
	flush()
	if dx != nil && w.form[0] != DenseGrad {
		n.densify(w, B, 0, dx)
	}
	if dx != nil && !w.init[0] {
		clear(dx) // the output does not depend on the input
	}
}

// densifyRange forms samples s..e-1 of the gradient dy of step st's
// value from its form st.from.
func (n *Net) densifyRange(st *bstep, dy []float32, s, e int) {
	sh := n.shapes[st.ov]
	sz := sh.Size()
	switch st.from {
	case HotGrad:
		ops.DensifyHot(dy[s*sz:e*sz], st.hotDY[s*sh.C:e*sh.C], st.hotAt[s*sh.C:e*sh.C], sh.T)
	case StepsGrad:
		ops.Densify(dy[s*sz:e*sz], sh.C, sh.T, st.steps[s:e])
	}
}

// addInputs adds samples s..e-1 of the input gradients dxs of node i
// (its call's DX cut to them) that went through a scratch to their
// values' gradients.
func (n *Net) addInputs(w *workspace, i, B int, dx []float32, s, e int, dxs [][]float32) {
	c := &w.calls[i]
	for j, v := range n.nodes[i].inputs {
		if c.DX[j] == nil {
			continue
		}
		g := n.gradBuf(w, B, dx, v)
		if &c.DX[j][0] == &g[0] {
			continue
		}
		sz := n.shapes[v].Size()
		g = g[s*sz : e*sz]
		for k, d := range dxs[j] {
			g[k] += d
		}
	}
}

// backwardSamples runs the planned steps sample group by sample group
// on the chunks of the batch, and adds the chunks' parameter gradients
// in chunk order (as chunked does).
func (n *Net) backwardSamples(w *workspace, steps []bstep, B int, dx []float32) {
	if len(steps) == 0 {
		return
	}
	nc := (B + GradChunk - 1) / GradChunk // chunks of GradChunk samples: the sums' order (chunks.go)
	for _, st := range steps {
		c := &w.calls[st.i]
		calls := w.chunkCalls(st.i, c, nc)
		for k := range calls {
			cc := &calls[k]
			cc.DP = cc.DP[:len(c.DP)]
			for j, d := range c.DP {
				cc.DP[j] = nil
				if d != nil {
					cc.DP[j] = w.chunkGrad(st.i, k, j, len(d))
					clear(cc.DP[j])
				}
			}
		}
	}
	w.bw = backWork{n: n, w: w, steps: steps, B: B, nc: nc, dx: dx}
	runStage(&w.st, &w.bw, nc, n.Workers)
	w.bw = backWork{}
	for _, st := range steps {
		c := &w.calls[st.i]
		for j, d := range c.DP {
			if d == nil {
				continue
			}
			for k := range nc {
				for x, v := range w.chunks[st.i][k].DP[j] {
					d[x] += v
				}
			}
		}
	}
}

// backwardChunk runs chunk k of the steps, SampleRun samples at a time.
func (n *Net) backwardChunk(b *backWork, k int) {
	w := b.w
	b0, b1 := k*GradChunk, min((k+1)*GradChunk, b.B)
	for s := b0; s < b1; s += SampleRun {
		e := min(s+SampleRun, b1)
		for q := range b.steps {
			st := &b.steps[q]
			c := &w.calls[st.i]
			if st.from != DenseGrad {
				n.densifyRange(st, c.DY, s, e)
			}
			cc := &w.chunks[st.i][k]
			cutCall(cc, c, s, e)
			st.fn(cc)
			n.addInputs(w, st.i, b.B, b.dx, s, e, cc.DX)
		}
	}
}
