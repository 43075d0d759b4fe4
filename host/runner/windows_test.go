package runner

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/figure"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/record"
	"github.com/uaxai/uaxai/sdk"
)

func TestWindowTimelines(t *testing.T) {
	// Two posteriors' rows of a three-window recording: one timeline
	// each, named after the posterior's label, a PNG of the timeline's
	// size whose pixels are those of figure.TimelinePlot on the split's
	// records at their start times.
	const T = 640
	d := sdk.Dataset{N: 3, Len: T, X: make([]float32, 3*T), Y: []int{-1, -1, -1}}
	for i := range d.X {
		d.X[i] = float32(math.Sin(2 * math.Pi * float64(i) / 64))
	}
	ds := Datasets{Recording: "rec-x", Rate: 3200, F0: 50, Tests: []engine.TestSplit{{Name: "rec-x", Data: d}}}
	var tab windowTable
	for _, p := range []struct{ id, label string }{{"ensemble", "Deep ensemble"}, {"mcd", "MC dropout"}} {
		for w := range 3 {
			tab.rows = append(tab.rows, windowRow{Posterior: p.id, Label: p.label, Window: w, Start: 0.5 + 0.2*float64(w),
				Class: []string{"normal", "sag", "sag"}[w], Probability: 0.9, MutualInfo: 0.1, Agreement: 1})
		}
	}
	names, pngs, notes, err := tab.timelines(ds, figure.TimelinePlot)
	if err != nil || len(notes) > 0 {
		t.Fatal(err, notes)
	}
	// A timeline that fails is a note naming it; the other is drawn.
	failFirst := func(w io.Writer, tl figure.Timeline) error {
		if strings.Contains(tl.Title, "Deep ensemble") {
			return errors.New("drawing failed: huge dimensions")
		}
		return figure.TimelinePlot(w, tl)
	}
	fn, _, fnotes, err := tab.timelines(ds, failFirst)
	if err != nil || len(fn) != 1 || fn[0] != "figures/timeline-mc-dropout.png" || len(fnotes) != 1 || !strings.Contains(fnotes[0], "timeline of Deep ensemble not drawn: drawing failed") {
		t.Errorf("a failing timeline: %v, figures %v, notes %q", err, fn, fnotes)
	}
	if len(names) != 2 || names[0] != "figures/timeline-deep-ensemble.png" || names[1] != "figures/timeline-mc-dropout.png" {
		t.Fatalf("timelines %q", names)
	}
	want := figure.Timeline{Title: "rec-x, Deep ensemble", Fs: 3200}
	for w := range 3 {
		wave := make([]float64, T)
		for i := range wave {
			wave[i] = float64(d.X[w*T+i])
		}
		want.Windows = append(want.Windows, figure.TimelineWindow{Start: 0.5 + 0.2*float64(w), Wave: wave, Class: []string{"normal", "sag", "sag"}[w], Prob: 0.9, MI: 0.1, Agreement: 1})
	}
	var b bytes.Buffer
	if err := figure.TimelinePlot(&b, want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pngs[0], b.Bytes()) {
		t.Error("the first timeline is not the figure of the split's windows at their start times")
	}
	img, err := png.Decode(bytes.NewReader(pngs[1]))
	if err != nil {
		t.Fatal(err)
	}
	if got, wantH := img.Bounds().Dy(), int(math.Round(figure.TimelineHeight(1).Dots(figure.DPI))); got != wantH {
		t.Errorf("timeline %d pixels high, want %d", got, wantH)
	}
	// A row naming a window the split has not is an error, not a panic.
	tab.rows[1].Window = 7
	if _, _, _, err := tab.timelines(ds, figure.TimelinePlot); err == nil {
		t.Error("a row of window 7 in a split of 3: no error")
	}
}

