package nn

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk/rng"
)

// These tests close gaps that mutation testing (scripts/mutation) found
// in the model, dropout.go and arch.go: no test gave a model more inputs
// than one internal batch of 64, FoldDropout was only checked before a
// dense layer (kernel 1), and no architecture sat at the edge of what
// Validate accepts.

// TestBatchedEqualsSingles: a batch of B inputs, here more than two
// internal batches of 64 and a partial third, gives for every input what
// that input gives alone (the network acts on each input independently).
func TestBatchedEqualsSingles(t *testing.T) {
	a := smallArch()
	_, p, x, target := randomSetup(t, a, 2*64+5, 21)
	m, err := NewModel(Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	n, k, B := m.InputLen(), m.Classes(), len(target)
	const layer = "c2"
	sh, err := m.LayerShape(context.Background(), layer)
	if err != nil {
		t.Fatal(err)
	}
	sz := sh.Size()
	probs := make([]float32, B*k)
	grad, gprobs := make([]float32, B*n), make([]float32, B*k)
	act, lgrad := make([]float32, B*sz), make([]float32, B*sz)
	if err := m.Probs(context.Background(), probs, x); err != nil {
		t.Fatal(err)
	}
	if err := m.InputGrad(context.Background(), grad, gprobs, x, target); err != nil {
		t.Fatal(err)
	}
	if err := m.LayerGrad(context.Background(), act, lgrad, x, target, layer); err != nil {
		t.Fatal(err)
	}
	same := func(what string, b int, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Abs(float64(got[i])-float64(want[i])) > 1e-6*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("input %d of %d: batched %s[%d] = %v, alone %v", b, B, what, i, got[i], want[i])
			}
		}
	}
	p1, g1, gp1 := make([]float32, k), make([]float32, n), make([]float32, k)
	a1, lg1 := make([]float32, sz), make([]float32, sz)
	for b := range B {
		xb, tb := x[b*n:(b+1)*n], target[b:b+1]
		if err := m.Probs(context.Background(), p1, xb); err != nil {
			t.Fatal(err)
		}
		if err := m.InputGrad(context.Background(), g1, gp1, xb, tb); err != nil {
			t.Fatal(err)
		}
		if err := m.LayerGrad(context.Background(), a1, lg1, xb, tb, layer); err != nil {
			t.Fatal(err)
		}
		same("probs", b, probs[b*k:(b+1)*k], p1)
		same("input grad", b, grad[b*n:(b+1)*n], g1)
		same("InputGrad probs", b, gprobs[b*k:(b+1)*k], gp1)
		same("layer act", b, act[b*sz:(b+1)*sz], a1)
		same("layer grad", b, lgrad[b*sz:(b+1)*sz], lg1)
	}
}

