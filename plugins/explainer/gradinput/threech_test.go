package gradinput

import (
	"context"
	"math"
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
)

// TestGoldenThreeChannel: on the three-channel golden network, the plain
// gradient is Captum's Saliency (abs=False) and gradient x input is x
// times it, element by element (channel-major), within 1e-4 of each
// map's largest |value|.
func TestGoldenThreeChannel(t *testing.T) {
	m, x, y, ref := paper.ThreeChannel(t)
	grad := ref["input_grad"]
	n := m.InputLen()
	for _, times := range []bool{false, true} {
		maps, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"times_input": times}})
		if err != nil {
			t.Fatal(err)
		}
		for b := range maps {
			worst, scale := 0.0, 0.0
			for i, v := range maps[b] {
				want := float64(grad[b*n+i])
				if times {
					want *= float64(x[b*n+i])
				}
				worst = math.Max(worst, math.Abs(v-want))
				scale = math.Max(scale, math.Abs(want))
			}
			if scale == 0 || worst > 1e-4*scale {
				t.Errorf("times_input %v record %d: max |diff| to Captum %.3g, largest value %.3g", times, b, worst, scale)
			}
		}
	}
}
