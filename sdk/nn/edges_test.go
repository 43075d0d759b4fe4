package nn

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestTrainNonFiniteValidation: a validation set whose loss is never
// finite leaves no epoch to choose; Train says so instead of returning the
// zero vector as a network. One finite epoch is enough to choose.
func TestTrainNonFiniteValidation(t *testing.T) {
	a := plainArch()
	train := plainData(8, 1, false)
	val := plainData(4, 2, false)
	for i := range val.X {
		val.X[i] = math.MaxFloat32 * float32(1-2*(i%2)) // finite, but the logits overflow
	}
	cfg := plainCfg()
	cfg.Epochs = 2
	_, err := Train(context.Background(), a, train, val, cfg, 1, TrainOptions{})
	if err == nil || !strings.Contains(err.Error(), "validation loss was never finite in 2 epochs") {
		t.Fatalf("non-finite validation: %v", err)
	}
	res, err := Train(context.Background(), a, train, plainData(4, 2, false), cfg, 1, TrainOptions{})
	if err != nil || res.BestEpoch < 1 {
		t.Fatalf("finite validation: best epoch %d, %v", res.BestEpoch, err)
	}
}

// TestBatchNormFirst: a network whose first layer is a batchnorm folds to
// the same function, and its input gradient matches central differences.
func TestBatchNormFirst(t *testing.T) {
	foldedMatches(t, bnFirstArch(), 4, "batchnorm first: folded vs unfolded", 1e-5)
	net, p, x, y := randomSetup(t, bnFirstArch(), 2, 6)
	m, err := NewModel(Params{Arch: net.Arch(), Data: p})
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float32, len(x))
	m.InputGrad(g, nil, x, y)
	k, n := m.Classes(), m.InputLen()
	prob := func(xx []float32, b int) float64 {
		pr := make([]float32, len(y)*k)
		m.Probs(pr, xx)
		return float64(pr[b*k+y[b]])
	}
	for b := range y {
		for i := range n {
			const h = 1e-3
			xp, xm := append([]float32(nil), x...), append([]float32(nil), x...)
			xp[b*n+i] += h
			xm[b*n+i] -= h
			if fd := (prob(xp, b) - prob(xm, b)) / (2 * h); math.Abs(fd-float64(g[b*n+i])) > 2e-3 {
				t.Errorf("input %d coordinate %d: gradient %g, finite difference %g", b, i, g[b*n+i], fd)
			}
		}
	}
}
