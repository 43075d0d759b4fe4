package stat

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	gonum "gonum.org/v1/gonum/stat"

	"github.com/uaxai/uaxai/internal/golden"
)

// Closed-form checks of the moments and order statistics; the summary
// plugins (plugins/summary/...) test their configuration and batches.

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-13*math.Max(1, math.Abs(b)) }

// TestMoments: S = 4 maps of 3 coordinates; columns {1,2,3,4} (mean
// 5/2, variance 5/3), {-2,-2,-2,-2} (mean -2, variance 0) and {0,0,0,8}
// (mean 2, variance 16).
func TestMoments(t *testing.T) {
	r := [][]float64{{1, -2, 0}, {2, -2, 0}, {3, -2, 0}, {4, -2, 8}}
	wantMean, wantVar := []float64{2.5, -2, 2}, []float64{5.0 / 3, 0, 16}
	if got := Mean(make([]float64, 3), r); !slices.Equal(got, wantMean) {
		t.Errorf("Mean = %v, want %v", got, wantMean)
	}
	mean, variance := make([]float64, 3), make([]float64, 3)
	MeanVariance(mean, variance, r)
	for n := range 3 {
		if !near(mean[n], wantMean[n]) || !near(variance[n], wantVar[n]) {
			t.Errorf("MeanVariance coordinate %d: %v, %v; want %v, %v", n, mean[n], variance[n], wantMean[n], wantVar[n])
		}
	}
	if got := Variance(make([]float64, 3), r); !slices.Equal(got, variance) {
		t.Errorf("Variance = %v, MeanVariance's variance %v", got, variance)
	}
	// A shorter dst reads the first coordinates only, and dst is written
	// whole whatever it held.
	if got := Mean([]float64{7}, r); len(got) != 1 || got[0] != 2.5 {
		t.Errorf("Mean of the first coordinate: %v", got)
	}
	// cv = s/(|mean| + kappa); S = 2 maps a, b: s = |a-b|/sqrt(2).
	a, b := []float64{1, -3, 0, 2.5}, []float64{3, -1, 0, 2.5}
	for _, kappa := range []float64{1e-8, 0.25} {
		got := CV(make([]float64, 4), [][]float64{a, b}, kappa)
		for n := range a {
			if want := math.Abs(a[n]-b[n]) / math.Sqrt2 / (math.Abs((a[n]+b[n])/2) + kappa); !near(got[n], want) {
				t.Errorf("CV kappa %v coordinate %d: %v, want %v", kappa, n, got[n], want)
			}
		}
	}
}

// randomMaps returns S maps of N values, r[s][n] = at(n, z), z standard
// normal draws of rng in the order s, n.
func randomMaps(rng *rand.Rand, S, N int, at func(n int, z float64) float64) [][]float64 {
	r := make([][]float64, S)
	for s := range r {
		r[s] = make([]float64, N)
		for n := range r[s] {
			r[s][n] = at(n, rng.NormFloat64())
		}
	}
	return r
}

// TestMomentsMatchGonum: mean and variance against gonum's, with an
// offset that a naive sum of squares would lose digits on.
func TestMomentsMatchGonum(t *testing.T) {
	const S, N = 7, 12
	r := randomMaps(rand.New(rand.NewPCG(3, 4)), S, N, func(_ int, z float64) float64 { return 100 + z })
	mean, variance := make([]float64, N), make([]float64, N)
	MeanVariance(mean, variance, r)
	plain := Mean(make([]float64, N), r)
	col := make([]float64, S)
	for n := range N {
		for s := range col {
			col[s] = r[s][n]
		}
		if m, v := gonum.MeanVariance(col, nil); math.Abs(mean[n]-m) > 1e-12*m || math.Abs(plain[n]-m) > 1e-12*m || math.Abs(variance[n]-v) > 1e-10*v {
			t.Errorf("coordinate %d: mean %v (%v), variance %v; gonum %v, %v", n, mean[n], plain[n], variance[n], m, v)
		}
	}
}

// TestCVTwoPass checks many draws against a two-pass formula, with an
// offset that a naive sum of squares would lose digits on.
func TestCVTwoPass(t *testing.T) {
	const S, N = 9, 11
	draws := randomMaps(rand.New(rand.NewPCG(3, 9)), S, N, func(n int, z float64) float64 { return float64(n-5)*100 + z })
	got := CV(make([]float64, N), draws, 0.1)
	for n := 0; n < N; n++ {
		m := 0.0
		for s := range draws {
			m += draws[s][n]
		}
		m /= S
		ss := 0.0
		for s := range draws {
			ss += (draws[s][n] - m) * (draws[s][n] - m)
		}
		want := math.Sqrt(ss/(S-1)) / (math.Abs(m) + 0.1)
		if math.Abs(got[n]-want) > 1e-10*want {
			t.Errorf("coordinate %d: %v, want %v", n, got[n], want)
		}
	}
}

func TestRank(t *testing.T) {
	for _, c := range []struct {
		p    float64
		s, k int
	}{
		{0.07, 100, 7}, // math.Ceil(0.07*100) is 8
		{0.05, 20, 1}, {0.25, 20, 5}, {0.5, 20, 10}, {0.75, 20, 15}, {0.95, 20, 19},
		{0.5, 7, 4}, {0.5, 1, 1}, {0.01, 7, 1}, {0.99, 7, 7}, {0.3, 10, 3}, {0.31, 10, 4},
		{1e-300, 5, 1}, {0, 5, 0}, {1, 5, 5}, {0.07, 0, 0},
		{0.1, 1 << 40, 109951162778}, // 2^40/10 = 109951162777.6
	} {
		if got := Rank(c.p, c.s); got != c.k {
			t.Errorf("Rank(%v, %d) = %d, want %d", c.p, c.s, got, c.k)
		}
	}
	for _, p := range []float64{-0.1, 1.5, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Rank(%v, 3) did not panic", p)
				}
			}()
			Rank(p, 3)
		}()
	}
}

