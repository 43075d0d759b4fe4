package figure

import (
	"bytes"
	"image/png"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

func TestCurvesPlot(t *testing.T) {
	good := Curves{Title: "t", XLabel: "x", YLabel: "y", Lines: []Curve{
		{Label: "draws", Y: []float64{1, 0.5, 0.2}, Lo: []float64{0.9, 0.4, 0.1}, Hi: []float64{1.1, 0.6, 0.3}},
		{Label: "Mean", Y: []float64{1, 0.4, 0.1}},
	}}
	var buf bytes.Buffer
	if err := CurvesPlot(&buf, good); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w, h := float64(CurvesWidth/vg.Inch)*DPI, float64(CurvesHeight/vg.Inch)*DPI
	if b := img.Bounds(); math.Abs(float64(b.Dx())-w) > 1 || math.Abs(float64(b.Dy())-h) > 1 {
		t.Errorf("%v pixels, want %v x %v", b, w, h)
	}
	for _, c := range []struct {
		edit func(*Curves)
		want string
	}{
		{func(c *Curves) { c.Lines = nil }, "no line"},
		{func(c *Curves) { c.Lines[1].Y = []float64{1, 2} }, "has 2 values, want 3"},
		{func(c *Curves) { c.Lines[0].Y[1] = math.NaN() }, "draws Y[1] is NaN"},
		{func(c *Curves) { c.Lines[0].Hi = nil }, "one end of its band"},
		{func(c *Curves) { c.Lines[0].Lo[2] = 0.5 }, "at step 3: want Lo <= Hi"},
		{func(c *Curves) { c.Lines[0].Y = nil; c.Lines[0].Lo = nil; c.Lines[0].Hi = nil }, "has no value"},
	} {
		bad := Curves{Title: good.Title, Lines: []Curve{
			{Label: "draws", Y: []float64{1, 0.5, 0.2}, Lo: []float64{0.9, 0.4, 0.1}, Hi: []float64{1.1, 0.6, 0.3}},
			{Label: "Mean", Y: []float64{1, 0.4, 0.1}},
		}}
		c.edit(&bad)
		err := CurvesPlot(&bytes.Buffer{}, bad)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}
