package nn

import (
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// Backward propagates dOut (the gradient of a scalar with respect to the
// logits of the last Forward, B*Classes values) back through the network.
// If dParams is not nil, the parameter gradients are ADDED to it (buffers
// get none). If dX is not nil, the input gradient is written to it.
func (n *Net) Backward(ws *Workspace, p, dOut, dParams, dX []float32) {
	g := n.backward(ws, p, dOut, dParams, -1, dX != nil)
	if dX != nil {
		copy(dX, g[:ws.b*n.in.Size()])
	}
}

// backward runs layers L-1 .. stop+1 and returns the gradient with respect
// to the output of layer stop (the input when stop == -1; nil if needInput
// is false and stop == -1). Like the forward pass it runs sample by sample
// between train-mode batchnorm layers, whose batch sums of dy and dy*xhat
// are combined in sample order. Inside such a run a sample's gradients
// live in its chunk's scratch; the gradient with respect to the output of
// a run's first and last layer is in ws.g (see batchGrad).
func (n *Net) backward(ws *Workspace, p, dOut, dParams []float32, stop int, needInput bool) []float32 {
	b := ws.b
	L := len(n.arch.Layers)
	if len(dOut) != b*n.Classes() {
		panic(fmt.Sprintf("nn: output gradient of length %d, want %d", len(dOut), b*n.Classes()))
	}
	if dParams != nil {
		if len(dParams) != n.layout.Size {
			panic(fmt.Sprintf("nn: gradient vector of length %d, want %d", len(dParams), n.layout.Size))
		}
		nch := (b + chunkSize - 1) / chunkSize
		for c := 0; c < nch; c++ {
			if ws.cgrad[c] == nil {
				ws.cgrad[c] = make([]float32, n.layout.Size)
			} else {
				clear(ws.cgrad[c])
			}
		}
	}
	k := n.Classes()
	for s := 0; s < b; s++ {
		copy(n.batchGrad(ws, L-1, s), dOut[s*k:(s+1)*k])
		ws.supAt[s] = noSup
	}
	t := ws.setStage(n, p, dParams, true)
	t.hi, t.stop, t.needInput = L-1, stop, needInput
	for j := L - 1; j > stop; j-- {
		if n.trainBN(ws, j) {
			t.lo, t.bn = j, j
			n.run(t)
			n.bnReduceGrad(ws, p, dParams, j)
			t.hi = j
		}
	}
	t.lo, t.bn = stop, -1
	n.run(t)
	t.p, t.dParams = nil, nil
	if dParams != nil {
		nch := (b + chunkSize - 1) / chunkSize
		for c := 0; c < nch; c++ {
			for j, v := range ws.cgrad[c] {
				dParams[j] += v
			}
		}
		// Eval-mode batchnorm: gamma and beta gradients from the
		// per-sample sums, in sample order.
		for i := L - 1; i > stop; i-- {
			if n.defs[i].batchStats && !ws.train {
				n.bnReduceGrad(ws, p, dParams, i)
			}
		}
	}
	if stop < 0 && !needInput {
		return nil
	}
	// Pack the samples: moving each down in sample order never overwrites
	// one still to move.
	g := ws.g[(L-1-stop)&1]
	sz := n.in.Size()
	if stop >= 0 {
		sz = n.shapes[stop].Size()
	}
	for s := 1; s < b; s++ {
		copy(g[s*sz:(s+1)*sz], g[s*ws.gs:s*ws.gs+sz])
	}
	return g[:b*sz]
}

// batchGrad is sample s's slot for the gradient with respect to the output
// of layer i (the input when i == -1) in the batch buffers: in
// ws.g[(L-1-i)&1] at s*ws.gs. A run reads its first gradient and writes its
// last in different buffers, or in the same one after its last read.
func (n *Net) batchGrad(ws *Workspace, i, s int) []float32 {
	sz := n.in.Size()
	if i >= 0 {
		sz = n.shapes[i].Size()
	}
	return ws.g[(len(n.arch.Layers)-1-i)&1][s*ws.gs : s*ws.gs+sz]
}

// backwardRun propagates sample s's gradient from the output of layer hi to
// the output of layer lo, both in the batch buffers, through layers
// hi..lo+1; the gradients in between alternate between chunk c's two
// scratch buffers.
func (n *Net) backwardRun(ws *Workspace, p, dParams []float32, hi, lo, s, c, stop int, needInput bool) {
	if hi == lo {
		return
	}
	cur := n.batchGrad(ws, hi, s)
	side := 0
	for i := hi; i > lo; i-- {
		var din []float32
		switch {
		case i == 0 && !needInput:
		case i-1 == lo:
			din = n.batchGrad(ws, lo, s)
		default:
			din = ws.gscr[c][side][:n.ins[i].Size()]
		}
		if !n.backwardSample(ws, p, dParams, i, s, c, stop, cur, din) || din == nil {
			continue
		}
		cur = din
		if i-1 != lo {
			side ^= 1
		}
	}
	if ws.supAt[s] == lo {
		n.densify(ws, lo, s, cur)
	}
}

// sparseChain reports whether layer i (a ReLU or global max pool) is part
// of a conv -> ReLU* -> global max pool chain whose conv the backward pass
// down to layer stop also runs: the conv then reads the pool's gradient
// directly (sparseConvBackward) and the chain's dense gradients, which
// nothing else reads, are not formed.
func (n *Net) sparseChain(i, stop int) bool {
	return !n.dense && n.chainConv[i] > stop
}

// backwardSample propagates the gradient dout of sample s through layer i
// into din (nil: not needed), adding parameter gradients to chunk c's
// buffer. It reports whether it wrote din: the layers of a sparse chain
// leave it to the chain's conv, which gets the pool's output gradient.
func (n *Net) backwardSample(ws *Workspace, p, dParams []float32, i, s, c, stop int, dout, din []float32) bool {
	d := n.defs[i]
	if d.fastBackward != nil {
		if done, wrote := d.fastBackward(n, ws, p, dParams, i, s, c, stop, dout, din); done {
			return wrote
		}
	}
	if ws.supAt[s] == i {
		n.densify(ws, i, s, dout)
	}
	d.backward(n, ws, p, dParams, i, s, c, dout, din)
	return true
}

// sparseConvBackward is convBackward for conv layer i of sample s when a
// global max pool g follows it through ReLUs; dg is the pool's output
// gradient. The output gradient of channel o is v_o at t_o = idx_g[o]
// alone, with v_o = dg[o] (0 where a ReLU output at t_o is <= 0), so
//
//	gb[o] += v_o,  gw[o,i,k] += v_o x[i,t_o+k],  dx[i,t_o+k] += sum_o w[o,i,k] v_o.
//
// The parameter gradients are the dense sums' (every other term is an
// exact zero); dx can differ from the dense kernels' in the last bit (no
// fused multiply-add). dx is written at the steps t_o+k only and recorded
// as sparse.
func (n *Net) sparseConvBackward(ws *Workspace, p, dParams []float32, i, s, c int, dg, dx []float32) {
	l := n.arch.Layers[i]
	g := n.gmpChain[i]
	is, os := n.ins[i], n.shapes[i]
	Cin, Tin, K, O := is.C, is.T, l.Kernel, l.Out
	o := n.offs[i]
	w := p[o.w : o.w+O*Cin*K]
	x := n.input(ws, i, s)
	dg = dg[:O]
	idx := ws.idx[g][s*O : (s+1)*O]
	var gw, gb []float32
	if dParams != nil {
		gw = ws.cgrad[c][o.w : o.w+len(w)]
		gb = ws.cgrad[c][o.b : o.b+O]
	}
	osz := os.Size()
	// v_o, kept in the scratch; the positions t_o with v_o != 0 in sup2.
	vs := ws.scr[c][:O]
	ts := ws.sup2[s][:0]
	for oc := 0; oc < O; oc++ {
		t := int(idx[oc])
		v := dg[oc]
		for r := i + 1; r < g; r++ {
			if ws.acts[r][s*osz+oc*os.T+t] <= 0 {
				v = 0
			}
		}
		vs[oc] = v
		if v != 0 {
			ts = append(ts, int32(t))
		}
	}
	if dx != nil {
		// dx is nonzero only at t_o+k: record those steps and clear them.
		dx = dx[:Cin*Tin]
		sortInt32(ts)
		sup := expand(ws.sup[s], ts, K)
		ws.sup[s], ws.supAt[s] = sup, i-1
		for ci := 0; ci < Cin; ci++ {
			row := dx[ci*Tin : (ci+1)*Tin]
			for _, u := range sup {
				row[u] = 0
			}
		}
	}
	for oc := 0; oc < O; oc++ {
		t := int(idx[oc])
		v := vs[oc]
		if v == 0 {
			continue
		}
		wo := w[oc*Cin*K : (oc+1)*Cin*K]
		if gb != nil {
			gb[oc] += v
			gwo := gw[oc*Cin*K : (oc+1)*Cin*K]
			for ci := 0; ci < Cin; ci++ {
				xr := x[ci*Tin+t : ci*Tin+t+K]
				gr := gwo[ci*K : (ci+1)*K]
				if K == 3 {
					gr, xr = gr[:3], xr[:3]
					gr[0] += v * xr[0]
					gr[1] += v * xr[1]
					gr[2] += v * xr[2]
					continue
				}
				for k, xv := range xr {
					gr[k] += v * xv
				}
			}
		}
		if dx != nil {
			for ci := 0; ci < Cin; ci++ {
				dr := dx[ci*Tin+t : ci*Tin+t+K]
				wr := wo[ci*K : (ci+1)*K]
				if K == 3 {
					dr, wr = dr[:3], wr[:3]
					dr[0] += wr[0] * v
					dr[1] += wr[1] * v
					dr[2] += wr[2] * v
					continue
				}
				for k, wv := range wr {
					dr[k] += wv * v
				}
			}
		}
	}
}

// copyWin copies a short window element by element (a copy call costs
// more than the few elements).
func copyWin(dst, src []float32) {
	dst = dst[:len(src)]
	for k, v := range src {
		dst[k] = v
	}
}

// sortInt32 sorts a short slice in place (insertion sort).
func sortInt32(a []int32) {
	for i := 1; i < len(a); i++ {
		v, j := a[i], i
		for ; j > 0 && a[j-1] > v; j-- {
			a[j] = a[j-1]
		}
		a[j] = v
	}
}

// expand writes to dst[:0] the distinct steps t+k, t in src (sorted), k < K,
// in increasing order, and returns them.
func expand(dst, src []int32, K int) []int32 {
	dst = dst[:0]
	last := int32(-1)
	for _, t := range src {
		for u := t; u < t+int32(K); u++ {
			if u > last {
				dst = append(dst, u)
				last = u
			}
		}
	}
	return dst
}

// densify zeroes g, sample s's gradient with respect to the output of layer
// i (the input when i == -1), outside its support, making it an ordinary
// dense gradient.
func (n *Net) densify(ws *Workspace, i, s int, g []float32) {
	sh := n.in
	if i >= 0 {
		sh = n.shapes[i]
	}
	sup := ws.sup[s]
	for c := 0; c < sh.C; c++ {
		row := g[c*sh.T : (c+1)*sh.T]
		prev := 0
		for _, u := range sup {
			clear(row[prev:u])
			prev = int(u) + 1
		}
		clear(row[prev:])
	}
	ws.supAt[s] = noSup
}

// supportReluBackward is the ReLU backward of layer i on the support of its
// output gradient: din = dout where out > 0 (or NaN), at those steps only.
func (n *Net) supportReluBackward(ws *Workspace, i, s int, dout, din []float32) {
	sh := n.shapes[i]
	sz := sh.Size()
	out := ws.acts[i][s*sz : (s+1)*sz]
	for c := 0; c < sh.C; c++ {
		r := c * sh.T
		o, g, d := out[r:r+sh.T], dout[r:r+sh.T], din[r:r+sh.T]
		for _, u := range ws.sup[s] {
			d[u] = math.Float32frombits(math.Float32bits(g[u]) & reluPass(o[u]))
		}
	}
	ws.supAt[s] = i - 1
}

// reluPass is all ones when a ReLU output y passes the gradient (y > 0 or
// NaN: not y <= 0), else 0; branchless, as ReLU signs are unpredictable.
func reluPass(y float32) uint32 {
	b := math.Float32bits(y)
	a := b & 0x7fffffff
	nz := uint32(-int32(a)) >> 31                   // a != 0
	nan := uint32(int32(0x7f800000)-int32(a)) >> 31 // a > inf bits
	return -(nz&(b>>31^1) | nan)
}

// supportConvBackward is convBackward for conv layer i of sample s when its
// output gradient dy is zero outside the np steps P = sup[s]:
//
//	gb[o] += sum_{t in P} dy[o,t],  gw[o,i,k] += sum_{t in P} dy[o,t] x[i,t+k],
//	dx[i,t+k] = sum_{t in P} sum_o w[o,i,k] dy[o,t].
//
// The columns dy[:,t] and windows x[:,t:t+K] are gathered row by row into
// compact np x O and np x CK matrices (CK = C*K); then, step by step, a
// rank-1 update of the sample's weight gradient and the window of dx as the
// product of the column with the weights; the windows are added into dx row
// by row. dx is then valid on P+{0..K-1}. Used when 4 np <= T_out, which
// bounds the scratch (NewWorkspace).
func (n *Net) supportConvBackward(ws *Workspace, p, dParams []float32, i, s, c int, dy, dx []float32) {
	l := n.arch.Layers[i]
	is, os := n.ins[i], n.shapes[i]
	Cin, Tin, K, O, Tout := is.C, is.T, l.Kernel, l.Out, os.T
	ck := Cin * K
	o := n.offs[i]
	w := p[o.w : o.w+O*ck]
	x := n.input(ws, i, s)
	dy = dy[:O*Tout]
	P := ws.sup[s]
	np := len(P)
	scr := ws.scr[c]
	G, scr := scr[:O*ck], scr[O*ck:]
	bs, scr := scr[:O], scr[O:]
	DY, scr := scr[:np*O], scr[np*O:]
	XW, DX := scr[:np*ck], scr[np*ck:np*ck+np*ck]
	for oc := 0; oc < O; oc++ {
		row := dy[oc*Tout : (oc+1)*Tout]
		for j, u := range P {
			DY[j*O+oc] = row[u]
		}
	}
	if dParams != nil {
		clear(G)
		clear(bs)
		for ci := 0; ci < Cin; ci++ {
			row := x[ci*Tin : (ci+1)*Tin]
			if K == 3 {
				for j, u := range P {
					xw := XW[j*ck+ci*3 : j*ck+ci*3+3]
					xw[0], xw[1], xw[2] = row[u], row[u+1], row[u+2]
				}
				continue
			}
			for j, u := range P {
				copyWin(XW[j*ck+ci*K:j*ck+(ci+1)*K], row[u:int(u)+K])
			}
		}
		for j := 0; j < np; j++ {
			dyv := DY[j*O : (j+1)*O]
			for oc, v := range dyv {
				bs[oc] += v
			}
			kern.Ger(G, ck, dyv, XW[j*ck:(j+1)*ck])
		}
		gw := ws.cgrad[c][o.w : o.w+O*ck]
		gb := ws.cgrad[c][o.b : o.b+O]
		for j, v := range G {
			gw[j] += v
		}
		for oc, v := range bs {
			gb[oc] += v
		}
	}
	if dx == nil {
		ws.supAt[s] = noSup
		return
	}
	for j := 0; j < np; j++ {
		kern.GemvT(DX[j*ck:(j+1)*ck], w, ck, DY[j*O:(j+1)*O])
	}
	dx = dx[:Cin*Tin]
	sup := expand(ws.sup2[s], P, K)
	for ci := 0; ci < Cin; ci++ {
		row := dx[ci*Tin : (ci+1)*Tin]
		for _, u := range sup {
			row[u] = 0
		}
		if K == 3 {
			for j, u := range P {
				dw := DX[j*ck+ci*3 : j*ck+ci*3+3]
				win := row[u : u+3]
				win[0] += dw[0]
				win[1] += dw[1]
				win[2] += dw[2]
			}
			continue
		}
		for j, u := range P {
			win := row[u : int(u)+K]
			for k, v := range DX[j*ck+ci*K : j*ck+(ci+1)*K] {
				win[k] += v
			}
		}
	}
	ws.sup[s], ws.sup2[s] = sup, ws.sup[s]
	ws.supAt[s] = i - 1
}

// convBackward for one sample: gb[o] += sum_t dy[o,t];
// gw[o,i,k] += sum_t dy[o,t] x[i,t+k]; dx[i,s] = sum_o sum_k w[o,i,k] dy[o,s-k]
// (dx is overwritten; gw, gb and dx may be nil).
func convBackward(dx, gw, gb, dy, x, w []float32, cin, tin, cout, k int) {
	tout := tin - k + 1
	if gb != nil {
		for o := 0; o < cout; o++ {
			gb[o] += kern.Sum(dy[o*tout : (o+1)*tout])
		}
	}
	if gw != nil {
		kern.ConvMultiGradW(gw, dy, tout, x, tin, cout, cin, k, tout)
	}
	if dx != nil {
		clear(dx)
		kern.ConvMultiGradX(dx, tin, dy, tout, w, cout, cin, k, tout)
	}
}

// denseBackward: gb[o] += dy[o]; gw[o,i] += dy[o] x[i]; dx[i] = sum_o w[o,i] dy[o].
func denseBackward(dx, gw, gb, dy, x, w []float32) {
	nin := len(x)
	if gb != nil {
		for o, d := range dy {
			gb[o] += d
		}
	}
	if gw != nil {
		kern.Ger(gw, nin, dy, x)
	}
	if dx != nil {
		kern.GemvT(dx, w, nin, dy)
	}
}

// reluBackward: din[j] = dout[j] if out[j] > 0, else 0, where out = max(u, 0)
// holds +0 or a positive number.
func reluBackward(din, dout, out []float32) { kern.ReluGrad(din, dout, out) }