// TestFoldDropoutBeforeConv: with the dropout layer first, in front of a
// convolution, the folded network on x is the eval network on x with
// input channel c multiplied by m_c / (1 - p); a second dropout, on the
// flattened units in front of the dense layer, multiplies those units
// likewise, which the folded dense weights must match.
func TestFoldDropoutBeforeConv(t *testing.T) {
	const P = 0.25
	a := Arch{Name: "drop-conv", InChannels: 3, InLen: 6, Layers: []Layer{
		{Kind: KindDropout, P: P},
		{Kind: KindConv1D, Name: "c", Out: 2, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d", Out: 3},
	}}
	lay, err := NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, lay.Size)
	Init(lay, p, rng.For(5, "test", "dropout", -1, -1))
	mask := []bool{true, false, true}
	fa, fp, err := FoldDropout(a, p, [][]bool{mask})
	if err != nil {
		t.Fatal(err)
	}
	if fa.Graph == nil || len(fa.Layers) != 0 || len(fa.Graph.Nodes) != len(a.Layers)-1 || fa.Graph.Nodes[0].Op != "conv1d" {
		t.Fatalf("folded arch %+v, want a graph without the dropout", fa)
	}
	folded, err := NewModel(Params{Arch: fa, Data: fp})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewModel(Params{Arch: a, Data: p}) // eval mode: dropout is the identity
	if err != nil {
		t.Fatal(err)
	}
	r := rng.For(6, "test", "dropout-x", -1, -1)
	x := make([]float32, 4*18)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	xm := slices.Clone(x)
	for i := range xm {
		if c := i % 18 / 6; mask[c] {
			xm[i] /= 1 - P
		} else {
			xm[i] = 0
		}
	}
	got, want := make([]float32, 12), make([]float32, 12)
	if err := folded.PlainProbs(context.Background(), got, x); err != nil {
		t.Fatal(err)
	}
	if err := plain.PlainProbs(context.Background(), want, xm); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-5 {
			t.Fatalf("logit %d: folded %v, masked input %v", i, got[i], want[i])
		}
	}

	// Refusals, each at its edge.
	two := Arch{Name: "two", InChannels: 1, InLen: 4, Layers: []Layer{
		{Kind: KindDropout, P: P}, {Kind: KindConv1D, Name: "c", Out: 2, Kernel: 2},
		{Kind: KindFlatten}, {Kind: KindDropout, P: P}, {Kind: KindDense, Name: "d", Out: 2},
	}}
	last := Arch{Name: "last", InChannels: 1, InLen: 1, Layers: []Layer{
		{Kind: KindFlatten}, {Kind: KindDense, Name: "d", Out: 2}, {Kind: KindDropout, P: P},
	}}
	relu := Arch{Name: "relu", InChannels: 1, InLen: 1, Layers: []Layer{
		{Kind: KindDropout, P: P}, {Kind: KindReLU}, {Kind: KindFlatten}, {Kind: KindDense, Name: "d", Out: 2},
	}}
	params := func(a Arch) []float32 { l, _ := NewLayout(a); return make([]float32, l.Size) }
	for _, c := range []struct {
		name  string
		a     Arch
		masks [][]bool
		want  string
	}{
		{"one mask for two layers", two, [][]bool{{true}}, `dropout node "_3": 1 dropout masks given, it is dropout number 2`},
		{"three masks for two layers", two, [][]bool{{true}, make([]bool, 6), {true}}, "3 dropout masks given for 2 dropout nodes"},
		{"mask length", two, [][]bool{{true}, make([]bool, 5)}, "needs a mask of 6 units, got 5"},
		{"dropout last", last, [][]bool{{true, true}}, `dropout node "_2": read by 0 nodes; to be folded it must be read by one linear or conv1d node`},
		{"dropout before relu", relu, [][]bool{{true}}, `dropout node "_0": read by relu node "_1"`},
	} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic %v, want an error", c.name, r)
				}
			}()
			_, _, err = FoldDropout(c.a, params(c.a), c.masks)
		}()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, _, err := FoldDropout(two, params(two), [][]bool{{true}, make([]bool, 6)}); err != nil {
		t.Errorf("two masks for two layers: %v", err)
	}
}

