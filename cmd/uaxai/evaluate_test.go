package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// TestEvaluateQuantusGolden: uaxai evaluate on the golden FCN's Saliency
// maps (a graph spec with PyTorch's weights, the maps as Captum wrote
// them) gives Quantus 0.6.0's Sparseness (normalise = "batch", as
// Quantus) and PixelFlipping curves, one line an input and metric, the
// same bytes on 1 and 2 workers; AUC with the golden mask too.
func TestEvaluateQuantusGolden(t *testing.T) {
	root := golden.RepoRoot(t)
	arch := filepath.Join(root, "testdata", "golden", "archs", "fcn")
	q := filepath.Join(root, "testdata", "golden", "quantus", "fcn")
	args := []string{"evaluate", "--model", filepath.Join(root, "recipes", "archs", "fcn.toml"),
		"--weights", filepath.Join(arch, "model.safetensors"), "--input", filepath.Join(arch, "waveforms.csv"),
		"--maps", filepath.Join(q, "saliency", "attributions.csv"), "--target", filepath.Join(arch, "targets.csv"),
		"--mask", filepath.Join(q, "mask.csv"),
		"--metric", "sparseness", "--set", "normalise=\"batch\"",
		"--metric", "metric.pixel_flipping", "--set", "features_in_step=20",
		"--metric", "auc"}
	var outs []string
	for _, w := range []string{"1", "2"} {
		var stdout, stderr bytes.Buffer
		if code := run(append(args, "--workers", w), &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		outs = append(outs, stdout.String())
	}
	if outs[0] != outs[1] {
		t.Error("the output depends on the workers")
	}
	rows, err := csv.NewReader(strings.NewReader(outs[0])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "input,draw,metric,value,undefined,curve" || len(rows) != 1+8*3 {
		t.Fatalf("header %v and %d lines: want the header and 24 lines", rows[0], len(rows))
	}
	raw, err := os.ReadFile(filepath.Join(q, "saliency", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Metrics map[string]struct {
			Scores  json.RawMessage `json:"scores"`
			TieSens []bool          `json:"tie_sensitive"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var sparse, auc []float64
	var pf [][]float64
	json.Unmarshal(doc.Metrics["Sparseness"].Scores, &sparse)
	json.Unmarshal(doc.Metrics["AUC"].Scores, &auc)
	json.Unmarshal(doc.Metrics["PixelFlipping"].Scores, &pf)
	for _, r := range rows[1:] {
		i, _ := strconv.Atoi(r[0])
		v, err := strconv.ParseFloat(r[3], 64)
		if err != nil || r[1] != "0" || r[4] != "" {
			t.Fatalf("line %v: want draw 0 and a value", r)
		}
		switch r[2] {
		case "metric.sparseness":
			if math.Abs(v-sparse[i]) > 1e-9*sparse[i] || r[5] != "" {
				t.Errorf("input %d: sparseness %v, Quantus %v", i, v, sparse[i])
			}
		case "metric.auc":
			if math.Abs(v-auc[i]) > 1e-9 {
				t.Errorf("input %d: AUC %v, Quantus %v", i, v, auc[i])
			}
		case "metric.pixel_flipping":
			pts := strings.Fields(r[5])
			if len(pts) != len(pf[i]) {
				t.Fatalf("input %d: a curve of %d points, Quantus %d", i, len(pts), len(pf[i]))
			}
			if doc.Metrics["PixelFlipping"].TieSens[i] {
				continue // numpy's unstable sort chose among ties (sdk/metric's test replays its order)
			}
			for k, p := range pts {
				x, _ := strconv.ParseFloat(p, 64)
				if math.Abs(x-pf[i][k]) > 1e-6 {
					t.Errorf("input %d point %d: %v, Quantus %v", i, k, x, pf[i][k])
					break
				}
			}
		default:
			t.Errorf("line %v: unknown metric", r)
		}
	}
}

// TestEvaluateBadInput: faults of the command line and the files are
// errors that name the flag, the file and line, and what is accepted.
func TestEvaluateBadInput(t *testing.T) {
	root := golden.RepoRoot(t)
	arch := filepath.Join(root, "testdata", "golden", "archs", "fcn")
	tmp := t.TempDir()
	short := filepath.Join(tmp, "short.csv")
	os.WriteFile(short, []byte("1,2,3\n"), 0o644)
	nan := filepath.Join(tmp, "nan.csv")
	line := strings.TrimSuffix(strings.Repeat("0.5,", 640), ",")
	os.WriteFile(nan, []byte(line+"\n"+strings.Replace(line, "0.5", "NaN", 1)+"\n"), 0o644)
	base := []string{"evaluate", "--model", filepath.Join(root, "recipes", "archs", "fcn.toml"),
		"--weights", filepath.Join(arch, "model.safetensors"), "--input", filepath.Join(arch, "waveforms.csv"), "--target", "0"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--maps", short, "--metric", "sparseness"}, "short.csv line 1: 3 values, want 640"},
		{[]string{"--maps", nan, "--metric", "sparseness"}, `nan.csv line 2 value 1: "NaN", want a finite number`},
		{[]string{"--maps", filepath.Join(arch, "input_grad.csv")}, "--metric is required (accepted: metric.attribution_localisation"},
		{[]string{"--maps", filepath.Join(arch, "input_grad.csv"), "--set", "abs=true"}, "before any --metric"},
		{[]string{"--maps", filepath.Join(arch, "input_grad.csv"), "--metric", "nope"}, `unknown metric "metric.nope" (known:`},
		{[]string{"--maps", filepath.Join(arch, "input_grad.csv"), "--metric", "sparseness", "--set", "k=3"}, `metric.sparseness: unknown key "k" (accepted: abs, normalise)`},
		{[]string{"--maps", filepath.Join(arch, "input_grad.csv"), "--metric", "auc"}, "scores against a ground-truth mask: the records have none"},
		{[]string{"--maps", filepath.Join(arch, "input_grad.csv"), "--metric", "max_sensitivity"}, "name the explainer that made the maps (--explainer)"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append(append([]string{}, base...), c.args...), &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error containing %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// TestEvaluateRobustnessThroughThePlugin: max_sensitivity explains the
// noisy copies again with the --explainer plugin (occlusion, as the maps
// were made), mprt the FCN's 7 re-initialised networks loaded into it,
// random_logit another class: finite scores (a cosine within [-1, 1],
// an MPRT curve of 7 layers), the same bytes on 1 and 2 workers and for
// the same --seed, other bytes for another seed.
func TestEvaluateRobustnessThroughThePlugin(t *testing.T) {
	exe := buildUaxai(t)
	root := golden.RepoRoot(t)
	arch := filepath.Join(root, "testdata", "golden", "archs", "fcn")
	tmp := t.TempDir()
	// three waveforms and their occlusion maps (window 60, stride 20, as the golden)
	var wl, ml []string
	for i, l := range strings.Split(strings.TrimSpace(readString(t, filepath.Join(arch, "waveforms.csv"))), "\n") {
		if i < 3 {
			wl = append(wl, l)
		}
	}
	for i, l := range strings.Split(strings.TrimSpace(readString(t, filepath.Join(arch, "occlusion.csv"))), "\n") {
		if i < 3 {
			ml = append(ml, l)
		}
	}
	x, maps := filepath.Join(tmp, "x.csv"), filepath.Join(tmp, "maps.csv")
	os.WriteFile(x, []byte(strings.Join(wl, "\n")+"\n"), 0o644)
	os.WriteFile(maps, []byte(strings.Join(ml, "\n")+"\n"), 0o644)
	eval := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(exe, append([]string{"evaluate", "--model", filepath.Join(root, "recipes", "archs", "fcn.toml"),
			"--weights", filepath.Join(arch, "model.safetensors"), "--input", x, "--maps", maps, "--target", "predicted",
			"--explainer", "occlusion", "--explainer-set", "window=60", "--explainer-set", "stride=20", "--explainer-set", "baseline=0",
			"--metric", "max_sensitivity", "--set", "nr_samples=3", "--set", "lower_bound=0.1",
			"--metric", "mprt", "--set", "similarity_func=\"cosine\"", "--metric", "random_logit"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String()
	}
	a, b, c := eval("--workers", "1"), eval("--workers", "2"), eval("--seed", "7")
	if a != b {
		t.Error("the output depends on the workers")
	}
	if a == c {
		t.Error("the same output for another seed: the noise does not follow --seed")
	}
	rows, err := csv.NewReader(strings.NewReader(a)).ReadAll()
	if err != nil || len(rows) != 1+3*3 {
		t.Fatalf("%d lines (%v): want a header and 9", len(rows), err)
	}
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[3], 64)
		switch r[2] {
		case "metric.max_sensitivity":
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("line %v: want a positive finite sensitivity", r)
			}
		case "metric.mprt", "metric.random_logit":
			if err != nil || !(v >= -1 && v <= 1) {
				t.Errorf("line %v: want a similarity in [-1, 1]", r)
			}
			if r[2] == "metric.mprt" && len(strings.Fields(r[5])) != 7 {
				t.Errorf("line %v: want a curve of the FCN's 7 layers", r)
			}
		default:
			t.Errorf("line %v: unknown metric", r)
		}
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
