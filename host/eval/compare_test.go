package eval

import (
	"encoding/csv"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// floats parses the fields of one golden CSV record.
func floats(t *testing.T, file string, line int, rec []string) []float64 {
	t.Helper()
	out := make([]float64, len(rec))
	for i, s := range rec {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s line %d field %d: %v", file, line, i+1, err)
		}
		out[i] = v
	}
	return out
}

// TestPearsonGolden: scipy.stats.pearsonr on the 50 pairs of
// testdata/golden/signal/pearson.csv (README there), to 1e-15.
func TestPearsonGolden(t *testing.T) {
	recs := golden.Records(t, golden.File(t, "signal", "pearson.csv"))
	if len(recs) != 50 {
		t.Fatalf("pearson.csv: %d lines, want 50", len(recs))
	}
	worst := 0.0
	for i, rec := range recs {
		v := floats(t, "pearson.csv", i+1, rec)
		if len(v) != 2*640+1 {
			t.Fatalf("pearson.csv line %d: %d fields, want 1281", i+1, len(v))
		}
		x, y, want := v[:640], v[640:1280], v[1280]
		r, ok := Pearson(x, y)
		if !ok {
			t.Fatalf("line %d: not ok", i+1)
		}
		worst = max(worst, math.Abs(r-want))
		if math.Abs(r-want) > 1e-15 {
			t.Errorf("line %d: r = %.17g, scipy %.17g (diff %.3g)", i+1, r, want, r-want)
		}
		// Symmetric, and the sign follows a negative scale.
		if r2, _ := Pearson(y, x); math.Abs(r2-r) > 1e-15 {
			t.Errorf("line %d: Pearson(y, x) = %v, Pearson(x, y) = %v", i+1, r2, r)
		}
	}
	t.Logf("largest difference from scipy: %.3g", worst)
}

// TestPearsonProperties: affine invariance, the ends of [-1, 1], the
// undefined cases and scipy's two-point rule.
func TestPearsonProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for trial := range 200 {
		n := 3 + rng.IntN(60)
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
			y[i] = 0.3*x[i] + rng.NormFloat64()
		}
		r, ok := Pearson(x, y)
		if !ok || r < -1 || r > 1 {
			t.Fatalf("trial %d: r = %v, ok %v", trial, r, ok)
		}
		// The textbook formula, sum xm ym / sqrt(sum xm^2 sum ym^2).
		mx, my := mean(x), mean(y)
		var sxy, sxx, syy float64
		for i := range x {
			sxy += (x[i] - mx) * (y[i] - my)
			sxx += (x[i] - mx) * (x[i] - mx)
			syy += (y[i] - my) * (y[i] - my)
		}
		if want := sxy / math.Sqrt(sxx*syy); math.Abs(r-want) > 1e-14 {
			t.Errorf("trial %d: r = %v, textbook %v", trial, r, want)
		}
		a, b := 0.5+3*rng.Float64(), 10*rng.NormFloat64()
		ax := make([]float64, n)
		for i := range x {
			ax[i] = a*x[i] + b
		}
		if r2, _ := Pearson(ax, y); math.Abs(r2-r) > 1e-13 {
			t.Errorf("trial %d: Pearson(%v x + %v, y) = %v, want %v", trial, a, b, r2, r)
		}
		for i := range x {
			ax[i] = -a*x[i] + b
		}
		if r2, _ := Pearson(ax, y); math.Abs(r2+r) > 1e-13 {
			t.Errorf("trial %d: Pearson(-%v x + %v, y) = %v, want %v", trial, a, b, r2, -r)
		}
		if r1, _ := Pearson(x, x); math.Abs(r1-1) > 1e-15 || r1 > 1 {
			t.Errorf("trial %d: Pearson(x, x) = %v", trial, r1)
		}
		if r1, _ := Pearson(x, ax); math.Abs(r1+1) > 1e-15 || r1 < -1 {
			t.Errorf("trial %d: Pearson(x, -a x + b) = %v", trial, r1)
		}
	}
	// Two points: sign(x1 - x0) sign(y1 - y0).
	for _, c := range []struct {
		x, y []float64
		r    float64
	}{
		{[]float64{0, 1}, []float64{3, 5}, 1},
		{[]float64{0, 1}, []float64{5, 3}, -1},
		{[]float64{2, -1}, []float64{5, 3}, 1},
		{[]float64{-3, 1}, []float64{5, 3}, -1}, // x1 + x0 < 0 < x1 - x0
		{[]float64{-3, 1}, []float64{-5, 3}, 1},
		{[]float64{1, -3}, []float64{-5, 3}, -1},
	} {
		if r, ok := Pearson(c.x, c.y); !ok || r != c.r {
			t.Errorf("Pearson(%v, %v) = %v, %v; want %v", c.x, c.y, r, ok, c.r)
		}
	}
	// Undefined: no or one point, a constant, NaN or Inf.
	for _, c := range [][2][]float64{
		{nil, nil},
		{{1}, {2}},
		{{1, 1, 1}, {1, 2, 3}},
		{{1, 2, 3}, {0.5, 0.5, 0.5}},
		{{1, 1}, {1, 2}},
		{{1, math.NaN(), 3}, {1, 2, 3}},
		{{1, 2, 3}, {1, math.Inf(1), 3}},
		{{1, 2, 3}, {1, 2, math.Inf(-1)}},
	} {
		if r, ok := Pearson(c[0], c[1]); ok || r != 0 {
			t.Errorf("Pearson(%v, %v) = %v, %v; want 0, false", c[0], c[1], r, ok)
		}
	}
	// Not constant, but the deviations underflow: undefined, not NaN.
	tiny := math.SmallestNonzeroFloat64
	if r, ok := Pearson([]float64{0, tiny, 0}, []float64{1, 2, 3}); ok || r != 0 {
		t.Errorf("Pearson of subnormal deviations = %v, %v; want 0, false", r, ok)
	}
	if r, ok := Pearson([]float64{1, 2, 3}, []float64{0, tiny, 0}); ok || r != 0 {
		t.Errorf("Pearson of subnormal deviations in y = %v, %v; want 0, false", r, ok)
	}
	// Squares that overflow: undefined, not a silent 0.
	if r, ok := Pearson([]float64{1e200, -1e200, 0}, []float64{1, 2, 4}); ok || r != 0 {
		t.Errorf("Pearson with overflowing squares = %v, %v; want 0, false", r, ok)
	}
	if r, ok := Pearson([]float64{1, 2, 4}, []float64{1e200, -1e200, 0}); ok || r != 0 {
		t.Errorf("Pearson with overflowing squares in y = %v, %v; want 0, false", r, ok)
	}
	expectPanic(t, "Pearson lengths", func() { Pearson([]float64{1, 2}, []float64{1, 2, 3}) })
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func expectPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}

