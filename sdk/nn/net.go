package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// BNEps is the batchnorm epsilon (PyTorch's default).
const BNEps = 1e-5

// BNMomentum is the batchnorm running-statistics momentum (PyTorch's default).
const BNMomentum = 0.1

// chunkSize is the number of samples one task of the worker pool handles.
// Per-sample work inside a chunk, and the reduction of chunk results, run
// in a fixed order, so results do not depend on the number of workers.
const chunkSize = 8

// Net executes an architecture on batches. It holds no parameters: every
// call takes the flat parameter vector, so one Net serves every draw of a
// posterior. A Net is safe for concurrent use with separate Workspaces.
type Net struct {
	arch   Arch
	layout *Layout
	in     Shape
	shapes []Shape
	ins    []Shape // input shape of each layer
	offs   []layerOffs
	// Workers is the number of goroutines a call may use (0: GOMAXPROCS).
	Workers int
}

type layerOffs struct{ w, b, rm, rv int }

// NewNet validates the architecture and prepares its execution.
func NewNet(a Arch) (*Net, error) {
	shapes, err := a.Shapes()
	if err != nil {
		return nil, err
	}
	lay, err := NewLayout(a)
	if err != nil {
		return nil, err
	}
	n := &Net{arch: a, layout: lay, in: Shape{a.InChannels, a.InLen}, shapes: shapes}
	n.ins = make([]Shape, len(a.Layers))
	n.offs = make([]layerOffs, len(a.Layers))
	cur := n.in
	for i, l := range a.Layers {
		n.ins[i] = cur
		o := layerOffs{-1, -1, -1, -1}
		get := func(s string) int {
			t, ok := lay.Lookup(l.Name + "." + s)
			if !ok {
				panic("nn: layout lacks " + l.Name + "." + s)
			}
			return t.Offset
		}
		switch l.Kind {
		case KindConv1D, KindDense:
			o.w, o.b = get("weight"), get("bias")
		case KindBatchNorm1D:
			o.w, o.b, o.rm, o.rv = get("weight"), get("bias"), get("running_mean"), get("running_var")
		}
		n.offs[i] = o
		cur = shapes[i]
	}
	return n, nil
}

// Arch returns the architecture.
func (n *Net) Arch() Arch { return n.arch }

// Layout returns the parameter layout.
func (n *Net) Layout() *Layout { return n.layout }

// InputLen is the length of one input, InChannels*InLen.
func (n *Net) InputLen() int { return n.in.Size() }

// Classes is the number of logits.
func (n *Net) Classes() int { return n.shapes[len(n.shapes)-1].C }

// LayerIndex returns the index of the layer called name.
func (n *Net) LayerIndex(name string) (int, error) {
	var known []string
	for i, l := range n.arch.Layers {
		if l.Name == name && name != "" {
			return i, nil
		}
		if l.Name != "" {
			known = append(known, l.Name)
		}
	}
	return -1, fmt.Errorf("arch %q has no layer %q (named layers: %v)", n.arch.Name, name, known)
}

// OutShape is the per-sample output shape of layer i.
func (n *Net) OutShape(i int) Shape { return n.shapes[i] }

