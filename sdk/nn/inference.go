package nn

import (
	"context"
	"fmt"
	"math"
	"sync"
)

// inferenceBatch is the largest batch one forward pass of an Inference
// handles; larger requests are split, so memory stays bounded.
const inferenceBatch = 64

// Inference is the eval-mode Model of one parameter draw. Batchnorm layers
// in eval mode are affine maps, folded into the next conv1d or dense layer
// (through flatten, dropout and other batchnorm layers that are the
// identity in eval mode); a batchnorm with no such successor is kept.
// Folding leaves every named conv and dense layer's output unchanged, so
// LayerGrad on "conv4" sees the same activations as the unfolded network.
type Inference struct {
	orig   Params
	net    *Net
	folded []float32
	pool   *sync.Pool // of *Workspace of net

	planOnce sync.Once
	plan     *windowPlan // nil: no local-stack structure (see WindowProbs)
	edge     *edgePlan   // set with plan
	headPool sync.Pool   // workspaces of plan.head
	constMu  sync.Mutex
	constAt  map[uint32][][]float32 // per baseline's bits: the all-baseline activations (see consts)

	digestOnce sync.Once
	digest     [32]byte // see trunkDigest
}

// NewModel builds the eval-mode model of p. It fails on a parameter vector
// of the wrong size or with non-finite values.
func NewModel(p Params) (*Inference, error) {
	lay, err := NewLayout(p.Arch)
	if err != nil {
		return nil, err
	}
	if len(p.Data) != lay.Size {
		return nil, fmt.Errorf("arch %q: parameter vector has %d values, want %d", p.Arch.Name, len(p.Data), lay.Size)
	}
	for _, t := range lay.Tensors {
		for j, v := range p.Data[t.Offset : t.Offset+t.Size] {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("arch %q: tensor %s element %d is %v (want a finite number)", p.Arch.Name, t.Name, j, v)
			}
		}
	}
	fa, fp, err := FoldBatchNorm(p.Arch, p.Data)
	if err != nil {
		return nil, err
	}
	sh, err := sharedNet(fa)
	if err != nil {
		return nil, err
	}
	m := &Inference{orig: Params{Arch: p.Arch, Data: append([]float32(nil), p.Data...)}, net: sh.net, folded: fp, pool: &sh.pool}
	return m, nil
}

// netShare is a Net of one worker with its pool of workspaces, shared by
// every model of the same folded architecture (the draws of a posterior),
// so that a draw's first call does not allocate workspaces of its own.
type netShare struct {
	net  *Net
	pool sync.Pool // *Workspace of inferenceBatch
}

var netShares sync.Map // archKey -> *netShare

// archKey identifies an architecture.
func archKey(a Arch) string {
	return fmt.Sprintf("%q %d %d %v", a.Name, a.InChannels, a.InLen, a.Layers)
}

func sharedNet(a Arch) (*netShare, error) {
	key := archKey(a)
	if v, ok := netShares.Load(key); ok {
		return v.(*netShare), nil
	}
	net, err := NewNet(a)
	if err != nil {
		return nil, err
	}
	net.Workers = 1
	sh := &netShare{net: net}
	sh.pool.New = func() any { return net.NewWorkspace(inferenceBatch) }
	v, _ := netShares.LoadOrStore(key, sh)
	return v.(*netShare), nil
}

// SetWorkers sets the goroutines one call may use (default 1, as explainers
// usually run many models at once). The model then has a Net and
// workspaces of its own.
func (m *Inference) SetWorkers(w int) {
	net := *m.net
	net.Workers = w
	m.net = &net
	m.pool = &sync.Pool{New: func() any { return net.NewWorkspace(inferenceBatch) }}
}

// Params returns the unfolded parameters the model was built from.
func (m *Inference) Params() Params { return m.orig }

// Arch returns the unfolded architecture.
func (m *Inference) Arch() Arch { return m.orig.Arch }

// InputLen is InChannels*InLen.
func (m *Inference) InputLen() int { return m.net.InputLen() }

// Classes is the number of classes.
func (m *Inference) Classes() int { return m.net.Classes() }

// batches calls fn on the inputs of x, inferenceBatch at a time, with a
// workspace of the pool, and stops at ctx's end (wrapped).
func (m *Inference) batches(ctx context.Context, x []float32, fn func(ws *Workspace, b0, b1 int)) error {
	B, err := wholeInputs(x, m.InputLen())
	if err != nil {
		return fmt.Errorf("arch %q: %w", m.orig.Arch.Name, err)
	}
	ws := m.pool.Get().(*Workspace)
	defer m.pool.Put(ws)
	return inChunks(ctx, B, inferenceBatch, func(b0, b1 int) error {
		fn(ws, b0, b1)
		return nil
	})
}

