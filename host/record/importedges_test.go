package record

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
)

// TestImportOptionBounds checks the smallest accepted import options: a
// window and hop of 1 sample (every sample a window), a largest ratio
// term of 1 (a 1/1 ratio) and a window of 1 cycle.
func TestImportOptionBounds(t *testing.T) {
	rec := constRec(100, 3200, 1)
	ctx := context.Background()
	imp, err := Import(ctx, rec, ImportOptions{Nominal: 1, Rate: 3200, Window: 1, Hop: 1})
	if err != nil || len(imp.Windows) != len(rec.Samples) {
		t.Errorf("window 1, hop 1: %v", err)
	}
	imp, err = Import(ctx, rec, ImportOptions{Nominal: 1, Rate: 3200, Window: 64, MaxRatio: 1})
	if err != nil || imp.Ratios[0].Up != 1 || imp.Ratios[0].Down != 1 {
		t.Errorf("max ratio 1: %v", err)
	}
	// 64 samples at 3200 Hz are one cycle of 50 Hz: no warning about it.
	imp, err = Import(ctx, rec, ImportOptions{Nominal: 1, Rate: 3200, Window: 64, Cycles: 1})
	if err != nil {
		t.Fatalf("cycles 1: %v", err)
	}
	for _, w := range imp.Warnings {
		if strings.Contains(w, "cycles, not") {
			t.Errorf("cycles 1: %q", w)
		}
	}
	for _, opt := range []ImportOptions{{Nominal: 1, Window: -1}, {Nominal: 1, Hop: -1}, {Nominal: 1, MaxRatio: -1}, {Nominal: 1, Rate: 3200, Cycles: -1}} {
		_, err := Import(ctx, rec, opt)
		wantErr(t, fmt.Sprintf("%+v", opt), err, "want rate > 0, window >= 1, hop >= 1, cycles >= 1")
	}
}

// TestImportNoNominalUnit checks the error of a recording without a
// nominal value: it names the channel's unit (or says "the channel's
// unit" when there is none), and asks for one value for every channel
// only when there are several.
func TestImportNoNominalUnit(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ unit, says string }{{"", "the channel's unit"}, {"kV", "kV"}} {
		rec := constRec(3200, 3200, 1)
		rec.Unit = c.unit
		_, err := Import(ctx, rec, ImportOptions{})
		wantErr(t, "unit "+c.unit, err, "c: the file states no nominal value; give --nominal V (the nominal RMS value in "+c.says+", e.g. 230)")
		if err != nil && strings.Contains(err.Error(), "every channel") {
			t.Errorf("one channel: %v", err)
		}
	}
	a, b := constRec(3200, 3200, 1), constRec(3200, 3200, 1)
	a.Channel, b.Channel, a.Unit, b.Unit = "VA", "VB", "V", "V"
	_, err := ImportChannels(ctx, []*Recording{a, b}, ImportOptions{})
	wantErr(t, "two channels", err, "c: channel VA: the file states no nominal value; give --nominal V (the nominal RMS value in V, one for every channel;")
}

// TestRatingFactorSaid checks that the warning of a rating the signal
// contradicts gives the factor between the level taken and the rating.
func TestRatingFactorSaid(t *testing.T) {
	rec := sineRec(10000, 10000, 50, 47.2, 50, flat)
	rec.Nominal, rec.NominalSource = 1100, "primary rating of channel 1 in the cfg"
	imp, err := Import(context.Background(), rec, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pre, how, err := PreEventRMS(rec, 50)
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, imp.Warnings, fmt.Sprintf("disagrees with the signal: %s, %.3g times it", how, pre/1100))
}

