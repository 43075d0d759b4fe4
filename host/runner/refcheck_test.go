package runner

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
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
