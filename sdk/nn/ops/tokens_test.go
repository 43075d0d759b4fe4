package ops

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The Transformer kernels (tokens.go): backward passes against central
// differences of the forward passes in float64 (grad_test.go's fdCheck),
// and forward passes against closed forms and metamorphic relations.

// TestTransposeAdjoint: Transpose is a permutation whose inverse, and
// adjoint, is Transpose with the sizes swapped: <T x, y> = <x, T' y>, and
// T' T x = x; element (r, n) of a sample lands at (n, r).
func TestTransposeAdjoint(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 1))
	B, R, N := 2, 3, 5
	x, y := randn(r, B*R*N), randn(r, B*R*N)
	tx, ty := make([]float64, len(x)), make([]float64, len(y))
	Transpose(tx, x, R, N)
	Transpose(ty, y, N, R)
	if a, b := dot64(tx, y), dot64(x, ty); math.Abs(a-b) > 1e-12 {
		t.Errorf("<T x, y> = %g, <x, T' y> = %g", a, b)
	}
	back := make([]float64, len(x))
	Transpose(back, tx, N, R)
	if !slices.Equal(back, x) {
		t.Error("T' T x is not x")
	}
	if tx[1*R*N+4*R+2] != x[1*R*N+2*N+4] {
		t.Error("sample 1's (2, 4) is not at (4, 2)")
	}
}

// TestLayerNorm: without weight and bias each row has mean 0 and
// variance v/(v+eps) (v the row's variance); with them, y = xh w + b; the
// backward pass agrees with central differences (dw, db added).
func TestLayerNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 1))
	R, N := 4, 7
	l := LayerNorm{N: N, Eps: 1e-3}
	x := randn(r, R*N)
	for i := range x {
		x[i] = 3*x[i] + 1
	}
	y := make([]float64, len(x))
	layerNormForward(l, y, x, nil, nil)
	for row := range R {
		xs, ys := x[row*N:(row+1)*N], y[row*N:(row+1)*N]
		var m, v, my, vy float64
		for i := range xs {
			m += xs[i] / float64(N)
			my += ys[i] / float64(N)
		}
		for i := range xs {
			v += (xs[i] - m) * (xs[i] - m) / float64(N)
			vy += (ys[i] - my) * (ys[i] - my) / float64(N)
		}
		if math.Abs(my) > 1e-12 || math.Abs(vy-v/(v+l.Eps)) > 1e-12 {
			t.Errorf("row %d: mean %g, variance %g; want 0, %g", row, my, vy, v/(v+l.Eps))
		}
	}
	w, b := randn(r, N), randn(r, N)
	yw := make([]float64, len(x))
	layerNormForward(l, yw, x, w, b)
	for i := range yw {
		if want := y[i]*w[i%N] + b[i%N]; math.Abs(yw[i]-want) > 1e-12 {
			t.Fatalf("value %d: %g, want xh w + b = %g", i, yw[i], want)
		}
	}
	g := randn(r, len(x))
	loss := func() float64 { layerNormForward(l, yw, x, w, b); return dot64(yw, g) }
	dx := make([]float64, len(x))
	dw, addedW := prior(r, N)
	db, addedB := prior(r, N)
	layerNormBackward(l, dx, dw, db, g, x, w)
	fdCheck(t, "layernorm dx", loss, x, dx)
	fdCheck(t, "layernorm dw", loss, w, addedW())
	fdCheck(t, "layernorm db", loss, b, addedB())
}