// Probs writes the class probabilities of a batch.
func (m *Inference) Probs(ctx context.Context, dst, x []float32) error {
	n, k := m.InputLen(), m.Classes()
	if len(dst) != len(x)/n*k {
		return fmt.Errorf("arch %q: %d values for the probabilities of %d inputs; want %d", m.orig.Arch.Name, len(dst), len(x)/n, len(x)/n*k)
	}
	return m.batches(ctx, x, func(ws *Workspace, b0, b1 int) {
		m.net.Forward(ws, m.folded, x[b0*n:b1*n], false, nil)
		Softmax(dst[b0*k:b1*k], ws.Logits(), k)
	})
}

// probs is Probs of inputs known to be whole, for the incremental paths.
func (m *Inference) probs(dst, x []float32) {
	if err := m.Probs(context.Background(), dst, x); err != nil {
		panic(err)
	}
}

// Logits writes the logits of a batch.
func (m *Inference) Logits(dst, x []float32) {
	n, k := m.InputLen(), m.Classes()
	if err := m.batches(context.Background(), x, func(ws *Workspace, b0, b1 int) {
		m.net.Forward(ws, m.folded, x[b0*n:b1*n], false, nil)
		copy(dst[b0*k:b1*k], ws.Logits())
	}); err != nil {
		panic(err)
	}
}

// probGrad writes into dz the gradient of p_{target} with respect to the
// logits, d p_y / d z_j = p_y (δ_jy - p_j), and the probabilities into p.
// The targets are in range (checkTargets).
func probGrad(dz, p, z []float32, target []int, k int) {
	Softmax(p, z, k)
	for r, y := range target {
		pr, dr := p[r*k:(r+1)*k], dz[r*k:(r+1)*k]
		py := pr[y]
		for j := range dr {
			dr[j] = -py * pr[j]
		}
		dr[y] += py
	}
}

// checkTargets checks one target in range an input of x.
func (m *Inference) checkTargets(x []float32, target []int) error {
	B, err := wholeInputs(x, m.InputLen())
	if err != nil {
		return fmt.Errorf("arch %q: %w", m.orig.Arch.Name, err)
	}
	if len(target) != B {
		return fmt.Errorf("arch %q: %d targets for %d inputs; want one an input", m.orig.Arch.Name, len(target), B)
	}
	for r, y := range target {
		if y < 0 || y >= m.Classes() {
			return fmt.Errorf("arch %q: target %d of input %d out of range 0..%d", m.orig.Arch.Name, y, r, m.Classes()-1)
		}
	}
	return nil
}

// InputGrad writes d p_{target[b]} / d x_b, and the probabilities if probs
// is not nil.
func (m *Inference) InputGrad(ctx context.Context, dst, probs, x []float32, target []int) error {
	if err := m.checkTargets(x, target); err != nil {
		return err
	}
	n, k := m.InputLen(), m.Classes()
	if len(dst) != len(x) || probs != nil && len(probs) != len(target)*k {
		return fmt.Errorf("arch %q: %d gradient values and %d probabilities for %d inputs; want %d and %d", m.orig.Arch.Name, len(dst), len(probs), len(target), len(x), len(target)*k)
	}
	var dz, p [inferenceBatch * 64]float32
	return m.batches(ctx, x, func(ws *Workspace, b0, b1 int) {
		nb := b1 - b0
		m.net.Forward(ws, m.folded, x[b0*n:b1*n], false, nil)
		dzb, pb := bufs(dz[:], p[:], nb*k)
		probGrad(dzb, pb, ws.Logits(), target[b0:b1], k)
		if probs != nil {
			copy(probs[b0*k:b1*k], pb)
		}
		m.net.Backward(ws, m.folded, dzb, nil, dst[b0*n:b1*n])
	})
}

func bufs(a, b []float32, n int) ([]float32, []float32) {
	if n <= len(a) {
		return a[:n], b[:n]
	}
	return make([]float32, n), make([]float32, n)
}

// LayerShape is the per-input output shape of a named layer.
func (m *Inference) LayerShape(_ context.Context, layer string) (Shape, error) {
	i, err := m.net.LayerIndex(layer)
	if err != nil {
		return Shape{}, err
	}
	return m.net.OutShape(i), nil
}

