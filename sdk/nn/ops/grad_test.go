package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The backward passes against central differences of the forward passes,
// both in float64 (the kernels' float64 instantiation): with h = 1e-6 the
// truncation error is h^2/6 |f'''| ~ 1e-13 and the rounding error about
// 1e-16 |loss| / h ~ 1e-9 for the losses here (|loss| < 1e3), so a
// tolerance of 1e-6 x max(1, max |gradient|) leaves a margin of 1000 while
// any wrong term (a missed tap, a misplaced index) is of order 1. Random
// inputs keep kinks (ReLU at 0, max-pool ties) farther than h away with
// probability near 1 (seeded, so the draw is fixed).

const (
	fdH   = 1e-6
	fdTol = 1e-6
)

func randn(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

func dot64(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// fdCheck compares grad with the central difference of loss over v.
func fdCheck(t *testing.T, what string, loss func() float64, v, grad []float64) {
	t.Helper()
	if len(v) != len(grad) {
		t.Fatalf("%s: %d values, %d gradients", what, len(v), len(grad))
	}
	scale := 1.0
	for _, g := range grad {
		scale = math.Max(scale, math.Abs(g))
	}
	for j := range v {
		old := v[j]
		v[j] = old + fdH
		lp := loss()
		v[j] = old - fdH
		lm := loss()
		v[j] = old
		fd := (lp - lm) / (2 * fdH)
		if !(math.Abs(fd-grad[j]) <= fdTol*scale) {
			t.Errorf("%s[%d]: backward %.10g, central difference %.10g", what, j, grad[j], fd)
			return
		}
	}
}

// prior fills a parameter-gradient buffer with values that Backward must
// add to, and returns a function giving what was added.
func prior(r *rand.Rand, n int) (buf []float64, added func() []float64) {
	buf = randn(r, n)
	p0 := append([]float64(nil), buf...)
	return buf, func() []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = buf[i] - p0[i]
		}
		return d
	}
}

func TestConvGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	n := 0
	for n < 40 {
		g := 1 + r.IntN(3)
		c := Conv1D{Cin: g * (1 + r.IntN(2)), Cout: g * (1 + r.IntN(2)), Kernel: 1 + r.IntN(5),
			Stride: 1 + r.IntN(3), Dilation: 1 + r.IntN(3), Groups: g, PadLeft: r.IntN(4), PadRight: r.IntN(4)}
		T := 1 + r.IntN(16)
		L, err := c.OutLen(T)
		if err != nil {
			continue
		}
		n++
		B := 1 + r.IntN(2)
		bias := r.IntN(2) == 0
		x, w := randn(r, B*c.Cin*T), randn(r, c.WeightLen())
		var b []float64
		if bias {
			b = randn(r, c.Cout)
		}
		u := randn(r, B*c.Cout*L)
		y := make([]float64, len(u))
		loss := func() float64 { convForward(c, y, x, w, b, T); return dot64(u, y) }
		dx := make([]float64, len(x))
		dw, addedW := prior(r, len(w))
		var db []float64
		addedB := func() []float64 { return nil }
		if bias {
			db, addedB = prior(r, c.Cout)
		}
		convBackward(c, dx, dw, db, u, x, w, T)
		name := fmt.Sprintf("%+v T=%d B=%d", c, T, B)
		t.Run(name, func(t *testing.T) {
			fdCheck(t, "dx", loss, x, dx)
			fdCheck(t, "dw", loss, w, addedW())
			if bias {
				fdCheck(t, "db", loss, b, addedB())
			}
		})
	}
}

func TestPadPoolGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 2))
	for n := 0; n < 30; {
		K := 1 + r.IntN(5)
		p := r.IntN(K/2 + 1)
		s := 1 + r.IntN(3)
		T := 1 + r.IntN(14)
		L, err := PoolOutLen(T, K, s, p)
		if err != nil {
			continue
		}
		n++
		rows := 1 + r.IntN(4)
		x, u := randn(r, rows*T), randn(r, rows*L)
		y := make([]float64, len(u))
		idx := make([]int32, len(u))
		name := fmt.Sprintf("K=%d s=%d p=%d T=%d", K, s, p, T)
		t.Run("max "+name, func(t *testing.T) {
			m := MaxPool1D{K, s, p}
			maxPoolForward(m, y, idx, x, T)
			dx := make([]float64, len(x))
			scatter(dx, u, idx, T, L)
			fdCheck(t, "dx", func() float64 { maxPoolForward(m, y, idx, x, T); return dot64(u, y) }, x, dx)
		})
		t.Run("avg "+name, func(t *testing.T) {
			a := AvgPool1D{K, s, p}
			dx := make([]float64, len(x))
			avgPoolBackward(a, dx, u, T)
			fdCheck(t, "dx", func() float64 { avgPoolForward(a, y, x, T); return dot64(u, y) }, x, dx)
		})
		t.Run("pad "+name, func(t *testing.T) {
			pd := Pad{Left: p, Right: K, Value: 0.25}
			up := randn(r, rows*(T+p+K))
			yp := make([]float64, len(up))
			dx := make([]float64, len(x))
			padBackward(pd, dx, up, T)
			fdCheck(t, "dx", func() float64 { padForward(pd, yp, x, T); return dot64(up, yp) }, x, dx)
		})
	}
	// global pools
	x, u := randn(r, 6*11), randn(r, 6)
	y, idx := make([]float64, 6), make([]int32, 6)
	dx := make([]float64, len(x))
	globalAvgBackward(dx, u, 11)
	fdCheck(t, "global avg dx", func() float64 { globalAvgForward(y, x, 11); return dot64(u, y) }, x, dx)
	globalMaxForward(y, idx, x, 11)
	scatter(dx, u, idx, 11, 1)
	fdCheck(t, "global max dx", func() float64 { globalMaxForward(y, idx, x, 11); return dot64(u, y) }, x, dx)
}

func TestActivationGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 3))
	x, u := randn(r, 50), randn(r, 50)
	for i := range x {
		x[i] *= 4
	}
	y, dx := make([]float64, len(x)), make([]float64, len(x))
	for _, a := range []struct {
		name string
		f, g func(float64) float64
	}{{"relu", relu, reluGrad}, {"gelu", gelu, geluGrad}, {"silu", silu, siluGrad},
		{"sigmoid", sigmoid, sigmoidGrad}, {"tanh", math.Tanh, tanhGrad}} {
		pointwiseGrad(dx, u, x, a.g)
		fdCheck(t, a.name, func() float64 { pointwise(y, x, a.f); return dot64(u, y) }, x, dx)
	}
	leakyBackward(dx, u, x, 0.07)
	fdCheck(t, "leakyrelu", func() float64 { leakyForward(y, x, 0.07); return dot64(u, y) }, x, dx)

	for _, ct := range [][2]int{{5, 3}, {7, 1}, {1, 4}} {
		C, T := ct[0], ct[1]
		x, u := randn(r, 2*C*T), randn(r, 2*C*T)
		y, dx := make([]float64, len(x)), make([]float64, len(x))
		softmaxForward(y, x, C, T)
		softmaxBackward(dx, u, y, C, T)
		fdCheck(t, fmt.Sprintf("softmax C=%d T=%d", C, T), func() float64 { softmaxForward(y, x, C, T); return dot64(u, y) }, x, dx)
	}
}

func TestJoinDenseNormGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 4))
	// add: d/da sum u (a + b) = u
	a, b, u := randn(r, 12), randn(r, 12), randn(r, 12)
	y := make([]float64, 12)
	da := make([]float32, 12)
	db := make([]float32, 12)
	u32 := make([]float32, 12)
	for i, v := range u {
		u32[i] = float32(v)
	}
	AddBackward(da, db, u32)
	da64, db64 := make([]float64, 12), make([]float64, 12)
	for i := range da {
		da64[i], db64[i] = float64(da[i]), float64(db[i])
	}
	addLoss := func() float64 { addForward(y, a, b); return dot64(u, y) }
	fdCheck(t, "add da", addLoss, a, da64)
	fdCheck(t, "add db", addLoss, b, db64)

	// concat of 3 inputs
	chans, T, B := []int{2, 1, 3}, 5, 2
	xs := [][]float64{randn(r, B*2*T), randn(r, B*1*T), randn(r, B*3*T)}
	uc := randn(r, B*6*T)
	yc := make([]float64, len(uc))
	dxs := [][]float64{make([]float64, B*2*T), nil, make([]float64, B*3*T)}
	concatBackward(dxs, uc, chans, T)
	for i, dx := range dxs {
		if dx != nil {
			fdCheck(t, fmt.Sprintf("concat dx%d", i), func() float64 { concatForward(yc, xs, chans, T); return dot64(uc, yc) }, xs[i], dx)
		}
	}

	// linear
	l := Linear{In: 6, Out: 4}
	x, w, bb, ul := randn(r, 3*6), randn(r, 24), randn(r, 4), randn(r, 3*4)
	yl := make([]float64, 12)
	dx := make([]float64, len(x))
	dw, addW := prior(r, 24)
	dbb, addB := prior(r, 4)
	linearBackward(l, dx, dw, dbb, ul, x, w)
	ll := func() float64 { linearForward(l, yl, x, w, bb); return dot64(ul, yl) }
	fdCheck(t, "linear dx", ll, x, dx)
	fdCheck(t, "linear dw", ll, w, addW())
	fdCheck(t, "linear db", ll, bb, addB())

	// eval batchnorm
	n := BatchNorm1D{C: 3, Eps: 1e-5}
	xn, g, be, mu := randn(r, 2*3*7), randn(r, 3), randn(r, 3), randn(r, 3)
	v := []float64{0.5, 1.7, 0.01}
	un := randn(r, len(xn))
	yn := make([]float64, len(xn))
	dxn := make([]float64, len(xn))
	dg, addG := prior(r, 3)
	dbe, addBe := prior(r, 3)
	bnBackward(n, dxn, dg, dbe, un, xn, g, mu, v, 7)
	bl := func() float64 { bnForward(n, yn, xn, g, be, mu, v, 7); return dot64(un, yn) }
	fdCheck(t, "batchnorm dx", bl, xn, dxn)
	fdCheck(t, "batchnorm dgamma", bl, g, addG())
	fdCheck(t, "batchnorm dbeta", bl, be, addBe())
}

// TestMaxPoolBackwardStride1Bits: the stride-1 unpadded max pool's
// backward (kern.MaxPoolGrad row by row) gives the bits of the scatter it
// replaces (sums in increasing t from +0), with ties, zeros of both
// signs, a NaN gradient and rows of one window.
func TestMaxPoolBackwardStride1Bits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for _, k := range []int{1, 2, 3, 5} {
		for _, T := range []int{k, k + 1, 40} {
			m := MaxPool1D{Kernel: k, Stride: 1}
			L := T - k + 1
			const rows = 6
			x := make([]float32, rows*T)
			for i := range x {
				x[i] = float32(r.IntN(4)) // ties
			}
			y, idx := make([]float32, rows*L), make([]int32, rows*L)
			m.Forward(y, idx, x, T)
			dy := make([]float32, rows*L)
			for i := range dy {
				switch r.IntN(5) {
				case 0:
					dy[i] = float32(math.Copysign(0, -1))
				case 1:
					dy[i] = 0
				default:
					dy[i] = float32(r.NormFloat64())
				}
			}
			dy[len(dy)/2] = float32(math.NaN())
			got, want := make([]float32, rows*T), make([]float32, rows*T)
			for i := range got {
				got[i] = 7 // stale: every value must be written
			}
			m.Backward(got, dy, idx, T)
			scatter(want, dy, idx, T, L)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("k %d T %d: dx[%d] = %v, the scatter gives %v", k, T, i, got[i], want[i])
				}
			}
		}
	}
}