// TestW1Golden: scipy.stats.wasserstein_distance on the 50 pairs of
// testdata/golden/signal/wasserstein.csv (n = 5 and n = 20; ties;
// permutations, whose distance is 0).
func TestW1Golden(t *testing.T) {
	path := golden.File(t, "signal", "wasserstein.csv")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := csv.NewReader(f)
	rd.FieldsPerRecord = -1 // lines of n = 5 and of n = 20
	recs, err := rd.ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) != 50 {
		t.Fatalf("wasserstein.csv: %d lines, want 50", len(recs))
	}
	sizes := map[int]int{}
	for i, rec := range recs {
		v := floats(t, "wasserstein.csv", i+1, rec)
		n := int(v[0])
		if len(v) != 2*n+2 {
			t.Fatalf("line %d: %d fields for n = %d", i+1, len(v), n)
		}
		sizes[n]++
		u, w, want := v[1:1+n], v[1+n:1+2*n], v[2*n+1]
		uc, wc := slices.Clone(u), slices.Clone(w)
		got := W1(u, w, nil)
		if math.Abs(got-want) > 1e-15*max(1, want) {
			t.Errorf("line %d (n = %d): W1 = %.17g, scipy %.17g", i+1, n, got, want)
		}
		if !slices.Equal(u, uc) || !slices.Equal(w, wc) {
			t.Errorf("line %d: W1 changed its input", i+1)
		}
		if want == 0 && got != 0 {
			t.Errorf("line %d: W1 = %v of a permutation, want 0 exactly", i+1, got)
		}
		// Symmetric, bit for bit; with a scratch buffer, the same.
		if b := W1(w, u, make([]float64, 2*n+3)); b != got {
			t.Errorf("line %d: W1(v, u) = %v, W1(u, v) = %v", i+1, b, got)
		}
	}
	if sizes[5] != 40 || sizes[20] != 10 {
		t.Errorf("sizes %v, want 40 of 5 and 10 of 20", sizes)
	}
}

