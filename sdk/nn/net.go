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
	// gmpChain[i] is, for a conv1d layer followed by zero or more ReLUs and
	// a global max pool, the index of that pool; -1 otherwise. The output
	// gradient of such a conv has one nonzero per channel and sample.
	gmpChain []int
	dense    bool // tests: no sparse backward
	// Workers is the number of goroutines a call may use (0: GOMAXPROCS):
	// the caller's and Workers-1 helpers from a package-wide pool, started
	// on first use and kept.
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
	n.gmpChain = make([]int, len(a.Layers))
	for i, l := range a.Layers {
		n.gmpChain[i] = -1
		if l.Kind != KindConv1D {
			continue
		}
		g := i + 1
		for g < len(a.Layers) && a.Layers[g].Kind == KindReLU {
			g++
		}
		if g < len(a.Layers) && a.Layers[g].Kind == KindGlobalMaxPool {
			n.gmpChain[i] = g
		}
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
	// batchnorm: per-sample, per-channel statistics (b*C values each): the
	// mean and centred sum of squares of the input (forward), the sums of
	// dy and dy*xhat (backward).
	sa, sb [][]float64
	gk     [][]float32  // batchnorm backward: gamma*istd, mean(dy), mean(dy*xhat) per channel
	wpack  [][]float32  // conv: the weights packed for the batch (kern.PackConv)
	g      [2][]float32 // gradients between runs of layers: sample s at s*gs
	gs     int
	cgrad  [][]float32 // per-chunk parameter gradients
	// Sparse gradients: the output gradient of layer supAt[s] of sample s
	// is valid only at the time steps sup[s] (sorted; zero elsewhere, not
	// yet written there); noSup: none.
	sup, sup2 [][]int32
	supAt     []int
	scr       [][]float32    // per-chunk scratch of the sparse conv backward
	gscr      [][2][]float32 // per-chunk gradients inside a backward run
	st        stage          // the parallel step being run
}

const noSup = -2

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
	ws.sa = make([][]float64, L)
	ws.sb = make([][]float64, L)
	ws.gk = make([][]float32, L)
	ws.wpack = make([][]float32, L)
	maxSize := n.in.Size()
	for i, l := range n.arch.Layers {
		s := n.shapes[i].Size()
		if s > maxSize {
			maxSize = s
		}
		ws.acts[i] = make([]float32, capacity*s)
		switch l.Kind {
		case KindBatchNorm1D:
			C := n.ins[i].C
			ws.xhat[i] = make([]float32, capacity*s)
			ws.mean[i] = make([]float64, C)
			ws.istd[i] = make([]float64, C)
			ws.sa[i] = make([]float64, capacity*C)
			ws.sb[i] = make([]float64, capacity*C)
			ws.gk[i] = make([]float32, 3*C)
		case KindMaxPool1D, KindGlobalMaxPool:
			ws.idx[i] = make([]int32, capacity*s)
		case KindDropout:
			ws.mask[i] = make([]float32, capacity*s)
		case KindConv1D:
			ws.wpack[i] = make([]float32, kern.PackedLen(l.Out, n.ins[i].C, l.Kernel))
		}
	}
	ws.gs = maxSize
	ws.g[0] = make([]float32, capacity*maxSize)
	ws.g[1] = make([]float32, capacity*maxSize)
	nch := (capacity + chunkSize - 1) / chunkSize
	ws.cgrad = make([][]float32, nch)
	supCap, scrLen := n.in.T, 0
	for i, l := range n.arch.Layers {
		supCap = max(supCap, n.shapes[i].T, n.shapes[i].C)
		if l.Kind == KindConv1D {
			// supportConvBackward: G, bs and np <= T/4 rows of DY, XW, DX.
			ck := n.ins[i].C * l.Kernel
			np := n.shapes[i].T / 4
			scrLen = max(scrLen, l.Out*ck+l.Out+np*(l.Out+2*ck))
		}
	}
	ws.sup = make([][]int32, capacity)
	ws.sup2 = make([][]int32, capacity)
	ws.supAt = make([]int, capacity)
	for s := range ws.sup {
		ws.sup[s] = make([]int32, 0, supCap)
		ws.sup2[s] = make([]int32, 0, supCap)
	}
	ws.scr = make([][]float32, nch)
	ws.gscr = make([][2][]float32, nch)
	for c := range ws.scr {
		ws.scr[c] = make([]float32, scrLen)
		ws.gscr[c] = [2][]float32{make([]float32, maxSize), make([]float32, maxSize)}
	}
	return ws
}