func (n *Net) workers() int {
	if n.Workers > 0 {
		return n.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// Workspace holds the activations of one batch for the backward pass. It
// belongs to one goroutine at a time.
type Workspace struct {
	net   *Net
	cap   int
	b     int // current batch size
	train bool
	x     []float32
	acts  [][]float32
	xhat  [][]float32 // batchnorm: normalised input
	idx   [][]int32   // pooling: argmax position in the input
	mask  [][]float32 // dropout: 0 or 1/(1-p)
	mean  [][]float64 // batchnorm: per-channel mean used
	istd  [][]float64 // batchnorm: per-channel 1/sqrt(var+eps) used
	g0    []float32
	g1    []float32
	cgrad [][]float32 // per-chunk parameter gradients
	csum  [][]float64 // per-chunk reduction scratch (2*C values)
}

// NewWorkspace allocates the buffers for batches of up to capacity samples.
func (n *Net) NewWorkspace(capacity int) *Workspace {
	if capacity < 1 {
		panic("nn: workspace capacity must be >= 1")
	}
	ws := &Workspace{net: n, cap: capacity}
	L := len(n.arch.Layers)
	ws.acts = make([][]float32, L)
	ws.xhat = make([][]float32, L)
	ws.idx = make([][]int32, L)
	ws.mask = make([][]float32, L)
	ws.mean = make([][]float64, L)
	ws.istd = make([][]float64, L)
	maxSize := n.in.Size()
	maxC := 1
	for i, l := range n.arch.Layers {
		s := n.shapes[i].Size()
		if s > maxSize {
			maxSize = s
		}
		ws.acts[i] = make([]float32, capacity*s)
		switch l.Kind {
		case KindBatchNorm1D:
			ws.xhat[i] = make([]float32, capacity*s)
			ws.mean[i] = make([]float64, n.ins[i].C)
			ws.istd[i] = make([]float64, n.ins[i].C)
			if n.ins[i].C > maxC {
				maxC = n.ins[i].C
			}
		case KindMaxPool1D, KindGlobalMaxPool:
			ws.idx[i] = make([]int32, capacity*s)
		case KindDropout:
			ws.mask[i] = make([]float32, capacity*s)
		}
	}
	ws.g0 = make([]float32, capacity*maxSize)
	ws.g1 = make([]float32, capacity*maxSize)
	nch := (capacity + chunkSize - 1) / chunkSize
	ws.cgrad = make([][]float32, nch)
	ws.csum = make([][]float64, nch)
	for c := range ws.cgrad {
		ws.csum[c] = make([]float64, 2*maxC)
	}
	return ws
}

// Cap is the largest batch the workspace holds.
func (ws *Workspace) Cap() int { return ws.cap }

// Act returns the output of layer i for the current batch, (B, C, T).
func (ws *Workspace) Act(i int) []float32 { return ws.acts[i][:ws.b*ws.net.shapes[i].Size()] }

// Logits returns the output of the last layer for the current batch.
func (ws *Workspace) Logits() []float32 { return ws.Act(len(ws.acts) - 1) }

// parallel runs fn over the fixed chunks of a batch of b samples.
func (n *Net) parallel(b int, fn func(c, b0, b1 int)) {
	nch := (b + chunkSize - 1) / chunkSize
	w := n.workers()
	if w > nch {
		w = nch
	}
	if w <= 1 {
		for c := 0; c < nch; c++ {
			fn(c, c*chunkSize, min((c+1)*chunkSize, b))
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(w)
	for range w {
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= nch {
					return
				}
				fn(c, c*chunkSize, min((c+1)*chunkSize, b))
			}
		}()
	}
	wg.Wait()
}

// Forward runs the network on a batch x of b = len(x)/InputLen() samples.
// In train mode batchnorm uses batch statistics and updates the running
// statistics in p (momentum 0.1, unbiased variance), and dropout draws its
// masks from rnd (which may be nil when the architecture has no dropout).
// In eval mode batchnorm uses the running statistics and dropout is the
// identity. The logits are ws.Logits().
func (n *Net) Forward(ws *Workspace, p, x []float32, train bool, rnd *rand.Rand) {
	n.forward(ws, p, x, train, rnd, len(n.arch.Layers)-1)
}

// forward runs layers 0..last.
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
	in := x
	for i := 0; i <= last; i++ {
		l := n.arch.Layers[i]
		is, os := n.ins[i], n.shapes[i]
		out := ws.acts[i][:b*os.Size()]
		o := n.offs[i]
		switch l.Kind {
		case KindConv1D:
			w, bias := p[o.w:o.w+l.Out*is.C*l.Kernel], p[o.b:o.b+l.Out]
			n.parallel(b, func(_, b0, b1 int) {
				for s := b0; s < b1; s++ {
					convForward(out[s*os.Size():(s+1)*os.Size()], in[s*is.Size():(s+1)*is.Size()], w, bias, is.C, is.T, l.Out, l.Kernel)
				}
			})
		case KindDense:
			w, bias := p[o.w:o.w+l.Out*is.C], p[o.b:o.b+l.Out]
			n.parallel(b, func(_, b0, b1 int) {
				for s := b0; s < b1; s++ {
					denseForward(out[s*l.Out:(s+1)*l.Out], in[s*is.C:(s+1)*is.C], w, bias)
				}
			})
		case KindReLU:
			n.parallel(b, func(_, b0, b1 int) {
				sz := os.Size()
				o := out[b0*sz : b1*sz]
				copy(o, in[b0*sz:b1*sz])
				kern.ReluInPlace(o)
			})
		case KindMaxPool1D:
			idx := ws.idx[i]
			n.parallel(b, func(_, b0, b1 int) {
				for s := b0; s < b1; s++ {
					for c := 0; c < is.C; c++ {
						r := s*is.Size() + c*is.T
						q := s*os.Size() + c*os.T
						maxPoolForward(out[q:q+os.T], idx[q:q+os.T], in[r:r+is.T], l.Kernel)
					}
				}
			})
		case KindGlobalMaxPool:
			idx := ws.idx[i]
			n.parallel(b, func(_, b0, b1 int) {
				for s := b0; s < b1; s++ {
					for c := 0; c < is.C; c++ {
						r := s*is.Size() + c*is.T
						maxPoolForward(out[s*is.C+c:s*is.C+c+1], idx[s*is.C+c:s*is.C+c+1], in[r:r+is.T], is.T)
					}
				}
			})
		case KindBatchNorm1D:
			n.bnForward(ws, i, p, in, out, train)
		case KindFlatten:
			copy(out, in[:len(out)])
		case KindDropout:
			if !train || l.P == 0 {
				copy(out, in[:len(out)])
				break
			}
			if rnd == nil {
				panic("nn: train-mode forward with dropout needs a random source")
			}
			m := ws.mask[i][:len(out)]
			keep := float32(1 / (1 - l.P))
			for j := range m {
				if rnd.Float64() < l.P {
					m[j] = 0
				} else {
					m[j] = keep
				}
			}
			for j := range out {
				out[j] = in[j] * m[j]
			}
		default:
			panic("nn: unknown layer kind " + string(l.Kind))
		}
		in = out
	}
}

// bnForward: y = (x - mu_c) * istd_c * gamma_c + beta_c, with (mu, 1/istd^2 - eps)
// the batch mean and biased variance over (batch, time) in train mode, or the
// running statistics in eval mode. Train mode also updates
// running_mean <- (1-m) running_mean + m mu and
// running_var <- (1-m) running_var + m s2 n/(n-1).
func (n *Net) bnForward(ws *Workspace, i int, p, in, out []float32, train bool) {
	is := n.ins[i]
	o := n.offs[i]
	b := ws.b
	C, T := is.C, is.T
	gamma, beta := p[o.w:o.w+C], p[o.b:o.b+C]
	rm, rv := p[o.rm:o.rm+C], p[o.rv:o.rv+C]
	mean, istd := ws.mean[i], ws.istd[i]
	if train {
		nch := (b + chunkSize - 1) / chunkSize
		// Pass 1: per-chunk sums, reduced in chunk order.
		n.parallel(b, func(c, b0, b1 int) {
			acc := ws.csum[c][:C]
			clear(acc)
			for s := b0; s < b1; s++ {
				for ch := 0; ch < C; ch++ {
					var sum float64
					for _, v := range in[s*C*T+ch*T : s*C*T+(ch+1)*T] {
						sum += float64(v)
					}
					acc[ch] += sum
				}
			}
		})
		cnt := float64(b * T)
		for ch := 0; ch < C; ch++ {
			var sum float64
			for c := 0; c < nch; c++ {
				sum += ws.csum[c][ch]
			}
			mean[ch] = sum / cnt
		}
		// Pass 2: centred sums of squares.
		n.parallel(b, func(c, b0, b1 int) {
			acc := ws.csum[c][:C]
			clear(acc)
			for s := b0; s < b1; s++ {
				for ch := 0; ch < C; ch++ {
					mu := mean[ch]
					var sum float64
					for _, v := range in[s*C*T+ch*T : s*C*T+(ch+1)*T] {
						d := float64(v) - mu
						sum += d * d
					}
					acc[ch] += sum
				}
			}
		})
		for ch := 0; ch < C; ch++ {
			var ss float64
			for c := 0; c < nch; c++ {
				ss += ws.csum[c][ch]
			}
			v := ss / cnt
			istd[ch] = 1 / math.Sqrt(v+BNEps)
			unb := v
			if cnt > 1 {
				unb = ss / (cnt - 1)
			}
			rm[ch] = float32((1-BNMomentum)*float64(rm[ch]) + BNMomentum*mean[ch])
			rv[ch] = float32((1-BNMomentum)*float64(rv[ch]) + BNMomentum*unb)
		}
	} else {
		for ch := 0; ch < C; ch++ {
			mean[ch] = float64(rm[ch])
			istd[ch] = 1 / math.Sqrt(float64(rv[ch])+BNEps)
		}
	}
	xh := ws.xhat[i]
	n.parallel(b, func(_, b0, b1 int) {
		for s := b0; s < b1; s++ {
			for ch := 0; ch < C; ch++ {
				mu, is := mean[ch], istd[ch]
				g, bt := float64(gamma[ch]), float64(beta[ch])
				r := s*C*T + ch*T
				for t := r; t < r+T; t++ {
					h := (float64(in[t]) - mu) * is
					xh[t] = float32(h)
					out[t] = float32(h*g + bt)
				}
			}
		}
	})
}

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
// is false and stop == -1).
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
	cur, nxt := ws.g0, ws.g1
	copy(cur, dOut)
	for i := L - 1; i > stop; i-- {
		l := n.arch.Layers[i]
		is, os := n.ins[i], n.shapes[i]
		var in []float32
		if i == 0 {
			in = ws.x
		} else {
			in = ws.acts[i-1]
		}
		needDin := i > 0 || needInput
		dout := cur[:b*os.Size()]
		din := nxt[:b*is.Size()]
		o := n.offs[i]
		switch l.Kind {
		case KindConv1D:
			w := p[o.w : o.w+l.Out*is.C*l.Kernel]
			n.parallel(b, func(c, b0, b1 int) {
				var gw, gb []float32
				if dParams != nil {
					gw = ws.cgrad[c][o.w : o.w+len(w)]
					gb = ws.cgrad[c][o.b : o.b+l.Out]
				}
				for s := b0; s < b1; s++ {
					var di []float32
					if needDin {
						di = din[s*is.Size() : (s+1)*is.Size()]
					}
					convBackward(di, gw, gb, dout[s*os.Size():(s+1)*os.Size()], in[s*is.Size():(s+1)*is.Size()], w, is.C, is.T, l.Out, l.Kernel)
				}
			})
		case KindDense:
			w := p[o.w : o.w+l.Out*is.C]
			n.parallel(b, func(c, b0, b1 int) {
				var gw, gb []float32
				if dParams != nil {
					gw = ws.cgrad[c][o.w : o.w+len(w)]
					gb = ws.cgrad[c][o.b : o.b+l.Out]
				}
				for s := b0; s < b1; s++ {
					var di []float32
					if needDin {
						di = din[s*is.C : (s+1)*is.C]
					}
					denseBackward(di, gw, gb, dout[s*l.Out:(s+1)*l.Out], in[s*is.C:(s+1)*is.C], w)
				}
			})
		case KindReLU:
			out := ws.acts[i]
			n.parallel(b, func(_, b0, b1 int) {
				sz := os.Size()
				reluBackward(din[b0*sz:b1*sz], dout[b0*sz:b1*sz], out[b0*sz:b1*sz])
			})
		case KindMaxPool1D, KindGlobalMaxPool:
			idx := ws.idx[i]
			n.parallel(b, func(_, b0, b1 int) {
				clear(din[b0*is.Size() : b1*is.Size()])
				for s := b0; s < b1; s++ {
					for c := 0; c < os.C; c++ {
						q := s*os.Size() + c*os.T
						r := s*is.Size() + c*is.T
						for t := 0; t < os.T; t++ {
							din[r+int(idx[q+t])] += dout[q+t]
						}
					}
				}
			})
		case KindBatchNorm1D:
			n.bnBackward(ws, i, p, dout, din, dParams)
		case KindFlatten:
			copy(din, dout)
		case KindDropout:
			if !ws.train || l.P == 0 {
				copy(din, dout)
				break
			}
			m := ws.mask[i]
			for j := range din {
				din[j] = dout[j] * m[j]
			}
		}
		cur, nxt = nxt, cur
	}
	if dParams != nil {
		nch := (b + chunkSize - 1) / chunkSize
		for c := 0; c < nch; c++ {
			for j, v := range ws.cgrad[c] {
				dParams[j] += v
			}
		}
	}
	if stop >= 0 {
		return cur[:b*n.shapes[stop].Size()]
	}
	if !needInput {
		return nil
	}
	return cur[:b*n.in.Size()]
}

