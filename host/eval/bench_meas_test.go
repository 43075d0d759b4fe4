package eval

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkCoordW1 on the paper's shapes: S in {5, 20} members of N = 640.
func BenchmarkCoordW1(b *testing.B) {
	for _, S := range []int{5, 20} {
		b.Run(fmt.Sprintf("%dx640", S), func(b *testing.B) {
			r := rand.New(rand.NewPCG(81, 82))
			x, y := members(r, S, 640, false), members(r, S, 640, false)
			scratch := make([]float64, 2*S)
			b.ReportAllocs()
			for b.Loop() {
				CoordW1(x, y, scratch)
			}
		})
	}
}

// BenchmarkAgreementGrid: a 9 x 10 (eta, delta) grid on S x 640 draws.
func BenchmarkAgreementGrid(b *testing.B) {
	etas := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}
	deltas := []float64{0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9}
	for _, S := range []int{5, 20} {
		b.Run(fmt.Sprintf("%dx640", S), func(b *testing.B) {
			r := rand.New(rand.NewPCG(83, 84))
			draws := make([][]float64, S)
			for s := range draws {
				draws[s] = make([]float64, 640)
				for n := range draws[s] {
					draws[s][n] = r.Float64()
				}
			}
			mask := make([]bool, 640)
			for n := 200; n < 330; n++ {
				mask[n] = true
			}
			dst := make([]SetMatch, len(etas)*len(deltas))
			b.ReportAllocs()
			for b.Loop() {
				AgreementGrid(dst, draws, mask, etas, deltas)
			}
		})
	}
}
