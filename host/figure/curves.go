package figure

import (
	"errors"
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Curve is one line of a Curves figure: its values at steps 1..n, and,
// when Lo and Hi are not nil, a band around it (Lo <= Hi at every step).
type Curve struct {
	Label     string
	Y, Lo, Hi []float64
}

// Curves is a figure of curves over the same steps (a faithfulness
// metric's curve: the score after k regions removed), each with an
// optional band (over a posterior's draws).
type Curves struct {
	Title, XLabel, YLabel string
	Lines                 []Curve
}

// The curves figure's size.
const (
	CurvesWidth  = 8 * vg.Inch
	CurvesHeight = 4 * vg.Inch
)

func (f *Curves) validate() error {
	if len(f.Lines) == 0 {
		return errors.New("figure: Curves has no line")
	}
	n := len(f.Lines[0].Y)
	if n == 0 {
		return fmt.Errorf("figure: curve %q has no value", f.Lines[0].Label)
	}
	for _, c := range f.Lines {
		want := fmt.Sprintf("every curve has the first's %d steps", n)
		if err := checkSeries(c.Label+" Y", c.Y, n, want); err != nil {
			return fmt.Errorf("figure: %w", err)
		}
		if (c.Lo == nil) != (c.Hi == nil) {
			return fmt.Errorf("figure: curve %q has one end of its band only", c.Label)
		}
		if c.Lo == nil {
			continue
		}
		if err := checkSeries(c.Label+" Lo", c.Lo, n, want); err != nil {
			return fmt.Errorf("figure: %w", err)
		}
		if err := checkSeries(c.Label+" Hi", c.Hi, n, want); err != nil {
			return fmt.Errorf("figure: %w", err)
		}
		for k := range c.Lo {
			if c.Lo[k] > c.Hi[k] {
				return fmt.Errorf("figure: curve %q: band [%v, %v] at step %d: want Lo <= Hi", c.Label, c.Lo[k], c.Hi[k], k+1)
			}
		}
	}
	return nil
}

// CurvesPlot draws f as PNG to w: each curve a line at steps 1..n in its
// colour, its band a lighter polygon of the same colour beneath, and a
// legend.
func CurvesPlot(w io.Writer, f Curves) error {
	if err := f.validate(); err != nil {
		return err
	}
	p := newPlot()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	cols := methodColours(len(f.Lines))
	for i, c := range f.Lines {
		col := cols[i]
		if c.Lo != nil {
			pts := make(plotter.XYs, 0, 2*len(c.Lo))
			for k, v := range c.Lo {
				pts = append(pts, plotter.XY{X: float64(k + 1), Y: v})
			}
			for k := len(c.Hi) - 1; k >= 0; k-- {
				pts = append(pts, plotter.XY{X: float64(k + 1), Y: c.Hi[k]})
			}
			poly, err := plotter.NewPolygon(pts)
			if err != nil {
				return fmt.Errorf("figure: band of %q: %w", c.Label, err)
			}
			r, g, b, _ := col.RGBA()
			poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 0x40}
			poly.LineStyle.Width = 0
			p.Add(poly)
		}
		pts := make(plotter.XYs, len(c.Y))
		for k, v := range c.Y {
			pts[k] = plotter.XY{X: float64(k + 1), Y: v}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("figure: curve %q: %w", c.Label, err)
		}
		line.Color = col
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(c.Label, line)
	}
	p.Legend.Top = true
	return render(w, CurvesWidth, CurvesHeight, func(dc draw.Canvas) { p.Draw(dc) })
}
