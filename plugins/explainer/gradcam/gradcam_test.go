package gradcam

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// TestGoldenRaw: the unaligned map of conv4 is Captum's LayerGradCam
// (relu_attributions=False), gradcam_raw.csv, within 1e-5 of its scale.
func TestGoldenRaw(t *testing.T) {
	p, x, y, dir := paper.Model(t)
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	want := golden.CSV32(t, filepath.Join(dir, "gradcam_raw.csv"))
	sh, err := m.LayerShape(context.Background(), DefaultLayer)
	if err != nil {
		t.Fatal(err)
	}
	act := make([]float32, len(y)*sh.Size())
	grad := make([]float32, len(y)*sh.Size())
	if err := m.LayerGrad(context.Background(), act, grad, x, y, DefaultLayer); err != nil {
		t.Fatal(err)
	}
	cam := make([]float64, sh.T)
	for b := range y {
		Raw(cam, act[b*sh.Size():(b+1)*sh.Size()], grad[b*sh.Size():(b+1)*sh.Size()], sh.C)
		scale := 0.0
		for _, v := range want[b] {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		for i, v := range want[b] {
			if d := math.Abs(cam[i] - float64(v)); d > 1e-5*math.Max(scale, 1e-12) {
				t.Fatalf("wave %d position %d: %g, Captum %g", b, i, cam[i], v)
			}
		}
	}
}

// TestExplainCentre: the plugin's map is the golden raw map placed at the
// centres of conv4's receptive fields (R = 11: five kernels of 3), with
// the edges filled from the first and last positions.
func TestExplainCentre(t *testing.T) {
	p, x, y, dir := paper.Model(t)
	want := golden.CSV32(t, filepath.Join(dir, "gradcam_raw.csv"))
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	maps, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[:3*640], Targets: y[:3]})
	if err != nil {
		t.Fatal(err)
	}
	for b, mp := range maps {
		if len(mp) != 640 {
			t.Fatalf("map %d has %d values", b, len(mp))
		}
		scale := 0.0
		for _, v := range want[b] {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		for n, v := range mp {
			src := min(max(n-5, 0), 629)
			if d := math.Abs(v - float64(want[b][src])); d > 1e-5*scale {
				t.Fatalf("wave %d sample %d: %g, want raw position %d = %g", b, n, v, src, want[b][src])
			}
		}
	}
}

func TestField(t *testing.T) {
	a := nn.PaperArch()
	for _, c := range []struct {
		layer string
		r     int
		want  string
	}{
		{"conv1", 3, ""}, {"conv2", 5, ""}, {"bn1", 7, ""}, {"conv3", 9, ""}, {"conv4", 11, ""},
		{"bn2", 0, `node "_10" (op globalmaxpool) reads every step of its input`},
		{"fc1", 0, `node "_10" (op globalmaxpool) reads every step of its input`},
		{"", 0, `no layer ""`},
		{"nope", 0, `no layer "nope"`},
	} {
		r, err := Field(a, c.layer)
		if c.want == "" && (err != nil || r != c.r) || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Field(%s) = %d, %v; want %d %q", c.layer, r, err, c.r, c.want)
		}
	}
	// A kernel of 1 adds nothing; a dense layer first is refused.
	one := nn.Arch{Name: "k1", InChannels: 1, InLen: 4, Layers: []nn.Layer{{Kind: nn.KindConv1D, Name: "c", Out: 2, Kernel: 1}, {Kind: nn.KindFlatten}, {Kind: nn.KindDense, Name: "d", Out: 3}}}
	if r, err := Field(one, "c"); r != 1 || err != nil {
		t.Errorf("kernel 1: %d, %v", r, err)
	}
	if _, err := Field(one, "d"); err == nil {
		t.Errorf("a dense layer has a field")
	}
}

func TestCentre(t *testing.T) {
	cam := []float64{1, 2, 3}
	for _, c := range []struct {
		r    int
		want []float64
	}{
		{1, []float64{1, 2, 3}},
		{2, []float64{1, 2, 3, 3}}, // even field: centre floor((r-1)/2) = 0
		{3, []float64{1, 1, 2, 3, 3}},
		{4, []float64{1, 1, 2, 3, 3, 3}},
		{5, []float64{1, 1, 1, 2, 3, 3, 3}},
	} {
		got := Centre(make([]float64, len(cam)+c.r-1), cam, c.r)
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("r %d: %v, want %v", c.r, got, c.want)
				break
			}
		}
	}
}

// TestRawClosedForm: with one channel whose gradient is constant g, the
// map is g times the activation.
func TestRawClosedForm(t *testing.T) {
	act := []float32{1, -2, 3, 0.5, 4, -1}
	grad := []float32{2, 2, 2, 0, 0, 6}
	got := Raw(make([]float64, 3), act, grad, 2)
	// alpha_0 = 2, alpha_1 = 2: cam = 2*(1,-2,3) + 2*(0.5,4,-1).
	want := []float64{3, 4, 4}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Raw = %v, want %v", got, want)
		}
	}
}

