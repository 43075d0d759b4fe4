package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func to64(x []float32) []float64 {
	if x == nil {
		return nil
	}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func abs64(x []float64) []float64 {
	if x == nil {
		return nil
	}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = math.Abs(v)
	}
	return y
}

// randConv draws a convolution and an input length it accepts: odd and
// even lengths, channel counts that are not multiples of 4, asymmetric
// padding, strides, dilations, groups (depthwise among them), kernels
// from 1 to 41.
func randConv(r *rand.Rand) (Conv1D, int) {
	for {
		g := []int{1, 1, 1, 2, 3}[r.IntN(5)]
		c := Conv1D{
			Cin: g * (1 + r.IntN(7)), Cout: g * (1 + r.IntN(9)), Groups: g,
			Kernel: []int{1, 2, 3, 5, 8, 9, 20, 41}[r.IntN(8)],
			Stride: []int{1, 1, 1, 2, 3}[r.IntN(5)], Dilation: []int{1, 1, 1, 2, 3}[r.IntN(5)],
			PadLeft: r.IntN(6), PadRight: r.IntN(5),
		}
		if r.IntN(6) == 0 { // depthwise
			c.Groups, c.Cout = c.Cin, c.Cin*(1+r.IntN(2))
		}
		T := 1 + r.IntN(90)
		if _, err := c.OutLen(T); err == nil {
			return c, T
		}
	}
}

// TestConvFastMatchesReference: the float32 kernels of Forward and
// Backward against the generic loops in float64, on random shapes. The
// bound is the classic one for a float32 sum of n products, n u
// sum |terms| (u = 2^-24), with n = Cin/Groups*Kernel + 1 (the bias) and
// the same n for every gradient, computed by running the reference on the
// absolute values. Backward must add to dw and db and overwrite dx. Half
// the trials give most samples a gradient of one step a channel (the
// sparse backward, convBackwardSparse), a quarter direct unpadded
// convolutions a gradient on a few steps (the support backward,
// convBackwardSupport).
func TestConvFastMatchesReference(t *testing.T) {
	const sparsePath, supportPath = "sparse", "support"
	r := rand.New(rand.NewPCG(7, 24))
	const u = 1.0 / (1 << 24)
	paths := map[any]int{}
	for trial := 0; trial < 800; trial++ {
		c, T := randConv(r)
		for trial%4 == 2 && !(c.direct() && c.PadLeft+c.PadRight == 0) {
			c, T = randConv(r) // the support path's convolutions
		}
		paths[c.direct()]++
		L, _ := c.OutLen(T)
		B := 1 + r.IntN(3)
		x, w := randn32(r, B*c.Cin*T), randn32(r, c.WeightLen())
		var bias []float32
		if r.IntN(3) > 0 {
			bias = randn32(r, c.Cout)
		}
		name := fmt.Sprintf("%+v T=%d B=%d bias=%v", c, T, B, bias != nil)
		y := make([]float32, B*c.Cout*L)
		for i := range y {
			y[i] = float32(math.NaN()) // every output must be written
		}
		c.Forward(y, x, w, bias, T)
		x64, w64, b64 := to64(x), to64(w), to64(bias)
		want, bound := make([]float64, len(y)), make([]float64, len(y))
		convForward(c, want, x64, w64, b64, T)
		convForward(c, bound, abs64(x64), abs64(w64), abs64(b64), T)
		n := float64(c.Cin/c.Groups*c.Kernel + 1)
		check := func(what string, got []float32, want, bound []float64, base []float32) {
			t.Helper()
			for i, v := range got {
				g := float64(v)
				if base != nil {
					g -= float64(base[i])
				}
				tol := n*u*bound[i] + 1e-30
				if base != nil {
					tol += 2 * u * math.Abs(float64(base[i]))
				}
				if !(math.Abs(g-want[i]) <= tol) {
					t.Fatalf("%s: %s[%d] = %g, reference %g (bound %g)", name, what, i, g, want[i], tol)
				}
			}
		}
		check("y", y, want, bound, nil)

		dy := randn32(r, len(y))
		if trial%2 == 1 {
			// The gradient behind a global max pool: one step of each
			// channel, in every sample but the last (dense); the direct
			// convolution's sparse path takes such samples.
			for b := 0; b < B-1 || B == 1; b++ {
				for o := 0; o < c.Cout; o++ {
					row := dy[(b*c.Cout+o)*L : (b*c.Cout+o+1)*L]
					keep := r.IntN(L)
					for t := range row {
						if t != keep {
							row[t] = 0
						}
					}
				}
				if _, one, ok := new(convScratch).supportSteps(dy[b*c.Cout*L:(b+1)*c.Cout*L], c.Cout, L); c.direct() && ok && one {
					paths[sparsePath]++
				}
				if B == 1 {
					break
				}
			}
		}
		if trial%4 == 2 {
			// The gradient one layer further down: nonzero at a few steps
			// (at most L/4), shared by the channels; the direct unpadded
			// convolution's support path takes such samples.
			for b := 0; b < B; b++ {
				keep := map[int]bool{}
				for range 1 + r.IntN(max(L/4, 1)) {
					keep[r.IntN(L)] = true
				}
				for o := 0; o < c.Cout; o++ {
					row := dy[(b*c.Cout+o)*L : (b*c.Cout+o+1)*L]
					for t := range row {
						if !keep[t] {
							row[t] = 0
						}
					}
				}
				if _, one, ok := new(convScratch).supportSteps(dy[b*c.Cout*L:(b+1)*c.Cout*L], c.Cout, L); c.direct() && c.PadLeft+c.PadRight == 0 && ok && !one {
					paths[supportPath]++
				}
			}
		}
		dx := randn32(r, len(x)) // overwritten
		dw0, db0 := randn32(r, len(w)), randn32(r, c.Cout)
		dw, db := append([]float32(nil), dw0...), append([]float32(nil), db0...)
		c.Backward(dx, dw, db, dy, x, w, T)
		dy64 := to64(dy)
		wdx, wdw, wdb := make([]float64, len(x)), make([]float64, len(w)), make([]float64, c.Cout)
		bdx, bdw, bdb := make([]float64, len(x)), make([]float64, len(w)), make([]float64, c.Cout)
		convBackward(c, wdx, wdw, wdb, dy64, x64, w64, T)
		convBackward(c, bdx, bdw, bdb, abs64(dy64), abs64(x64), abs64(w64), T)
		// dw and db sum over B*L terms, dx over at most Cout*Kernel.
		n = float64(max(B*L, c.Cout*c.Kernel) + 1)
		check("dx", dx, wdx, bdx, nil)
		check("dw", dw, wdw, bdw, dw0)
		check("db", db, wdb, bdb, db0)

		// Any gradient may be nil; the others are unchanged by that.
		dx2 := make([]float32, len(x))
		c.Backward(dx2, nil, nil, dy, x, w, T)
		for i := range dx {
			if dx2[i] != dx[i] {
				t.Fatalf("%s: dx alone differs at %d: %g vs %g", name, i, dx2[i], dx[i])
			}
		}
		dw2 := append([]float32(nil), dw0...)
		c.Backward(nil, dw2, nil, dy, x, w, T)
		for i := range dw {
			if dw2[i] != dw[i] {
				t.Fatalf("%s: dw alone differs at %d: %g vs %g", name, i, dw2[i], dw[i])
			}
		}
	}
	if paths[true] < 50 || paths[false] < 50 || paths[sparsePath] < 10 || paths[supportPath] < 10 {
		t.Fatalf("paths drawn: direct %d, im2col %d, sparse-gradient samples %d, support-gradient samples %d; want each often", paths[true], paths[false], paths[sparsePath], paths[supportPath])
	}
}

