package nn

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// localBN keeps a batchnorm (followed by a ReLU, so not folded) and a
// dropout inside the local stack, and a maxpool of 2, so that every layer
// kind of the boundary path runs.
func localBN() Arch {
	return Arch{Name: "local-bn", InChannels: 2, InLen: 40, Layers: []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 5, Kernel: 3},
		{Kind: KindBatchNorm1D, Name: "bn"},
		{Kind: KindReLU},
		{Kind: KindDropout, P: 0.3},
		{Kind: KindMaxPool1D, Kernel: 2},
		{Kind: KindConv1D, Name: "c2", Out: 4, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindGlobalMaxPool},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d", Out: 6},
		{Kind: KindReLU},
		{Kind: KindDense, Name: "e", Out: 3},
	}}
}

// oddHeads are networks whose layers after the global max pool start
// with a ReLU (the head reads a copy of the cached columns) or keep a
// batchnorm (the head runs as a Net).
func oddHeads() []Arch {
	local := []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 3, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindConv1D, Name: "c2", Out: 4, Kernel: 2},
		{Kind: KindGlobalMaxPool},
	}
	reluFirst := Arch{Name: "relu-head", InChannels: 1, InLen: 100, Layers: append(append([]Layer(nil), local...),
		Layer{Kind: KindReLU}, Layer{Kind: KindFlatten}, Layer{Kind: KindDense, Name: "d", Out: 5}, Layer{Kind: KindDense, Name: "e", Out: 3})}
	bnKept := Arch{Name: "bn-head", InChannels: 1, InLen: 100, Layers: append(append([]Layer(nil), local...),
		Layer{Kind: KindFlatten}, Layer{Kind: KindDense, Name: "d", Out: 5}, Layer{Kind: KindBatchNorm1D, Name: "bn"},
		Layer{Kind: KindReLU}, Layer{Kind: KindDense, Name: "e", Out: 3})}
	return []Arch{reluFirst, bnKept}
}

// perturbed returns x with the spans set to baseline in every channel.
func perturbed(x []float32, a Arch, spans []Span, baseline float32) []float32 {
	out := append([]float32(nil), x...)
	for _, s := range spans {
		for c := range a.InChannels {
			for t := max(s.Lo, 0); t < min(s.Hi, a.InLen); t++ {
				out[c*a.InLen+t] = baseline
			}
		}
	}
	return out
}

// TestSpanProbsDefinition: SpanProbs equals its definition, the class
// probability of a full forward pass of the perturbed input, within 1e-6,
// for random span sets: several spans an input, spans at both ends, spans
// and gaps shorter than R-1 (which take the forward pass), none at all;
// and the pooled vectors equal the global max pool's output of the
// forward pass.
func TestSpanProbsDefinition(t *testing.T) {
	for _, a := range append([]Arch{localBN(), smallArch(), PaperArch()}, oddHeads()...) {
		_, p, x, _ := randomSetup(t, a, 1, 21)
		m, err := NewModel(Params{Arch: a, Data: p})
		if err != nil {
			t.Fatal(err)
		}
		T, k := a.InLen, m.Classes()
		R := m.edge0().R()
		r := rand.New(rand.NewPCG(3, uint64(T)))
		var spans [][]Span
		spans = append(spans, nil, []Span{{0, T}}, []Span{{0, R - 1}}, []Span{{T - R + 1, T}}, []Span{{2, 2 + R/2}})
		for range 40 {
			var sp []Span
			for t0 := r.IntN(R); t0 < T; {
				w := R - 1 + r.IntN(2*R)
				if r.IntN(6) == 0 {
					w = 1 + r.IntN(R) // too short for the boundary path
				}
				sp = append(sp, Span{t0, min(t0+w, T)})
				t0 += w + R - 1 + r.IntN(R)
				if r.IntN(8) == 0 {
					t0 -= R / 2 // a gap too short
				}
			}
			spans = append(spans, sp)
		}
		got := make([]float32, len(spans))
		m.SpanProbs(got, x, spans, 0.3, 1)
		pooled := make([]float32, len(spans)*m.PooledLen())
		m.SpanPooled(pooled, x, spans, 0.3)
		ws := m.net.NewWorkspace(1)
		fp := m.folded
		pr := make([]float32, k)
		for j, sp := range spans {
			xo := perturbed(x, a, sp, 0.3)
			if err := m.Probs(context.Background(), pr, xo); err != nil {
				t.Fatal(err)
			}
			if d := math.Abs(float64(got[j] - pr[1])); d > 1e-6 {
				t.Fatalf("%s: spans %v: SpanProbs %v, forward pass %v", a.Name, sp, got[j], pr[1])
			}
			m.net.forward(ws, fp, xo, false, nil, m.plan.g)
			within(t, a.Name+" pooled", pooled[j*m.PooledLen():(j+1)*m.PooledLen()], ws.Act(m.plan.g), 1e-6)
		}
	}
}

