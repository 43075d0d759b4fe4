package main

import (
	"bytes"
	"encoding/csv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/nn"
)

// predictHeader is the header of uaxai predict's table, written out here
// rather than taken from host/data, so that a change of either shows.
const predictHeader = "input,predicted,class,normal,sag,swell,interruption,impulsive_transient,oscillatory_transient," +
	"harmonics,flicker,notch,spike,sag_harmonics,swell_harmonics,interruption_harmonics,flicker_harmonics,flicker_sag,flicker_swell"

// predictTable is uaxai predict's stdout, read back.
type predictTable struct {
	predicted []int
	class     []string
	probs     [][]float64
}

// predict runs uaxai predict with args and reads its table, checking its
// form: the header, the input column (0, 1, ...), the class column (the
// header's name of the predicted class), 16 probabilities a line.
func predict(t *testing.T, args ...string) predictTable {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"predict"}, args...), &out, &errb); code != 0 {
		t.Fatalf("predict %v: exit %d: %s", args, code, errb.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if lines[0] != predictHeader {
		t.Fatalf("header %q, want %q", lines[0], predictHeader)
	}
	names := strings.Split(predictHeader, ",")[3:]
	var tab predictTable
	for i, line := range lines[1:] {
		f := strings.Split(line, ",")
		if len(f) != 3+16 {
			t.Fatalf("line %d: %d fields, want 19", i+2, len(f))
		}
		if f[0] != strconv.Itoa(i) {
			t.Errorf("line %d: input %q, want %d", i+2, f[0], i)
		}
		c, err := strconv.Atoi(f[1])
		if err != nil || c < 0 || c >= 16 {
			t.Fatalf("line %d: predicted %q", i+2, f[1])
		}
		if f[2] != names[c] {
			t.Errorf("line %d: class %q, want %q (class %d)", i+2, f[2], names[c], c)
		}
		row := make([]float64, 16)
		for j, s := range f[3:] {
			// float32 values: each parses exactly as a float32.
			v, err := strconv.ParseFloat(s, 32)
			if err != nil {
				t.Fatalf("line %d column %d: %v", i+2, j+4, err)
			}
			row[j] = v
		}
		tab.predicted, tab.class, tab.probs = append(tab.predicted, c), append(tab.class, f[2]), append(tab.probs, row)
	}
	return tab
}

// argmax is the index of the largest value, the lower on ties.
func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// TestPredictGolden: `uaxai predict` on the golden model and waveforms
// reproduces PyTorch's probabilities within 1e-5, and predicts the argmax
// of PyTorch's probabilities.
func TestPredictGolden(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	tab := predict(t, "--weights", filepath.Join(dir, "model.safetensors"), "--input", filepath.Join(dir, "waveforms.csv"))
	want := golden.CSV32(t, filepath.Join(dir, "probs.csv"))
	if len(tab.probs) != len(want) {
		t.Fatalf("%d lines, want %d", len(tab.probs), len(want))
	}
	for r, row := range tab.probs {
		w := make([]float64, len(want[r]))
		for j, v := range want[r] {
			w[j] = float64(v)
			if d := math.Abs(row[j] - w[j]); d > 1e-5 {
				t.Errorf("input %d class %d: %g, want %g", r, j, row[j], w[j])
			}
		}
		if tab.predicted[r] != argmax(w) {
			t.Errorf("input %d: predicted %d, PyTorch's argmax %d", r, tab.predicted[r], argmax(w))
		}
	}
}

// perturbed writes the golden model with every parameter of fc2 (the
// last layer) moved by N(0, 0.5^2): another network of the same
// architecture, as another member of an ensemble would be.
func perturbed(t *testing.T, dir string) string {
	t.Helper()
	arch := nn.PaperArch()
	p, err := nn.LoadParams(filepath.Join(dir, "model.safetensors"), arch)
	if err != nil {
		t.Fatal(err)
	}
	lay, err := nn.NewLayout(arch)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, ti := range lay.Tensors {
		if strings.HasPrefix(ti.Name, "fc2.") {
			v := lay.View(p.Data, ti.Name)
			for i := range v {
				v[i] += float32(0.5 * r.NormFloat64())
			}
		}
	}
	path := filepath.Join(t.TempDir(), "b.safetensors")
	if err := nn.SaveParams(path, p, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPredictMean: with two weights files, the probabilities are the
// mean of the two single-file runs' (within float32 rounding), the same
// with --weights A,B and with --weights repeated; rows sum to 1; the
// predicted class is the row's argmax; --out writes the same numbers as a
// bare matrix.
func TestPredictMean(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	a, b := filepath.Join(dir, "model.safetensors"), perturbed(t, dir)
	in := filepath.Join(dir, "waveforms.csv")
	ta := predict(t, "--weights", a, "--input", in)
	tb := predict(t, "--weights", b, "--input", in)
	both := predict(t, "--weights", a+","+b, "--input", in)
	repeated := predict(t, "--input", in, "--weights", a, "--weights", b)
	differ := 0
	for r := range both.probs {
		sum := 0.0
		for j, v := range both.probs[r] {
			mean := (ta.probs[r][j] + tb.probs[r][j]) / 2
			if d := math.Abs(v - mean); d > 1e-7 {
				t.Errorf("input %d class %d: %g, want the mean %g of %g and %g", r, j, v, mean, ta.probs[r][j], tb.probs[r][j])
			}
			if repeated.probs[r][j] != v {
				t.Errorf("input %d class %d: --weights repeated gives %g, --weights A,B %g", r, j, repeated.probs[r][j], v)
			}
			if math.Abs(ta.probs[r][j]-tb.probs[r][j]) > 1e-3 {
				differ++
			}
			sum += v
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("input %d: probabilities sum to %g", r, sum)
		}
		if both.predicted[r] != argmax(both.probs[r]) {
			t.Errorf("input %d: predicted %d, argmax %d", r, both.predicted[r], argmax(both.probs[r]))
		}
	}
	if differ < len(both.probs) {
		t.Fatalf("the two networks differ in %d probabilities only: the test shows nothing", differ)
	}
	changed := 0
	for r := range both.predicted {
		if both.predicted[r] != ta.predicted[r] {
			changed++
		}
	}
	t.Logf("%d of %d predictions changed by the second network", changed, len(both.predicted))

	outDir := t.TempDir()
	out := filepath.Join(outDir, "p.csv")
	var stdout, errb bytes.Buffer
	if code := run([]string{"predict", "--weights", a, "--weights", b, "--input", in, "--out", out}, &stdout, &errb); code != 0 {
		t.Fatalf("--out: exit %d: %s", code, errb.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("--out: stdout %q, want nothing", stdout.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != len(both.probs) {
		t.Fatalf("--out: %d lines, want %d", len(lines), len(both.probs))
	}
	for r, line := range lines {
		f := strings.Split(line, ",")
		if len(f) != 16 {
			t.Fatalf("--out line %d: %d values, want 16 (no header, no other column)", r+1, len(f))
		}
		for j, s := range f {
			v, err := strconv.ParseFloat(s, 32)
			if err != nil || v != both.probs[r][j] {
				t.Errorf("--out line %d value %d: %q (%v), stdout has %g", r+1, j+1, s, err, both.probs[r][j])
			}
			// The shortest form: one digit fewer does not read back.
			if short := strconv.FormatFloat(v, 'g', -1, 32); s != short {
				t.Errorf("--out line %d value %d: %q, want the shortest form %q", r+1, j+1, s, short)
			}
		}
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 1 {
		t.Errorf("--out left %d files in its directory, want p.csv only", len(ents))
	}
}

// TestPredictBadInput: errors name the file and line, the flag, or the
// weights file that is wrong.
func TestPredictBadInput(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	model, in := filepath.Join(dir, "model.safetensors"), filepath.Join(dir, "waveforms.csv")
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("1,2,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.safetensors")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--weights", model, "--input", bad}, []string{"bad.csv", "line 1"}},
		{[]string{"--weights", filepath.Join(dir, "param_grads_zero_mask.safetensors"), "--input", in}, []string{"missing parameter"}},
		{[]string{"--weights", model + "," + missing, "--input", in}, []string{"weights file 2 of 2", "missing.safetensors"}},
		{[]string{"--weights", model + ",", "--input", in}, []string{"--weights", "an empty file name"}},
		{[]string{"--weights", model}, []string{"--weights and --input are required", "Usage: uaxai predict"}},
		{[]string{"--weights", model, "--input", in, "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"--weights", model, "--input", in, "--out", filepath.Join(t.TempDir(), "no", "p.csv")}, []string{"--out", "p.csv"}},
		{[]string{"--weights", model, "--input", in, "--reference", dir, "--out", filepath.Join(t.TempDir(), "p.csv")}, []string{"--reference adds the ood columns", "use one"}},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"predict"}, c.args...), &out, &errb)
		for _, w := range c.want {
			if code != 1 || !strings.Contains(errb.String(), w) {
				t.Errorf("predict %v: exit %d, stderr %q: want exit 1 and %q", c.args, code, errb.String(), w)
			}
		}
	}
}

// referenceDir writes a data folder of 10 generated records a class.
func referenceDir(t *testing.T) string {
	t.Helper()
	all := make([]int, data.NumClasses)
	for i := range all {
		all[i] = i
	}
	ref, err := data.MakeSplit(t.Context(), data.DefaultConfig(), 1, "reference", 10, all)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ref")
	if err := data.WriteCSV(dir, ref); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestExplainReference: explain --reference writes the same maps as
// without it, and names on stderr the input 25 times the amplitude of
// another as outside what the model was trained on, with both checks'
// notes.
func TestExplainReference(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	model := filepath.Join(dir, "model.safetensors")
	b, err := os.ReadFile(filepath.Join(dir, "waveforms.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var far []string
	for _, f := range strings.Split(lines[0], ",") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		far = append(far, strconv.FormatFloat(25*v, 'g', -1, 64))
	}
	lines = append(lines[:3], strings.Join(far, ","))
	in := filepath.Join(t.TempDir(), "in.csv")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	exe := buildUaxai(t)
	args := []string{"explain", "--weights", model, "--input", in, "--explainer", "occlusion", "--set", "window=60", "--set", "stride=20", "--target", "predicted"}
	plain, plainErr, code := graphExe(t, exe, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, plainErr)
	}
	checked, e, code := graphExe(t, exe, append(args, "--reference", referenceDir(t))...)
	if code != 0 {
		t.Fatalf("--reference: exit %d: %s", code, e)
	}
	if plain != checked {
		t.Errorf("--reference changed the maps")
	}
	for _, w := range []string{"note: out-of-distribution check of the inputs", "note: feature-space out-of-distribution check", "warning: input 3 (line 4, predicted ", "penultimate features"} {
		if !strings.Contains(e, w) {
			t.Errorf("stderr %q lacks %q", e, w)
		}
	}
	if strings.Contains(plainErr, "warning: input") {
		t.Errorf("without --reference, stderr %q warns of an input", plainErr)
	}
}

// TestPredictReferenceColumns: with --reference, the table gains
// ood_score, feature_ood_score, ood and ood_reason after the
// probabilities; ood is true exactly when a reason is given, and the
// notes on stderr say how the checks were fitted.
func TestPredictReferenceColumns(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	model, in := filepath.Join(dir, "model.safetensors"), filepath.Join(dir, "waveforms.csv")
	refDir := referenceDir(t)
	var out, errb bytes.Buffer
	if code := run([]string{"predict", "--weights", model, "--input", in, "--reference", refDir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("stdout: %v", err)
	}
	h := rows[0]
	if n := len(h); n != 3+16+4 || strings.Join(h[n-4:], ",") != "ood_score,feature_ood_score,ood,ood_reason" {
		t.Fatalf("header %q", h)
	}
	for i, r := range rows[1:] {
		n := len(r)
		if _, err := strconv.ParseFloat(r[n-4], 64); err != nil {
			t.Errorf("line %d: ood_score %q", i+2, r[n-4])
		}
		if _, err := strconv.ParseFloat(r[n-3], 64); err != nil {
			t.Errorf("line %d: feature_ood_score %q", i+2, r[n-3])
		}
		if (r[n-2] == "true") != (r[n-1] != "") {
			t.Errorf("line %d: ood %q, reason %q", i+2, r[n-2], r[n-1])
		}
	}
	for _, w := range []string{"note: out-of-distribution check of the inputs", "note: feature-space out-of-distribution check of the inputs"} {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("stderr %q lacks %q", errb.String(), w)
		}
	}
}
