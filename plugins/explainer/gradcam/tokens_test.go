package gradcam

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// tokenNet is a small Transformer-like network whose attention output
// "attn" (8 tokens x 6 features) is read only by its transpose "back"
// (6 x 8, steps again), so that the two layers hold the same values and
// gradients, transposed.
func tokenNet(t *testing.T) (*nn.GraphModel, []float32, []int) {
	t.Helper()
	n := func(name, op string, attrs map[string]any) graph.Node {
		return graph.Node{Name: name, Op: op, Attrs: attrs}
	}
	spec := graph.Spec{Name: "tokens", InChannels: 2, InLen: 32, Nodes: []graph.Node{
		n("patch", "conv1d", map[string]any{"out": 6, "kernel": 4, "stride": 4}),
		n("tok", "transpose", nil),
		n("attn", "attention", map[string]any{"heads": 2}),
		n("back", "transpose", nil),
		n("mix", "conv1d", map[string]any{"out": 4, "kernel": 3, "padding": []int64{1, 1}}),
		n("relu", "relu", nil),
		n("gap", "globalavgpool", nil),
		n("fc", "linear", map[string]any{"out": 3}),
	}}
	m := nn.NewGraphModel(graphtest.RandomNet(t, spec, 5))
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 4*64)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return m, x, []int{0, 1, 2, 1}
}

// TestTokenLayer: Grad-CAM of a layer of tokens x features (its time
// axis the rows, by the graph) is the Grad-CAM of its transpose, a layer
// of features x steps, bit for bit, raw and aligned to the tokens'
// patches (token l over samples 4l..4l+3); time_axis = 1 says the same,
// time_axis = 2 contradicts the graph and is refused; and reading the
// tokens as channels (the layer as a model known by its shape only
// describes it, without time_axis) gives another map.
func TestTokenLayer(t *testing.T) {
	m, x, y := tokenNet(t)
	ctx := context.Background()
	cam := func(m nn.Model, cfg sdk.Config) [][]float64 {
		t.Helper()
		out, err := New().Explain(ctx, m, sdk.ExplainRequest{X: x, Targets: y, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, align := range []string{AlignNone, AlignCentre, AlignLinear} {
		want := cam(m, sdk.Config{"layer": "back", "align": align})
		for _, cfg := range []sdk.Config{{"layer": "attn", "align": align}, {"layer": "attn", "align": align, "time_axis": int64(1)}} {
			got := cam(m, cfg)
			for b := range want {
				if !slices.Equal(got[b], want[b]) {
					t.Fatalf("%v: map %d differs from the transpose's:\n%v\n%v", cfg, b, got[b], want[b])
				}
			}
		}
		if align == AlignCentre {
			for b, row := range want {
				for u := 4; u < 32; u++ { // each patch's samples take its token's value
					if u%4 != 0 && row[u] != row[u-1] {
						t.Fatalf("map %d: sample %d = %v, sample %d = %v: one patch, two values", b, u, row[u], u-1, row[u-1])
					}
				}
			}
		}
	}
	_, err := New().Explain(ctx, m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"layer": "attn", "time_axis": int64(2)}})
	if err == nil || !strings.Contains(err.Error(), `time_axis" is 2, but layer "attn"`) || !strings.Contains(err.Error(), "rows (tokens) by its graph (accepted: time_axis = 1") {
		t.Errorf("time_axis 2 on a token layer: %v", err)
	}
	_, err = New().Explain(ctx, m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"layer": "back", "time_axis": int64(1)}})
	if err == nil || !strings.Contains(err.Error(), "columns (steps) by its graph (accepted: time_axis = 2") {
		t.Errorf("time_axis 1 on a layer of steps: %v", err)
	}
	want := cam(m, sdk.Config{"layer": "attn", "align": AlignNone})
	cols := cam(shapeOnly{m}, sdk.Config{"layer": "attn", "align": AlignNone, "time_axis": int64(2)})
	if slices.Equal(cols[0], want[0]) {
		t.Errorf("the tokens read as channels give the tokens' map: the test cannot tell the axes apart")
	}
}

