package figure

import (
	"bytes"
	"image"
	"slices"
	"strings"
	"testing"
)

// channelPanel is a panel of C channels of T samples: flat waves, channel
// c's mask true on [c T/C, (c+1) T/C) (a different third for each of 3
// channels), and the test panel's ramps repeated on every channel, with
// channel c's mean map scaled by c+1.
func channelPanel(C, T int) Panel {
	one := testPanel(T, 0)
	p := Panel{Title: "three", Labels: one.Labels, Channels: C, ChannelNames: []string{"A", "B", "C"}[:C]}
	p.Wave = make([]float64, C*T)
	p.Mask = make([]bool, C*T)
	for c := range C {
		for t := c * T / C; t < (c+1)*T/C; t++ {
			p.Mask[c*T+t] = true
		}
	}
	rep := func(x []float64) []float64 { return slices.Concat(slices.Repeat([][]float64{x}, C)...) }
	for _, m := range one.Members {
		p.Members = append(p.Members, rep(m))
	}
	p.Mean = make([]float64, C*T)
	for i := range p.Mean {
		p.Mean[i] = float64(i/T+1) * one.Mean[i%T]
	}
	p.Q05, p.Q95, p.Variance, p.CV = rep(one.Q05), rep(one.Q95), rep(one.Variance), rep(one.CV)
	return p
}

// TestQualitativeChannels: a panel of 3 channels has a waveform row a
// channel, each with its own mask shaded (grey on its own third, white on
// the others), a members' heatmap a channel, and summary strips of 3 rows
// labelled by the channel names.
func TestQualitativeChannels(t *testing.T) {
	const C, T = 3, 150
	p := channelPanel(C, T)
	_, img := renderQual(t, p)
	f, mains, _ := qualRows(t, p)
	// 3 waveforms, 3 member heatmaps, mean, quantiles, variance, CV.
	if len(f.rows) != 10 {
		t.Fatalf("%d rows, want 10", len(f.rows))
	}
	white, grey := [4]int{255, 255, 255, 255}, rgba8(maskGrey)
	for c := range C {
		r := f.rows[c]
		if want := []string{"A", "B", "C"}[c] + " (p.u.)"; r.main.Y.Label.Text != want {
			t.Errorf("waveform row %d labelled %q, want %q", c, r.main.Y.Label.Text, want)
		}
		if (r.legend != nil) != (c == 0) || (r.main.Title.Text != "") != (c == 0) {
			t.Errorf("waveform row %d: legend %v title %q; want both on the first row only", c, r.legend != nil, r.main.Title.Text)
		}
		m := newMapper(r.main, mains[c], QualitativeHeight)
		// The time axis is T samples long, not C T.
		if r.main.X.Min != -0.5 || r.main.X.Max != T-0.5 {
			t.Errorf("row %d: x range [%g, %g], want [-0.5, %g]", c, r.main.X.Min, r.main.X.Max, T-0.5)
		}
		for third := range C {
			want := white
			if third == c {
				want = grey
			}
			for _, i := range []int{third*T/C + 5, third*T/C + T/(2*C), (third+1)*T/C - 5} {
				pt := m.at(float64(i), 0.5)
				if got := rgba8(img.At(pt.X, pt.Y)); !near(got, want, 0) {
					t.Errorf("channel %d, sample %d: pixel %v, want %v (its mask is on third %d)", c, i, got, want, c)
				}
			}
		}
	}
	for c := range C {
		if want := "member " + []string{"A", "B", "C"}[c]; f.rows[C+c].main.Y.Label.Text != want {
			t.Errorf("row %d labelled %q, want %q", C+c, f.rows[C+c].main.Y.Label.Text, want)
		}
	}
	// The mean strip: 3 rows, A on top; channel c's values are (c+1)
	// times the ramp on one shared scale, so the bottom row (C) is the
	// brightest at the right end and the top (A) the darkest.
	mean := f.rows[2*C]
	if mean.main.Y.Label.Text != "mean" || mean.main.Y.Min != -0.5 || mean.main.Y.Max != C-0.5 {
		t.Fatalf("mean strip %q over y [%g, %g], want 3 rows", mean.main.Y.Label.Text, mean.main.Y.Min, mean.main.Y.Max)
	}
	m := newMapper(mean.main, mains[2*C], QualitativeHeight)
	lum := func(pt image.Point) int {
		c := rgba8(img.At(pt.X, pt.Y))
		return c[0] + c[1] + c[2]
	}
	// Row c is drawn at y = C-1-c; the colours of the right end rise with c.
	prev := -1
	for c := range C {
		l := lum(m.at(T-3, float64(C-1-c)))
		if l <= prev {
			t.Errorf("mean strip, channel %d at the right end: luminance %d, not above channel %d's %d", c, l, c-1, prev)
		}
		prev = l
	}
	if q := f.rows[2*C+1]; q.main.Y.Max != 2*C-0.5 {
		t.Errorf("quantile strip: y up to %g, want %d rows", q.main.Y.Max, 2*C)
	}
}

// TestQualitativeOneChannelSame: Channels 0 and 1, with or without the
// one name, draw the same bytes.
func TestQualitativeOneChannelSame(t *testing.T) {
	p := testPanel(120, 3200)
	a, _ := renderQual(t, p)
	p.Channels = 1
	b, _ := renderQual(t, p)
	p.ChannelNames = []string{"A"}
	c, _ := renderQual(t, p)
	if !bytes.Equal(a, b) || !bytes.Equal(a, c) {
		t.Error("Channels 1 draws other bytes than Channels 0")
	}
}

func TestQualitativeChannelErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(p *Panel)
		want string
	}{
		{"negative", func(p *Panel) { p.Channels = -1 }, "Channels is -1"},
		{"not a multiple", func(p *Panel) { p.Channels = 4 }, "Wave has 30 values: not 4 channels"},
		{"names", func(p *Panel) { p.ChannelNames = []string{"A", "B"} }, "ChannelNames has 2 names"},
		{"short mask", func(p *Panel) { p.Mask = p.Mask[:10] }, "Mask has 10 values, want 30"},
	} {
		p := channelPanel(3, 10)
		tc.edit(&p)
		if err := Qualitative(&bytes.Buffer{}, p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
