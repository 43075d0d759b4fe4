package kern

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// fmaExact is a*b+c rounded once to float32 (ties to even), computed
// exactly with math/big: the definition fma32 must meet.
func fmaExact(a, b, c float32) float32 {
	if a != a || b != b || c != c || math.IsInf(float64(a), 0) || math.IsInf(float64(b), 0) || math.IsInf(float64(c), 0) {
		return float32(float64(a)*float64(b) + float64(c))
	}
	x := new(big.Float).SetPrec(400).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetFloat64(float64(c)))
	if x.Sign() == 0 {
		// An exact zero: +0 unless both the product and c are -0.
		return float32(float64(a)*float64(b) + float64(c))
	}
	f, _ := x.Float32()
	return f
}

// fmaCases returns operands that reach every branch of fma32: random
// ones, exact float32 midpoints (the product's low bits half an ulp of
// c), results near and below float32's normal range, overflow, zeros of
// both signs.
func fmaCases(r *rand.Rand) [][3]float32 {
	var cs [][3]float32
	rnd := func() float32 {
		return math.Float32frombits(r.Uint32()&0x807fffff | uint32(100+r.IntN(56))<<23)
	}
	for i := 0; i < 200000; i++ {
		cs = append(cs, [3]float32{rnd(), rnd(), rnd()})
	}
	for i := 0; i < 200000; i++ {
		// c = 1.m, a*b = 2^-24 (1 + small): the sum sits at or near a
		// midpoint of float32's grid around c.
		c := math.Float32frombits(0x3f800000 | r.Uint32()&0x7fffff)
		a := math.Float32frombits(0x33800000 | r.Uint32()&0xf) // 2^-24 (1 + tiny)
		// b just above or below 1: a*b = 2^-24 (1 + k 2^-23 - j 2^-46),
		// whose part below float64's ulp at c makes the float64 sum
		// land on the midpoint without being it.
		b := math.Float32frombits(0x3f800000 | r.Uint32()&0x3)
		if r.IntN(2) == 0 {
			b = math.Float32frombits(0x3f7fffff - r.Uint32()&0x3)
		}
		if r.IntN(2) == 0 {
			a = -a
		}
		if r.IntN(4) == 0 {
			a = math.Float32frombits(0x33800000) // exactly half an ulp of [1, 2)
		}
		cs = append(cs, [3]float32{a, b, c})
	}
	for i := 0; i < 100000; i++ {
		// Results around 2^-126 and in the subnormals.
		a := math.Float32frombits(uint32(r.IntN(40)+1)<<23 | r.Uint32()&0x807fffff)
		b := math.Float32frombits(uint32(r.IntN(40)+1)<<23 | r.Uint32()&0x7fffff)
		c := math.Float32frombits(r.Uint32()&0x80ffffff | uint32(r.IntN(3))<<23)
		cs = append(cs, [3]float32{a, b, c})
	}
	for i := 0; i < 20000; i++ {
		// a*b = 2^-150 (1 - 2^-46) next to an odd subnormal c: the
		// float64 sum is the float32 midpoint c + 2^-150 without being
		// it, as above, but below float32's normal range.
		a := math.Float32frombits(0x1a000001 | r.Uint32()&0x80000000)
		b := math.Float32frombits(0x19fffffe - r.Uint32()&0x2)
		c := math.Float32frombits(r.Uint32()&0x807fffff | 1)
		cs = append(cs, [3]float32{a, b, c})
	}
	mx := math.MaxFloat32
	cs = append(cs,
		[3]float32{float32(mx), 2, 0}, [3]float32{float32(mx), 1, float32(mx)}, [3]float32{-float32(mx), 1.0000001, 0},
		[3]float32{0, 5, 0}, [3]float32{float32(math.Copysign(0, -1)), 5, float32(math.Copysign(0, -1))},
		[3]float32{2, 3, -6}, [3]float32{1e-30, 1e-30, 0}, [3]float32{1e-30, -1e-30, float32(math.Copysign(0, -1))},
		[3]float32{float32(math.Inf(1)), 0, 1}, [3]float32{float32(math.Inf(1)), 1, float32(math.Inf(-1))},
	)
	return cs
}

