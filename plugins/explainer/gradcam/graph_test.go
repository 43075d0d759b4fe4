package gradcam

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// TestCentreSpanNearest: CentreSpan gives each sample the position whose
// centre t*S + (lo+hi)/2 is nearest, the later of two equally near, found
// by searching every position (in exact halves); and with stride 1 and
// the field [t, t+r-1] it is Centre.
func TestCentreSpanNearest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		T := 1 + rng.IntN(12)
		S := 1 + rng.IntN(5)
		lo := rng.IntN(15) - 10
		hi := lo + rng.IntN(12)
		N := 1 + rng.IntN(50)
		cam := make([]float64, T)
		for i := range cam {
			cam[i] = float64(i) // the value names the position
		}
		got := CentreSpan(make([]float64, N), cam, S, lo, hi)
		for u, v := range got {
			best := 0
			for p := range T {
				// twice the distances, in integers
				if d, db := abs(2*u-2*p*S-lo-hi), abs(2*u-2*best*S-lo-hi); d <= db {
					best = p
				}
			}
			if int(v) != best {
				t.Fatalf("T %d, stride %d, field [%d, %d]: sample %d takes position %v, nearest centre %d", T, S, lo, hi, u, v, best)
			}
		}
	}
	cam := []float64{0.5, -1, 2, 7}
	for r := 1; r <= 6; r++ {
		want := Centre(make([]float64, len(cam)+r-1), cam, r)
		if got := CentreSpan(make([]float64, len(want)), cam, 1, 0, r-1); !slices.Equal(got, want) {
			t.Errorf("r %d: CentreSpan %v, Centre %v", r, got, want)
		}
	}
}

func abs(x int) int { return max(x, -x) }

// served is a graph network as the model service describes it: its Arch
// (with the graph) but not nn.GraphModel's LayerField.
type served struct{ nn.Model }

// TestGraphCentreAsLayers: the paper's network written as a graph, on the
// golden parameters, gives the Grad-CAM maps of nn.PaperArch's network
// with align = "centre" on every named layer before the global max pool:
// each sample takes the same layer position in both (found by its value
// in the model's own raw map, align = "none"), and the maps agree within
// 1e-5 of each map's scale (float32 sums in different orders: measured
// below 2e-6); so does the graph as the model service serves it (its
// receptive fields from its Arch's graph). Behind the global max pool
// "centre" is refused, naming the node and the alignments that need no
// field.
func TestGraphCentreAsLayers(t *testing.T) {
	p, x, y, _ := paper.Model(t)
	x, y = x[:4*640], y[:4]
	lm, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	ga, err := nn.GraphArch(graphtest.PaperGraph()).Reshaped(p.Arch.InChannels, p.Arch.InLen, p.Arch.Classes())
	if err != nil {
		t.Fatal(err)
	}
	gm, err := nn.Open(nn.Params{Arch: ga, Data: p.Data})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gm.(LayerPositioner); !ok {
		t.Fatalf("%T has no LayerPositions", gm)
	}
	ctx := context.Background()
	explain := func(m nn.Model, layer, align string) [][]float64 {
		t.Helper()
		maps, err := New().Explain(ctx, m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"layer": layer, "align": align}})
		if err != nil {
			t.Fatalf("%s, align %s: %v", layer, align, err)
		}
		return maps
	}
	worst := 0.0
	for _, layer := range []string{"conv1", "conv2", "conv3", "conv4"} {
		sh, err := lm.LayerShape(ctx, layer)
		if err != nil {
			t.Fatal(err)
		}
		want, wantRaw := explain(lm, layer, AlignCentre), explain(lm, layer, AlignNone)
		for _, m := range []nn.Model{gm, served{gm}} {
			got, gotRaw := explain(m, layer, AlignCentre), explain(m, layer, AlignNone)
			for b := range want {
				for u := range want[b] {
					pw := slices.Index(wantRaw[b][:sh.T], want[b][u])
					pg := slices.Index(gotRaw[b][:sh.T], got[b][u])
					if pw < 0 || pg != pw {
						t.Fatalf("%s (%T) map %d sample %d: position %d as a graph, %d with layers", layer, m, b, u, pg, pw)
					}
				}
				scale := 0.0
				for _, v := range want[b] {
					scale = max(scale, abs64(v))
				}
				for u := range want[b] {
					worst = max(worst, abs64(got[b][u]-want[b][u])/scale)
				}
			}
			golden.RowsClose(t, layer, got, want, 1e-5)
		}
	}
	t.Logf("largest difference: %.3g of the map's scale", worst)
	for _, m := range []nn.Model{gm, served{gm}} {
		_, err := New().Explain(ctx, m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"layer": "fc1"}})
		for _, w := range []string{`"centre" on layer "fc1"`, `node "gmp" (op globalmaxpool)`, `align = "none", "linear" or "nearest"`} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("centre on fc1 (%T): %v; want %q in it", m, err, w)
			}
		}
	}
}

func abs64(x float64) float64 { return max(x, -x) }

// goldenGraph builds a golden network of testdata/golden/archs from its
// TOML spec and model.safetensors, with its first n inputs and targets.
func goldenGraph(t *testing.T, name string, n int) (*nn.GraphModel, []float32, []int) {
	t.Helper()
	spec, err := graph.ReadSpecFile(filepath.Join(golden.RepoRoot(t), "recipes", "archs", name+".toml"))
	if err != nil {
		t.Fatal(err)
	}
	net, err := graph.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := net.LoadSafetensors(golden.File(t, "archs", name+"/model.safetensors")); err != nil {
		t.Fatal(err)
	}
	wf := golden.CSV32(t, golden.File(t, "archs", name+"/waveforms.csv"))[:n]
	tg := golden.CSV32(t, golden.File(t, "archs", name+"/targets.csv"))[:n]
	y := make([]int, n)
	for i, r := range tg {
		y[i] = int(r[0])
	}
	return nn.NewGraphModel(net), golden.Flat(wf), y
}