// TestMatMul: A I = A and (A B) C = A (B C) sample by sample; the
// backward pass agrees with central differences.
func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 1))
	B, M, K, N, P := 2, 3, 4, 5, 2
	a, b, c := randn(r, B*M*K), randn(r, B*K*N), randn(r, B*N*P)
	id := make([]float64, B*K*K)
	for s := range B {
		for k := range K {
			id[s*K*K+k*K+k] = 1
		}
	}
	ai := make([]float64, len(a))
	matMulForward(MatMul{M, K, K}, ai, a, id)
	if !slices.Equal(ai, a) {
		t.Error("A I is not A")
	}
	ab, bc := make([]float64, B*M*N), make([]float64, B*K*P)
	abc, abc2 := make([]float64, B*M*P), make([]float64, B*M*P)
	matMulForward(MatMul{M, K, N}, ab, a, b)
	matMulForward(MatMul{M, N, P}, abc, ab, c)
	matMulForward(MatMul{K, N, P}, bc, b, c)
	matMulForward(MatMul{M, K, P}, abc2, a, bc)
	for i := range abc {
		if math.Abs(abc[i]-abc2[i]) > 1e-12 {
			t.Fatalf("(A B) C and A (B C) differ at %d: %g, %g", i, abc[i], abc2[i])
		}
	}
	p := MatMul{M, K, N}
	g := randn(r, len(ab))
	loss := func() float64 { matMulForward(p, ab, a, b); return dot64(ab, g) }
	da, dbb := make([]float64, len(a)), make([]float64, len(b))
	matMulBackward(p, da, dbb, g, a, b)
	fdCheck(t, "matmul da", loss, a, da)
	fdCheck(t, "matmul db", loss, b, dbb)
}

// attnParams are random attention parameters for E features.
func attnParams(r *rand.Rand, E int) (w, bi, wo, bo []float64) {
	return randn(r, 3*E*E), randn(r, 3*E), randn(r, E*E), randn(r, E)
}

// TestAttentionOneToken: a single token attends to itself alone (its
// softmax is 1), so y = Wo (Wv x + bv) + bo whatever the heads and q, k.
func TestAttentionOneToken(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 1))
	E := 6
	w, bi, wo, bo := attnParams(r, E)
	x := randn(r, 2*E) // two samples of one token
	for _, H := range []int{1, 2, 3} {
		a := Attention{L: 1, E: E, Heads: H}
		y := make([]float64, len(x))
		attentionForward(a, y, x, w, bi, wo, bo, nil, make([]float64, a.ScratchLen()))
		for s := range 2 {
			v := make([]float64, E)
			for j := range E {
				v[j] = bi[2*E+j]
				for k := range E {
					v[j] += w[(2*E+j)*E+k] * x[s*E+k]
				}
			}
			for j := range E {
				want := bo[j]
				for k := range E {
					want += wo[j*E+k] * v[k]
				}
				if math.Abs(y[s*E+j]-want) > 1e-10 {
					t.Fatalf("heads %d, sample %d, feature %d: %g, want %g", H, s, j, y[s*E+j], want)
				}
			}
		}
	}
}

// TestAttentionEquivariant: permuting the tokens permutes the output
// (self-attention without a mask or positions), and the heads matter:
// one head and two give different outputs.
func TestAttentionEquivariant(t *testing.T) {
	r := rand.New(rand.NewPCG(44, 1))
	L, E := 4, 6
	w, bi, wo, bo := attnParams(r, E)
	x := randn(r, L*E)
	perm := []int{2, 0, 3, 1}
	px := make([]float64, len(x))
	for i, p := range perm {
		copy(px[i*E:(i+1)*E], x[p*E:(p+1)*E])
	}
	a := Attention{L: L, E: E, Heads: 2}
	y, py := make([]float64, len(x)), make([]float64, len(x))
	s := make([]float64, a.ScratchLen())
	attentionForward(a, y, x, w, bi, wo, bo, nil, s)
	attentionForward(a, py, px, w, bi, wo, bo, nil, s)
	for i, p := range perm {
		for j := range E {
			if math.Abs(py[i*E+j]-y[p*E+j]) > 1e-12 {
				t.Fatalf("token %d of the permuted input: %g, want token %d's %g", i, py[i*E+j], p, y[p*E+j])
			}
		}
	}
	one := Attention{L: L, E: E, Heads: 1}
	y1 := make([]float64, len(x))
	attentionForward(one, y1, x, w, bi, wo, bo, nil, make([]float64, one.ScratchLen()))
	if slices.Equal(y1, y) {
		t.Error("one head and two give the same output")
	}
	for _, c := range []struct {
		a  Attention
		ok bool
	}{{Attention{2, 6, 4}, false}, {Attention{2, 6, 3}, true}, {Attention{1, 1, 1}, true},
		{Attention{0, 6, 1}, false}, {Attention{2, 0, 1}, false}, {Attention{2, 6, 0}, false}} {
		if err := c.a.Check(); (err == nil) != c.ok {
			t.Errorf("Check of %+v: %v; want accepted %v", c.a, err, c.ok)
		}
	}
}

