package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The column kernel of ConvMultiGradW (K != 3): gradw4x3 (AVX2 when
// Accelerated()) against its portable twin and against float64 sums, then
// ConvMultiGradW on shapes that exercise every part of the blocking (O not
// a multiple of 4, C*K not a multiple of 3, K from 1 to 41, odd T, row
// strides longer than the rows) against a plain triple loop.

// TestGradw4x3 checks out[r*3+j] = sum_t dy[r*dys+t] * xj[t] for the
// dispatched kernel and gradw4x3Generic, the xj at unrelated offsets of one
// buffer (x1 before x0, x2 overlapping x0) and the dy rows strided; and
// that the dispatched kernel has the bits of its Go twin.
func TestGradw4x3(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, T := range append(lengths[1:], 641, 1001) {
		dys := T + r.IntN(5)
		dy := convBuf(r, 4, T, dys)
		buf := randVec(r, 3*T+20)
		offs := [3]int{T + 7, r.IntN(T + 1), T + 7 + r.IntN(T+1)}
		xs := [3][]float32{buf[offs[0] : offs[0]+T], buf[offs[1] : offs[1]+T], buf[offs[2] : offs[2]+T]}
		var got, gen [12]float32
		for i := range got {
			got[i], gen[i] = sentinel, sentinel
		}
		gradw4x3(&got, dy, dys, xs[0], xs[1], xs[2], T)
		gradw4x3Generic(&gen, dy, dys, xs[0], xs[1], xs[2], T)
		var lanes [12]float32
		if T >= minVec {
			gradw4x3Lanes(&lanes, dy, dys, xs[0], xs[1], xs[2], T)
		}
		for row := 0; row < 4; row++ {
			for j := 0; j < 3; j++ {
				var exact, mag float64
				for tt := 0; tt < T; tt++ {
					p := float64(dy[row*dys+tt]) * float64(xs[j][tt])
					exact += p
					mag += math.Abs(p)
				}
				g, w := got[row*3+j], gen[row*3+j]
				if !near(float64(g), exact, mag, T) || !near(float64(w), exact, mag, T) {
					t.Fatalf("gradw4x3 T=%d r=%d j=%d: got %g generic %g exact %g", T, row, j, g, w, exact)
				}
				if l := lanes[row*3+j]; T >= minVec && math.Float32bits(g) != math.Float32bits(l) {
					t.Fatalf("gradw4x3 T=%d r=%d j=%d: %g is not the Go twin's %g", T, row, j, g, l)
				}
			}
		}
	}
}

// gradWCases are ConvMultiGradW shapes for K != 3 and K = 3 with odd sizes.
func gradWCases(r *rand.Rand) []convCase {
	var cs []convCase
	for K := 1; K <= 41; K++ {
		for _, O := range []int{1, 4, 5, 7, 8, 13} {
			C := 1 + r.IntN(5)
			T := []int{1, 7, 8, 9, 17, 63, 129, 641}[r.IntN(8)]
			cs = append(cs, convCase{O, C, K, T})
		}
	}
	// The ResNet1D shapes (8, 5 and 1 taps, 640 steps).
	return append(cs, convCase{16, 1, 8, 640}, convCase{32, 16, 8, 640}, convCase{32, 32, 5, 640}, convCase{32, 16, 1, 640})
}

// TestConvMultiGradWCols checks ConvMultiGradW against the float64 triple
// loop dw[(o*C+i)*K+k] + sum_t dy[o,t] x[i,t+k], the portable
// convGradWGeneric likewise, and that nothing is written past dw (the
// paths' bits: TestPathsSameBits).
func TestConvMultiGradWCols(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, c := range gradWCases(r) {
		O, C, K, T := c.O, c.C, c.K, c.T
		Tin := T + K - 1
		xs, dys := Tin+r.IntN(4), T+r.IntN(4)
		x := convBuf(r, C, Tin, xs)
		dy := convBuf(r, O, T, dys)
		n := O * C * K
		dw := randVec(r, n+guard)
		for j := n; j < len(dw); j++ {
			dw[j] = sentinel
		}
		orig := append([]float32(nil), dw...)
		gen := append([]float32(nil), dw...)
		ConvMultiGradW(dw[:n], dy, dys, x, xs, O, C, K, T)
		convGradWGeneric(gen, dy, dys, x, xs, O, C, K, T)
		for j := n; j < len(dw); j++ {
			if dw[j] != sentinel {
				t.Fatalf("ConvMultiGradW %+v: wrote past dw at +%d", c, j-n)
			}
		}
		for o := 0; o < O; o++ {
			for i := 0; i < C; i++ {
				for k := 0; k < K; k++ {
					j := (o*C+i)*K + k
					exact, mag := float64(orig[j]), math.Abs(float64(orig[j]))
					for tt := 0; tt < T; tt++ {
						p := float64(dy[o*dys+tt]) * float64(x[i*xs+tt+k])
						exact += p
						mag += math.Abs(p)
					}
					if !near(float64(dw[j]), exact, mag, T+1) || !near(float64(gen[j]), exact, mag, T+1) {
						t.Fatalf("ConvMultiGradW %+v o=%d i=%d k=%d: got %g generic %g exact %g", c, o, i, k, dw[j], gen[j], exact)
					}
				}
			}
		}
	}
}

// TestConvMultiGradWColsDeterministic: a metamorphic check that the
// column blocking does not mix rows: the gradient of rows o..o+3 does not
// depend on the other rows of dy (computing all O rows at once equals
// computing them in groups of 4 with the remainder last), bit for bit.
func TestConvMultiGradWColsDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	const O, C, K, T = 10, 3, 7, 100
	x := randVec(r, C*(T+K-1))
	dy := randVec(r, O*T)
	all := make([]float32, O*C*K)
	ConvMultiGradW(all, dy, T, x, T+K-1, O, C, K, T)
	part := make([]float32, O*C*K)
	for o := 0; o < 8; o += 4 {
		ConvMultiGradW(part[o*C*K:(o+4)*C*K], dy[o*T:], T, x, T+K-1, 4, C, K, T)
	}
	ConvMultiGradW(part[8*C*K:], dy[8*T:], T, x, T+K-1, 2, C, K, T)
	for j := range all {
		if math.Float32bits(all[j]) != math.Float32bits(part[j]) {
			t.Fatalf("dw[%d]: %g all rows at once, %g by groups", j, all[j], part[j])
		}
	}
}

func TestConvMultiGradWColsNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	x, dy, w := randVec(r, 16*647), randVec(r, 32*640), randVec(r, 32*16*8)
	if n := testing.AllocsPerRun(10, func() { ConvMultiGradW(w, dy, 640, x, 647, 32, 16, 8, 640) }); n != 0 {
		t.Errorf("ConvMultiGradW K=8 allocates %v times per call", n)
	}
}

// BenchmarkConvMultiGradWK: the weight gradient of ResNet1D's convolutions
// (K = 8, 5, 1; 640 steps). "pertap" is the former path, one Dot per
// (output, input, tap); "asm" is ConvMultiGradW.
func BenchmarkConvMultiGradWK(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []convCase{{16, 1, 8, 640}, {32, 16, 8, 640}, {32, 32, 8, 640}, {32, 32, 5, 640}, {32, 32, 1, 640}} {
		O, C, K, T := c.O, c.C, c.K, c.T
		s := T + K - 1
		x, dy, dw := randVec(r, C*s), randVec(r, O*T), randVec(r, O*C*K)
		flops := 2 * O * C * K * T
		name := fmt.Sprintf("O=%d,C=%d,K=%d,T=%d", O, C, K, T)
		b.Run("generic/"+name, func(b *testing.B) {
			for range b.N {
				convGradWGeneric(dw, dy, T, x, s, O, C, K, T)
			}
			report(b, flops)
		})
		b.Run("pertap/"+name, func(b *testing.B) {
			for range b.N {
				for o := 0; o < O; o++ {
					for i := 0; i < C; i++ {
						g := dw[(o*C+i)*K : (o*C+i+1)*K]
						for k := range g {
							g[k] += Dot(dy[o*T:o*T+T], x[i*s+k:i*s+k+T])
						}
					}
				}
			}
			report(b, flops)
		})
		b.Run("asm/"+name, func(b *testing.B) {
			for range b.N {
				ConvMultiGradW(dw, dy, T, x, s, O, C, K, T)
			}
			report(b, flops)
		})
	}
}

// TestConvMultiBlocksSameBits: ConvMulti's register blocks (16 and 8
// steps, the masked tail) sum every output's terms in the same order, so
// an output does not depend, to the bit, on which block computed it:
// the full call equals calls on 8- and 9-step windows of the same rows
// (the 8-step block alone, and with the tail), at every offset, with and
// without a bias and the rectified copy (ConvMultiBias).
func TestConvMultiBlocksSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	for _, c := range []convCase{{4, 3, 3, 640}, {8, 5, 8, 77}, {5, 2, 1, 100}, {4, 7, 5, 24}, {4, 2, 3, 41}, {12, 3, 2, 57}} {
		O, C, K, T := c.O, c.C, c.K, c.T
		xs := T + K - 1
		x, w, bias := randVec(r, C*xs), randVec(r, O*C*K), randVec(r, O)
		dst0 := randVec(r, O*T)
		full := append([]float32(nil), dst0...)
		ConvMulti(full, T, x, xs, w, O, C, K, T)
		fullB, relB := make([]float32, O*T), make([]float32, O*T)
		ConvMultiBias(fullB, relB, T, x, xs, w, nil, bias, O, C, K, T)
		for _, n := range []int{8, 9} {
			for t0 := 0; t0+n <= T; t0++ {
				win := append([]float32(nil), dst0...)
				ConvMulti(win[t0:], T, x[t0:], xs, w, O, C, K, n)
				winB, relW := make([]float32, O*T), make([]float32, O*T)
				ConvMultiBias(winB[t0:], relW[t0:], T, x[t0:], xs, w, nil, bias, O, C, K, n)
				for o := 0; o < O; o++ {
					for tt := t0; tt < t0+n; tt++ {
						i := o*T + tt
						if math.Float32bits(win[i]) != math.Float32bits(full[i]) ||
							math.Float32bits(winB[i]) != math.Float32bits(fullB[i]) ||
							math.Float32bits(relW[i]) != math.Float32bits(relB[i]) {
							t.Fatalf("%+v o=%d t=%d: window [%d,%d) gives %g/%g/%g, full call %g/%g/%g",
								c, o, tt, t0, t0+n, win[i], winB[i], relW[i], full[i], fullB[i], relB[i])
						}
					}
				}
			}
		}
	}
}
