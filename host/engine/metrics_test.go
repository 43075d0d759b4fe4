package engine

import (
	"context"
	"math"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// TestMeanModel: the posterior predictive's probabilities are the mean of
// the draws' (two constant networks, p and q: (p+q)/2 for every input),
// its logits their logarithm, also along chains of perturbed copies, its
// input gradient the mean of the draws'
// (0 here: the networks are constant), and it has no layers.
func TestMeanModel(t *testing.T) {
	ctx := context.Background()
	p := []float64{0.7, 0.2, 0.1}
	q := []float64{0.1, 0.3, 0.6}
	var models []*driver.DrawModel
	for _, pr := range [][]float64{p, q} {
		dm, err := driver.OpenDraw(ctx, sdk.Draw{Params: drawParams(t, pr)}, driver.ModelCalls{})
		if err != nil {
			t.Fatal(err)
		}
		defer dm.Close()
		models = append(models, dm)
	}
	m := &meanModel{models: models, arch: tinyArch()}
	if m.Classes() != classes || m.InputLen() != inLen {
		t.Fatalf("%d classes of inputs of %d", m.Classes(), m.InputLen())
	}
	x := make([]float32, 2*inLen)
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	probs := make([]float32, 2*classes)
	if err := m.Probs(ctx, probs, x); err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, 2*classes)
	if err := m.Logits(ctx, logits, x); err != nil {
		t.Fatal(err)
	}
	for b := range 2 {
		for c := range classes {
			want := (p[c] + q[c]) / 2
			if got := float64(probs[b*classes+c]); math.Abs(got-want) > 1e-6 {
				t.Errorf("input %d class %d: p %v, want %v", b, c, got, want)
			}
			if got := float64(logits[b*classes+c]); math.Abs(got-math.Log(want)) > 1e-5 {
				t.Errorf("input %d class %d: logit %v, want log %v = %v", b, c, got, want, math.Log(want))
			}
		}
	}
	// the chains of perturbed copies (the metrics' path): the same mean
	// and logarithm at every copy
	for _, lg := range []bool{false, true} {
		req := nn.Chain{X: x, Classes: []int{0, 2}, Steps: 3, Logits: lg, Edit: func(b, k int, cur []float32) (int, int) {
			cur[k] = float32(b + k)
			return k, k + 1
		}}
		out := make([]float32, 6)
		if err := nn.Chained(ctx, m, req, out); err != nil {
			t.Fatal(err)
		}
		for j, v := range out {
			c := req.Classes[j/3]
			want := (p[c] + q[c]) / 2
			if lg {
				want = math.Log(want)
			}
			if math.Abs(float64(v)-want) > 1e-5 {
				t.Errorf("chain %d copy %d (logits %v): %v, want %v", j/3, j%3, lg, v, want)
			}
		}
	}
	grad := make([]float32, len(x))
	for i := range grad {
		grad[i] = 9
	}
	if err := m.InputGrad(ctx, grad, nil, x, []int{0, 2}); err != nil {
		t.Fatal(err)
	}
	for i, g := range grad {
		if g != 0 {
			t.Fatalf("gradient %v at %d of constant networks", g, i)
		}
	}
	if _, err := m.LayerShape(ctx, "c"); err == nil {
		t.Error("the predictive has a layer")
	}
}
