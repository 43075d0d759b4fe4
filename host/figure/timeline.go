package figure

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Timeline is a whole recording under one posterior, for TimelinePlot:
// its windows in order, each with its samples and the run's answer.
type Timeline struct {
	// Title is the first title line, e.g. "rec-demo, Deep ensemble".
	Title string
	// Fs is the windows' sampling rate, Hz (> 0).
	Fs float64
	// Channels is C (0 or 1: one); every window's Wave is C rows of T
	// samples, channel-major.
	Channels int
	// ChannelNames label the channels (nil: ch0..ch<C-1>).
	ChannelNames []string
	// Windows are the recording's windows, by start time.
	Windows []TimelineWindow
	// Classes, if not nil, is the run's class list: a class's colour is
	// ClassColour of its index there, as in report.html, so that a class
	// has one colour in every figure and page of every run. A class not
	// in it (or every class, when nil) takes the next colours after the
	// list's in the order it first appears.
	Classes []string
}

// TimelineWindow is one window of a Timeline.
type TimelineWindow struct {
	// Start is the window's first sample, s from the recording's start.
	Start float64
	// Wave is the window's samples, per-unit, C x T channel-major; T is
	// the same for every window.
	Wave []float64
	// Class is the predicted class; Prob its posterior predictive
	// probability, in [0, 1].
	Class string
	Prob  float64
	// MI is the mutual information between the prediction and the draw,
	// nats (>= 0); Agreement the share of draws whose own argmax is
	// Class, in [0, 1].
	MI, Agreement float64
}

// TimelineWidth is the width of a timeline figure; its height is
// TimelineHeight(C).
const TimelineWidth = 10 * vg.Inch

// TimelineHeight is the height of the timeline figure of C channels:
// 1.7 in a channel and 3 in for the probability and uncertainty rows,
// the title and the time axis.
func TimelineHeight(C int) vg.Length {
	return vg.Length(max(C, 1))*vg.Inch*17/10 + 3*vg.Inch
}