// TestFMA32: fma32 is the correctly rounded a*b+c on random operands,
// exact midpoints, results in and next to the subnormals, overflow and
// signed zeros, as math/big computes it; and (where the AVX2 kernels
// run) as the CPU's FMA instruction does, through axpyAVX2.
func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cs := fmaCases(r)
	bad := 0
	for _, c := range cs {
		got, want := fma32(c[0], c[1], c[2]), fmaExact(c[0], c[1], c[2])
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			if bad++; bad <= 5 {
				t.Errorf("fma32(%g, %g, %g) = %g (%#x), want %g (%#x)", c[0], c[1], c[2], got, math.Float32bits(got), want, math.Float32bits(want))
			}
		}
	}
	// The loops that write fma32 out: axpyFMA (one a) and fmaVV.
	for i := 0; i < len(cs); i++ {
		a, x, c := cs[i][0], []float32{cs[i][1]}, []float32{cs[i][2]}
		d, v := append([]float32(nil), c...), append([]float32(nil), c...)
		axpyFMA(d, x, a)
		fmaVV(v, []float32{a}, x)
		want := fmaExact(a, x[0], c[0])
		for _, got := range []float32{d[0], v[0]} {
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				if bad++; bad <= 5 {
					t.Errorf("axpyFMA or fmaVV on (%g, %g, %g) = %#x, want %#x", a, x[0], c[0], math.Float32bits(got), math.Float32bits(want))
				}
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d wrong", bad, len(cs))
	}
	if !useAVX2 {
		return
	}
	// The hardware, 8 at a time: dst = fma(a, x, dst) with one a.
	for i := 0; i < len(cs); i++ {
		dst, x := make([]float32, 8), make([]float32, 8)
		for l := range dst {
			dst[l], x[l] = cs[i][2], cs[i][1]
		}
		axpyAVX2(dst, x, cs[i][0])
		if got := fma32(cs[i][0], cs[i][1], cs[i][2]); math.Float32bits(got) != math.Float32bits(dst[0]) && !(got != got && dst[0] != dst[0]) {
			if bad++; bad <= 5 {
				t.Errorf("fma32(%g, %g, %g) = %#x, the CPU's FMA %#x", cs[i][0], cs[i][1], cs[i][2], math.Float32bits(got), math.Float32bits(dst[0]))
			}
		}
	}
}

// kernelCase runs one exported kernel on inputs drawn from r and returns
// its outputs' bits.
type kernelCase struct {
	name string
	run  func(r *rand.Rand) []uint32
}

func bitsOf(vs ...[]float32) []uint32 {
	var b []uint32
	for _, v := range vs {
		for _, x := range v {
			b = append(b, math.Float32bits(x))
		}
	}
	return b
}

func bits64(vs ...float64) []uint32 {
	var b []uint32
	for _, v := range vs {
		u := math.Float64bits(v)
		b = append(b, uint32(u), uint32(u>>32))
	}
	return b
}

// randN is a length that covers the short inputs, every tail width and
// every block count of the vector kernels.
func randN(r *rand.Rand) int {
	if r.IntN(4) == 0 {
		return r.IntN(9)
	}
	return r.IntN(150)
}

// randScaled is randVec with magnitudes spread over a few decades, so
// that sums cancel and round at many exponents.
func randScaled(r *rand.Rand, n int) []float32 {
	v := randVec(r, n)
	for i := range v {
		v[i] *= float32(math.Exp2(float64(r.IntN(12) - 6)))
	}
	return v
}

func convShape(r *rand.Rand) (O, C, K, T int) {
	return 1 + r.IntN(10), 1 + r.IntN(7), []int{1, 2, 3, 3, 5, 7, 9}[r.IntN(7)], randN(r) + 1
}