// TestConvBatchIndependent: a sample's output does not depend on the
// other samples of its batch (the scratch is per sample).
func TestConvBatchIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for trial := 0; trial < 60; trial++ {
		c, T := randConv(r)
		L, _ := c.OutLen(T)
		const B = 3
		x, w, bias := randn32(r, B*c.Cin*T), randn32(r, c.WeightLen()), randn32(r, c.Cout)
		y := make([]float32, B*c.Cout*L)
		c.Forward(y, x, w, bias, T)
		y1 := make([]float32, c.Cout*L)
		for b := 0; b < B; b++ {
			c.Forward(y1, x[b*c.Cin*T:(b+1)*c.Cin*T], w, bias, T)
			for i, v := range y1 {
				if v != y[b*c.Cout*L+i] {
					t.Fatalf("%+v T=%d: sample %d alone gives y[%d] = %g, in the batch %g", c, T, b, i, v, y[b*c.Cout*L+i])
				}
			}
		}
	}
}

// TestConvForwardReLU: ForwardReLU gives the bits of Forward then ReLU on
// random shapes (both the direct and the im2col path), with rectified
// values among them.
func TestConvForwardReLU(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	zeros := 0
	for trial := 0; trial < 200; trial++ {
		c, T := randConv(r)
		L, _ := c.OutLen(T)
		B := 1 + r.IntN(3)
		x, w, bias := randn32(r, B*c.Cin*T), randn32(r, c.WeightLen()), randn32(r, c.Cout)
		want, got := make([]float32, B*c.Cout*L), make([]float32, B*c.Cout*L)
		c.Forward(want, x, w, bias, T)
		ReLU(want, want)
		c.ForwardReLU(got, x, w, bias, T)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v T %d B %d: value %d is %g, Forward then ReLU %g", c, T, B, i, got[i], want[i])
			}
			if want[i] == 0 {
				zeros++
			}
		}
	}
	if zeros == 0 {
		t.Fatal("no value was rectified")
	}
}
