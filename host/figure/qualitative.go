package figure

import (
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Labels are the classes of a record, for the title of its panel.
type Labels struct {
	// Class is the true class ("" when unknown, e.g. a real recording).
	Class string
	// Predicted is the predicted class: the argmax of the posterior
	// predictive mean ("" for none).
	Predicted string
	// Prob is the posterior predictive probability of Predicted, in
	// [0, 1]; ignored when Predicted is "".
	Prob float64
}

// Panel is one record's explanation under one (posterior, explainer), for
// Qualitative. Wave is required; every other series is optional (nil
// leaves its row out), and a series that is there has the length of Wave.
// Q05 and Q95 come together or not at all.
type Panel struct {
	// Title is the first title line, e.g. "record 17, ensemble, occlusion".
	Title string
	// Labels make the second title line: the class, the predicted class
	// and its probability.
	Labels Labels
	// Wave is the waveform, in per-unit amplitude.
	Wave []float64
	// Mask is the ground-truth disturbance mask (nil for none: real
	// recordings have none); true samples are shaded grey.
	Mask []bool
	// Members are the S draws' relevance maps, Members[s][i].
	Members [][]float64
	// Mean, Q05, Q95, Variance and CV are the summary maps: the mean, the
	// 5 % and 95 % quantiles, the variance and the coefficient of
	// variation over the S maps, one value a sample.
	Mean, Q05, Q95, Variance, CV []float64
	// Fs is the sampling rate in Hz; the time axis is in ms when Fs > 0,
	// in samples when Fs == 0.
	Fs float64
	// F0 is the system frequency in Hz (50 or 60); with Fs > 0 the time
	// axis has a tick every cycle, 1000/F0 ms (Fs/F0 samples: 64 at
	// 3200 Hz and 50 Hz). 0: plot's default ticks.
	F0 float64
	// Channels is C, the channels of the record (0 or 1: one channel).
	// With C > 1, Wave, Mask and every map are C rows of T values,
	// channel-major (x[c*T+t]), and the time axis is T samples long.
	Channels int
	// ChannelNames label the C channels (nil: ch0..ch<C-1>).
	ChannelNames []string
}

// channels is C and the channel names of p.
func (p *Panel) channels() (int, []string) {
	C := max(p.Channels, 1)
	if p.ChannelNames != nil {
		return C, shortLabels(p.ChannelNames)
	}
	names := make([]string, C)
	for c := range names {
		names[c] = fmt.Sprintf("ch%d", c)
	}
	return C, names
}

// Qualitative writes the qualitative figure of one record (the paper's
// fig:qual_synthetic and fig:qual_real) to w as an 8 x 10 in PNG at 150
// dpi. Its rows share the time axis (ms when Fs > 0, else samples; only
// the bottom row labels it):
//
//   - the waveform (per-unit amplitude) with the ground-truth mask shaded
//     grey, under a two-line title: Title, then the class, the predicted
//     class and its probability;
//   - the S member maps as a heatmap, member 1 on top;
//   - the mean map; the 5 % and 95 % quantile maps (95 % on top); the
//     variance; the CV: each a strip.
//
// A record of C > 1 channels (Panel.Channels) has one waveform row per
// channel, each with its own mask shaded and its channel's name on the y
// axis (the rows share the amplitude range; the title and legend are on
// the first); the members as one heatmap a channel; and each summary
// strip as C rows, one a channel (the quantile strip 2C: each channel's
// 95 % over its 5 %), labelled by the channel names. The members of all
// channels share one scale, and a summary's C rows share theirs, so that
// the strips compare the channels' relevance.
//
// Every heatmap is cividis, min-max normalised for display: a strip's
// least value is the darkest colour and its greatest the lightest. The
// members share one scale (min and max over all S maps), so do the two
// quantile maps (so that q05 <= q95 reads as darker-or-equal); each other
// strip has its own, and states it: each strip's colour bar, on the
// right, prints the strip's least and greatest value at its ends, with
// as many digits as tell them apart. A strip whose values are constant,
// max - min <= 1e-6 max(|min|, |max|) (the maps' float32 rounding, see
// flatRel), is drawn in cividis's middle colour throughout, its colour
// bar that one colour labelled "constant" with the value: never a
// full-contrast stripe of rounding noise.
//
// With Fs > 0 and F0 > 0 the time axis has a tick every cycle (every
// Fs/F0 samples), labelled in ms to 0.1 ms (every few cycles when there are many).
//
// Bad input (Wave empty, a length that differs from Wave's, NaN or Inf, a
// probability outside [0, 1], Fs negative or not finite, Q05 without Q95)
// is an error naming the series and index, and nothing is written; so are
// Channels < 0, a Wave that is not Channels rows of equal length, and
// ChannelNames not one a channel.
func Qualitative(w io.Writer, p Panel) error {
	f, err := newQualFigure(p)
	if err != nil {
		return err
	}
	return render(w, QualitativeWidth, QualitativeHeight, f.draw)
}

// QualitativeFile writes Qualitative's PNG to path, atomically.
func QualitativeFile(path string, p Panel) error {
	return writeFile(path, func(w io.Writer) error { return Qualitative(w, p) })
}

// validate checks p (see Qualitative).
func (p *Panel) validate() error {
	n := len(p.Wave)
	if n == 0 {
		return fmt.Errorf("Wave is empty: a panel needs the waveform")
	}
	if err := checkFinite("Wave", p.Wave); err != nil {
		return err
	}
	if p.Channels < 0 {
		return fmt.Errorf("Channels is %d: want the number of channels, or 0 for one", p.Channels)
	}
	if C := max(p.Channels, 1); n%C != 0 {
		return fmt.Errorf("Wave has %d values: not %d channels of equal length", n, C)
	}
	if p.ChannelNames != nil && len(p.ChannelNames) != max(p.Channels, 1) {
		return fmt.Errorf("ChannelNames has %d names %q for %d channels", len(p.ChannelNames), p.ChannelNames, max(p.Channels, 1))
	}
	if p.Mask != nil && len(p.Mask) != n {
		return fmt.Errorf("Mask has %d values, want %d (the length of Wave) or none", len(p.Mask), n)
	}
	const wantN = "the length of Wave"
	for s, m := range p.Members {
		if err := checkSeries(fmt.Sprintf("Members[%d]", s), m, n, wantN); err != nil {
			return err
		}
	}
	if (p.Q05 == nil) != (p.Q95 == nil) {
		return fmt.Errorf("Q05 and Q95 must both be given or both be nil (Q05 has %d values, Q95 %d)", len(p.Q05), len(p.Q95))
	}
	for _, s := range []struct {
		name string
		x    []float64
	}{{"Mean", p.Mean}, {"Q05", p.Q05}, {"Q95", p.Q95}, {"Variance", p.Variance}, {"CV", p.CV}} {
		if s.x == nil {
			continue
		}
		if err := checkSeries(s.name, s.x, n, wantN); err != nil {
			return err
		}
	}
	if math.IsNaN(p.Fs) || math.IsInf(p.Fs, 0) || p.Fs < 0 {
		return fmt.Errorf("Fs is %v: want a sampling rate > 0 in Hz, or 0 for a time axis in samples", p.Fs)
	}
	if err := checkF0(p.F0, p.Fs, n/max(p.Channels, 1)); err != nil {
		return err
	}
	if p.Fs > 0 && math.IsInf(float64(n)*1000/p.Fs, 0) {
		return fmt.Errorf("Fs is %v Hz: so low that %d samples overflow the time axis in ms", p.Fs, n)
	}
	if lo, hi := minMax(p.Wave); math.IsInf(1.2*(hi-lo), 0) {
		return fmt.Errorf("Wave spans [%g, %g]: too wide a range to plot", lo, hi)
	}
	if p.Labels.Predicted != "" && !(p.Labels.Prob >= 0 && p.Labels.Prob <= 1) {
		return fmt.Errorf("Labels.Prob is %v: want a probability in [0, 1]", p.Labels.Prob)
	}
	return nil
}

// qualRow is one row of the qualitative figure: a plot, and beside it on
// the right a colour bar (strips) or a legend (the waveform).
type qualRow struct {
	main   *plot.Plot
	bar    *plot.Plot   // nil for the waveform
	legend *plot.Legend // the waveform's legend, nil for strips
	weight float64      // share of the figure's height
}

// qualFigure is a Panel's plots, ready to lay out and draw.
type qualFigure struct {
	rows []qualRow
}

// Layout constants of the qualitative figure.
const (
	qualMargin   = vg.Inch / 8       // around the figure
	qualSide     = vg.Inch * 11 / 10 // the right column: colour bars, legend
	qualBarWidth = vg.Inch / 6       // a colour bar's coloured width
	qualAxis     = vg.Inch * 2 / 5   // extra height of the bottom row (time axis)
	// A strip image repeats each value about stripPixX / n times across
	// and each of its R rows about stripPixY / R times down (at least
	// once), so that the canvas's bilinear scaling blends neighbouring
	// samples and rows only near their boundary.
	stripPixX = 2048
	stripPixY = 256
)

// newQualFigure validates p and builds its plots.
func newQualFigure(p Panel) (*qualFigure, error) {
	if err := p.validate(); err != nil {
		if p.Title != "" {
			return nil, fmt.Errorf("figure: qualitative panel %q: %w", p.Title, err)
		}
		return nil, fmt.Errorf("figure: qualitative panel: %w", err)
	}
	C, chNames := p.channels()
	n := len(p.Wave) / C // T: samples a channel
	dt, xlabel := 1.0, "sample"
	if p.Fs > 0 {
		dt, xlabel = 1000/p.Fs, "time (ms)"
	}
	// Sample i is drawn over [i dt - dt/2, i dt + dt/2].
	xmin, xmax := -dt/2, (float64(n)-0.5)*dt

	f := &qualFigure{}
	if C > 1 {
		f.rows = channelRows(p, C, n, chNames, dt, xmin, xmax)
	} else {
		f.rows = oneChannelRows(p, dt, xmin, xmax)
	}
	for i := range f.rows {
		m := f.rows[i].main
		m.X.Min, m.X.Max = xmin, xmax
		last := i == len(f.rows)-1
		switch {
		case p.Fs > 0 && p.F0 > 0:
			m.X.Tick.Marker = cycleTicks{period: 1000 / p.F0, labels: last}
		case !last:
			m.X.Tick.Marker = blankTicks{}
		}
		if last {
			m.X.Label.Text = xlabel
			if p.Fs > 0 && p.F0 > 0 {
				m.X.Label.Text = fmt.Sprintf("time (ms), a tick a cycle (%s ms at %s Hz)", formatValue(1000/p.F0), formatValue(p.F0))
			}
		}
	}
	return f, nil
}

// oneChannelRows are the rows of a one-channel panel.
func oneChannelRows(p Panel, dt, xmin, xmax float64) []qualRow {
	lo, hi := minMax(p.Wave)
	rows := []qualRow{waveRow(panelTitle(p), p.Wave, p.Mask, "amplitude (p.u.)", lo, hi, dt, 2.6, true)}
	if len(p.Members) > 0 {
		names := make([]string, len(p.Members))
		for s := range names {
			names[s] = fmt.Sprint(s + 1)
		}
		rows = append(rows, stripRow("member", names, p.Members, "min–max over S", xmin, xmax, 2))
	}
	if p.Mean != nil {
		rows = append(rows, stripRow("mean", nil, [][]float64{p.Mean}, "min–max scaled", xmin, xmax, 1))
	}
	if p.Q05 != nil {
		rows = append(rows, stripRow("quantile", []string{"95%", "5%"}, [][]float64{p.Q95, p.Q05}, "min–max of both", xmin, xmax, 1.3))
	}
	if p.Variance != nil {
		rows = append(rows, stripRow("variance", nil, [][]float64{p.Variance}, "min–max scaled", xmin, xmax, 1))
	}
	if p.CV != nil {
		rows = append(rows, stripRow("CV", nil, [][]float64{p.CV}, "min–max scaled", xmin, xmax, 1))
	}
	return rows
}

// channelRows are the rows of a panel of C > 1 channels of T samples:
// a waveform row a channel, then the members' heatmap a channel, then the
// summaries, a row a channel each.
func channelRows(p Panel, C, T int, names []string, dt, xmin, xmax float64) []qualRow {
	row := func(x []float64, c int) []float64 { return x[c*T : (c+1)*T] }
	lo, hi := minMax(p.Wave)
	var rows []qualRow
	for c := range C {
		var mask []bool
		if p.Mask != nil {
			mask = p.Mask[c*T : (c+1)*T]
		}
		title := ""
		if c == 0 {
			title = panelTitle(p)
		}
		weight := 1.6
		if c == 0 {
			weight += 0.5 // the title
		}
		rows = append(rows, waveRow(title, row(p.Wave, c), mask, names[c]+" (p.u.)", lo, hi, dt, weight, c == 0))
	}
	if len(p.Members) > 0 {
		mlo, mhi := minMax(p.Members...)
		members := make([]string, len(p.Members))
		for s := range members {
			members[s] = fmt.Sprint(s + 1)
		}
		for c := range C {
			ms := make([][]float64, len(p.Members))
			for s, m := range p.Members {
				ms[s] = row(m, c)
			}
			rows = append(rows, stripRowScaled("member "+names[c], members, ms, "min–max\nover S, C", mlo, mhi, xmin, xmax, 1.5))
		}
	}
	// perChannel is a summary's C rows, top channel first.
	perChannel := func(x []float64) [][]float64 {
		out := make([][]float64, C)
		for c := range C {
			out[c] = row(x, c)
		}
		return out
	}
	h := 0.5 * float64(C) // a summary strip's weight
	if p.Mean != nil {
		rows = append(rows, stripRow("mean", names, perChannel(p.Mean), "min–max over C", xmin, xmax, h))
	}
	if p.Q05 != nil {
		var qs [][]float64
		var qn []string
		for c := range C {
			qs = append(qs, row(p.Q95, c), row(p.Q05, c))
			qn = append(qn, names[c]+" 95%", names[c]+" 5%")
		}
		rows = append(rows, stripRow("quantile", qn, qs, "min–max of all", xmin, xmax, 1.3*h))
	}
	if p.Variance != nil {
		rows = append(rows, stripRow("variance", names, perChannel(p.Variance), "min–max over C", xmin, xmax, h))
	}
	if p.CV != nil {
		rows = append(rows, stripRow("CV", names, perChannel(p.CV), "min–max over C", xmin, xmax, h))
	}
	return rows
}

// panelTitle is the waveform's two-line title: Title, then the labels.
func panelTitle(p Panel) string {
	t := p.Title
	if l := labelsLine(p.Labels); l != "" {
		if t != "" {
			t += "\n"
		}
		t += l
	}
	return t
}

// waveRow is a waveform (amplitudes in [lo, hi]) with its mask shaded
// behind it, titled title, its y axis labelled ylabel; with legend, the
// legend beside it.
func waveRow(title string, wave []float64, mask []bool, ylabel string, lo, hi, dt, weight float64, legend bool) qualRow {
	pl := newPlot()
	pl.Title.Text = title
	pl.Y.Label.Text = ylabel
	pad := 0.08 * (hi - lo)
	if pad == 0 {
		pad = 1
	}
	pl.Y.Min, pl.Y.Max = lo-pad, hi+pad
	leg := newLegend()
	leg.Top = true
	leg.Left = true
	leg.ThumbnailWidth = vg.Points(14)
	if mask != nil {
		sh := &maskShade{mask: mask, dt: dt}
		pl.Add(sh)
		leg.Add("ground truth", rectThumb{Fill: maskGrey})
	}
	pts := make(plotter.XYs, len(wave))
	for i, v := range wave {
		pts[i] = plotter.XY{X: float64(i) * dt, Y: v}
	}
	line := &plotter.Line{XYs: pts, LineStyle: draw.LineStyle{Color: color.Black, Width: vg.Points(0.8)}}
	pl.Add(line)
	leg.Add("waveform", line)
	r := qualRow{main: pl, weight: weight}
	if legend {
		r.legend = &leg
	}
	return r
}

// labelsLine is the title's second line: "class: sag · predicted: sag
// (p = 0.97)", or the part of it that Labels has.
func labelsLine(l Labels) string {
	var parts []string
	if l.Class != "" {
		parts = append(parts, "class: "+l.Class)
	}
	if l.Predicted != "" {
		parts = append(parts, fmt.Sprintf("predicted: %s (p = %.2f)", l.Predicted, l.Prob))
	}
	return strings.Join(parts, " · ")
}

// maskShade fills the sample intervals of the true runs of a mask, over
// the whole height of the data area, in maskGrey.
type maskShade struct {
	mask []bool
	dt   float64
}

// Plot fills each run [a, b] of true samples over [a dt - dt/2, b dt + dt/2].
func (m *maskShade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for a := 0; a < len(m.mask); a++ {
		if !m.mask[a] {
			continue
		}
		b := a
		for b+1 < len(m.mask) && m.mask[b+1] {
			b++
		}
		x0, x1 := trX((float64(a)-0.5)*m.dt), trX((float64(b)+0.5)*m.dt)
		c.FillPolygon(maskGrey, []vg.Point{
			{X: x0, Y: c.Min.Y}, {X: x0, Y: c.Max.Y}, {X: x1, Y: c.Max.Y}, {X: x1, Y: c.Min.Y},
		})
		a = b
	}
}

// stripRow is a heatmap of rows (top row first) over [xmin, xmax], one
// column a sample, min-max normalised over all its rows together, with a
// colour bar labelled barLabel. names label the rows on the y axis (every
// k-th when there are many); nil names means one row, labelled by the
// axis label name instead.
func stripRow(name string, names []string, rows [][]float64, barLabel string, xmin, xmax, weight float64) qualRow {
	lo, hi := minMax(rows...)
	return stripRowScaled(name, names, rows, barLabel, lo, hi, xmin, xmax, weight)
}

// stripRowScaled is stripRow normalised over [lo, hi] (which holds every
// value of rows) instead of its own rows' range.
func stripRowScaled(name string, names []string, rows [][]float64, barLabel string, lo, hi, xmin, xmax, weight float64) qualRow {
	img := stripImage(rows, lo, hi)
	r := float64(len(rows))
	pl := newPlot()
	pl.Add(plotter.NewImage(img, xmin, -0.5, xmax, r-0.5))
	pl.Y.Min, pl.Y.Max = -0.5, r-0.5
	if names == nil {
		pl.Y.Label.Text = name
		pl.Y.Tick.Marker = plot.ConstantTicks(nil)
	} else {
		pl.Y.Label.Text = name
		step := (len(names) + 7) / 8
		var ticks []plot.Tick
		for i, s := range names {
			// Row i (from the top) is drawn at y = r - 1 - i.
			t := plot.Tick{Value: r - 1 - float64(i)}
			if i%step == 0 {
				t.Label = s
			}
			ticks = append(ticks, t)
		}
		pl.Y.Tick.Marker = plot.ConstantTicks(ticks)
	}

	bar := newPlot()
	if isFlat(lo, hi) {
		// One colour, the strip's, and its value.
		bar.Add(plotter.NewImage(stripImage([][]float64{{lo}}, lo, hi), 0, 0, 1, 1))
		bar.Y.Label.Text = "constant"
		bar.Y.Tick.Marker = plot.ConstantTicks{{Value: 0.5, Label: formatValue(lo/2 + hi/2)}}
	} else {
		bar.Add(&plotter.ColorBar{ColorMap: NewCividis(), Vertical: true})
		bar.Y.Label.Text = barLabel
		l, h := rangeLabels(lo, hi)
		bar.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: l}, {Value: 1, Label: h}}
	}
	bar.HideX()
	bar.X.Min, bar.X.Max = 0, 1
	bar.Y.Min, bar.Y.Max = 0, 1
	bar.Y.Label.TextStyle.Font.Size = vg.Points(8)
	return qualRow{main: pl, bar: bar, weight: weight}
}

