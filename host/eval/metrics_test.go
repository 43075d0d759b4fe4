package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"testing"
)

const n640 = 640

func maskOf(n int, idx ...int) []bool {
	m := make([]bool, n)
	for _, i := range idx {
		m[i] = true
	}
	return m
}

func indicator(m []bool) []float64 {
	r := make([]float64, len(m))
	for i, v := range m {
		if v {
			r[i] = 1
		}
	}
	return r
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*max(1, math.Abs(a), math.Abs(b)) }

func TestClosedForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, L := range []int{1, 7, 60, 320, 639, 640} {
		idx := rng.Perm(n640)[:L]
		mask := maskOf(n640, idx...)

		// A map equal to the mask: RMA = IoU = 1.
		r := indicator(mask)
		if v, ok := RMA(r, mask); !ok || v != 1 {
			t.Errorf("L=%d: RMA(mask, mask) = %v, %v; want 1", L, v, ok)
		}
		if v, ok := IoU(r, mask); !ok || v != 1 {
			t.Errorf("L=%d: IoU(mask, mask) = %v, %v; want 1", L, v, ok)
		}

		// A map disjoint from the mask: 0 (when the complement can hold L).
		if L <= n640/2 {
			d := make([]float64, n640)
			for i := range d {
				if !mask[i] {
					d[i] = 1 + rng.Float64()
				}
			}
			if v, ok := RMA(d, mask); !ok || v != 0 {
				t.Errorf("L=%d: RMA(disjoint) = %v, %v; want 0", L, v, ok)
			}
			if v, ok := IoU(d, mask); !ok || v != 0 {
				t.Errorf("L=%d: IoU(disjoint) = %v, %v; want 0", L, v, ok)
			}
		}

		// A constant map: RMA = L/N; the tie rule picks indices 0..L-1, so
		// IoU = k/(2L-k) with k = |{0..L-1} ∩ I|.
		c := make([]float64, n640)
		for i := range c {
			c[i] = 0.37
		}
		if v, ok := RMA(c, mask); !ok || !near(v, float64(L)/n640, 1e-13) {
			t.Errorf("L=%d: RMA(constant) = %v, want %v", L, v, float64(L)/n640)
		}
		k := 0
		for i := range L {
			if mask[i] {
				k++
			}
		}
		if v, ok := IoU(c, mask); !ok || v != float64(k)/float64(2*L-k) {
			t.Errorf("L=%d: IoU(constant) = %v, want %v", L, v, float64(k)/float64(2*L-k))
		}
		if v, _ := IoU(c, maskOf(n640, seq(0, L)...)); v != 1 {
			t.Errorf("L=%d: IoU(constant, first L) = %v, want 1", L, v)
		}
	}
}

func seq(a, b int) []int {
	var s []int
	for i := a; i < b; i++ {
		s = append(s, i)
	}
	return s
}

// TestHandComputed: r = 9, 8, ..., 0; I = {0, 1, 5, 6}, L = 4.
// T_4 = {0, 1, 2, 3}: intersection {0, 1} (2), union {0, 1, 2, 3, 5, 6} (6):
// IoU = 1/3. RMA = (9 + 8 + 4 + 3) / 45 = 24/45.
func TestHandComputed(t *testing.T) {
	r := []float64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}
	mask := maskOf(10, 0, 1, 5, 6)
	if v, ok := IoU(r, mask); !ok || v != 1.0/3 {
		t.Errorf("IoU = %v, %v; want 1/3", v, ok)
	}
	if v, ok := RMA(r, mask); !ok || !near(v, 24.0/45, 1e-15) {
		t.Errorf("RMA = %v, %v; want 24/45", v, ok)
	}
	// With a tie at the boundary: r = [1, 3, 3, 2, 3], I = {4, 3}, L = 2:
	// T_2 = {1, 2} (the lower indices of the three 3s): IoU = 0.
	// I = {2, 4}: T_2 = {1, 2}: k = 1, IoU = 1/3.
	r = []float64{1, 3, 3, 2, 3}
	if v, _ := IoU(r, maskOf(5, 4, 3)); v != 0 {
		t.Errorf("tie IoU = %v, want 0", v)
	}
	if v, _ := IoU(r, maskOf(5, 2, 4)); v != 1.0/3 {
		t.Errorf("tie IoU = %v, want 1/3", v)
	}
}

