package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBench: `uaxai bench` prints the four operators' table; without the
// reference it says so; a count below 1 is refused.
func TestBench(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"bench", "--reps", "1", "--min-time", "0", "--reference=false"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"occlusion, w60 s1", "Grad-CAM", "LIME, 128 samples", "reference not run"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	errb.Reset()
	if code := run([]string{"bench", "--reps", "0"}, &out, &errb); code == 0 || !strings.Contains(errb.String(), "must be >= 1") {
		t.Errorf("--reps 0: exit %d, %q", code, errb.String())
	}
}
