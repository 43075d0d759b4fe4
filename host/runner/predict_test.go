package runner

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/sdk/nn"
)

// paperWeights writes weights of the paper's network to a file: PyTorch's
// initialisation with random batchnorm weights and running statistics, so
// that the eval-mode batchnorm is not the identity.
func paperWeights(t *testing.T) (string, nn.Params) {
	t.Helper()
	arch := nn.PaperArch()
	lay, err := nn.NewLayout(arch)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	p := make([]float32, lay.Size)
	nn.Init(lay, p, r)
	for _, ti := range lay.Tensors {
		v := lay.View(p, ti.Name)
		switch {
		case strings.HasSuffix(ti.Name, ".running_mean"):
			for i := range v {
				v[i] = float32(0.2 * r.NormFloat64())
			}
		case strings.HasSuffix(ti.Name, ".running_var"):
			for i := range v {
				v[i] = float32(0.5 + r.Float64())
			}
		case strings.HasPrefix(ti.Name, "bn"):
			for i := range v {
				v[i] += float32(0.3 * r.NormFloat64())
			}
		}
	}
	params := nn.Params{Arch: arch, Data: p}
	path := filepath.Join(t.TempDir(), "w.safetensors")
	if err := nn.SaveParams(path, params, nil); err != nil {
		t.Fatal(err)
	}
	return path, params
}

// TestPredict: the probabilities of every line of a waveforms file are the
// softmax of the unfolded network's eval-mode logits.
func TestPredict(t *testing.T) {
	weights, params := paperWeights(t)
	s, err := data.MakeSplit(t.Context(), data.DefaultConfig(), 8, "predict", 1, []int{data.Sag, data.Notch, data.Normal})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "d")
	if err := data.WriteCSV(dir, s); err != nil {
		t.Fatal(err)
	}
	got, err := Predict(t.Context(), PredictOptions{Weights: weights, Input: filepath.Join(dir, data.WaveformsFile)})
	if err != nil {
		t.Fatal(err)
	}
	net, err := nn.NewNet(params.Arch)
	if err != nil {
		t.Fatal(err)
	}
	n, k := net.InputLen(), net.Classes()
	x := make([]float32, 0, len(s.Records)*n)
	for _, r := range s.Records {
		for _, v := range r.X {
			x = append(x, float32(v))
		}
	}
	ws := net.NewWorkspace(len(s.Records))
	net.Forward(ws, params.Data, x, false, nil)
	want := make([]float32, len(s.Records)*k)
	nn.Softmax(want, ws.Logits(), k)
	if len(got) != len(s.Records) {
		t.Fatalf("%d rows for %d waveforms", len(got), len(s.Records))
	}
	for i, row := range got {
		if len(row) != k {
			t.Fatalf("row %d: %d values, want %d", i, len(row), k)
		}
		for j, v := range row {
			if d := math.Abs(float64(v - want[i*k+j])); d > 1e-5 {
				t.Errorf("row %d class %d: %g, want %g", i, j, v, want[i*k+j])
			}
		}
	}
}

// TestPredictErrors: every error names what is wrong.
func TestPredictErrors(t *testing.T) {
	weights, _ := paperWeights(t)
	dir := t.TempDir()
	short := filepath.Join(dir, "short.csv")
	if err := os.WriteFile(short, []byte("1,2,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.csv")
	one := filepath.Join(dir, "one.csv")
	if err := os.WriteFile(one, []byte(strings.Repeat("0.5,", nn.PaperArch().InLen-1)+"0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		opt  PredictOptions
		want []string
	}{
		{PredictOptions{Weights: weights, Input: short}, []string{short, "line 1"}},
		{PredictOptions{Weights: weights, Input: missing}, []string{missing}},
		{PredictOptions{Weights: missing, Input: one}, []string{missing}},
		{PredictOptions{Weights: one, Input: one}, []string{one}},
		{PredictOptions{Weights: weights, Input: one, Arch: "nope"}, []string{`"nope"`}},
	} {
		_, err := Predict(t.Context(), c.opt)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v, want an error naming %s", c.opt, err, w)
			}
		}
	}
	if p, err := Predict(t.Context(), PredictOptions{Weights: weights, Input: one}); err != nil || len(p) != 1 {
		t.Errorf("one waveform: %d rows, %v", len(p), err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Predict(ctx, PredictOptions{Weights: weights, Input: one}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}
