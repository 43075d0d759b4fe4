package report

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
)

// page is the data script of a written report.html.
type pageJSON struct {
	Records []struct {
		P, Key                                   string
		C, T, B, Ns                              int
		Lo, Hi                                   float64
		Wave, Mask, Mem, Mean, Q05, Q95, Var, CV string
	}
	Windows []jsWindow
}

func readPage(t *testing.T, html []byte) pageJSON {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="data">(.*?)</script>`).FindSubmatch(html)
	if m == nil {
		t.Fatal("report.html has no data script")
	}
	var p pageJSON
	if err := json.Unmarshal(m[1], &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func decF32(t *testing.T, s string) []float32 {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		t.Fatalf("%d bytes of float32 (%v)", len(b), err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func decBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// synthExplored is a record of C channels of T samples and S members,
// signed random values (some columns made of negatives only), a mask of
// a few runs.
func synthExplored(C, T, S int, seed uint64) Explored {
	r := rand.New(rand.NewPCG(seed, 3))
	vec := func() []float32 {
		x := make([]float32, C*T)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	e := Explored{Posterior: "P", Explainer: "E", SplitName: "test-0", Record: 3, Label: 1, Pred: 1, Prob: 0.7, Channels: C, Draws: S,
		Wave: vec(), Mean: vec(), Q05: vec(), Q95: vec(), Variance: vec(), CV: vec(), Mask: make([]bool, C*T)}
	for range S {
		e.Members = append(e.Members, vec())
	}
	for i := range e.Mask {
		e.Mask[i] = (i/97)%5 == 0
	}
	return e
}

// column is the column of sample n of T in B: the b with
// floor(b T / B) <= n < floor((b+1) T / B), i.e. ceil((n+1) B / T) - 1.
func column(n, T, B int) int { return ((n+1)*B+T-1)/T - 1 }

// TestThinning: thinMaxAbs, thinMinMax and thinAny against one scan over
// the samples, each sample filed into its column by column() (not by
// bucket): the signed value of largest |x| (the first on ties), the
// minimum and maximum, and whether any is masked; every column holds
// floor(T/B) or ceil(T/B) samples.
func TestThinning(t *testing.T) {
	for _, c := range []struct{ C, T, B int }{{1, 10, 10}, {2, 10, 3}, {3, 5003, 1024}, {1, 1025, 1024}, {2, 640, 7}} {
		e := synthExplored(c.C, c.T, 1, uint64(c.T))
		x := e.Members[0]
		for i := 0; i < len(x); i += 13 {
			x[i] = -x[i] // ties in |x|: x[i+1] = -x[i] sometimes
			if i+1 < len(x) && i%26 == 0 {
				x[i+1] = -x[i]
			}
		}
		ma, lo, hi, an := make([]float32, c.C*c.B), make([]float32, c.C*c.B), make([]float32, c.C*c.B), make([]byte, c.C*c.B)
		thinMaxAbs(ma, x, c.C, c.T, c.B)
		thinMinMax(lo, hi, x, c.C, c.T, c.B)
		thinAny(an, e.Mask, c.C, c.T, c.B)
		wma, wlo, whi, wan := make([]float32, c.C*c.B), make([]float32, c.C*c.B), make([]float32, c.C*c.B), make([]byte, c.C*c.B)
		count := make([]int, c.C*c.B)
		for ch := range c.C {
			for n := range c.T {
				k, v := ch*c.B+column(n, c.T, c.B), x[ch*c.T+n]
				if count[k] == 0 {
					wma[k], wlo[k], whi[k] = v, v, v
				} else {
					if math.Abs(float64(v)) > math.Abs(float64(wma[k])) {
						wma[k] = v
					}
					wlo[k], whi[k] = min(wlo[k], v), max(whi[k], v)
				}
				if e.Mask[ch*c.T+n] {
					wan[k] = 1
				}
				count[k]++
			}
		}
		for k := range count {
			if count[k] != c.T/c.B && count[k] != (c.T+c.B-1)/c.B {
				t.Fatalf("%+v: column %d holds %d samples", c, k, count[k])
			}
			if ma[k] != wma[k] || lo[k] != wlo[k] || hi[k] != whi[k] || an[k] != wan[k] {
				t.Fatalf("%+v: column %d: max-abs %v min %v max %v any %d, want %v %v %v %d", c, k, ma[k], lo[k], hi[k], an[k], wma[k], wlo[k], whi[k], wan[k])
			}
		}
	}
}

// TestHTMLExactMembers: a record of T <= MaxColumns carries every value
// as it is: the members (what the heat map's hover reads) and the lines
// decode to the Explored's float32 values bit for bit, the mask to its
// samples, and lo/hi are the members' extremes.
func TestHTMLExactMembers(t *testing.T) {
	e := synthExplored(2, 640, 5, 1)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, HTML{Title: "t", Records: []Explored{e}}); err != nil {
		t.Fatal(err)
	}
	r := readPage(t, buf.Bytes()).Records[0]
	if r.B != 640 || r.T != 640 || r.C != 2 || r.Ns != 5 {
		t.Fatalf("C %d T %d B %d members %d", r.C, r.T, r.B, r.Ns)
	}
	mem := decF32(t, r.Mem)
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for s, m := range e.Members {
		for i, v := range m {
			if got := mem[s*len(m)+i]; math.Float32bits(got) != math.Float32bits(v) {
				t.Fatalf("member %d value %d: %v on the page, %v in the map", s, i, got, v)
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if r.Lo != float64(lo) || r.Hi != float64(hi) {
		t.Errorf("range [%v, %v], want [%v, %v]", r.Lo, r.Hi, lo, hi)
	}
	for name, c := range map[string][2][]float32{"wave": {decF32(t, r.Wave), e.Wave}, "mean": {decF32(t, r.Mean), e.Mean}, "q05": {decF32(t, r.Q05), e.Q05},
		"q95": {decF32(t, r.Q95), e.Q95}, "var": {decF32(t, r.Var), e.Variance}, "cv": {decF32(t, r.CV), e.CV}} {
		if fmt.Sprint(c[0]) != fmt.Sprint(c[1]) {
			t.Errorf("%s differs from the record's", name)
		}
	}
	for i, m := range decBytes(t, r.Mask) {
		if (m == 1) != e.Mask[i] {
			t.Fatalf("mask sample %d: %d, want %v", i, m, e.Mask[i])
		}
	}
	bad := synthExplored(1, 64, 2, 2)
	bad.Members[1][5] = float32(math.NaN())
	if err := WriteHTML(&buf, HTML{Records: []Explored{bad}}); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("a NaN member: %v", err)
	}
	bad = synthExplored(1, 64, 2, 2)
	bad.CV = bad.CV[:10]
	if err := WriteHTML(&buf, HTML{Records: []Explored{bad}}); err == nil || !strings.Contains(err.Error(), "want C x T values") {
		t.Errorf("a short CV: %v", err)
	}
}

// TestHTMLLongRecordThinned: a record of T = 40000 samples (2 channels,
// 32 members) is carried in MaxColumns columns: its members decode to
// their columns' value of largest |R|, its lines to their columns'
// minima then maxima, its mask to whether any sample of a column is in
// it (all computed here by filing each sample into its column); lo/hi
// stay the full members' extremes. The page's size does not grow with T:
// the same record at T = 4000 and at 40000 writes pages within 1% of
// each other, and under the bound (S + 12 lines) x C x MaxColumns
// float32 in base64 plus 64 kB.
func TestHTMLLongRecordThinned(t *testing.T) {
	const C, S = 2, 32
	write := func(T int) ([]byte, Explored, time.Duration) {
		e := synthExplored(C, T, S, uint64(T))
		var buf bytes.Buffer
		t0 := time.Now()
		if err := WriteHTML(&buf, HTML{Title: "t", Records: []Explored{e}}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), e, time.Since(t0)
	}
	small, _, _ := write(4000)
	big, e, took := write(40000)
	const T, B = 40000, MaxColumns
	bound := (S+12)*C*B*4*4/3 + 64<<10
	t.Logf("one record of T = 40000, C = 2, 32 members: %d bytes (T = 4000: %d; unthinned it would hold %d float32), written in %v", len(big), len(small), (S+6)*C*T, took)
	if len(big) > bound || math.Abs(float64(len(big)-len(small))) > 0.01*float64(len(small)) {
		t.Errorf("page of T = 40000: %d bytes, of T = 4000: %d; want both under %d and within 1%%", len(big), len(small), bound)
	}
	r := readPage(t, big).Records[0]
	if r.T != T || r.B != B {
		t.Fatalf("T %d, %d columns; want %d, %d", r.T, r.B, T, B)
	}
	mem := decF32(t, r.Mem)
	if len(mem) != S*C*B {
		t.Fatalf("%d member values, want %d", len(mem), S*C*B)
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for s, m := range e.Members {
		want := make([]float32, C*B)
		seen := make([]bool, C*B)
		for ch := range C {
			for n := range T {
				k, v := ch*B+column(n, T, B), m[ch*T+n]
				if !seen[k] || math.Abs(float64(v)) > math.Abs(float64(want[k])) {
					want[k], seen[k] = v, true
				}
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		for k := range want {
			if mem[s*C*B+k] != want[k] {
				t.Fatalf("member %d column %d: %v, want the largest |R| %v", s, k, mem[s*C*B+k], want[k])
			}
		}
	}
	if r.Lo != float64(lo) || r.Hi != float64(hi) {
		t.Errorf("range [%v, %v], want the full members' [%v, %v]", r.Lo, r.Hi, lo, hi)
	}
	for name, c := range map[string]struct {
		page string
		x    []float32
	}{"wave": {r.Wave, e.Wave}, "mean": {r.Mean, e.Mean}, "q05": {r.Q05, e.Q05}, "q95": {r.Q95, e.Q95}, "var": {r.Var, e.Variance}, "cv": {r.CV, e.CV}} {
		got := decF32(t, c.page)
		if len(got) != 2*C*B {
			t.Fatalf("%s: %d values, want %d (minima, maxima)", name, len(got), 2*C*B)
		}
		for ch := range C {
			for n := range T {
				k, v := ch*B+column(n, T, B), c.x[ch*T+n]
				if v < got[k] || v > got[C*B+k] {
					t.Fatalf("%s channel %d sample %d = %v outside its column's [%v, %v]", name, ch, n, v, got[k], got[C*B+k])
				}
			}
		}
		for k := range C * B { // each bound is attained in its column
			ch, b := k/B, k%B
			var hitLo, hitHi bool
			for n := range T {
				if column(n, T, B) == b {
					hitLo = hitLo || c.x[ch*T+n] == got[k]
					hitHi = hitHi || c.x[ch*T+n] == got[C*B+k]
				}
			}
			if !hitLo || !hitHi {
				t.Fatalf("%s column %d: [%v, %v] not attained", name, k, got[k], got[C*B+k])
			}
		}
	}
	mask := decBytes(t, r.Mask)
	want := make([]byte, C*B)
	for ch := range C {
		for n := range T {
			if e.Mask[ch*T+n] {
				want[ch*B+column(n, T, B)] = 1
			}
		}
	}
	if !bytes.Equal(mask, want) {
		t.Error("the thinned mask is not whether any sample of a column is masked")
	}
}

// TestHTMLTimelineThinned: a recording of 5000 windows under 2
// posteriors is shown as MaxTimeline bars each, a bar the aggregate of
// its windows (each window filed into its bar by column()): first and
// last window, count, span, most frequent class (the first to reach the
// count) and its share, lowest probability and agreement, highest mutual
// information; a recording of at most MaxTimeline windows shows each as
// it is. The page stays under 320 bytes a bar plus 64 kB, for 5000
// windows as for 50000 (only the numbers' digits grow: under 1.25 times).
func TestHTMLTimelineThinned(t *testing.T) {
	classes := []string{"normal", "sag", "swell"}
	mk := func(W int) []Window {
		r := rand.New(rand.NewPCG(uint64(W), 5))
		var ws []Window
		for _, p := range []string{"A", "B"} {
			for i := range W {
				ws = append(ws, Window{Posterior: p, Window: i, Start: 0.2 * float64(i), Length: 0.2, Class: classes[r.IntN(3)],
					Probability: r.Float64(), MutualInfo: r.Float64(), Agreement: r.Float64()})
			}
		}
		return ws
	}
	write := func(ws []Window) ([]byte, time.Duration) {
		var buf bytes.Buffer
		t0 := time.Now()
		if err := WriteHTML(&buf, HTML{Title: "t", Windows: ws}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), time.Since(t0)
	}
	const W, B = 5000, MaxTimeline
	ws := mk(W)
	html, took := write(ws)
	huge, tookHuge := write(mk(10 * W))
	t.Logf("timeline of 2 x %d windows: %d bytes in %v; of 2 x %d: %d bytes in %v", W, len(html), took, 10*W, len(huge), tookHuge)
	if bound := 2*B*320 + 64<<10; len(html) > bound || len(huge) > bound || float64(len(huge)) > 1.25*float64(len(html)) {
		t.Errorf("the page grows with the windows: %d bytes for %d, %d for %d (want under %d, the longer numbers of 10 times the windows under 1.25 times)", len(html), W, len(huge), 10*W, bound)
	}
	if !bytes.Contains(html, []byte("a bar is a run of consecutive windows")) {
		t.Error("the page does not say its bars are runs of windows")
	}
	got := readPage(t, html).Windows
	if len(got) != 2*B {
		t.Fatalf("%d bars, want %d", len(got), 2*B)
	}
	for pi, p := range []string{"A", "B"} {
		type agg struct {
			first, last, n  int
			start, end      float64
			count           map[string]int
			class           string
			best            int
			prob, mi, agree float64
		}
		want := make([]*agg, B)
		for _, w := range ws[pi*W : (pi+1)*W] {
			b := column(w.Window, W, B)
			a := want[b]
			if a == nil {
				a = &agg{first: w.Window, start: w.Start, count: map[string]int{}, prob: 2, mi: -1, agree: 2}
				want[b] = a
			}
			a.last, a.end = w.Window, w.Start+w.Length
			a.n++
			a.count[w.Class]++
			if a.count[w.Class] > a.best {
				a.best, a.class = a.count[w.Class], w.Class
			}
			a.prob, a.mi, a.agree = math.Min(a.prob, w.Probability), math.Max(a.mi, w.MutualInfo), math.Min(a.agree, w.Agreement)
		}
		for b, a := range want {
			g := got[pi*B+b]
			if g.Posterior != p || g.Window != a.first || g.Last != a.last || g.N != a.n || g.Start != a.start || math.Abs(g.Start+g.Length-a.end) > 1e-9 ||
				g.Class != a.class || g.Share != float64(a.best)/float64(a.n) || g.Probability != a.prob || g.MutualInfo != a.mi || g.Agreement != a.agree {
				t.Fatalf("posterior %s bar %d: %+v, want %+v", p, b, g, *a)
			}
		}
	}
	few := mk(B)
	html, _ = write(few)
	got = readPage(t, html).Windows
	if len(got) != len(few) || bytes.Contains(html, []byte("a bar is a run of consecutive windows")) {
		t.Fatalf("%d windows shown as %d bars", len(few), len(got))
	}
	for i, w := range few {
		g := got[i]
		if g.Posterior != w.Posterior || g.Window != w.Window || g.Last != w.Window || g.N != 1 || g.Start != w.Start || g.Length != w.Length ||
			g.Class != w.Class || g.Share != 1 || g.Probability != w.Probability || g.MutualInfo != w.MutualInfo || g.Agreement != w.Agreement {
			t.Fatalf("window %d: %+v, want %+v", i, g, w)
		}
	}
}