// stripImage is the cividis image of rows (top row first), each value
// normalised as u = (v - lo) / (hi - lo) (0.5 when isFlat(lo, hi): a
// constant map is cividis's middle colour), repeated
// ceil(stripPixX / n) times across and ceil(stripPixY / len(rows)) times
// down.
func stripImage(rows [][]float64, lo, hi float64) *image.NRGBA {
	n := len(rows[0])
	stripRepX := (stripPixX + n - 1) / n
	stripRepY := (stripPixY + len(rows) - 1) / len(rows)
	img := image.NewNRGBA(image.Rect(0, 0, n*stripRepX, len(rows)*stripRepY))
	for r, row := range rows {
		for i, v := range row {
			// Halves, so that neither difference overflows for values
			// near ±MaxFloat64.
			u := 0.5
			if !isFlat(lo, hi) {
				u = min(1, max(0, (v/2-lo/2)/(hi/2-lo/2)))
			}
			cr, cg, cb := cividisRGB(u)
			px := [4]uint8{unit8(cr), unit8(cg), unit8(cb), 0xff}
			for dy := range stripRepY {
				off := img.PixOffset(i*stripRepX, r*stripRepY+dy)
				for dx := range stripRepX {
					copy(img.Pix[off+4*dx:off+4*dx+4], px[:])
				}
			}
		}
	}
	return img
}

