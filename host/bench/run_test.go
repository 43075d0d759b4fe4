package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMeasure: Measure runs a case once to warm up and then at least reps
// times, and reports the median and the minimum a map.
func TestMeasure(t *testing.T) {
	runs := 0
	c := Case{Name: "sleep", Maps: 2, Run: func(context.Context) error {
		runs++
		time.Sleep(time.Duration(runs) * time.Millisecond)
		return nil
	}}
	r, err := Measure(context.Background(), c, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 4 || r.Reps != 3 {
		t.Fatalf("%d runs, %d reps; want 4 and 3", runs, r.Reps)
	}
	// runs 2, 3, 4 sleep 2, 3, 4 ms: 1, 1.5, 2 ms a map
	if r.Min < 1 || r.Median < 1.5 || r.Median < r.Min {
		t.Errorf("median %v, min %v ms a map; want >= 1.5 and >= 1", r.Median, r.Min)
	}
	boom := errors.New("boom")
	if _, err := Measure(context.Background(), Case{Name: "fails", Maps: 1, Run: func(context.Context) error { return boom }}, 1, 0); !errors.Is(err, boom) {
		t.Errorf("error %v, want boom", err)
	}
}

// fakePython writes an executable that answers the probe and prints
// what torch_ref.py bench prints without Captum.
func fakePython(t *testing.T, bench string) string {
	t.Helper()
	dir := t.TempDir()
	py := filepath.Join(dir, "python")
	script := "#!/bin/sh\nif [ \"$1\" = -c ]; then echo 1.13.0; exit 0; fi\n" +
		"echo '# captum not importable: captum ops skipped' >&2\ncat <<'EOF'\n" + bench + "\nEOF\n"
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return py
}

// TestReference: the harness's JSON lines become measurements keyed by op
// and variant, its stderr notes are kept, and the table's cells take the
// best variant; the MC-dropout row is 20 times the occlusion's; a missing
// interpreter or torch is ErrNoTorch.
func TestReference(t *testing.T) {
	py := fakePython(t, `{"op": "occlusion_torch", "n": 2, "median_item_ms": 30.5, "batch": 582}
{"op": "occlusion_torch", "n": 2, "median_item_ms": 20.25, "batch": 64}
not json
{"op": "lime", "n": 2, "median_item_ms": 17, "ppe": 128, "interpretable_model": "linreg"}`)
	script := filepath.Join(t.TempDir(), "torch_ref.py")
	if err := os.WriteFile(script, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := RunReference(context.Background(), ReferenceOptions{Python: py, Script: script, Threads: 2, N: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Torch != "1.13.0" || ref.Measured["occlusion_torch batch 64"] != 20.25 || ref.Measured["lime ppe 128"] != 17 || len(ref.Measured) != 3 {
		t.Fatalf("reference %+v", ref)
	}
	if len(ref.Notes) != 1 || !strings.Contains(ref.Notes[0], "captum not importable") {
		t.Errorf("notes %q", ref.Notes)
	}
	for key, want := range map[string]string{
		"occlusion":    "torch 20.25 (batch 64); torch 30.50 (batch 582)",
		"occlusion_mc": "405.0 (20 x torch, batch 64)",
		"gradcam":      "not measured (needs Captum)",
		"lime":         "Captum 17.00",
	} {
		if got := refCell(ref, key); got != want {
			t.Errorf("%s: %q, want %q", key, got, want)
		}
	}
	if got := refCell(nil, "lime"); got != "not measured" {
		t.Errorf("no reference: %q", got)
	}
	if _, err := RunReference(context.Background(), ReferenceOptions{Python: filepath.Join(t.TempDir(), "none"), Script: script, Threads: 2, N: 1}); !errors.Is(err, ErrNoTorch) {
		t.Errorf("missing interpreter: %v, want ErrNoTorch", err)
	}
	if _, err := RunReference(context.Background(), ReferenceOptions{Python: py, Script: filepath.Join(t.TempDir(), "none.py"), Threads: 2, N: 1}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing script: %v, want not exist", err)
	}
}

// TestRunTable: Run measures every case and prints the table, saying the
// reference was not measured when python cannot import torch.
func TestRunTable(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small network")
	}
	var out, log bytes.Buffer
	err := Run(context.Background(), Options{Seed: 1, Reps: 1, Reference: true,
		Ref: ReferenceOptions{Python: filepath.Join(t.TempDir(), "none"), Script: "testdata/none.py", Threads: 2, N: 1}}, &out, &log)
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"occlusion, w60 s1", "20 MC-dropout draws", "Grad-CAM", "LIME, 128 samples", "reference not measured", "Captum LayerGradCam 0.72"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}