var kernelCases = []kernelCase{
	{"Corr3", func(r *rand.Rand) []uint32 {
		n := randN(r)
		d, x := randScaled(r, n), randScaled(r, n+2)
		Corr3(d, x, float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64()))
		return bitsOf(d)
	}},
	{"CorrK", func(r *rand.Rand) []uint32 {
		n, k := randN(r), 1+r.IntN(9)
		d, x, w := randScaled(r, n), randScaled(r, n+k-1), randScaled(r, k)
		CorrK(d, x, w)
		return bitsOf(d)
	}},
	{"Dot3", func(r *rand.Rand) []uint32 {
		n := randN(r)
		s0, s1, s2 := Dot3(randScaled(r, n), randScaled(r, n+2))
		return bitsOf([]float32{s0, s1, s2})
	}},
	{"DotK", func(r *rand.Rand) []uint32 {
		n, k := randN(r), 1+r.IntN(6)
		d := randScaled(r, k)
		DotK(d, randScaled(r, n), randScaled(r, n+k-1))
		return bitsOf(d)
	}},
	{"Dot", func(r *rand.Rand) []uint32 {
		n := randN(r)
		return bitsOf([]float32{Dot(randScaled(r, n), randScaled(r, n))})
	}},
	{"Sum", func(r *rand.Rand) []uint32 { return bitsOf([]float32{Sum(randScaled(r, randN(r)))}) }},
	{"Axpy", func(r *rand.Rand) []uint32 {
		n := randN(r)
		d := randScaled(r, n)
		Axpy(d, randScaled(r, n), float32(r.NormFloat64()))
		return bitsOf(d)
	}},
	{"DotCols", func(r *rand.Rand) []uint32 {
		n, in := randN(r), r.IntN(9)
		s := n + r.IntN(3)
		y := make([]float32, n)
		DotCols(y, randScaled(r, max(in*s, 1)), s, randScaled(r, in))
		return bitsOf(y)
	}},
	{"Scale+AddConst+ReluInPlace", func(r *rand.Rand) []uint32 {
		x := randScaled(r, randN(r))
		Scale(x, float32(r.NormFloat64()))
		AddConst(x, float32(r.NormFloat64()))
		ReluInPlace(x)
		return bitsOf(x)
	}},
	{"ConvMulti", func(r *rand.Rand) []uint32 {
		O, C, K, T := convShape(r)
		xs, ds := T+K-1+r.IntN(3), T+r.IntN(3)
		d := randScaled(r, O*ds)
		ConvMulti(d, ds, randScaled(r, C*xs), xs, randScaled(r, O*C*K), O, C, K, T)
		return bitsOf(d)
	}},
	{"ConvMultiBias", func(r *rand.Rand) []uint32 {
		O, C, K, T := convShape(r)
		xs := T + K - 1
		w := randScaled(r, O*C*K)
		var pw []float32
		if r.IntN(2) == 0 {
			pw = make([]float32, PackedLen(O, C, K))
			PackConv(pw, w, O, C, K)
		}
		d, rel := make([]float32, O*T), make([]float32, O*T)
		ConvMultiBias(d, rel, T, randScaled(r, C*xs), xs, w, pw, randScaled(r, O), O, C, K, T)
		return bitsOf(d, rel)
	}},
	{"ConvMultiGradW", func(r *rand.Rand) []uint32 {
		O, C, K, T := convShape(r)
		dw := randScaled(r, O*C*K)
		ConvMultiGradW(dw, randScaled(r, O*T), T, randScaled(r, C*(T+K-1)), T+K-1, O, C, K, T)
		return bitsOf(dw)
	}},
	{"ConvMultiGradX", func(r *rand.Rand) []uint32 {
		O, C, K, T := convShape(r)
		T += K // an interior as often as not
		dx := randScaled(r, C*(T+K-1))
		ConvMultiGradX(dx, T+K-1, randScaled(r, O*T), T, randScaled(r, O*C*K), O, C, K, T)
		return bitsOf(dx)
	}},
	{"Relu+ReluGrad", func(r *rand.Rand) []uint32 {
		n := randN(r)
		y, dx := make([]float32, n), make([]float32, n)
		Relu(y, randScaled(r, n))
		ReluGrad(dx, randScaled(r, n), y)
		return bitsOf(y, dx)
	}},
	{"MaxPool+MaxPoolGrad+ArgMax", func(r *rand.Rand) []uint32 {
		n, k := randN(r)+1, 1+r.IntN(4)
		x := randScaled(r, n+k-1)
		d, idx := make([]float32, n), make([]int32, n)
		MaxPool(d, idx, x, k)
		dx := make([]float32, n+k-1)
		MaxPoolGrad(dx, randScaled(r, n), idx, k)
		m, at := ArgMax(x)
		return append(bitsOf(d, dx, []float32{m}), uint32(at))
	}},
	{"FirstMax", func(r *rand.Rand) []uint32 {
		n := randN(r)
		d := make([]float32, n)
		FirstMax(d, randScaled(r, n), randScaled(r, n))
		return bitsOf(d)
	}},
	{"Sum64+SqDev64+SumDot64", func(r *rand.Rand) []uint32 {
		n := randN(r)
		x := randScaled(r, n)
		sx, sxy := SumDot64(x, randScaled(r, n))
		return bits64(Sum64(x), SqDev64(x, r.NormFloat64()), sx, sxy)
	}},
	{"Normalize+NormalizeGrad+NormalizeY+Center", func(r *rand.Rand) []uint32 {
		n := randN(r)
		xh, y, dx := make([]float32, n), make([]float32, n), make([]float32, n)
		Normalize(xh, y, randScaled(r, n), 0.3, 1.7, -0.8, 0.1)
		NormalizeGrad(dx, randScaled(r, n), xh, 0.9, 0.05, -0.2)
		yr, c := make([]float32, n), make([]float32, n)
		NormalizeY(yr, xh, -0.1, 1.3, 0.7, -0.2, true)
		Center(c, y, 0.2, 0.9)
		return bitsOf(xh, y, dx, yr, c)
	}},
	{"Ger", func(r *rand.Rand) []uint32 {
		m, n := 1+r.IntN(5), randN(r)
		lda := n + r.IntN(3)
		a := randScaled(r, m*lda)
		Ger(a, lda, randScaled(r, m), randScaled(r, n))
		return bitsOf(a)
	}},
	{"GemvT", func(r *rand.Rand) []uint32 {
		m, n := r.IntN(40), randN(r)
		lda := n + r.IntN(3)
		y := make([]float32, n)
		GemvT(y, randScaled(r, max(m*lda, 1)), lda, randScaled(r, m))
		return bitsOf(y)
	}},
	{"Exp", func(r *rand.Rand) []uint32 {
		n := randN(r)
		x := randScaled(r, n)
		for i := range x {
			x[i] *= 40
		}
		d := make([]float32, n)
		Exp(d, x)
		return bitsOf(d)
	}},
}