// TestImportSegmentLengths checks that each rate segment gives
// ceil(samples * target / rate) output samples, from where the previous
// one ends (a second segment of 3000 samples at 9600 Hz makes 1000 at
// 3200 Hz).
func TestImportSegmentLengths(t *testing.T) {
	rec := constRec(4000, 3200, 1)
	rec.Segments = []Segment{{Start: 0, End: 1000, Rate: 3200}, {Start: 1000, End: 4000, Rate: 9600}}
	imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: 3200, Window: 100})
	if err != nil {
		t.Fatal(err)
	}
	ceil := func(n int, rate float64) int { return int(math.Ceil(float64(n) * 3200 / rate)) }
	n1, n2 := ceil(1000, 3200), ceil(3000, 9600)
	if len(imp.Signal) != n1+n2 || imp.Ratios[1].OutStart != n1 || imp.Ratios[1].OutEnd != n1+n2 {
		t.Errorf("%d samples, segments %+v; want %d + %d", len(imp.Signal), imp.Ratios, n1, n2)
	}
}

// droppedOf returns the Dropped text of every window.
func droppedOf(imp *Imported) []string {
	var out []string
	for _, w := range imp.Windows {
		out = append(out, w.Dropped)
	}
	return out
}

// TestImportWindowGapEdges checks at a 1/1 ratio (a missing sample is a
// gap of that sample alone) that a gap drops exactly the windows that
// hold it: one at a window's first or last sample drops that window
// only; two gaps in a window are both said, in order.
func TestImportWindowGapEdges(t *testing.T) {
	const win = 64
	rec := constRec(5*win, 3200, 1)
	rec.Samples[win], rec.Samples[3*win-1] = math.NaN(), math.NaN()
	rec.finish()
	imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: 3200, Window: win})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"", fmt.Sprintf("missing value at samples %d..%d", win, win), fmt.Sprintf("missing value at samples %d..%d", 3*win-1, 3*win-1), "", ""}
	if got := droppedOf(imp); !slices.Equal(got, want) {
		t.Errorf("dropped %q, want %q", got, want)
	}

	rec = constRec(2*win, 3200, 1)
	rec.Samples[10], rec.Samples[20], rec.Samples[21] = math.NaN(), math.NaN(), math.NaN()
	rec.finish()
	if imp, err = Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: 3200, Window: win}); err != nil {
		t.Fatal(err)
	}
	want = []string{"missing value at samples 10..10; missing value at samples 20..21", ""}
	if got := droppedOf(imp); !slices.Equal(got, want) {
		t.Errorf("dropped %q, want %q", got, want)
	}
}

// jumpRec is 300 samples of 1 at 3200 Hz whose timestamps skip 1 s
// before sample 100.
func jumpRec() *Recording {
	rec := constRec(300, 3200, 1)
	rec.Segments = []Segment{{Start: 0, End: 100, Rate: 3200}, {Start: 100, End: 300, Rate: 3200, Skip: 1}}
	return rec
}