// TestTokenLayerShapeOnly: on a model known by its shape only (a served
// PyTorch Transformer), time_axis = 1 gives the graph's map of the token
// layer; without it the columns are taken and a warning (sdk.Warn) says
// so and names time_axis = 1, once per call, for a shape that could be
// either; a layer whose columns are at least half the input's samples
// (a convolution's steps) gets no warning.
func TestTokenLayerShapeOnly(t *testing.T) {
	m, x, y := tokenNet(t)
	var warned []string
	ctx := sdk.WithWarn(context.Background(), func(msg string) { warned = append(warned, msg) })
	explain := func(mm nn.Model, cfg sdk.Config) [][]float64 {
		t.Helper()
		out, err := New().Explain(ctx, mm, sdk.ExplainRequest{X: x, Targets: y, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := explain(m, sdk.Config{"layer": "attn", "align": AlignLinear})
	got := explain(shapeOnly{m}, sdk.Config{"layer": "attn", "align": AlignLinear, "time_axis": int64(1)})
	for b := range want {
		if !slices.Equal(got[b], want[b]) {
			t.Fatalf("map %d: time_axis 1 on the served model differs from the graph's", b)
		}
	}
	if len(warned) != 0 {
		t.Fatalf("warnings with the axis known: %q", warned)
	}
	explain(shapeOnly{m}, sdk.Config{"layer": "attn", "align": AlignLinear})
	if len(warned) != 1 || !strings.Contains(warned[0], `layer "attn" of model "torch-net" gives 8 x 6 values a sample`) || !strings.Contains(warned[0], "set time_axis = 1") {
		t.Errorf("warnings: %q; want one naming the layer's 8 x 6 and time_axis = 1", warned)
	}
	warned = nil
	explain(shapeOnly{m}, sdk.Config{"layer": "patch", "align": AlignLinear}) // 6 x 8 of 32 samples: ambiguous too
	explain(shapeOnly{m}, sdk.Config{"layer": "mix", "align": AlignLinear})   // 4 x 8
	if len(warned) != 2 {
		t.Errorf("%d warnings for two layers of 8 steps of 32 samples; want 2: %q", len(warned), warned)
	}
	warned = nil
	pm, px, py, _ := paper.ThreeChannel(t) // conv4: 630 steps of 640 samples
	if _, err := New().Explain(ctx, shapeOnly{pm}, sdk.ExplainRequest{X: px, Targets: py, Config: sdk.Config{"align": AlignNone}}); err != nil {
		t.Fatal(err)
	}
	if len(warned) != 0 {
		t.Errorf("a layer of 630 steps of 640 samples warned: %q", warned)
	}
}

// TestTimeAxisGuess: which layer shapes of a model without a graph the
// warning calls ambiguous (the boundaries of the rule): steps fewer than
// half the input's samples and rows that could be steps, more than one of
// each.
func TestTimeAxisGuess(t *testing.T) {
	m, _, _ := tokenNet(t) // 32 samples a channel
	for _, c := range []struct {
		C, T int
		warn bool
	}{
		{8, 6, true}, {1, 6, false}, {8, 1, false}, {2, 2, true},
		{8, 15, true}, {8, 16, false}, // 2T < 32
		{32, 6, true}, {33, 6, false}, // rows <= 32
	} {
		var warned []string
		ctx := sdk.WithWarn(context.Background(), func(msg string) { warned = append(warned, msg) })
		p, err := positions(ctx, shapeOnly{m}, shapeOnly{m}.Arch(), config{layer: "attn", align: AlignLinear}, nn.Shape{C: c.C, T: c.T})
		if err != nil || p.rows {
			t.Fatalf("%d x %d: %+v, %v; want the columns", c.C, c.T, p, err)
		}
		if (len(warned) == 1) != c.warn || len(warned) > 1 {
			t.Errorf("%d x %d: warnings %q; want one: %v", c.C, c.T, warned, c.warn)
		}
	}
}

// TestRawMapTooLong: align = "none" refuses a layer of more positions
// than the input has samples (a padded layer here), naming it and what is
// accepted; resampled, it is mapped.
func TestRawMapTooLong(t *testing.T) {
	n := func(name, op string, attrs map[string]any) graph.Node {
		return graph.Node{Name: name, Op: op, Attrs: attrs}
	}
	spec := graph.Spec{Name: "padded", InChannels: 1, InLen: 16, Nodes: []graph.Node{
		n("pad", "pad", map[string]any{"left": 10, "right": 10}),
		n("conv", "conv1d", map[string]any{"out": 2, "kernel": 3}),
		n("gap", "globalavgpool", nil),
		n("fc", "linear", map[string]any{"out": 2}),
	}}
	m := nn.NewGraphModel(graphtest.RandomNet(t, spec, 2))
	x := make([]float32, 16)
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	req := sdk.ExplainRequest{X: x, Targets: []int{1}, Config: sdk.Config{"layer": "conv", "align": AlignNone}}
	_, err := New().Explain(context.Background(), m, req)
	if err == nil || !strings.Contains(err.Error(), `layer "conv" has 34 positions, more than the input's 16 samples`) {
		t.Errorf("align none on 34 positions of 16 samples: %v", err)
	}
	req.Config = sdk.Config{"layer": "conv", "align": AlignLinear}
	if _, err := New().Explain(context.Background(), m, req); err != nil {
		t.Errorf("align linear: %v", err)
	}
}