// w1Quantile is W1 computed from the quantile functions, independently of
// W1's CDF merge: W1 = integral_0^1 |F_u^{-1}(t) - F_v^{-1}(t)| dt, with
// F^{-1} a step function with steps at i/len(u) and j/len(v), integrated
// exactly in rational arithmetic.
func w1Quantile(u, v []float64) float64 {
	us, vs := slices.Clone(u), slices.Clone(v)
	slices.Sort(us)
	slices.Sort(vs)
	nu, nv := int64(len(us)), int64(len(vs))
	// Breakpoints: t = a / (nu nv), with a multiples of nv and of nu.
	var cuts []int64
	for i := int64(0); i <= nu; i++ {
		cuts = append(cuts, i*nv)
	}
	for j := int64(0); j <= nv; j++ {
		cuts = append(cuts, j*nu)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	sum := new(big.Rat)
	for c := 1; c < len(cuts); c++ {
		lo, hi := cuts[c-1], cuts[c]
		i, j := lo/nv, lo/nu // the step holding (lo, hi): floor of t nu, t nv
		d := new(big.Rat).SetFloat64(us[i])
		d.Sub(d, new(big.Rat).SetFloat64(vs[j]))
		d.Abs(d)
		sum.Add(sum, d.Mul(d, big.NewRat(hi-lo, nu*nv)))
	}
	f, _ := sum.Float64()
	return f
}

// TestW1UnequalSizes: W1 of samples of different sizes against the
// quantile-function form, and closed forms.
func TestW1UnequalSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for trial := range 500 {
		size := []int{12, 12, 70}[trial%3] // above 32: slices.Sort
		u := make([]float64, 1+rng.IntN(size))
		v := make([]float64, 1+rng.IntN(size))
		for _, s := range [][]float64{u, v} {
			for i := range s {
				s[i] = rng.NormFloat64()
				if trial%3 == 0 {
					s[i] = math.Round(s[i]*2) / 2 // ties within and across
				}
			}
		}
		got, want := W1(u, v, nil), w1Quantile(u, v)
		if math.Abs(got-want) > 1e-13 {
			t.Errorf("trial %d: W1(%v, %v) = %v, quantile form %v", trial, u, v, got, want)
		}
	}
	for _, c := range []struct {
		u, v []float64
		w    float64
	}{
		{[]float64{0}, []float64{0, 1}, 0.5},
		{[]float64{0, 1}, []float64{0, 1, 1, 0}, 0},
		{[]float64{3}, []float64{1, 2, 3, 4, 5}, 1.2},           // mean |3 - v|
		{[]float64{0, 0, 0}, []float64{2, 2}, 2},                // point masses
		{[]float64{0, 4}, []float64{1, 1, 1}, 2},                // |U - V| = 1/2 on [0, 1) and 1/2 on [1, 4)
		{[]float64{-1, 1}, []float64{0}, 1},                     // symmetric about 0
		{[]float64{1}, []float64{math.NaN()}, math.NaN()},       // NaN in v
		{[]float64{math.NaN(), 1}, []float64{1}, math.NaN()},    // NaN in u
		{[]float64{1, 2}, []float64{2, math.NaN()}, math.NaN()}, // NaN after a number
	} {
		got := W1(c.u, c.v, nil)
		if !(got == c.w || math.IsNaN(got) && math.IsNaN(c.w)) {
			t.Errorf("W1(%v, %v) = %v, want %v", c.u, c.v, got, c.w)
		}
	}
	expectPanic(t, "W1 empty", func() { W1(nil, []float64{1}, nil) })
	expectPanic(t, "W1 empty v", func() { W1([]float64{1}, nil, nil) })
	expectPanic(t, "W1 short scratch", func() { W1([]float64{1, 2}, []float64{1}, make([]float64, 2)) })
}

// members returns S random maps of length N (normal values, rounded to
// 0.25 when ties is set).
func members(rng *rand.Rand, S, N int, ties bool) [][]float64 {
	a := make([][]float64, S)
	for s := range a {
		a[s] = make([]float64, N)
		for n := range a[s] {
			a[s][n] = rng.NormFloat64()
			if ties {
				a[s][n] = math.Round(4*a[s][n]) / 4
			}
		}
	}
	return a
}

