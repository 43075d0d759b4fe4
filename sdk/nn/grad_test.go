package nn

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// smallArch uses every layer kind on a short input.
func smallArch() Arch {
	return Arch{Name: "small", InChannels: 2, InLen: 24, Layers: []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 3, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindMaxPool1D, Kernel: 2},
		{Kind: KindBatchNorm1D, Name: "b1"},
		{Kind: KindConv1D, Name: "c2", Out: 4, Kernel: 5},
		{Kind: KindReLU},
		{Kind: KindGlobalMaxPool},
		{Kind: KindBatchNorm1D, Name: "b2"},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d1", Out: 6},
		{Kind: KindReLU},
		{Kind: KindBatchNorm1D, Name: "b3"},
		{Kind: KindDense, Name: "d2", Out: 5},
	}}
}

// smoothArch has no pooling: max-pool switches make finite differences of
// parameters jump (pooling is checked against the golden gradients).
func smoothArch() Arch {
	return Arch{Name: "smooth", InChannels: 2, InLen: 16, Layers: []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 3, Kernel: 3},
		{Kind: KindBatchNorm1D, Name: "b1"},
		{Kind: KindConv1D, Name: "c2", Out: 4, Kernel: 5},
		{Kind: KindReLU},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d1", Out: 6},
		{Kind: KindBatchNorm1D, Name: "b3"},
		{Kind: KindDense, Name: "d2", Out: 5},
	}}
}

// bnFirstArch starts with a batchnorm, so the first layer is one whose
// input is the network's input (the index-0 cases of forward, backward and
// folding).
func bnFirstArch() Arch {
	return Arch{Name: "bn-first", InChannels: 2, InLen: 12, Layers: []Layer{
		{Kind: KindBatchNorm1D, Name: "b0"},
		{Kind: KindConv1D, Name: "c1", Out: 3, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d1", Out: 4},
	}}
}

func randomSetup(t *testing.T, a Arch, b int, seed uint64) (Pass, []float32, []float32, []int) {
	net, err := NewPass(a, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	p := make([]float32, net.Layout().Size)
	Init(net.Layout(), p, r)
	// Non-trivial batchnorm parameters and running statistics.
	for _, ti := range net.Layout().Tensors {
		v := p[ti.Offset : ti.Offset+ti.Size]
		switch suffix(ti.Name) {
		case ".running_var":
			for i := range v {
				v[i] = float32(0.5 + r.Float64())
			}
		case ".running_mean":
			for i := range v {
				v[i] = float32(r.NormFloat64() * 0.3)
			}
		}
		if isBN(net.Layout(), ti.Name) && suffix(ti.Name) == ".weight" {
			for i := range v {
				v[i] = float32(0.5 + r.Float64())
			}
		}
	}
	x := make([]float32, b*net.InputLen())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]int, b)
	for i := range y {
		y[i] = r.IntN(net.Classes())
	}
	return net, p, x, y
}

func lossAt(net Pass, p, x []float32, y []int, train bool) float64 {
	q := append([]float32(nil), p...) // train mode writes running statistics
	return CrossEntropy(nil, net.Forward(q, x, train, nil), y, net.Classes())
}

// linearArch is smoothArch without its ReLU: no kinks at all, so finite
// differences of every parameter are exact up to float32 rounding, in train
// mode (batch statistics) too.
func linearArch() Arch {
	a := smoothArch()
	a.Name = "linear"
	var ls []Layer
	for _, l := range a.Layers {
		if l.Kind != KindReLU {
			ls = append(ls, l)
		}
	}
	a.Layers = ls
	return a
}

