//go:build paper

package runner

import (
	"testing"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk/nn"
)

// TestPaperTrainingAccuracy is the paper-size check: 900 a class, 90/10,
// 100 epochs, five test splits of 100 a class, for each of the paper's
// five training seeds (2026-2030). One network's accuracy depends on its
// seed by about a point on this data (PyTorch on the same splits: 0.969),
// so the check is on the mean over the seeds: >= 0.97 (the paper reports
// 0.977). About 5 minutes a seed on 2 cores:
//
//	go test -tags paper -run PaperTraining -timeout 120m -v ./host/runner/
func TestPaperTrainingAccuracy(t *testing.T) {
	var means []float64
	for seed := uint64(2026); seed <= 2030; seed++ {
		accs := trainAndTest(t, 900, 100, 5, nn.PaperTrainConfig(), seed)
		st := eval.StatOf(accs)
		means = append(means, st.Mean)
		t.Logf("seed %d: test accuracy %.4f ± %.4f over %d splits %v", seed, st.Mean, st.SD, st.N, accs)
	}
	st := eval.StatOf(means)
	t.Logf("over the seeds: %.4f ± %.4f", st.Mean, st.SD)
	if st.Mean < 0.97 {
		t.Errorf("paper setting: mean test accuracy over seeds %.4f, want >= 0.97", st.Mean)
	}
}
