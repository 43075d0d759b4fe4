package lime

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/nn"
)

// TestGoldenThreeChannels checks LIME with "channel-segment" features on
// three channels against Captum's Lime with a feature_mask (1, 3, 640)
// giving segment k of channel c the id c*K+k (testdata/golden/lime-3ch,
// whose README has the formulas): on Captum's own samples, this package's
// weights are Captum's within 1e-6, the outputs of the span path LIME
// takes (ChannelSpanProbs) are Captum's within 1e-5, the surrogates
// fitted on Captum's recorded values are scikit-learn's float64 fits
// within 1e-9 of the largest coefficient, and those fitted on this
// package's own weights and outputs of the same masks within 1e-3.
func TestGoldenThreeChannels(t *testing.T) {
	dir := golden.Dir(t, "lime-3ch")
	a := nn.PaperArch()
	a.Name, a.InChannels = "paper-3ch", 3
	p, err := nn.LoadParams(filepath.Join(dir, "model.safetensors"), a)
	if err != nil {
		t.Fatal(err)
	}
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	xs := golden.CSV32(t, filepath.Join(dir, "waveforms.csv"))
	var y []int
	for _, r := range golden.Records(t, filepath.Join(dir, "labels.csv")) {
		v, err := strconv.Atoi(r[0])
		if err != nil {
			t.Fatal(err)
		}
		y = append(y, v)
	}
	probs := golden.CSV32(t, filepath.Join(dir, "probs.csv"))
	s := readSamples(t, dir)[:len(xs)]
	ols := readRows(t, filepath.Join(dir, "lime_ols.csv"), false)
	lasso := readRows(t, filepath.Join(dir, "lime_lasso.csv"), false)
	icpt := readRows(t, filepath.Join(dir, "lime_intercepts.csv"), true)
	fs := Features{C: 3, T: 640, Width: 32, PerChannel: true}
	for i, x := range xs {
		pr := make([]float32, 16)
		if err := m.Probs(context.Background(), pr, x); err != nil {
			t.Fatal(err)
		}
		within32(t, "probs of input "+strconv.Itoa(i), pr, probs[i], 1e-5)
		if len(s[i].masks) == 0 || len(s[i].masks[0]) != fs.Len() {
			t.Fatalf("input %d: %d samples of %d features, want %d features", i, len(s[i].masks), len(s[i].masks[0]), fs.Len())
		}
		c, b := OLS(s[i].masks, s[i].output, s[i].weight)
		near(t, "input "+strconv.Itoa(i)+" OLS", append(c, b), append(ols[i], icpt[i][0]), 1e-9)
		c, b = Lasso(s[i].masks, s[i].output, s[i].weight, 1e-4)
		near(t, "input "+strconv.Itoa(i)+" lasso", append(c, b), append(lasso[i], icpt[i][1]), 1e-9)
		n := len(s[i].masks)
		sc := newScratch(n, len(x))
		cfg := Config{KernelWidth: 1}
		if err := cfg.outputs(context.Background(), m, x, y[i], fs, s[i].masks, sc); err != nil {
			t.Fatal(err)
		}
		var dw, do float64
		for k := range n {
			dw, do = max(dw, abs(sc.w[k]-s[i].weight[k])), max(do, abs(sc.out[k]-s[i].output[k]))
			if d := sc.w[k] - s[i].weight[k]; d > 1e-6 || d < -1e-6 {
				t.Fatalf("input %d sample %d: weight %v, Captum %v", i, k, sc.w[k], s[i].weight[k])
			}
			if d := sc.out[k] - s[i].output[k]; d > 1e-5 || d < -1e-5 {
				t.Fatalf("input %d sample %d: output %v, Captum %v", i, k, sc.out[k], s[i].output[k])
			}
		}
		t.Logf("input %d: weights within %.3g of Captum's, outputs within %.3g", i, dw, do)
		near(t, "input "+strconv.Itoa(i)+" OLS of our samples' values", cfg.fit(s[i].masks, sc), ols[i], 1e-3)
	}
}

func within32(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	for j := range want {
		if d := float64(got[j]) - float64(want[j]); d > tol || d < -tol {
			t.Fatalf("%s[%d] = %v, want %v", what, j, got[j], want[j])
		}
	}
}

func abs(v float64) float64 { return max(v, -v) }