// TestAttentionLargeScores: scores far beyond exp's range (inputs of
// 1e3) still give finite outputs: the softmax subtracts its maximum.
func TestAttentionLargeScores(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 1))
	L, E := 3, 4
	a := Attention{L: L, E: E, Heads: 1}
	w, bi, wo, bo := attnParams(r, E)
	x := randn(r, L*E)
	for i := range x {
		x[i] *= 1e3
	}
	y := make([]float64, len(x))
	attentionForward(a, y, x, w, bi, wo, bo, nil, make([]float64, a.ScratchLen()))
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("output %d is %g", i, v)
		}
	}
}

// TestAttentionGrad: the backward pass, with and without a dropout mask
// on the attention weights, agrees with central differences for the
// input and every parameter (gradients added); a mask of all ones is no
// mask, and a mask changes the output.
func TestAttentionGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 1))
	B, L, E, H := 2, 3, 4, 2
	a := Attention{L: L, E: E, Heads: H}
	w, bi, wo, bo := attnParams(r, E)
	for i := range w {
		w[i] *= 0.5
	}
	x := randn(r, B*L*E)
	s := make([]float64, a.ScratchLen())
	ones := make([]float64, B*H*L*L)
	for i := range ones {
		ones[i] = 1
	}
	y0, y1 := make([]float64, len(x)), make([]float64, len(x))
	attentionForward(a, y0, x, w, bi, wo, bo, nil, s)
	attentionForward(a, y1, x, w, bi, wo, bo, ones, s)
	if !slices.Equal(y0, y1) {
		t.Error("a mask of ones changes the output")
	}
	mask := make([]float64, B*H*L*L)
	for i := range mask {
		if r.Float64() >= 0.3 {
			mask[i] = 1 / 0.7
		}
	}
	attentionForward(a, y1, x, w, bi, wo, bo, mask, s)
	if slices.Equal(y0, y1) {
		t.Error("a dropout mask leaves the output unchanged")
	}
	for _, drop := range [][]float64{nil, mask} {
		g := randn(r, len(x))
		y := make([]float64, len(x))
		loss := func() float64 { attentionForward(a, y, x, w, bi, wo, bo, drop, s); return dot64(y, g) }
		dx := make([]float64, len(x))
		dw, aw := prior(r, len(w))
		dbi, abi := prior(r, len(bi))
		dwo, awo := prior(r, len(wo))
		dbo, abo := prior(r, len(bo))
		attentionBackward(a, dx, dw, dbi, dwo, dbo, g, x, w, bi, wo, bo, drop, s)
		fdCheck(t, "attention dx", loss, x, dx)
		fdCheck(t, "attention in_proj_weight", loss, w, aw())
		fdCheck(t, "attention in_proj_bias", loss, bi, abi())
		fdCheck(t, "attention out_proj.weight", loss, wo, awo())
		fdCheck(t, "attention out_proj.bias", loss, bo, abo())
	}
}

// TestBinary: each op on broadcast operands (full, row, column, scalar)
// equals its definition written out, and its backward pass agrees with
// central differences for both operands.
func TestBinary(t *testing.T) {
	r := rand.New(rand.NewPCG(46, 1))
	B, R, N := 2, 3, 4
	shapes := [][2]int{{R, N}, {1, N}, {R, 1}, {1, 1}}
	def := map[byte]func(a, b float64) float64{
		'+': func(a, b float64) float64 { return a + b }, '-': func(a, b float64) float64 { return a - b },
		'*': func(a, b float64) float64 { return a * b }, '/': func(a, b float64) float64 { return a / b },
	}
	for _, op := range []byte(BinaryOps) {
		for _, sa := range shapes {
			for _, sb := range shapes[:2] {
				p := Broadcast{R: R, N: N, AR: sa[0], AN: sa[1], BR: sb[0], BN: sb[1], Op: op}
				a, b := randn(r, B*sa[0]*sa[1]), randn(r, B*sb[0]*sb[1])
				for i := range b {
					b[i] = 1.5 + math.Abs(b[i]) // away from 0, for '/'
				}
				y := make([]float64, B*R*N)
				Binary(p, y, a, b)
				for s := range B {
					for row := range R {
						for n := range N {
							va := a[s*sa[0]*sa[1]+min(row, sa[0]-1)*sa[1]+min(n, sa[1]-1)]
							vb := b[s*sb[0]*sb[1]+min(row, sb[0]-1)*sb[1]+min(n, sb[1]-1)]
							if got, want := y[(s*R+row)*N+n], def[op](va, vb); got != want {
								t.Fatalf("%c of %v and %v: (%d, %d, %d) = %g, want %g", op, sa, sb, s, row, n, got, want)
							}
						}
					}
				}
				g := randn(r, len(y))
				loss := func() float64 { Binary(p, y, a, b); return dot64(y, g) }
				da, db := make([]float64, len(a)), make([]float64, len(b))
				BinaryBackward(p, da, db, g, a, b)
				fdCheck(t, string(op)+" da", loss, a, da)
				fdCheck(t, string(op)+" db", loss, b, db)
			}
		}
	}
}