// bnBackward. Eval mode: dx = dy gamma istd. Train mode (batch statistics):
// dx = gamma istd (dy - mean(dy) - xhat mean(dy xhat)), means over (batch,
// time) per channel. In both modes dgamma = sum dy xhat, dbeta = sum dy.
func (n *Net) bnBackward(ws *Workspace, i int, p, dout, din, dParams []float32) {
	is := n.ins[i]
	o := n.offs[i]
	b := ws.b
	C, T := is.C, is.T
	gamma := p[o.w : o.w+C]
	xh := ws.xhat[i]
	istd := ws.istd[i]
	nch := (b + chunkSize - 1) / chunkSize
	n.parallel(b, func(c, b0, b1 int) {
		acc := ws.csum[c][:2*C]
		clear(acc)
		for s := b0; s < b1; s++ {
			for ch := 0; ch < C; ch++ {
				r := s*C*T + ch*T
				var sd, sdx float64
				for t := r; t < r+T; t++ {
					d := float64(dout[t])
					sd += d
					sdx += d * float64(xh[t])
				}
				acc[ch] += sd
				acc[C+ch] += sdx
			}
		}
	})
	// Reduce in chunk order into chunk 0's slot.
	sum := ws.csum[0][:2*C]
	for c := 1; c < nch; c++ {
		for j := range sum {
			sum[j] += ws.csum[c][j]
		}
	}
	if dParams != nil {
		g0 := ws.cgrad[0]
		for ch := 0; ch < C; ch++ {
			g0[o.w+ch] += float32(sum[C+ch])
			g0[o.b+ch] += float32(sum[ch])
		}
	}
	cnt := float64(b * T)
	train := ws.train
	n.parallel(b, func(_, b0, b1 int) {
		for s := b0; s < b1; s++ {
			for ch := 0; ch < C; ch++ {
				k := float64(gamma[ch]) * istd[ch]
				r := s*C*T + ch*T
				if !train {
					kf := float32(k)
					for t := r; t < r+T; t++ {
						din[t] = dout[t] * kf
					}
					continue
				}
				md, mdx := sum[ch]/cnt, sum[C+ch]/cnt
				for t := r; t < r+T; t++ {
					din[t] = float32(k * (float64(dout[t]) - md - float64(xh[t])*mdx))
				}
			}
		}
	})
}

