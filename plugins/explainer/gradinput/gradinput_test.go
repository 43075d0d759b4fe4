package gradinput

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// tiny returns a small random network: 32 samples, two convolutions,
// batchnorm, global max, dense to 4 classes.
func tiny(t *testing.T, seed uint64) nn.Params {
	t.Helper()
	a := nn.Arch{Name: "tiny", InChannels: 1, InLen: 32, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 4, Kernel: 5},
		{Kind: nn.KindReLU},
		{Kind: nn.KindBatchNorm1D, Name: "bn1"},
		{Kind: nn.KindConv1D, Name: "conv2", Out: 6, Kernel: 3},
		{Kind: nn.KindReLU},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc", Out: 4},
	}}
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	r := rng.New(seed)
	d := make([]float32, lay.Size)
	for i := range d {
		d[i] = float32(0.5 * r.NormFloat64())
	}
	for i := range lay.View(d, "bn1.running_var") {
		lay.View(d, "bn1.running_var")[i] = float32(0.5 + r.Float64())
	}
	return nn.Params{Arch: a, Data: d}
}

func inputs(b, n int, seed uint64) ([]float32, []int) {
	r := rng.New(seed)
	x := make([]float32, b*n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]int, b)
	for i := range y {
		y[i] = i % 4
	}
	return x, y
}

func TestConformance(t *testing.T) {
	x, y := inputs(5, 32, 3)
	for _, cfg := range []sdk.Config{nil, {"times_input": false}} {
		sdktest.Explainer(t, New(), sdktest.ExplainerCase{Model: tiny(t, 1), X: x, Targets: y, Config: cfg})
	}
}

// TestFiniteDifferences checks the maps against central differences of
// the probability, computed independently with Probs. The step is small
// enough that no max pool switches its winner (a kink would break the
// difference), large enough for float32 probabilities.
func TestFiniteDifferences(t *testing.T) {
	p := tiny(t, 2)
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	x, y := inputs(3, 32, 4)
	maps, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y})
	if err != nil {
		t.Fatal(err)
	}
	const h = 1e-3
	probs := make([]float32, 4)
	prob := func(b int, xb []float32) float64 {
		if err := m.Probs(context.Background(), probs, xb); err != nil {
			t.Fatal(err)
		}
		return float64(probs[y[b]])
	}
	worst, scale := 0.0, 0.0
	for b := range y {
		xb := append([]float32(nil), x[b*32:(b+1)*32]...)
		for i := range xb {
			v := xb[i]
			xb[i] = v + h
			up := prob(b, xb)
			xb[i] = v - h
			down := prob(b, xb)
			xb[i] = v
			want := float64(v) * (up - down) / (2 * h)
			worst = math.Max(worst, math.Abs(maps[b][i]-want))
			scale = math.Max(scale, math.Abs(want))
		}
	}
	if scale == 0 {
		t.Fatal("all finite differences are 0: the test network is degenerate")
	}
	t.Logf("max |map - x * finite difference| = %.3g, scale %.3g", worst, scale)
	if worst > 2e-3*scale {
		t.Errorf("max |map - x * finite difference| = %.3g, scale %.3g", worst, scale)
	}
}

// TestGolden compares with PyTorch: x * d p_label / d x of the paper's
// network on the 16 golden waveforms (Captum's InputXGradient is this
// product).
func TestGolden(t *testing.T) {
	m, x, y, dir := paper.Inference(t)
	grad := golden.Flat(golden.CSV32(t, filepath.Join(dir, "input_grad.csv")))
	maps, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y})
	if err != nil {
		t.Fatal(err)
	}
	n := m.InputLen()
	worst, scale := 0.0, 0.0
	for b := range maps {
		for i, v := range maps[b] {
			want := float64(x[b*n+i]) * float64(grad[b*n+i])
			worst = math.Max(worst, math.Abs(v-want))
			scale = math.Max(scale, math.Abs(want))
		}
	}
	t.Logf("max |diff| to PyTorch %.3g (largest value %.3g)", worst, scale)
	if worst > 1e-5*scale {
		t.Errorf("max |diff| to PyTorch %.3g, want <= 1e-5 x %.3g", worst, scale)
	}
}
