package nn

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/rng"
)

// BenchmarkGraphTrainEpoch: one epoch of Train on the ResNet1D graph
// (recipes/archs/resnet1d.toml) over 256 random records of 640 samples,
// 16 classes, batch 64. The records/s metric is the epoch's throughput.
func BenchmarkGraphTrainEpoch(b *testing.B) {
	_, file, _, _ := runtime.Caller(0)
	spec, err := graph.ReadSpecFile(filepath.Join(filepath.Dir(file), "..", "..", "recipes", "archs", "resnet1d.toml"))
	if err != nil {
		b.Fatal(err)
	}
	a, err := GraphArch(spec).Reshaped(1, 640, 16)
	if err != nil {
		b.Fatal(err)
	}
	const n = 256
	r := rng.For(1, "bench", "", -1, -1)
	d := Data{N: n, Len: 640, X: make([]float32, n*640), Y: make([]int, n)}
	for i := range d.X {
		d.X[i] = float32(r.NormFloat64())
	}
	for i := range d.Y {
		d.Y[i] = i % 16
	}
	cfg := PaperTrainConfig()
	cfg.Epochs, cfg.Batch = 1, 64
	b.ResetTimer()
	for b.Loop() {
		if _, err := Train(context.Background(), a, d, Data{}, cfg, 1, TrainOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}
