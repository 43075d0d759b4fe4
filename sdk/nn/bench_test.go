package nn

import (
	"context"
	"math/rand/v2"
	"testing"
)

// flopsForward counts the multiply-adds (x2) of one record's forward pass:
// nn.LayerMACs, the conv and dense layers'.
func flopsForward(a Arch) float64 {
	shapes, _ := a.Shapes()
	in := Shape{a.InChannels, a.InLen}
	var f float64
	for i, l := range a.Layers {
		f += 2 * float64(LayerMACs(l, in, shapes[i]))
		in = shapes[i]
	}
	return f
}

func benchSetup(b *testing.B, batch int) (*Net, []float32, []float32, []int) {
	net, _ := NewNet(PaperArch())
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

// BenchmarkForward: eval-mode forward of batches of 64 records.
func BenchmarkForward(b *testing.B) {
	net, p, x, _ := benchSetup(b, 64)
	ws := net.NewWorkspace(64)
	b.ResetTimer()
	for b.Loop() {
		net.Forward(ws, p, x, false, nil)
	}
	rec := float64(b.N) * 64 / b.Elapsed().Seconds()
	b.ReportMetric(rec, "records/s")
	b.ReportMetric(rec*flopsForward(net.Arch())/1e9, "GFLOP/s")
}

// BenchmarkForwardBackward: a train-mode forward, loss and full backward
// of a batch of 64 (the backward costs about twice the forward: input and
// weight gradients, so 3x the forward FLOPs are counted).
func BenchmarkForwardBackward(b *testing.B) {
	net, p, x, y := benchSetup(b, 64)
	ws := net.NewWorkspace(64)
	dz := make([]float32, 64*16)
	g := make([]float32, len(p))
	b.ResetTimer()
	for b.Loop() {
		net.Forward(ws, p, x, true, nil)
		CrossEntropy(dz, ws.Logits(), y, 16)
		clear(g)
		net.Backward(ws, p, dz, g, nil)
	}
	rec := float64(b.N) * 64 / b.Elapsed().Seconds()
	b.ReportMetric(rec, "records/s")
	b.ReportMetric(rec*3*flopsForward(net.Arch())/1e9, "GFLOP/s")
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
	b.ReportMetric(3*flopsForward(PaperArch())*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkOcclusionMap: the 581 window probabilities of one occlusion map
// (window 60, stride 1) on the paper's network, by the incremental path
// (WindowProbs; WindowProbsSignal with a baseline signal) and by full
// forward passes of the occluded inputs.
func BenchmarkOcclusionMap(b *testing.B) {
	net, p, x, _ := benchSetup(b, 1)
	m, err := NewModel(Params{Arch: net.Arch(), Data: p})
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
		{"incremental", func() { m.WindowProbs(dst, x, starts, 60, 0, 3) }},
		{"incremental-signal", func() { m.WindowProbsSignal(dst, x, z, starts, 60, 3) }},
		{"full", func() { m.windowProbsPlain(dst, x, starts, 60, baseFill{}, 3) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.fn()
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/map")
		})
	}
}

// BenchmarkHeadProbs: the layers after the global max pool of the paper's
// network on the 581 pooled vectors of one occlusion map.
func BenchmarkHeadProbs(b *testing.B) {
	net, p, x, _ := benchSetup(b, 1)
	m, err := NewModel(Params{Arch: net.Arch(), Data: p})
	if err != nil {
		b.Fatal(err)
	}
	starts := make([]int, 581)
	for i := range starts {
		starts[i] = i
	}
	pooled := make([]float32, len(starts)*m.PooledLen())
	m.WindowPooled(pooled, x, starts, 60, 0)
	dst := make([]float32, len(starts))
	for b.Loop() {
		m.HeadProbs(dst, pooled, 3)
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/map")
}