// unit8 maps x in [0, 1] to the nearest of 0..255.
func unit8(x float64) uint8 { return uint8(math.Round(x * 0xff)) }

// layout places the rows on dc: a margin, the right column for colour bars
// and the legend, the rows stacked by weight (the bottom one taller by the
// time axis), the data areas' left and right edges aligned, each colour
// bar's height that of its strip's data area. It returns the canvas of
// each row's plot, colour bar and legend (a zero canvas where there is
// none).
func (f *qualFigure) layout(dc draw.Canvas) (mains, bars []draw.Canvas) {
	inner := draw.Crop(dc, qualMargin, -qualMargin, qualMargin, -qualMargin)
	total := 0.0
	for _, r := range f.rows {
		total += r.weight
	}
	free := inner.Max.Y - inner.Min.Y - qualAxis
	mains = make([]draw.Canvas, len(f.rows))
	bars = make([]draw.Canvas, len(f.rows))
	ps := make([]*plot.Plot, len(f.rows))
	top := inner.Max.Y
	for i, r := range f.rows {
		h := vg.Length(r.weight/total) * free
		if i == len(f.rows)-1 {
			h += qualAxis
		}
		c := inner
		c.Min.Y, c.Max.Y = top-h, top
		top -= h
		// A y label is drawn turned: one longer than most of its row's
		// height would squeeze the data area to nothing.
		fitLabel(&r.main.Y.Label.Text, r.main.Y.Label.TextStyle, h*3/4)
		if r.bar != nil {
			fitLabel(&r.bar.Y.Label.Text, r.bar.Y.Label.TextStyle, h*3/4)
		}
		m := c
		m.Max.X -= qualSide
		b := c
		b.Min.X = c.Max.X - qualSide
		mains[i], bars[i], ps[i] = m, b, r.main
	}
	alignX(ps, mains)
	for i, r := range f.rows {
		if r.bar == nil {
			continue
		}
		data := r.main.DataCanvas(mains[i])
		b := alignY(r.bar, bars[i], data)
		// Keep the bar's coloured part qualBarWidth wide, at the right.
		d := r.bar.DataCanvas(b)
		b.Min.X += (d.Max.X - d.Min.X) - qualBarWidth
		bars[i] = b
	}
	return mains, bars
}

