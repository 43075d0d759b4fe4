package report

import (
	"bytes"
	"encoding/xml"
	"math"
	"strings"
	"testing"
)

// TestChartSVG: a chart's lines go through their values on the axis
// from the lowest to the highest value (x from the first step to the
// last), a non-finite value breaks the line, a band is a polygon, labels
// are escaped, and the page holds the chart as well-formed SVG in its
// curves section.
func TestChartSVG(t *testing.T) {
	c := Chart{Title: "region <perturbation>", XLabel: "regions removed", YLabel: "drop", Lines: []ChartLine{
		{Label: "draws", Y: []float64{0, 1, 0.5}, Lo: []float64{0, 0.5, 0.25}, Hi: []float64{0.25, 1, 0.75}},
		{Label: "mean <map>", Y: []float64{0.5, math.NaN(), 0.25}},
	}}
	svg := string(c.svg())
	// y = 30 + 220 (1 - v) on [0, 1]; x = 64 + 560 k / 2
	for _, want := range []string{
		`d="M64.0,250.0 L344.0,30.0 L624.0,140.0"`,
		`d="M64.0,140.0 M624.0,195.0"`,
		`<polygon points="64.0,250.0 344.0,140.0 624.0,195.0 624.0,85.0 344.0,30.0 64.0,195.0"`,
		`mean &lt;map&gt;`, `region &lt;perturbation&gt;`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart's SVG lacks %s:\n%s", want, svg)
		}
	}
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Errorf("the chart is not well-formed XML: %v", err)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, HTML{Title: "t", Charts: []Chart{c}}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	i := strings.Index(page, `<section id="curves">`)
	if i < 0 || !strings.Contains(page[i:], `d="M64.0,250.0 L344.0,30.0 L624.0,140.0"`) {
		t.Error("the page has no curves section holding the chart")
	}
	buf.Reset()
	if err := WriteHTML(&buf, HTML{Title: "t"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `id="curves"`) {
		t.Error("a page without charts has a curves section")
	}
}
