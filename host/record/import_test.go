package record

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
)

// TestApplyMatchesFormula: the polyphase Apply equals the explicit sum
// y[n] = sum_m x[m] h[n*down - m*up + half_len] for many ratios and lengths.
func TestApplyMatchesFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range [][2]int{{1, 2}, {2, 1}, {3, 7}, {7, 3}, {4, 25}, {5, 5}, {6, 4}} {
		r := NewResampler(c[0], c[1])
		for _, n := range []int{1, 2, 13, 100} {
			x := make([]float64, n)
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			y := make([]float64, r.Len(n))
			r.Apply(y, x)
			if want := int(math.Ceil(float64(n*r.Up) / float64(r.Down))); len(y) != want {
				t.Fatalf("%v n=%d: len %d, want ceil(n up/down) = %d", c, n, len(y), want)
			}
			for i := range y {
				s := 0.0
				for m := range x {
					if k := i*r.Down - m*r.Up + r.HalfLen; k >= 0 && k < len(r.Taps) {
						s += x[m] * r.Taps[k]
					}
				}
				if math.Abs(y[i]-s) > 1e-13 {
					t.Fatalf("%v n=%d: y[%d] = %g, want %g", c, n, i, y[i], s)
				}
			}
			// Support: output i uses input m iff |i*down - m*up| <= half_len.
			for a := 0; a < n; a++ {
				lo, hi := r.Support(a, a+1, len(y))
				for i := range y {
					uses := abs(i*r.Down-a*r.Up) <= r.HalfLen
					if uses != (i >= lo && i < hi) {
						t.Fatalf("%v n=%d: Support(%d) = %d..%d, but output %d uses it: %v", c, n, a, lo, hi, i, uses)
					}
				}
			}
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestFirwinProperties: symmetric taps of unit sum; the Kaiser window's
// ends are 1/I0(beta); I0 against its series' known values.
func TestFirwinProperties(t *testing.T) {
	if got := BesselI0(0); got != 1 {
		t.Errorf("I0(0) = %g", got)
	}
	// I0(1) and I0(5): the series summed in exact rational arithmetic
	// (80 terms, Python fractions), rounded to float64.
	for _, c := range [][2]float64{{1, 1.2660658777520084}, {5, 27.239871823604446}} {
		if got := BesselI0(c[0]); math.Abs(got-c[1]) > 4.5e-16*c[1] {
			t.Errorf("I0(%g) = %.17g, want %.17g", c[0], got, c[1])
		}
	}
	w := make([]float64, 11)
	Kaiser(w, 5)
	if math.Abs(w[0]-1/BesselI0(5)) > 1e-16 || w[5] != 1 {
		t.Errorf("kaiser ends %g, centre %g", w[0], w[5])
	}
	h := make([]float64, 101)
	Firwin(h, 0.2, 5)
	sum := 0.0
	for i := range h {
		sum += h[i]
		if math.Abs(h[i]-h[len(h)-1-i]) > 1e-18 {
			t.Fatalf("taps not symmetric at %d", i)
		}
	}
	if math.Abs(sum-1) > 1e-15 {
		t.Errorf("sum of taps %g, want 1", sum)
	}
}

func TestRatio(t *testing.T) {
	for _, c := range []struct {
		from, to float64
		up, down int
	}{{20000, 3200, 4, 25}, {10000, 3200, 8, 25}, {6400, 3200, 1, 2}, {3200, 3200, 1, 1}, {3840, 3200, 5, 6}, {1000, 3200, 16, 5}, {15360, 3200, 5, 24}} {
		up, down, err := Ratio(c.from, c.to, 1000)
		if err != nil || up != c.up || down != c.down {
			t.Errorf("Ratio(%g, %g) = %d/%d %v, want %d/%d", c.from, c.to, up, down, err, c.up, c.down)
		}
	}
	for _, from := range []float64{math.Pi * 1000, 3333.3333, 0, -1} {
		if _, _, err := Ratio(from, 3200, 1000); err == nil {
			t.Errorf("Ratio(%g, 3200) gave no error", from)
		}
	}
}

// constRec is a recording of n samples of value v at rate Hz.
func constRec(n int, rate, v float64) *Recording {
	x := make([]float64, n)
	for i := range x {
		x[i] = v
	}
	return &Recording{Path: "c", Samples: x, Segments: []Segment{{Start: 0, End: n, Rate: rate}}}
}

// TestImportWindows: at 3200 Hz (ratio 1/1) a window is the source
// divided by sqrt(2)*nominal, and windows start at k*hop.
func TestImportWindows(t *testing.T) {
	rec := constRec(2000, 3200, 0)
	for i := range rec.Samples {
		rec.Samples[i] = float64(i)
	}
	for _, c := range []struct{ win, hop, n int }{{640, 640, 3}, {640, 320, 5}, {100, 150, 13}, {2000, 1, 1}} {
		imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 100, Rate: DefaultRate, Window: c.win, Hop: c.hop})
		if err != nil {
			t.Fatal(err)
		}
		kept := imp.Kept()
		if want := (2000-c.win)/c.hop + 1; len(kept) != want || want != c.n {
			t.Fatalf("window %d hop %d: %d windows, want floor((N-L)/hop)+1 = %d", c.win, c.hop, len(kept), want)
		}
		for k, w := range kept {
			for j, v := range w {
				if want := float64(k*c.hop+j) / (math.Sqrt2 * 100); math.Abs(v-want) > 1e-12 {
					t.Fatalf("window %d sample %d = %g, want %g", k, j, v, want)
				}
			}
			if imp.Windows[k].SourceSample != k*c.hop || math.Abs(imp.Windows[k].SourceTime-float64(k*c.hop)/3200) > 1e-15 {
				t.Errorf("window %d source %d at %g s", k, imp.Windows[k].SourceSample, imp.Windows[k].SourceTime)
			}
		}
	}
	rec.Nominal, rec.NominalSource = 0, ""
	if _, err := Import(context.Background(), rec, ImportOptions{}); err == nil || !strings.Contains(err.Error(), "--nominal") {
		t.Errorf("no nominal: %v, want an error asking for --nominal", err)
	}
	if _, err := Import(context.Background(), constRec(100, 3200, 1), ImportOptions{Nominal: 1}); err == nil || !strings.Contains(err.Error(), "shorter than one window") {
		t.Errorf("short: %v", err)
	}
}