func TestTopLTies(t *testing.T) {
	eq := make([]float64, n640)
	for _, L := range []int{0, 1, 5, 639, 640} {
		if got := TopL(nil, eq, L); !slices.Equal(got, seq(0, L)) {
			t.Errorf("all-equal L=%d: %v, want the first L indices", L, got)
		}
	}
	r := []float64{1, 3, 3, 2, 3}
	for L, want := range [][]int{{}, {1}, {1, 2}, {1, 2, 4}, {1, 2, 4, 3}, {1, 2, 4, 3, 0}} {
		if got := TopL(make([]int, L), r, L); !slices.Equal(got, want) {
			t.Errorf("TopL(%v, %d) = %v, want %v", r, L, got, want)
		}
	}
	// -0 and +0 are equal: lower index first.
	r = []float64{0, math.Copysign(0, -1), -1, math.Copysign(0, -1), 0}
	if got := TopL(nil, r, 4); !slices.Equal(got, []int{0, 1, 3, 4}) {
		t.Errorf("signed zeros: %v", got)
	}
	// Infinities and negative values.
	r = []float64{-5, math.Inf(-1), math.Inf(1), -1e-300, 1e300}
	if got := TopL(nil, r, 5); !slices.Equal(got, []int{2, 4, 3, 0, 1}) {
		t.Errorf("extremes: %v", got)
	}
}

// refTopL is an independent reference: a stable sort of the indices by
// value, descending.
func refTopL(r []float64, L int) []int {
	idx := seq(0, len(r))
	sort.SliceStable(idx, func(a, b int) bool { return r[idx[a]] > r[idx[b]] })
	return idx[:L]
}

func refIoU(r []float64, mask []bool) float64 {
	L := 0
	for _, m := range mask {
		if m {
			L++
		}
	}
	top := refTopL(r, L)
	k := 0
	for _, i := range top {
		if mask[i] {
			k++
		}
	}
	union := 0
	in := make([]bool, len(r))
	for _, i := range top {
		in[i] = true
	}
	for i := range r {
		if in[i] || mask[i] {
			union++
		}
	}
	return float64(k) / float64(union)
}

// randMap draws a map with many ties (values from a small set) or not,
// with negative values, signed zeros and infinities when wild.
func randMap(rng *rand.Rand, n int, ties, wild bool) []float64 {
	r := make([]float64, n)
	for i := range r {
		switch {
		case ties:
			r[i] = float64(rng.IntN(7)) / 3
		default:
			r[i] = rng.ExpFloat64()
		}
		if wild {
			switch rng.IntN(12) {
			case 0:
				r[i] = -r[i]
			case 1:
				r[i] = math.Copysign(0, -1)
			case 2:
				r[i] = math.Inf(1)
			case 3:
				r[i] = math.Inf(-1)
			case 4:
				r[i] = math.SmallestNonzeroFloat64 * float64(rng.IntN(3))
			}
		}
	}
	return r
}

func TestTopLAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 400 {
		n := 1 + rng.IntN(n640)
		if trial%2 == 0 {
			n = n640
		}
		r := randMap(rng, n, trial%3 != 0, trial%4 == 0)
		L := rng.IntN(n + 1)
		got := TopL(nil, r, L)
		if want := refTopL(r, L); !slices.Equal(got, want) {
			t.Fatalf("trial %d (n=%d, L=%d): TopL = %v, reference %v", trial, n, L, got, want)
		}
		mask := make([]bool, n)
		for i := range mask {
			mask[i] = rng.IntN(4) == 0
		}
		mask[rng.IntN(n)] = true
		if v, ok := IoU(r, mask); !ok || v != refIoU(r, mask) {
			t.Fatalf("trial %d: IoU = %v, %v; reference %v", trial, v, ok, refIoU(r, mask))
		}
	}
}