// LayerGrad writes the output of a named layer and d p_{target} / d output.
func (m *Inference) LayerGrad(ctx context.Context, act, grad, x []float32, target []int, layer string) error {
	li, err := m.net.LayerIndex(layer)
	if err != nil {
		return err
	}
	n, k := m.InputLen(), m.Classes()
	sz := m.net.OutShape(li).Size()
	B := len(x) / n
	if len(act) < B*sz || len(grad) < B*sz || len(target) != B {
		return fmt.Errorf("layer %q: want act and grad of %d values and %d targets, got %d, %d, %d", layer, B*sz, B, len(act), len(grad), len(target))
	}
	if err := m.checkTargets(x, target); err != nil {
		return err
	}
	var dz, p [inferenceBatch * 64]float32
	return m.batches(ctx, x, func(ws *Workspace, b0, b1 int) {
		nb := b1 - b0
		m.net.Forward(ws, m.folded, x[b0*n:b1*n], false, nil)
		copy(act[b0*sz:b1*sz], ws.Act(li))
		dzb, pb := bufs(dz[:], p[:], nb*k)
		probGrad(dzb, pb, ws.Logits(), target[b0:b1], k)
		g := m.net.backward(ws, m.folded, dzb, nil, li, false)
		copy(grad[b0*sz:b1*sz], g)
	})
}

// PerturbedProbs computes a Perturbation (see Perturbed) by the paths of
// a local stack before a global max pool (PooledLen() > 0): windows by
// WindowProbsCached (with req.Cache, and the unperturbed probability by
// the same head) when req asks for the unperturbed probability or gives a
// cache, else by WindowProbs; spans of a constant baseline by SpanProbs
// (every span of every channel, in order) or ChannelSpanProbs.
// Other networks and requests take Perturbed's forward passes.
func (m *Inference) PerturbedProbs(_ context.Context, req Perturbation, dst []float32) (bool, error) {
	N := req.Copies()
	if m.planWindows() == nil || N == 0 {
		return false, nil
	}
	if req.Spans != nil {
		if req.Signal != nil || req.Unperturbed {
			return false, nil
		}
		if sp, ok := allChannelSpans(req.Spans); ok {
			m.SpanProbs(dst, req.X, sp, req.Baseline, req.Class)
		} else {
			m.ChannelSpanProbs(dst, req.X, req.Spans, req.Baseline, req.Class)
		}
		return true, nil
	}
	z := req.windowSignal(m.net.in.T)
	switch {
	case (req.Unperturbed || req.Cache != nil) && z != nil:
		p0 := m.WindowProbsCachedSignal(dst, req.X, z, req.Starts, req.Width, req.Class, req.Cache)
		if req.Unperturbed {
			dst[N] = p0
		}
	case req.Unperturbed || req.Cache != nil:
		p0 := m.WindowProbsCached(dst, req.X, req.Starts, req.Width, req.Baseline, req.Class, req.Cache)
		if req.Unperturbed {
			dst[N] = p0
		}
	case z != nil:
		m.WindowProbsSignal(dst, req.X, z, req.Starts, req.Width, req.Class)
	default:
		m.WindowProbs(dst, req.X, req.Starts, req.Width, req.Baseline, req.Class)
	}
	return true, nil
}

// allChannelSpans is spans as Spans of every channel, when each span
// covers every channel and a copy's spans are in order, not overlapping.
func allChannelSpans(spans [][]ChannelSpan) ([][]Span, bool) {
	out := make([][]Span, len(spans))
	for j, sp := range spans {
		out[j] = make([]Span, len(sp))
		for i, s := range sp {
			if s.Ch != AllChannels || i > 0 && s.Lo < sp[i-1].Hi {
				return nil, false
			}
			out[j][i] = Span{Lo: s.Lo, Hi: s.Hi}
		}
	}
	return out, true
}

