package eval

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/plugins/summary/band"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/rng"
	"github.com/uaxai/uaxai/sdk/stat"
)

// TestCoverageClosedBand: the band is closed at both ends, NaN is never
// covered, and total counts every (draw, coordinate) pair.
func TestCoverageClosedBand(t *testing.T) {
	lower := []float64{0, 1, math.NaN(), 2}
	upper := []float64{1, 1, 5, 3}
	held := [][]float64{
		{0, 1, 3, 3},                                   // ends: covered at 0, 1, 3 (NaN bound: no)
		{1, math.Nextafter(1, 0), 3, 2},                // 1 in [0,1]; just below 1 not in [1,1]
		{-1e-300, math.Nextafter(1, 2), 3, math.NaN()}, // just outside, NaN draw
	}
	c, tot := Coverage(lower, upper, held)
	if c != 3+2 || tot != 12 {
		t.Errorf("Coverage = %d/%d, want 5/12", c, tot)
	}
	if c, tot := Coverage(lower, upper, nil); c != 0 || tot != 0 {
		t.Errorf("no held-out draw: %d/%d", c, tot)
	}
	expectPanic(t, "Coverage bounds", func() { Coverage([]float64{1}, []float64{1, 2}, nil) })
	expectPanic(t, "Coverage held", func() { Coverage([]float64{1}, []float64{1}, [][]float64{{1, 2}}) })
}

// TestSplitCoverageIsTheBandPlugin: the band of SplitCoverage is the
// summary.iband plugin's Summarise of the build draws, bit for bit, and
// the count is a direct count against it.
func TestSplitCoverageIsTheBandPlugin(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for trial := range 60 {
		S, N := 3+r.IntN(25), 1+r.IntN(100)
		draws := members(r, S, N, trial%2 == 0)
		nBuild := 2 + r.IntN(S-2)
		beta := []float64{0.9, 0.5, 0.8, 0.95, 0.1}[trial%5]
		lower, upper := make([]float64, N), make([]float64, N)
		c, tot := SplitCoverage(lower, upper, draws, nBuild, beta)

		res, err := band.NewInterpolated().Summarise(context.Background(), [][][]float64{draws[:nBuild]}, sdk.Config{"beta": beta})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for n := range N {
			lo, hi := res[0].Lower[n], res[0].Upper[n]
			if math.Float64bits(lo) != math.Float64bits(lower[n]) || math.Float64bits(hi) != math.Float64bits(upper[n]) {
				t.Fatalf("trial %d, n = %d: band [%v, %v], plugin [%v, %v]", trial, n, lower[n], upper[n], lo, hi)
			}
			for _, h := range draws[nBuild:] {
				if lo <= h[n] && h[n] <= hi {
					want++
				}
			}
		}
		if c != want || tot != (S-nBuild)*N {
			t.Errorf("trial %d: %d/%d, want %d/%d", trial, c, tot, want, (S-nBuild)*N)
		}
		// nil buffers: the same count.
		if c2, _ := SplitCoverage(nil, nil, draws, nBuild, beta); c2 != c {
			t.Errorf("trial %d: nil buffers give %d, want %d", trial, c2, c)
		}
	}
	// Ties: all-equal draws are covered everywhere.
	eq := [][]float64{{0.5, 0, 2}, {0.5, 0, 2}, {0.5, 0, 2}, {0.5, 0, 2}}
	if c, tot := SplitCoverage(nil, nil, eq, 2, 0.5); c != tot || tot != 6 {
		t.Errorf("equal draws: %d/%d", c, tot)
	}
	d := members(r, 4, 3, false)
	expectPanic(t, "nBuild = 1", func() { SplitCoverage(nil, nil, d, 1, 0.9) })
	expectPanic(t, "nBuild = S", func() { SplitCoverage(nil, nil, d, 4, 0.9) })
	expectPanic(t, "beta = 0", func() { SplitCoverage(nil, nil, d, 2, 0) })
	expectPanic(t, "beta = 1", func() { SplitCoverage(nil, nil, d, 2, 1) })
	expectPanic(t, "beta NaN", func() { SplitCoverage(nil, nil, d, 2, math.NaN()) })
	expectPanic(t, "ragged", func() { SplitCoverage(nil, nil, append(d, []float64{1}), 2, 0.5) })
	expectPanic(t, "short lower", func() { SplitCoverage(make([]float64, 2), nil, d, 2, 0.5) })
	expectPanic(t, "short upper", func() { SplitCoverage(nil, make([]float64, 2), d, 2, 0.5) })
}