// TestImportSine: a 50 Hz sine at 20 kHz of RMS V comes out as a sine of
// peak 1 at 3.2 kHz (away from the zero-padded ends), and the estimated
// frequency is 50 Hz.
func TestImportSine(t *testing.T) {
	n := 20000
	x := make([]float64, n)
	for i := range x {
		x[i] = 230 * math.Sqrt2 * math.Sin(2*math.Pi*50*float64(i)/20000+0.7)
	}
	rec := &Recording{Path: "s", Samples: x, Segments: []Segment{{Start: 0, End: n, Rate: 20000}}}
	rec.finish()
	if math.Abs(rec.EstFreq-50) > 1e-6 {
		t.Errorf("estimated %g Hz", rec.EstFreq)
	}
	imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 230})
	if err != nil {
		t.Fatal(err)
	}
	e := 0.0
	for j := 100; j < len(imp.Signal)-100; j++ {
		e = math.Max(e, math.Abs(imp.Signal[j]-math.Sin(2*math.Pi*50*float64(j)/3200+0.7)))
	}
	if e > 2e-3 {
		t.Errorf("max deviation from the unit sine %g, want <= 2e-3 (Kaiser 5.0 passband ripple)", e)
	}
}

// TestImportGaps: a missing sample drops exactly the windows its filter
// reach touches (Support), and the gap is reported.
func TestImportGaps(t *testing.T) {
	rec := constRec(20000, 20000, 1)
	rec.Samples[5000] = math.NaN() // output ~800, window 1
	rec.finish()
	if len(rec.Gaps) != 1 || rec.Gaps[0] != (Gap{5000, 5001, "missing value"}) {
		t.Fatalf("gaps %v", rec.Gaps)
	}
	imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := NewResampler(4, 25)
	lo, hi := r.Support(5000, 5001, 3200)
	if len(imp.Gaps) != 1 || imp.Gaps[0].Start != lo || imp.Gaps[0].End != hi {
		t.Fatalf("output gaps %v, want %d..%d", imp.Gaps, lo, hi)
	}
	for k, w := range imp.Windows {
		hit := lo < (k+1)*640 && hi > k*640
		if (w.Dropped != "") != hit {
			t.Errorf("window %d dropped %q, want dropped = %v", k, w.Dropped, hit)
		}
	}
	for _, w := range imp.Kept() {
		for _, v := range w {
			if math.IsNaN(v) {
				t.Fatal("NaN in a kept window")
			}
		}
	}
}

