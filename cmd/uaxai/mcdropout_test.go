package main

import (
	"bytes"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// TestMCDropoutFlags: --mc-dropout S of explain and predict is an integer
// 2..10000, refused with one weights file too many (an ensemble) and on
// the built-in network, which has no dropout; each refusal says what is
// accepted, and nothing goes to stdout.
func TestMCDropoutFlags(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	model, wave, labels := filepath.Join(dir, "model.safetensors"), filepath.Join(dir, "waveforms.csv"), filepath.Join(dir, "labels.csv")
	const count = `for flag -mc-dropout: want an integer 2..10000, the number of MC-dropout draws of the one --weights network`
	for _, cmd := range []struct {
		name string
		args []string
	}{
		{"explain", []string{"--input", wave, "--explainer", "occlusion", "--target", labels}},
		{"predict", []string{"--input", wave}},
	} {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--weights", model, "--mc-dropout", "1"}, `invalid value "1" ` + count},
			{[]string{"--weights", model, "--mc-dropout", "0"}, `invalid value "0" ` + count},
			{[]string{"--weights", model, "--mc-dropout", "10001"}, `invalid value "10001" ` + count},
			{[]string{"--weights", model, "--mc-dropout", "three"}, `invalid value "three" ` + count},
			{[]string{"--weights", model + "," + model, "--mc-dropout", "3"}, "--mc-dropout 3 with 2 weights files: MC dropout samples the dropout of one network, and several files are an ensemble, one draw each (accepted: one weights file with --mc-dropout, or several without it)"},
			{[]string{"--weights", model, "--mc-dropout", "3"}, `--mc-dropout: architecture "paper-1dcnn" has no dropout node: MC dropout samples a network's own dropout, so every draw would be the network itself (accepted: a graph spec with dropout nodes`},
		} {
			args := append(append([]string{cmd.name}, cmd.args...), c.args...)
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			if code == 0 || !strings.Contains(errb.String(), c.want) {
				t.Errorf("%v: exit %d, stderr %q; want %q", args, code, errb.String(), c.want)
			}
			if out.Len() > 0 {
				t.Errorf("%v: stdout %q", args, out.String())
			}
		}
	}
}

// TestMCDropoutPredict: predict --mc-dropout S on a graph spec with a
// dropout node is a posterior predictive of S draws: probabilities that
// sum to 1, its argmax the predicted class, other than the network's own
// (dropout off); the same --seed gives the same bytes, another seed other
// probabilities.
func TestMCDropoutPredict(t *testing.T) {
	dir := golden.Dir(t, "archs")
	spec := filepath.Join(golden.RepoRoot(t), "recipes", "archs", "stridednet.toml")
	base := []string{"--model", spec, "--weights", filepath.Join(dir, "stridednet", "model.safetensors"), "--input", filepath.Join(dir, "stridednet", "waveforms.csv")}
	mc := predict(t, append(base, "--mc-dropout", "4", "--seed", "5")...)
	again := predict(t, append(base, "--seed", "5", "--mc-dropout", "4")...)
	other := predict(t, append(base, "--mc-dropout", "4", "--seed", "6")...)
	plain := predict(t, base...)
	var dSeed, dPlain float64
	for r, row := range mc.probs {
		sum := 0.0
		for j, v := range row {
			sum += v
			if again.probs[r][j] != v {
				t.Errorf("input %d class %d: %g, then %g with the same seed", r, j, v, again.probs[r][j])
			}
			dSeed = max(dSeed, math.Abs(v-other.probs[r][j]))
			dPlain = max(dPlain, math.Abs(v-plain.probs[r][j]))
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("input %d: probabilities sum to %g", r, sum)
		}
		if mc.predicted[r] != argmax(row) {
			t.Errorf("input %d: predicted %d, argmax %d", r, mc.predicted[r], argmax(row))
		}
	}
	if dSeed < 1e-4 || dPlain < 1e-4 {
		t.Errorf("seeds 5 and 6 differ by %g at most, MC dropout and the network itself by %g: want other draws, other probabilities", dSeed, dPlain)
	}
}

// TestMCDropoutExplain: explain --mc-dropout 3, run by the built command,
// on a graph spec with a dropout node writes what 3 weights files give: a
// header input,draw,v0,..., 3 lines an input, their maps all different,
// and with --summary mean one line an input, the mean of the 3 maps; two
// runs with the same --seed write the same bytes, another seed others.
func TestMCDropoutExplain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	exe := buildUaxai(t)
	dir := golden.Dir(t, "archs")
	spec := filepath.Join(golden.RepoRoot(t), "recipes", "archs", "stridednet.toml")
	base := []string{"explain", "--model", spec, "--weights", filepath.Join(dir, "stridednet", "model.safetensors"), "--input", filepath.Join(dir, "stridednet", "waveforms.csv"),
		"--explainer", "occlusion", "--set", "window=40", "--set", "stride=20", "--target", "predicted", "--mc-dropout", "3"}
	uaxaiRun := func(args ...string) string {
		t.Helper()
		out, errs, code := graphExe(t, exe, append(slices.Clone(base), args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		if !strings.Contains(errs, "explain 8 inputs x 3 draws") {
			t.Errorf("%v: stderr does not say 3 draws:\n%s", args, errs)
		}
		return out
	}
	out := uaxaiRun("--seed", "5")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "input,draw,v0,v1,") || strings.Count(lines[0], ",") != 641 {
		t.Fatalf("header %.40q..., want input,draw,v0..v639", lines[0])
	}
	if len(lines) != 1+8*3 {
		t.Fatalf("%d lines, want a header and 8 inputs x 3 draws", len(lines))
	}
	maps := make([][][]float64, 8)
	for k, line := range lines[1:] {
		f := strings.Split(line, ",")
		if f[0] != strconv.Itoa(k/3) || f[1] != strconv.Itoa(k%3) {
			t.Fatalf("line %d tagged %s,%s, want %d,%d", k+2, f[0], f[1], k/3, k%3)
		}
		maps[k/3] = append(maps[k/3], parseMaps(t, strings.Join(f[2:], ","))[0])
	}
	for i, ms := range maps {
		if slices.Equal(ms[0], ms[1]) || slices.Equal(ms[0], ms[2]) || slices.Equal(ms[1], ms[2]) {
			t.Errorf("input %d: two draws give the same map", i)
		}
	}
	if uaxaiRun("--seed", "5") != out {
		t.Error("the same --seed wrote other bytes")
	}
	if uaxaiRun("--seed", "6") == out {
		t.Error("--seed 5 and 6 wrote the same bytes")
	}
	mean := strings.Split(strings.TrimSuffix(uaxaiRun("--seed", "5", "--summary", "mean"), "\n"), "\n")
	if len(mean) != 1+8 || !strings.HasPrefix(mean[0], "input,summary,part,v0,") {
		t.Fatalf("--summary mean: %d lines, header %.30q", len(mean), mean[0])
	}
	for i, line := range mean[1:] {
		f := strings.Split(line, ",")
		if f[0] != strconv.Itoa(i) || f[1] != "mean" || f[2] != "map" {
			t.Fatalf("mean line %d tagged %v", i, f[:3])
		}
		got := parseMaps(t, strings.Join(f[3:], ","))[0]
		for n, v := range got {
			want := (maps[i][0][n] + maps[i][1][n] + maps[i][2][n]) / 3
			if math.Abs(v-want) > 1e-15*max(1, math.Abs(want)) {
				t.Fatalf("input %d value %d: mean %g, mean of the 3 draw lines %g", i, n, v, want)
			}
		}
	}
}
