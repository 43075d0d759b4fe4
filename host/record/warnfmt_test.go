package record

import (
	"math"
	"strings"
	"testing"
)

// TestWarningsKeepHugeNumbersShort: a recording at an absurd rate (1e300
// Hz, as a hostile cfg may state) gives a zero-crossing frequency near
// 1e298 Hz; its warning says it in %g form, not as the 300 digits %.3f
// printed.
func TestWarningsKeepHugeNumbersShort(t *testing.T) {
	const n, perCycle = 640, 64
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Sin(2 * math.Pi * float64(i) / perCycle)
	}
	r := &Recording{Samples: x, Segments: []Segment{{Start: 0, End: n, Rate: 1e300}}, LineFreq: 50}
	r.finish()
	if !(r.EstFreq > 1e290) {
		t.Fatalf("EstFreq = %g, want near 1e300/%d; the test's recording is not the case it means", r.EstFreq, perCycle)
	}
	if len(r.Warnings) != 1 {
		t.Fatalf("warnings %q, want the one on the line frequency", r.Warnings)
	}
	w := r.Warnings[0]
	if !strings.Contains(w, "zero crossings give 1.5625e+298 Hz") {
		t.Errorf("warning %q does not give the frequency as %%g would (1e300/64)", w)
	}
	if len(w) > 200 {
		t.Errorf("warning is %d bytes: %q", len(w), w)
	}
}