// samePaths runs kernel case c from seed on the AVX2 path and the portable
// path and reports the first output whose bits differ.
func samePaths(t *testing.T, c kernelCase, seed uint64) {
	t.Helper()
	avx := c.run(rand.New(rand.NewPCG(seed, 7)))
	setAVX2(false)
	port := c.run(rand.New(rand.NewPCG(seed, 7)))
	setAVX2(true)
	if len(avx) != len(port) {
		t.Fatalf("%s seed %d: %d outputs on AVX2, %d portable", c.name, seed, len(avx), len(port))
	}
	for j := range avx {
		if avx[j] != port[j] {
			t.Fatalf("%s seed %d: output %d is %#x on AVX2, %#x portable", c.name, seed, j, avx[j], port[j])
		}
	}
}

// FuzzPathsSameBits is TestPathsSameBits with the fuzzer's seeds: kernel
// case which (modulo their number) on both paths, bit for bit.
func FuzzPathsSameBits(f *testing.F) {
	for i := range kernelCases {
		f.Add(uint64(1000+i), uint8(i))
	}
	f.Fuzz(func(t *testing.T, seed uint64, which uint8) {
		if !useAVX2 {
			t.Skip("one kernel path here")
		}
		samePaths(t, kernelCases[int(which)%len(kernelCases)], seed)
	})
}

// TestPathsSameBits: every exported kernel gives the same bits on the
// AVX2 path and the portable path, on random shapes and values (300 draws
// each, lengths 0 to 150 covering every tail and block count). Where the
// CPU or build has no AVX2 kernels there is one path and nothing to
// compare.
func TestPathsSameBits(t *testing.T) {
	if !useAVX2 {
		t.Skip("one kernel path here: no AVX2+FMA assembly in this build or CPU")
	}
	for _, c := range kernelCases {
		t.Run(c.name, func(t *testing.T) {
			for i := uint64(0); i < 300; i++ {
				samePaths(t, c, i)
			}
		})
	}
}
