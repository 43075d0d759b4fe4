package eval

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// tq is the t quantile in closed form for 1 and 2 degrees of freedom
// (Cauchy: tan(pi (p - 1/2)); two: (2p - 1) / sqrt(2 p (1 - p))).
func tq(df int, p float64) float64 {
	switch df {
	case 1:
		return math.Tan(math.Pi * (p - 0.5))
	case 2:
		return (2*p - 1) / math.Sqrt(2*p*(1-p))
	}
	panic("tq: df must be 1 or 2")
}

// naiveMeanVar is the mean and the sample variance (n-1) by the textbook
// two loops, independent of MeanSD's corrected two-pass formula.
func naiveMeanVar(xs []float64) (mean, v float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return mean, v / float64(len(xs)-1)
}

func close(x, y, tol float64) bool { return math.Abs(x-y) <= tol*max(1, math.Abs(x), math.Abs(y)) }

// checkEstimate compares e with the t interval of xs at level, worked here
// with the closed-form quantile (len(xs) = 2 or 3).
func checkEstimate(t *testing.T, name string, e Estimate, xs []float64, level float64) {
	t.Helper()
	mean, v := naiveMeanVar(xs)
	se := math.Sqrt(v / float64(len(xs)))
	half := tq(len(xs)-1, (1+level)/2) * se
	if !e.Defined || e.N != len(xs) || e.Level != level || !close(e.Mean, mean, 1e-14) || !close(e.Stderr, se, 1e-14) ||
		!close(e.Lo, mean-half, 1e-9) || !close(e.Hi, mean+half, 1e-9) {
		t.Errorf("%s: %+v, want mean %v, se %v, [%v, %v], N %d", name, e, mean, se, mean-half, mean+half, len(xs))
	}
}

// TestAcrossReplicatesClosedForm: per replicate the t interval over its
// splits, across replicates the t interval of the replicate means, with
// 1 or 2 degrees of freedom where the quantile has a closed form.
func TestAcrossReplicatesClosedForm(t *testing.T) {
	for _, c := range []struct {
		y     [][]float64
		level float64
	}{
		{[][]float64{{0.30, 0.34, 0.29}, {0.25, 0.27, 0.31}, {0.33, 0.36, 0.30}}, 0.95},
		{[][]float64{{0.30, 0.34, 0.29}, {0.25, 0.27, 0.31}, {0.33, 0.36, 0.30}}, 0.8},
		{[][]float64{{0.30, 0.34}, {0.25, 0.27}}, 0.95},
		{[][]float64{{0.30, 0.34, 0.1}, {0.25, 0.27, 0.9}}, 0.9},
	} {
		s, err := AcrossReplicates(c.y, c.level)
		if err != nil {
			t.Fatal(err)
		}
		R, K := len(c.y), len(c.y[0])
		if s.Replicates != R || s.Splits != K || len(s.PerReplicate) != R {
			t.Fatalf("%v: shape %d x %d with %d replicate estimates", c.y, s.Replicates, s.Splits, len(s.PerReplicate))
		}
		m := make([]float64, R)
		grand := 0.0
		for r, row := range c.y {
			checkEstimate(t, "replicate", s.PerReplicate[r], row, c.level)
			for _, v := range row {
				m[r] += v / float64(K)
				grand += v / float64(R*K)
			}
		}
		checkEstimate(t, "across", s.Across, m, c.level)
		if !close(s.Across.Mean, grand, 1e-14) {
			t.Errorf("%v: across mean %v, want the grand mean %v", c.y, s.Across.Mean, grand)
		}
		if _, v := naiveMeanVar(m); !close(s.SD, math.Sqrt(v), 1e-14) {
			t.Errorf("%v: sd %v, want %v", c.y, s.SD, math.Sqrt(v))
		}
	}
}