// fitLabel cuts *label, ending it with "…", until it is at most max
// long as style draws it.
func fitLabel(label *string, style text.Style, max vg.Length) {
	r := []rune(*label)
	for len(r) > 1 && style.Width(*label) > max {
		r = append(r[:len(r)-2], '…')
		*label = string(r)
	}
}

// draw lays the figure out on dc and draws it.
func (f *qualFigure) draw(dc draw.Canvas) {
	mains, bars := f.layout(dc)
	for i, r := range f.rows {
		r.main.Draw(mains[i])
		if r.bar != nil {
			r.bar.Draw(bars[i])
		}
		if r.legend != nil {
			r.legend.Draw(legendCanvas(r.main.DataCanvas(mains[i]), bars[i]))
		}
	}
}

// legendCanvas is where the waveform's legend goes: the right column
// (side) less a gap, over the height of the waveform's data area.
func legendCanvas(data, side draw.Canvas) draw.Canvas {
	c := side
	c.Min.X += vg.Inch / 10
	c.Min.Y, c.Max.Y = data.Min.Y, data.Max.Y
	return c
}

// checkF0 checks a system frequency f0 for a time axis of n samples at
// fs Hz (see Panel.F0).
func checkF0(f0, fs float64, n int) error {
	if math.IsNaN(f0) || math.IsInf(f0, 0) || f0 < 0 {
		return fmt.Errorf("F0 is %v: want the system frequency > 0 in Hz (50 or 60), or 0 for no cycle ticks", f0)
	}
	if f0 > 0 && fs == 0 {
		return fmt.Errorf("F0 is %v Hz and Fs is 0: cycle ticks need the sampling rate Fs (or F0 = 0)", f0)
	}
	if f0 > 0 && fs/f0 < 2 {
		return fmt.Errorf("F0 is %v Hz at Fs = %v Hz: fewer than 2 samples a cycle; want F0 <= Fs/2", f0, fs)
	}
	return nil
}

