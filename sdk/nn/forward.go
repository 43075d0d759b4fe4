package nn

import (
	"fmt"
	"math"
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
		l := n.arch.Layers[i]
		switch {
		case l.Kind == KindConv1D:
			o, C := n.offs[i], n.ins[i].C
			kern.PackConv(ws.wpack[i], p[o.w:o.w+l.Out*C*l.Kernel], l.Out, C, l.Kernel)
		case l.Kind == KindBatchNorm1D && !train:
			o, C := n.offs[i], n.ins[i].C
			for ch := 0; ch < C; ch++ {
				ws.mean[i][ch] = float64(p[o.rm+ch])
				ws.istd[i][ch] = 1 / math.Sqrt(float64(p[o.rv+ch])+BNEps)
			}
		case l.Kind == KindDropout && train && l.P > 0:
			// Masks are drawn up front, layer by layer in batch order.
			if rnd == nil {
				panic("nn: train-mode forward with dropout needs a random source")
			}
			m := ws.mask[i][:b*n.shapes[i].Size()]
			keep := float32(1 / (1 - l.P))
			for j := range m {
				if rnd.Float64() < l.P {
					m[j] = 0
				} else {
					m[j] = keep
				}
			}
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
	l := n.arch.Layers[i]
	is, os := n.ins[i], n.shapes[i]
	in := n.input(ws, i, s)
	sz := os.Size()
	out := ws.acts[i][s*sz : (s+1)*sz]
	o := n.offs[i]
	switch l.Kind {
	case KindConv1D:
		w, bias := p[o.w:o.w+l.Out*is.C*l.Kernel], p[o.b:o.b+l.Out]
		var rel []float32
		if i+1 < end && n.arch.Layers[i+1].Kind == KindReLU {
			rel = ws.acts[i+1][s*sz : (s+1)*sz]
		}
		convForward(out, rel, in, w, ws.wpack[i], bias, is.C, is.T, l.Out, l.Kernel)
		if rel != nil {
			return i + 2
		}
	case KindDense:
		w, bias := p[o.w:o.w+l.Out*is.C], p[o.b:o.b+l.Out]
		denseForward(out, in, w, bias)
	case KindReLU:
		kern.Relu(out, in)
	case KindMaxPool1D:
		idx := ws.idx[i][s*sz : (s+1)*sz]
		for c := 0; c < is.C; c++ {
			kern.MaxPool(out[c*os.T:(c+1)*os.T], idx[c*os.T:(c+1)*os.T], in[c*is.T:(c+1)*is.T], l.Kernel)
		}
	case KindGlobalMaxPool:
		idx := ws.idx[i][s*sz : (s+1)*sz]
		for c := 0; c < is.C; c++ {
			v, j := kern.ArgMax(in[c*is.T : (c+1)*is.T])
			out[c], idx[c] = v, int32(j)
		}
	case KindBatchNorm1D:
		n.bnForward(ws, i, p, in, out, s)
	case KindFlatten:
		copy(out, in)
	case KindDropout:
		n.dropout(ws, i, l, s, out, in)
	default:
		panic("nn: unknown layer kind " + string(l.Kind))
	}
	return i + 1
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