// TestImportJumpWindows checks windows around a timestamp jump at a 1/1
// ratio: only a window holding the jump strictly inside it is dropped
// (one ending just before it or starting at it is kept), the jump is no
// gap of samples, the source times of windows after it are 1 s later,
// and a window with a missing sample and the jump says both; windows.csv
// holds the source times exactly and import.json every warning.
func TestImportJumpWindows(t *testing.T) {
	const win, hop = 50, 25
	rec := jumpRec()
	imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: 3200, Window: win, Hop: hop})
	if err != nil {
		t.Fatal(err)
	}
	if len(imp.Gaps) != 0 {
		t.Errorf("gaps %v, want none (a jump is no missing sample)", imp.Gaps)
	}
	if n := (300-win)/hop + 1; len(imp.Windows) != n {
		t.Fatalf("%d windows, want %d", len(imp.Windows), n)
	}
	for k, w := range imp.Windows {
		s := k * hop
		want := ""
		if s < 100 && 100 < s+win {
			want = "timestamp jump of 1 s before sample 100"
		}
		tm := float64(s) / 3200
		if s >= 100 {
			tm++
		}
		if w.Start != s || w.Dropped != want || w.SourceSample != s || math.Abs(w.SourceTime-tm) > 1e-12 {
			t.Errorf("window %d: %+v, want start %d, dropped %q, source %d at %g s", k, w, s, want, s, tm)
		}
	}

	dir := t.TempDir()
	if err := WriteDir(dir, imp); err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(filepath.Join(dir, WindowsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")[1:]
	var kept []Window
	for _, w := range imp.Windows {
		if w.Dropped == "" {
			kept = append(kept, w)
		}
	}
	if len(lines) != len(kept) {
		t.Fatalf("windows.csv has %d windows, want %d", len(lines), len(kept))
	}
	for i, l := range lines {
		f := strings.Split(l, ",")
		v, err := strconv.ParseFloat(f[3], 64)
		if err != nil || v != kept[i].SourceTime {
			t.Errorf("windows.csv line %q: source time %v, want exactly %v", l, f[3], kept[i].SourceTime)
		}
	}
	var j struct {
		Warnings []string `json:"warnings"`
	}
	b, err := os.ReadFile(filepath.Join(dir, ImportFile))
	if err != nil || json.Unmarshal(b, &j) != nil {
		t.Fatalf("import.json: %v", err)
	}
	if all := append(append([]string{}, rec.Warnings...), imp.Warnings...); len(all) == 0 || !slices.Equal(j.Warnings, all) {
		t.Errorf("import.json warnings %q, want %q (not none)", j.Warnings, all)
	}

	rec = jumpRec()
	rec.Samples[80] = math.NaN()
	rec.finish()
	if imp, err = Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: 3200, Window: win, Hop: hop}); err != nil {
		t.Fatal(err)
	}
	if got, want := imp.Windows[3].Dropped, "missing value at samples 80..80; timestamp jump of 1 s before sample 100"; got != want {
		t.Errorf("window at 75: dropped %q, want %q", got, want)
	}
}

// touching returns the outputs lo..hi-1 (within 0..nOut-1) of the
// resampler up/down whose sums reach an input m in mLo..mHi-1, from the
// taps' reach |n*down - m*up| <= halfLen, by search.
func touching(up, down, halfLen, mLo, mHi, nOut int) (lo, hi int) {
	lo, hi = -1, -1
	for n := 0; n < nOut; n++ {
		for m := mLo; m < mHi; m++ {
			if abs(n*down-m*up) <= halfLen {
				if lo < 0 {
					lo = n
				}
				hi = n + 1
				break
			}
		}
	}
	return lo, hi
}

// TestImportThreeSegmentGaps checks the gaps of three rate segments
// (6400, 12800, 6400 Hz to 3200 Hz) with a missing sample in the middle
// one: each border is a gap of the outputs whose taps reach across it,
// from both sides, and the missing sample one of the outputs that reach
// it, all at their segment's output offset; no window is dropped for a
// timestamp jump.
func TestImportThreeSegmentGaps(t *testing.T) {
	rec := constRec(5120, 6400, 1)
	rec.Segments = []Segment{{Start: 0, End: 1280, Rate: 6400}, {Start: 1280, End: 3840, Rate: 12800}, {Start: 3840, End: 5120, Rate: 6400}}
	rec.Samples[2560] = math.NaN()
	rec.finish()
	imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: 3200, Window: 100, Hop: 50})
	if err != nil {
		t.Fatal(err)
	}
	hA, hB := 10*2, 10*4 // half_len = 10 * max(up, down)
	// Segment A: 1280 inputs, 640 outputs; B: 2560 inputs, 640 outputs.
	aEnd, _ := touching(1, 2, hA, 1280, 1280+hA+1, 640)
	_, bStart := touching(1, 4, hB, -hB-1, 0, 640)
	nLo, nHi := touching(1, 4, hB, 2560-1280, 2560-1280+1, 640)
	bEnd, _ := touching(1, 4, hB, 2560, 2560+hB+1, 640)
	_, cStart := touching(1, 2, hA, -hA-1, 0, 640)
	want := []Gap{
		{Start: aEnd, End: 640 + bStart, Reason: "rate segment border"},
		{Start: 640 + nLo, End: 640 + nHi, Reason: "missing value"},
		{Start: 640 + bEnd, End: 1280 + cStart, Reason: "rate segment border"},
	}
	if !(want[0].End < want[1].Start && want[1].End < want[2].Start) {
		t.Fatalf("the expected gaps %v overlap; the test's layout is wrong", want)
	}
	if !slices.Equal(imp.Gaps, want) {
		t.Errorf("gaps %v, want %v", imp.Gaps, want)
	}
	for _, w := range imp.Windows {
		if strings.Contains(w.Dropped, "timestamp jump") {
			t.Errorf("window at %d: %q, but the recording has no jump", w.Start, w.Dropped)
		}
	}
}

