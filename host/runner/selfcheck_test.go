package runner

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
)

// farRecording writes a CSV recording at 3200 Hz of three 640-sample
// windows: a clean 1 p.u. 50 Hz sine; a 25 p.u. square wave with spikes,
// far outside anything the generator makes; and a window wholly inside a
// 0.10 p.u. sag (RMS 0.071), below every class's training range (the
// generator's sags and interruptions last at most 9 of a window's 10
// cycles, so its windows' RMS is at least sqrt(0.1) x 0.707 = 0.22).
func farRecording(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for i := range 1920 {
		ph := 2 * math.Pi * 50 * float64(i) / 3200
		v := math.Sin(ph)
		switch {
		case i >= 1280:
			v *= 0.1
		case i >= 640:
			v = 25 * math.Copysign(1, math.Sin(3*ph))
			if i%37 == 0 {
				v = -40
			}
		}
		fmt.Fprintf(&b, "%.6f\n", v)
	}
	p := filepath.Join(dir, "far.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// inputReason is the input check's reason: "RMS 0.1, training 0.9-1.1 (sag)".
var inputReason = regexp.MustCompile(`training -?[0-9]`)

// TestSelfCheck: a recording run scores every window in feature space
// and judges the model on held-out records. The held-out table's
// accuracy is its confusion's diagonal; each window's held-out precision
// is its class's column of the confusion; a window is flagged exactly
// when a score passes its threshold; and the window far outside the
// training data is flagged by both checks, the clean sine not by the
// feature-space check; the window inside a 0.10 p.u. sag is flagged for
// its RMS whatever class it is given.
func TestSelfCheck(t *testing.T) {
	dir := t.TempDir()
	file := farRecording(t, dir)
	o := runTinyIn(t, dir, fmt.Sprintf("\n[recording]\nfile = %q\nrate = 3200\nnominal = %v\n", file, 1/math.Sqrt2))
	var res struct {
		Checks []struct {
			Label   string `json:"posterior_label"`
			Feature *struct {
				Features  int     `json:"features"`
				Train     int     `json:"training_records"`
				Val       int     `json:"validation_records"`
				Threshold float64 `json:"threshold"`
			} `json:"feature_check"`
			HeldOut *struct {
				N         int     `json:"n"`
				Accuracy  float64 `json:"accuracy"`
				Confusion [][]int `json:"confusion"`
			} `json:"held_out"`
		} `json:"checks"`
		Windows []windowRow `json:"windows"`
	}
	if err := json.Unmarshal(read(t, filepath.Join(o.Dir, "results.json")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Checks) != 2 {
		t.Fatalf("%d posterior checks, want 2", len(res.Checks))
	}
	thr := map[string]float64{}
	for _, c := range res.Checks {
		// tiny: 12 a class, a quarter held for validation; 2 test splits of 2 a class
		if c.Feature == nil || c.Feature.Features != 64 || c.Feature.Train != 16*9 || c.Feature.Val != 16*3 || !(c.Feature.Threshold > 0) {
			t.Fatalf("%s: feature check %+v; want 64 features of 144 training and 48 validation records", c.Label, c.Feature)
		}
		thr[c.Label] = c.Feature.Threshold
		h := c.HeldOut
		if h == nil || h.N != 2*2*16 || len(h.Confusion) != 16 {
			t.Fatalf("%s: held-out %+v; want the 64 test records, 16 x 16 confusion", c.Label, h)
		}
		diag, total := 0, 0
		for i, row := range h.Confusion {
			for j, v := range row {
				total += v
				if i == j {
					diag += v
				}
			}
		}
		if total != h.N || math.Abs(h.Accuracy-float64(diag)/float64(total)) > 1e-12 {
			t.Errorf("%s: accuracy %g, confusion's diagonal %d of %d", c.Label, h.Accuracy, diag, total)
		}
	}
	if len(res.Windows) != 3*2 {
		t.Fatalf("%d window rows, want 3 windows x 2 posteriors", len(res.Windows))
	}
	for _, w := range res.Windows {
		if w.FeatureScore == nil || w.OODScore == nil {
			t.Fatalf("window %d of %s: no scores: %+v", w.Window, w.Label, w)
		}
		fflag := *w.FeatureScore > thr[w.Label]
		iflag := inputReason.MatchString(w.OODReason)
		if fflag != strings.Contains(w.OODReason, "penultimate features") || w.OOD != (fflag || iflag) {
			t.Errorf("window %d of %s: feature score %g (threshold %g), ood %v, reason %q", w.Window, w.Label, *w.FeatureScore, thr[w.Label], w.OOD, w.OODReason)
		}
		switch w.Window {
		case 1:
			if !fflag || !iflag || !w.OOD {
				t.Errorf("the far window under %s: feature score %g (threshold %g), %q: want flagged by both checks", w.Label, *w.FeatureScore, thr[w.Label], w.OODReason)
			}
		case 2:
			if !iflag || !w.OOD || !strings.Contains(w.OODReason, "RMS 0.07") {
				t.Errorf("the window inside a 0.10 p.u. sag under %s (%s): %q: want flagged for its RMS", w.Label, w.Class, w.OODReason)
			}
		case 0:
			if fflag {
				t.Errorf("the clean sine under %s: feature score %g above the threshold %g", w.Label, *w.FeatureScore, thr[w.Label])
			}
		}
	}
	// windows.csv says the same, with the held-out precision of the class
	lines, err := csv.NewReader(bytes.NewReader(read(t, filepath.Join(o.Dir, "windows.csv")))).ReadAll()
	if err != nil || len(lines) != 7 {
		t.Fatalf("windows.csv: %d lines, %v", len(lines), err)
	}
	col := map[string]int{}
	for i, h := range lines[0] {
		col[h] = i
	}
	for i, w := range res.Windows {
		l := lines[i+1]
		fs, _ := strconv.ParseFloat(l[col["feature_ood_score"]], 64)
		if math.Abs(fs-*w.FeatureScore) > 1e-5*math.Max(1, fs) || l[col["ood"]] != strconv.FormatBool(w.OOD) {
			t.Errorf("windows.csv line %d %q; results.json %+v", i+2, l, w)
		}
		var conf [][]int
		for _, c := range res.Checks {
			if c.Label == w.Label {
				conf = c.HeldOut.Confusion
			}
		}
		cls := -1
		for k, name := range data.ClassNames {
			if name == w.Class {
				cls = k
			}
		}
		n := 0
		for _, row := range conf {
			n += row[cls]
		}
		if n == 0 {
			if l[col["held_out_precision"]] != "" {
				t.Errorf("window %d: class %s given no held-out record, precision %q", w.Window, w.Class, l[col["held_out_precision"]])
			}
			continue
		}
		p, _ := strconv.ParseFloat(l[col["held_out_precision"]], 64)
		if math.Abs(p-float64(conf[cls][cls])/float64(n)) > 1e-5 || l[col["held_out_predicted"]] != strconv.Itoa(n) {
			t.Errorf("window %d (%s): held-out precision %q of %q; confusion gives %d of %d", w.Window, w.Class, l[col["held_out_precision"]], l[col["held_out_predicted"]], conf[cls][cls], n)
		}
	}
	md := string(read(t, filepath.Join(o.Dir, "tables.md")))
	for _, s := range []string{"Model quality on held-out labelled records", "as the held-out records bear them out", "feature-space out-of-distribution check of"} {
		if !strings.Contains(md, s) {
			t.Errorf("tables.md lacks %q", s)
		}
	}
}