// classColours are the classes' colours (ClassColour): Okabe and Ito's
// seven colours (black left out, it is the waveform's), then five of Paul
// Tol's muted scheme, then four more; more classes repeat them (the legend
// says which is which).
var classColours = []color.NRGBA{
	{0xe6, 0x9f, 0x00, 0xff}, {0x56, 0xb4, 0xe9, 0xff}, {0x00, 0x9e, 0x73, 0xff}, {0xf0, 0xe4, 0x42, 0xff},
	{0x00, 0x72, 0xb2, 0xff}, {0xd5, 0x5e, 0x00, 0xff}, {0xcc, 0x79, 0xa7, 0xff},
	{0xcc, 0x66, 0x77, 0xff}, {0x33, 0x22, 0x88, 0xff}, {0x99, 0x99, 0x33, 0xff}, {0x88, 0x22, 0x55, 0xff}, {0x44, 0xaa, 0x99, 0xff},
	{0x8c, 0x56, 0x4b, 0xff}, {0x7f, 0x7f, 0x7f, 0xff}, {0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

// ClassColour is the colour of class i of a run's class list, in every
// figure and in report.html.
func ClassColour(i int) color.NRGBA { return classColours[i%len(classColours)] }

// ClassColourHex is ClassColour as #rrggbb.
func ClassColourHex(i int) string {
	c := ClassColour(i)
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}

// tint is c blended with white: (1 - a) white + a c, the shade of a
// window behind the waveform.
func tint(c color.NRGBA, a float64) color.NRGBA {
	f := func(v uint8) uint8 { return uint8(math.Round(255 - a*(255-float64(v)))) }
	return color.NRGBA{R: f(c.R), G: f(c.G), B: f(c.B), A: 0xff}
}

// timelineTint is the weight of a class colour in a window's shade.
const timelineTint = 0.35

// TimelinePlot writes the timeline of a recording to w as a PNG
// TimelineWidth x TimelineHeight(C) at 150 dpi. Its rows share the time
// axis, seconds from the recording's start:
//
//   - the waveform, a row a channel (the rows share the amplitude
//     range), each window's span [Start, Start + T/Fs) shaded in a tint
//     of its predicted class's colour (where windows overlap, the later
//     one's from its start), under a two-line title: Title, then the
//     number of windows;
//   - the predicted class's probability, a bar a window in the class's
//     colour over the window's span, and the agreement of the draws, a
//     black dot at the span's middle, on [0, 1];
//   - the mutual information, nats, a grey bar a window, on [0, 1.08
//     max MI] (on [0, 1] when every MI is 0).
//
// The legend, right of the rows inside the image, names the classes
// present in the order they first appear, each with its colour.
//
// Bad input (no windows, Fs not > 0, a Wave empty, of another length
// than the first, not C rows, or not finite, a Start not finite or
// before the previous one, a Class empty, Prob or Agreement outside
// [0, 1], MI negative or not finite) is an error naming the window, and
// nothing is written.
func TimelinePlot(w io.Writer, t Timeline) error {
	f, err := newTimelineFigure(t)
	if err != nil {
		return err
	}
	return render(w, TimelineWidth, TimelineHeight(max(t.Channels, 1)), f.draw)
}

// TimelinePlotFile writes TimelinePlot's PNG to path, atomically.
func TimelinePlotFile(path string, t Timeline) error {
	return writeFile(path, func(w io.Writer) error { return TimelinePlot(w, t) })
}

// validate checks t (see TimelinePlot).
func (t *Timeline) validate() error {
	if len(t.Windows) == 0 {
		return fmt.Errorf("no Windows: a timeline needs at least one window")
	}
	if !(t.Fs > 0) || math.IsInf(t.Fs, 0) {
		return fmt.Errorf("Fs is %v: want the windows' sampling rate > 0 in Hz", t.Fs)
	}
	if t.Channels < 0 {
		return fmt.Errorf("Channels is %d: want the number of channels, or 0 for one", t.Channels)
	}
	C := max(t.Channels, 1)
	if t.ChannelNames != nil && len(t.ChannelNames) != C {
		return fmt.Errorf("ChannelNames has %d names %q for %d channels", len(t.ChannelNames), t.ChannelNames, C)
	}
	n := len(t.Windows[0].Wave)
	if n == 0 || n%C != 0 {
		return fmt.Errorf("Windows[0].Wave has %d values: want %d channels of equal length, at least one sample", n, C)
	}
	for i, w := range t.Windows {
		if err := checkSeries(fmt.Sprintf("Windows[%d].Wave", i), w.Wave, n, "the length of Windows[0].Wave"); err != nil {
			return err
		}
		if math.IsNaN(w.Start) || math.IsInf(w.Start, 0) {
			return fmt.Errorf("Windows[%d].Start is %v: want a finite time in s", i, w.Start)
		}
		if i > 0 && w.Start < t.Windows[i-1].Start {
			return fmt.Errorf("Windows[%d].Start is %v s, before Windows[%d]'s %v s: want the windows in time order", i, w.Start, i-1, t.Windows[i-1].Start)
		}
		if w.Class == "" {
			return fmt.Errorf("Windows[%d].Class is empty: want the predicted class's name", i)
		}
		if !(w.Prob >= 0 && w.Prob <= 1) {
			return fmt.Errorf("Windows[%d].Prob is %v: want a probability in [0, 1]", i, w.Prob)
		}
		if !(w.Agreement >= 0 && w.Agreement <= 1) {
			return fmt.Errorf("Windows[%d].Agreement is %v: want a share of draws in [0, 1]", i, w.Agreement)
		}
		if !(w.MI >= 0) || math.IsInf(w.MI, 0) {
			return fmt.Errorf("Windows[%d].MI is %v: want a mutual information >= 0 in nats", i, w.MI)
		}
	}
	lo, hi := minMax(wavesOf(t.Windows)...)
	if math.IsInf(1.2*(hi-lo), 0) {
		return fmt.Errorf("the waves span [%g, %g]: too wide a range to plot", lo, hi)
	}
	return nil
}

// wavesOf is the windows' waves.
func wavesOf(ws []TimelineWindow) [][]float64 {
	out := make([][]float64, len(ws))
	for i, w := range ws {
		out[i] = w.Wave
	}
	return out
}

// timelineFigure is a Timeline's plots, ready to lay out and draw.
type timelineFigure struct {
	rows    []*plot.Plot
	weights []float64
	legend  plot.Legend
	names   []string // the legend's entries
	classes []string // the classes present, in order of first appearance
	colours map[string]color.NRGBA
	spans   [][2]float64 // each window's [start, end) in s, as shaded
}

// Layout constants of the timeline.
const (
	timelineMargin = vg.Inch / 8
	timelineAxis   = vg.Inch * 2 / 5 // extra height of the bottom row (time axis)
	timelineGap    = vg.Inch / 10    // between the rows and the legend
)

// newTimelineFigure validates t and builds its plots.
func newTimelineFigure(t Timeline) (*timelineFigure, error) {
	if err := t.validate(); err != nil {
		if t.Title != "" {
			return nil, fmt.Errorf("figure: timeline %q: %w", t.Title, err)
		}
		return nil, fmt.Errorf("figure: timeline: %w", err)
	}
	C := max(t.Channels, 1)
	names := shortLabels(t.ChannelNames)
	if names == nil {
		for c := range C {
			names = append(names, fmt.Sprintf("ch%d", c))
		}
	}
	T := len(t.Windows[0].Wave) / C
	dur := float64(T) / t.Fs
	f := &timelineFigure{colours: map[string]color.NRGBA{}}
	extra := len(t.Classes) // the next colour of a class not in the list
	for i, w := range t.Windows {
		if _, ok := f.colours[w.Class]; !ok {
			if k := slices.Index(t.Classes, w.Class); k >= 0 {
				f.colours[w.Class] = ClassColour(k)
			} else {
				f.colours[w.Class] = ClassColour(extra)
				extra++
			}
			f.classes = append(f.classes, w.Class)
		}
		end := w.Start + dur
		if i+1 < len(t.Windows) {
			end = min(end, t.Windows[i+1].Start)
		}
		f.spans = append(f.spans, [2]float64{w.Start, end})
	}
	if f.spans[len(f.spans)-1][1] == f.spans[len(f.spans)-1][0] {
		f.spans[len(f.spans)-1][1] += dur
	}
	xmin, xmax := t.Windows[0].Start, t.Windows[len(t.Windows)-1].Start+dur

	lo, hi := minMax(wavesOf(t.Windows)...)
	pad := 0.08 * (hi - lo)
	if pad == 0 {
		pad = 1
	}
	for c := range C {
		pl := newPlot()
		if c == 0 {
			pl.Title.Text = fmt.Sprintf("%s\n%d windows, shaded by predicted class", t.Title, len(t.Windows))
		}
		pl.Y.Label.Text = names[c] + " (p.u.)"
		pl.Y.Min, pl.Y.Max = lo-pad, hi+pad
		pl.Add(&windowShade{f: f, windows: t.Windows})
		for _, w := range t.Windows {
			pts := make(plotter.XYs, T)
			for i, v := range w.Wave[c*T : (c+1)*T] {
				pts[i] = plotter.XY{X: w.Start + float64(i)/t.Fs, Y: v}
			}
			pl.Add(&plotter.Line{XYs: pts, LineStyle: draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)}})
		}
		f.rows = append(f.rows, pl)
		f.weights = append(f.weights, 1.7)
	}
	prob := newPlot()
	prob.Y.Label.Text = "p (bar), agree (•)"
	prob.Y.Min, prob.Y.Max = 0, 1
	prob.Add(plotter.NewGrid())
	prob.Add(&windowBars{f: f, windows: t.Windows, value: func(w TimelineWindow) float64 { return w.Prob }, dots: true})
	f.rows, f.weights = append(f.rows, prob), append(f.weights, 1.1)

	mi := newPlot()
	mi.Y.Label.Text = "MI (nats)"
	m := 0.0
	for _, w := range t.Windows {
		m = max(m, w.MI)
	}
	mi.Y.Min, mi.Y.Max = 0, 1
	if m > 0 {
		mi.Y.Max = 1.08 * m
	}
	mi.Add(&windowBars{f: f, windows: t.Windows, value: func(w TimelineWindow) float64 { return w.MI }, grey: true})
	f.rows, f.weights = append(f.rows, mi), append(f.weights, 0.9)

	for i, pl := range f.rows {
		pl.X.Min, pl.X.Max = xmin, xmax
		if i < len(f.rows)-1 {
			pl.X.Tick.Marker = blankTicks{}
		} else {
			pl.X.Label.Text = "time in the recording (s)"
		}
	}
	f.legend = newLegend()
	f.legend.Top, f.legend.Left = true, true
	text := TimelineWidth*3/10 - f.legend.ThumbnailWidth - f.legend.TextStyle.Width(" ")
	for _, c := range f.classes {
		n := fitText(f.legend.TextStyle, c, text)
		f.names = append(f.names, n)
		f.legend.Add(n, rectThumb{Fill: f.colours[c], Line: outline})
	}
	return f, nil
}