// snapRec is n samples of sin(2 pi i/spc) at rate Hz, stated 50 Hz.
func snapRec(n int, rate, spc float64) *Recording {
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Sin(2 * math.Pi * float64(i) / spc)
	}
	rec := &Recording{Path: "t.cfg", LineFreq: 50, Samples: x, Segments: []Segment{{Start: 0, End: n, Rate: rate}}}
	rec.EstFreq = EstimateFrequency(rec)
	return rec
}

// TestImportRateSnapBounds checks the rate a frequency-tracking segment
// is taken at, N * 50 Hz, at the bounds: 1262.5 Hz is 25.25 samples a
// cycle, exactly 1 % above 25 and a quarter sample from it (both bounds
// inclusive), and is taken as 1250 Hz when no ratio up/down <= 100 of
// 3200 Hz reaches it, with a warning naming the segment, its rate, the
// rate taken and how far the times move (2000 samples: 2000/1250 -
// 2000/1262.5 s, wherever the segment starts); N = 1 (50.0123 Hz) is
// taken as 50 Hz.
func TestImportRateSnapBounds(t *testing.T) {
	opt := ImportOptions{Nominal: 1 / math.Sqrt2, Rate: 3200, MaxRatio: 100, Window: 64}
	rec := snapRec(2000, 1262.5, 25)
	imp, err := Import(context.Background(), rec, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(imp.Ratios) != 1 || imp.Ratios[0].Rate != 1250 || imp.Ratios[0].Up != 64 || imp.Ratios[0].Down != 25 {
		t.Errorf("ratios %+v, want 1250 Hz by 64/25", imp.Ratios)
	}
	shift := 1e3 * (2000/1250.0 - 2000/1262.5)
	wantWarnings(t, imp.Warnings, fmt.Sprintf("samples 0..1999: rate segment 1 (1262.5 Hz; 1 of them no ratio up/down <= 100 of 3200 Hz) resampled as one segment of 1250 Hz, 25 samples a cycle of 50 Hz (a frequency-tracking recorder, or a rate measured from timestamps: within 1%% of it); the samples' times move by up to %.3g ms", shift))

	// The same segment after 640 samples at 3200 Hz.
	x := make([]float64, 640+2000)
	for i := range x {
		if i < 640 {
			x[i] = math.Sin(2 * math.Pi * float64(i) / 64)
		} else {
			x[i] = math.Sin(2 * math.Pi * float64(i-640) / 25)
		}
	}
	rec = &Recording{Path: "t.cfg", LineFreq: 50, Samples: x, Segments: []Segment{{Start: 0, End: 640, Rate: 3200}, {Start: 640, End: 2640, Rate: 1262.5}}}
	rec.EstFreq = EstimateFrequency(rec)
	if imp, err = Import(context.Background(), rec, opt); err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, imp.Warnings, fmt.Sprintf("samples 640..2639: rate segment 2 (1262.5 Hz; 1 of them no ratio up/down <= 100 of 3200 Hz) resampled as one segment of 1250 Hz, 25 samples a cycle of 50 Hz (a frequency-tracking recorder, or a rate measured from timestamps: within 1%% of it); the samples' times move by up to %.3g ms", shift))

	// Just beyond: 1262.6 Hz is no tracking rate, and no ratio of 3200.
	_, err = Import(context.Background(), snapRec(2000, 1262.6, 25), opt)
	wantErr(t, "1262.6 Hz", err, "t.cfg: samples 0..1999:")

	rec = constRec(200, 50.0123, 1)
	rec.LineFreq = 50
	imp, err = Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: 100, Window: 10})
	if err != nil || imp.Ratios[0].Rate != 50 || imp.Ratios[0].Up != 2 || imp.Ratios[0].Down != 1 {
		t.Errorf("50.0123 Hz: %v, ratios %+v; want 50 Hz by 2/1", err, imp.Ratios)
	}
}

