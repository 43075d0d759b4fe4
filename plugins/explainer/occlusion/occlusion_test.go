package occlusion

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// plainModel hides the fast path, so Explain runs batched forward passes.
type plainModel struct{ nn.Model }

func TestGoldenOcclusion(t *testing.T) {
	m, x, y, dir := paper.Inference(t)
	want := golden.CSV32(t, filepath.Join(dir, "occlusion.csv"))
	req := sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"window": int64(60), "stride": int64(1), "baseline": 0.0}}
	for name, model := range map[string]nn.Model{"plain": plainModel{m}, "model": m} {
		maps, err := New().Explain(context.Background(), model, req)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for r := range want {
			for i, w := range want[r] {
				worst = math.Max(worst, math.Abs(maps[r][i]-float64(w)))
			}
		}
		if worst > 1e-5 {
			t.Errorf("%s: max |diff| to Captum %g, want <= 1e-5", name, worst)
		}
		t.Logf("%s: max |diff| to Captum %.3g", name, worst)
	}
}

func TestAccumulateClosedForm(t *testing.T) {
	// Window 2, stride 1 on 4 samples: windows 0,1,2. Position 1 is covered
	// by windows 0 and 1, so its value is the mean of their drops.
	got := Accumulate(make([]float64, 4), 1, []float32{0.5, 0.25, 1}, []int{0, 1, 2}, 2)
	want := []float64{0.5, (0.5 + 0.75) / 2, (0.75 + 0) / 2, 0}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("map[%d] = %g, want %g", i, got[i], want[i])
		}
	}
	// Stride 3, window 2: position 2 is covered by no window and stays 0.
	got = Accumulate(make([]float64, 5), 1, []float32{0, 0}, []int{0, 3}, 2)
	if got[2] != 0 || got[0] != 1 || got[4] != 1 {
		t.Errorf("uncovered positions: %v", got)
	}
}

