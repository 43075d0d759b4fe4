package figure

import (
	"bytes"
	"image"
	"math"
	"slices"
	"strings"
	"testing"
)

// testTimeline is six windows of 640 samples at 3200 Hz, back to back
// (0.2 s each), a flat wave at 0 (so the shading shows away from the
// line), classes normal, normal, sag, sag, swell, normal.
func testTimeline() Timeline {
	t := Timeline{Title: "rec-test, ensemble", Fs: 3200}
	classes := []string{"normal", "normal", "sag", "sag", "swell", "normal"}
	for i, c := range classes {
		t.Windows = append(t.Windows, TimelineWindow{
			Start: 0.2 * float64(i), Wave: make([]float64, 640), Class: c,
			Prob: 0.5 + 0.08*float64(i), MI: 0.05 * float64(i), Agreement: 0.2,
		})
	}
	return t
}

func renderTimeline(t *testing.T, tl Timeline) ([]byte, image.Image) {
	t.Helper()
	var buf bytes.Buffer
	if err := TimelinePlot(&buf, tl); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), decode(t, buf.Bytes(), TimelineWidth, TimelineHeight(max(tl.Channels, 1)))
}

func TestTimelineColours(t *testing.T) {
	// Each window's span has its class's colour: tinted behind the wave,
	// full in the probability bar up to its probability; the MI bar is
	// grey up to the MI; classes get the palette's colours in the order
	// they first appear, and the legend names them so.
	tl := testTimeline()
	_, img := renderTimeline(t, tl)
	f, err := newTimelineFigure(tl)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"normal", "sag", "swell"}; !slices.Equal(f.classes, want) || !slices.Equal(f.names, want) {
		t.Fatalf("classes %q, legend %q, want %q", f.classes, f.names, want)
	}
	mains, legend := f.layout(layoutCanvas(TimelineWidth, TimelineHeight(1)))
	wave := newMapper(f.rows[0], mains[0], TimelineHeight(1))
	prob := newMapper(f.rows[1], mains[1], TimelineHeight(1))
	mi := newMapper(f.rows[2], mains[2], TimelineHeight(1))
	first := map[string]int{"normal": 0, "sag": 1, "swell": 2}
	for i, w := range tl.Windows {
		col := classColours[first[w.Class]]
		for _, x := range []float64{w.Start + 0.02, w.Start + 0.1, w.Start + 0.18} {
			pt := wave.at(x, 0.5)
			if got := rgba8(img.At(pt.X, pt.Y)); !near(got, rgba8(tint(col, timelineTint)), 1) {
				t.Errorf("window %d (%s), %.2f s, above the wave: %v, want the class's tint %v", i, w.Class, x, got, rgba8(tint(col, timelineTint)))
			}
			pt = prob.at(x, w.Prob/2)
			if x != w.Start+0.1 { // the middle has the agreement dot higher up, not here
				if got := rgba8(img.At(pt.X, pt.Y)); !near(got, rgba8(col), 1) {
					t.Errorf("window %d (%s), %.2f s, in the probability bar: %v, want %v", i, w.Class, x, got, rgba8(col))
				}
			}
			pt = prob.at(x, (w.Prob+1)/2)
			if got := rgba8(img.At(pt.X, pt.Y)); near(got, rgba8(col), 30) {
				t.Errorf("window %d, %.2f s, above its probability %g: the class colour", i, x, w.Prob)
			}
			if w.MI > 0 {
				pt = mi.at(x, w.MI/2)
				if got := rgba8(img.At(pt.X, pt.Y)); !near(got, rgba8(barGrey), 1) {
					t.Errorf("window %d, %.2f s, in the MI bar: %v, want grey", i, x, got)
				}
			}
		}
	}
	// The MI axis ends 8 % above the greatest MI.
	if want := 1.08 * 0.25; math.Abs(f.rows[2].Y.Max-want) > 1e-12 {
		t.Errorf("MI axis to %g, want %g", f.rows[2].Y.Max, want)
	}
	// The legend, inside the image, right of every row's data area, shows
	// each class's colour.
	if n := inkOutside(TimelineWidth, TimelineHeight(1), f.draw); n != 0 {
		t.Errorf("%d pixels drawn outside the figure", n)
	}
	for i, m := range mains {
		if d := f.rows[i].DataCanvas(m); legend.Min.X <= d.Max.X {
			t.Errorf("legend from x %v overlaps row %d's data area (to %v)", legend.Min.X, i, d.Max.X)
		}
	}
	h := TimelineHeight(1).Dots(DPI)
	found := map[int]bool{}
	for y := int(h - legend.Max.Y.Dots(DPI)); y < int(h-legend.Min.Y.Dots(DPI)); y++ {
		for x := int(legend.Min.X.Dots(DPI)); x < int(legend.Max.X.Dots(DPI)); x++ {
			for k := range 3 {
				if rgba8(img.At(x, y)) == rgba8(classColours[k]) {
					found[k] = true
				}
			}
		}
	}
	if len(found) != 3 {
		t.Errorf("legend shows colours %v of the 3 classes", found)
	}
}

