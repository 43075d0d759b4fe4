package main

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/internal/golden"
)

// parseMaps reads headerless CSV lines of numbers.
func parseMaps(t *testing.T, out string) [][]float64 {
	t.Helper()
	var rows [][]float64
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var row []float64
		for _, s := range strings.Split(line, ",") {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	return rows
}

// TestExplainCommand runs the built binary, whose plugins are processes of
// their own: `uaxai explain` reproduces the golden occlusion.csv and
// gradcam_raw.csv (align = none; its last 10 values are 0) from the golden
// model, waveforms and labels within 1e-5, to stdout and to --out; a
// plugin's refusal of a --set key names it; `uaxai plugins` lists every
// built-in.
func TestExplainCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	exe := buildUaxai(t)
	dir := golden.Dir(t, "paper-1dcnn")
	common := []string{"explain", "--weights", filepath.Join(dir, "model.safetensors"), "--input", filepath.Join(dir, "waveforms.csv"), "--target", filepath.Join(dir, "labels.csv")}
	out := filepath.Join(t.TempDir(), "gradcam.csv")
	for _, c := range []struct {
		args []string
		file string
	}{
		{[]string{"--explainer", "occlusion", "--set", "window=60", "--set", "stride=1", "--set", "baseline=0"}, "occlusion.csv"},
		{[]string{"--explainer", "gradcam", "--set", "align=none", "--out", out}, "gradcam_raw.csv"},
	} {
		cmd := exec.Command(exe, append(common, c.args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, stderr.String())
		}
		text := stdout.String()
		if strings.Contains(strings.Join(c.args, " "), "--out") {
			if text != "" {
				t.Errorf("--out: %d bytes on stdout", len(text))
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			text = string(b)
		}
		if !strings.Contains(stderr.String(), "explain 16 inputs x 1 draws") {
			t.Errorf("%v: no progress on stderr: %q", c.args, stderr.String())
		}
		got := parseMaps(t, text)
		want := golden.CSV32(t, filepath.Join(dir, c.file))
		if len(got) != len(want) {
			t.Fatalf("%s: %d lines, want %d", c.file, len(got), len(want))
		}
		for r := range got {
			if len(got[r]) != 640 {
				t.Fatalf("%s line %d: %d values, want 640", c.file, r+1, len(got[r]))
			}
			for n, v := range got[r] {
				ref := 0.0
				if n < len(want[r]) {
					ref = float64(want[r][n])
				}
				if math.Abs(v-ref) > 1e-5 {
					t.Fatalf("%s line %d value %d: %g, golden %g", c.file, r+1, n, v, ref)
				}
			}
		}
	}
	b, err := exec.Command(exe, append(common, "--explainer", "gradcam", "--set", "layr=conv4")...).CombinedOutput()
	if err == nil || !strings.Contains(string(b), `explainer config (--set): explainer.gradcam: Check: unknown key "layr" (accepted: align, layer, time_axis)`) {
		t.Errorf("--set layr=conv4: %v\n%s", err, b)
	}
	b, err = exec.Command(exe, "plugins", "--scripts", t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("plugins: %v\n%s", err, b)
	}
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range reg.IDs() {
		if !strings.Contains(string(b), id+" ") {
			t.Errorf("plugins does not list %s:\n%s", id, b)
		}
	}
	if !strings.Contains(string(b), "posterior.files") {
		t.Errorf("plugins does not list posterior.files:\n%s", b)
	}
}

// TestExplainFlags: bad flags are errors that name the flag and what is
// accepted, found before any plugin starts.
func TestExplainFlags(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	model, wave, labels := filepath.Join(dir, "model.safetensors"), filepath.Join(dir, "waveforms.csv"), filepath.Join(dir, "labels.csv")
	full := []string{"--weights", model, "--input", wave, "--explainer", "occlusion", "--target", labels}
	without := func(flag string) []string {
		var out []string
		for i := 0; i < len(full); i += 2 {
			if full[i] != flag {
				out = append(out, full[i], full[i+1])
			}
		}
		return out
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{without("--weights"), "--weights is required (usage: uaxai explain --weights"},
		{without("--input"), "--input is required"},
		{without("--explainer"), "--explainer is required"},
		{without("--target"), "--target is required"},
		{append(without("--weights"), "--weights", model+",,"+model), `--weights "` + model + ",," + model + `": an empty file name`},
		{append(full, "--set", "window"), `--set: "window" is not key=value`},
		{append(full, "--set", "window=1", "--set", "window=2"), `--set: key "window" is set twice`},
		{append(full, "--summary", "quantile:alpha"), `--summary "quantile:alpha": "alpha" is not key=value`},
		{append(full, "--summary", ":x=1"), `--summary ":x=1": no summary name`},
		{append(full, "extra.csv"), `unexpected argument "extra.csv"`},
		{append(full, "--workers", "x"), `invalid value "x" for flag -workers`},
		{append(without("--target"), "--target", "16"), "target 16 is not a class (accepted: a class 0..15, predicted, or a file of one class a line)"},
		{append(without("--target"), "--target", wave), wave + `: line 1 (record 0): label "`},
		{append(without("--weights"), "--weights", model+","+filepath.Join(dir, "adam_step.safetensors")), `weights file 2 (draw 1): ` + filepath.Join(dir, "adam_step.safetensors") + `: missing parameter "bn1.running_mean"`},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"explain"}, c.args...), &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.args, code, errb.String(), c.want)
		}
		if out.Len() > 0 {
			t.Errorf("%v: stdout %q", c.args, out.String())
		}
	}
}
