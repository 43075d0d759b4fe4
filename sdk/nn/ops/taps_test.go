package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// taps lays out the im2col columns of x (one sample, Cin rows of T) for
// c's L output steps: row i*K+k, column t, the input value tap k of step
// t reads (pad outside the input).
func taps(c Conv1D, x []float32, T int, pad float32) ([]float32, int) {
	L, _ := c.OutLen(T)
	K := c.Kernel
	col := make([]float32, c.Cin*K*L)
	for i := 0; i < c.Cin; i++ {
		for k := 0; k < K; k++ {
			for t := 0; t < L; t++ {
				u := t*c.Stride + k*c.Dilation - c.PadLeft
				v := pad
				if u >= 0 && u < T {
					v = x[i*T+u]
				}
				col[(i*K+k)*L+t] = v
			}
		}
	}
	return col, L
}

// TestConvForwardTapsMatchesReference: ForwardTaps on the taps of random
// convolutions (groups, strides, dilations, padding) is the generic
// loop's float64 convolution within the bound of a float32 sum of
// Cin/Groups*Kernel+1 terms, with and without a bias, and a column's bits
// do not depend on the other columns (each step alone).
func TestConvForwardTapsMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		c, T := randConv(r)
		x, w, b := randn32(r, c.Cin*T), randn32(r, c.WeightLen()), randn32(r, c.Cout)
		if trial%3 == 0 {
			b = nil
		}
		col, L := taps(c, x, T, 0)
		got := make([]float32, c.Cout*L)
		c.ForwardTaps(got, col, w, b, L)
		want := make([]float64, c.Cout*L)
		convForward(c, want, to64(x), to64(w), to64(b), T)
		bound := make([]float64, c.Cout*L)
		convForward(c, bound, abs64(to64(x)), abs64(to64(w)), abs64(to64(b)), T)
		n := float64(c.Cin/c.Groups*c.Kernel + 1)
		for i := range got {
			if d := math.Abs(float64(got[i]) - want[i]); d > n*0x1p-24*bound[i]+1e-30 {
				t.Fatalf("%+v T %d: y[%d] = %v, want %v (bound %g)", c, T, i, got[i], want[i], n*0x1p-24*bound[i])
			}
		}
		t0 := r.IntN(L)
		one := make([]float32, c.Cin*c.Kernel)
		for row := range one {
			one[row] = col[row*L+t0]
		}
		alone := make([]float32, c.Cout)
		c.ForwardTaps(alone, one, w, b, 1)
		for o := range alone {
			if math.Float32bits(alone[o]) != math.Float32bits(got[o*L+t0]) {
				t.Fatalf("%+v: step %d output %d: %v alone, %v among %d", c, t0, o, alone[o], got[o*L+t0], L)
			}
		}
	}
}

// TestMaxPoolForwardTapsIsForward: on the taps (the -Inf padding written
// out) ForwardTaps gives Forward's values bit for bit, on rows with ties
// of +0 and -0, infinities and NaNs.
func TestMaxPoolForwardTapsIsForward(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1, 1}
	for trial := 0; trial < 300; trial++ {
		K := 1 + r.IntN(5)
		m := MaxPool1D{Kernel: K, Stride: 1 + r.IntN(3), Pad: r.IntN(K/2 + 1)}
		C, T := 1+r.IntN(4), K+r.IntN(30)
		x := randn32(r, C*T)
		for i := range x {
			if r.IntN(3) == 0 {
				x[i] = special[r.IntN(len(special))]
			}
		}
		L, err := m.OutLen(T)
		if err != nil {
			continue
		}
		want := make([]float32, C*L)
		m.Forward(want, make([]int32, C*L), x, T)
		col, _ := taps(Conv1D{Cin: C, Cout: C, Groups: 1, Kernel: K, Stride: m.Stride, Dilation: 1, PadLeft: m.Pad, PadRight: m.Pad}, x, T, float32(math.Inf(-1)))
		got := make([]float32, C*L)
		m.ForwardTaps(got, col, C, L)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
				t.Fatalf("%+v T %d: y[%d] = %v, Forward %v", m, T, i, got[i], want[i])
			}
		}
	}
}
