//go:build paper

package runner

import (
	"flag"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk/nn"
)

var paperSNRMin = flag.Float64("paper.snr-min", data.DefaultConfig().SNRMin, "lowest SNR (dB) of the generated records")

// TestPaperTrainingAccuracy is the paper-size check of issue 2: 900 a
// class, 90/10, 100 epochs, five test splits of 100 a class, for each of
// the paper's five training seeds (2026-2030); the mean over the seeds must
// reach 0.97 (the paper reports 0.977). About 90 s a seed on 2 cores:
//
//	go test -tags paper -run PaperTraining -timeout 120m -v ./host/runner/
//
// The spec's SNR floor is 30 dB; there the seeds reach 0.982 ± 0.003. With
// the original floor of 20 dB the network reaches only 0.958 ± 0.011, and
// PyTorch with the same protocol on the same splits 0.962 ± 0.009
// (testdata/torch_train.py), which is why the spec was revised:
//
//	go test -tags paper -run PaperTraining -timeout 120m -v ./host/runner/ -args -paper.snr-min 20
func TestPaperTrainingAccuracy(t *testing.T) {
	dc := data.DefaultConfig()
	dc.SNRMin = *paperSNRMin
	if err := dc.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SNR %g-%g dB", dc.SNRMin, dc.SNRMax)
	var means []float64
	for seed := uint64(2026); seed <= 2030; seed++ {
		accs := trainAndTest(t, dc, 900, 100, 5, nn.PaperTrainConfig(), seed)
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