// TestFiniteDifferenceParams compares every parameter's gradient with a
// central difference, in train and eval mode. A coordinate whose
// one-sided differences disagree (a ReLU sign or a pooling argmax
// changes: a kink inside the interval) is skipped; most must qualify. The
// tolerance covers float32 rounding of the loss divided by 2h.
func TestFiniteDifferenceParams(t *testing.T) {
	for _, tc := range []struct {
		arch  Arch
		train bool
	}{{linearArch(), true}, {linearArch(), false}, {smoothArch(), true}, {smoothArch(), false}, {smallArch(), true}, {smallArch(), false}, {bnFirstArch(), true}, {bnFirstArch(), false}} {
		checked, total := 0, 0
		for seed := uint64(1); seed <= 3; seed++ {
			net, p, x, y := randomSetup(t, tc.arch, 6, seed)
			q := append([]float32(nil), p...)
			z := net.Forward(q, x, tc.train, nil)
			dz := make([]float32, len(y)*net.Classes())
			CrossEntropy(dz, z, y, net.Classes())
			g := make([]float32, len(p))
			net.Backward(q, dz, g)
			l0 := lossAt(net, p, x, y, tc.train)
			for _, ti := range net.Layout().Tensors {
				if !ti.Trainable {
					continue
				}
				for i := ti.Offset; i < ti.Offset+ti.Size; i++ {
					const h = 1e-3
					pp, pm := append([]float32(nil), p...), append([]float32(nil), p...)
					pp[i] += h
					pm[i] -= h
					total++
					lp, lm := lossAt(net, pp, x, y, tc.train), lossAt(net, pm, x, y, tc.train)
					if fwd, bwd := (lp-l0)/h, (l0-lm)/h; math.Abs(fwd-bwd) > 1e-3*math.Max(1, math.Abs(fwd)) {
						continue // a kink between p - h and p + h
					}
					checked++
					fd := (lp - lm) / (2 * h)
					if d := math.Abs(fd - float64(g[i])); d > 1e-3*math.Max(1, math.Abs(fd)) {
						t.Errorf("%s train=%v seed %d: %s[%d] gradient %g, finite difference %g", tc.arch.Name, tc.train, seed, ti.Name, i-ti.Offset, g[i], fd)
					}
				}
			}
		}
		if checked < total*2/3 { // float32 noise of one-sided differences skips some smooth ones too
			t.Errorf("%s train=%v: only %d of %d coordinates free of kinks", tc.arch.Name, tc.train, checked, total)
		}
		t.Logf("%s train=%v: %d of %d coordinates checked", tc.arch.Name, tc.train, checked, total)
	}
}

// TestFiniteDifferenceInput checks d p_y / d x of the folded model against
// central differences, per coordinate.
func TestFiniteDifferenceInput(t *testing.T) {
	checkInputGrad(t, smallArch(), 3, 5)
}

