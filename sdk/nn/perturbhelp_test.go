package nn

import (
	"context"
	"testing"
)

// windowProbs writes dst[j] = p_class(x with samples starts[j] ..
// starts[j]+width-1 of every channel replaced by z's, or by baseline
// when z is nil), by nn.Perturbed: m's own path when it has one.
func windowProbs(t testing.TB, m Model, dst, x, z []float32, starts []int, width int, baseline float32, class int) {
	t.Helper()
	r := Perturbation{X: x, Class: class, Baseline: baseline, Signal: z, Starts: starts, Width: width, Channel: AllChannels}
	if err := Perturbed(context.Background(), m, r, dst); err != nil {
		t.Fatal(err)
	}
}
