package ops

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func randn32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func conv32(t *testing.T, c Conv1D, x, w, b []float32, T int) []float32 {
	t.Helper()
	L, err := c.OutLen(T)
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float32, len(x)/(c.Cin*T)*c.Cout*L)
	c.Forward(y, x, w, b, T)
	return y
}

// TestConvDepthwiseIsSeparate: groups = Cin (with m outputs per channel)
// equals Cin single-channel convolutions, channel i with weight rows
// i*m..i*m+m-1.
func TestConvDepthwiseIsSeparate(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 5))
	const cin, m, B, T = 4, 2, 2, 19
	c := Conv1D{Cin: cin, Cout: cin * m, Kernel: 5, Stride: 2, Dilation: 2, Groups: cin, PadLeft: 3, PadRight: 1}
	x, w, b := randn32(r, B*cin*T), randn32(r, c.WeightLen()), randn32(r, cin*m)
	y := conv32(t, c, x, w, b, T)
	L := len(y) / (B * cin * m)
	one := c
	one.Cin, one.Cout, one.Groups = 1, m, 1
	for i := 0; i < cin; i++ {
		xi := make([]float32, 0, B*T)
		for s := 0; s < B; s++ {
			xi = append(xi, x[(s*cin+i)*T:(s*cin+i+1)*T]...)
		}
		yi := conv32(t, one, xi, w[i*m*5:(i+1)*m*5], b[i*m:(i+1)*m], T)
		want := make([]float32, 0, len(yi))
		for s := 0; s < B; s++ {
			want = append(want, y[(s*cin+i)*m*L:(s*cin+i+1)*m*L]...)
		}
		closeTo(t, fmt.Sprintf("channel %d", i), yi, want, 1e-6)
	}
}

// TestConvStrideSubsamples: the stride-s output is every s-th output of
// the stride-1 convolution.
func TestConvStrideSubsamples(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 6))
	for _, s := range []int{2, 3, 5} {
		for _, T := range []int{17, 18, 20} {
			c := Conv1D{Cin: 4, Cout: 6, Kernel: 3, Stride: 1, Dilation: 2, Groups: 2, PadLeft: 2, PadRight: 1}
			x, w, b := randn32(r, 2*4*T), randn32(r, c.WeightLen()), randn32(r, 6)
			full := conv32(t, c, x, w, b, T)
			L1 := len(full) / 12
			c.Stride = s
			got := conv32(t, c, x, w, b, T)
			Ls := len(got) / 12
			if Ls != (L1-1)/s+1 {
				t.Fatalf("stride %d T %d: %d outputs, stride 1 gives %d", s, T, Ls, L1)
			}
			want := make([]float32, 0, len(got))
			for row := 0; row < 12; row++ {
				for j := 0; j < Ls; j++ {
					want = append(want, full[row*L1+j*s])
				}
			}
			closeTo(t, fmt.Sprintf("stride %d T %d", s, T), got, want, 1e-6)
		}
	}
}

// TestConvDilationIsZeroDilatedKernel: dilation d equals dilation 1 with
// the kernel spread out by d-1 zeros between taps (K' = d(K-1)+1).
func TestConvDilationIsZeroDilatedKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 7))
	for _, d := range []int{2, 3, 4} {
		c := Conv1D{Cin: 3, Cout: 3, Kernel: 3, Stride: 2, Dilation: d, Groups: 3, PadLeft: 1, PadRight: 4}
		T := 21
		x, w, b := randn32(r, 2*3*T), randn32(r, c.WeightLen()), randn32(r, 3)
		got := conv32(t, c, x, w, b, T)
		K2 := d*(c.Kernel-1) + 1
		w2 := make([]float32, 3*K2)
		for o := 0; o < 3; o++ {
			for k := 0; k < c.Kernel; k++ {
				w2[o*K2+k*d] = w[o*c.Kernel+k]
			}
		}
		c2 := c
		c2.Kernel, c2.Dilation = K2, 1
		closeTo(t, fmt.Sprintf("dilation %d", d), got, conv32(t, c2, x, w2, b, T), 1e-6)
	}
}

// TestConvPaddingIsPad: asymmetric zero padding inside the conv equals the
// Pad op followed by an unpadded conv.
func TestConvPaddingIsPad(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 8))
	c := Conv1D{Cin: 2, Cout: 4, Kernel: 4, Stride: 3, Dilation: 2, Groups: 2, PadLeft: 5, PadRight: 2}
	T := 13
	x, w := randn32(r, 3*2*T), randn32(r, c.WeightLen())
	got := conv32(t, c, x, w, nil, T)
	p := Pad{Left: 5, Right: 2}
	xp := make([]float32, 3*2*(T+7))
	p.Forward(xp, x, T)
	c0 := c
	c0.PadLeft, c0.PadRight = 0, 0
	closeTo(t, "padded", got, conv32(t, c0, xp, w, nil, T+7), 1e-6)
}

// TestRefusals: hyper-parameters out of range give errors that name the
// value and what is accepted.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{Conv1D{Cin: 4, Cout: 6, Kernel: 3, Stride: 1, Dilation: 1, Groups: 4}.Check(), "groups 4 does not divide"},
		{Conv1D{Cin: 4, Cout: 4, Kernel: 3, Stride: 0, Dilation: 1, Groups: 1}.Check(), "stride 0; need >= 1"},
		{Conv1D{Cin: 4, Cout: 4, Kernel: 3, Stride: 1, Dilation: 1, Groups: 1, PadLeft: -1}.Check(), "need both >= 0"},
		{errOf(ConvOutLen(4, 3, 1, 0, 0, 2)), "need T + padLeft + padRight >= 5"},
		{errOf(PoolOutLen(8, 3, 1, 2)), "need 0 <= padding <= kernel/2 = 1"},
		{errOf(PoolOutLen(2, 5, 1, 1)), "need T + 2*padding >= 5"},
		{errOf(PadOutLen(3, -1, 0)), "need both >= 0"},
		{BatchNorm1D{C: 3, Eps: -1}.Check(), "finite eps >= 0"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", tc.err, tc.want)
		}
	}
}

func errOf(_ int, err error) error { return err }