// FoldBatchNorm returns an architecture and parameters computing the same
// eval-mode function as (a, p) with every batchnorm that is followed by a
// conv1d or dense layer (possibly through flatten and dropout) removed. A
// batchnorm with running statistics (mu, s2), weight g and bias b is the
// affine map x -> α x + β with α = g / sqrt(s2 + eps), β = b - α mu; the
// next layer's weights become w'[o,i,k] = w[o,i,k] α_i and its bias
// b'[o] = b[o] + sum_{i,k} w[o,i,k] β_i (exact for valid convolutions).
func FoldBatchNorm(a Arch, p []float32) (Arch, []float32, error) {
	lay, err := NewLayout(a)
	if err != nil {
		return Arch{}, nil, err
	}
	shapes, _ := a.Shapes()
	f := &bnFolder{lay: lay, p: p, out: Arch{Name: a.Name, InChannels: a.InChannels, InLen: a.InLen}}
	defs := make([]*kindDef, len(a.Layers))
	for i, l := range a.Layers {
		defs[i] = kindOf(l.Kind)
	}
	f.foldable = make([]bool, len(a.Layers))
	for i := range a.Layers {
		f.foldable[i] = foldable(defs[i+1:])
	}
	in := Shape{a.InChannels, a.InLen}
	for i, l := range a.Layers {
		if d := defs[i]; d.fold != nil {
			d.fold(f, i, l, in)
		} else {
			f.out.Layers = append(f.out.Layers, l)
		}
		in = shapes[i]
	}
	out, tensors := f.out, f.tensors
	olay, err := NewLayout(out)
	if err != nil {
		return Arch{}, nil, fmt.Errorf("fold batchnorm: %w", err)
	}
	fp := make([]float32, 0, olay.Size)
	for _, t := range tensors {
		fp = append(fp, t...)
	}
	if len(fp) != olay.Size {
		panic("nn: folded parameter size mismatch")
	}
	return out, fp, nil
}

// foldable reports whether a batchnorm followed by layers of kinds defs
// can be folded into a later linear (conv1d or dense) layer.
func foldable(defs []*kindDef) bool {
	for _, d := range defs {
		switch {
		case d.linearTaps != nil:
			return true
		case d.foldThrough:
			continue
		default:
			return false
		}
	}
	return false
}

// affine is the map x -> alpha x + beta of each input unit of the next
// layer.
type affine struct{ alpha, beta []float64 }

// bnFolder is the state of FoldBatchNorm: the eval-mode maps of the
// batchnorms not yet folded (pending) and the new architecture and its
// tensors in the new layout's order.
type bnFolder struct {
	lay      *Layout
	p        []float32
	pending  *affine
	out      Arch
	tensors  [][]float32
	foldable []bool // foldable[i]: a batchnorm at layer i can fold into a later layer
}

// foldBatchNormLayer composes batchnorm layer l (input in) with the
// pending map, and keeps it, carrying the composed map with identity
// statistics, when no linear layer follows to fold it into.
func foldBatchNormLayer(f *bnFolder, i int, l Layer, in Shape) {
	view := func(s string) []float32 { return f.lay.View(f.p, l.Name+"."+s) }
	g, bt, rm, rv := view("weight"), view("bias"), view("running_mean"), view("running_var")
	C := in.C
	if f.pending == nil {
		f.pending = &affine{alpha: ones(C), beta: make([]float64, C)}
	}
	for c := 0; c < C; c++ {
		al := float64(g[c]) / math.Sqrt(float64(rv[c])+BNEps)
		be := float64(bt[c]) - al*float64(rm[c])
		// compose with the pending map: x -> al (pa x + pb) + be
		f.pending.beta[c] = al*f.pending.beta[c] + be
		f.pending.alpha[c] *= al
	}
	if !f.foldable[i] {
		// keep as an identity-statistics batchnorm carrying the composed map
		f.out.Layers = append(f.out.Layers, l)
		w, b := make([]float32, C), make([]float32, C)
		for c := 0; c < C; c++ {
			w[c], b[c] = float32(f.pending.alpha[c]), float32(f.pending.beta[c])
		}
		f.tensors = append(f.tensors, w, b, make([]float32, C), onesf(C, 1-BNEps))
		f.pending = nil
	}
}

// linear folds the pending map into linear layer l (weights (out, in.C,
// k), bias) and keeps l with the new tensors:
// w'[o,i,k] = w[o,i,k] α_i, b'[o] = b[o] + sum_{i,k} w[o,i,k] β_i.
func (f *bnFolder) linear(l Layer, in Shape, k int) {
	w := append([]float32(nil), f.lay.View(f.p, l.Name+".weight")...)
	b := append([]float32(nil), f.lay.View(f.p, l.Name+".bias")...)
	if f.pending != nil {
		C := in.C
		for o := 0; o < l.Out; o++ {
			acc := float64(b[o])
			for c := 0; c < C; c++ {
				for j := 0; j < k; j++ {
					wv := float64(w[(o*C+c)*k+j])
					acc += wv * f.pending.beta[c]
					w[(o*C+c)*k+j] = float32(wv * f.pending.alpha[c])
				}
			}
			b[o] = float32(acc)
		}
		f.pending = nil
	}
	f.out.Layers = append(f.out.Layers, l)
	f.tensors = append(f.tensors, w, b)
}

func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

func onesf(n int, x float32) []float32 {
	v := make([]float32, n)
	fill(v, x)
	return v
}
