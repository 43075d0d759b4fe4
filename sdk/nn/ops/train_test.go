package ops

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// bnTrainRef is training batchnorm in float64 from its definition: per
// channel the batch-and-time mean mu and biased variance v, y = (x-mu)/
// sqrt(v+eps) gamma + beta.
func bnTrainRef(x []float64, gamma, beta []float64, B, C, T int, eps float64) (y, mu, v []float64) {
	y, mu, v = make([]float64, len(x)), make([]float64, C), make([]float64, C)
	N := float64(B * T)
	for c := range C {
		for b := range B {
			for t := range T {
				mu[c] += x[(b*C+c)*T+t] / N
			}
		}
		for b := range B {
			for t := range T {
				d := x[(b*C+c)*T+t] - mu[c]
				v[c] += d * d / N
			}
		}
		for b := range B {
			for t := range T {
				i := (b*C+c)*T + t
				y[i] = (x[i]-mu[c])/math.Sqrt(v[c]+eps)*gamma[c] + beta[c]
			}
		}
	}
	return y, mu, v
}

func to32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// TestBatchNormTrainForward: the output, the kept mean and 1/sqrt(v +
// eps) and PyTorch's running-statistics update (momentum m, the unbiased
// variance) against the float64 definition (an eps large enough to
// matter); with relu the bits of ReLU of the output; channel ranges
// computed apart give the whole call's bits, an empty range computes
// nothing and one outside [0, C] panics; a batch of one value (N = 1)
// leaves the running variance alone.
func TestBatchNormTrainForward(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const B, C, T, eps, m = 3, 4, 5, 0.5, 0.3
	x := randn(r, B*C*T)
	for i := range x {
		x[i] = 2 + 3*x[i]
	}
	gamma, beta := randn(r, C), randn(r, C)
	rm0, rv0 := randn(r, C), randn(r, C)
	for i := range rv0 {
		rv0[i] = 1 + math.Abs(rv0[i])
	}
	wantY, mu, v := bnTrainRef(x, gamma, beta, B, C, T, eps)
	bn := BatchNorm1D{C: C, Eps: eps}
	y, st := make([]float32, len(x)), make([]float32, 4*C)
	rm, rv := to32(rm0), to32(rv0)
	bn.TrainForward(y, st, to32(x), to32(gamma), to32(beta), rm, rv, T, m, false)
	close := func(what string, got float32, want float64) {
		t.Helper()
		if math.Abs(float64(got)-want) > 1e-5*max(1, math.Abs(want)) {
			t.Errorf("%s: %.7g, want %.7g", what, got, want)
		}
	}
	N := float64(B * T)
	for c := range C {
		close("mean", st[c], mu[c])
		close("inv", st[C+c], 1/math.Sqrt(v[c]+eps))
		close("running_mean", rm[c], (1-m)*float64(float32(rm0[c]))+m*mu[c])
		close("running_var", rv[c], (1-m)*float64(float32(rv0[c]))+m*v[c]*N/(N-1))
	}
	for i := range y {
		close("y", y[i], wantY[i])
	}
	relu, want := make([]float32, len(x)), make([]float32, len(x))
	ReLU(want, y)
	bn.TrainForward(relu, make([]float32, 4*C), to32(x), to32(gamma), to32(beta), to32(rm0), to32(rv0), T, m, true)
	if !slices.Equal(relu, want) || !slices.Contains(want, 0) {
		t.Error("with relu: not the bits of ReLU of the output (or the test has no negative output)")
	}
	y2, st2 := make([]float32, len(x)), make([]float32, 4*C)
	rm2, rv2 := to32(rm0), to32(rv0)
	bn.TrainForwardChannels(2, 2, y2, st2, to32(x), to32(gamma), to32(beta), rm2, rv2, T, m, false)
	if slices.ContainsFunc(y2, func(v float32) bool { return v != 0 }) || !slices.Equal(rm2, to32(rm0)) {
		t.Error("an empty channel range computed something")
	}
	bn.TrainForwardChannels(2, 4, y2, st2, to32(x), to32(gamma), to32(beta), rm2, rv2, T, m, false)
	bn.TrainForwardChannels(0, 2, y2, st2, to32(x), to32(gamma), to32(beta), rm2, rv2, T, m, false)
	if !slices.Equal(y, y2) || !slices.Equal(st, st2) || !slices.Equal(rm, rm2) || !slices.Equal(rv, rv2) {
		t.Error("channel ranges computed apart differ from the whole call")
	}
	for _, rg := range [][2]int{{-1, 2}, {3, 5}, {3, 2}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("channel range %v: no panic", rg)
				}
			}()
			bn.TrainForwardChannels(rg[0], rg[1], y2, st2, to32(x), to32(gamma), to32(beta), rm2, rv2, T, m, false)
		}()
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("backward channel range %v: no panic", rg)
				}
			}()
			bn.TrainBackwardChannels(rg[0], rg[1], y2, nil, nil, y2, to32(x), nil, nil, st2, T)
		}()
	}
	bn.TrainBackwardChannels(1, 1, y2, nil, nil, y2, to32(x), nil, nil, st2, T) // empty: no panic
	one := BatchNorm1D{C: 1, Eps: eps}
	rvOne := []float32{0.7}
	one.TrainForward(make([]float32, 1), make([]float32, one.StatsLen()), []float32{3}, nil, nil, []float32{0}, rvOne, 1, m, false)
	if rvOne[0] != 0.7 {
		t.Errorf("N = 1: running variance %g, want it unchanged (0.7)", rvOne[0])
	}
}