// checkInputGrad checks the folded model's input gradient on b random
// inputs of arch a against central differences of its probabilities.
func checkInputGrad(t *testing.T, a Arch, b int, seed uint64) {
	t.Helper()
	net, p, x, y := randomSetup(t, a, b, seed)
	m, err := NewModel(Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	_ = net
	g := make([]float32, len(x))
	if err := m.InputGrad(context.Background(), g, nil, x, y); err != nil {
		t.Fatal(err)
	}
	k := m.Classes()
	prob := func(xx []float32, b int) float64 {
		pr := make([]float32, len(y)*k)
		if err := m.Probs(context.Background(), pr, xx); err != nil {
			t.Fatal(err)
		}
		return float64(pr[b*k+y[b]])
	}
	n := m.InputLen()
	for b := range y {
		for i := 0; i < n; i++ {
			const h = 1e-3
			xp, xm := append([]float32(nil), x...), append([]float32(nil), x...)
			xp[b*n+i] += h
			xm[b*n+i] -= h
			fd := (prob(xp, b) - prob(xm, b)) / (2 * h)
			if d := math.Abs(fd - float64(g[b*n+i])); d > 2e-3 {
				t.Errorf("%s: input %d coordinate %d: gradient %g, finite difference %g", a.Name, b, i, g[b*n+i], fd)
			}
		}
	}
}

// TestFoldMatchesUnfolded: the folded eval-mode model (Probs) computes
// the probabilities of the unfolded network (PlainProbs; the softmax of a
// Pass's eval-mode logits), a metamorphic check of the folding.
func TestFoldMatchesUnfolded(t *testing.T) {
	net, p, x, _ := randomSetup(t, smallArch(), 5, 3)
	m, err := NewModel(Params{Arch: smallArch(), Data: p})
	if err != nil {
		t.Fatal(err)
	}
	k := net.Classes()
	want := make([]float32, 5*k)
	Softmax(want, net.Forward(p, x, false, nil), k)
	got := make([]float32, 5*k)
	if err := m.Probs(context.Background(), got, x); err != nil {
		t.Fatal(err)
	}
	within(t, "folded vs unfolded", got, want, 1e-5)
	if err := m.PlainProbs(context.Background(), got, x); err != nil {
		t.Fatal(err)
	}
	within(t, "plain vs a Pass", got, want, 1e-6)
}

// TestWorkersDoNotChangeResults: gradients are bit-identical for 1 and 3
// workers (fixed chunking and reduction order).
func TestWorkersDoNotChangeResults(t *testing.T) {
	var ref []float32
	for _, w := range []int{1, 3} {
		_, p, x, y := randomSetup(t, smallArch(), 37, 11)
		net, err := NewPass(smallArch(), 37, w)
		if err != nil {
			t.Fatal(err)
		}
		z := net.Forward(p, x, true, nil)
		dz := make([]float32, 37*net.Classes())
		CrossEntropy(dz, z, y, net.Classes())
		g := make([]float32, len(p))
		net.Backward(p, dz, g)
		g = append(g, p...) // running statistics too
		if ref == nil {
			ref = g
			continue
		}
		for i := range g {
			if math.Float32bits(g[i]) != math.Float32bits(ref[i]) {
				t.Fatalf("workers=%d: element %d differs: %g vs %g", w, i, g[i], ref[i])
			}
		}
	}
}

// TestGoldenGradCAMLayer: Grad-CAM from LayerGrad on conv4 (pre-ReLU)
// reproduces Captum's LayerGradCam, cam(t) = sum_c alpha_c A_c(t) with
// alpha_c = mean_t d p_y / d A_c(t).
func TestGoldenGradCAMLayer(t *testing.T) {
	g := loadGolden(t)
	m, err := NewModel(g.params)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := m.LayerShape(context.Background(), "conv4")
	if err != nil {
		t.Fatal(err)
	}
	if sh != (Shape{C: 16, T: 630}) {
		t.Fatalf("conv4 shape %v, want {16 630}", sh)
	}
	B := len(g.labels)
	act := make([]float32, B*sh.Size())
	grad := make([]float32, B*sh.Size())
	if err := m.LayerGrad(context.Background(), act, grad, g.x, g.labels, "conv4"); err != nil {
		t.Fatal(err)
	}
	cam := make([]float32, B*sh.T)
	for b := 0; b < B; b++ {
		for c := 0; c < sh.C; c++ {
			var alpha float64
			for t := 0; t < sh.T; t++ {
				alpha += float64(grad[b*sh.Size()+c*sh.T+t])
			}
			alpha /= float64(sh.T)
			for t := 0; t < sh.T; t++ {
				cam[b*sh.T+t] += float32(alpha * float64(act[b*sh.Size()+c*sh.T+t]))
			}
		}
	}
	within(t, "grad-cam", cam, golden.Flat(golden.CSV32(t, filepath.Join(g.dir, "gradcam_raw.csv"))), 1e-5)
	if _, err := m.LayerShape(context.Background(), "nope"); err == nil {
		t.Error("unknown layer accepted")
	}
}

// plainModel is a GraphModel whose Probs is its PlainProbs: the
// computation of the incremental paths, by full forward passes. It has
// Model's methods only, so nn.Perturbed computes its copies by forward
// passes.
type plainModel struct{ Model }

func (m plainModel) Probs(ctx context.Context, dst, x []float32) error {
	return m.Model.(*GraphModel).PlainProbs(ctx, dst, x)
}

// TestWindowProbsMatchesPlain: the incremental occlusion path equals full
// forward passes of the occluded inputs (nn.Perturbed of a plain Model), on the paper's net and on a
// network with other kernel sizes and channels.
func TestWindowProbsMatchesPlain(t *testing.T) {
	paper := loadGolden(t)
	cases := []struct {
		p Params
		x []float32
	}{{paper.params, paper.x[:640]}}
	_, p, x, _ := randomSetup(t, smallArch(), 1, 9)
	cases = append(cases, struct {
		p Params
		x []float32
	}{Params{Arch: smallArch(), Data: p}, x})
	for _, c := range cases {
		m, err := NewModel(c.p)
		if err != nil {
			t.Fatal(err)
		}
		T := c.p.Arch.InLen
		for _, width := range []int{1, 5, T / 3} {
			var starts []int
			for s := 0; s+width <= T; s += 2 {
				starts = append(starts, s)
			}
			// In order, and shuffled: the incremental path restores only what
			// the next window does not recompute, for any order.
			shuffled := append([]int(nil), starts...)
			rand.New(rand.NewPCG(uint64(width), 5)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			for _, st := range [][]int{starts, shuffled} {
				fast := make([]float32, len(st))
				plain := make([]float32, len(st))
				windowProbs(t, m, fast, c.x, nil, st, width, 0.25, 1)
				windowProbs(t, plainModel{m}, plain, c.x, nil, st, width, 0.25, 1)
				within(t, c.p.Arch.Name+" window probs", fast, plain, 1e-6)
			}
		}
	}
}
