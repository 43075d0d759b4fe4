package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// Forward runs the network on a batch x of b = len(x)/InputLen() samples.
// In train mode batchnorm uses batch statistics and updates the running
// statistics in p (momentum 0.1, unbiased variance), and dropout draws its
// masks from rnd (which may be nil when the architecture has no dropout).
// In eval mode batchnorm uses the running statistics and dropout is the
// identity. The logits are ws.Logits().
func (n *Net) Forward(ws *Workspace, p, x []float32, train bool, rnd *rand.Rand) {
	n.forward(ws, p, x, train, rnd, len(n.arch.Layers)-1)
}

// forward runs layers 0..last. Every sample goes through a run of layers
// while its activations are in cache; only train-mode batchnorm needs the
// whole batch, so a run ends at one, with per-sample statistics of its
// input that are then combined in sample order.
func (n *Net) forward(ws *Workspace, p, x []float32, train bool, rnd *rand.Rand, last int) {
	if ws.net != n {
		panic("nn: workspace belongs to another Net")
	}
	if len(p) != n.layout.Size {
		panic(fmt.Sprintf("nn: parameter vector of length %d, arch %q needs %d", len(p), n.arch.Name, n.layout.Size))
	}
	inLen := n.in.Size()
	if len(x)%inLen != 0 {
		panic(fmt.Sprintf("nn: input of length %d is not a multiple of %d", len(x), inLen))
	}
	b := len(x) / inLen
	if b > ws.cap || b == 0 {
		panic(fmt.Sprintf("nn: batch of %d samples, workspace holds 1..%d", b, ws.cap))
	}
	ws.b, ws.train, ws.x = b, train, x
	for i := 0; i <= last; i++ {
		if d := n.defs[i]; d.prepare != nil {
			d.prepare(n, ws, p, i, rnd)
		}
	}
	t := ws.setStage(n, p, nil, false)
	t.lo = 0
	for j := 0; j <= last; j++ {
		if n.trainBN(ws, j) {
			t.hi, t.bn = j, j
			n.run(t)
			n.bnReduceStats(ws, p, j)
			t.lo = j
		}
	}
	t.hi, t.bn = last+1, -1
	n.run(t)
	t.p = nil
}

// forwardSample computes the output of layer i for sample s, and that of a
// ReLU at i+1 < end with it, and returns the next layer to run.
func (n *Net) forwardSample(ws *Workspace, p []float32, i, s, end int) int {
	in := n.input(ws, i, s)
	sz := n.shapes[i].Size()
	return n.defs[i].forward(n, ws, p, i, s, end, in, ws.acts[i][s*sz:(s+1)*sz])
}

// convForward: out[o,t] = bias[o] + sum_i sum_k w[o,i,k] x[i,t+k] for one
// sample, x of cin x tin, out of cout x (tin-k+1), and rel = max(out, 0)
// if rel is not nil; pw is w packed by kern.PackConv.
func convForward(out, rel, x, w, pw, bias []float32, cin, tin, cout, k int) {
	tout := tin - k + 1
	kern.ConvMultiBias(out, rel, tout, x, tin, w, pw, bias, cout, cin, k, tout)
}

// denseForward: out[o] = bias[o] + sum_i w[o,i] x[i].
func denseForward(out, x, w, bias []float32) {
	nin := len(x)
	for o := range out {
		out[o] = bias[o] + kern.Dot(w[o*nin:(o+1)*nin], x)
	}
}