// TestMetamorphic: RMA and IoU are invariant under r -> c r, c > 0; IoU is
// invariant under any strictly increasing transform (it uses only the
// order, and equal values stay equal so ties break the same way).
func TestMetamorphic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	transforms := map[string]func(float64) float64{
		"sqrt":     math.Sqrt,
		"exp":      math.Exp,
		"log":      func(x float64) float64 { return math.Log(x + 1e-3) }, // negative values
		"cube":     func(x float64) float64 { return x * x * x },
		"-1/(1+x)": func(x float64) float64 { return -1 / (1 + x) },
		"atan":     math.Atan,
		"affine":   func(x float64) float64 { return 3*x - 7 },
	}
	for trial := range 100 {
		// Values on a 1/1000 grid: distinct values stay distinct under
		// every transform above, ties stay ties.
		r := make([]float64, n640)
		for i := range r {
			r[i] = float64(rng.IntN(4000)) / 1000
			if trial%2 == 0 {
				r[i] = float64(rng.IntN(20)) / 1000 // many ties
			}
		}
		mask := make([]bool, n640)
		a, b := rng.IntN(n640), rng.IntN(n640)
		for i := min(a, b); i <= max(a, b); i++ {
			mask[i] = true
		}
		rma0, ok1 := RMA(r, mask)
		iou0, ok2 := IoU(r, mask)
		if !ok1 || !ok2 {
			t.Fatalf("trial %d: undefined", trial)
		}
		for _, c := range []float64{1e-6, 0.3, 2, 7.5, 1e9} {
			s := make([]float64, n640)
			for i := range s {
				s[i] = c * r[i]
			}
			if v, _ := RMA(s, mask); !near(v, rma0, 1e-13) {
				t.Errorf("trial %d: RMA(%g r) = %v, RMA(r) = %v", trial, c, v, rma0)
			}
			if v, _ := IoU(s, mask); v != iou0 {
				t.Errorf("trial %d: IoU(%g r) = %v, IoU(r) = %v", trial, c, v, iou0)
			}
		}
		for name, f := range transforms {
			s := make([]float64, n640)
			for i := range s {
				s[i] = f(r[i])
			}
			if v, _ := IoU(s, mask); v != iou0 {
				t.Errorf("trial %d: IoU(%s(r)) = %v, IoU(r) = %v", trial, name, v, iou0)
			}
		}
	}
}

// TestPermutation: permuting r and the mask together keeps RMA (a sum);
// for maps without ties it keeps IoU too (with ties the tie rule is
// index-based, so IoU may change).
func TestPermutation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		r := randMap(rng, n640, trial%2 == 0, false)
		mask := make([]bool, n640)
		for i := range mask {
			mask[i] = rng.IntN(3) == 0
		}
		mask[0] = true
		perm := rng.Perm(n640)
		pr, pm := make([]float64, n640), make([]bool, n640)
		for i, j := range perm {
			pr[j], pm[j] = r[i], mask[i]
		}
		a, _ := RMA(r, mask)
		b, _ := RMA(pr, pm)
		if !near(a, b, 1e-13) {
			t.Errorf("trial %d: RMA %v, permuted %v", trial, a, b)
		}
		if trial%2 == 1 { // continuous values: no ties
			a, _ := IoU(r, mask)
			b, _ := IoU(pr, pm)
			if a != b {
				t.Errorf("trial %d: IoU %v, permuted %v", trial, a, b)
			}
		}
	}
}

func TestUndefined(t *testing.T) {
	empty := make([]bool, 4)
	if _, ok := RMA([]float64{1, 2, 3, 4}, empty); ok {
		t.Error("RMA with an empty mask: ok")
	}
	if _, ok := IoU([]float64{1, 2, 3, 4}, empty); ok {
		t.Error("IoU with an empty mask: ok")
	}
	mask := maskOf(4, 1)
	if v, ok := RMA(make([]float64, 4), mask); ok || v != 0 {
		t.Errorf("RMA of a zero map = %v, %v; want undefined", v, ok)
	}
	nan := []float64{1, math.NaN(), 0, 0}
	if v, ok := RMA(nan, mask); ok || v != 0 {
		t.Errorf("RMA with NaN = %v, %v", v, ok)
	}
	if v, ok := IoU(nan, mask); ok || v != 0 {
		t.Errorf("IoU with NaN = %v, %v", v, ok)
	}
	inf := []float64{1, math.Inf(1), 0, 0}
	if _, ok := RMA(inf, mask); ok {
		t.Error("RMA with +Inf: ok")
	}
	if v, ok := IoU(inf, mask); !ok || v != 1 {
		t.Errorf("IoU with +Inf = %v, %v; want 1 (order only)", v, ok)
	}
	for _, c := range []struct {
		r    []float64
		m    []bool
		want Skip
	}{
		{[]float64{1, 2, 3, 4}, empty, EmptyMask},
		{make([]float64, 4), mask, ZeroMass},
		{nan, mask, NonFinite},
		{inf, mask, NonFinite},
		{[]float64{0, 2, 0, 2}, mask, Scored},
	} {
		rma, iou, why := Localise(c.r, c.m)
		if why != c.want {
			t.Errorf("Localise(%v) = %v, want %v", c.r, why, c.want)
		}
		if why == Scored && (rma != 0.5 || iou != 1) {
			t.Errorf("Localise(%v) = %v, %v; want 0.5, 1", c.r, rma, iou)
		}
		if why != Scored && (rma != 0 || iou != 0) {
			t.Errorf("Localise(%v) = %v, %v for %v; want 0, 0", c.r, rma, iou, why)
		}
	}
}