// TestFundamentalWarningBounds checks the bounds of the warning about a
// recording without a power system's fundamental: zero crossings within
// 5 % of 50 or 60 Hz (inclusive) are one, 8 samples a cycle is enough,
// and a recording of several rate segments (no one rate) is not said to
// be sampled slowly.
func TestFundamentalWarningBounds(t *testing.T) {
	one := []Segment{{Start: 0, End: 1000, Rate: 3200}}
	for _, c := range []struct {
		est  float64
		segs []Segment
		says string
	}{
		{52.5, one, ""},
		{47.5, one, ""},
		{57, one, ""},
		{63, one, ""},
		{52.6, one, "near neither 50 nor 60 Hz"},
		{50, []Segment{{Start: 0, End: 1000, Rate: 400}}, ""},
		{50, []Segment{{Start: 0, End: 1000, Rate: 399}}, "sampled at 399 Hz"},
		{50, []Segment{{Start: 0, End: 500, Rate: 6400}, {Start: 500, End: 1000, Rate: 3200}}, ""},
	} {
		rec := &Recording{EstFreq: c.est, Segments: c.segs}
		got := fundamentalWarning(rec, 50, "why")
		if c.says == "" && got != "" || c.says != "" && !strings.Contains(got, c.says) {
			t.Errorf("%g Hz, segments %v: %q, want %q", c.est, c.segs, got, c.says)
		}
	}
}

// mib is n float64 samples in MiB.
func mib(n int) float64 { return float64(n) * 8 / (1 << 20) }

// TestImportGrowthMessage checks the refusal of a segment that would grow
// more than MaxGrowth times: it names the segment's samples, the rates,
// the growth, the output samples of that segment alone and their MiB, and
// the lowest rate accepted.
func TestImportGrowthMessage(t *testing.T) {
	rec := constRec(1320, 3200, 1)
	rec.Path = "g.wav"
	rec.Segments = []Segment{{Start: 0, End: 320, Rate: 3200}, {Start: 320, End: 1320, Rate: 10}}
	_, err := Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: 3200})
	n := 1000 * 3200 / 10
	wantErr(t, "10 Hz to 3200 Hz", err, fmt.Sprintf("g.wav: samples 320..1319: resampling 10 Hz to 3200 Hz would make 320x the input's samples (%d samples, %.1f MiB); at most %dx are accepted: resample the file beforehand to a rate of at least %g Hz", n, mib(n), MaxGrowth, 3200.0/MaxGrowth))
}