// TestBatchNormTrainBackward: dx, dgamma and dbeta of L = sum w y(x) (the
// batch statistics' dependence on x included) against central
// differences of the float64 definition; dgamma and dbeta are added to
// what they held, dx written. With the output z of a relu forward pass,
// the bits of ReLUBackward followed by the unfused call.
func TestBatchNormTrainBackward(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const B, C, T, eps = 2, 3, 4, 1e-5
	x, gamma, beta, w := randn(r, B*C*T), randn(r, C), randn(r, C), randn(r, B*C*T)
	loss := func() float64 {
		y, _, _ := bnTrainRef(x, gamma, beta, B, C, T, eps)
		return dot64(w, y)
	}
	fd := func(v []float64) []float64 {
		g := make([]float64, len(v))
		for i := range v {
			old := v[i]
			h := 1e-6 * max(1, math.Abs(old))
			v[i] = old + h
			a := loss()
			v[i] = old - h
			b := loss()
			v[i] = old
			g[i] = (a - b) / (2 * h)
		}
		return g
	}
	bn := BatchNorm1D{C: C, Eps: eps}
	st := make([]float32, 4*C)
	bn.TrainForward(make([]float32, len(x)), st, to32(x), to32(gamma), to32(beta), make([]float32, C), make([]float32, C), T, 0.1, false)
	dx := make([]float32, len(x))
	for i := range dx {
		dx[i] = 99 // written, not added to
	}
	dg, db := []float32{1, 2, 3}, []float32{-1, 0, 1}
	bn.TrainBackward(dx, dg, db, to32(w), to32(x), nil, to32(gamma), st, T)

	z := make([]float32, len(x))
	bn.TrainForward(z, st, to32(x), to32(gamma), to32(beta), make([]float32, C), make([]float32, C), T, 0.1, true)
	masked := make([]float32, len(x))
	ReLUBackward(masked, to32(w), z)
	wantDX, wantDG, wantDB := make([]float32, len(x)), make([]float32, C), make([]float32, C)
	bn.TrainBackward(wantDX, wantDG, wantDB, masked, to32(x), nil, to32(gamma), st, T)
	fdx, fdg, fdb := make([]float32, len(x)), make([]float32, C), make([]float32, C)
	bn.TrainBackward(fdx, fdg, fdb, to32(w), to32(x), z, to32(gamma), st, T)
	if !slices.Equal(fdx, wantDX) || !slices.Equal(fdg, wantDG) || !slices.Equal(fdb, wantDB) || slices.Equal(masked, to32(w)) {
		t.Error("with z: not the bits of ReLUBackward then the unfused call (or no value was masked)")
	}
	for _, c := range []struct {
		what string
		got  []float32
		want []float64
		base []float64
	}{
		{"dx", dx, fd(x), make([]float64, len(x))},
		{"dgamma", dg, fd(gamma), []float64{1, 2, 3}},
		{"dbeta", db, fd(beta), []float64{-1, 0, 1}},
	} {
		for i, g := range c.got {
			if want := c.base[i] + c.want[i]; math.Abs(float64(g)-want) > 1e-4*max(1, math.Abs(want)) {
				t.Errorf("%s[%d] = %.6g, want %.6g", c.what, i, g, want)
			}
		}
	}
}

