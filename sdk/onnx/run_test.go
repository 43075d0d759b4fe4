package onnx

import (
	"math"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// TestGoldenRunFromONNX: each convolutional golden network, read from
// its model.onnx alone (LoadSpec: the graph and its parameters, the
// export's BatchNorms folded into the convolutions), compiled by the op
// table and run, gives PyTorch's probabilities (probs.csv) within 1e-5
// on the golden inputs.
func TestGoldenRunFromONNX(t *testing.T) {
	for _, a := range golden.TorchArchs {
		if a.Name == "lstm" {
			continue // refused at import (TestLSTMRefused)
		}
		t.Run(a.Name, func(t *testing.T) {
			net, err := LoadNet(golden.File(t, "archs", a.Name+"/model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			wf := golden.CSV32(t, golden.File(t, "archs", a.Name+"/waveforms.csv"))
			want := golden.CSV32(t, golden.File(t, "archs", a.Name+"/probs.csv"))
			x := golden.Flat(wf)
			k := net.Classes()
			probs := make([]float32, len(wf)*k)
			if err := net.Forward(probs, x); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i, row := range want {
				for j, w := range row {
					d := math.Abs(float64(probs[i*k+j]) - float64(w))
					worst = math.Max(worst, d)
					if !(d <= 1e-5) {
						t.Errorf("input %d class %d: %v, PyTorch %v", i, j, probs[i*k+j], w)
					}
				}
			}
			t.Logf("%d inputs, worst |difference| %.3g", len(wf), worst)
		})
	}
}
