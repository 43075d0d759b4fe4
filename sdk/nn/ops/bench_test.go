package ops

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkConvForward: a ResNet1D-sized layer, 32 -> 32 channels, kernel
// 7, 'same' padding (3, 3), T = 640, batch 64. The GFLOP/s metric counts
// a multiply and an add per tap: 2 B Cout L Cin K.
func BenchmarkConvForward(b *testing.B) {
	benchConv(b, Conv1D{Cin: 32, Cout: 32, Kernel: 7, Stride: 1, Dilation: 1, Groups: 1, PadLeft: 3, PadRight: 3}, 640, 64)
}

// BenchmarkConvBackward: the same layer's dx, dw and db.
func BenchmarkConvBackward(b *testing.B) {
	c := Conv1D{Cin: 32, Cout: 32, Kernel: 7, Stride: 1, Dilation: 1, Groups: 1, PadLeft: 3, PadRight: 3}
	r := rand.New(rand.NewPCG(1, 2))
	const T, B = 640, 64
	x, w := randn32(r, B*32*T), randn32(r, c.WeightLen())
	dy := randn32(r, B*32*T)
	dx, dw, db := make([]float32, len(x)), make([]float32, len(w)), make([]float32, 32)
	b.ResetTimer()
	for b.Loop() {
		c.Backward(dx, dw, db, dy, x, w, T)
	}
	b.ReportMetric(2*2*float64(B*32*T*32*7)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func benchConv(b *testing.B, c Conv1D, T, B int) {
	r := rand.New(rand.NewPCG(1, 2))
	L, err := c.OutLen(T)
	if err != nil {
		b.Fatal(err)
	}
	x, w, bias := randn32(r, B*c.Cin*T), randn32(r, c.WeightLen()), randn32(r, c.Cout)
	y := make([]float32, B*c.Cout*L)
	b.ResetTimer()
	for b.Loop() {
		c.Forward(y, x, w, bias, T)
	}
	flops := 2 * float64(B*c.Cout*L*(c.Cin/c.Groups)*c.Kernel)
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkBatchNormTrain: training batchnorm with the ReLU folded, an
// FCN-sized layer (32 channels, T = 640, batch 64): the forward pass, and
// the backward pass with the channel's recomputed rows kept between its
// two passes ("kept") or recomputed in the second ("recomputed").
func BenchmarkBatchNormTrain(b *testing.B) {
	const B, C, T = 64, 32, 640
	r := rand.New(rand.NewPCG(1, 2))
	x, dy, gamma, beta := randn32(r, B*C*T), randn32(r, B*C*T), randn32(r, C), randn32(r, C)
	bn := BatchNorm1D{C: C, Eps: 1e-5}
	z, st, dx := make([]float32, len(x)), make([]float32, 4*C), make([]float32, len(x))
	rm, rv := make([]float32, C), make([]float32, C)
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			bn.TrainForward(z, st, x, gamma, beta, rm, rv, T, 0.1, true)
		}
	})
	for _, c := range []struct {
		name string
		keep int
	}{{"kept", bnKeepMax}, {"recomputed", 0}} {
		b.Run("backward/"+c.name, func(b *testing.B) {
			dg, db := make([]float32, C), make([]float32, C)
			for b.Loop() {
				bn.trainBackward(0, C, dx, dg, db, dy, x, z, gamma, st, T, c.keep)
			}
		})
	}
}