func TestConfig(t *testing.T) {
	e := New()
	for _, c := range []struct {
		cfg  sdk.Config
		want string
	}{
		{sdk.Config{}, ""},
		{sdk.Config{"layer": "conv2", "align": "none"}, ""},
		{sdk.Config{"align": "center"}, `key "align" is "center" (accepted: "centre", "none", "linear", "nearest")`},
		{sdk.Config{"align": "linear"}, ""},
		{sdk.Config{"align": "nearest"}, ""},
		{sdk.Config{"time_axis": int64(2)}, ""},
		{sdk.Config{"time_axis": int64(3)}, `key "time_axis" is 3 (accepted: 1, the layer's (batch, tokens, features) rows are time; 2`},
		{sdk.Config{"time_axis": int64(-1)}, `key "time_axis" is -1`},
		{sdk.Config{"time_axis": "rows"}, `"time_axis"`},
		{sdk.Config{"layer": ""}, `key "layer" is empty`},
		{sdk.Config{"layer": 3}, `"layer"`},
		{sdk.Config{"window": 3}, `unknown key "window"`},
	} {
		err := e.Check(c.cfg)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%v): %v, want %q", c.cfg, err, c.want)
		}
	}
	p, x, y, _ := paper.Model(t)
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg  sdk.Config
		want string
	}{
		{sdk.Config{"layer": "conv9"}, `key "layer"`},
		{sdk.Config{"layer": "fc1"}, "has no positions in time"},
	} {
		_, err := e.Explain(context.Background(), m, sdk.ExplainRequest{X: x[:640], Targets: y[:1], Config: c.cfg})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Explain with %v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestConformance(t *testing.T) {
	p, x, y, _ := paper.Model(t)
	sdktest.Explainer(t, New(), sdktest.ExplainerCase{Model: p, X: x[:4*640], Targets: y[:4]})
	sdktest.Explainer(t, New(), sdktest.ExplainerCase{Model: p, X: x[4*640 : 6*640], Targets: y[4:6], Config: sdk.Config{"layer": "conv2"}})
	sdktest.Explainer(t, New(), sdktest.ExplainerCase{Model: p, X: x[6*640 : 8*640], Targets: y[6:8], Config: sdk.Config{"align": "none"}})
}

// TestChannels: with two input channels, each channel's part of the map
// is the layer's map, aligned; with a kernel-1 layer, "none" and "centre"
// give the same map.
func TestChannels(t *testing.T) {
	a := nn.Arch{Name: "two", InChannels: 2, InLen: 6, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "c1", Out: 3, Kernel: 1},
		{Kind: nn.KindReLU},
		{Kind: nn.KindConv1D, Name: "c2", Out: 2, Kernel: 3},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "d", Out: 3},
	}}
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, lay.Size)
	for i := range p {
		p[i] = float32(math.Sin(float64(3*i+1))) * 0.7
	}
	m, err := nn.NewModel(nn.Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 2*12)
	for i := range x {
		x[i] = float32(math.Cos(float64(i)))
	}
	req := func(cfg sdk.Config) sdk.ExplainRequest {
		return sdk.ExplainRequest{X: x, Targets: []int{0, 2}, Config: cfg}
	}
	e := New()
	none, err := e.Explain(context.Background(), m, req(sdk.Config{"layer": "c1", "align": "none"}))
	if err != nil {
		t.Fatal(err)
	}
	centre, err := e.Explain(context.Background(), m, req(sdk.Config{"layer": "c1"}))
	if err != nil {
		t.Fatal(err)
	}
	wide, err := e.Explain(context.Background(), m, req(sdk.Config{"layer": "c2"}))
	if err != nil {
		t.Fatal(err)
	}
	for b := range 2 {
		for n := range 6 {
			if none[b][n] != none[b][6+n] || none[b][n] != centre[b][n] || centre[b][n] != centre[b][6+n] {
				t.Fatalf("input %d sample %d: none %v / %v, centre %v / %v; want the same map in both channels", b, n, none[b][n], none[b][6+n], centre[b][n], centre[b][6+n])
			}
			// c2 (T = 4, R = 3): samples 0 and 1 take position 0, 5 takes position 3.
			if wide[b][n] != wide[b][6+n] {
				t.Fatalf("c2, input %d sample %d: channels differ", b, n)
			}
		}
		if wide[b][0] != wide[b][1] || wide[b][4] != wide[b][5] {
			t.Errorf("c2, input %d: edges %v not filled from the first and last positions", b, wide[b][:6])
		}
	}
	// c2 unaligned: its 4 positions at samples 0..3 of each channel, the
	// last 2 samples (no field starts there) 0; the centred map holds the
	// same 4 values at samples 1..4.
	raw, err := e.Explain(context.Background(), m, req(sdk.Config{"layer": "c2", "align": "none"}))
	if err != nil {
		t.Fatal(err)
	}
	for b := range 2 {
		for ch := range 2 {
			row := raw[b][ch*6 : (ch+1)*6]
			if !slices.Equal(row[:4], wide[b][ch*6+1:ch*6+5]) || row[4] != 0 || row[5] != 0 {
				t.Errorf("c2 unaligned, input %d channel %d: %v; centred %v", b, ch, row, wide[b][ch*6:(ch+1)*6])
			}
		}
	}
}

// TestExplainNone: unaligned, conv4's map is Captum's raw map in its first
// 630 samples and 0 in the last 10.
func TestExplainNone(t *testing.T) {
	p, x, y, dir := paper.Model(t)
	want := golden.CSV32(t, filepath.Join(dir, "gradcam_raw.csv"))
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	maps, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[:3*640], Targets: y[:3], Config: sdk.Config{"align": "none"}})
	if err != nil {
		t.Fatal(err)
	}
	for b, mp := range maps {
		scale := 0.0
		for _, v := range want[b] {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		for n, v := range mp {
			ref := 0.0
			if n < len(want[b]) {
				ref = float64(want[b][n])
			}
			if d := math.Abs(v - ref); d > 1e-5*scale || n >= len(want[b]) && v != 0 {
				t.Fatalf("wave %d sample %d: %g, want %g", b, n, v, ref)
			}
		}
	}
}