// TestGoldenGraphSame: on FCN's conv3 and InceptionTime's inc3, stride-1
// layers of 'same' padding (odd kernels symmetric, FCN's kernel 8 with
// the extra zero on the right), every position's field is centred on it,
// so align = "centre" gives the map of align = "none" (Captum's raw
// LayerGradCam, which internal/graphgolden checks).
func TestGoldenGraphSame(t *testing.T) {
	for _, c := range []struct{ net, layer string }{{"fcn", "conv3"}, {"inceptiontime", "inc3"}} {
		m, x, y := goldenGraph(t, c.net, 2)
		none, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"layer": c.layer, "align": AlignNone}})
		if err != nil {
			t.Fatal(err)
		}
		centre, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"layer": c.layer}})
		if err != nil {
			t.Fatal(err)
		}
		for b := range none {
			if !slices.Equal(centre[b], none[b]) {
				t.Errorf("%s %s: map %d with centre differs from none", c.net, c.layer, b)
			}
		}
		s, lo, hi, _ := m.LayerField(c.layer)
		t.Logf("%s %s: field of stride %d over [%d, %d]", c.net, c.layer, s, lo, hi)
	}
}

// TestGoldenGraphShifted: ResNet1D's blocks (archs.py's ResBlock: a
// (3, 4) zero pad before a kernel of 8, then kernels 5 and 3 'same', a
// shortcut of kernel 1) each read [-(3+2+1), 4+2+1] about a position, so
// block3's field is three of them, [-18, 21], centred 1.5 after its
// position: sample u takes position u-1 (the later of u-2 and u-1,
// equally near), the first sample position 0.
func TestGoldenGraphShifted(t *testing.T) {
	m, x, y := goldenGraph(t, "resnet1d", 2)
	block := [2]int{-(3 + 2 + 1), 4 + 2 + 1}
	if s, lo, hi, err := m.LayerField("block3"); err != nil || s != 1 || lo != 3*block[0] || hi != 3*block[1] {
		t.Fatalf("block3: stride %d over [%d, %d], %v; want 1 over [%d, %d]", s, lo, hi, err, 3*block[0], 3*block[1])
	}
	none, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"layer": "block3", "align": AlignNone}})
	if err != nil {
		t.Fatal(err)
	}
	centre, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"layer": "block3"}})
	if err != nil {
		t.Fatal(err)
	}
	for b := range none {
		for u, v := range centre[b] {
			if w := none[b][max(u-1, 0)]; v != w {
				t.Fatalf("map %d sample %d: %g, want position %d's %g", b, u, v, max(u-1, 0), w)
			}
		}
	}
}

// TestGoldenGraphStrided: on StridedNet's strided layers (conv1, stride 2;
// pool, 4; conv3, 8: 79 positions), align = "centre" gives each input
// sample the raw value of one position (align = "none"'s first T
// samples), a position whose receptive field holds the sample whenever
// some position's does, the positions in the order of time, and every
// position whose centre lies on the input is some sample's.
func TestGoldenGraphStrided(t *testing.T) {
	m, x, y := goldenGraph(t, "stridednet", 2)
	N := m.InputLen()
	for _, layer := range []string{"conv1", "pool", "conv3"} {
		S, lo, hi, err := m.LayerField(layer)
		if err != nil {
			t.Fatal(err)
		}
		if S < 2 {
			t.Fatalf("%s: stride %d, want a strided layer", layer, S)
		}
		none, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"layer": layer, "align": AlignNone}})
		if err != nil {
			t.Fatal(err)
		}
		centre, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"layer": layer}})
		if err != nil {
			t.Fatal(err)
		}
		sh, err := m.LayerShape(context.Background(), layer)
		if err != nil {
			t.Fatal(err)
		}
		T := sh.T
		for b := range none {
			raw := none[b][:T]
			prev := 0
			taken := make([]bool, T)
			for u, v := range centre[b] {
				p := slices.Index(raw, v)
				if p < 0 || slices.Index(raw[p+1:], v) >= 0 {
					t.Fatalf("%s map %d sample %d: %g is not the value of one position", layer, b, u, v)
				}
				taken[p] = true
				if p < prev {
					t.Errorf("%s map %d: sample %d takes position %d, after sample %d took %d", layer, b, u, p, u-1, prev)
				}
				prev = p
				held := false // some position's field holds u
				for q := range T {
					held = held || u >= q*S+lo && u <= q*S+hi
				}
				if held && (u < p*S+lo || u > p*S+hi) {
					t.Errorf("%s map %d: sample %d takes position %d, whose field is [%d, %d]", layer, b, u, p, p*S+lo, p*S+hi)
				}
			}
			for p := range T {
				if c2 := 2*p*S + lo + hi; c2 >= 0 && c2 <= 2*(N-1) && !taken[p] {
					t.Errorf("%s map %d: position %d, centred at %g, is no sample's", layer, b, p, float64(c2)/2)
				}
			}
		}
		t.Logf("stridednet %s: %d positions, field of stride %d over [%d, %d]", layer, T, S, lo, hi)
	}
	if _, _, _, err := m.LayerField("mean"); err == nil {
		t.Error("stridednet's global mean has a field")
	}
}