// windowShade fills each window's span, over the data area's height, in
// a tint of its class's colour.
type windowShade struct {
	f       *timelineFigure
	windows []TimelineWindow
}

// Plot fills the spans.
func (s *windowShade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for i, w := range s.windows {
		x0, x1 := trX(s.f.spans[i][0]), trX(s.f.spans[i][1])
		c.FillPolygon(tint(s.f.colours[w.Class], timelineTint), []vg.Point{
			{X: x0, Y: c.Min.Y}, {X: x0, Y: c.Max.Y}, {X: x1, Y: c.Max.Y}, {X: x1, Y: c.Min.Y},
		})
	}
}

// windowBars draws a bar a window over its span, from 0 to value(w), in
// its class's colour (grey: mid grey), and with dots the agreement as a
// black dot at the span's middle.
type windowBars struct {
	f       *timelineFigure
	windows []TimelineWindow
	value   func(TimelineWindow) float64
	grey    bool
	dots    bool
}

// barGrey is the MI bars' colour.
var barGrey = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xff}

// Plot draws the bars and dots.
func (b *windowBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, w := range b.windows {
		x0, x1 := trX(b.f.spans[i][0]), trX(b.f.spans[i][1])
		fill := b.f.colours[w.Class]
		if b.grey {
			fill = barGrey
		}
		pts := []vg.Point{{X: x0, Y: trY(0)}, {X: x0, Y: trY(b.value(w))}, {X: x1, Y: trY(b.value(w))}, {X: x1, Y: trY(0)}}
		c.FillPolygon(fill, pts)
		c.StrokeLines(draw.LineStyle{Color: color.White, Width: vg.Points(0.5)}, pts[:2], pts[2:])
		if b.dots {
			c.DrawGlyph(draw.GlyphStyle{Color: color.Black, Radius: vg.Points(1.8), Shape: draw.CircleGlyph{}},
				vg.Point{X: (x0 + x1) / 2, Y: trY(w.Agreement)})
		}
	}
}