// TestAcrossReplicatesUndefined: one replicate (or one split) still gives
// a summary, the undefined interval flagged, N = 1, nothing NaN, and it
// marshals to JSON (which refuses NaN and Inf).
func TestAcrossReplicatesUndefined(t *testing.T) {
	s, err := AcrossReplicates([][]float64{{0.2, 0.4, 0.3}}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	want := Estimate{Interval: Interval{Mean: 0.3, Lo: 0.3, Hi: 0.3, Level: 0.95, N: 1}}
	if a := s.Across; a.Defined || a.N != 1 || !close(a.Mean, 0.3, 1e-15) || a.Lo != a.Mean || a.Hi != a.Mean || a.Stderr != 0 || a.Level != 0.95 {
		t.Errorf("R = 1: across %+v, want %+v (undefined)", a, want)
	}
	if !s.PerReplicate[0].Defined || s.PerReplicate[0].N != 3 || s.SD != 0 {
		t.Errorf("R = 1: replicate %+v (sd %v), want a defined interval over 3 splits and sd 0", s.PerReplicate[0], s.SD)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("R = 1: %v", err)
	}

	s, err = AcrossReplicates([][]float64{{0.2}, {0.4}, {0.3}}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	for r, e := range s.PerReplicate {
		if e.Defined || e.N != 1 || e.Mean != []float64{0.2, 0.4, 0.3}[r] || e.Lo != e.Mean || e.Hi != e.Mean || e.Stderr != 0 {
			t.Errorf("K = 1: replicate %d %+v, want undefined at its one value", r, e)
		}
	}
	checkEstimate(t, "K = 1: across", s.Across, []float64{0.2, 0.4, 0.3}, 0.95)
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("K = 1: %v", err)
	}
}

// TestReplicatesJSON: the field names results.json will carry.
func TestReplicatesJSON(t *testing.T) {
	y := [][]float64{{0.3, 0.4, 0.35}, {0.32, 0.41, 0.3}}
	z := [][]float64{{0.2, 0.4, 0.3}, {0.3, 0.3, 0.31}}
	s, _ := AcrossReplicates(y, 0.95)
	p, _ := PairedAcrossReplicates(y, z, 0.95)
	c, _ := VarianceComponents(y)
	for _, x := range []struct {
		v    any
		keys []string
	}{
		{s, []string{"replicates", "splits", "per_replicate", "across", "sd"}},
		{s.Across, []string{"mean", "lo", "hi", "level", "n", "stderr", "defined"}},
		{p, []string{"replicates", "splits", "per_replicate", "across", "positive", "negative"}},
		{c, []string{"replicates", "splits", "mean", "ms_seed", "ms_split", "ms_residual", "seed", "split", "residual",
			"seed_raw", "split_raw", "seed_truncated", "split_truncated", "total", "seed_share", "split_share", "residual_share",
			"var_grand_mean", "var_across_seeds", "var_single_seed", "var_split_only"}},
	} {
		b, err := json.Marshal(x.v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		got := make([]string, 0, len(m))
		for k := range m {
			got = append(got, k)
		}
		want := slices.Clone(x.keys)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%T: JSON keys %v, want %v", x.v, got, want)
		}
	}
}

func mapMatrix(y [][]float64, f func(r, s int, v float64) float64) [][]float64 {
	out := make([][]float64, len(y))
	for r, row := range y {
		out[r] = make([]float64, len(row))
		for s, v := range row {
			out[r][s] = f(r, s, v)
		}
	}
	return out
}

// permute returns y with its replicates in the order pr and, within each,
// its splits in the order ps.
func permute(y [][]float64, pr, ps []int) [][]float64 {
	return mapMatrix(y, func(r, s int, _ float64) float64 { return y[pr[r]][ps[s]] })
}

func randMatrix(rng *rand.Rand, R, K int) [][]float64 {
	y := make([][]float64, R)
	for r := range y {
		y[r] = make([]float64, K)
		for s := range y[r] {
			y[r][s] = rng.Float64()
		}
	}
	return y
}

// TestAcrossReplicatesMetamorphic: a shift moves every interval, a scale
// scales it; a split effect c_s common to the replicates leaves the
// across interval's width alone (it is in every m_r), a replicate effect
// c_r leaves each replicate's width alone; permutations permute.
func TestAcrossReplicatesMetamorphic(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	y := randMatrix(rng, 4, 5)
	base, err := AcrossReplicates(y, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	same := func(name string, a, b Estimate, shift, scale float64) {
		t.Helper()
		if a.Defined != b.Defined || a.N != b.N || !close(a.Mean, scale*b.Mean+shift, 1e-12) || !close(a.Lo, scale*b.Lo+shift, 1e-12) ||
			!close(a.Hi, scale*b.Hi+shift, 1e-12) || !close(a.Stderr, scale*b.Stderr, 1e-12) {
			t.Errorf("%s: %+v, want %v x %+v + %v", name, a, scale, b, shift)
		}
	}
	cr := []float64{0.3, -0.2, 0.05, 1}
	cs := []float64{0.1, -0.4, 0.2, 0, 0.7}
	for _, c := range []struct {
		name         string
		f            func(r, s int, v float64) float64
		shift, scale float64
	}{
		{"plus 7", func(_, _ int, v float64) float64 { return v + 7 }, 7, 1},
		{"times 3", func(_, _ int, v float64) float64 { return 3 * v }, 0, 3},
		{"times -2", func(_, _ int, v float64) float64 { return -2 * v }, 0, -2},
	} {
		s, err := AcrossReplicates(mapMatrix(y, c.f), 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if c.scale < 0 {
			// A negative scale mirrors the interval: Lo and Hi swap.
			for i := range s.PerReplicate {
				s.PerReplicate[i].Lo, s.PerReplicate[i].Hi = s.PerReplicate[i].Hi, s.PerReplicate[i].Lo
			}
			s.Across.Lo, s.Across.Hi = s.Across.Hi, s.Across.Lo
			s.Across.Stderr, s.SD = -s.Across.Stderr, -s.SD
			for i := range s.PerReplicate {
				s.PerReplicate[i].Stderr = -s.PerReplicate[i].Stderr
			}
		}
		same(c.name+": across", s.Across, base.Across, c.shift, c.scale)
		for r := range y {
			same(c.name+": replicate", s.PerReplicate[r], base.PerReplicate[r], c.shift, c.scale)
		}
		if !close(s.SD, c.scale*base.SD, 1e-12) {
			t.Errorf("%s: sd %v, want %v", c.name, s.SD, c.scale*base.SD)
		}
	}

	// A split effect: every m_r moves by mean(c_s), sd(m) does not.
	s, _ := AcrossReplicates(mapMatrix(y, func(_, s int, v float64) float64 { return v + cs[s] }), 0.95)
	shift := (cs[0] + cs[1] + cs[2] + cs[3] + cs[4]) / 5
	same("split effect: across", s.Across, base.Across, shift, 1)
	// A replicate effect: replicate r's splits move together by c_r.
	s, _ = AcrossReplicates(mapMatrix(y, func(r, _ int, v float64) float64 { return v + cr[r] }), 0.95)
	for r := range y {
		same("replicate effect: replicate", s.PerReplicate[r], base.PerReplicate[r], cr[r], 1)
	}
	if !(s.Across.Stderr != base.Across.Stderr) {
		t.Errorf("a replicate effect left the across stderr at %v", s.Across.Stderr)
	}

	pr, ps := []int{2, 0, 3, 1}, []int{4, 1, 0, 3, 2}
	s, _ = AcrossReplicates(permute(y, pr, ps), 0.95)
	same("permuted: across", s.Across, base.Across, 0, 1)
	for r := range y {
		same("permuted: replicate", s.PerReplicate[r], base.PerReplicate[pr[r]], 0, 1)
	}

	if w, _ := AcrossReplicates(y, 0.99); !(w.Across.Lo < base.Across.Lo && w.Across.Hi > base.Across.Hi) {
		t.Errorf("a 99%% interval %+v is not wider than the 95%% one %+v", w.Across, base.Across)
	}
}

// simulate draws y_rs = mu + a_r + b_s + e_rs with normal effects of
// variances sSeed, sSplit, sE; it returns y and mu + mean_s b_s (the
// mean over seeds on these splits).
func simulate(rng *rand.Rand, R, K int, mu, sSeed, sSplit, sE float64) ([][]float64, float64) {
	a := make([]float64, R)
	b := make([]float64, K)
	for r := range a {
		a[r] = math.Sqrt(sSeed) * rng.NormFloat64()
	}
	bbar := 0.0
	for s := range b {
		b[s] = math.Sqrt(sSplit) * rng.NormFloat64()
		bbar += b[s] / float64(K)
	}
	y := make([][]float64, R)
	for r := range y {
		y[r] = make([]float64, K)
		for s := range y[r] {
			y[r][s] = mu + a[r] + b[s] + math.Sqrt(sE)*rng.NormFloat64()
		}
	}
	return y, mu + bbar
}

// TestAcrossReplicatesCoverage: 2000 simulated experiments with a fixed
// seed. The 95% across interval covers the mean over seeds on the splits
// at hand (mu + mean_s b_s; mu itself when there is no split effect) in
// 93.5%..96.5% of them: the binomial standard error of a 95% rate over
// 2000 is sqrt(0.95 0.05 / 2000) = 0.49%, so that is +-3 se. A single
// replicate's split interval, with a seed effect large against the split
// and residual ones, covers mu far less often than 95% (its variance is
// s2_seed + (s2_split + s2_e)/K = 1.04, it estimates 0.04): the reason
// for replicates.
func TestAcrossReplicatesCoverage(t *testing.T) {
	const n = 2000
	for i, c := range []struct {
		name              string
		sSeed, sSplit, sE float64
	}{
		{"no split effect", 0.5, 0, 0.2},
		{"split effect", 0.5, 0.6, 0.2},
		{"seed dominates", 1, 0.1, 0.1},
	} {
		rng := rand.New(rand.NewPCG(21, uint64(10+i)))
		const mu = 0.4
		across, acrossMu, single := 0, 0, 0
		for range n {
			y, target := simulate(rng, 5, 5, mu, c.sSeed, c.sSplit, c.sE)
			s, err := AcrossReplicates(y, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if s.Across.Lo <= target && target <= s.Across.Hi {
				across++
			}
			if s.Across.Lo <= mu && mu <= s.Across.Hi {
				acrossMu++
			}
			if p := s.PerReplicate[0]; p.Lo <= mu && mu <= p.Hi {
				single++
			}
		}
		t.Logf("%s: of %d, the across interval covers mu + mean b_s in %d, mu in %d; a single replicate's split interval covers mu in %d",
			c.name, n, across, acrossMu, single)
		if c.name == "split effect" {
			// The split effect is common to the replicates: the across
			// interval is not for mu over new splits (Var(ybar..) has
			// s2_split/K, which sd(m) does not see). Its coverage of mu
			// is about P(|t_4| <= t_{0.975,4} sqrt(0.108/0.228)) = 87%:
			// the interval's variance (0.5 + 0.2/5)/5 = 0.108 against
			// the error's 0.108 + 0.6/5. 92% is 6 binomial se (0.75%) above 87%.
			if rate := float64(acrossMu) / n; rate > 0.92 {
				t.Errorf("%s: the across interval covers mu in %.1f%%, want below nominal", c.name, 100*rate)
			}
		}
		if rate := float64(across) / n; rate < 0.935 || rate > 0.965 {
			t.Errorf("%s: the 95%% across interval covers in %.1f%% of %d experiments", c.name, 100*rate, n)
		}
		if c.name == "seed dominates" {
			// P(|N(0, 1.04)| <= t_{0.975,4} sqrt(0.04)) is about 0.42; the
			// se's own spread moves it little. 0.6 is far above.
			if rate := float64(single) / n; rate > 0.6 {
				t.Errorf("%s: a single replicate's split interval covers mu in %.1f%%, want far below 95%%", c.name, 100*rate)
			}
		}
	}
}

// TestPairedAcrossReplicates: d_r is the mean of a minus the mean of b in
// replicate r, the per-replicate interval is PairedT over the splits, the
// across interval the t interval of the d_r, the counts count signs.
func TestPairedAcrossReplicates(t *testing.T) {
	a := [][]float64{{0.30, 0.34, 0.29}, {0.25, 0.27, 0.31}, {0.33, 0.36, 0.30}, {0.5, 0.5, 0.5}}
	b := [][]float64{{0.28, 0.30, 0.29}, {0.27, 0.28, 0.30}, {0.30, 0.30, 0.31}, {0.4, 0.6, 0.5}}
	// d_r: 0.02, -0.0066.., 0.0266.., 0 (the last exactly: the sums agree).
	p, err := PairedAcrossReplicates(a, b, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if p.Replicates != 4 || p.Splits != 3 || len(p.PerReplicate) != 4 {
		t.Fatalf("shape %d x %d, %d estimates", p.Replicates, p.Splits, len(p.PerReplicate))
	}
	d := make([]float64, len(a))
	pos, neg := 0, 0
	for r := range a {
		ma, _ := naiveMeanVar(a[r])
		mb, _ := naiveMeanVar(b[r])
		d[r] = ma - mb
		if !close(p.PerReplicate[r].Mean, d[r], 1e-14) {
			t.Errorf("replicate %d: d_r = %v, want mean(a) - mean(b) = %v", r, p.PerReplicate[r].Mean, d[r])
		}
		iv, err := PairedT(a[r], b[r], 0.9)
		if err != nil {
			t.Fatal(err)
		}
		if p.PerReplicate[r] != (Estimate{Interval: iv, Defined: true}) {
			t.Errorf("replicate %d: %+v, want PairedT's %+v", r, p.PerReplicate[r], iv)
		}
		diff := make([]float64, len(a[r]))
		for s := range diff {
			diff[s] = a[r][s] - b[r][s]
		}
		checkEstimate(t, "replicate", p.PerReplicate[r], diff, 0.9)
		// The sign of the computed d_r: the last replicate's is 0 up to
		// rounding, and the count must agree with what was computed.
		switch m := p.PerReplicate[r].Mean; {
		case m > 0:
			pos++
		case m < 0:
			neg++
		}
	}
	if p.Positive != pos || p.Negative != neg {
		t.Errorf("positive %d, negative %d, want %d, %d", p.Positive, p.Negative, pos, neg)
	}
	if pos != 2 || neg != 1 {
		t.Errorf("the fixture's signs: %d positive, %d negative, want 2 and 1 (d = %v)", pos, neg, d)
	}
	mean, v := naiveMeanVar(d)
	se := math.Sqrt(v / 4)
	// t_{0.95, 3} = 2.353363434801823: no closed form for 3 degrees of
	// freedom, so the bracket of the t table's 2.353 instead.
	if !close(p.Across.Mean, mean, 1e-14) || !close(p.Across.Stderr, se, 1e-12) || p.Across.N != 4 || !p.Across.Defined ||
		!(p.Across.Hi-mean > 2.3533*se && p.Across.Hi-mean < 2.3534*se) || !close(p.Across.Lo, 2*mean-p.Across.Hi, 1e-12) {
		t.Errorf("across %+v, want mean %v, se %v, half-width 2.35336 se", p.Across, mean, se)
	}

	// Antisymmetry: swapping a and b negates the means, mirrors the
	// intervals, swaps the counts.
	q, _ := PairedAcrossReplicates(b, a, 0.9)
	mirror := func(x, y Estimate) bool {
		return close(x.Mean, -y.Mean, 1e-15) && close(x.Lo, -y.Hi, 1e-15) && close(x.Hi, -y.Lo, 1e-15) && x.Stderr == y.Stderr && x.N == y.N
	}
	if !mirror(q.Across, p.Across) || q.Positive != p.Negative || q.Negative != p.Positive {
		t.Errorf("swapped: %+v, want the mirror of %+v", q, p)
	}
	for r := range a {
		if !mirror(q.PerReplicate[r], p.PerReplicate[r]) {
			t.Errorf("swapped: replicate %d %+v, want the mirror of %+v", r, q.PerReplicate[r], p.PerReplicate[r])
		}
	}

	// A cell effect common to both methods cancels.
	rng := rand.New(rand.NewPCG(21, 3))
	c := randMatrix(rng, 4, 3)
	plus := func(x [][]float64) [][]float64 {
		return mapMatrix(x, func(r, s int, v float64) float64 { return v + c[r][s] })
	}
	if q, _ := PairedAcrossReplicates(plus(a), plus(b), 0.9); !close(q.Across.Mean, p.Across.Mean, 1e-12) ||
		!close(q.Across.Lo, p.Across.Lo, 1e-12) || !close(q.Across.Hi, p.Across.Hi, 1e-12) {
		t.Errorf("a common cell effect: %+v, want %+v", q.Across, p.Across)
	}

	// b = 0: the paired summary is the summary of a.
	zero := mapMatrix(a, func(_, _ int, _ float64) float64 { return 0 })
	s, _ := AcrossReplicates(a, 0.9)
	if q, _ := PairedAcrossReplicates(a, zero, 0.9); q.Across != s.Across {
		t.Errorf("a - 0: %+v, want AcrossReplicates(a)'s %+v", q.Across, s.Across)
	}
}

// TestPairedAcrossReplicatesOneSplit: K = 1 has no per-replicate interval
// (PairedT needs two pairs) but still an across interval.
func TestPairedAcrossReplicatesOneSplit(t *testing.T) {
	a := [][]float64{{0.5}, {0.4}, {0.3}}
	b := [][]float64{{0.4}, {0.4}, {0.35}}
	p, err := PairedAcrossReplicates(a, b, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	d := []float64{a[0][0] - b[0][0], a[1][0] - b[1][0], a[2][0] - b[2][0]} // 0.1, 0, -0.05 in float64
	for r, e := range p.PerReplicate {
		want := d[r]
		if e.Defined || e.N != 1 || e.Mean != want || e.Lo != want || e.Hi != want || e.Stderr != 0 {
			t.Errorf("replicate %d: %+v, want undefined at %v", r, e, want)
		}
	}
	if p.Positive != 1 || p.Negative != 1 {
		t.Errorf("positive %d, negative %d, want 1 and 1 (d = 0.1, 0, -0.05)", p.Positive, p.Negative)
	}
	checkEstimate(t, "across", p.Across, d, 0.95)
	if p, _ := PairedAcrossReplicates([][]float64{{0.5, 0.6}}, [][]float64{{0.4, 0.4}}, 0.95); p.Across.Defined || !p.PerReplicate[0].Defined {
		t.Errorf("R = 1: %+v, want the across interval undefined and the split one defined", p)
	}
}

// TestVarianceComponentsByHand: two matrices worked by hand.
func TestVarianceComponentsByHand(t *testing.T) {
	// y = [[1 2 3] [3 6 3]]: R = 2, K = 3. Row means 2, 4; column means
	// 2, 4, 3; grand mean 3.
	// MS_R = 3 ((2-3)^2 + (4-3)^2) / 1 = 6
	// MS_S = 2 ((2-3)^2 + (4-3)^2 + 0) / 2 = 2
	// residuals y - row - col + grand: [0 -1 1] [0 1 -1], SS_E = 4, MS_E = 4/2 = 2
	// s2_seed = (6-2)/3 = 4/3, s2_split = (2-2)/2 = 0 (not truncated), s2_e = 2
	// total 10/3: shares 0.4, 0, 0.6
	// Var(ybar..) = (4/3)/2 + 0/3 + 2/6 = 1 = VarAcrossSeeds (no split part)
	// VarSplitOnly = (0 + 2)/3 = 2/3, VarSingleSeed = 4/3 + 2/3 = 2
	c, err := VarianceComponents([][]float64{{1, 2, 3}, {3, 6, 3}})
	if err != nil {
		t.Fatal(err)
	}
	want := Components{Replicates: 2, Splits: 3, Mean: 3, MSSeed: 6, MSSplit: 2, MSResidual: 2,
		Seed: 4. / 3, Split: 0, Residual: 2, SeedRaw: 4. / 3, SplitRaw: 0, Total: 10. / 3,
		SeedShare: 0.4, SplitShare: 0, ResidualShare: 0.6,
		VarGrandMean: 1, VarAcrossSeeds: 1, VarSplitOnly: 2. / 3, VarSingleSeed: 2}
	checkComponents(t, "2 x 3", c, want)

	// y = [[1 2] [2 1]]: all means 1.5, MS_R = MS_S = 0, residuals
	// +-0.5, SS_E = 1, MS_E = 1/1 = 1; both raw components (0 - 1)/2 =
	// -0.5, truncated to 0; everything is residual.
	c, err = VarianceComponents([][]float64{{1, 2}, {2, 1}})
	if err != nil {
		t.Fatal(err)
	}
	want = Components{Replicates: 2, Splits: 2, Mean: 1.5, MSResidual: 1, Residual: 1,
		SeedRaw: -0.5, SplitRaw: -0.5, SeedTruncated: true, SplitTruncated: true, Total: 1, ResidualShare: 1,
		VarGrandMean: 0.25, VarAcrossSeeds: 0.25, VarSplitOnly: 0.5, VarSingleSeed: 0.5}
	checkComponents(t, "2 x 2", c, want)

	// Every cell equal: all zero, shares 0 (not NaN).
	c, err = VarianceComponents([][]float64{{0.3, 0.3, 0.3}, {0.3, 0.3, 0.3}})
	if err != nil {
		t.Fatal(err)
	}
	checkComponents(t, "constant", c, Components{Replicates: 2, Splits: 3, Mean: 0.3})
}

func checkComponents(t *testing.T, name string, c, want Components) {
	t.Helper()
	got := []float64{c.Mean, c.MSSeed, c.MSSplit, c.MSResidual, c.Seed, c.Split, c.Residual, c.SeedRaw, c.SplitRaw,
		c.Total, c.SeedShare, c.SplitShare, c.ResidualShare, c.VarGrandMean, c.VarAcrossSeeds, c.VarSplitOnly, c.VarSingleSeed}
	exp := []float64{want.Mean, want.MSSeed, want.MSSplit, want.MSResidual, want.Seed, want.Split, want.Residual, want.SeedRaw, want.SplitRaw,
		want.Total, want.SeedShare, want.SplitShare, want.ResidualShare, want.VarGrandMean, want.VarAcrossSeeds, want.VarSplitOnly, want.VarSingleSeed}
	for i := range got {
		if !(math.Abs(got[i]-exp[i]) <= 1e-14) { // NaN fails
			t.Errorf("%s: %+v,\nwant %+v", name, c, want)
			return
		}
	}
	if c.Replicates != want.Replicates || c.Splits != want.Splits || c.SeedTruncated != want.SeedTruncated || c.SplitTruncated != want.SplitTruncated {
		t.Errorf("%s: %+v,\nwant %+v", name, c, want)
	}
}

// TestVarianceComponentsSumsOfSquares: on random matrices, the mean
// squares agree with the computational formulas of the sums of squares
// (from the raw totals, a different algorithm),
//
//	SS_T = sum y^2 - G^2/(RK),  SS_R = sum_r T_r^2/K - G^2/(RK),  SS_S = sum_s C_s^2/R - G^2/(RK)
//
// with G the grand total, T_r and C_s the row and column totals, and they
// add up: SS_R + SS_S + SS_E = SS_T, the latter summed directly about the
// grand mean. The derived components follow their formulas.
func TestVarianceComponentsSumsOfSquares(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 4))
	for _, sh := range [][2]int{{2, 2}, {2, 5}, {3, 4}, {5, 2}, {7, 9}} {
		R, K := sh[0], sh[1]
		fR, fK := float64(R), float64(K)
		for range 20 {
			y := randMatrix(rng, R, K)
			c, err := VarianceComponents(y)
			if err != nil {
				t.Fatal(err)
			}
			var G, sq float64
			T := make([]float64, R)
			C := make([]float64, K)
			for r := range R {
				for s := range K {
					G += y[r][s]
					sq += y[r][s] * y[r][s]
					T[r] += y[r][s]
					C[s] += y[r][s]
				}
			}
			corr := G * G / (fR * fK)
			ssT := sq - corr
			ssR, ssS := -corr, -corr
			for _, x := range T {
				ssR += x * x / fK
			}
			for _, x := range C {
				ssS += x * x / fR
			}
			ssE := ssT - ssR - ssS
			direct := 0.0
			for r := range R {
				for s := range K {
					direct += (y[r][s] - G/(fR*fK)) * (y[r][s] - G/(fR*fK))
				}
			}
			gotR, gotS, gotE := c.MSSeed*(fR-1), c.MSSplit*(fK-1), c.MSResidual*(fR-1)*(fK-1)
			if !close(c.Mean, G/(fR*fK), 1e-14) || !close(gotR, ssR, 1e-10) || !close(gotS, ssS, 1e-10) || !close(gotE, ssE, 1e-10) ||
				!close(gotR+gotS+gotE, direct, 1e-12) {
				t.Fatalf("%d x %d: SS %v + %v + %v (total %v), want %v + %v + %v (total %v)", R, K, gotR, gotS, gotE, gotR+gotS+gotE, ssR, ssS, ssE, direct)
			}
			seedRaw, splitRaw := (ssR/(fR-1)-ssE/((fR-1)*(fK-1)))/fK, (ssS/(fK-1)-ssE/((fR-1)*(fK-1)))/fR
			if !close(c.SeedRaw, seedRaw, 1e-10) || !close(c.SplitRaw, splitRaw, 1e-10) || c.Residual != c.MSResidual ||
				c.SeedTruncated != (c.SeedRaw < 0) || c.SplitTruncated != (c.SplitRaw < 0) ||
				c.Seed != max(c.SeedRaw, 0) || c.Split != max(c.SplitRaw, 0) {
				t.Fatalf("%d x %d: components %+v, want raw %v, %v", R, K, c, seedRaw, splitRaw)
			}
			tot := c.Seed + c.Split + c.Residual
			if !close(c.Total, tot, 1e-15) || !close(c.SeedShare+c.SplitShare+c.ResidualShare, 1, 1e-14) ||
				!close(c.SeedShare, c.Seed/tot, 1e-14) || !close(c.SplitShare, c.Split/tot, 1e-14) ||
				!close(c.VarGrandMean, c.Seed/fR+c.Split/fK+c.Residual/(fR*fK), 1e-14) ||
				!close(c.VarAcrossSeeds, c.Seed/fR+c.Residual/(fR*fK), 1e-14) ||
				!close(c.VarSplitOnly, (c.Split+c.Residual)/fK, 1e-14) || !close(c.VarSingleSeed, c.Seed+(c.Split+c.Residual)/fK, 1e-14) {
				t.Fatalf("%d x %d: derived %+v", R, K, c)
			}
		}
	}
}

// TestVarianceComponentsAgreeWithIntervals ties the decomposition to the
// intervals: sd(m)^2 = MS_R / K exactly, so the across interval's
// stderr^2 is MS_R/(RK), and VarAcrossSeeds when s2_seed is not
// truncated; the mean over replicates of the split intervals' stderr^2 is
// (SS_S + SS_E) / (R (K-1) K) = (s2_split + s2_e)/K = VarSplitOnly when
// s2_split is not truncated.
func TestVarianceComponentsAgreeWithIntervals(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	seen := [2]bool{}
	for range 50 {
		y, _ := simulate(rng, 4, 5, 0, 0.3, 0.2, 0.2)
		c, err := VarianceComponents(y)
		if err != nil {
			t.Fatal(err)
		}
		s, err := AcrossReplicates(y, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		R, K := 4., 5.
		if se2 := s.Across.Stderr * s.Across.Stderr; !close(se2, c.MSSeed/(R*K), 1e-12) ||
			(!c.SeedTruncated && !close(se2, c.VarAcrossSeeds, 1e-12)) || (c.SeedTruncated && !(c.VarAcrossSeeds > se2)) {
			t.Errorf("across stderr^2 %v, MS_R/(RK) %v, VarAcrossSeeds %v (seed truncated %v)", se2, c.MSSeed/(R*K), c.VarAcrossSeeds, c.SeedTruncated)
		}
		split := 0.0
		for _, e := range s.PerReplicate {
			split += e.Stderr * e.Stderr / R
		}
		if !c.SplitTruncated && !close(split, c.VarSplitOnly, 1e-12) {
			t.Errorf("mean split stderr^2 %v, VarSplitOnly %v", split, c.VarSplitOnly)
		}
		seen[0] = seen[0] || c.SeedTruncated
		seen[1] = seen[1] || !c.SeedTruncated
	}
	if !seen[0] || !seen[1] {
		t.Errorf("the draws did not cover both truncated and untruncated seed components: %v", seen)
	}
}

// TestVarianceComponentsMetamorphic: a replicate effect c_r moves only
// MS_R and the seed component; a split effect c_s only MS_S and the split
// component; a constant only the mean; permutations nothing; a scale k
// scales the variances by k^2 and leaves the shares.
func TestVarianceComponentsMetamorphic(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 6))
	y, _ := simulate(rng, 4, 6, 0.4, 0.02, 0.01, 0.01)
	base, err := VarianceComponents(y)
	if err != nil {
		t.Fatal(err)
	}
	if base.SeedTruncated || base.SplitTruncated {
		t.Fatalf("fixture truncated: %+v", base)
	}
	cr := []float64{0.3, -0.2, 0.05, 1}
	cs := []float64{0.1, -0.4, 0.2, 0, 0.7, -0.05}
	const tol = 1e-12
	run := func(f func(r, s int, v float64) float64) Components {
		c, err := VarianceComponents(mapMatrix(y, f))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	c := run(func(r, _ int, v float64) float64 { return v + cr[r] })
	if !close(c.MSSplit, base.MSSplit, tol) || !close(c.MSResidual, base.MSResidual, tol) || !close(c.Split, base.Split, tol) ||
		!close(c.Residual, base.Residual, tol) || close(c.MSSeed, base.MSSeed, 1e-3) || !(c.Seed > base.Seed) {
		t.Errorf("replicate effect: %+v, want only MS_R and the seed component of %+v changed", c, base)
	}
	c = run(func(_, s int, v float64) float64 { return v + cs[s] })
	if !close(c.MSSeed, base.MSSeed, tol) || !close(c.MSResidual, base.MSResidual, tol) || !close(c.Seed, base.Seed, tol) ||
		!close(c.Residual, base.Residual, tol) || close(c.MSSplit, base.MSSplit, 1e-3) || !(c.Split > base.Split) {
		t.Errorf("split effect: %+v, want only MS_S and the split component of %+v changed", c, base)
	}
	// A constant, also one large against the spread: the sums of squares
	// are of deviations (two passes), not sum y^2 - (sum y)^2/n, which at
	// 1e6 + O(0.1) would lose all but a few digits to cancellation.
	for _, k := range []float64{-5, 1e6} {
		c = run(func(_, _ int, v float64) float64 { return v + k })
		want := base
		want.Mean += k
		tol := 1e-11
		if k > 1 {
			tol = 1e-7 // each value is rounded to 1e6 ulp = 1.2e-10, against a spread of ~0.1
		}
		checkNear(t, "constant", c, want, tol)
	}

	for _, p := range []struct{ pr, ps []int }{
		{[]int{3, 2, 1, 0}, []int{0, 1, 2, 3, 4, 5}},
		{[]int{0, 1, 2, 3}, []int{5, 3, 1, 0, 2, 4}},
		{[]int{1, 3, 0, 2}, []int{2, 0, 5, 4, 1, 3}},
	} {
		checkNear(t, "permuted", mustComponents(t, permute(y, p.pr, p.ps)), base, 1e-12)
	}

	for _, k := range []float64{3, -0.5} {
		c = run(func(_, _ int, v float64) float64 { return k * v })
		want := base
		for _, f := range []*float64{&want.MSSeed, &want.MSSplit, &want.MSResidual, &want.Seed, &want.Split, &want.Residual,
			&want.SeedRaw, &want.SplitRaw, &want.Total, &want.VarGrandMean, &want.VarAcrossSeeds, &want.VarSingleSeed, &want.VarSplitOnly} {
			*f *= k * k
		}
		want.Mean *= k
		checkNear(t, "scaled", c, want, 1e-12)
	}
}

func mustComponents(t *testing.T, y [][]float64) Components {
	t.Helper()
	c, err := VarianceComponents(y)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func checkNear(t *testing.T, name string, c, want Components, tol float64) {
	t.Helper()
	got := []float64{c.Mean, c.MSSeed, c.MSSplit, c.MSResidual, c.Seed, c.Split, c.Residual, c.SeedRaw, c.SplitRaw,
		c.Total, c.SeedShare, c.SplitShare, c.ResidualShare, c.VarGrandMean, c.VarAcrossSeeds, c.VarSplitOnly, c.VarSingleSeed}
	exp := []float64{want.Mean, want.MSSeed, want.MSSplit, want.MSResidual, want.Seed, want.Split, want.Residual, want.SeedRaw, want.SplitRaw,
		want.Total, want.SeedShare, want.SplitShare, want.ResidualShare, want.VarGrandMean, want.VarAcrossSeeds, want.VarSplitOnly, want.VarSingleSeed}
	for i := range got {
		if !close(got[i], exp[i], tol) {
			t.Errorf("%s: field %d: %v, want %v\n%+v\n%+v", name, i, got[i], exp[i], c, want)
			return
		}
	}
	if c.Replicates != want.Replicates || c.Splits != want.Splits || c.SeedTruncated != want.SeedTruncated || c.SplitTruncated != want.SplitTruncated {
		t.Errorf("%s: %+v, want %+v", name, c, want)
	}
}

// TestVarianceComponentsUnbiased: over 4000 simulated 3 x 5 experiments
// with known components, the mean of each untruncated estimate is within
// 4 standard errors of its true value, the standard error being the
// sample sd of the 4000 estimates over sqrt(4000): an unbiased estimator
// misses by more with probability about 6e-5 (the seed is fixed, so the
// test is deterministic). The components are chosen so that truncation
// happens often (R = 3 gives MS_R two degrees of freedom), and the
// truncated seed estimate is then biased upwards, more than 4 se: the
// check has the power to see a bias.
func TestVarianceComponentsUnbiased(t *testing.T) {
	const n = 4000
	truth := [3]float64{0.05, 0.1, 0.2} // seed, split, residual
	rng := rand.New(rand.NewPCG(21, 7))
	var est [4][]float64 // raw seed, raw split, residual, truncated seed
	for range n {
		y, _ := simulate(rng, 3, 5, 0.3, truth[0], truth[1], truth[2])
		c, err := VarianceComponents(y)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range [4]float64{c.SeedRaw, c.SplitRaw, c.Residual, c.Seed} {
			est[i] = append(est[i], v)
		}
	}
	for i, name := range []string{"seed (raw)", "split (raw)", "residual", "seed (truncated)"} {
		mean, v := naiveMeanVar(est[i])
		se := math.Sqrt(v / n)
		t.Logf("%s: mean %.5f, se %.5f, truth %v", name, mean, se, truth[i%3])
		want := truth[min(i, 2)]
		if i == 3 {
			want = truth[0]
			if !(mean-want > 4*se) {
				t.Errorf("%s: mean %v, se %v: the truncated estimate shows no upward bias over %v", name, mean, se, want)
			}
			continue
		}
		if math.Abs(mean-want) > 4*se {
			t.Errorf("%s: mean of %d estimates %v, want %v within 4 se = %v", name, n, mean, want, 4*se)
		}
	}
}

func TestReplicatesErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	ok := [][]float64{{0.1, 0.2}, {0.3, 0.4}}
	for _, c := range []struct {
		name string
		run  func() error
		want string
	}{
		{"across: no replicate", func() error { _, err := AcrossReplicates(nil, 0.95); return err }, "0 replicate(s), want at least 1"},
		{"across: no split", func() error { _, err := AcrossReplicates([][]float64{{}, {}}, 0.95); return err }, "0 split(s), want at least 1"},
		{"across: ragged", func() error { _, err := AcrossReplicates([][]float64{{1, 2}, {1, 2}, {1}}, 0.95); return err },
			"replicate 2 has 1 split(s), replicate 0 has 2"},
		{"across: NaN", func() error { _, err := AcrossReplicates([][]float64{{1, 2, 3}, {1, 2, nan}}, 0.95); return err },
			"replicate 1, split 2 is NaN, want a finite value"},
		{"across: Inf", func() error { _, err := AcrossReplicates([][]float64{{1, -inf}}, 0.95); return err }, "replicate 0, split 1 is -Inf"},
		{"across: level 1", func() error { _, err := AcrossReplicates(ok, 1); return err }, "level 1, want 0 < level < 1"},
		{"across: level 0", func() error { _, err := AcrossReplicates(ok, 0); return err }, "level 0, want 0 < level < 1"},
		{"across: level NaN", func() error { _, err := AcrossReplicates(ok, nan); return err }, "level NaN"},
		{"across: overflow", func() error {
			_, err := AcrossReplicates([][]float64{{math.MaxFloat64, math.MaxFloat64}, {1, 2}}, 0.95)
			return err
		}, "replicate 0: mean is +Inf"},
		{"across: overflow across", func() error {
			_, err := AcrossReplicates([][]float64{{math.MaxFloat64}, {math.MaxFloat64}}, 0.95)
			return err
		}, "across: mean is +Inf"},
		{"across: sd overflows", func() error {
			_, err := AcrossReplicates([][]float64{{math.MaxFloat64}, {-math.MaxFloat64}}, 0.95)
			return err
		}, "across: lo is -Inf"},

		{"paired: replicates differ", func() error { _, err := PairedAcrossReplicates(ok, ok[:1], 0.95); return err },
			"eval: paired across replicates: a has 2 replicate(s), b has 1"},
		{"paired: splits differ", func() error {
			_, err := PairedAcrossReplicates(ok, [][]float64{{0.1, 0.2}, {0.3}}, 0.95)
			return err
		}, "replicate 1: a has 2 split(s), b has 1"},
		{"paired: ragged a", func() error {
			_, err := PairedAcrossReplicates([][]float64{{0.1, 0.2}, {0.3}}, [][]float64{{0.1, 0.2}, {0.3}}, 0.95)
			return err
		}, "a: replicate 1 has 1 split(s), replicate 0 has 2"},
		{"paired: empty a", func() error { _, err := PairedAcrossReplicates(nil, nil, 0.95); return err }, "a: 0 replicate(s)"},
		{"paired: NaN in b", func() error {
			_, err := PairedAcrossReplicates(ok, [][]float64{{0.1, 0.2}, {nan, 0.4}}, 0.95)
			return err
		}, "b: replicate 1, split 0 is NaN"},
		{"paired: Inf in a", func() error {
			_, err := PairedAcrossReplicates([][]float64{{0.1, inf}, {0.3, 0.4}}, ok, 0.95)
			return err
		}, "paired across replicates: a: replicate 0, split 1 is +Inf"},
		{"paired: difference overflows", func() error {
			_, err := PairedAcrossReplicates([][]float64{{0.1, math.MaxFloat64}, {0.3, 0.4}}, [][]float64{{0.1, -math.MaxFloat64}, {0.3, 0.4}}, 0.95)
			return err
		}, "replicate 0, split 1: a - b ="},
		{"paired: mean of differences overflows", func() error {
			big := math.MaxFloat64 / 2 * 1.5
			_, err := PairedAcrossReplicates([][]float64{{big, big}, {0.3, 0.4}}, [][]float64{{0, 0}, {0.3, 0.4}}, 0.95)
			return err
		}, "replicate 0:"},
		{"paired: across overflows", func() error {
			big := math.MaxFloat64 / 2 * 1.5
			_, err := PairedAcrossReplicates([][]float64{{big}, {big}}, [][]float64{{0}, {0}}, 0.95)
			return err
		}, "across: mean is +Inf"},
		{"difference: shapes", func() error { _, err := Difference(ok, [][]float64{{1, 2}, {3, 4}, {5, 6}}); return err },
			"eval: difference: a has 2 replicate(s), b has 3"},
		{"difference: NaN", func() error { _, err := Difference(ok, [][]float64{{1, 2}, {3, nan}}); return err },
			"eval: difference: b: replicate 1, split 1 is NaN"},
		{"paired: level", func() error { _, err := PairedAcrossReplicates(ok, ok, 1.5); return err }, "level 1.5"},

		{"components: one replicate", func() error { _, err := VarianceComponents([][]float64{{1, 2, 3}}); return err },
			"1 replicate(s), want at least 2"},
		{"components: one split", func() error { _, err := VarianceComponents([][]float64{{1}, {2}}); return err },
			"1 split(s), want at least 2"},
		{"components: ragged", func() error { _, err := VarianceComponents([][]float64{{1, 2}, {1, 2, 3}}); return err },
			"replicate 1 has 3 split(s), replicate 0 has 2"},
		{"components: NaN", func() error { _, err := VarianceComponents([][]float64{{1, 2}, {nan, 2}}); return err },
			"variance components: replicate 1, split 0 is NaN"},
		{"components: overflow", func() error {
			_, err := VarianceComponents([][]float64{{math.MaxFloat64, 1}, {math.MaxFloat64, 2}})
			return err
		}, "overflow"},
		{"components: squares overflow", func() error {
			big := math.MaxFloat64 / 8
			_, err := VarianceComponents([][]float64{{big, -big}, {-big, big}})
			return err
		}, "overflow"},
	} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic %v, want an error", c.name, r)
				}
			}()
			err = c.run()
		}()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestDifference: cellwise a - b, new storage (a and b untouched); a
// difference that is a pure replicate effect decomposes into the seed
// component alone.
func TestDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 8))
	b := randMatrix(rng, 3, 4)
	cr := []float64{0.05, -0.02, 0.1}
	a := mapMatrix(b, func(r, _ int, v float64) float64 { return v + cr[r] })
	keep := mapMatrix(a, func(_, _ int, v float64) float64 { return v })
	d, err := Difference(a, b)
	if err != nil {
		t.Fatal(err)
	}
	for r := range d {
		for s := range d[r] {
			if d[r][s] != a[r][s]-b[r][s] || a[r][s] != keep[r][s] {
				t.Fatalf("(%d, %d): %v, want %v - %v", r, s, d[r][s], a[r][s], b[r][s])
			}
		}
	}
	c, err := VarianceComponents(d)
	if err != nil {
		t.Fatal(err)
	}
	m, v := naiveMeanVar(cr)
	// MS_R = K var(c_r), MS_S = MS_E = 0 (up to rounding): s2_seed = var(c_r).
	if !close(c.Mean, m, 1e-15) || !close(c.Seed, v, 1e-12) || c.Split > 1e-15 || c.Residual > 1e-15 || !close(c.SeedShare, 1, 1e-12) {
		t.Errorf("a pure replicate effect: %+v, want seed %v and nothing else", c, v)
	}
}
