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

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/data/npy"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/golden/paper"
)

// TestExplainThreeChannels runs the built binary on three-channel
// waveforms: `uaxai explain --input X.npy --channels 3` (and the same
// waveforms as CSV lines of 3 x 640 values) under the golden
// paper-1dcnn-3ch network reproduces Captum's Occlusion with
// sliding_window_shapes = (1, 60) (channels = "each", the default with
// three channels) and (3, 60) (channels = "all") within 1e-4 of each
// map's largest value; `uaxai predict` on the .npy gives the golden
// probabilities. The network's shape comes from the input (3 x 640) and
// its classes from the weights.
func TestExplainThreeChannels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel() // a slow run of the binary: see shared_test.go
	_, x, y, maps := paper.ThreeChannel(t)
	dir := golden.Dir(t, paper.ThreeChannelSet)
	tmp := t.TempDir()
	n := len(y)
	xnpy := filepath.Join(tmp, "x.npy")
	f, err := os.Create(xnpy)
	if err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFloat32(f, []int{n, 3, 640}, x); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var csv []byte
	for r := range n {
		row := make([]float64, 3*640)
		for i := range row {
			row[i] = float64(x[r*3*640+i])
		}
		csv = data.AppendRow(csv, row)
	}
	xcsv := filepath.Join(tmp, "x.csv")
	if err := os.WriteFile(xcsv, csv, 0o644); err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, c := range y {
		targets = append(targets, strconv.Itoa(c))
	}
	tfile := filepath.Join(tmp, "targets.txt")
	if err := os.WriteFile(tfile, []byte(strings.Join(targets, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := buildUaxai(t)
	weights := filepath.Join(dir, "model.safetensors")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(exe, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String()
	}
	var first string
	for _, c := range []struct {
		input []string
		set   []string
		want  string
	}{
		{[]string{"--input", xnpy, "--channels", "3"}, nil, "occlusion_each_w60"},
		{[]string{"--input", xnpy}, []string{"--set", "channels=each"}, "occlusion_each_w60"},
		{[]string{"--input", xcsv, "--channels", "3"}, nil, "occlusion_each_w60"},
		{[]string{"--input", xnpy}, []string{"--set", "channels=all"}, "occlusion_all_w60"},
	} {
		args := append([]string{"explain", "--weights", weights, "--target", tfile, "--explainer", "occlusion", "--set", "window=60", "--set", "stride=1", "--set", "baseline=0"}, c.input...)
		out := run(append(args, c.set...)...)
		if c.want == "occlusion_each_w60" {
			if first == "" {
				first = out
			} else if out != first {
				t.Errorf("%v: output differs from the .npy input's", c.input)
			}
		}
		got := parseMaps(t, out)
		want := maps[c.want]
		if len(got) != n {
			t.Fatalf("%v: %d lines, want %d", c.input, len(got), n)
		}
		for r := range got {
			if len(got[r]) != 3*640 {
				t.Fatalf("%v line %d: %d values, want 3 x 640", c.input, r+1, len(got[r]))
			}
			ref := want[r*3*640 : (r+1)*3*640]
			scale := 0.0
			for _, v := range ref {
				scale = math.Max(scale, math.Abs(float64(v)))
			}
			for i, v := range got[r] {
				if math.Abs(v-float64(ref[i])) > 1e-4*scale {
					t.Fatalf("%s record %d channel %d sample %d: %g, Captum %g (largest %g)", c.want, r, i/640, i%640, v, ref[i], scale)
				}
			}
		}
	}
	// predict: the mean probabilities of the one draw are the golden's.
	run("predict", "--weights", weights, "--input", xnpy, "--out", filepath.Join(tmp, "p.csv"))
	b, err := os.ReadFile(filepath.Join(tmp, "p.csv"))
	if err != nil {
		t.Fatal(err)
	}
	got := parseMaps(t, string(b))
	want := golden.CSV32(t, filepath.Join(dir, "probs.csv"))
	for r := range want {
		for c := range want[r] {
			if math.Abs(got[r][c]-float64(want[r][c])) > 1e-5 {
				t.Fatalf("predict record %d class %d: %g, golden %g", r, c, got[r][c], want[r][c])
			}
		}
	}
	// --channels that the .npy contradicts is an error naming both.
	cmd := exec.Command(exe, "predict", "--weights", weights, "--input", xnpy, "--channels", "2")
	b, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "has 3 channel(s), and --channels says 2") {
		t.Errorf("--channels 2 on a 3-channel .npy: %v\n%s", err, b)
	}
}