// TestAffine: y = (x w + c) s + t with w and c broadcast, and its backward
// pass against central differences (dw, dc added).
func TestAffine(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 1))
	B, R, N := 2, 3, 4
	p := Affine{R: R, N: N, WR: 1, WN: N, CR: R, CN: 1, S: -1.5, T: 0.25}
	x, w, c := randn(r, B*R*N), randn(r, N), randn(r, R)
	y := make([]float64, len(x))
	affineForward(p, y, x, w, c)
	for i := range y {
		row, n := i/N%R, i%N
		if want := (x[i]*w[n]+c[row])*-1.5 + 0.25; math.Abs(y[i]-want) > 1e-12 {
			t.Fatalf("value %d: %g, want %g", i, y[i], want)
		}
	}
	plain := Affine{R: R, N: N, S: 1}
	affineForward(plain, y, x, nil, nil)
	if !slices.Equal(y, x) {
		t.Error("the affine map without weight, bias, scale or shift is not the identity")
	}
	g := randn(r, len(x))
	loss := func() float64 { affineForward(p, y, x, w, c); return dot64(y, g) }
	dx := make([]float64, len(x))
	dw, aw := prior(r, N)
	dc, ac := prior(r, R)
	affineBackward(p, dx, dw, dc, g, x, w)
	fdCheck(t, "affine dx", loss, x, dx)
	fdCheck(t, "affine dw", loss, w, aw())
	fdCheck(t, "affine dc", loss, c, ac())
}

// TestPowMeanRows: Pow against math.Pow (x*x exactly for 2), MeanRows
// against its sum, and both backward passes against central differences.
func TestPowMeanRows(t *testing.T) {
	r := rand.New(rand.NewPCG(48, 1))
	x := randn(r, 12)
	for i := range x {
		x[i] = 0.5 + math.Abs(x[i])
	}
	for _, e := range []float64{2, 1, 0.5, 3, -1} {
		y := make([]float64, len(x))
		Pow(y, x, e)
		for i := range x {
			if math.Abs(y[i]-math.Pow(x[i], e)) > 1e-12*math.Abs(y[i]) {
				t.Fatalf("%g^%g = %g, want %g", x[i], e, y[i], math.Pow(x[i], e))
			}
		}
		g := randn(r, len(x))
		dx := make([]float64, len(x))
		PowBackward(dx, g, x, e)
		fdCheck(t, "pow dx", func() float64 { Pow(y, x, e); return dot64(y, g) }, x, dx)
	}
	B, R, N := 2, 3, 2
	m := make([]float64, B*N)
	MeanRows(m, x, R, N)
	for s := range B {
		for n := range N {
			want := (x[s*R*N+n] + x[s*R*N+N+n] + x[s*R*N+2*N+n]) / 3
			if math.Abs(m[s*N+n]-want) > 1e-12 {
				t.Errorf("sample %d, column %d: mean %g, want %g", s, n, m[s*N+n], want)
			}
		}
	}
	g := randn(r, len(m))
	dx := make([]float64, len(x))
	MeanRowsBackward(dx, g, R, N)
	fdCheck(t, "meanrows dx", func() float64 { MeanRows(m, x, R, N); return dot64(m, g) }, x, dx)
}