// TestOrderStatistics: S = 4 maps of 3 coordinates; sorted columns
// {1,2,3,4}, {-5,-5,0,7} and one with a NaN.
func TestOrderStatistics(t *testing.T) {
	r := [][]float64{{3, 0, 1}, {1, -5, math.NaN()}, {4, 7, 2}, {2, -5, 3}}
	for k, want := range [][]float64{{1, -5}, {2, -5}, {3, 0}, {4, 7}} {
		q := Quantile(make([]float64, 3), r, k+1)
		if q[0] != want[0] || q[1] != want[1] || !math.IsNaN(q[2]) {
			t.Errorf("Quantile k = %d: %v, want %v and NaN", k+1, q, want)
		}
	}
	if got := Quantile(make([]float64, 2), r, Rank(0.5, 4)); got[0] != 2 || got[1] != -5 {
		t.Errorf("the lower median: %v", got)
	}
	lo, up := Band(make([]float64, 3), make([]float64, 3), r, 1, 4)
	if lo[0] != 1 || up[0] != 4 || lo[1] != -5 || up[1] != 7 || !math.IsNaN(lo[2]) || !math.IsNaN(up[2]) {
		t.Errorf("min-max band: %v %v", lo, up)
	}
	// beta = 0.5, S = 4: h = 3*0.25 = 0.75 and 3*0.75 = 2.25.
	lo, up = InterpolatedBand(make([]float64, 3), make([]float64, 3), r, 0.5)
	if lo[0] != 1.75 || up[0] != 3.25 || lo[1] != -5 || up[1] != 1.75 || !math.IsNaN(lo[2]) || !math.IsNaN(up[2]) {
		t.Errorf("interpolated band, beta 0.5: %v %v", lo, up)
	}
	var seen []int
	Sorted(r, 2, func(n int, col []float64) {
		seen = append(seen, n)
		if !slices.IsSorted(col) || len(col) != 4 {
			t.Errorf("Sorted column %d: %v", n, col)
		}
	})
	if !slices.Equal(seen, []int{0, 1}) {
		t.Errorf("Sorted visited %v, want the first 2 coordinates", seen)
	}
}

func TestLinearGolden(t *testing.T) {
	samples, cols := golden.Quantiles(t)
	plain := 0 // lines where a + (b-a) g alone would not be bit-exact
	for _, p := range []string{"0.05", "0.25", "0.5", "0.75", "0.95"} {
		want := cols["lin_"+p]
		if len(want) != 30 {
			t.Fatalf("lin_%s: %d values", p, len(want))
		}
		alpha, _ := strconv.ParseFloat(p, 64)
		got := make([]float64, len(samples))
		for n, x := range samples {
			sorted := append([]float64(nil), x...)
			slices.Sort(sorted)
			got[n] = LinearQuantile(sorted, alpha)
			h := float64(len(x)-1) * alpha
			j := int(math.Floor(h))
			if a, b := sorted[j], sorted[min(j+1, len(x)-1)]; a+(b-a)*(h-float64(j)) != want[n] {
				plain++
			}
		}
		golden.SameBits(t, "lin_"+p, got, want)
	}
	t.Logf("%d of 150 golden values need numpy's g >= 0.5 branch", plain)
}

func TestLinearSmall(t *testing.T) {
	x := []float64{1, 2, 4, 8, 16}
	for _, c := range []struct{ p, want float64 }{
		{0, 1}, {1, 16}, {0.5, 4}, {0.25, 2}, {0.125, 1.5}, {0.375, 3}, {0.875, 12}, {0.9375, 14},
	} {
		if got := LinearQuantile(x, c.p); got != c.want {
			t.Errorf("LinearQuantile(%v, %v) = %v, want %v", x, c.p, got, c.want)
		}
	}
	if got := LinearQuantile([]float64{7}, 0.3); got != 7 {
		t.Errorf("one value: %v", got)
	}
	// The g >= 0.5 branch: b - (b-a)(1-g) is exactly b as g -> 1, where
	// a + (b-a) g may round below it.
	a, b := 0.1, 1e16
	g := 1 - 0x1p-53
	if got, want := LinearQuantile([]float64{a, b}, g), b-(b-a)*(1-g); got != want {
		t.Errorf("upper branch: %v, want %v", got, want)
	}
	if got, want := LinearQuantile([]float64{-3, 5}, 0.5), 5-8*0.5; got != want {
		t.Errorf("g = 0.5: %v, want %v", got, want)
	}
}

// TestBandCoverage checks Proposition (order-statistic band): a new
// exchangeable draw falls in [r_(k), r_(l)] with probability (l-k)/(S+1).
func TestBandCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const S, N, trials = 9, 50, 200
	k, l := 2, 8 // coverage 6/10
	in, all := 0, 0
	for range trials {
		r := make([][]float64, S)
		for s := range r {
			r[s] = make([]float64, N)
			for n := range r[s] {
				r[s][n] = rng.ExpFloat64()
			}
		}
		lo, up := Band(make([]float64, N), make([]float64, N), r, k, l)
		for n := range lo {
			if v := rng.ExpFloat64(); lo[n] <= v && v <= up[n] {
				in++
			}
			all++
		}
	}
	// 10000 Bernoulli(0.6) trials: standard deviation 0.0049.
	if got := float64(in) / float64(all); math.Abs(got-0.6) > 0.02 {
		t.Errorf("coverage %v, want 0.6", got)
	}
}