// layout places the rows on dc: a margin, the legend's column at the
// right as wide as its widest entry, the rows stacked by weight (the
// bottom one taller by the time axis) with their data areas' left and
// right edges aligned. It returns each row's canvas and the legend's
// (from the top of the first row's data area to the bottom of the
// last's).
func (f *timelineFigure) layout(dc draw.Canvas) (mains []draw.Canvas, legend draw.Canvas) {
	inner := draw.Crop(dc, timelineMargin, -timelineMargin, timelineMargin, -timelineMargin)
	lw := legendWidth(f.legend, f.names)
	total := 0.0
	for _, w := range f.weights {
		total += w
	}
	free := inner.Max.Y - inner.Min.Y - timelineAxis
	top := inner.Max.Y
	mains = make([]draw.Canvas, len(f.rows))
	for i, w := range f.weights {
		h := vg.Length(w/total) * free
		if i == len(f.rows)-1 {
			h += timelineAxis
		}
		c := inner
		c.Min.Y, c.Max.Y = top-h, top
		c.Max.X -= lw + timelineGap
		top -= h
		mains[i] = c
	}
	alignX(f.rows, mains)
	legend = inner
	legend.Min.X = inner.Max.X - lw
	legend.Max.Y = f.rows[0].DataCanvas(mains[0]).Max.Y
	legend.Min.Y = f.rows[len(f.rows)-1].DataCanvas(mains[len(f.rows)-1]).Min.Y
	return mains, legend
}

// draw lays the figure out on dc and draws it.
func (f *timelineFigure) draw(dc draw.Canvas) {
	mains, legend := f.layout(dc)
	for i, p := range f.rows {
		p.Draw(mains[i])
	}
	f.legend.Draw(legend)
}