// TestTokenPointwise: Sqrt, Erf and GELU's tanh form against math's, and
// their derivatives against central differences of the float64 forms.
func TestTokenPointwise(t *testing.T) {
	xs := []float32{0.25, 1, 2.5, 4}
	for _, c := range []struct {
		what string
		fwd  func(dst, x []float32)
		bwd  func(dx, dy, x []float32)
		f    func(float64) float64
	}{
		{"sqrt", Sqrt, SqrtBackward, math.Sqrt},
		{"erf", Erf, ErfBackward, math.Erf},
		{"gelu_tanh", GELUTanh, GELUTanhBackward, geluTanh},
	} {
		y, dx := make([]float32, len(xs)), make([]float32, len(xs))
		ones := []float32{1, 1, 1, 1}
		c.fwd(y, xs)
		c.bwd(dx, ones, xs)
		for i, x := range xs {
			v := float64(x)
			if y[i] != float32(c.f(v)) {
				t.Errorf("%s(%g) = %g, want %g", c.what, x, y[i], c.f(v))
			}
			h := 1e-6
			fd := (c.f(v+h) - c.f(v-h)) / (2 * h)
			if math.Abs(float64(dx[i])-fd) > 1e-5*math.Max(1, math.Abs(fd)) {
				t.Errorf("%s'(%g) = %g, central difference %g", c.what, x, dx[i], fd)
			}
		}
	}
	// GELU's tanh form is close to the exact GELU (within 1e-3 here).
	for _, x := range []float64{-2, -0.5, 0.5, 2} {
		if math.Abs(geluTanh(x)-gelu(x)) > 1e-3 {
			t.Errorf("gelu_tanh(%g) = %g, far from gelu %g", x, geluTanh(x), gelu(x))
		}
	}
}

// TestAttentionInnerBits: attentionInner's projections and attention
// weights are the bits of the formula written out here (each sum in the
// order of its terms), on sizes whose tokens and 3E are and are not
// multiples of 4: a kernel that reorders its loops must keep them.
func TestAttentionInnerBits(t *testing.T) {
	r := rand.New(rand.NewPCG(44, 2))
	for _, c := range []struct{ L, E, H int }{{1, 6, 2}, {5, 6, 3}, {7, 10, 2}, {8, 16, 2}, {20, 16, 2}, {3, 5, 1}} {
		a := Attention{L: c.L, E: c.E, Heads: c.H}
		L, E, H, d := c.L, c.E, c.H, c.E/c.H
		f32 := func(v []float64) []float32 {
			out := make([]float32, len(v))
			for i, x := range v {
				out[i] = float32(x)
			}
			return out
		}
		x, w, bi := f32(randn(r, L*E)), f32(randn(r, 3*E*E)), f32(randn(r, 3*E))
		qkv, P, o := make([]float64, L*3*E), make([]float64, H*L*L), make([]float64, L*E)
		attentionInner(a, x, w, bi, nil, qkv, P, o)
		want := make([]float64, L*3*E)
		for l := range L {
			for j := range 3 * E {
				v := float64(bi[j])
				for k := range E {
					v += float64(w[j*E+k]) * float64(x[l*E+k])
				}
				want[l*3*E+j] = v
			}
		}
		if !slices.Equal(qkv, want) {
			t.Fatalf("L %d E %d H %d: the projections differ in their bits", L, E, H)
		}
		scale := 1 / math.Sqrt(float64(d))
		for h := range H {
			for i := range L {
				s := make([]float64, L)
				m := math.Inf(-1)
				for j := range L {
					for q := range d {
						s[j] += want[i*3*E+h*d+q] * want[j*3*E+E+h*d+q]
					}
					s[j] *= scale
					m = max(m, s[j])
				}
				var z float64
				for j := range L {
					s[j] = math.Exp(s[j] - m)
					z += s[j]
				}
				for j := range L {
					if got := P[h*L*L+i*L+j]; got != s[j]/z {
						t.Fatalf("L %d E %d H %d: head %d weight (%d, %d) = %v, want %v", L, E, H, h, i, j, got, s[j]/z)
					}
				}
			}
		}
	}
}
