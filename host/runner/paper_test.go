//go:build paper

package runner

import (
	"testing"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk/nn"
)

// TestPaperTrainingAccuracy is the paper-size check (900 a class, 90/10,
// 100 epochs, five test splits of 100 a class): mean test accuracy >= 0.97
// (the paper reports 0.977). About 5-10 minutes on 2 cores:
//
//	go test -tags paper -run PaperTraining -timeout 60m -v ./host/runner/
func TestPaperTrainingAccuracy(t *testing.T) {
	accs := trainAndTest(t, 900, 100, 5, nn.PaperTrainConfig())
	st := eval.StatOf(accs)
	t.Logf("paper setting: test accuracy %.4f ± %.4f over %d splits: %v", st.Mean, st.SD, st.N, accs)
	if st.Mean < 0.97 {
		t.Errorf("paper setting: mean test accuracy %.4f, want >= 0.97", st.Mean)
	}
}