// Cap is the largest batch the workspace holds.
func (ws *Workspace) Cap() int { return ws.cap }

// Act returns the output of layer i for the current batch, (B, C, T).
func (ws *Workspace) Act(i int) []float32 { return ws.acts[i][:ws.b*ws.net.shapes[i].Size()] }

// Logits returns the output of the last layer for the current batch.
func (ws *Workspace) Logits() []float32 { return ws.Act(len(ws.acts) - 1) }

// stage is one parallel step of a pass over the fixed chunks of a batch:
// every sample of a chunk runs a run of layers (see sample), the chunks in
// any order on up to Net.Workers goroutines.
type stage struct {
	n          *Net
	ws         *Workspace
	p, dParams []float32
	back       bool
	lo, hi     int // forward: layers lo..hi-1; backward: hi..lo+1
	bn         int // a train-mode batchnorm closing the run (statistics or sums), or -1
	stop       int
	needInput  bool
	nch        int
	next       atomic.Int64
	wg         sync.WaitGroup
}

// sample runs the stage's layers for sample s of chunk c.
func (t *stage) sample(c, s int) {
	n, ws := t.n, t.ws
	if !t.back {
		for i := t.lo; i < t.hi; {
			i = n.forwardSample(ws, t.p, i, s, t.hi)
		}
		if t.bn >= 0 {
			n.bnStats(ws, t.bn, s)
		}
		return
	}
	n.backwardRun(ws, t.p, t.dParams, t.hi, t.lo, s, c, t.stop, t.needInput)
	if t.bn >= 0 {
		n.bnGradSums(ws, t.bn, s, n.batchGrad(ws, t.bn, s))
	}
}

// setStage returns ws.st set up for a pass with parameters p (and parameter
// gradients dParams); the caller sets the layer range.
func (ws *Workspace) setStage(n *Net, p, dParams []float32, back bool) *stage {
	t := &ws.st
	t.n, t.ws, t.p, t.dParams, t.back = n, ws, p, dParams, back
	return t
}

// work runs chunks until none is left.
func (t *stage) work() {
	b := t.ws.b
	for {
		c := int(t.next.Add(1) - 1)
		if c >= t.nch {
			return
		}
		for s := c * chunkSize; s < min((c+1)*chunkSize, b); s++ {
			t.sample(c, s)
		}
	}
}

// helpers is a package-wide pool of goroutines that join stages: started
// on demand (up to the largest Workers-1 asked for), they wait on ch.
var helpers struct {
	mu sync.Mutex
	n  atomic.Int64
	ch chan *stage
}

func helper(ch chan *stage) {
	for t := range ch {
		t.work()
		t.wg.Done()
	}
}

