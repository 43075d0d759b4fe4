package paper

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// ThreeChannelSet is the golden folder of the three-channel network.
const ThreeChannelSet = "paper-1dcnn-3ch"

// ThreeChannelArch is the paper's network with 3 input channels, the
// architecture of ThreeChannelSet.
func ThreeChannelArch() nn.Arch {
	a := nn.PaperArch()
	a.Name = nn.PaperArchName + "-3ch"
	a.InChannels = 3
	return a
}

// ThreeChannelParams returns the parameters of the golden paper-1dcnn-3ch
// network.
func ThreeChannelParams(t testing.TB) nn.Params {
	t.Helper()
	p, err := nn.LoadParams(golden.File(t, ThreeChannelSet, "model.safetensors"), ThreeChannelArch())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ThreeChannel returns the golden paper-1dcnn-3ch network built for
// inference, its records (flat, 3 x 640 channel-major each), their target
// classes, and the tensors of maps.safetensors by name (flat, record
// major: waveforms, input_grad, gradcam_raw, occlusion_each_w60, ...; see
// the folder's README).
func ThreeChannel(t testing.TB) (m *nn.GraphModel, x []float32, y []int, maps map[string][]float32) {
	t.Helper()
	dir := golden.Dir(t, ThreeChannelSet)
	m, err := nn.NewModel(ThreeChannelParams(t))
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(filepath.Join(dir, "maps.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	maps = map[string][]float32{}
	for _, tn := range f.Tensors {
		maps[tn.Name] = tn.Data
	}
	x = maps["waveforms"]
	for _, r := range golden.CSV32(t, filepath.Join(dir, "targets.csv")) {
		y = append(y, int(r[0]))
	}
	if n := m.InputLen(); len(x) != len(y)*n || len(y) == 0 {
		t.Fatalf("%s: %d waveform values for %d targets of %d values", strings.Join([]string{dir, "maps.safetensors"}, "/"), len(x), len(y), n)
	}
	return m, x, y, maps
}