// TestCoordW1: the closed forms of D_coord.
func TestCoordW1(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	for trial := range 100 {
		S, N := 2+rng.IntN(19), 1+rng.IntN(50)
		ties := trial%2 == 0
		a := members(rng, S, N, ties)

		// A shift of every member by c: |c|. The shifted values are
		// rounded, so allow a few ulps of the values.
		c := []float64{0.25, -3, 1e-3, 17.5}[trial%4]
		b := make([][]float64, S)
		for s := range b {
			b[s] = make([]float64, N)
			for n := range b[s] {
				b[s][n] = a[s][n] + c
			}
		}
		if d := CoordW1(a, b, nil); math.Abs(d-math.Abs(c)) > 1e-13*max(1, math.Abs(c)) {
			t.Errorf("trial %d: shift by %v: D = %v", trial, c, d)
		}

		// Permuted members: 0 exactly.
		p := slices.Clone(a)
		rng.Shuffle(S, func(i, j int) { p[i], p[j] = p[j], p[i] })
		if d := CoordW1(a, p, make([]float64, 2*S)); d != 0 {
			t.Errorf("trial %d: permuted members: D = %v", trial, d)
		}

		// Equal sizes: the mean over n of mean_i |a_(i) - b_(i)|.
		b = members(rng, S, N, ties)
		var want float64
		ca, cb := make([]float64, S), make([]float64, S)
		for n := range N {
			for s := range S {
				ca[s], cb[s] = a[s][n], b[s][n]
			}
			slices.Sort(ca)
			slices.Sort(cb)
			var sum float64
			for i := range S {
				sum += math.Abs(ca[i] - cb[i])
			}
			want += sum / float64(S)
		}
		want /= float64(N)
		if d := CoordW1(a, b, nil); math.Abs(d-want) > 1e-13 {
			t.Errorf("trial %d: D = %v, order-statistic form %v", trial, d, want)
		}

		// Unequal sizes: the mean of the per-coordinate W1.
		b = members(rng, 1+rng.IntN(20), N, ties)
		want = 0
		for n := range N {
			u, v := column(a, n), column(b, n)
			want += w1Quantile(u, v)
		}
		want /= float64(N)
		if d := CoordW1(a, b, nil); math.Abs(d-want) > 1e-13 {
			t.Errorf("trial %d: S_a = %d, S_b = %d: D = %v, want %v", trial, len(a), len(b), d, want)
		}
	}
	// A NaN at one coordinate makes D NaN.
	a := [][]float64{{0, 1}, {1, 2}}
	b := [][]float64{{0, math.NaN()}, {1, 2}}
	if d := CoordW1(a, b, nil); !math.IsNaN(d) {
		t.Errorf("D with a NaN = %v", d)
	}
	expectPanic(t, "CoordW1 no member", func() { CoordW1(nil, a, nil) })
	expectPanic(t, "CoordW1 no member b", func() { CoordW1(a, nil, nil) })
	expectPanic(t, "CoordW1 N = 0", func() { CoordW1([][]float64{{}}, [][]float64{{}}, nil) })
	expectPanic(t, "CoordW1 ragged a", func() { CoordW1([][]float64{{1, 2}, {1}}, a, nil) })
	expectPanic(t, "CoordW1 ragged b", func() { CoordW1(a, [][]float64{{1, 2}, {1, 2, 3}}, nil) })
	expectPanic(t, "CoordW1 scratch", func() { CoordW1(a, a, make([]float64, 3)) })
}

func column(a [][]float64, n int) []float64 {
	c := make([]float64, len(a))
	for s := range a {
		c[s] = a[s][n]
	}
	return c
}

