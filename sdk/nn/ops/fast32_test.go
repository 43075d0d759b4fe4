package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// specials mixes ties, zeros of both signs, infinities and NaNs into x.
func specials(r *rand.Rand, x []float32) {
	for i := range x {
		switch r.IntN(40) {
		case 0:
			x[i] = float32(math.NaN())
		case 1:
			x[i] = float32(math.Inf(1 - 2*r.IntN(2)))
		case 2:
			x[i] = float32(math.Copysign(0, -1))
		case 3, 4, 5:
			x[i] = 1 // ties
		}
	}
}

func same32(a, b float32) bool {
	return a == b || (a != a && b != b)
}

// TestFastPointwiseMatchReference: the float32 ReLU and its gradient are
// the generic loops' values (NaN for NaN; -0 and +0 count as equal),
// including the special values.
func TestFastPointwiseMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{1, 7, 8, 9, 31, 640} {
		x, dy := randn32(r, n), randn32(r, n)
		specials(r, x)
		y, dx := make([]float32, n), make([]float32, n)
		ReLU(y, x)
		ReLUBackward(dx, dy, x)
		x64, dy64 := to64(x), to64(dy)
		wy, wdx := make([]float64, n), make([]float64, n)
		pointwise(wy, x64, relu)
		pointwiseGrad(wdx, dy64, x64, reluGrad)
		for i := range x {
			if !same32(y[i], float32(wy[i])) || !same32(dx[i], float32(wdx[i])) {
				t.Fatalf("n=%d x=%g dy=%g: relu %g, %g; reference %g, %g", n, x[i], dy[i], y[i], dx[i], wy[i], wdx[i])
			}
		}
	}
}

// TestFastMaxPoolMatchesReference: the stride-1 path gives the generic
// loop's values and argmax positions bit for bit, ties (first index),
// NaNs (they win) and infinities included; other strides are the loop.
func TestFastMaxPoolMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for trial := 0; trial < 300; trial++ {
		K := 1 + r.IntN(6)
		m := MaxPool1D{Kernel: K, Stride: 1 + r.IntN(2)*r.IntN(3), Pad: r.IntN(K/2 + 1)}
		T := 1 + r.IntN(70)
		L, err := m.OutLen(T)
		if err != nil {
			continue
		}
		rows := 1 + r.IntN(4)
		x := randn32(r, rows*T)
		if r.IntN(2) == 0 {
			specials(r, x)
		}
		y, idx := make([]float32, rows*L), make([]int32, rows*L)
		wy, widx := make([]float64, rows*L), make([]int32, rows*L)
		m.Forward(y, idx, x, T)
		maxPoolForward(m, wy, widx, to64(x), T)
		for i := range y {
			if !same32(y[i], float32(wy[i])) || idx[i] != widx[i] {
				t.Fatalf("%+v T=%d: y[%d] = %g at %d, reference %g at %d", m, T, i, y[i], idx[i], wy[i], widx[i])
			}
		}
	}
}

// TestFastNormMatchesReference: batchnorm and global average pooling in
// float32 against the float64 loops, within a few float32 roundings of
// the terms' magnitudes.
func TestFastNormMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	const u = 1.0 / (1 << 24)
	for trial := 0; trial < 50; trial++ {
		C, T, B := 1+r.IntN(5), 1+r.IntN(50), 1+r.IntN(3)
		n := BatchNorm1D{C: C, Eps: 1e-5}
		x, g, b, mu := randn32(r, B*C*T), randn32(r, C), randn32(r, C), randn32(r, C)
		v := make([]float32, C)
		for i := range v {
			v[i] = 0.1 + r.Float32()
		}
		if r.IntN(3) == 0 {
			g, b = nil, nil
		}
		y := make([]float32, len(x))
		n.Forward(y, x, g, b, mu, v, T)
		want := make([]float64, len(x))
		bnForward(n, want, to64(x), to64(g), to64(b), to64(mu), to64(v), T)
		for i := range y {
			c := (i / T) % C
			s := 1 / math.Sqrt(float64(v[c])+n.Eps)
			mag := math.Abs(float64(x[i]-mu[c])) * s
			if g != nil {
				mag = mag*math.Abs(float64(g[c])) + math.Abs(float64(b[c]))
			}
			if d := math.Abs(float64(y[i]) - want[i]); !(d <= 6*u*mag+1e-30) {
				t.Fatalf("C=%d T=%d: batchnorm y[%d] = %g, reference %g", C, T, i, y[i], want[i])
			}
		}
		p, wp := make([]float32, B*C), make([]float64, B*C)
		GlobalAvgPool(p, x, T)
		globalAvgForward(wp, to64(x), T)
		for i := range p {
			if p[i] != float32(wp[i]) && math.Abs(float64(p[i])-wp[i]) > u*math.Abs(wp[i])+1e-12 {
				t.Fatalf("T=%d: global average %g, reference %g", T, p[i], wp[i])
			}
		}
	}
}

// TestFastGlobalMaxPoolMatchesReference: GlobalMaxPool (the vector
// kernels, the loop for a row whose sum is NaN) gives the loop's maxima
// and positions bit for bit, with ties (the first), NaNs (the first wins),
// infinities of both signs and signed zeros, and rows of every length
// around the kernels' vector width.
func TestFastGlobalMaxPoolMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for trial := 0; trial < 400; trial++ {
		T, R := 1+r.IntN(90), 1+r.IntN(5)
		x := randn32(r, R*T)
		if trial%2 == 0 {
			specials(r, x)
		}
		got, want := make([]float32, R), make([]float32, R)
		gi, wi := make([]int32, R), make([]int32, R)
		GlobalMaxPool(got, gi, x, T)
		globalMaxForward(want, wi, x, T)
		for k := range got {
			if math.Float32bits(got[k]) != math.Float32bits(want[k]) || gi[k] != wi[k] {
				t.Fatalf("trial %d T %d row %d: %v at %d, loop %v at %d (row %v)", trial, T, k, got[k], gi[k], want[k], wi[k], x[k*T:(k+1)*T])
			}
		}
	}
}
