package nn

import (
	"context"
	"math/rand/v2"
	"testing"
)

func benchSetup(b *testing.B, batch int) (Pass, []float32, []float32, []int) {
	net, err := NewPass(PaperArch(), 64, 0)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	p := make([]float32, net.Layout().Size)
	Init(net.Layout(), p, r)
	x := make([]float32, batch*net.InputLen())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]int, batch)
	for i := range y {
		y[i] = r.IntN(16)
	}
	return net, p, x, y
}

// BenchmarkForward: the model's (folded) probabilities of batches of 64
// records.
func BenchmarkForward(b *testing.B) {
	_, p, x, _ := benchSetup(b, 64)
	m, err := NewModel(Params{Arch: PaperArch(), Data: p})
	if err != nil {
		b.Fatal(err)
	}
	probs := make([]float32, 64*16)
	b.ResetTimer()
	for b.Loop() {
		if err := m.Probs(context.Background(), probs, x); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*64/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkForwardBackward: a train-mode forward, loss and full backward
// of a batch of 64.
func BenchmarkForwardBackward(b *testing.B) {
	net, p, x, y := benchSetup(b, 64)
	dz := make([]float32, 64*16)
	g := make([]float32, len(p))
	b.ResetTimer()
	for b.Loop() {
		CrossEntropy(dz, net.Forward(p, x, true, nil), y, 16)
		clear(g)
		net.Backward(p, dz, g)
	}
	b.ReportMetric(float64(b.N)*64/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkTrainEpoch: one epoch of 12,960 records, batch 64, Adam, without
// validation (the paper's training set size; PyTorch 1.13 on this machine:
// 2.0 s with 2 threads, 3.1 s with 1).
func BenchmarkTrainEpoch(b *testing.B) {
	const n = 12960
	net, _, x, y := benchSetup(b, n)
	cfg := PaperTrainConfig()
	cfg.Epochs = 1
	d := Data{X: x, Y: y, N: n, Len: net.InputLen()}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Train(context.Background(), PaperArch(), d, Data{}, cfg, 1, TrainOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/epoch")
}

// BenchmarkOcclusionMap: the 581 window probabilities of one occlusion map
// (window 60, stride 1) on the paper's network, by the incremental path
// (WindowProbs; WindowProbsSignal with a baseline signal) and by full
// forward passes of the occluded inputs.
func BenchmarkOcclusionMap(b *testing.B) {
	_, p, x, _ := benchSetup(b, 1)
	m, err := NewModel(Params{Arch: PaperArch(), Data: p})
	if err != nil {
		b.Fatal(err)
	}
	starts := make([]int, 581)
	for i := range starts {
		starts[i] = i
	}
	dst := make([]float32, len(starts))
	z := signals(len(x), 1)["noise"] // a baseline signal
	for _, c := range []struct {
		name string
		fn   func()
	}{
		{"incremental", func() { windowProbs(b, m, dst, x, nil, starts, 60, 0, 3) }},
		{"incremental-signal", func() { windowProbs(b, m, dst, x, z, starts, 60, 0, 3) }},
		{"full", func() { windowProbs(b, plainModel{m}, dst, x, nil, starts, 60, 0, 3) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.fn()
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/map")
		})
	}
}