// TestAccumulateDefinition: Accumulate against its definition, window by
// window, for strides that leave gaps and overlaps, a window given twice,
// and windows reaching both ends; starts that decrease panic.
func TestAccumulateDefinition(t *testing.T) {
	r := rng.New(3)
	for _, c := range []struct {
		n, window int
		starts    []int
	}{
		{20, 4, []int{0, 3, 3, 7, 12, 16}},
		{10, 10, []int{0}},
		{12, 1, []int{0, 1, 2, 5, 11}},
		{30, 7, []int{2, 9, 16, 23}},
	} {
		pw := make([]float32, len(c.starts))
		for j := range pw {
			pw[j] = float32(r.Float64())
		}
		got := Accumulate(make([]float64, c.n), 0.75, pw, c.starts, c.window)
		for t0 := range c.n {
			sum, cnt := 0.0, 0
			for j, s := range c.starts {
				if s <= t0 && t0 < s+c.window {
					sum += 0.75 - float64(pw[j])
					cnt++
				}
			}
			want := 0.0
			if cnt > 0 {
				want = sum / float64(cnt)
			}
			if math.Abs(got[t0]-want) > 1e-12 {
				t.Errorf("n %d window %d starts %v: map[%d] = %v, want %v", c.n, c.window, c.starts, t0, got[t0], want)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("decreasing starts: no panic")
		}
	}()
	Accumulate(make([]float64, 10), 1, []float32{0, 0}, []int{3, 2}, 2)
}

func TestCheck(t *testing.T) {
	e := New()
	if err := e.Check(sdk.Config{"window": int64(60)}); err != nil {
		t.Error(err)
	}
	for _, bad := range []sdk.Config{{"windw": int64(3)}, {"window": int64(0)}, {"stride": 1.5}, {"baseline": "zero"}} {
		if err := e.Check(bad); err == nil {
			t.Errorf("config %v accepted", bad)
		}
	}
	// A stride up to the window covers every sample; one beyond leaves gaps.
	for _, c := range []struct {
		window, stride int64
		ok             bool
	}{{60, 60, true}, {60, 61, false}, {1, 1, true}, {1, 2, false}, {60, 1, true}} {
		err := e.Check(sdk.Config{"window": c.window, "stride": c.stride})
		want := fmt.Sprintf(`explainer.occlusion: key "stride": %d is larger than the window (%d)`, c.stride, c.window)
		if c.ok && err != nil || !c.ok && (err == nil || !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("window %d stride %d: %v", c.window, c.stride, err)
		}
	}
	if err := e.Check(sdk.Config{"stride": int64(61)}); err == nil {
		t.Error("stride 61 beyond the default window 60 accepted")
	}
}

// TestSharedTrunkUnderMCDropout: the maps of 4 MC-dropout draws (keep
// masks folded into fc2, as posterior.mcdropout makes them) of the golden
// paper network and of two randomly initialised ones, explained one draw
// after the other by one Explainer (as the engine explains a batch under
// every draw), are the bytes a new Explainer gives each draw, and those of
// the first and the last draw equal the plain path's (a forward pass a
// window) within 1e-6; under every baseline, whose signal (the noise
// too) is the same for every draw of a record, so the cache hits.
func TestSharedTrunkUnderMCDropout(t *testing.T) {
	for _, baseline := range []any{0.0, Mean, Noise, Fundamental} {
		t.Run(fmt.Sprint(baseline), func(t *testing.T) {
			sharedTrunkUnderMCDropout(t, sdk.Config{"window": int64(60), "stride": int64(1), "baseline": baseline})
		})
	}
}

func sharedTrunkUnderMCDropout(t *testing.T, cfg sdk.Config) {
	golden, x, y, _ := paper.Model(t)
	lay, err := nn.NewLayout(nn.PaperArch())
	if err != nil {
		t.Fatal(err)
	}
	nets := map[string][]float32{"golden": golden.Data}
	for _, seed := range []uint64{1, 2} {
		p := make([]float32, lay.Size)
		nn.Init(lay, p, rng.For(seed, "test", "mc-occlusion", -1, -1))
		nets[fmt.Sprintf("random %d", seed)] = p
	}
	for name, params := range nets {
		// Two inputs of the golden network, one of each random one (the
		// plain path is a forward pass a window).
		n := 1
		if name == "golden" {
			n = 2
		}
		req := sdk.ExplainRequest{X: x[:n*640], Targets: y[:n], Config: cfg}
		shared := New()
		r := rng.New(9)
		for s := range 4 {
			mask := make([]bool, 64)
			for i := range mask {
				mask[i] = r.Float64() >= 0.2
			}
			fa, fp, err := nn.FoldDropout(nn.PaperArchDropout(0.2), params, [][]bool{mask})
			if err != nil {
				t.Fatal(err)
			}
			m, err := nn.NewModel(nn.Params{Arch: fa, Data: fp})
			if err != nil {
				t.Fatal(err)
			}
			got, err := shared.Explain(context.Background(), m, req)
			if err != nil {
				t.Fatal(err)
			}
			alone, err := New().Explain(context.Background(), m, req)
			if err != nil {
				t.Fatal(err)
			}
			for b := range got {
				for i, v := range got[b] {
					if math.Float64bits(v) != math.Float64bits(alone[b][i]) {
						t.Fatalf("%s draw %d input %d: map[%d] = %v with the shared trunk, %v alone", name, s, b, i, v, alone[b][i])
					}
				}
			}
			if s != 0 && s != 3 {
				continue // the plain path for the draw that fills the cache and one that hits
			}
			plain, err := New().Explain(context.Background(), plainModel{m}, req)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for b := range got {
				for i, v := range got[b] {
					worst = math.Max(worst, math.Abs(v-plain[b][i]))
				}
			}
			if worst > 1e-6 {
				t.Errorf("%s draw %d: max |shared trunk - plain| = %g, want <= 1e-6", name, s, worst)
			}
			t.Logf("%s draw %d: max |shared trunk - plain| = %.3g", name, s, worst)
		}
	}
}