func TestTimelineOverlapAndChannels(t *testing.T) {
	// Windows that overlap (hop half a window) are shaded from their own
	// start; two channels make two waveform rows and a taller figure.
	tl := testTimeline()
	tl.Channels, tl.ChannelNames = 2, []string{"Va", "Vb"}
	for i := range tl.Windows {
		tl.Windows[i].Start = 0.1 * float64(i)
		tl.Windows[i].Wave = make([]float64, 2*640)
	}
	_, img := renderTimeline(t, tl)
	f, err := newTimelineFigure(tl)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.rows) != 4 || f.rows[1].Y.Label.Text != "Vb (p.u.)" {
		t.Fatalf("%d rows, second labelled %q: want 2 waves, probability, MI", len(f.rows), f.rows[1].Y.Label.Text)
	}
	mains, _ := f.layout(layoutCanvas(TimelineWidth, TimelineHeight(2)))
	for row := range 2 {
		m := newMapper(f.rows[row], mains[row], TimelineHeight(2))
		// 0.25 s: window 2 (sag, from 0.2 s) over window 1's second half.
		pt := m.at(0.25, 0.5)
		if got, want := rgba8(img.At(pt.X, pt.Y)), rgba8(tint(classColours[1], timelineTint)); !near(got, want, 1) {
			t.Errorf("row %d at 0.25 s: %v, want sag's tint %v", row, got, want)
		}
		// The last window runs its whole length: to 0.5 + 0.2 s.
		if f.rows[row].X.Max != 0.7 {
			t.Errorf("x axis to %g s, want 0.7", f.rows[row].X.Max)
		}
	}
}

func TestTimelineDeterministic(t *testing.T) {
	a, _ := renderTimeline(t, testTimeline())
	b, _ := renderTimeline(t, testTimeline())
	if !bytes.Equal(a, b) {
		t.Error("the same timeline gives different bytes")
	}
}

func TestTimelineErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(tl *Timeline)
		want string
	}{
		{func(tl *Timeline) { tl.Windows = nil }, "no Windows"},
		{func(tl *Timeline) { tl.Fs = 0 }, "Fs is 0"},
		{func(tl *Timeline) { tl.Fs = math.NaN() }, "Fs is NaN"},
		{func(tl *Timeline) { tl.Channels = -1 }, "Channels is -1"},
		{func(tl *Timeline) { tl.ChannelNames = []string{"a", "b"} }, "ChannelNames has 2"},
		{func(tl *Timeline) { tl.Channels = 3 }, "want 3 channels"},
		{func(tl *Timeline) { tl.Windows[2].Wave = tl.Windows[2].Wave[:10] }, "Windows[2].Wave has 10"},
		{func(tl *Timeline) { tl.Windows[1].Wave[5] = math.Inf(1) }, "Windows[1].Wave[5] is +Inf"},
		{func(tl *Timeline) { tl.Windows[3].Start = 0.1 }, "Windows[3].Start is 0.1 s, before"},
		{func(tl *Timeline) { tl.Windows[0].Start = math.NaN() }, "Windows[0].Start is NaN"},
		{func(tl *Timeline) { tl.Windows[4].Class = "" }, "Windows[4].Class is empty"},
		{func(tl *Timeline) { tl.Windows[4].Prob = 1.5 }, "Windows[4].Prob is 1.5"},
		{func(tl *Timeline) { tl.Windows[4].Agreement = math.NaN() }, "Windows[4].Agreement is NaN"},
		{func(tl *Timeline) { tl.Windows[4].MI = -0.1 }, "Windows[4].MI is -0.1"},
		{func(tl *Timeline) { tl.Windows[0].Wave[0], tl.Windows[0].Wave[1] = -math.MaxFloat64, math.MaxFloat64 }, "too wide"},
	} {
		tl := testTimeline()
		tc.edit(&tl)
		var buf bytes.Buffer
		err := TimelinePlot(&buf, tl)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "rec-test") {
			t.Errorf("error %v, want one naming the timeline and %q", err, tc.want)
		}
		if buf.Len() != 0 {
			t.Errorf("%q: %d bytes written", tc.want, buf.Len())
		}
	}
}

// TestTimelineClassListColours: with the run's class list, a class's
// colour is ClassColour of its index there whatever order the windows
// show the classes in (the same class, the same colour, in every run and
// in report.html); a class outside the list takes the colours after the
// list's.
func TestTimelineClassListColours(t *testing.T) {
	list := []string{"normal", "swell", "sag"}
	a := testTimeline() // normal, sag, swell in order of appearance
	a.Classes = list
	b := testTimeline()
	b.Classes = list
	slices.Reverse(b.Windows) // normal, swell, sag
	for i := range b.Windows {
		b.Windows[i].Start = 0.2 * float64(i)
	}
	for _, tl := range []Timeline{a, b} {
		f, err := newTimelineFigure(tl)
		if err != nil {
			t.Fatal(err)
		}
		for k, c := range list {
			if f.colours[c] != ClassColour(k) {
				t.Errorf("class %s (index %d of the list): colour %v, want %v", c, k, f.colours[c], ClassColour(k))
			}
		}
	}
	c := testTimeline()
	c.Classes = []string{"normal", "sag"}
	f, err := newTimelineFigure(c)
	if err != nil {
		t.Fatal(err)
	}
	if f.colours["swell"] != ClassColour(2) || ClassColourHex(2) != "#009e73" {
		t.Errorf("swell, outside the list of 2: colour %v (%s), want the list's next, %v", f.colours["swell"], ClassColourHex(2), ClassColour(2))
	}
}