func TestRecordingBaselineNotes(t *testing.T) {
	// The recipe's windows hold record.DefaultCycles cycles, the count
	// recipe defaults the fundamental baseline's period by; a recording
	// recipe whose occlusion sets no baseline gets a note saying so, one
	// that sets baseline = 0.0 none.
	if recipe.RecordingCycles != record.DefaultCycles {
		t.Errorf("recipe.RecordingCycles %d, record.DefaultCycles %d", recipe.RecordingCycles, record.DefaultCycles)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rec.cfg"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src := "name = \"r\"\n[[posterior]]\nuse = \"ensemble\"\n[[explainer]]\nuse = \"occlusion\"\n%s[[summary]]\nuse = \"mean\"\n[recording]\nfile = \"rec.cfg\"\nnominal = 230.0\n"
	for _, c := range []struct {
		key   string
		notes int
	}{{"", 1}, {"baseline = 0.0\n", 0}} {
		r, err := recipe.Parse("r.toml", []byte(fmt.Sprintf(src, c.key)), dir)
		if err != nil {
			t.Fatal(err)
		}
		n := baselineNotes(r)
		if len(n) != c.notes || (c.notes == 1 && !strings.Contains(n[0], `baseline = "fundamental" (period 64 samples)`)) {
			t.Errorf("%q: notes %q, want %d", c.key, n, c.notes)
		}
	}
}

// TestWindowEvents: consecutive windows (one hop apart) of one class
// merge into an event; a window after a dropped one (two hops) starts a
// new event even of the same class; times are ms from the trigger, the
// end the last window's start plus a window; the probability and the
// mutual information are the windows' means; the top channel is the one
// of largest mean share.
func TestWindowEvents(t *testing.T) {
	const T, hop = 640, 320
	d := sdk.Dataset{N: 6, Len: 2 * T, X: make([]float32, 6*2*T), Y: make([]int, 6)}
	starts := []int{0, 320, 640, 960, 1600, 1920} // 1280 dropped
	var wins []record.Window
	for _, s := range starts {
		wins = append(wins, record.Window{Start: s, SourceTime: float64(s) / 3200})
	}
	ds := Datasets{Recording: "rec", Rate: 3200, Trigger: 0.05, Windows: wins,
		Tests: []engine.TestSplit{{Name: "rec", Data: d, Channels: 2, ChannelNames: []string{"VA", "VB"}}}}
	classes := []string{"normal", "sag", "sag", "sag", "sag", "normal"}
	var tab windowTable
	for w, c := range classes {
		tab.rows = append(tab.rows, windowRow{Posterior: "p", Label: "P", Window: w, Class: c, Probability: 0.5 + 0.1*float64(w), MutualInfo: 0.01 * float64(w)})
	}
	share := func(post string, w int) ([]float64, bool) {
		if post != "P" {
			t.Errorf("share asked of posterior %q", post)
		}
		return []float64{0.1 * float64(w), 1 - 0.1*float64(w)}, true
	}
	evs, origin := tab.events(ds, share)
	if origin != "trigger" {
		t.Errorf("origin %q", origin)
	}
	win := float64(T) / 3200
	want := []windowEvent{
		{Class: "normal", First: 0, Last: 0, Start: 0 - 0.05, End: win - 0.05, Probability: 0.5, MI: 0, TopChannel: "VB", TopShare: 1},
		{Class: "sag", First: 1, Last: 3, Start: 0.1 - 0.05, End: 0.3 + win - 0.05, Probability: 0.7, MI: 0.02, TopChannel: "VB", TopShare: 0.8},
		{Class: "sag", First: 4, Last: 4, Start: 0.5 - 0.05, End: 0.5 + win - 0.05, Probability: 0.9, MI: 0.04, TopChannel: "VB", TopShare: 0.6},
		{Class: "normal", First: 5, Last: 5, Start: 0.6 - 0.05, End: 0.6 + win - 0.05, Probability: 1.0, MI: 0.05, TopChannel: "VA", TopShare: 0.5},
	}
	if len(evs) != len(want) {
		t.Fatalf("events %+v, want %d", evs, len(want))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	for i, w := range want {
		e := evs[i]
		if e.Class != w.Class || e.First != w.First || e.Last != w.Last || !near(e.Start, w.Start) || !near(e.End, w.End) ||
			!near(e.Probability, w.Probability) || !near(e.MI, w.MI) || e.TopChannel != w.TopChannel || !near(e.TopShare, w.TopShare) {
			t.Errorf("event %d: %+v, want %+v", i, e, w)
		}
	}
	b, err := eventsCSV(evs, origin, "Occlusion")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "p,P,1,sag,1,3,3,50.000,450.000,trigger,0.7,0.02,VB,0.8,Occlusion,0\n") {
		t.Errorf("events.csv:\n%s", b)
	}
	// Without a trigger, from the first sample; without shares, no channel.
	ds.Trigger = math.NaN()
	evs, origin = tab.events(ds, nil)
	if origin != "first sample" || !near(evs[1].Start, 0.1) || evs[1].TopChannel != "" {
		t.Errorf("no trigger: %q, %+v", origin, evs[1])
	}
}

// TestWindowOOD: with training and validation windows of the generator,
// a recording's windows called normal are checked against the training
// normals: a clean 50 Hz sine of amplitude 1 is not flagged, a 0.10
// amplitude one (a deep sag) is, for its RMS, and a 60 Hz one for its
// fundamental; windows.csv and events.csv carry the flags, and the note
// says how the check was fitted. Without training windows the columns
// are empty and the note says there is no check.
func TestWindowOOD(t *testing.T) {
	cfg := data.DefaultConfig()
	ps, err := data.MakePaperSplits(context.Background(), cfg, 3, 40, 0.5, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	const T = 640
	sine := func(A, f float64) []float32 {
		x := make([]float32, T)
		for i := range x {
			x[i] = float32(A * math.Sin(2*math.Pi*f*float64(i)/cfg.Fs))
		}
		return x
	}
	var x []float32
	for _, w := range [][]float32{sine(1, 50), sine(0.1, 50), sine(1, 60)} {
		x = append(x, w...)
	}
	rec := sdk.Dataset{N: 3, Len: T, X: x, Y: make([]int, 3)}
	wins := []record.Window{{Start: 0}, {Start: 640, SourceTime: 0.2}, {Start: 1280, SourceTime: 0.4}}
	probs := make([]float64, 3*16)
	for i := range 3 {
		probs[i*16] = 1 // normal
	}
	pred := engine.Prediction{Probs: [][]float64{probs}, MeanEntropy: [][]float64{make([]float64, 3)}, Agree: [][]float64{{1, 1, 1}}}
	for _, trained := range []bool{true, false} {
		ds := Datasets{Recording: "rec", Rate: cfg.Fs, F0: cfg.F0, Channels: 1, Windows: wins, Trigger: math.NaN(),
			Tests: []engine.TestSplit{{Name: "rec", Data: rec}}}
		if trained {
			ds.Train, ds.Val = ToDataset(ps.Train.Records), ToDataset(ps.Val.Records)
		}
		var tab windowTable
		if err := tab.add(ds, engine.Step{ID: "p", Label: "P"}, pred, nil); err != nil {
			t.Fatal(err)
		}
		b, err := tab.csv()
		if err != nil {
			t.Fatal(err)
		}
		lines, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, h := range lines[0] {
			col[h] = i
		}
		evs, origin := tab.events(ds, nil)
		eb, err := eventsCSV(evs, origin, "")
		if err != nil {
			t.Fatal(err)
		}
		if !trained {
			if lines[1][col["ood_score"]] != "" || lines[1][col["ood"]] != "" || !strings.Contains(tab.oodNote, "no out-of-distribution check") {
				t.Errorf("untrained: windows.csv %q, note %q", lines[1], tab.oodNote)
			}
			continue
		}
		for i, want := range []string{"", "RMS", "f0"} {
			l := lines[i+1]
			ood, why := l[col["ood"]], l[col["ood_reason"]]
			if got := ood == "true"; got != (want != "") || !strings.Contains(why, want) || (want != "" && !strings.Contains(why, "outside what the model was trained on: "+want)) {
				t.Errorf("window %d: windows.csv %q; want flagged %v for %q", i, l, want != "", want)
			}
		}
		if !strings.Contains(string(eb), ",2\n") || !strings.Contains(tab.oodNote, "training windows of its predicted class") {
			t.Errorf("events.csv %q (want the one event's 2 flagged windows), note %q", eb, tab.oodNote)
		}
	}
}
