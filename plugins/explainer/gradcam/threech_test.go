package gradcam

import (
	"context"
	"math"
	"testing"

	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
)

// TestGoldenThreeChannel: on the three-channel golden network, every
// input channel's row of the map is Captum's LayerGradCam of conv4 (raw,
// one time map for all channels): with align "none" its 630 values then
// zeros, with "centre" its centred copy, within 1e-4 of the map's largest
// |value|.
func TestGoldenThreeChannel(t *testing.T) {
	m, x, y, ref := paper.ThreeChannel(t)
	raw := ref["gradcam_raw"]
	a := m.Arch()
	N, T := a.InLen, len(raw)/len(y)
	r, err := Field(a, DefaultLayer)
	if err != nil {
		t.Fatal(err)
	}
	for _, align := range []string{AlignNone, AlignCentre} {
		maps, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"align": align}})
		if err != nil {
			t.Fatal(err)
		}
		for b := range maps {
			cam := make([]float64, T)
			for i := range cam {
				cam[i] = float64(raw[b*T+i])
			}
			want := make([]float64, N)
			if align == AlignNone {
				copy(want, cam)
			} else {
				Centre(want, cam, r)
			}
			worst, scale := 0.0, 0.0
			for ch := range a.InChannels {
				for u, w := range want {
					worst = math.Max(worst, math.Abs(maps[b][ch*N+u]-w))
					scale = math.Max(scale, math.Abs(w))
				}
			}
			if scale == 0 || worst > 1e-4*scale {
				t.Errorf("align %s record %d: max |diff| to Captum %.3g, largest value %.3g", align, b, worst, scale)
			}
		}
	}
}