func TestAbs(t *testing.T) {
	r := []float64{-1, 2, math.Copysign(0, -1), math.Inf(-1)}
	want := []float64{1, 2, 0, math.Inf(1)}
	got := Abs(nil, r)
	if !slices.Equal(got, want) || math.Signbit(got[2]) {
		t.Errorf("Abs = %v", got)
	}
	if !slices.Equal(r, []float64{-1, 2, math.Copysign(0, -1), math.Inf(-1)}) {
		t.Error("Abs(nil, r) changed r")
	}
	Abs(r, r)
	if !slices.Equal(r, want) {
		t.Errorf("Abs in place = %v", r)
	}
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}

func TestPanics(t *testing.T) {
	r := []float64{1, 2, 3}
	m := []bool{true, false}
	mustPanic(t, "Abs len", func() { Abs(make([]float64, 2), r) })
	mustPanic(t, "RMA len", func() { RMA(r, m) })
	mustPanic(t, "IoU len", func() { IoU(r, m) })
	mustPanic(t, "Localise len", func() { Localise(r, m) })
	mustPanic(t, "RMA negative", func() { RMA([]float64{1, -1}, m) })
	mustPanic(t, "Localise negative", func() { Localise([]float64{1, -2}, m) })
	mustPanic(t, "Localise negative zero sum", func() { Localise([]float64{1, -1}, m) })
	mustPanic(t, "TopL L<0", func() { TopL(nil, r, -1) })
	mustPanic(t, "TopL L>N", func() { TopL(nil, r, 4) })
	mustPanic(t, "TopL dst", func() { TopL(make([]int, 1), r, 2) })
	mustPanic(t, "TopL NaN", func() { TopL(nil, []float64{math.NaN()}, 1) })
	mustPanic(t, "MeanSD empty", func() { MeanSD(nil) })
	mustPanic(t, "Accuracy len", func() { Accuracy([]int{1}, nil) })
}

func TestNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	r := randMap(rng, n640, false, false)
	mask := make([]bool, n640)
	for i := 100; i < 160; i++ {
		mask[i] = true
	}
	dst := make([]int, 60)
	for name, f := range map[string]func(){
		"RMA":      func() { RMA(r, mask) },
		"IoU":      func() { IoU(r, mask) },
		"TopL":     func() { TopL(dst, r, 60) },
		"Localise": func() { Localise(r, mask) },
		"Abs":      func() { Abs(r, r) },
	} {
		if a := testing.AllocsPerRun(20, f); a != 0 {
			t.Errorf("%s allocates %v times a call", name, a)
		}
	}
}

func BenchmarkIoU(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, L := range []int{10, 60, 320, 630} {
		r := randMap(rng, n640, false, false)
		mask := make([]bool, n640)
		for _, i := range rng.Perm(n640)[:L] {
			mask[i] = true
		}
		b.Run("L="+strconv.Itoa(L), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				IoU(r, mask)
			}
		})
	}
}

func BenchmarkTopL(b *testing.B) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, L := range []int{10, 60, 320, 630} {
		r := randMap(rng, n640, false, false)
		dst := make([]int, L)
		b.Run("L="+strconv.Itoa(L), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				TopL(dst, r, L)
			}
		})
	}
}

// BenchmarkSortReference is the naive alternative, for comparison.
func BenchmarkSortReference(b *testing.B) {
	rng := rand.New(rand.NewPCG(13, 14))
	r := randMap(rng, n640, false, false)
	for b.Loop() {
		refTopL(r, 60)
	}
}

func BenchmarkRMA(b *testing.B) {
	rng := rand.New(rand.NewPCG(15, 16))
	r := randMap(rng, n640, false, false)
	mask := make([]bool, n640)
	for i := 100; i < 160; i++ {
		mask[i] = true
	}
	for b.Loop() {
		RMA(r, mask)
	}
}

func TestAbsMaps(t *testing.T) {
	m := [][]float64{{-1, 2}, {0, -3.5}}
	if got := AbsMaps(m, false); &got[0][0] != &m[0][0] {
		t.Error("AbsMaps(m, false) is not m itself")
	}
	got := AbsMaps(m, true)
	want := [][]float64{{1, 2}, {0, 3.5}}
	for s := range want {
		for n := range want[s] {
			if got[s][n] != want[s][n] {
				t.Errorf("AbsMaps: [%d][%d] = %v, want %v", s, n, got[s][n], want[s][n])
			}
		}
	}
	if m[0][0] != -1 {
		t.Error("AbsMaps changed its input")
	}
}
