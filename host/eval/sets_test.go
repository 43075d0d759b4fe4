package eval

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/plugins/summary/agreement"
	"github.com/uaxai/uaxai/sdk"
)

func TestSetScoreClosedForms(t *testing.T) {
	for _, c := range []struct {
		name      string
		set, mask []bool
		p, r, f1  float64
		ok        bool
	}{
		{"perfect", []bool{true, true, false}, []bool{true, true, false}, 1, 1, 1, true},
		{"disjoint", []bool{true, false, false}, []bool{false, true, true}, 0, 0, 0, true},
		// |E| = 4, |M| = 2, |E ∩ M| = 1: P = 1/4, R = 1/2, F1 = 2/6.
		{"partial", []bool{true, true, true, true, false}, []bool{true, false, false, false, true}, 0.25, 0.5, 2.0 / 6, true},
		// |E| = 1 inside |M| = 3: P = 1, R = 1/3, F1 = 1/2.
		{"subset", []bool{false, true, false}, []bool{true, true, true}, 1, 1.0 / 3, 0.5, true},
		{"empty set", []bool{false, false}, []bool{true, false}, 0, 0, 0, true},
		{"empty mask", []bool{true, false}, []bool{false, false}, 0, 0, 0, false},
		{"both empty", []bool{false}, []bool{false}, 0, 0, 0, false},
		{"nothing", nil, nil, 0, 0, 0, false},
	} {
		p, r, f1, ok := SetScore(c.set, c.mask)
		if p != c.p || r != c.r || math.Abs(f1-c.f1) > 1e-15 || ok != c.ok {
			t.Errorf("%s: P %v R %v F1 %v ok %v; want %v %v %v %v", c.name, p, r, f1, ok, c.p, c.r, c.f1, c.ok)
		}
		// F1 is the harmonic mean of P and R when P + R > 0.
		if ok && p+r > 0 && math.Abs(f1-2*p*r/(p+r)) > 1e-15 {
			t.Errorf("%s: F1 %v, 2PR/(P+R) = %v", c.name, f1, 2*p*r/(p+r))
		}
	}
	expectPanic(t, "SetScore lengths", func() { SetScore([]bool{true}, []bool{true, false}) })
}

// TestAgreementGridIsThePlugin: every cell of the grid is the
// summary.agreement plugin's set, scored by SetScore, on random draws with
// ties, NaN, deltas at draw values and etas whose float product with S
// rounds up (0.07 with S = 100).
func TestAgreementGridIsThePlugin(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	etas := []float64{0, 0.07, 0.2, 1.0 / 3, 0.5, 0.6, 0.8, 0.95, 1}
	for trial := range 60 {
		S := []int{1, 2, 5, 20, 100}[trial%5]
		N := 1 + r.IntN(120)
		draws := make([][]float64, S)
		for s := range draws {
			draws[s] = make([]float64, N)
			for n := range draws[s] {
				v := r.Float64()
				if trial%3 == 0 {
					v = math.Round(v*8) / 8 // ties, and draws equal to delta
				}
				if r.IntN(50) == 0 {
					v = math.NaN()
				}
				draws[s][n] = v
			}
		}
		mask := make([]bool, N)
		for n := range mask {
			mask[n] = r.IntN(3) == 0
		}
		mask[r.IntN(N)] = true
		deltas := []float64{0.5, math.Inf(-1), -0.5, 0, 0.125, 0.25, 0.5, r.Float64(), 0.875, 1, math.Inf(1), math.Copysign(0, -1), 0.25} // unsorted, repeated, -0
		grid, ok := AgreementGrid(nil, draws, mask, etas, deltas)
		if !ok || len(grid) != len(etas)*len(deltas) {
			t.Fatalf("trial %d: ok %v, %d cells", trial, ok, len(grid))
		}
		for i, eta := range etas {
			for j, delta := range deltas {
				set := agreement.Agreement(make([]bool, N), draws, delta, eta)
				size, hits := 0, 0
				for n, e := range set {
					if e {
						size++
						if mask[n] {
							hits++
						}
					}
				}
				p, rc, f1, _ := SetScore(set, mask)
				want := SetMatch{Eta: eta, Delta: delta, Precision: p, Recall: rc, F1: f1, Size: size, Hits: hits}
				if got := grid[i*len(deltas)+j]; got != want {
					t.Errorf("trial %d (S = %d): eta %v delta %v: %+v, want %+v", trial, S, eta, delta, got, want)
				}
			}
		}
	}
}