// TestValidateEdges: the smallest valid value of every size is accepted,
// and the next one down (or up, for p) refused, by the front end of
// layers or the graph's op table, with an error naming the layer.
func TestValidateEdges(t *testing.T) {
	arch := func(inC, inLen int, layers ...Layer) Arch {
		return Arch{Name: "edge", InChannels: inC, InLen: inLen, Layers: layers}
	}
	flat := []Layer{{Kind: KindFlatten}, {Kind: KindDense, Name: "d", Out: 2}}
	for _, c := range []struct {
		name string
		a    Arch
		want string // "" valid
	}{
		{"in_len 1, one channel, dense out 2", arch(1, 1, flat...), ""},
		{"in_len 0", arch(1, 0, flat...), "in_len must be >= 1"},
		{"in_channels 0", arch(0, 1, flat...), "in_channels"},
		{"conv out 1 kernel = length", arch(1, 3, append([]Layer{{Kind: KindConv1D, Name: "c", Out: 1, Kernel: 3}}, flat...)...), ""},
		{"conv kernel 1", arch(1, 3, append([]Layer{{Kind: KindConv1D, Name: "c", Out: 2, Kernel: 1}}, flat...)...), ""},
		{"conv kernel > length", arch(1, 3, append([]Layer{{Kind: KindConv1D, Name: "c", Out: 1, Kernel: 4}}, flat...)...), `layer 0 (conv1d): conv1d on input 1 x 3: conv1d: padded input length 3 (T 3 + padding 0 + 0) is shorter than the dilated kernel 4`},
		{"conv out 0", arch(1, 3, append([]Layer{{Kind: KindConv1D, Name: "c", Out: 0, Kernel: 1}}, flat...)...), `layer 0 (conv1d): attribute out of op conv1d = 0 (int); accepted: an integer 1 <= out`},
		{"conv kernel 0", arch(1, 3, append([]Layer{{Kind: KindConv1D, Name: "c", Out: 1, Kernel: 0}}, flat...)...), `layer 0 (conv1d): attribute kernel of op conv1d = 0 (int); accepted: an integer 1 <= kernel`},
		{"maxpool kernel 1", arch(1, 3, append([]Layer{{Kind: KindMaxPool1D, Kernel: 1}}, flat...)...), ""},
		{"maxpool kernel = length", arch(1, 3, append([]Layer{{Kind: KindMaxPool1D, Kernel: 3}}, flat...)...), ""},
		{"maxpool kernel 0", arch(1, 3, append([]Layer{{Kind: KindMaxPool1D, Kernel: 0}}, flat...)...), `layer 0 (maxpool1d): attribute kernel of op maxpool1d = 0`},
		{"maxpool kernel > length", arch(1, 3, append([]Layer{{Kind: KindMaxPool1D, Kernel: 4}}, flat...)...), "is shorter than the kernel 4"},
		{"dropout p 0", arch(1, 1, append([]Layer{{Kind: KindDropout, P: 0}}, flat...)...), ""},
		{"dropout p 1", arch(1, 1, append([]Layer{{Kind: KindDropout, P: 1}}, flat...)...), `layer 0 (dropout): attribute p of op dropout = 1 (float64); accepted: a number 0 <= p < 1`},
		{"dropout p < 0", arch(1, 1, append([]Layer{{Kind: KindDropout, P: -1e-300}}, flat...)...), "attribute p of op dropout = -1e-300"},
		{"dense out 0", arch(1, 1, Layer{Kind: KindFlatten}, Layer{Kind: KindDense, Name: "d", Out: 0}), `layer 1 (dense): attribute out of op linear = 0`},
		{"dense out 1", arch(1, 1, Layer{Kind: KindFlatten}, Layer{Kind: KindDense, Name: "d", Out: 1}), "need K x 1 with K >= 2 classes"},
	} {
		err := c.a.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestFoldBatchNormThroughFlatten: a batchnorm in front of flatten acts per
// channel on C x T values (T > 1 here), and folding it into the dense
// layer after the flatten must give the unfolded eval-mode network.
func TestFoldBatchNormThroughFlatten(t *testing.T) {
	a := Arch{Name: "bn-flatten", InChannels: 2, InLen: 7, Layers: []Layer{
		{Kind: KindConv1D, Name: "c", Out: 3, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindBatchNorm1D, Name: "bn"},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d", Out: 4},
	}}
	foldedMatches(t, a, 8, "folded through flatten vs unfolded", 1e-5)

}

// TestLayerGradShortBuffers: act and grad must hold B times the layer's
// size; one value short is an error, not a silently truncated copy.
func TestLayerGradShortBuffers(t *testing.T) {
	a := smallArch()
	_, p, x, target := randomSetup(t, a, 3, 4)
	m, err := NewModel(Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	sh, _ := m.LayerShape(context.Background(), "c2")
	need := 3 * sh.Size()
	if err := m.LayerGrad(context.Background(), make([]float32, need), make([]float32, need), x, target, "c2"); err != nil {
		t.Fatalf("exact buffers: %v", err)
	}
	for _, c := range []struct{ act, grad, targets int }{{need - 1, need, 3}, {need, need - 1, 3}, {need, need, 2}} {
		err := m.LayerGrad(context.Background(), make([]float32, c.act), make([]float32, c.grad), x, target[:c.targets], "c2")
		if want := fmt.Sprintf("want act and grad of %d values and 3 targets", need); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("act %d, grad %d, %d targets: error %v, want one containing %q", c.act, c.grad, c.targets, err, want)
		}
	}
}

// TestInferenceNoAllocs: like a training step (TestNoAllocs), Probs and
// InputGrad on a batch allocate nothing once warm: explainers call them
// thousands of times per record.
func TestInferenceNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops workspaces at random")
	}
	a := PaperArch()
	_, p, x, target := randomSetup(t, a, 20, 5)
	m, err := NewModel(Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	probs, grad := make([]float32, 20*m.Classes()), make([]float32, 20*m.InputLen())
	if n := testing.AllocsPerRun(5, func() { m.Probs(context.Background(), probs, x) }); n != 0 {
		t.Errorf("Probs: %v allocations per call", n)
	}
	if n := testing.AllocsPerRun(5, func() { m.InputGrad(context.Background(), grad, probs, x, target) }); n != 0 {
		t.Errorf("InputGrad: %v allocations per call", n)
	}
}

// TestInputGradTargetRange: a target outside 0..k-1 is an error naming
// it, k itself included, and nothing is computed (InputGrad and LayerGrad
// alike).
func TestInputGradTargetRange(t *testing.T) {
	a := smallArch()
	_, p, x, _ := randomSetup(t, a, 1, 6)
	m, err := NewModel(Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	k := m.Classes()
	sh, err := m.LayerShape(context.Background(), "c2")
	if err != nil {
		t.Fatal(err)
	}
	for _, y := range []int{k, -1} {
		want := fmt.Sprintf("graph \"small\": sample 0: target class %d; need 0 <= target < %d", y, k)
		g := make([]float32, m.InputLen())
		g[0] = 7
		err := m.InputGrad(context.Background(), g, nil, x, []int{y})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("InputGrad, target %d: error %v, want one containing %q", y, err, want)
		}
		if g[0] != 7 {
			t.Errorf("InputGrad, target %d: wrote a gradient", y)
		}
		act, lg := make([]float32, sh.Size()), make([]float32, sh.Size())
		if err := m.LayerGrad(context.Background(), act, lg, x, []int{y}, "c2"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LayerGrad, target %d: error %v, want one containing %q", y, err, want)
		}
	}
}

// TestSoftmaxLargeLogits: softmax subtracts the row maximum before exp, so
// logits far beyond exp's float64 range (about 709) still give the
// probabilities of their differences: (1000, 999, 0) and (-999, -1000,
// -1999) are both (e, 1, e^-999)/(e+1).
func TestSoftmaxLargeLogits(t *testing.T) {
	p := make([]float32, 6)
	Softmax(p, []float32{1000, 999, 0, -999, -1000, -1999}, 3)
	want := []float64{math.E / (math.E + 1), 1 / (math.E + 1), 0}
	for r := range 2 {
		for j, w := range want {
			if got := float64(p[r*3+j]); !(math.Abs(got-w) <= 1e-6) { // NaN fails
				t.Errorf("row %d: p[%d] = %v, want %v", r, j, got, w)
			}
		}
	}
}

// TestFoldBatchNormKept: a batchnorm followed by a ReLU cannot be folded
// into a weight; NewModel keeps it as a batchnorm carrying the composed
// affine map, and the model still computes the unfolded eval network.
func TestFoldBatchNormKept(t *testing.T) {
	a := Arch{Name: "bn-relu", InChannels: 2, InLen: 7, Layers: []Layer{
		{Kind: KindConv1D, Name: "c", Out: 3, Kernel: 3},
		{Kind: KindBatchNorm1D, Name: "bn"},
		{Kind: KindReLU},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d", Out: 4},
	}}
	// Tighter than float32 noise allows elsewhere (the error is ~2e-7):
	// the kept batchnorm's running variance must make it exactly affine.
	foldedMatches(t, a, 9, "kept batchnorm vs unfolded", 2e-6)
	if a.Classes() != 4 || (Arch{Name: "bad"}).Classes() != 0 {
		t.Errorf("Classes() = %d and %d for a valid and an invalid arch, want 4 and 0", a.Classes(), (Arch{Name: "bad"}).Classes())
	}
}

// TestLastLayerBatchNorm: a batchnorm may be the last layer. In eval mode
// the logits are then the affine map of the running statistics applied to
// the same network without it; in train mode every logit channel has batch
// mean b and biased batch variance g^2 v/(v+eps), v the variance of its
// input (the batch statistics are those of the batch itself).
func TestLastLayerBatchNorm(t *testing.T) {
	const eps = 1e-5 // the batchnorm's, graph's default
	body := []Layer{{Kind: KindConv1D, Name: "c", Out: 2, Kernel: 3}, {Kind: KindReLU}, {Kind: KindFlatten}, {Kind: KindDense, Name: "d", Out: 3}}
	a := Arch{Name: "bn-last", InChannels: 1, InLen: 6, Layers: append(slices.Clone(body), Layer{Kind: KindBatchNorm1D, Name: "bn"})}
	a0 := Arch{Name: "bn-last-body", InChannels: 1, InLen: 6, Layers: body}
	const B = 7
	net, p, x, _ := randomSetup(t, a, B, 12)
	lay0, err := NewLayout(a0)
	if err != nil {
		t.Fatal(err)
	}
	p0 := p[:lay0.Size] // the body's tensors come first, in the same order
	z0 := evalLogits(t, a0, p0, x)
	lay := net.Layout()
	g, b := lay.View(p, "bn.weight"), lay.View(p, "bn.bias")
	rm, rv := lay.View(p, "bn.running_mean"), lay.View(p, "bn.running_var")

	for i, z := range net.Forward(p, x, false, nil) {
		c := i % 3
		want := float64(g[c])*(float64(z0[i])-float64(rm[c]))/math.Sqrt(float64(rv[c])+eps) + float64(b[c])
		if math.Abs(float64(z)-want) > 1e-5*(1+math.Abs(want)) {
			t.Fatalf("eval logit %d = %v, want %v", i, z, want)
		}
	}

	z := net.Forward(p, x, true, nil)
	for c := range 3 {
		var m0, v0, m, v float64
		for s := range B {
			m0 += float64(z0[s*3+c]) / B
			m += float64(z[s*3+c]) / B
		}
		for s := range B {
			v0 += (float64(z0[s*3+c]) - m0) * (float64(z0[s*3+c]) - m0) / B
			v += (float64(z[s*3+c]) - m) * (float64(z[s*3+c]) - m) / B
		}
		wantV := float64(g[c]) * float64(g[c]) * v0 / (v0 + eps)
		if math.Abs(m-float64(b[c])) > 1e-5 || math.Abs(v-wantV) > 1e-4*wantV {
			t.Errorf("train channel %d: batch mean %v, variance %v; want %v, %v", c, m, v, b[c], wantV)
		}
	}
}

// TestWindowProbsDefinition: WindowProbs equals its definition, the class
// probability of x with samples s..s+width-1 of every channel set to the
// baseline, computed one full forward pass at a time. The first network
// keeps a batchnorm (followed by a ReLU, so not folded) and an eval-mode
// dropout inside the local stack before the global max pool, which the
// incremental path recomputes per window; the second has no global max
// pool and takes the batched plain path, with more windows than one batch.
func TestWindowProbsDefinition(t *testing.T) {
	local := Arch{Name: "local-bn", InChannels: 2, InLen: 30, Layers: []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 3, Kernel: 3},
		{Kind: KindBatchNorm1D, Name: "bn"},
		{Kind: KindReLU},
		{Kind: KindDropout, P: 0.3},
		{Kind: KindMaxPool1D, Kernel: 2},
		{Kind: KindConv1D, Name: "c2", Out: 4, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindGlobalMaxPool},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d", Out: 3},
	}}
	flat := Arch{Name: "no-gmp", InChannels: 1, InLen: 80, Layers: []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 2, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d", Out: 3},
	}}
	for _, a := range []Arch{local, flat} {
		_, p, x, _ := randomSetup(t, a, 1, 14)
		m, err := NewModel(Params{Arch: a, Data: p})
		if err != nil {
			t.Fatal(err)
		}
		n, k, T := m.InputLen(), m.Classes(), a.InLen
		for _, width := range []int{1, 4, T} {
			var starts []int
			for s := 0; s+width <= T; s++ {
				starts = append(starts, s)
			}
			got := make([]float32, len(starts))
			windowProbs(t, m, got, x, nil, starts, width, 0.5, 2)
			xo, pr := make([]float32, n), make([]float32, k)
			for j, s := range starts {
				copy(xo, x)
				for c := range a.InChannels {
					for tt := s; tt < s+width; tt++ {
						xo[c*T+tt] = 0.5
					}
				}
				if err := m.PlainProbs(context.Background(), pr, xo); err != nil {
					t.Fatal(err)
				}
				if math.Abs(float64(got[j]-pr[2])) > 1e-6 {
					t.Fatalf("%s width %d window %d: WindowProbs %v, definition %v", a.Name, width, s, got[j], pr[2])
				}
			}
		}
	}
}

// foldedMatches checks that the folded inference model (Probs) of a
// random network of arch a gives the probabilities of the unfolded one's
// eval-mode logits on three random inputs, within tol.
func foldedMatches(t *testing.T, a Arch, seed uint64, what string, tol float64) {
	t.Helper()
	net, p, x, _ := randomSetup(t, a, 3, seed)
	want := make([]float32, 3*net.Classes())
	Softmax(want, net.Forward(p, x, false, nil), net.Classes())
	m, err := NewModel(Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 3*net.Classes())
	if err := m.Probs(context.Background(), got, x); err != nil {
		t.Fatal(err)
	}
	within(t, what, got, want, tol)
}