// maxCycleTicks bounds the ticks of a cycleTicks axis: beyond it a tick
// marks every few cycles.
const maxCycleTicks = 40

// cycleTicks is a Ticker with a tick at every multiple of period (one
// cycle, in the axis's unit), or every m-th when more than maxCycleTicks
// would fit; with labels, about 10 of them are labelled, at multiples of
// the tick step, else none.
type cycleTicks struct {
	period float64
	labels bool
}

// Ticks returns the ticks in [lo, hi].
func (c cycleTicks) Ticks(lo, hi float64) []plot.Tick {
	k0, k1 := math.Ceil(lo/c.period), math.Floor(hi/c.period)
	n := k1 - k0 + 1
	if !(n >= 1) || n > 1e7 {
		return nil
	}
	m := math.Ceil(n / maxCycleTicks) // cycles a tick
	every := math.Ceil(n / m / 10)    // ticks a label
	k0 = math.Ceil(k0/m)*m + 0        // + 0: the first cycle of an axis from -dt/2 is 0, not -0
	var ts []plot.Tick
	for k := k0; k <= k1; k += m {
		t := plot.Tick{Value: k * c.period}
		if c.labels && math.Mod(k/m, every) == 0 {
			// To 0.1: a 60 Hz cycle's 16.7 ms, 116.7 not 117.
			t.Label = strconv.FormatFloat(math.Round(t.Value*10)/10, 'f', -1, 64)
		}
		ts = append(ts, t)
	}
	return ts
}