// run executes the stage ws.st on the calling goroutine and up to
// Workers-1 idle helpers (none idle: the caller does their share).
func (n *Net) run(t *stage) {
	t.nch = (t.ws.b + chunkSize - 1) / chunkSize
	t.next.Store(0)
	if w := min(n.workers(), t.nch) - 1; w > 0 {
		if helpers.n.Load() < int64(w) {
			helpers.mu.Lock()
			if helpers.ch == nil {
				helpers.ch = make(chan *stage)
			}
			for helpers.n.Load() < int64(w) {
				go helper(helpers.ch)
				helpers.n.Add(1)
			}
			helpers.mu.Unlock()
		}
		for range w {
			t.wg.Add(1)
			select {
			case helpers.ch <- t:
			default:
				t.wg.Done()
			}
		}
	}
	t.work()
	t.wg.Wait()
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

// trainBN reports whether layer i is a batchnorm that needs batch
// statistics: the layers between two of them run sample by sample.
func (n *Net) trainBN(ws *Workspace, i int) bool {
	return ws.train && n.arch.Layers[i].Kind == KindBatchNorm1D
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

// input returns the input of layer i for sample s.
func (n *Net) input(ws *Workspace, i, s int) []float32 {
	sz := n.ins[i].Size()
	if i == 0 {
		return ws.x[s*sz : (s+1)*sz]
	}
	return ws.acts[i-1][s*sz : (s+1)*sz]
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
		if !ws.train || l.P == 0 {
			copy(out, in)
			break
		}
		m := ws.mask[i][s*sz : (s+1)*sz]
		for j := range out {
			out[j] = in[j] * m[j]
		}
	default:
		panic("nn: unknown layer kind " + string(l.Kind))
	}
	return i + 1
}

// bnStats stores the mean and the centred sum of squares of every channel
// of sample s's input to batchnorm layer i.
func (n *Net) bnStats(ws *Workspace, i, s int) {
	C, T := n.ins[i].C, n.ins[i].T
	in := n.input(ws, i, s)
	mu, m2 := ws.sa[i][s*C:(s+1)*C], ws.sb[i][s*C:(s+1)*C]
	for ch := 0; ch < C; ch++ {
		row := in[ch*T : (ch+1)*T]
		m := kern.Sum64(row) / float64(T)
		mu[ch], m2[ch] = m, kern.SqDev64(row, m)
	}
}

// bnReduceStats combines the per-sample statistics of batchnorm layer i in
// sample order (Chan et al.: with equal counts T, the batch mean is the
// mean of the sample means mu_s and the centred sum of squares is
// sum_s [M2_s + T (mu_s - mu)^2]), sets mu and istd = 1/sqrt(s2 + eps) with
// s2 the biased variance, and updates the running statistics:
// running_mean <- (1-m) running_mean + m mu and
// running_var <- (1-m) running_var + m s2 n/(n-1).
func (n *Net) bnReduceStats(ws *Workspace, p []float32, i int) {
	b := ws.b
	C, T := n.ins[i].C, n.ins[i].T
	o := n.offs[i]
	rm, rv := p[o.rm:o.rm+C], p[o.rv:o.rv+C]
	sa, sb := ws.sa[i], ws.sb[i]
	cnt := float64(b * T)
	for ch := 0; ch < C; ch++ {
		var sum float64
		for s := 0; s < b; s++ {
			sum += sa[s*C+ch]
		}
		mu := sum / float64(b)
		var ss float64
		for s := 0; s < b; s++ {
			d := sa[s*C+ch] - mu
			ss += sb[s*C+ch] + float64(T)*d*d
		}
		v := ss / cnt
		ws.mean[i][ch] = mu
		ws.istd[i][ch] = 1 / math.Sqrt(v+BNEps)
		unb := v
		if cnt > 1 {
			unb = ss / (cnt - 1)
		}
		rm[ch] = float32((1-BNMomentum)*float64(rm[ch]) + BNMomentum*mu)
		rv[ch] = float32((1-BNMomentum)*float64(rv[ch]) + BNMomentum*unb)
	}
}

// bnForward for sample s: xhat = (x - mu_c) istd_c and
// y = xhat gamma_c + beta_c, in float32, with (mu, 1/istd^2 - eps) the
// batch mean and biased variance over (batch, time) in train mode, or the
// running statistics in eval mode.
func (n *Net) bnForward(ws *Workspace, i int, p, in, out []float32, s int) {
	C, T := n.ins[i].C, n.ins[i].T
	o := n.offs[i]
	gamma, beta := p[o.w:o.w+C], p[o.b:o.b+C]
	mean, istd := ws.mean[i], ws.istd[i]
	xh := ws.xhat[i][s*C*T : (s+1)*C*T]
	for ch := 0; ch < C; ch++ {
		r := ch * T
		kern.Normalize(xh[r:r+T], out[r:r+T], in[r:r+T], float32(mean[ch]), float32(istd[ch]), gamma[ch], beta[ch])
	}
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
			if n.arch.Layers[i].Kind == KindBatchNorm1D && !ws.train {
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
	if n.dense {
		return false
	}
	for j := i; j > stop; j-- {
		switch n.arch.Layers[j].Kind {
		case KindConv1D:
			return n.gmpChain[j] >= i
		case KindReLU:
		case KindGlobalMaxPool:
			if j != i {
				return false
			}
		default:
			return false
		}
	}
	return false
}

// backwardSample propagates the gradient dout of sample s through layer i
// into din (nil: not needed), adding parameter gradients to chunk c's
// buffer. It reports whether it wrote din: the layers of a sparse chain
// leave it to the chain's conv, which gets the pool's output gradient.
func (n *Net) backwardSample(ws *Workspace, p, dParams []float32, i, s, c, stop int, dout, din []float32) bool {
	l := n.arch.Layers[i]
	if (l.Kind == KindReLU || l.Kind == KindGlobalMaxPool) && n.sparseChain(i, stop) {
		return false
	}
	if l.Kind == KindConv1D && n.gmpChain[i] >= 0 && !n.dense {
		n.sparseConvBackward(ws, p, dParams, i, s, c, dout, din)
		return true
	}
	if ws.supAt[s] == i {
		switch {
		case l.Kind == KindReLU:
			n.supportReluBackward(ws, i, s, dout, din)
			return true
		case l.Kind == KindConv1D && 4*len(ws.sup[s]) <= n.shapes[i].T:
			n.supportConvBackward(ws, p, dParams, i, s, c, dout, din)
			return true
		}
		n.densify(ws, i, s, dout)
	}
	is, os := n.ins[i], n.shapes[i]
	osz := os.Size()
	o := n.offs[i]
	switch l.Kind {
	case KindConv1D:
		w := p[o.w : o.w+l.Out*is.C*l.Kernel]
		var gw, gb []float32
		if dParams != nil {
			gw = ws.cgrad[c][o.w : o.w+len(w)]
			gb = ws.cgrad[c][o.b : o.b+l.Out]
		}
		convBackward(din, gw, gb, dout, n.input(ws, i, s), w, is.C, is.T, l.Out, l.Kernel)
	case KindDense:
		w := p[o.w : o.w+l.Out*is.C]
		var gw, gb []float32
		if dParams != nil {
			gw = ws.cgrad[c][o.w : o.w+len(w)]
			gb = ws.cgrad[c][o.b : o.b+l.Out]
		}
		denseBackward(din, gw, gb, dout, n.input(ws, i, s), w)
	case KindBatchNorm1D:
		n.bnBackward(ws, i, p, dout, din, dParams != nil, s)
	}
	if din == nil {
		return true
	}
	switch l.Kind {
	case KindReLU:
		kern.ReluGrad(din, dout, ws.acts[i][s*osz:(s+1)*osz])
	case KindMaxPool1D:
		idx := ws.idx[i][s*osz : (s+1)*osz]
		for ch := 0; ch < os.C; ch++ {
			kern.MaxPoolGrad(din[ch*is.T:(ch+1)*is.T], dout[ch*os.T:(ch+1)*os.T], idx[ch*os.T:(ch+1)*os.T], l.Kernel)
		}
	case KindGlobalMaxPool:
		idx := ws.idx[i][s*osz : (s+1)*osz]
		clear(din)
		for ch := 0; ch < is.C; ch++ {
			din[ch*is.T+int(idx[ch])] = dout[ch]
		}
	case KindFlatten:
		copy(din, dout)
	case KindDropout:
		if !ws.train || l.P == 0 {
			copy(din, dout)
			break
		}
		m := ws.mask[i][s*osz : (s+1)*osz]
		for j := range din {
			din[j] = dout[j] * m[j]
		}
	}
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

// bnGradSums stores sum_t dy and sum_t dy xhat of every channel of sample
// s at batchnorm layer i, dout being its output gradient.
func (n *Net) bnGradSums(ws *Workspace, i, s int, dout []float32) {
	C, T := n.ins[i].C, n.ins[i].T
	xh := ws.xhat[i][s*C*T : (s+1)*C*T]
	sd, sdx := ws.sa[i][s*C:(s+1)*C], ws.sb[i][s*C:(s+1)*C]
	for ch := 0; ch < C; ch++ {
		sd[ch], sdx[ch] = kern.SumDot64(dout[ch*T:(ch+1)*T], xh[ch*T:(ch+1)*T])
	}
}

// bnReduceGrad sums the per-sample sums of batchnorm layer i in sample
// order, adds dgamma = sum dy xhat and dbeta = sum dy to dParams (if not
// nil), and sets the train-mode backward coefficients gamma istd, mean(dy)
// and mean(dy xhat).
func (n *Net) bnReduceGrad(ws *Workspace, p, dParams []float32, i int) {
	b := ws.b
	C, T := n.ins[i].C, n.ins[i].T
	o := n.offs[i]
	cnt := float64(b * T)
	for ch := 0; ch < C; ch++ {
		var sd, sdx float64
		for s := 0; s < b; s++ {
			sd += ws.sa[i][s*C+ch]
			sdx += ws.sb[i][s*C+ch]
		}
		if dParams != nil {
			dParams[o.w+ch] += float32(sdx)
			dParams[o.b+ch] += float32(sd)
		}
		ws.gk[i][ch] = float32(float64(p[o.w+ch]) * ws.istd[i][ch])
		ws.gk[i][C+ch] = float32(sd / cnt)
		ws.gk[i][2*C+ch] = float32(sdx / cnt)
	}
}

// bnBackward for sample s. Eval mode: dx = dy gamma istd. Train mode (batch
// statistics): dx = gamma istd (dy - mean(dy) - xhat mean(dy xhat)), means
// over (batch, time) per channel, in float32. In both modes dgamma =
// sum dy xhat and dbeta = sum dy; in eval mode (where no batch-wide step
// computed them) their per-sample terms are stored when sums is set.
func (n *Net) bnBackward(ws *Workspace, i int, p, dout, din []float32, sums bool, s int) {
	C, T := n.ins[i].C, n.ins[i].T
	if !ws.train {
		if sums {
			n.bnGradSums(ws, i, s, dout)
		}
		if din == nil {
			return
		}
		o := n.offs[i]
		for ch := 0; ch < C; ch++ {
			k := float32(float64(p[o.w+ch]) * ws.istd[i][ch])
			r := ch * T
			copy(din[r:r+T], dout[r:r+T])
			kern.Scale(din[r:r+T], k)
		}
		return
	}
	if din == nil {
		return
	}
	xh := ws.xhat[i][s*C*T : (s+1)*C*T]
	gk := ws.gk[i]
	for ch := 0; ch < C; ch++ {
		r := ch * T
		kern.NormalizeGrad(din[r:r+T], dout[r:r+T], xh[r:r+T], gk[ch], gk[C+ch], gk[2*C+ch])
	}
}

// convForward: out[o,t] = bias[o] + sum_i sum_k w[o,i,k] x[i,t+k] for one
// sample, x of cin x tin, out of cout x (tin-k+1), and rel = max(out, 0)
// if rel is not nil; pw is w packed by kern.PackConv.
func convForward(out, rel, x, w, pw, bias []float32, cin, tin, cout, k int) {
	tout := tin - k + 1
	kern.ConvMultiBias(out, rel, tout, x, tin, w, pw, bias, cout, cin, k, tout)
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
