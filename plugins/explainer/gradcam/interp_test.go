package gradcam

import (
	"context"
	"slices"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// TestResampleTorch: Linear and Nearest resample the golden networks'
// raw Grad-CAM maps of fewer positions than samples (StridedNet's conv3,
// 79 positions; the LSTM's 160 steps) to the 640 input samples as
// PyTorch's F.interpolate does (testdata/peers/interp_golden.py), within
// 1e-6 of each map's largest value.
func TestResampleTorch(t *testing.T) {
	for _, name := range []string{"stridednet", "lstm"} {
		raw := golden.CSV32(t, golden.File(t, "archs", name+"/gradcam_raw.csv"))
		for _, c := range []struct {
			file string
			f    func(dst, cam []float64) []float64
		}{{"gradcam_linear.csv", Linear}, {"gradcam_nearest.csv", Nearest}} {
			want := golden.CSV32(t, golden.File(t, "archs", name+"/"+c.file))
			got := make([][]float64, len(raw))
			for i, r := range raw {
				cam := make([]float64, len(r))
				for j, v := range r {
					cam[j] = float64(v)
				}
				got[i] = c.f(make([]float64, len(want[i])), cam)
			}
			golden.RowsClose(t, name+" "+c.file, got, want, 1e-6)
		}
	}
}

// TestResampleClosedForm: on as many samples as positions both are the
// identity; a constant map stays constant; a linear ramp stays linear
// between the centres of the first and last positions (linear
// interpolation is exact on it); upsampling by 2 repeats each position
// twice (nearest).
func TestResampleClosedForm(t *testing.T) {
	cam := []float64{0.5, -1, 2, 3.25, 0}
	for _, f := range []func(dst, cam []float64) []float64{Linear, Nearest} {
		if got := f(make([]float64, len(cam)), cam); !slices.Equal(got, cam) {
			t.Errorf("same length: %v, want %v", got, cam)
		}
		for _, v := range f(make([]float64, 17), []float64{4, 4, 4}) {
			if v != 4 {
				t.Fatalf("a constant map resampled: %v", v)
			}
		}
	}
	ramp := []float64{0, 1, 2, 3} // value = position
	dst := Linear(make([]float64, 8), ramp)
	for u, v := range dst {
		s := min(max((float64(u)+0.5)*0.5-0.5, 0), 3)
		if v != s {
			t.Errorf("ramp at sample %d: %v, want the source position %v", u, v, s)
		}
	}
	if got := Nearest(make([]float64, 8), ramp); !slices.Equal(got, []float64{0, 0, 1, 1, 2, 2, 3, 3}) {
		t.Errorf("nearest x2: %v", got)
	}
}

// TestExplainResampled: align "linear" is Linear of the raw map, in every
// input channel's row, on an sdk/nn network and on the same network
// known by its shape only alike.
func TestExplainResampled(t *testing.T) {
	m, x, y, _ := paper.ThreeChannel(t)
	ctx := context.Background()
	raw, err := New().Explain(ctx, m, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"align": AlignNone, "layer": "conv4"}})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := m.LayerShape(ctx, "conv4")
	if err != nil {
		t.Fatal(err)
	}
	n := m.Arch().InLen
	for _, model := range []nn.Model{m, shapeOnly{m}} {
		got, err := New().Explain(ctx, model, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"align": AlignLinear, "layer": "conv4"}})
		if err != nil {
			t.Fatal(err)
		}
		for b := range got {
			want := Linear(make([]float64, n), raw[b][:sh.T])
			for ch := range m.Arch().InChannels {
				if !slices.Equal(got[b][ch*n:(ch+1)*n], want) {
					t.Fatalf("%T map %d channel %d is not the raw map resampled", model, b, ch)
				}
			}
		}
	}
}
