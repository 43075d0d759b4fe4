package occlusion

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
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
}