// TestPartitionReference: the mean equals the recomputation with the
// documented streams; partition p does not depend on parts; and for many
// partitions it approaches the exhaustive mean over all C(S, nBuild)
// build sets.
func TestPartitionReference(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	const S, N, nBuild, beta = 8, 30, 4, 0.8
	draws := members(r, S, N, false)
	const seed, record = 99, 17

	// One partition at a time, from rng.For directly.
	rate := func(p int) float64 {
		perm := rng.For(seed, PartitionPurpose, "", record, p).Perm(S)
		pd := make([][]float64, S)
		for i, j := range perm {
			pd[i] = draws[j]
		}
		c, tot := SplitCoverage(nil, nil, pd, nBuild, beta)
		return float64(c) / float64(tot)
	}
	const parts = 7
	var sum float64
	for p := range parts {
		sum += rate(p)
	}
	got := PartitionReference(nil, nil, draws, nBuild, beta, parts, seed, record)
	if got != sum/parts {
		t.Errorf("PartitionReference = %v, recomputed %v", got, sum/parts)
	}
	if again := PartitionReference(make([]float64, N), make([]float64, N), draws, nBuild, beta, parts, seed, record); again != got {
		t.Errorf("not deterministic: %v, then %v", got, again)
	}
	one := PartitionReference(nil, nil, draws, nBuild, beta, 1, seed, record)
	two := PartitionReference(nil, nil, draws, nBuild, beta, 2, seed, record)
	if one != rate(0) || math.Abs(2*two-one-rate(1)) > 1e-15 {
		t.Errorf("partitions 0, 1: %v, %v; want %v, %v", one, 2*two-one, rate(0), rate(1))
	}
	if other := PartitionReference(nil, nil, draws, nBuild, beta, parts, seed, record+1); other == got {
		t.Errorf("record %d and %d: the same partitions (%v)", record, record+1, got)
	}

	// Exhaustive: every build set of size nBuild, in the order of the
	// draws (the band does not depend on the order of its draws).
	var rates []float64
	for mask := range 1 << S {
		if popcount(mask) != nBuild {
			continue
		}
		var pd [][]float64
		for s := range S {
			if mask&(1<<s) != 0 {
				pd = append(pd, draws[s])
			}
		}
		for s := range S {
			if mask&(1<<s) == 0 {
				pd = append(pd, draws[s])
			}
		}
		c, tot := SplitCoverage(nil, nil, pd, nBuild, beta)
		rates = append(rates, float64(c)/float64(tot))
	}
	if len(rates) != 70 {
		t.Fatalf("%d build sets, want C(8, 4) = 70", len(rates))
	}
	exact, sd := MeanSD(rates)
	const many = 3000
	ref := PartitionReference(nil, nil, draws, nBuild, beta, many, seed, record)
	if se := sd / math.Sqrt(many); math.Abs(ref-exact) > 4*se {
		t.Errorf("%d partitions: %v, exhaustive mean %v (se %v)", many, ref, exact, se)
	}
	expectPanic(t, "parts = 0", func() { PartitionReference(nil, nil, draws, nBuild, beta, 0, seed, record) })
	expectPanic(t, "nBuild", func() { PartitionReference(nil, nil, draws, S, beta, 3, seed, record) })
}

func popcount(x int) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

// TestLOOMinMaxCoverage against a brute-force band of the others, with
// ties and NaN.
func TestLOOMinMaxCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	for trial := range 200 {
		S, N := 2+r.IntN(8), 1+r.IntN(30)
		draws := make([][]float64, S)
		for s := range draws {
			draws[s] = make([]float64, N)
			for n := range draws[s] {
				draws[s][n] = float64(r.IntN(1 + trial%5)) // ties, often all equal
				if r.IntN(40) == 0 {
					draws[s][n] = math.NaN()
				}
			}
		}
		want := 0
		for j := range S {
			for n := range N {
				lo, hi := math.Inf(1), math.Inf(-1)
				nan := math.IsNaN(draws[j][n])
				for s := range S {
					if s == j {
						continue
					}
					v := draws[s][n]
					nan = nan || math.IsNaN(v)
					lo, hi = min(lo, v), max(hi, v)
				}
				if !nan && lo <= draws[j][n] && draws[j][n] <= hi {
					want++
				}
			}
		}
		c, tot := LOOMinMaxCoverage(draws)
		if c != want || tot != S*N {
			t.Errorf("trial %d (S = %d): %d/%d, brute force %d/%d", trial, S, c, tot, want, S*N)
		}
	}
	// All equal: 1; two different draws: 0.
	if c, tot := LOOMinMaxCoverage([][]float64{{1, 2}, {1, 2}, {1, 2}}); c != tot {
		t.Errorf("equal draws: %d/%d", c, tot)
	}
	if c, _ := LOOMinMaxCoverage([][]float64{{1, 2}, {2, 1}}); c != 0 {
		t.Errorf("two different draws: %d covered", c)
	}
	expectPanic(t, "one draw", func() { LOOMinMaxCoverage([][]float64{{1}}) })
	expectPanic(t, "ragged", func() { LOOMinMaxCoverage([][]float64{{1}, {1, 2}}) })
}

// TestOrderBandClosedForms: Proposition prop:orderband with continuous
// iid draws. The LOO min-max coverage is (S-2)/S: without ties, every
// coordinate has one unique minimum and one unique maximum, so it holds
// exactly for every record, not only in expectation. The order-statistic
// band (k, l) of S draws covers a new draw with probability (l-k)/(S+1):
// by simulation, within 4 standard errors.
func TestOrderBandClosedForms(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	const records, N = 400, 50
	for _, S := range []int{2, 5, 12} {
		for rec := range 20 {
			c, tot := LOOMinMaxCoverage(members(r, S, N, false))
			if c*S != (S-2)*tot {
				t.Errorf("S = %d, record %d: LOO min-max coverage %d/%d, want (S-2)/S", S, rec, c, tot)
			}
		}
	}
	for _, c := range []struct{ S, k, l int }{{5, 1, 5}, {5, 2, 4}, {19, 1, 19}, {19, 3, 10}, {9, 4, 5}} {
		covered, total := 0, 0
		lower, upper := make([]float64, N), make([]float64, N)
		for range records {
			d := members(r, c.S+1, N, false)
			stat.Band(lower, upper, d[:c.S], c.k, c.l)
			cv, tot := Coverage(lower, upper, d[c.S:])
			covered += cv
			total += tot
		}
		p := float64(c.l-c.k) / float64(c.S+1)
		se := math.Sqrt(p * (1 - p) / float64(total))
		if got := float64(covered) / float64(total); math.Abs(got-p) > 4*se {
			t.Errorf("band (%d, %d) of %d: coverage %v, want (l-k)/(S+1) = %v (se %v)", c.k, c.l, c.S, got, p, se)
		}
	}
}