// TestAgreementGridSummarise: one cell against the plugin's Summarise
// with the recipe's configuration, and the output buffer reused.
func TestAgreementGridSummarise(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	draws := members(r, 20, 640, false)
	for _, d := range draws {
		for n := range d {
			d[n] = math.Abs(d[n]) / 8 // below delta = 1 (a normal draw below 8)
		}
	}
	mask := make([]bool, 640)
	for n := 200; n < 300; n++ {
		mask[n] = true
	}
	for n := 200; n < 300; n++ {
		for s := range 15 {
			draws[s][n] += 2 // above delta in 15 of the 20 draws
		}
	}
	dst := make([]SetMatch, 2)
	grid, ok := AgreementGrid(dst, draws, mask, []float64{0.7, 0.8}, []float64{1})
	if !ok || &grid[0] != &dst[0] {
		t.Fatal("dst not used")
	}
	res, err := agreement.New().Summarise(context.Background(), [][][]float64{draws}, sdk.Config{"eta": 0.7, "delta": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	p, rc, f1, _ := SetScore(res[0].Set, mask)
	if g := grid[0]; g.Precision != p || g.Recall != rc || g.F1 != f1 {
		t.Errorf("eta 0.7: %+v, plugin P %v R %v F1 %v", g, p, rc, f1)
	}
	// 15/20 = 0.75: all of the mask at eta 0.7, none of it at 0.8.
	if g := grid[0]; g.Recall != 1 || g.Hits != 100 {
		t.Errorf("eta 0.7: %+v, want the whole mask", g)
	}
	if g := grid[1]; g.Hits != 0 {
		t.Errorf("eta 0.8: %+v, want no hit", g)
	}
}

func TestAgreementGridEdges(t *testing.T) {
	draws := [][]float64{{1, 0, 2}, {1, 0, 2}}
	// Empty mask: not scored, the grid's parameters kept.
	grid, ok := AgreementGrid(nil, draws, []bool{false, false, false}, []float64{0.5}, []float64{0, 1})
	if ok || grid[1] != (SetMatch{Eta: 0.5, Delta: 1}) || grid[0] != (SetMatch{Eta: 0.5, Delta: 0}) {
		t.Errorf("empty mask: %+v, %v", grid, ok)
	}
	// eta = 0: every coordinate, even NaN ones and above +Inf.
	nan := [][]float64{{math.NaN(), 0, 2}}
	grid, _ = AgreementGrid(nil, nan, []bool{true, false, false}, []float64{0}, []float64{math.Inf(1)})
	if g := grid[0]; g.Size != 3 || g.Hits != 1 || g.Recall != 1 || g.Precision != 1.0/3 {
		t.Errorf("eta 0: %+v", g)
	}
	// A NaN never exceeds delta, not even -Inf.
	grid, _ = AgreementGrid(nil, nan, []bool{true, false, false}, []float64{1}, []float64{math.Inf(-1)})
	if g := grid[0]; g.Size != 2 || g.Hits != 0 || g.F1 != 0 {
		t.Errorf("NaN draw: %+v", g)
	}
	expectPanic(t, "no draws", func() { AgreementGrid(nil, nil, []bool{true}, []float64{0.5}, []float64{0}) })
	expectPanic(t, "ragged", func() { AgreementGrid(nil, [][]float64{{1, 2}}, []bool{true}, []float64{0.5}, []float64{0}) })
	expectPanic(t, "eta > 1", func() { AgreementGrid(nil, draws, []bool{true, true, true}, []float64{1.5}, []float64{0}) })
	expectPanic(t, "eta < 0", func() { AgreementGrid(nil, draws, []bool{true, true, true}, []float64{-0.1}, []float64{0}) })
	expectPanic(t, "eta NaN", func() { AgreementGrid(nil, draws, []bool{true, true, true}, []float64{math.NaN()}, []float64{0}) })
	expectPanic(t, "delta NaN", func() { AgreementGrid(nil, draws, []bool{true, true, true}, []float64{0.5}, []float64{math.NaN()}) })
	expectPanic(t, "dst", func() {
		AgreementGrid(make([]SetMatch, 1), draws, []bool{true, true, true}, []float64{0.5}, []float64{0, 1})
	})
}