// TestImportSegments: two rate segments are resampled by their own
// ratios; the border is a gap; the source times follow the segments.
func TestImportSegments(t *testing.T) {
	rec := constRec(6400+3200, 6400, 1)
	rec.Segments = []Segment{{Start: 0, End: 6400, Rate: 6400}, {Start: 6400, End: 9600, Rate: 3200}}
	rec.finish()
	imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: DefaultRate, Window: 320})
	if err != nil {
		t.Fatal(err)
	}
	if len(imp.Ratios) != 2 || imp.Ratios[0].Up != 1 || imp.Ratios[0].Down != 2 || imp.Ratios[1].Up != 1 || imp.Ratios[1].Down != 1 {
		t.Fatalf("ratios %+v", imp.Ratios)
	}
	if len(imp.Signal) != 6400 || imp.Ratios[1].OutStart != 3200 {
		t.Fatalf("%d samples, second segment from %d", len(imp.Signal), imp.Ratios[1].OutStart)
	}
	r := NewResampler(1, 2)
	lo, _ := r.Support(6400, 6400+r.HalfLen+1, 3200)
	if len(imp.Gaps) != 1 || imp.Gaps[0].Start != lo || imp.Gaps[0].End != 3200 || !strings.Contains(imp.Gaps[0].Reason, "border") {
		t.Fatalf("gaps %v, want the border %d..3199", imp.Gaps, lo)
	}
	w := imp.Windows[15] // output 4800: 1600 samples into segment 2
	if w.SourceSample != 6400+1600 || math.Abs(w.SourceTime-(1+0.5)) > 1e-12 {
		t.Errorf("window 15 source %d at %g s, want 8000 at 1.5 s", w.SourceSample, w.SourceTime)
	}
	// 3333.3333 Hz: no ratio up/down <= 1000 of 3200 Hz within 1e-9, and
	// 66.67 samples a cycle of 50 Hz, more than a quarter sample from a
	// whole number (not a frequency-tracking rate).
	rec.Segments[1].Rate = 3333.3333
	if _, err := Import(context.Background(), rec, ImportOptions{Nominal: 1}); err == nil || !strings.Contains(err.Error(), "samples 6400..9599") {
		t.Errorf("irrational ratio: %v", err)
	}
}

// TestWriteDir: the directory reads back with host/data (waveforms,
// labels) and holds windows.csv and import.json.
func TestWriteDir(t *testing.T) {
	rec, err := Read(filepath.Join(recordingsDir(t), "demo.cff"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	imp, err := Import(context.Background(), rec, ImportOptions{Label: 1, Labeled: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteDir(dir, imp); err != nil {
		t.Fatal(err)
	}
	split, err := data.ReadCSV(dir)
	if err != nil {
		t.Fatal(err)
	}
	kept := imp.Kept()
	if len(split.Records) != len(kept) {
		t.Fatalf("%d records, want %d", len(split.Records), len(kept))
	}
	for i, r := range split.Records {
		if r.Label != 1 {
			t.Errorf("record %d label %d", i, r.Label)
		}
		for j, v := range r.X {
			if v != kept[i][j] {
				t.Fatalf("record %d value %d = %v, want %v", i, j, v, kept[i][j])
			}
		}
	}
	win, err := os.ReadFile(filepath.Join(dir, WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(win)), "\n"); len(lines) != len(kept)+1 || lines[2] != "1,640,4000,0.2,2024-06-01T12:00:00.2Z" {
		t.Errorf("windows.csv %q", lines)
	}
	// Without a label, a stale labels.csv goes.
	imp.Labeled = false
	if err := WriteDir(dir, imp); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, data.LabelsFile)); !os.IsNotExist(err) {
		t.Errorf("labels.csv left: %v", err)
	}
	j, err := os.ReadFile(filepath.Join(dir, ImportFile))
	if err != nil || !strings.Contains(string(j), `"nominal_source": "INF nominal"`) {
		t.Errorf("import.json: %v %s", err, j)
	}
}

// TestPartialLastWindow: samples after the last whole window are named in
// a warning (how many, how long, from when), not dropped silently; a
// recording the windows cover to its end has no such warning.
func TestPartialLastWindow(t *testing.T) {
	x := make([]float64, 700)
	for n := range x {
		x[n] = math.Sqrt2 * 230 * math.Sin(2*math.Pi*50*float64(n)/3200)
	}
	rec := &Recording{Path: "p", Samples: x, Segments: []Segment{{Start: 0, End: len(x), Rate: 3200}}}
	imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 230})
	if err != nil {
		t.Fatal(err)
	}
	want := "the last 60 samples (0.01875 s from 0.2 s) make no whole window of 640: left out"
	if !slices.Contains(imp.Warnings, want) {
		t.Errorf("warnings %q: want %q", imp.Warnings, want)
	}
	rec.Samples, rec.Segments = x[:640], []Segment{{Start: 0, End: 640, Rate: 3200}}
	if imp, err = Import(context.Background(), rec, ImportOptions{Nominal: 230}); err != nil {
		t.Fatal(err)
	}
	for _, w := range imp.Warnings {
		if strings.Contains(w, "no whole window") {
			t.Errorf("a recording of one whole window: %q", w)
		}
	}
}
