package metric

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk"
)

// TestCompletenessIsIGsDelta: on Captum 0.8's integrated gradients maps
// of the golden FCN and ResNet1D (testdata/golden/gradients, zero
// baseline), completeness from the zero baseline is |Captum's
// convergence delta| within 2e-6 (the sums in float32 maps); a map
// scaled by 2 scores |2 sum - delta f|, written out.
func TestCompletenessIsIGsDelta(t *testing.T) {
	for _, name := range []string{"fcn", "resnet1d"} {
		t.Run(name, func(t *testing.T) {
			m := archModel(t, name, 1)
			dir := filepath.Join(golden.Dir(t, "archs"), name)
			x := golden.Flat(golden.CSV32(t, filepath.Join(dir, "waveforms.csv")))
			var y []int
			for _, r := range golden.CSV32(t, filepath.Join(dir, "targets.csv")) {
				y = append(y, int(r[0]))
			}
			gd := filepath.Join(golden.Dir(t, "gradients"), name)
			maps := golden.CSV32(t, filepath.Join(gd, "ig_gausslegendre_50.csv"))
			deltas := golden.CSV32(t, filepath.Join(gd, "deltas.csv"))
			var a []float64
			for _, r := range maps {
				for _, v := range r {
					a = append(a, float64(v))
				}
			}
			met, err := Builtin().New("metric.completeness", sdk.Config{"perturb_baseline": "zero"})
			if err != nil {
				t.Fatal(err)
			}
			in := &Input{Model: m, N: len(y), C: 1, T: 640, X: x, Maps: a, Targets: y}
			got := make([]Score, len(y))
			if err := met.Score(context.Background(), in, got); err != nil {
				t.Fatal(err)
			}
			for i, s := range got {
				if want := math.Abs(float64(deltas[i][0])); math.Abs(s.Value-want) > 2e-6 {
					t.Errorf("record %d: completeness %.7g, |Captum's delta| %.7g", i, s.Value, want)
				}
			}
			// twice the maps: |2 sum - df| = |2 (delta + df) - df| = |2 delta + df|
			for j := range a {
				a[j] *= 2
			}
			if err := met.Score(context.Background(), in, got); err != nil {
				t.Fatal(err)
			}
			n, k := 640, m.Classes()
			p, p0 := make([]float32, len(y)*k), make([]float32, len(y)*k)
			if err := m.Probs(context.Background(), p, x); err != nil {
				t.Fatal(err)
			}
			if err := m.Probs(context.Background(), p0, make([]float32, len(x))); err != nil {
				t.Fatal(err)
			}
			for i, s := range got {
				var sum float64
				for _, v := range a[i*n : (i+1)*n] {
					sum += v
				}
				if want := math.Abs(sum - float64(p[i*k+y[i]]-p0[i*k+y[i]])); math.Abs(s.Value-want) > 1e-6 {
					t.Errorf("record %d, twice the map: %.7g, want %.7g", i, s.Value, want)
				}
			}
		})
	}
}