// TestTopLStability against the IoU of the index sets of TopL.
func TestTopLStability(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	for trial := range 300 {
		N := 1 + rng.IntN(80)
		a, b := make([]float64, N), make([]float64, N)
		for n := range a {
			a[n], b[n] = rng.NormFloat64(), rng.NormFloat64()
			if trial%2 == 0 { // many ties, at the boundary too
				a[n], b[n] = float64(rng.IntN(4)), float64(rng.IntN(4))
			}
		}
		L := rng.IntN(N + 1)
		got, ok := TopLStability(a, b, L)
		if L == 0 {
			if ok || got != 0 {
				t.Errorf("trial %d: L = 0: %v, %v", trial, got, ok)
			}
			continue
		}
		ta, tb := TopL(nil, a, L), TopL(nil, b, L)
		k := 0
		for _, i := range ta {
			if slices.Contains(tb, i) {
				k++
			}
		}
		want := float64(k) / float64(len(ta)+len(tb)-k)
		if !ok || got != want {
			t.Errorf("trial %d: N = %d, L = %d: %v, %v; want %v", trial, N, L, got, ok, want)
		}
		if self, _ := TopLStability(a, a, L); self != 1 {
			t.Errorf("trial %d: TopLStability(a, a) = %v", trial, self)
		}
	}
	// Disjoint top sets: 0; the tie rule picks lower indices.
	if v, ok := TopLStability([]float64{1, 1, 0, 0}, []float64{0, 0, 1, 1}, 2); !ok || v != 0 {
		t.Errorf("disjoint: %v, %v", v, ok)
	}
	if v, ok := TopLStability([]float64{1, 1, 1, 1}, []float64{5, 5, 0, 0}, 2); !ok || v != 1 {
		t.Errorf("all tied against the first two: %v, %v", v, ok)
	}
	if v, ok := TopLStability([]float64{1, 1, 1, 1}, []float64{0, 5, 5, 0}, 2); !ok || v != 1.0/3 {
		t.Errorf("all tied against {1, 2}: %v, %v; want 1/3", v, ok)
	}
	if v, ok := TopLStability([]float64{1, math.NaN()}, []float64{1, 2}, 1); ok || v != 0 {
		t.Errorf("NaN in a: %v, %v", v, ok)
	}
	if v, ok := TopLStability([]float64{1, 2}, []float64{math.NaN(), 2}, 1); ok || v != 0 {
		t.Errorf("NaN in b: %v, %v", v, ok)
	}
	expectPanic(t, "TopLStability lengths", func() { TopLStability([]float64{1}, []float64{1, 2}, 1) })
	expectPanic(t, "TopLStability L > N", func() { TopLStability([]float64{1}, []float64{1}, 2) })
	expectPanic(t, "TopLStability L < 0", func() { TopLStability([]float64{1}, []float64{1}, -1) })
}

// roll is numpy.roll(x, k): roll(x, k)[n] = x[(n - k) mod N].
func roll(x []float64, k int) []float64 {
	N := len(x)
	out := make([]float64, N)
	for n := range out {
		out[n] = x[((n-k)%N+N)%N]
	}
	return out
}

// TestAlignShift: the metamorphic relation AlignShift(roll(x, k), k) = x,
// in place and not, and the l1 isometry.
func TestAlignShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	for trial := range 200 {
		N := 1 + rng.IntN(40)
		x, y := make([]float64, N), make([]float64, N)
		for n := range x {
			x[n], y[n] = rng.NormFloat64(), rng.NormFloat64()
		}
		k := rng.IntN(5*N) - 2*N
		r := roll(x, k)
		if got := AlignShift(nil, r, k); !slices.Equal(got, x) {
			t.Fatalf("trial %d: N = %d, k = %d: AlignShift(roll(x, k), k) = %v, want %v", trial, N, k, got, x)
		}
		in := slices.Clone(r)
		if got := AlignShift(in, in, k); !slices.Equal(got, x) || &got[0] != &in[0] {
			t.Fatalf("trial %d: N = %d, k = %d: in place: %v, want %v", trial, N, k, got, x)
		}
		// Aligning by k is rolling by -k.
		if got := AlignShift(make([]float64, N), x, k); !slices.Equal(got, roll(x, -k)) {
			t.Errorf("trial %d: AlignShift(x, %d) != roll(x, %d)", trial, k, -k)
		}
		// An l1 isometry: ||A(x) - A(y)||_1 = ||x - y||_1 (the same sum in
		// another order, so to rounding).
		ax, ay := AlignShift(nil, x, k), AlignShift(nil, y, k)
		var d0, d1 float64
		for n := range x {
			d0 += math.Abs(x[n] - y[n])
			d1 += math.Abs(ax[n] - ay[n])
		}
		if math.Abs(d0-d1) > 1e-12 {
			t.Errorf("trial %d: l1 %v after, %v before", trial, d1, d0)
		}
	}
	if got := AlignShift(nil, nil, 3); len(got) != 0 {
		t.Errorf("AlignShift of nothing: %v", got)
	}
	expectPanic(t, "AlignShift lengths", func() { AlignShift(make([]float64, 2), []float64{1, 2, 3}, 1) })
}