// TestCheckOutputBounds checks the size bounds of an import: MaxOutSamples
// output samples (per channel: MaxOutSamples / channels) are accepted and
// one more is refused, saying the bound per channel when there are
// several; windows are refused beyond MaxOutSamples samples together, and
// the hop the error offers is the smallest that keeps them within it.
func TestCheckOutputBounds(t *testing.T) {
	rec := &Recording{Path: "big.wav", Samples: make([]float64, 10)}
	opt := ImportOptions{Rate: 3200, Window: 640, Hop: 640}
	if err := checkOutput(rec, nil, MaxOutSamples, 1, opt); err != nil {
		t.Errorf("MaxOutSamples: %v", err)
	}
	err := checkOutput(rec, nil, MaxOutSamples+1, 1, opt)
	wantErr(t, "MaxOutSamples+1", err, fmt.Sprintf("big.wav: 10 samples resampled to 3200 Hz would make %d samples (%.1f MiB); at most %d (%.0f MiB) are accepted: cut the recording into parts of at most %.3g s",
		MaxOutSamples+1, mib(MaxOutSamples+1), MaxOutSamples, mib(MaxOutSamples), float64(MaxOutSamples)/3200))
	if err := checkOutput(rec, nil, MaxOutSamples/2, 2, opt); err != nil {
		t.Errorf("MaxOutSamples/2, 2 channels: %v", err)
	}
	err = checkOutput(rec, nil, MaxOutSamples/2+1, 2, opt)
	wantErr(t, "MaxOutSamples/2+1, 2 channels", err, fmt.Sprintf("at most %d (%.0f MiB) a channel, for 2 channels are accepted", MaxOutSamples/2, mib(MaxOutSamples/2)))

	hopRe := regexp.MustCompile(`a hop of (\d+) or more`)
	for _, c := range []struct{ window, extra int }{{1 << 20, 128}, {1 << 20, 1000}, {MaxOutSamples/2 + 1, 1}, {MaxOutSamples/2 + 1, 7}, {1 << 16, 5000}} {
		k := MaxOutSamples / c.window // the most windows accepted
		total := c.window + c.extra
		o := ImportOptions{Rate: 3200, Window: c.window, Hop: 1}
		windows := c.extra + 1
		err := checkOutput(rec, nil, total, 1, o)
		if windows <= k {
			if err != nil {
				t.Errorf("window %d, %d windows of at most %d: %v", c.window, windows, k, err)
			}
			continue
		}
		wantErr(t, fmt.Sprintf("window %d, %d windows", c.window, windows), err, fmt.Sprintf("%d windows of %d samples every 1 would hold %d samples (%.1f MiB)", windows, c.window, windows*c.window, mib(windows*c.window)))
		if err == nil {
			continue
		}
		m := hopRe.FindStringSubmatch(err.Error())
		if m == nil {
			t.Errorf("no hop offered: %v", err)
			continue
		}
		hop, _ := strconv.Atoi(m[1])
		count := func(h int) int { return (total-c.window)/h + 1 }
		if hop < 2 || count(hop) > k || count(hop-1) <= k {
			t.Errorf("window %d, total %d: hop %d offered makes %d windows (hop %d: %d), want the smallest hop with at most %d", c.window, total, hop, count(hop), hop-1, count(hop-1), k)
		}
		if checkOutput(rec, nil, total, 1, ImportOptions{Rate: 3200, Window: c.window, Hop: hop}) != nil {
			t.Errorf("window %d: the hop %d offered is refused", c.window, hop)
		}
	}
}

