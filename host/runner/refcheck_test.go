package runner

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/internal/golden"
)

// generated writes perClass generated records of each of classes (seed)
// to a data folder, and returns it and the split.
func generated(t *testing.T, seed uint64, perClass int, classes []int) (string, data.Split) {
	t.Helper()
	s, err := data.MakeSplit(t.Context(), data.DefaultConfig(), seed, "generated", perClass, classes)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "d")
	if err := data.WriteCSV(dir, s); err != nil {
		t.Fatal(err)
	}
	return dir, s
}

// TestPredictReference: with --reference, every input gets both checks.
// An input 25 times the generator's amplitude is flagged by both; inputs
// drawn like the reference are flagged by the feature check at most a
// few times; an input's scores do not depend on the other inputs of the
// file (the same input alone scores the same); and the flag is exactly
// "a reason was given".
func TestPredictReference(t *testing.T) {
	weights, _ := paperWeights(t)
	ctx := t.Context()
	cfg := data.DefaultConfig()
	all := make([]int, data.NumClasses)
	for i := range all {
		all[i] = i
	}
	refDir, _ := generated(t, 1, 20, all)
	_, in := generated(t, 2, 2, all)
	far := in.Records[0]
	far.X = append([]float64(nil), far.X...)
	for i := range far.X {
		far.X[i] *= 25
	}
	in.Records = append(in.Records, far)
	inDir := filepath.Join(t.TempDir(), "in")
	if err := data.WriteCSV(inDir, in); err != nil {
		t.Fatal(err)
	}
	pred, err := Predict(ctx, PredictOptions{Weights: []string{weights, weights}, Input: filepath.Join(inDir, data.WaveformsFile), Reference: refDir, Fs: cfg.Fs, F0: cfg.F0})
	if err != nil {
		t.Fatal(err)
	}
	n := len(in.Records)
	if len(pred.Checks) != n || len(pred.CheckNotes) != 2 {
		t.Fatalf("%d checks for %d inputs, notes %q", len(pred.Checks), n, pred.CheckNotes)
	}
	fflagged := 0
	for i, c := range pred.Checks {
		if !c.HasFeature || c.OOD != (c.Reason != "") {
			t.Errorf("input %d: %+v", i, c)
		}
		if strings.Contains(c.Reason, "penultimate") && i < n-1 {
			fflagged++
		}
	}
	last := pred.Checks[n-1]
	if !last.OOD || !strings.Contains(last.Reason, "penultimate") || !inputReason.MatchString(last.Reason) {
		t.Errorf("the input at 25 times the amplitude: %+v; want flagged by both checks", last)
	}
	if fflagged > 3 { // 1% of 32 expected; 4 or more has probability < 0.001
		t.Errorf("%d of %d inputs like the reference flagged by the feature check", fflagged, n-1)
	}
	// the far input alone
	one := data.Split{Records: in.Records[n-1:], Classes: in.Classes}
	oneDir := filepath.Join(t.TempDir(), "one")
	if err := data.WriteCSV(oneDir, one); err != nil {
		t.Fatal(err)
	}
	alone, err := Predict(ctx, PredictOptions{Weights: []string{weights, weights}, Input: filepath.Join(oneDir, data.WaveformsFile), Reference: refDir, Fs: cfg.Fs, F0: cfg.F0})
	if err != nil {
		t.Fatal(err)
	}
	if a := alone.Checks[0]; math.Abs(a.Feature-last.Feature) > 1e-9*last.Feature || a.Score != last.Score || a.Reason != last.Reason {
		t.Errorf("the far input alone: %+v; among the others: %+v", a, last)
	}
}

// TestPredictReferenceErrors: a reference that does not fit the inputs
// or the network is an error naming it and what is accepted.
func TestPredictReferenceErrors(t *testing.T) {
	weights, _ := paperWeights(t)
	ctx := t.Context()
	cfg := data.DefaultConfig()
	inDir, _ := generated(t, 2, 1, []int{data.Sag})
	fewDir, _ := generated(t, 3, 3, []int{data.Sag, data.Swell})
	for _, c := range []struct {
		ref    string
		fs, f0 float64
		want   string
	}{
		{filepath.Join(t.TempDir(), "none"), cfg.Fs, cfg.F0, "--reference"},
		{fewDir, cfg.Fs, cfg.F0, "at least 10 records of a class"},
		{fewDir, cfg.Fs, 0, "--f0 0"},
	} {
		_, err := Predict(ctx, PredictOptions{Weights: []string{weights}, Input: filepath.Join(inDir, data.WaveformsFile), Reference: c.ref, Fs: c.fs, F0: c.f0})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reference %s, fs %v, f0 %v: %v; want an error with %q", c.ref, c.fs, c.f0, err, c.want)
		}
	}
}

// TestONNXEnsemble: weights that are ONNX files, given without a model,
// are an ensemble, one draw a file: its probabilities are the mean of
// each file's alone (two networks of the golden archs), and explain
// gives one map a draw.
func TestONNXEnsemble(t *testing.T) {
	root := golden.Dir(t, "archs")
	a, b := filepath.Join(root, "fcn", "model.onnx"), filepath.Join(root, "stridednet", "model.onnx")
	in := filepath.Join(root, "fcn", "waveforms.csv")
	both, err := Predict(t.Context(), PredictOptions{Weights: []string{a, b}, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	pa, err := Predict(t.Context(), PredictOptions{Model: ONNXFile{Path: a}, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := Predict(t.Context(), PredictOptions{Model: ONNXFile{Path: b}, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	differ := false
	for i, row := range both.Probs {
		for c, v := range row {
			want := (float64(pa.Probs[i][c]) + float64(pb.Probs[i][c])) / 2
			if math.Abs(float64(v)-want) > 1e-6 {
				t.Fatalf("input %d class %d: %g, the mean of the two files' %g", i, c, v, want)
			}
			differ = differ || pa.Probs[i][c] != pb.Probs[i][c]
		}
	}
	if !differ {
		t.Fatal("the two networks give the same probabilities: the test shows nothing")
	}
	// a mix of an ONNX file and a state_dict is not an ensemble: the
	// ONNX file is named for what it is
	_, err = Predict(t.Context(), PredictOptions{Weights: []string{filepath.Join(golden.Dir(t, "paper-1dcnn"), "model.safetensors"), a}, Input: in})
	if err == nil || !strings.Contains(err.Error(), "ONNX") {
		t.Errorf("a state_dict and an ONNX file: %v; want an error naming the ONNX file", err)
	}
}
