package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestConvExactLength: the convolution kernels accept input rows of
// exactly T+K-1 samples packed back to back, the last one ending the
// slice, with no spare capacity (checkRows asks for (rows-1)*stride +
// length values, no more). The other tests pad every buffer with guard
// values, under which a kernel that slices a few samples too far (T+K+1
// for T+K-1, as mutation testing tried) still runs. Results are checked
// against the defining sums in float64; T = 5 takes the portable kernels,
// T = 20 the AVX2 ones where the CPU has them.
func TestConvExactLength(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	exact := func(n int) []float32 { return slices.Clip(randVec(r, n)) }
	// O = 70 and 130 exceed the packMax/(4K) = 64 dy rows that
	// ConvMultiGradX packs per block: several blocks, the last partial.
	for _, c := range []convCase{{1, 1, 3, 5}, {2, 3, 3, 5}, {3, 2, 1, 5}, {2, 2, 4, 5}, {4, 3, 3, 20}, {5, 2, 5, 20}, {70, 4, 3, 20}, {130, 2, 3, 12}} {
		O, C, K, T := c.O, c.C, c.K, c.T
		S := T + K - 1 // input row length and stride
		x, w, dy := exact(C*S), exact(O*C*K), exact(O*T)

		// Forward: dst[o*T+t] = sum_{i,k} w[(o*C+i)*K+k] * x[i*S+t+k].
		dst := slices.Clip(make([]float32, O*T))
		ConvMulti(dst, T, x, S, w, O, C, K, T)
		for o := range O {
			for tt := range T {
				var want, mag float64
				for i := range C {
					for k := range K {
						p := float64(w[(o*C+i)*K+k]) * float64(x[i*S+tt+k])
						want, mag = want+p, mag+math.Abs(p)
					}
				}
				if got := float64(dst[o*T+tt]); !near(got, want, mag, C*K) {
					t.Fatalf("ConvMulti %+v: dst[%d][%d] = %g, want %g", c, o, tt, got, want)
				}
			}
		}

		// With the bias first and the rectified copy (ConvMultiBias, w not
		// packed): the same sums plus bias[o], and their positive parts.
		bias := exact(O)
		dstB, rel := slices.Clip(make([]float32, O*T)), slices.Clip(make([]float32, O*T))
		ConvMultiBias(dstB, rel, T, x, S, w, nil, bias, O, C, K, T)
		for i := range dstB {
			if want := float64(dst[i]) + float64(bias[i/T]); !near(float64(dstB[i]), want, math.Abs(want)+1, C*K+1) || rel[i] != max(dstB[i], 0) {
				t.Fatalf("ConvMultiBias %+v: [%d] = %g (rel %g), want %g", c, i, dstB[i], rel[i], want)
			}
		}

		// Weight gradient: dw[(o*C+i)*K+k] = sum_t dy[o*T+t] * x[i*S+t+k].
		dw := slices.Clip(make([]float32, O*C*K))
		ConvMultiGradW(dw, dy, T, x, S, O, C, K, T)
		for j := range dw {
			o, i, k := j/(C*K), j/K%C, j%K
			var want, mag float64
			for tt := range T {
				p := float64(dy[o*T+tt]) * float64(x[i*S+tt+k])
				want, mag = want+p, mag+math.Abs(p)
			}
			if !near(float64(dw[j]), want, mag, T) {
				t.Fatalf("ConvMultiGradW %+v: dw[%d] = %g, want %g", c, j, dw[j], want)
			}
		}

		// Input gradient: dx[i*S+s] = sum_{o, t+k=s} w[(o*C+i)*K+k] * dy[o*T+t].
		dx := slices.Clip(make([]float32, C*S))
		ConvMultiGradX(dx, S, dy, T, w, O, C, K, T)
		for i := range C {
			for s := range S {
				var want, mag float64
				for o := range O {
					for k := range K {
						if tt := s - k; tt >= 0 && tt < T {
							p := float64(w[(o*C+i)*K+k]) * float64(dy[o*T+tt])
							want, mag = want+p, mag+math.Abs(p)
						}
					}
				}
				if got := float64(dx[i*S+s]); !near(got, want, mag, O*K) {
					t.Fatalf("ConvMultiGradX %+v: dx[%d][%d] = %g, want %g", c, i, s, got, want)
				}
			}
		}
	}
}

// TestShortPanicMessages: a too-short x panics with a message giving the
// length it has and the length it needs (len(dst)+k-1), one short of
// enough.
func TestShortPanicMessages(t *testing.T) {
	a := make([]float32, 40)
	idx := make([]int32, 40)
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"Corr3", func() { Corr3(a[:10], a[:11], 1, 2, 3) }, "Corr3 x has length 11, need 12"},
		{"CorrK", func() { CorrK(a[:10], a[:13], a[:5]) }, "CorrK x has length 13, need 14"},
		{"Dot3", func() { Dot3(a[:10], a[:11]) }, "Dot3 x has length 11, need 12"},
		{"DotK", func() { DotK(a[:5], a[:10], a[:13]) }, "DotK x has length 13, need 14"},
		{"MaxPool", func() { MaxPool(a[:10], idx[:10], a[:11], 3) }, "MaxPool x has length 11, need 12"},
	} {
		func() {
			defer func() {
				if msg := fmt.Sprint(recover()); msg != "kern: "+c.want {
					t.Errorf("%s: panic %q, want %q", c.name, msg, "kern: "+c.want)
				}
			}()
			c.f()
		}()
	}
}