// convForward: out[o,t] = bias[o] + sum_i sum_k w[o,i,k] x[i,t+k] for one
// sample, x of cin x tin, out of cout x (tin-k+1).
func convForward(out, x, w, bias []float32, cin, tin, cout, k int) {
	tout := tin - k + 1
	for o := 0; o < cout; o++ {
		dst := out[o*tout : (o+1)*tout]
		bo := bias[o]
		for t := range dst {
			dst[t] = bo
		}
	}
	kern.ConvMulti(out, tout, x, tin, w, cout, cin, k, tout)
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

// denseForward: out[o] = bias[o] + sum_i w[o,i] x[i].
func denseForward(out, x, w, bias []float32) {
	nin := len(x)
	for o := range out {
		out[o] = bias[o] + kern.Dot(w[o*nin:(o+1)*nin], x)
	}
}

// denseBackward: gb[o] += dy[o]; gw[o,i] += dy[o] x[i]; dx[i] = sum_o w[o,i] dy[o].
func denseBackward(dx, gw, gb, dy, x, w []float32) {
	nin := len(x)
	if dx != nil {
		clear(dx)
	}
	for o, d := range dy {
		if gb != nil {
			gb[o] += d
		}
		if gw != nil {
			kern.Axpy(gw[o*nin:(o+1)*nin], x, d)
		}
		if dx != nil {
			kern.Axpy(dx, w[o*nin:(o+1)*nin], d)
		}
	}
}

// reluBackward: din[j] = dout[j] if out[j] > 0, else 0, where out = max(u, 0)
// holds +0 or a positive number. Branchless: a ReLU's sign pattern is
// random, so a branch mispredicts often.
func reluBackward(din, dout, out []float32) {
	dout, out = dout[:len(din)], out[:len(din)]
	for j, v := range out {
		x := int32(math.Float32bits(v))
		y := x &^ (x >> 31)   // x when v >= +0, else 0 (so -0 counts as 0)
		m := uint32(-y >> 31) // all ones when v > 0, else 0
		din[j] = math.Float32frombits(math.Float32bits(dout[j]) & m)
	}
}

// maxPoolForward: out[t] = max_{j<k} x[t+j], idx[t] the first maximal j+t
// (PyTorch's tie rule: the gradient goes to the first maximal position).
func maxPoolForward(out []float32, idx []int32, x []float32, k int) {
	for t := range out {
		best, at := x[t], t
		for j := t + 1; j < t+k; j++ {
			if x[j] > best {
				best, at = x[j], j
			}
		}
		out[t], idx[t] = best, int32(at)
	}
}
