package eval

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMeanMapTermClosedForms: with log(2N/delta) = 2S the term is C_x;
// it is linear in C_x and halves when S is four times larger.
func TestMeanMapTermClosedForms(t *testing.T) {
	for _, c := range []struct{ N, S int }{{1, 1}, {1, 2}, {10, 3}, {640, 5}} {
		// delta = 2N e^{-2S} makes log(2N/delta) / (2S) = 1.
		delta := 2 * float64(c.N) * math.Exp(-2*float64(c.S))
		if delta >= 1 {
			continue
		}
		if got := MeanMapTerm(0.7, c.N, c.S, delta); math.Abs(got-0.7) > 1e-15 {
			t.Errorf("N %d S %d: term %v, want C_x = 0.7", c.N, c.S, got)
		}
	}
	for _, S := range []int{1, 5, 20} {
		a, b := MeanMapTerm(1, 640, S, 0.05), MeanMapTerm(1, 640, 4*S, 0.05)
		if math.Abs(a-2*b) > 1e-15 {
			t.Errorf("S = %d: term %v, at 4S %v", S, a, b)
		}
		if c := MeanMapTerm(3, 640, S, 0.05); math.Abs(c-3*a) > 1e-15 {
			t.Errorf("S = %d: term(C_x = 3) %v, 3 term(1) = %v", S, c, 3*a)
		}
	}
	if MeanMapTerm(0, 5, 5, 0.1) != 0 {
		t.Error("C_x = 0: term not 0")
	}
	expectPanic(t, "delta 0", func() { MeanMapTerm(1, 5, 5, 0) })
	expectPanic(t, "delta 1", func() { MeanMapTerm(1, 5, 5, 1) })
	expectPanic(t, "C_x < 0", func() { MeanMapTerm(-1, 5, 5, 0.1) })
	expectPanic(t, "C_x NaN", func() { MeanMapTerm(math.NaN(), 5, 5, 0.1) })
	expectPanic(t, "N = 0", func() { MeanMapTerm(1, 0, 5, 0.1) })
	expectPanic(t, "S = 0", func() { MeanMapTerm(1, 5, 0, 0.1) })
}

// TestMeanMapBound: C_x is the largest coordinate range of the draws.
func TestMeanMapBound(t *testing.T) {
	draws := [][]float64{
		{0, 0.5, -1, 2},
		{1, 0.5, 3, 2.25},
		{0.5, 0.5, 1, 2},
	}
	cx, term := MeanMapBound(draws, 0.1)
	if cx != 4 || term != MeanMapTerm(4, 4, 3, 0.1) {
		t.Errorf("C_x %v term %v; want 4 (coordinate 2), %v", cx, term, MeanMapTerm(4, 4, 3, 0.1))
	}
	// The range is that of the largest coordinate, wherever it is.
	if cx, _ := MeanMapBound([][]float64{{5, 0}, {5, -0.5}}, 0.1); cx != 0.5 {
		t.Errorf("C_x %v, want 0.5", cx)
	}
	if cx, term := MeanMapBound([][]float64{{1, 2}}, 0.1); cx != 0 || term != 0 {
		t.Errorf("one draw: %v, %v", cx, term)
	}
	if cx, term := MeanMapBound([][]float64{{1, 2}, {1, math.NaN()}}, 0.1); !math.IsNaN(cx) || !math.IsNaN(term) {
		t.Errorf("NaN draw: %v, %v", cx, term)
	}
	if cx, _ := MeanMapBound([][]float64{{math.NaN(), 2}, {1, 2}}, 0.1); !math.IsNaN(cx) {
		t.Errorf("NaN first draw: %v", cx)
	}
	expectPanic(t, "no draws", func() { MeanMapBound(nil, 0.1) })
	expectPanic(t, "empty", func() { MeanMapBound([][]float64{{}}, 0.1) })
	expectPanic(t, "ragged", func() { MeanMapBound([][]float64{{1}, {1, 2}}, 0.1) })
	expectPanic(t, "delta", func() { MeanMapBound([][]float64{{1}}, 1.5) })
}

// TestMeanMapTermHolds: the corollary's guarantee by simulation, with
// the draws Hoeffding's bound is tightest for: fair coin flips in {0, 1}
// (C_x = 1, mean 1/2). The fraction of experiments in which some
// coordinate of the mean of S draws is farther than the term from 1/2
// stays below delta, while a third of the term is exceeded in most (the
// experiment can tell a term that is too small).
func TestMeanMapTermHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(65, 66))
	const N, S, delta, trials = 20, 100, 0.2, 2000
	term := MeanMapTerm(1, N, S, delta)
	bad, badThird := 0, 0
	for range trials {
		worst := 0.0
		for range N {
			m := 0
			for range S {
				m += int(r.Uint64() & 1)
			}
			worst = max(worst, math.Abs(float64(m)/S-0.5))
		}
		if worst > term {
			bad++
		}
		if worst > term/3 {
			badThird++
		}
	}
	if rate := float64(bad) / trials; rate > delta {
		t.Errorf("term %v exceeded in %v of the experiments, want at most delta = %v", term, rate, delta)
	}
	if rate := float64(badThird) / trials; rate < 0.5 {
		t.Errorf("term/3 = %v exceeded in only %v of the experiments: the simulation has no power", term/3, rate)
	}
}
