package nn

import (
	"context"
	"fmt"
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

func randomSetup(t *testing.T, a Arch, b int, seed uint64) (*Net, []float32, []float32, []int) {
	net, err := NewNet(a)
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

func lossAt(net *Net, p, x []float32, y []int, train bool) float64 {
	ws := net.NewWorkspace(len(y))
	q := append([]float32(nil), p...) // train mode writes running statistics
	net.Forward(ws, q, x, train, nil)
	return CrossEntropy(nil, ws.Logits(), y, net.Classes())
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

// pattern is the activation pattern of a forward pass: the sign of every
// ReLU output and the argmax of every pooling window. Within one pattern the
// network is smooth in its parameters.
func pattern(net *Net, p, x []float32, train bool) []int32 {
	ws := net.NewWorkspace(len(x) / net.InputLen())
	q := append([]float32(nil), p...)
	net.Forward(ws, q, x, train, nil)
	var pat []int32
	for i, l := range net.Arch().Layers {
		if l.Kind == KindReLU {
			for _, v := range ws.Act(i) {
				if v > 0 {
					pat = append(pat, 1)
				} else {
					pat = append(pat, 0)
				}
			}
		}
		if ws.idx[i] != nil { // a pool: its argmax positions
			pat = append(pat, ws.idx[i][:ws.b*net.OutShape(i).Size()]...)
		}
	}
	return pat
}

func samePattern(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFiniteDifferenceParams compares every parameter's gradient with a
// central difference, in train and eval mode. A coordinate whose
// perturbation changes the activation pattern (a ReLU sign or a pooling
// argmax: a kink inside the interval) is skipped; most must qualify. The
// tolerance covers float32 rounding of the loss divided by 2h.
func TestFiniteDifferenceParams(t *testing.T) {
	for _, tc := range []struct {
		arch  Arch
		train bool
	}{{linearArch(), true}, {linearArch(), false}, {smoothArch(), true}, {smoothArch(), false}, {smallArch(), true}, {smallArch(), false}, {bnFirstArch(), true}, {bnFirstArch(), false}} {
		checked, total := 0, 0
		for seed := uint64(1); seed <= 3; seed++ {
			net, p, x, y := randomSetup(t, tc.arch, 6, seed)
			ws := net.NewWorkspace(len(y))
			q := append([]float32(nil), p...)
			net.Forward(ws, q, x, tc.train, nil)
			dz := make([]float32, len(y)*net.Classes())
			CrossEntropy(dz, ws.Logits(), y, net.Classes())
			g := make([]float32, len(p))
			net.Backward(ws, q, dz, g, nil)
			base := pattern(net, p, x, tc.train)
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
					if !samePattern(base, pattern(net, pp, x, tc.train)) || !samePattern(base, pattern(net, pm, x, tc.train)) {
						continue
					}
					checked++
					fd := (lossAt(net, pp, x, y, tc.train) - lossAt(net, pm, x, y, tc.train)) / (2 * h)
					if d := math.Abs(fd - float64(g[i])); d > 1e-3*math.Max(1, math.Abs(fd)) {
						t.Errorf("%s train=%v seed %d: %s[%d] gradient %g, finite difference %g", tc.arch.Name, tc.train, seed, ti.Name, i-ti.Offset, g[i], fd)
					}
				}
			}
		}
		if checked < total*3/4 {
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
	m, err := NewModel(Params{Arch: net.Arch(), Data: p})
	if err != nil {
		t.Fatal(err)
	}
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

// TestFoldMatchesUnfolded: the folded eval-mode model computes the same
// logits as the unfolded network in eval mode (a metamorphic check).
func TestFoldMatchesUnfolded(t *testing.T) {
	net, p, x, _ := randomSetup(t, smallArch(), 5, 3)
	ws := net.NewWorkspace(5)
	net.Forward(ws, p, x, false, nil)
	m, err := NewModel(Params{Arch: net.Arch(), Data: p})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 5*net.Classes())
	m.Logits(got, x)
	within(t, "folded vs unfolded", got, ws.Logits(), 1e-5)
}

// TestWorkersDoNotChangeResults: gradients are bit-identical for 1 and 3
// workers (fixed chunking and reduction order).
func TestWorkersDoNotChangeResults(t *testing.T) {
	var ref []float32
	for _, w := range []int{1, 3} {
		net, p, x, y := randomSetup(t, smallArch(), 37, 11)
		net.Workers = w
		ws := net.NewWorkspace(37)
		net.Forward(ws, p, x, true, nil)
		dz := make([]float32, 37*net.Classes())
		CrossEntropy(dz, ws.Logits(), y, net.Classes())
		g := make([]float32, len(p))
		net.Backward(ws, p, dz, g, nil)
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
	if sh != (Shape{16, 630}) {
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

// TestWindowProbsMatchesPlain: the incremental occlusion path equals full
// forward passes of the occluded inputs, on the paper's net and on a
// network with other kernel sizes and channels.
func TestWindowProbsMatchesPlain(t *testing.T) {
	paper := loadGolden(t)
	cases := []struct {
		p Params
		x []float32
	}{{paper.params, paper.x[:640]}}
	net, p, x, _ := randomSetup(t, smallArch(), 1, 9)
	cases = append(cases, struct {
		p Params
		x []float32
	}{Params{Arch: net.Arch(), Data: p}, x})
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
				m.WindowProbs(fast, c.x, st, width, 0.25, 1)
				m.windowProbsPlain(plain, c.x, st, width, baseFill{v: 0.25}, 1)
				within(t, c.p.Arch.Name+" window probs", fast, plain, 1e-6)
			}
		}
	}
}

// TestReluBackwardZeros: the gradient passes only where the ReLU output is
// strictly positive (PyTorch's rule: 0 at u = 0), -0 included.
func TestReluBackwardZeros(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	out := []float32{0, negZero, 1e-38, 2, float32(math.SmallestNonzeroFloat32)}
	dout := []float32{5, 5, 5, 5, 5}
	din := make([]float32, len(out))
	reluBackward(din, dout, out)
	want := []float32{0, 0, 5, 5, 5}
	for i := range want {
		if din[i] != want[i] {
			t.Errorf("out %g: gradient %g, want %g", out[i], din[i], want[i])
		}
	}
}

// TestSparseBackwardMatchesDense: the backward passes that use the
// sparsity of the global max pool's gradient (conv4 from the pool's
// argmax, then relu3 and conv3 on the few steps that gradient reaches)
// agree with the dense kernels, in train and eval mode, for the parameter
// and input gradients and for a gradient returned at an inner layer. The
// short paper network has supports too wide for the sparse conv3 (dense
// fallback); smallArch densifies at a batchnorm; chain keeps a support
// through convs of kernel 5 and 4 down to the input.
func TestSparseBackwardMatchesDense(t *testing.T) {
	paper := PaperArch()
	paper.InLen = 96 // short rows: supports cover a good part of them
	// Three convs of other kernel sizes before the pool: sparse conv3,
	// then the support kept through c2 and c1 down to the input gradient.
	chain := Arch{Name: "chain", InChannels: 2, InLen: 160, Layers: []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 3, Kernel: 4},
		{Kind: KindReLU},
		{Kind: KindConv1D, Name: "c2", Out: 5, Kernel: 5},
		{Kind: KindReLU},
		{Kind: KindConv1D, Name: "c3", Out: 4, Kernel: 2},
		{Kind: KindReLU},
		{Kind: KindGlobalMaxPool},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d1", Out: 3},
	}}
	for _, a := range []Arch{PaperArch(), paper, smallArch(), chain} {
		for _, train := range []bool{true, false} {
			var got [2][]float32
			var inner [2][]float32
			for k, dense := range []bool{false, true} {
				net, p, x, y := randomSetup(t, a, 19, 5)
				net.dense = dense
				ws := net.NewWorkspace(19)
				net.Forward(ws, p, x, train, nil)
				dz := make([]float32, 19*net.Classes())
				CrossEntropy(dz, ws.Logits(), y, net.Classes())
				g := make([]float32, len(p))
				dx := make([]float32, len(x))
				net.Backward(ws, p, dz, g, dx)
				got[k] = append(g, dx...)
				// The gradient at the first batchnorm's input: the output of
				// the layer before it.
				li := 1 // chain: c1's ReLU
				for j, l := range a.Layers {
					if l.Kind == KindBatchNorm1D {
						li = j - 1
						break
					}
				}
				inner[k] = append([]float32(nil), net.backward(ws, p, dz, nil, li, false)...)
			}
			within(t, fmt.Sprintf("%s train=%v sparse vs dense", a.Name, train), got[0], got[1], 2e-6)
			within(t, fmt.Sprintf("%s train=%v inner gradient", a.Name, train), inner[0], inner[1], 2e-6)
		}
	}
}

// TestNoAllocs: a train step's forward and backward allocate nothing once
// the workspace is warm, with any number of workers.
func TestNoAllocs(t *testing.T) {
	for _, w := range []int{1, 2, 3} {
		net, p, x, y := randomSetup(t, PaperArch(), 20, 3)
		net.Workers = w
		ws := net.NewWorkspace(20)
		dz := make([]float32, 20*net.Classes())
		g := make([]float32, len(p))
		dx := make([]float32, len(x))
		if n := testing.AllocsPerRun(5, func() {
			net.Forward(ws, p, x, true, nil)
			CrossEntropy(dz, ws.Logits(), y, net.Classes())
			net.Backward(ws, p, dz, g, dx)
		}); n != 0 {
			t.Errorf("workers=%d: %v allocations per step", w, n)
		}
	}
}

// TestDropoutTrain: in train mode the dropout layer multiplies by a mask of
// 0 and 1/(1-p) drawn from the random source in batch order (the same draws
// for any number of workers), and its backward multiplies by the same mask.
func TestDropoutTrain(t *testing.T) {
	const p, b = 0.3, 13
	a := PaperArchDropout(p)
	a.InLen = 64
	var ref []float32
	for _, w := range []int{1, 3} {
		net, params, x, y := randomSetup(t, a, b, 4)
		net.Workers = w
		di, err := net.LayerIndex("fc2")
		if err != nil {
			t.Fatal(err)
		}
		di-- // the dropout layer
		ws := net.NewWorkspace(b)
		net.Forward(ws, params, x, true, rand.New(rand.NewPCG(8, 9)))
		in, out := ws.Act(di-1), ws.Act(di)
		draws := rand.New(rand.NewPCG(8, 9))
		zeros := 0
		mask := make([]float32, len(out))
		for j := range out {
			m := float32(1 / (1 - p))
			if draws.Float64() < p {
				m = 0
				zeros++
			}
			mask[j] = m
			if out[j] != in[j]*m {
				t.Fatalf("workers=%d: dropout output %d is %g, want %g*%g", w, j, out[j], in[j], m)
			}
		}
		if zeros == 0 || zeros == len(out) {
			t.Fatalf("mask has %d zeros of %d", zeros, len(out))
		}
		dz := make([]float32, b*net.Classes())
		CrossEntropy(dz, ws.Logits(), y, net.Classes())
		g := make([]float32, len(params))
		dx := make([]float32, len(x))
		gout := append([]float32(nil), net.backward(ws, params, dz, nil, di, false)...)
		gin := net.backward(ws, params, dz, nil, di-1, false)
		for j := range gin {
			if gin[j] != gout[j]*mask[j] {
				t.Fatalf("workers=%d: dropout input gradient %d is %g, want %g*%g", w, j, gin[j], gout[j], mask[j])
			}
		}
		net.Backward(ws, params, dz, g, dx)
		g = append(g, dx...)
		if ref == nil {
			ref = g
			continue
		}
		for i := range g {
			if math.Float32bits(g[i]) != math.Float32bits(ref[i]) {
				t.Fatalf("workers=%d: gradient %d differs: %g vs %g", w, i, g[i], ref[i])
			}
		}
	}
}
