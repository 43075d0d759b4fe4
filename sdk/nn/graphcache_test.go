package nn

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
)

// TestGraphModelsShareTrunkCache: two graph models of the paper network
// that differ only in fc2 (two MC-dropout draws), given one TrunkCache,
// share the pooled vectors (the second call hits), and each gets the
// bytes it gets without the cache, with the
// unperturbed probability of PlainProbs bit for bit; a model of other
// trunk parameters does not read the entry.
func TestGraphModelsShareTrunkCache(t *testing.T) {
	a, err := GraphArch(graphtest.PaperGraph()).Reshaped(3, 80, 5)
	if err != nil {
		t.Fatal(err)
	}
	lay, err := NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	theta := make([]float32, lay.Size)
	for i := range theta {
		theta[i] = float32(rng.NormFloat64() * 0.4)
	}
	for _, tn := range lay.Tensors {
		if len(tn.Name) > 12 && tn.Name[len(tn.Name)-12:] == ".running_var" {
			for i := tn.Offset; i < tn.Offset+tn.Size; i++ {
				theta[i] = 0.5 + float32(math.Abs(float64(theta[i])))
			}
		}
	}
	draw := func(scale float32, trunk bool) *GraphModel {
		p := append([]float32(nil), theta...)
		for _, v := range []string{"fc2.weight"} {
			w := lay.View(p, v)
			for i := range w {
				w[i] *= scale
			}
		}
		if trunk {
			lay.View(p, "conv1.bias")[0] += 0.25
		}
		m, err := Open(Params{Arch: a, Data: p})
		if err != nil {
			t.Fatal(err)
		}
		return m.(*GraphModel)
	}
	m1, m2, m3 := draw(1, false), draw(0.5, false), draw(0.5, true)
	x := make([]float32, m1.InputLen())
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	var starts []int
	for s := 0; s+20 <= 80; s += 3 {
		starts = append(starts, s)
	}
	c := NewTrunkCache(1 << 20)
	check := func(m *GraphModel, wantHits int64) {
		t.Helper()
		ctx := context.Background()
		r := Perturbation{X: x, Class: 2, Baseline: 0.1, Starts: starts, Width: 20, Channel: AllChannels, Unperturbed: true, Cache: c}
		got := make([]float32, len(starts)+1)
		if err := Perturbed(ctx, m, r, got); err != nil {
			t.Fatal(err)
		}
		if h, _ := c.Stats(); h != wantHits {
			t.Errorf("%d hits, want %d", h, wantHits)
		}
		r.Cache = nil
		want := make([]float32, len(starts)+1)
		if err := Perturbed(ctx, m, r, want); err != nil {
			t.Fatal(err)
		}
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("copy %d: %v through the cache, %v without", j, got[j], want[j])
			}
		}
		probs := make([]float32, m.Classes())
		if err := m.PlainProbs(ctx, probs, x); err != nil {
			t.Fatal(err)
		}
		if p0 := got[len(starts)]; math.Float32bits(p0) != math.Float32bits(probs[2]) {
			t.Errorf("unperturbed probability %v, PlainProbs %v", p0, probs[2])
		}
	}
	check(m1, 0)
	check(m2, 1)
	check(m3, 1)
}