// TestMergeGapsProperties checks mergeGaps on shuffled gaps: the result
// is sorted, its gaps non-empty and apart (touching or overlapping gaps
// are one), it covers exactly the samples the input covers, and each
// input's reason is in the gap that covers it; gaps with one start keep
// their order in the joined reason.
func TestMergeGapsProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(8)
		var in []Gap
		covered := make([]bool, 60)
		for k := 0; k < n; k++ {
			s := rng.IntN(40)
			g := Gap{Start: s, End: s + 1 + rng.IntN(8), Reason: fmt.Sprintf("r%d", k)}
			for i := g.Start; i < g.End; i++ {
				covered[i] = true
			}
			in = append(in, g)
		}
		orig := slices.Clone(in)
		out := mergeGaps(in)
		got := make([]bool, 60)
		for i, g := range out {
			if g.End <= g.Start || i > 0 && g.Start <= out[i-1].End {
				t.Fatalf("%v merged to %v: gap %d empty, or not after the previous", orig, out, i)
			}
			for j := g.Start; j < g.End; j++ {
				got[j] = true
			}
		}
		if !slices.Equal(got, covered) {
			t.Fatalf("%v merged to %v: covers other samples", orig, out)
		}
		for _, g := range orig {
			for _, o := range out {
				if o.Start <= g.Start && g.Start < o.End && !slices.Contains(strings.Split(o.Reason, ", "), g.Reason) {
					t.Fatalf("%v merged to %v: %q not said", orig, out, g.Reason)
				}
			}
		}
	}
	for _, c := range []struct {
		in, want []Gap
	}{
		{[]Gap{{5, 8, "b"}, {0, 5, "a"}}, []Gap{{0, 8, "a, b"}}},
		{[]Gap{{2, 5, "b"}, {0, 10, "a"}}, []Gap{{0, 10, "a, b"}}},
		{[]Gap{{3, 6, "channel VA: x"}, {3, 5, "channel VB: x"}, {0, 1, "y"}}, []Gap{{0, 1, "y"}, {3, 6, "channel VA: x, channel VB: x"}}},
		{[]Gap{{6, 7, "c"}, {3, 4, "b"}, {0, 1, "a"}}, []Gap{{0, 1, "a"}, {3, 4, "b"}, {6, 7, "c"}}},
	} {
		if got := mergeGaps(slices.Clone(c.in)); !slices.Equal(got, c.want) {
			t.Errorf("mergeGaps(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestWriteDirChannelGaps checks that import.json lists each channel's own
// gaps, in the source and in the output, and empty lists for a channel
// without any.
func TestWriteDirChannelGaps(t *testing.T) {
	a, b := constRec(640, 3200, 1), constRec(640, 3200, 1)
	a.Channel, b.Channel, a.Index, b.Index = "VA", "VB", 1, 2
	b.Samples[100] = math.NaN()
	a.finish()
	b.finish()
	imp, err := ImportChannels(context.Background(), []*Recording{a, b}, ImportOptions{Nominal: 1, Rate: 3200, Window: 64})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteDir(dir, imp); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ImportFile))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Channels []struct {
			Name       string `json:"name"`
			SourceGaps []Gap  `json:"source_gaps"`
			Gaps       []Gap  `json:"gaps"`
		} `json:"channels"`
	}
	if err := json.Unmarshal(raw, &j); err != nil || len(j.Channels) != 2 {
		t.Fatalf("import.json: %v, %d channels", err, len(j.Channels))
	}
	gap := []Gap{{Start: 100, End: 101, Reason: "missing value"}}
	if c := j.Channels[1]; c.Name != "VB" || !slices.Equal(c.SourceGaps, gap) || !slices.Equal(c.Gaps, gap) {
		t.Errorf("channel VB: %+v, want source and output gaps %v", c, gap)
	}
	if c := j.Channels[0]; c.SourceGaps == nil || c.Gaps == nil || len(c.SourceGaps)+len(c.Gaps) != 0 {
		t.Errorf("channel VA: %+v, want empty lists", c)
	}
}

// TestWriteDirLabelBounds checks the labels accepted: 0 ..
// data.NumClasses-1, written once for every kept window.
func TestWriteDirLabelBounds(t *testing.T) {
	imp, err := Import(context.Background(), constRec(640, 3200, 1), ImportOptions{Nominal: 1, Rate: 3200, Window: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []int{0, data.NumClasses - 1} {
		imp.Label, imp.Labeled = label, true
		dir := t.TempDir()
		if err := WriteDir(dir, imp); err != nil {
			t.Errorf("label %d: %v", label, err)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, data.LabelsFile))
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Repeat(fmt.Sprintf("%d\n", label), len(imp.Kept())); string(b) != want {
			t.Errorf("label %d: labels.csv %q, want %q", label, b, want)
		}
	}
	for _, label := range []int{-1, data.NumClasses} {
		imp.Label = label
		err := WriteDir(t.TempDir(), imp)
		wantErr(t, fmt.Sprintf("label %d", label), err, fmt.Sprintf("record: label %d, want 0..%d", label, data.NumClasses-1))
	}
}