// edge0 returns the boundary plan, building it.
func (m *Inference) edge0() *edgePlan {
	m.planWindows()
	return m.edge
}

// mcDraws returns S draws of the network p of arch a with dropout folded
// into its last dense layer, as MC dropout makes them: only that layer's
// weights differ.
func mcDraws(t *testing.T, a Arch, p []float32, S int) []*Inference {
	t.Helper()
	n := len(a.Layers)
	da := a
	da.Layers = append(append(append([]Layer(nil), a.Layers[:n-1]...), Layer{Kind: KindDropout, P: 0.3}), a.Layers[n-1])
	shapes, err := a.Shapes()
	if err != nil {
		t.Fatal(err)
	}
	units := shapes[n-2].Size()
	r := rand.New(rand.NewPCG(5, 5))
	var out []*Inference
	for range S {
		mask := make([]bool, units)
		for i := range mask {
			mask[i] = r.Float64() >= 0.3
		}
		fa, fp, err := FoldDropout(da, p, [][]bool{mask})
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewModel(Params{Arch: fa, Data: fp})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestSharedTrunkMatchesPlain: occlusion probabilities of MC-dropout draws
// through one TrunkCache (every draw after the first takes the pooled
// vectors of the first) are the bytes WindowProbs gives each draw alone,
// and equal full forward passes of the occluded inputs within 1e-6; on
// random networks and on the paper's golden network, for windows of the
// boundary path and narrower ones.
func TestSharedTrunkMatchesPlain(t *testing.T) {
	type tc struct {
		a Arch
		p []float32
		x []float32
	}
	var cases []tc
	// localBN without its inner dropout, which FoldDropout would need a
	// mask for.
	lb := localBN()
	lb.Layers = append(lb.Layers[:3:3], lb.Layers[4:]...)
	for _, a := range append([]Arch{lb, smallArch(), PaperArch()}, oddHeads()...) {
		_, p, x, _ := randomSetup(t, a, 2, 31)
		cases = append(cases, tc{a, p, x})
	}
	g := loadGolden(t)
	cases = append(cases, tc{g.params.Arch, g.params.Data, g.x[:2*640]})
	for _, c := range cases {
		const S = 4
		draws := mcDraws(t, c.a, c.p, S)
		T, n := c.a.InLen, draws[0].InputLen()
		R := draws[0].edge0().R()
		widths, stride := []int{1, R - 2, R - 1, 60 % T, T}, 1
		if T > 100 { // the paper's networks: fewer forward passes to compare with
			widths, stride = []int{R - 2, 60}, 4
		}
		for _, width := range widths {
			if width < 1 {
				continue
			}
			var starts []int
			for s := 0; s+width <= T; s += stride {
				starts = append(starts, s)
			}
			cache := NewTrunkCache(1 << 24)
			for s, m := range draws {
				for b := range 2 {
					x := c.x[b*n : (b+1)*n]
					shared := make([]float32, len(starts))
					p0 := m.WindowProbsCached(shared, x, starts, width, 0, 1, cache)
					pr := make([]float32, m.Classes())
					if err := m.Probs(context.Background(), pr, x); err != nil {
						t.Fatal(err)
					}
					if d := math.Abs(float64(p0 - pr[1])); d > 1e-6 {
						t.Fatalf("%s width %d draw %d: p(x) %v, forward pass %v", c.a.Name, width, s, p0, pr[1])
					}
					alone := make([]float32, len(starts))
					m.WindowProbs(alone, x, starts, width, 0, 1)
					for j := range alone {
						if math.Float32bits(shared[j]) != math.Float32bits(alone[j]) {
							t.Fatalf("%s width %d draw %d: window %d: shared trunk %v, alone %v", c.a.Name, width, s, starts[j], shared[j], alone[j])
						}
					}
					if s != 0 && s != S-1 {
						continue // forward passes for the draw that fills the cache and one that hits
					}
					plain := make([]float32, len(starts))
					m.windowProbsPlain(plain, x, starts, width, baseFill{}, 1)
					for j := range plain {
						if d := math.Abs(float64(shared[j] - plain[j])); d > 1e-6 {
							t.Fatalf("%s width %d draw %d: window %d: %v, forward pass %v", c.a.Name, width, s, starts[j], shared[j], plain[j])
						}
					}
				}
			}
			if hits, misses := cache.Stats(); hits != 2*(S-1) || misses != 2 {
				t.Errorf("%s width %d: %d hits, %d misses; want %d and 2", c.a.Name, width, hits, misses, 2*(S-1))
			}
		}
	}
}

// TestTrunkCacheKeys: an entry serves only the same trunk, input, windows,
// width and baseline; a network with another trunk (an ensemble member)
// misses; the cache keeps to its limit, dropping the least recently used
// entry first.
func TestTrunkCacheKeys(t *testing.T) {
	a := smallArch()
	_, p, x, _ := randomSetup(t, a, 2, 41)
	_, q, _, _ := randomSetup(t, a, 1, 42)
	m, _ := NewModel(Params{Arch: a, Data: p})
	other, _ := NewModel(Params{Arch: a, Data: q})
	n := m.InputLen()
	starts := []int{0, 3, 9}
	dst := make([]float32, 3)
	c := NewTrunkCache(1 << 20)
	m.WindowProbsCached(dst, x[:n], starts, 8, 0, 0, c)
	for i, call := range []func(){
		func() { m.WindowProbsCached(dst, x[n:], starts, 8, 0, 0, c) },          // input
		func() { m.WindowProbsCached(dst, x[:n], starts[:2], 8, 0, 0, c) },      // windows
		func() { m.WindowProbsCached(dst, x[:n], starts, 9, 0, 0, c) },          // width
		func() { m.WindowProbsCached(dst, x[:n], starts, 8, 0.5, 0, c) },        // baseline
		func() { other.WindowProbsCached(dst, x[:n], starts, 8, 0, 0, c) },      // trunk
		func() { m.WindowProbsCached(dst, x[:n], []int{0, 3, 10}, 8, 0, 0, c) }, // window start
	} {
		call()
		if hits, misses := c.Stats(); hits != 0 || misses != int64(i+2) {
			t.Fatalf("change %d: %d hits, %d misses", i, hits, misses)
		}
	}
	m.WindowProbsCached(dst, x[:n], starts, 8, 0, 2, c) // another class: the same pooled vectors
	if hits, _ := c.Stats(); hits != 1 {
		t.Fatalf("%d hits, want 1", hits)
	}
	// A limit of two entries: the third put drops the least recently used.
	size := int64(4*n+8*len(starts)+4*(len(starts)+1)*m.PooledLen()) + 128
	small := NewTrunkCache(2 * size)
	m.WindowProbsCached(dst, x[:n], starts, 8, 0, 0, small)
	m.WindowProbsCached(dst, x[n:], starts, 8, 0, 0, small)
	m.WindowProbsCached(dst, x[:n], starts, 8, 0, 0, small) // hit: x[:n] is now the most recent
	m.WindowProbsCached(dst, x[:n], starts, 9, 0, 0, small) // drops x[n:]
	if small.used > small.limit || small.lru.Len() != 2 {
		t.Fatalf("%d bytes in %d entries, limit %d", small.used, small.lru.Len(), small.limit)
	}
	m.WindowProbsCached(dst, x[:n], starts, 8, 0, 0, small)
	m.WindowProbsCached(dst, x[n:], starts, 8, 0, 0, small)
	if hits, misses := small.Stats(); hits != 2 || misses != 4 {
		t.Errorf("%d hits, %d misses; want 2 and 4", hits, misses)
	}
	if tiny := NewTrunkCache(size - 1); true {
		m.WindowProbsCached(dst, x[:n], starts, 8, 0, 0, tiny)
		if tiny.lru.Len() != 0 {
			t.Error("an entry larger than the limit was kept")
		}
	}
	if exact := NewTrunkCache(size); true {
		m.WindowProbsCached(dst, x[:n], starts, 8, 0, 0, exact)
		if exact.lru.Len() != 1 || exact.used != size {
			t.Errorf("an entry of exactly the limit: %d entries, %d bytes", exact.lru.Len(), exact.used)
		}
	}
}

// TestSpanPooledBoundarySets: boundary positions that look contiguous
// but are not ({10, 11, 14}: last - first = n+1), more boundaries than
// one chunk of 64, and windows that reach both ends give the pooled
// vectors of forward passes.
func TestSpanPooledBoundarySets(t *testing.T) {
	a := smallArch()
	a.InLen = 160 // R = 8: more than 64 boundaries of each direction
	_, p, x, _ := randomSetup(t, a, 1, 23)
	m, err := NewModel(Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	R, T, P := m.edge0().R(), a.InLen, m.PooledLen()
	ws := m.net.NewWorkspace(1)
	check := func(what string, spans [][]Span, baseline float32) {
		t.Helper()
		got := make([]float32, len(spans)*P)
		m.SpanPooled(got, x, spans, baseline)
		for j, sp := range spans {
			m.net.forward(ws, m.folded, perturbed(x, a, sp, baseline), false, nil, m.plan.g)
			for c, v := range ws.Act(m.plan.g) {
				if d := math.Abs(float64(got[j*P+c] - v)); d > 1e-6*math.Max(1, math.Abs(float64(v))) {
					t.Fatalf("%s: spans %v channel %d: %v, forward pass %v", what, sp, c, got[j*P+c], v)
				}
			}
		}
	}
	check("gapped", [][]Span{{{3, 3 + R}}, {{4, 4 + R}}, {{7, 7 + R}}}, -0.5)
	var many [][]Span
	for s := 0; s+R-1 <= T; s++ {
		many = append(many, []Span{{s, s + R - 1}})
	}
	for s := 0; s+R-1 <= T; s++ {
		many = append(many, []Span{{0, s}}, []Span{{s, T}})
	}
	check("many", many, -0.5)
	// Spans of exactly R samples hold one position of the all-baseline
	// activation, which a large baseline makes the maximum.
	var deep [][]Span
	for s := 0; s+R <= T; s += 3 {
		deep = append(deep, []Span{{s, s + R}}, []Span{{s, s + R}, {min(s+2*R, T-R), T}})
	}
	check("deep", deep, 40)
	// 128 inputs of short spans, the first among them: all forward passes.
	var short [][]Span
	for s := range 128 {
		short = append(short, []Span{{s, s + 2}})
	}
	check("short", short, -0.5)
}

// TestRangeMax: the sparse table's range maxima equal a scan, for every
// range of rows of lengths 1 to 70.
func TestRangeMax(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, T := range []int{1, 2, 7, 64, 70} {
		const C = 2
		a := make([]float32, C*T)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		sc := &edgeScratch{}
		sc.st = buildSparse(sc.st, a, C, T, T)
		for c := range C {
			for lo := 0; lo < T; lo++ {
				for hi := lo + 1; hi <= T; hi++ {
					want := a[c*T+lo]
					for _, v := range a[c*T+lo : c*T+hi] {
						want = max(want, v)
					}
					if got := rangeMax(sc.st, c, T, lo, hi); got != want {
						t.Fatalf("T %d row %d [%d, %d): %v, want %v", T, c, lo, hi, got, want)
					}
				}
			}
		}
	}
}

// TestEdgeMaxima: the per-boundary maxima against their definition: the
// maximum over positions b-R+1..b-1 of the last local level, of a forward
// pass of x with every sample from b on (falling) or before b (rising) set
// to the baseline; for boundary sets that look contiguous and are not, and
// more than a chunk.
func TestEdgeMaxima(t *testing.T) {
	// wideLast: the last local level has the widest planes.
	wideLast := Arch{Name: "wide-last", InChannels: 1, InLen: 100, Layers: []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 3, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindConv1D, Name: "c2", Out: 16, Kernel: 2},
		{Kind: KindGlobalMaxPool},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d", Out: 3},
	}}
	for _, a := range []Arch{smallArch(), localBN(), PaperArch(), wideLast} {
		if a.InLen < 100 {
			a.InLen = 100
		}
		_, p, x, _ := randomSetup(t, a, 1, 29)
		m, err := NewModel(Params{Arch: a, Data: p})
		if err != nil {
			t.Fatal(err)
		}
		e := m.edge0()
		R, T, L := e.R(), a.InLen, e.L
		sh := m.level(L)
		ws := m.pool.Get().(*Workspace)
		m.net.forward(ws, m.folded, x, false, nil, L-1)
		base := [][]float32{x}
		for l := 0; l < L; l++ {
			base = append(base, append([]float32(nil), ws.Act(l)...))
		}
		m.pool.Put(ws)
		cst := m.consts(0.25)
		var seventy []int
		for b := 1; b <= 70; b++ {
			seventy = append(seventy, b*(T-1)/71+1)
		}
		for _, pos := range [][]int{{3, 4, 7}, {1, 2, 3}, {T - 3, T - 1}, seventy[:64], seventy} {
			for _, rise := range []bool{false, true} {
				sc := &edgeScratch{}
				pl := m.planeLen(len(pos))
				sc.planes = [2][]float32{make([]float32, pl), make([]float32, pl)}
				got := make([]float32, len(pos)*sh.C)
				m.edgeMaxima(got, base, cst, nil, pos, rise, sc)
				fw := m.net.NewWorkspace(1)
				for j, b := range pos {
					sp := []Span{{b, T}}
					if rise {
						sp = []Span{{0, b}}
					}
					m.net.forward(fw, m.folded, perturbed(x, a, sp, 0.25), false, nil, L-1)
					act := fw.Act(L - 1)
					for c := 0; c < sh.C; c++ {
						want := float32(math.Inf(-1))
						for t0 := max(b-R+1, 0); t0 < min(b, sh.T); t0++ {
							want = max(want, act[c*sh.T+t0])
						}
						if d := math.Abs(float64(got[j*sh.C+c] - want)); d > 1e-6*math.Max(1, math.Abs(float64(want))) {
							t.Fatalf("%s rise %v boundary %d channel %d: %v, definition %v", a.Name, rise, b, c, got[j*sh.C+c], want)
						}
					}
				}
			}
		}
	}
}

// TestValidSpans: the boundary path takes spans and gaps of R-1 samples
// and more, inside [0, T), in order; anything else takes forward passes.
func TestValidSpans(t *testing.T) {
	const R, T = 5, 30
	for _, c := range []struct {
		sp   []Span
		want bool
	}{
		{nil, true},
		{[]Span{{0, 4}}, true},
		{[]Span{{0, 3}}, false},
		{[]Span{{26, 30}}, true},
		{[]Span{{27, 31}}, false},
		{[]Span{{-1, 4}}, false},
		{[]Span{{0, 4}, {8, 12}}, true},
		{[]Span{{0, 4}, {7, 12}}, false},
		{[]Span{{8, 12}, {0, 4}}, false},
		{[]Span{{0, 30}}, true},
	} {
		if got := validSpans(c.sp, R, T); got != c.want {
			t.Errorf("validSpans(%v) = %v, want %v", c.sp, got, c.want)
		}
	}
}

// TestSpanPooledDeep: a span of exactly R samples has one position whose
// field is all baseline; with a summing kernel, x = 0 and baseline 1 it
// is the only position that reaches 3, so the pooled vector must take the
// constant: 3 for spans of R and more, 2 for R-1.
func TestSpanPooledDeep(t *testing.T) {
	a := Arch{Name: "sum3", InChannels: 1, InLen: 20, Layers: []Layer{
		{Kind: KindConv1D, Name: "c", Out: 1, Kernel: 3},
		{Kind: KindGlobalMaxPool},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d", Out: 2},
	}}
	// c.weight (1,1,3), c.bias, d.weight (2,1), d.bias
	m, err := NewModel(Params{Arch: a, Data: []float32{1, 1, 1, 0, 1, -1, 0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 20)
	spans := [][]Span{{{5, 8}}, {{5, 9}}, {{5, 7}}, {{0, 3}}, {{17, 20}}, {{2, 5}, {9, 12}}}
	got := make([]float32, len(spans))
	m.SpanPooled(got, x, spans, 1)
	for j, want := range []float32{3, 3, 2, 3, 3, 3} {
		if got[j] != want {
			t.Errorf("spans %v: pooled %v, want %v", spans[j], got[j], want)
		}
	}
}

// TestTrunkDigest: models whose trunks differ only in the last value of
// the last trunk tensor, or only in a parameterless layer (its kind or a
// field) before the global max pool, do not share cache entries; models
// that differ only after the pool, or only in names, do.
func TestTrunkDigest(t *testing.T) {
	a := smallArch()
	_, p, x, _ := randomSetup(t, a, 1, 43)
	build := func(a Arch, p []float32) *Inference {
		m, err := NewModel(Params{Arch: a, Data: p})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	lay, _ := NewLayout(a)
	bias := lay.View(p, "c2.bias") // the last tensor before the pool
	q := append([]float32(nil), p...)
	lay.View(q, "c2.bias")[len(bias)-1] += 0.5
	head := append([]float32(nil), p...)
	lay.View(head, "d2.bias")[0] += 0.5
	noRelu := a
	noRelu.Layers = append([]Layer(nil), a.Layers...)
	noRelu.Layers[5] = Layer{Kind: KindDropout, P: 0.1} // the ReLU before the pool
	otherP := noRelu
	otherP.Layers = append([]Layer(nil), noRelu.Layers...)
	otherP.Layers[5].P = 0.2 // a field of a parameterless trunk layer
	renamed := a
	renamed.Name = "renamed"
	renamed.Layers = append([]Layer(nil), a.Layers...)
	for i := range renamed.Layers {
		if renamed.Layers[i].Name != "" {
			renamed.Layers[i].Name += "x"
		}
	}
	m := build(a, p)
	for _, c := range []struct {
		what        string
		base, other *Inference
		hit         bool
	}{
		{"last trunk value", m, build(a, q), false},
		{"layer before the pool", m, build(noRelu, p), false},
		{"dropout p before the pool", build(noRelu, p), build(otherP, p), false},
		{"head only", m, build(a, head), true},
		{"names only", m, build(renamed, p), true},
	} {
		m := c.base
		if (c.other.trunkDigest() == m.trunkDigest()) != c.hit {
			t.Errorf("%s: digests equal = %v, want %v", c.what, !c.hit, c.hit)
		}
		cache := NewTrunkCache(1 << 20)
		dst := make([]float32, 2)
		m.WindowProbsCached(dst, x, []int{2, 9}, 8, 0, 1, cache)
		c.other.WindowProbsCached(dst, x, []int{2, 9}, 8, 0, 1, cache)
		if hits, _ := cache.Stats(); (hits == 1) != c.hit {
			t.Errorf("%s: %d hits", c.what, hits)
		}
	}
}

// TestSpanProbsWithoutPool: a network without a global max pool after a
// local stack has PooledLen 0 and takes forward passes in SpanProbs (more
// inputs than one batch), which equal the definition; the pooled-vector
// methods panic on it.
func TestSpanProbsWithoutPool(t *testing.T) {
	a := Arch{Name: "no-gmp", InChannels: 2, InLen: 30, Layers: []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 2, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d", Out: 3},
	}}
	_, p, x, _ := randomSetup(t, a, 1, 47)
	m, err := NewModel(Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	if m.PooledLen() != 0 {
		t.Fatalf("PooledLen %d, want 0", m.PooledLen())
	}
	var spans [][]Span
	for s := range 70 {
		spans = append(spans, []Span{{s % 28, s%28 + 2}, {29, 31}})
	}
	got := make([]float32, len(spans))
	m.SpanProbs(got, x, spans, 0.7, 2)
	pr := make([]float32, 3)
	for j, sp := range spans {
		if err := m.Probs(context.Background(), pr, perturbed(x, a, sp, 0.7)); err != nil {
			t.Fatal(err)
		}
		if got[j] != pr[2] {
			t.Fatalf("spans %v: %v, forward pass %v", sp, got[j], pr[2])
		}
	}
	for name, f := range map[string]func(){
		"WindowPooled":      func() { m.WindowPooled(make([]float32, 8), x, []int{0}, 3, 0) },
		"SpanPooled":        func() { m.SpanPooled(make([]float32, 8), x, spans[:1], 0) },
		"HeadProbs":         func() { m.HeadProbs(make([]float32, 1), make([]float32, 8), 0) },
		"WindowProbsCached": func() { m.WindowProbsCached(make([]float32, 1), x, []int{0}, 3, 0, 0, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