// TestBatchNormTrainBackwardKept: keeping a channel's recomputed rows
// between the two passes (the default at these sizes) and recomputing
// each row in the dx pass (keepMax 0) give the same bits, with and
// without the relu mask, and with dx nil (only the sums).
func TestBatchNormTrainBackwardKept(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const B, C, T = 3, 4, 37
	x, gamma, beta, dy := to32(randn(r, B*C*T)), to32(randn(r, C)), to32(randn(r, C)), to32(randn(r, B*C*T))
	bn := BatchNorm1D{C: C, Eps: 1e-5}
	st := make([]float32, 4*C)
	z := make([]float32, len(x))
	bn.TrainForward(z, st, x, gamma, beta, make([]float32, C), make([]float32, C), T, 0.1, true)
	for _, zz := range [][]float32{nil, z} {
		for _, withDX := range []bool{true, false} {
			run := func(keepMax int) (dx, dg, db []float32) {
				dg, db = make([]float32, C), make([]float32, C)
				if withDX {
					dx = make([]float32, len(x))
				}
				bn.trainBackward(0, C, dx, dg, db, dy, x, zz, gamma, st, T, keepMax)
				return dx, dg, db
			}
			kx, kg, kb := run(bnKeepMax)
			rx, rg, rb := run(0)
			if !slices.Equal(kx, rx) || !slices.Equal(kg, rg) || !slices.Equal(kb, rb) {
				t.Errorf("z %v, dx %v: kept rows and recomputed rows differ", zz != nil, withDX)
			}
			if withDX && slices.Equal(kx, make([]float32, len(x))) {
				t.Errorf("z %v: dx all zero", zz != nil)
			}
		}
	}
}

// TestDropoutMask: p = 0 keeps everything; otherwise each value is 0 or
// 1/(1-p), the zeros a share p within 5 standard deviations, the same
// stream the same mask; Mul multiplies elementwise.
func TestDropoutMask(t *testing.T) {
	const n, p = 5000, 0.25
	m := make([]float32, n)
	DropoutMask(m, 0, nil)
	for _, v := range m {
		if v != 1 {
			t.Fatalf("p = 0: mask value %g", v)
		}
	}
	DropoutMask(m, p, rand.New(rand.NewPCG(5, 6)))
	zeros := 0
	for _, v := range m {
		switch v {
		case 0:
			zeros++
		case float32(1 / (1 - p)):
		default:
			t.Fatalf("mask value %g, want 0 or %g", v, 1/(1-p))
		}
	}
	if share, sd := float64(zeros)/n, math.Sqrt(p*(1-p)/n); math.Abs(share-p) > 5*sd {
		t.Errorf("share of zeros %.4f, want %.2f", share, p)
	}
	m2 := make([]float32, n)
	DropoutMask(m2, p, rand.New(rand.NewPCG(5, 6)))
	if !slices.Equal(m, m2) {
		t.Error("the same stream gave another mask")
	}
	dst := make([]float32, 3)
	Mul(dst, []float32{1, 2, 3}, []float32{4, 0, -1})
	if !slices.Equal(dst, []float32{4, 0, -3}) {
		t.Errorf("Mul: %v", dst)
	}
}
