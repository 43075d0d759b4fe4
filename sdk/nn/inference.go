package nn

import (
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

func (m *Inference) batches(x []float32, fn func(ws *Workspace, b0, b1 int)) {
	n := m.InputLen()
	if len(x)%n != 0 {
		panic(fmt.Sprintf("nn: input of length %d is not a multiple of %d", len(x), n))
	}
	B := len(x) / n
	ws := m.pool.Get().(*Workspace)
	defer m.pool.Put(ws)
	for b0 := 0; b0 < B; b0 += inferenceBatch {
		fn(ws, b0, min(b0+inferenceBatch, B))
	}
}

// Probs writes the class probabilities of a batch.
func (m *Inference) Probs(dst, x []float32) {
	n, k := m.InputLen(), m.Classes()
	m.batches(x, func(ws *Workspace, b0, b1 int) {
		m.net.Forward(ws, m.folded, x[b0*n:b1*n], false, nil)
		Softmax(dst[b0*k:b1*k], ws.Logits(), k)
	})
}

// Logits writes the logits of a batch.
func (m *Inference) Logits(dst, x []float32) {
	n, k := m.InputLen(), m.Classes()
	m.batches(x, func(ws *Workspace, b0, b1 int) {
		m.net.Forward(ws, m.folded, x[b0*n:b1*n], false, nil)
		copy(dst[b0*k:b1*k], ws.Logits())
	})
}

// probGrad writes into dz the gradient of p_{target} with respect to the
// logits, d p_y / d z_j = p_y (δ_jy - p_j), and the probabilities into p.
func probGrad(dz, p, z []float32, target []int, k int) {
	Softmax(p, z, k)
	for r, y := range target {
		if y < 0 || y >= k {
			panic(fmt.Sprintf("nn: target %d of input %d out of range 0..%d", y, r, k-1))
		}
		pr, dr := p[r*k:(r+1)*k], dz[r*k:(r+1)*k]
		py := pr[y]
		for j := range dr {
			dr[j] = -py * pr[j]
		}
		dr[y] += py
	}
}

// InputGrad writes d p_{target[b]} / d x_b, and the probabilities if probs
// is not nil.
func (m *Inference) InputGrad(dst, probs, x []float32, target []int) {
	n, k := m.InputLen(), m.Classes()
	var dz, p [inferenceBatch * 64]float32
	m.batches(x, func(ws *Workspace, b0, b1 int) {
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
func (m *Inference) LayerShape(layer string) (Shape, error) {
	i, err := m.net.LayerIndex(layer)
	if err != nil {
		return Shape{}, err
	}
	return m.net.OutShape(i), nil
}

// LayerGrad writes the output of a named layer and d p_{target} / d output.
func (m *Inference) LayerGrad(act, grad, x []float32, target []int, layer string) error {
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
	var dz, p [inferenceBatch * 64]float32
	m.batches(x, func(ws *Workspace, b0, b1 int) {
		nb := b1 - b0
		m.net.Forward(ws, m.folded, x[b0*n:b1*n], false, nil)
		copy(act[b0*sz:b1*sz], ws.Act(li))
		dzb, pb := bufs(dz[:], p[:], nb*k)
		probGrad(dzb, pb, ws.Logits(), target[b0:b1], k)
		g := m.net.backward(ws, m.folded, dzb, nil, li, false)
		copy(grad[b0*sz:b1*sz], g)
	})
	return nil
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
