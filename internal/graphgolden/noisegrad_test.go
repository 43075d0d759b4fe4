package graphgolden

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/plugins/explainer/gradients"
	"github.com/uaxai/uaxai/plugins/posterior/noisegrad"
	"github.com/uaxai/uaxai/plugins/summary/mean"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// TestNoiseGradReference: NoiseGrad as uaxai computes it, the mean
// summary of the saliency maps of posterior.noisegrad's draws, equals
// NoiseGrad as its authors' algorithm computes it in PyTorch (every
// parameter times N(1, 0.2^2) factors, Captum's Saliency of each noisy
// network, the mean: testdata/peers/gradients_golden.py --noisegrad) on
// the golden FCN, within 1e-4 of the map's largest value, when the draws
// take the reference's factors (eps = (factor - 1) / sigma; the
// batchnorm buffers, which the reference leaves alone, are not trainable
// here either).
func TestNoiseGradReference(t *testing.T) {
	const sigma, draws = 0.2, 4
	ctx := context.Background()
	dir := golden.Dir(t, "archs")
	spec, err := graph.ReadSpecFile(filepath.Join(golden.RepoRoot(t), "recipes", "archs", "fcn.toml"))
	if err != nil {
		t.Fatal(err)
	}
	arch := nn.GraphArch(spec)
	sd, err := safetensors.ReadFile(filepath.Join(dir, "fcn", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := nn.ParamsFromFile(arch, sd, "model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	lay, err := nn.NewLayout(arch)
	if err != nil {
		t.Fatal(err)
	}
	mask := lay.TrainableMask()
	x := golden.Flat(golden.CSV32(t, filepath.Join(dir, "fcn", "waveforms.csv")))
	var y []int
	for _, r := range golden.CSV32(t, filepath.Join(dir, "fcn", "targets.csv"))[:2] {
		y = append(y, int(r[0]))
	}
	n := arch.InChannels * arch.InLen
	x = x[:2*n]
	maps := [][][]float64{make([][]float64, draws), make([][]float64, draws)}
	ref := filepath.Join(golden.Dir(t, "gradients"), "fcn")
	for s := range draws {
		f, err := safetensors.ReadFile(filepath.Join(ref, fmt.Sprintf("noisegrad_factors_%d.safetensors", s)))
		if err != nil {
			t.Fatal(err)
		}
		eps := make([]float64, lay.Size)
		set := 0
		for _, tn := range f.Tensors {
			info, ok := lay.Lookup(tn.Name)
			if !ok {
				t.Fatalf("factor tensor %s is no parameter of the FCN", tn.Name)
			}
			off := info.Offset
			for i, v := range tn.Data {
				if !mask[off+i] {
					t.Fatalf("%s[%d] has a factor but is not trainable", tn.Name, i)
				}
				eps[off+i] = (float64(v) - 1) / sigma
				set++
			}
		}
		trainable := 0
		for _, m := range mask {
			if m {
				trainable++
			}
		}
		if set != trainable {
			t.Fatalf("draw %d: %d factors for %d trainable parameters", s, set, trainable)
		}
		draw := noisegrad.Scale(make([]float32, lay.Size), base.Data, mask, sigma, eps)
		model, err := nn.NewModel(nn.Params{Arch: arch, Data: draw})
		if err != nil {
			t.Fatal(err)
		}
		out, err := gradients.NewSaliency().Explain(ctx, model, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range out {
			maps[i][s] = out[i]
		}
	}
	res, err := mean.New().Summarise(ctx, maps, sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	got := [][]float64{res[0].Map, res[1].Map}
	golden.RowsClose(t, "NoiseGrad", got, golden.CSV32(t, filepath.Join(ref, "noisegrad.csv")), 1e-4)
}
