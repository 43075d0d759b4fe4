package nn

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/sdk/rng"
)

// TestTrainingKeepsTheLayerListBytes: training the paper's network (and
// its MC-dropout variant) on the graph gives, bit for bit, the parameters
// the deleted layer-list engine gave for the same data, seed and
// protocol (testdata/layerlist, written by it: see the README there), for
// 1 and 2 workers. That is what keeps the paper's trained posteriors,
// and so its tables, where they were when the graph became the one
// engine. The files were written on the AVX2+FMA kernels; the portable
// kernels give the same bits, so they pass here too. A failure names the
// tensors that moved.
func TestTrainingKeepsTheLayerListBytes(t *testing.T) {
	for _, c := range []struct {
		file string
		a    Arch
	}{{"paper.f32", PaperArch()}, {"paper-dropout.f32", PaperArchDropout(0.3)}} {
		raw, err := os.ReadFile(filepath.Join("testdata", "layerlist", c.file))
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(raw)/4)
		if err := binary.Read(bytesReaderOf(raw), binary.LittleEndian, want); err != nil {
			t.Fatal(err)
		}
		a, err := c.a.Reshaped(1, 640, 4)
		if err != nil {
			t.Fatal(err)
		}
		cfg := PaperTrainConfig()
		cfg.Epochs, cfg.StepEvery = 3, 2
		for _, workers := range []int{1, 2} {
			r, err := Train(context.Background(), a, layerListData(200), Data{Len: 640}, cfg, 7, TrainOptions{Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Params.Data) != len(want) {
				t.Fatalf("%s: %d parameters, the file %d", c.file, len(r.Params.Data), len(want))
			}
			lay, err := NewLayout(a)
			if err != nil {
				t.Fatal(err)
			}
			var moved []string
			for _, tn := range lay.Tensors {
				n := 0
				for i := tn.Offset; i < tn.Offset+tn.Size; i++ {
					if math.Float32bits(r.Params.Data[i]) != math.Float32bits(want[i]) {
						n++
					}
				}
				if n > 0 {
					moved = append(moved, fmt.Sprintf("%s (%d of %d)", tn.Name, n, tn.Size))
				}
			}
			if len(moved) > 0 {
				t.Errorf("%s, %d workers: parameters differ from the layer-list engine's in %v", c.file, workers, moved)
			}
		}
	}
}

// layerListData is the training set of testdata/layerlist: n waveforms
// of 640 samples, class y = i mod 4 a sine of 1+y cycles plus Gaussian
// noise of sd 0.3 (stream (11, "golden", "train")).
func layerListData(n int) Data {
	r := rng.For(11, "golden", "train", -1, -1)
	d := Data{N: n, Len: 640, X: make([]float32, n*640), Y: make([]int, n)}
	for i := range n {
		d.Y[i] = i % 4
		for t := range 640 {
			d.X[i*640+t] = float32(math.Sin(2*math.Pi*float64((1+d.Y[i])*t)/640) + 0.3*r.NormFloat64())
		}
	}
	return d
}

func bytesReaderOf(b []byte) *bytes.Reader { return bytes.NewReader(b) }
