package kern

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// peak is the core's float32 peak in GFLOP/s, measured once by
// fmaPeakAVX2 (the best of five 50 ms runs), or 0 without the assembly.
var peak = sync.OnceValue(func() float64 {
	if !useAVX2 {
		return 0
	}
	const n = 1 << 20 // 192 Mflop a call
	best := 0.0
	for range 5 {
		calls, start := 0, time.Now()
		for time.Since(start) < 50*time.Millisecond {
			fmaPeakAVX2(n)
			calls++
		}
		best = max(best, float64(calls)*n*192/time.Since(start).Seconds()/1e9)
	}
	return best
})

// BenchmarkFMAPeak reports the core's AVX2 float32 peak: 12 independent
// 8-lane FMA chains.
func BenchmarkFMAPeak(b *testing.B) {
	if !useAVX2 {
		b.Skip("no AVX2+FMA assembly here")
	}
	const n = 1 << 16
	for b.Loop() {
		fmaPeakAVX2(n)
	}
	b.ReportMetric(float64(b.N)*n*192/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// goldenConvShapes are the convolutions of the golden networks (FCN,
// ResNet1D, InceptionTime in recipes/archs) at 640 steps a record:
// C inputs, O outputs, K taps.
var goldenConvShapes = []struct {
	net     string
	C, O, K int
}{
	{"fcn", 1, 16, 8}, {"fcn", 16, 32, 5}, {"fcn", 32, 16, 3},
	{"resnet1d", 16, 16, 5}, {"resnet1d", 16, 16, 3}, {"resnet1d", 16, 32, 8},
	{"resnet1d", 32, 32, 5}, {"resnet1d", 32, 32, 3}, {"resnet1d", 16, 32, 1},
	{"inceptiontime", 8, 8, 39}, {"inceptiontime", 8, 8, 19}, {"inceptiontime", 8, 8, 9}, {"inceptiontime", 32, 8, 1},
}

// BenchmarkConvMultiK times the convolution's forward pass (ConvMultiBias
// from packed weights, as the networks call it), weight gradient and input
// gradient on the golden networks' shapes, T = 640 outputs, and reports
// GFLOP/s (2 O C K T a call) and the share of the core's peak that
// BenchmarkFMAPeak's loop measures in the same binary.
func BenchmarkConvMultiK(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	const T = 640
	for _, s := range goldenConvShapes {
		C, O, K := s.C, s.O, s.K
		xs := T + K - 1
		x, w, bias := randVec(r, C*xs), randVec(r, O*C*K), randVec(r, O)
		dst, dy, dw, dx := make([]float32, O*T), randVec(r, O*T), make([]float32, O*C*K), make([]float32, C*xs)
		pw := make([]float32, PackedLen(O, C, K))
		PackConv(pw, w, O, C, K)
		flops := 2.0 * float64(O*C*K*T)
		name := fmt.Sprintf("%s/C=%d,O=%d,K=%d", s.net, C, O, K)
		for _, pass := range []struct {
			name string
			f    func()
		}{
			{"forward", func() { ConvMultiBias(dst, nil, T, x, xs, w, pw, bias, O, C, K, T) }},
			{"gradW", func() { ConvMultiGradW(dw, dy, T, x, xs, O, C, K, T) }},
			{"gradX", func() { ConvMultiGradX(dx, xs, dy, T, w, O, C, K, T) }},
		} {
			b.Run(pass.name+"/"+name, func(b *testing.B) {
				for b.Loop() {
					pass.f()
				}
				g := flops * float64(b.N) / b.Elapsed().Seconds() / 1e9
				b.ReportMetric(g, "GFLOP/s")
				if p := peak(); p > 0 {
					b.ReportMetric(100*g/p, "%peak")
				}
			})
		}
	}
}
