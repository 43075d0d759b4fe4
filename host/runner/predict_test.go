package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/data/npy"
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
// softmax of the unfolded network's eval-mode logits (300 lines: more than
// one batch of Predict), the predicted class their argmax.
func TestPredict(t *testing.T) {
	weights, params := paperWeights(t)
	s, err := data.MakeSplit(t.Context(), data.DefaultConfig(), 1, "predict", 100, []int{data.Sag, data.Notch, data.Normal}) // 300 inputs: a batch of 256 and a part of one
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "d")
	if err := data.WriteCSV(dir, s); err != nil {
		t.Fatal(err)
	}
	pred, err := Predict(t.Context(), PredictOptions{Weights: []string{weights}, Input: filepath.Join(dir, data.WaveformsFile)})
	if err != nil {
		t.Fatal(err)
	}
	got := pred.Probs
	net, err := nn.NewPass(params.Arch, len(s.Records), 1)
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
	want := make([]float32, len(s.Records)*k)
	nn.Softmax(want, net.Forward(params.Data, x, false, nil), k)
	if len(got) != len(s.Records) {
		t.Fatalf("%d rows for %d waveforms", len(got), len(s.Records))
	}
	for i, row := range got {
		if len(row) != k {
			t.Fatalf("row %d: %d values, want %d", i, len(row), k)
		}
		best := 0
		for j, v := range row {
			if d := math.Abs(float64(v - want[i*k+j])); d > 1e-5 {
				t.Errorf("row %d class %d: %g, want %g", i, j, v, want[i*k+j])
			}
			if v > row[best] {
				best = j
			}
		}
		if pred.Predicted[i] != best {
			t.Errorf("row %d: predicted %d, argmax %d", i, pred.Predicted[i], best)
		}
	}
	if len(pred.Classes) != k || pred.Classes[data.Sag] != "sag" || pred.Classes[data.FlickerSwell] != "flicker_swell" {
		t.Errorf("class names %q", pred.Classes)
	}
	// Two draws of the same network: their mean is the one network's
	// probabilities, to float32 rounding.
	twice, err := Predict(t.Context(), PredictOptions{Weights: []string{weights, weights}, Input: filepath.Join(dir, data.WaveformsFile)})
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range twice.Probs {
		for j, v := range row {
			if d := math.Abs(float64(v - got[i][j])); d > 1e-7 {
				t.Fatalf("row %d class %d: the mean of two copies is %g, one gives %g", i, j, v, got[i][j])
			}
		}
	}
}

// TestPredictTies: a network whose last layer is zero gives every class
// the same probability, 1/16, and the predicted class is then the lowest
// (the documented tie-break).
func TestPredictTies(t *testing.T) {
	_, params := paperWeights(t)
	flat := nn.Params{Arch: params.Arch, Data: slices.Clone(params.Data)}
	lay, err := nn.NewLayout(flat.Arch)
	if err != nil {
		t.Fatal(err)
	}
	clear(lay.View(flat.Data, "fc2.weight"))
	clear(lay.View(flat.Data, "fc2.bias"))
	path := filepath.Join(t.TempDir(), "flat.safetensors")
	if err := nn.SaveParams(path, flat, nil); err != nil {
		t.Fatal(err)
	}
	s, err := data.MakeSplit(t.Context(), data.DefaultConfig(), 1, "ties", 1, []int{data.Sag, data.Swell})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "d")
	if err := data.WriteCSV(dir, s); err != nil {
		t.Fatal(err)
	}
	pred, err := Predict(t.Context(), PredictOptions{Weights: []string{path}, Input: filepath.Join(dir, data.WaveformsFile)})
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range pred.Probs {
		for c, v := range row {
			if v != row[0] {
				t.Fatalf("input %d class %d: %g, class 0 %g: want one probability for all", i, c, v, row[0])
			}
		}
		if pred.Predicted[i] != 0 {
			t.Errorf("input %d: predicted %d on a tie, want the lowest class, 0", i, pred.Predicted[i])
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
	ragged := filepath.Join(dir, "ragged.csv")
	if err := os.WriteFile(ragged, []byte(strings.Repeat("0.5,", 639)+"0.5\n"+strings.Repeat("0.5,", 638)+"0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	three := filepath.Join(dir, "three.npy")
	f, err := os.Create(three)
	if err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFloat32(f, []int{2, 3, 640}, make([]float32, 2*3*640)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, c := range []struct {
		opt  PredictOptions
		want []string
	}{
		{PredictOptions{Weights: []string{weights}, Input: short}, []string{short, "line 1"}},
		{PredictOptions{Weights: []string{weights}, Input: ragged}, []string{ragged, "line 2", "want 640"}},
		{PredictOptions{Weights: []string{weights}, Input: one, Channels: 3}, []string{one, "line 1 holds 640 values", "--channels 3"}},
		{PredictOptions{Weights: []string{weights}, Input: three, Channels: 2}, []string{three, "shape [2 3 640] has 3 channel(s)", "--channels 3"}},
		{PredictOptions{Weights: []string{weights}, Input: three}, []string{"weights file 1 of 1", "conv1.weight", "[8 1 3]", "[8 3 3]"}},
		{PredictOptions{Weights: []string{weights}, Input: missing}, []string{missing}},
		{PredictOptions{Weights: []string{missing}, Input: one}, []string{missing, "weights file 1 of 1"}},
		{PredictOptions{Weights: []string{weights, one}, Input: one}, []string{one, "weights file 2 of 2"}},
		{PredictOptions{Weights: []string{weights}, Input: one, Arch: "nope"}, []string{`"nope"`}},
		{PredictOptions{Input: one}, []string{"no weights file"}},
	} {
		_, err := Predict(t.Context(), c.opt)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v, want an error naming %s", c.opt, err, w)
			}
		}
	}
	if p, err := Predict(t.Context(), PredictOptions{Weights: []string{weights}, Input: one}); err != nil || len(p.Probs) != 1 {
		t.Errorf("one waveform: %+v, %v", p, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Predict(ctx, PredictOptions{Weights: []string{weights}, Input: one}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// TestPredictClassNames: --classes names the columns in its order; a
// file of another number of names than the network's logits is an error
// naming both counts.
func TestPredictClassNames(t *testing.T) {
	weights, _ := paperWeights(t)
	dir := t.TempDir()
	one := filepath.Join(dir, "one.csv")
	if err := os.WriteFile(one, []byte(strings.Repeat("0.5,", nn.PaperArch().InLen-1)+"0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var names []string
	for c := range 16 {
		names = append(names, fmt.Sprintf("k%02d", 15-c))
	}
	classes := filepath.Join(dir, "classes.txt")
	if err := os.WriteFile(classes, []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Predict(t.Context(), PredictOptions{Weights: []string{weights}, Input: one, Classes: classes})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Classes, names) {
		t.Errorf("columns %q, want the file's %q", p.Classes, names)
	}
	if err := os.WriteFile(classes, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Predict(t.Context(), PredictOptions{Weights: []string{weights}, Input: one, Classes: classes}); err == nil || !strings.Contains(err.Error(), "names 2 classes, and the network has 16 logits") {
		t.Errorf("two names for 16 logits: %v", err)
	}
}
