package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The element-wise and pooling kernels give the same bits as the portable
// code; the float64 reductions agree with an exact reference up to float64
// rounding.

func sameBits(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// specials sprinkles NaNs of both signs, signed zeros, infinities and a
// denormal into v.
func specials(r *rand.Rand, v []float32) {
	sp := []float32{
		float32(math.NaN()), -float32(math.NaN()), 0, float32(math.Copysign(0, -1)),
		float32(math.Inf(1)), float32(math.Inf(-1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	}
	for i := range v {
		if r.IntN(6) == 0 {
			v[i] = sp[r.IntN(len(sp))]
		}
	}
}

func TestReluOps(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, n := range lengths {
		for off := 0; off < 4; off++ {
			x, _ := padded(r, n, (off+1)%4)
			y, _ := padded(r, n, (off+3)%4)
			specials(r, x)
			specials(r, y)

			dst, dbuf := padded(r, n, off)
			want := make([]float32, n)
			Relu(dst, x)
			reluToGeneric(want, x)
			checkGuards(t, "Relu", dbuf, off, n)
			for i := range want {
				if !sameBits(dst[i], want[i]) {
					t.Fatalf("Relu n=%d i=%d: %g, want %g", n, i, dst[i], want[i])
				}
				if w := max(x[i], 0); x[i] == x[i] && x[i] != 0 && dst[i] != w {
					t.Fatalf("Relu n=%d i=%d: %g is not max(%g, 0)", n, i, dst[i], x[i])
				}
			}
			inPlace := append([]float32(nil), x...)
			Relu(inPlace, inPlace)
			for i := range want {
				if !sameBits(inPlace[i], want[i]) {
					t.Fatalf("Relu in place n=%d i=%d: %g, want %g", n, i, inPlace[i], want[i])
				}
			}

			dx, xbuf := padded(r, n, off)
			ReluGrad(dx, x, y)
			reluGradGeneric(want, x, y)
			checkGuards(t, "ReluGrad", xbuf, off, n)
			for i := range want {
				if !sameBits(dx[i], want[i]) {
					t.Fatalf("ReluGrad n=%d i=%d (y %g): %g, want %g", n, i, y[i], dx[i], want[i])
				}
				ref := x[i]
				if y[i] <= 0 {
					ref = 0
				}
				if !sameBits(dx[i], ref) {
					t.Fatalf("ReluGrad n=%d i=%d (y %g, dy %g): %g, want %g", n, i, y[i], x[i], dx[i], ref)
				}
			}
			inPlace = append(inPlace[:0], x...)
			ReluGrad(inPlace, inPlace, y)
			for i := range want {
				if !sameBits(inPlace[i], want[i]) {
					t.Fatalf("ReluGrad in place n=%d i=%d: %g, want %g", n, i, inPlace[i], want[i])
				}
			}
		}
	}
}

func TestNormalizeOps(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, n := range lengths {
		for off := 0; off < 4; off++ {
			x, _ := padded(r, n, (off+1)%4)
			mu, s, g, b := float32(r.NormFloat64()), float32(r.Float64()+0.5), float32(r.NormFloat64()), float32(r.NormFloat64())
			xh, hbuf := padded(r, n, off)
			y, ybuf := padded(r, n, (off+2)%4)
			Normalize(xh, y, x, mu, s, g, b)
			wxh, wy := make([]float32, n), make([]float32, n)
			normalizeGeneric(wxh, wy, x, mu, s, g, b)
			checkGuards(t, "Normalize xh", hbuf, off, n)
			checkGuards(t, "Normalize y", ybuf, (off+2)%4, n)
			for i := range wxh {
				if !sameBits(xh[i], wxh[i]) || !sameBits(y[i], wy[i]) {
					t.Fatalf("Normalize n=%d i=%d: %g %g, want %g %g", n, i, xh[i], y[i], wxh[i], wy[i])
				}
				if e := (float64(x[i]) - float64(mu)) * float64(s); math.Abs(float64(xh[i])-e) > 1e-6*(math.Abs(float64(x[i]))+math.Abs(float64(mu)))*float64(s) {
					t.Fatalf("Normalize n=%d i=%d: xh %g, want %g", n, i, xh[i], e)
				}
			}

			dy, _ := padded(r, n, (off+3)%4)
			k, md, mdx := float32(r.Float64()+0.5), float32(r.NormFloat64()), float32(r.NormFloat64())
			dx, xbuf := padded(r, n, off)
			NormalizeGrad(dx, dy, xh, k, md, mdx)
			want := make([]float32, n)
			normalizeGradGeneric(want, dy, xh, k, md, mdx)
			checkGuards(t, "NormalizeGrad", xbuf, off, n)
			for i := range want {
				if !sameBits(dx[i], want[i]) {
					t.Fatalf("NormalizeGrad n=%d i=%d: %g, want %g", n, i, dx[i], want[i])
				}
				e := float64(k) * (float64(dy[i]) - float64(md) - float64(xh[i])*float64(mdx))
				mag := float64(k) * (math.Abs(float64(dy[i])) + math.Abs(float64(md)) + math.Abs(float64(xh[i]*mdx)))
				if math.Abs(float64(dx[i])-e) > 4e-7*mag {
					t.Fatalf("NormalizeGrad n=%d i=%d: %g, want %g", n, i, dx[i], e)
				}
			}
			inPlace := append([]float32(nil), dy...)
			NormalizeGrad(inPlace, inPlace, xh, k, md, mdx)
			for i := range want {
				if !sameBits(inPlace[i], want[i]) {
					t.Fatalf("NormalizeGrad in place n=%d i=%d: %g, want %g", n, i, inPlace[i], want[i])
				}
			}
		}
	}
}

// tieVec draws from a few values, so windows often hold equal maxima.
func tieVec(r *rand.Rand, n int, nan bool) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.IntN(5)) - 2
		if nan && r.IntN(9) == 0 {
			v[i] = float32(math.NaN())
		}
	}
	return v
}

func TestMaxPool(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, n := range lengths {
		for _, k := range []int{1, 2, 3, 4, 5, 9} {
			for _, nan := range []bool{false, true} {
				x := tieVec(r, n+k-1, nan)
				if n%3 == 0 {
					for i := range x {
						if x[i] == 0 && r.IntN(2) == 0 {
							x[i] = float32(math.Copysign(0, -1))
						}
					}
				}
				if !nan {
					for i := range x {
						if r.IntN(2) == 0 {
							x[i] = float32(r.NormFloat64())
						}
					}
				}
				dst, dbuf := padded(r, n, 1)
				idx := make([]int32, n+1)
				idx[n] = -7
				MaxPool(dst, idx[:n], x, k)
				checkGuards(t, "MaxPool", dbuf, 1, n)
				if idx[n] != -7 {
					t.Fatalf("MaxPool n=%d k=%d wrote past idx", n, k)
				}
				wd, wi := make([]float32, n), make([]int32, n)
				maxPoolGeneric(wd, wi, x, k)
				for i := range wd {
					if !sameBits(dst[i], wd[i]) || idx[i] != wi[i] {
						t.Fatalf("MaxPool n=%d k=%d t=%d: (%g, %d), want (%g, %d)", n, k, i, dst[i], idx[i], wd[i], wi[i])
					}
				}

				dy := randVec(r, n)
				dx, xbuf := padded(r, n+k-1, 2)
				MaxPoolGrad(dx, dy, idx[:n], k)
				checkGuards(t, "MaxPoolGrad", xbuf, 2, n+k-1)
				want := make([]float32, n+k-1)
				for i, j := range idx[:n] {
					want[j] += dy[i]
				}
				gen := make([]float32, n+k-1)
				maxPoolGradGeneric(gen, dy, idx[:n], k, 0, n+k-1)
				for s := range want {
					if n == 0 {
						break
					}
					if !sameBits(dx[s], want[s]) || !sameBits(gen[s], want[s]) {
						t.Fatalf("MaxPoolGrad n=%d k=%d s=%d: %g (generic %g), want %g", n, k, s, dx[s], gen[s], want[s])
					}
				}
			}
		}
	}
}

func TestArgMax(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for n := 1; n <= 200; n++ {
		for rep := 0; rep < 7; rep++ {
			var x []float32
			switch rep {
			case 0:
				x = randVec(r, n)
			case 1, 2:
				x = tieVec(r, n, false)
			case 3, 4:
				x = tieVec(r, n, true)
			case 5:
				x = tieVec(r, n, true)
				x[0] = float32(math.NaN())
			case 6: // signed zeros: the first of the equal maxima wins
				x = make([]float32, n)
				for i := range x {
					x[i] = []float32{0, float32(math.Copysign(0, -1)), -1}[r.IntN(3)]
				}
			}
			v, i := ArgMax(x)
			wv, wi := argMaxGeneric(x)
			if !sameBits(v, wv) || i != wi {
				t.Fatalf("ArgMax n=%d rep %d: (%g, %d), want (%g, %d)", n, rep, v, i, wv, wi)
			}
		}
	}
}

func TestSums64(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	for _, n := range lengths {
		x, y := randVec(r, n), randVec(r, n)
		for i := range x {
			x[i] += 3 // a mean far from 0
		}
		c := r.NormFloat64() + 3
		var es, ed, ex, exy, mag float64
		for i := range x {
			a, b := float64(x[i]), float64(y[i])
			es += a
			ed += (a - c) * (a - c)
			ex += a
			exy += a * b
			mag += math.Abs(a) * (1 + math.Abs(b) + math.Abs(a) + math.Abs(c))
		}
		tol := 1e-14 * (mag + 1)
		sx, sxy := SumDot64(x, y)
		for _, tc := range []struct {
			name      string
			got, want float64
		}{
			{"Sum64", Sum64(x), es}, {"sum64Generic", sum64Generic(x), es},
			{"SqDev64", SqDev64(x, c), ed}, {"sqDev64Generic", sqDev64Generic(x, c), ed},
			{"SumDot64 sx", sx, ex}, {"SumDot64 sxy", sxy, exy},
		} {
			if math.Abs(tc.got-tc.want) > tol {
				t.Fatalf("%s n=%d: %v, want %v", tc.name, n, tc.got, tc.want)
			}
		}
	}
}

// TestConvMultiBias: the bias-initialised kernel is ConvMulti on rows
// filled with the bias, bit for bit.
func TestConvMultiBias(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for ci, c := range convCases() {
		O, C, K, T := c.O, c.C, c.K, c.T
		Tin := T + max(K-1, 0)
		xs, ds := Tin+1+T%3, T+2
		x := convBuf(r, C, Tin, xs)
		w := randVec(r, O*C*K)
		bias := randVec(r, O)
		dst := convBuf(r, O, T, ds)
		want := append([]float32(nil), dst...)
		orig := append([]float32(nil), dst...)
		for o := 0; o < O; o++ {
			for tt := 0; tt < T; tt++ {
				want[o*ds+tt] = bias[o]
			}
		}
		rel := convBuf(r, O, T, ds)
		relOrig := append([]float32(nil), rel...)
		var pw []float32
		if ci%2 == 0 {
			pw = make([]float32, PackedLen(O, C, K))
			PackConv(pw, w, O, C, K)
		}
		if c.T%2 == 0 {
			ConvMultiBias(dst, rel, ds, x, xs, w, pw, bias, O, C, K, T)
		} else {
			ConvMultiBias(dst, nil, ds, x, xs, w, pw, bias, O, C, K, T)
		}
		ConvMulti(want, ds, x, xs, w, O, C, K, T)
		for i := range dst {
			if !sameBits(dst[i], want[i]) {
				t.Fatalf("ConvMultiBias %+v at %d: %g, want %g (was %g)", c, i, dst[i], want[i], orig[i])
			}
			wr := relOrig[i]
			if o, tt := i/ds, i%ds; c.T%2 == 0 && o < O && tt < T {
				wr = max(want[i], 0)
			}
			if !sameBits(rel[i], wr) {
				t.Fatalf("ConvMultiBias %+v relu at %d: %g, want %g", c, i, rel[i], wr)
			}
		}
	}
}

func TestOpsPanicsAndAllocs(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	a := make([]float32, 40)
	id := make([]int32, 40)
	mustPanic("Relu", func() { Relu(a[:10], a[:9]) })
	mustPanic("ReluGrad", func() { ReluGrad(a[:10], a[:10], a[:9]) })
	mustPanic("MaxPool x", func() { MaxPool(a[:10], id, a[:11], 3) })
	mustPanic("MaxPool idx", func() { MaxPool(a[:10], id[:9], a, 3) })
	mustPanic("MaxPool k", func() { MaxPool(a[:10], id, a, 0) })
	mustPanic("MaxPoolGrad dx", func() { MaxPoolGrad(a[:11], a[:10], id, 3) })
	mustPanic("ArgMax", func() { ArgMax(nil) })
	mustPanic("SumDot64", func() { SumDot64(a[:10], a[:9]) })
	mustPanic("Normalize", func() { Normalize(a[:9], a, a[:10], 0, 1, 1, 0) })
	mustPanic("NormalizeGrad", func() { NormalizeGrad(a[:10], a, a[:9], 1, 0, 0) })
	mustPanic("ConvMultiBias", func() { ConvMultiBias(a, nil, 10, a, 10, a, nil, a[:1], 2, 1, 3, 8) })
	mustPanic("ConvMultiBias rel", func() { ConvMultiBias(a, a[:15], 10, a, 10, a, nil, a[:2], 2, 1, 3, 8) })
	mustPanic("ConvMultiBias pw", func() { ConvMultiBias(a, nil, 10, a, 10, a, a[:11], a[:4], 4, 1, 3, 8) })
	mustPanic("PackConv", func() { PackConv(a[:11], a, 4, 1, 3) })

	r := rand.New(rand.NewPCG(1, 1))
	x, y := randVec(r, 640), randVec(r, 640)
	w, bias := randVec(r, 16*16*3), randVec(r, 16)
	big, big2 := randVec(r, 16*640), randVec(r, 16*640)
	ix := make([]int32, 640)
	for name, f := range map[string]func(){
		"Relu":          func() { Relu(y, x) },
		"ReluGrad":      func() { ReluGrad(y, x, x) },
		"MaxPool":       func() { MaxPool(y[:634], ix, x, 3) },
		"MaxPoolGrad":   func() { MaxPoolGrad(y, x[:630], ix, 3) },
		"ArgMax":        func() { ArgMax(x) },
		"SumDot64":      func() { SumDot64(x, y) },
		"Normalize":     func() { Normalize(y, y, x, 0.1, 2, 3, 4) },
		"NormalizeGrad": func() { NormalizeGrad(y, x, x, 1, 2, 3) },
		"ConvMultiBias": func() { ConvMultiBias(big, big2, 640, big, 640, w, nil, bias, 16, 16, 3, 630) },
		"PackConv":      func() { PackConv(big2, w, 16, 16, 3) },
	} {
		if n := testing.AllocsPerRun(10, f); n != 0 {
			t.Errorf("%s allocates %v times per call", name, n)
		}
	}
}

func BenchmarkOps(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const n = 634
	x, y, z := randVec(r, n+2), randVec(r, n+2), randVec(r, n+2)
	ix := make([]int32, n)
	for _, bc := range []struct {
		name string
		f    func()
	}{
		{"Relu", func() { Relu(y, x) }},
		{"ReluGrad", func() { ReluGrad(z, y, x) }},
		{"MaxPool3", func() { MaxPool(y[:n], ix, x, 3) }},
		{"MaxPoolGrad3", func() { MaxPoolGrad(z, y[:n], ix, 3) }},
		{"ArgMax", func() { ArgMax(x) }},
		{"Sum64", func() { Sum64(x) }},
		{"SqDev64", func() { SqDev64(x, 0.5) }},
		{"SumDot64", func() { SumDot64(x, y) }},
		{"Normalize", func() { Normalize(y, z, x, 0.1, 2, 3, 4) }},
		{"NormalizeGrad", func() { NormalizeGrad(z, y, x, 1, 2, 3) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.f()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}

func TestGerGemvT(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, m := range []int{0, 1, 3, 16, 64} {
		for _, n := range lengths {
			if n > 130 && m > 3 {
				continue
			}
			lda := n + m%3
			x, y := randVec(r, m), randVec(r, n)
			a := convBuf(r, m, n, lda)
			orig := append([]float32(nil), a...)
			gen := append([]float32(nil), a...)
			Ger(a, lda, x, y)
			gerGeneric(gen, lda, x, y)
			for i := range a {
				row, j := i/max(lda, 1), i%max(lda, 1)
				if lda == 0 || row >= m || j >= n {
					if a[i] != orig[i] {
						t.Fatalf("Ger m=%d n=%d wrote outside at %d", m, n, i)
					}
					continue
				}
				w := float64(orig[i]) + float64(x[row])*float64(y[j])
				mag := math.Abs(float64(orig[i])) + math.Abs(float64(x[row])*float64(y[j]))
				if !near(float64(a[i]), w, mag, 2) || !near(float64(gen[i]), w, mag, 2) {
					t.Fatalf("Ger m=%d n=%d at %d,%d: %g (generic %g), want %g", m, n, row, j, a[i], gen[i], w)
				}
			}

			dst, dbuf := padded(r, n, 1)
			GemvT(dst, a, lda, x)
			checkGuards(t, "GemvT", dbuf, 1, n)
			want := make([]float32, n)
			gemvTGeneric(want, a, lda, x)
			for j := range dst {
				var e, mag float64
				for i := range x {
					p := float64(x[i]) * float64(a[i*lda+j])
					e += p
					mag += math.Abs(p)
				}
				if !near(float64(dst[j]), e, mag, m) || !near(float64(want[j]), e, mag, m) {
					t.Fatalf("GemvT m=%d n=%d j=%d: %g (generic %g), want %g", m, n, j, dst[j], want[j], e)
				}
			}
		}
	}
}

// TestExp: Exp against math.Exp on a grid over the clamp range, within
// the few ulps of Cephes' expf, on the accelerated path and the portable
// one (lengths that leave a tail for the portable code), in place too;
// and the clamp at the ends.
func TestExp(t *testing.T) {
	var x []float32
	for v := -87.0; v <= 88; v += 0.0137 {
		x = append(x, float32(v))
	}
	x = append(x, 0, -1e-30, 1e-30)
	for _, n := range []int{len(x), len(x) - 3, 7, 1} {
		got := make([]float32, n)
		Exp(got, x)
		gen := make([]float32, n)
		expGeneric(gen, x[:n])
		in := append([]float32(nil), x[:n]...)
		Exp(in, in)
		for i, v := range x[:n] {
			want := math.Exp(float64(v))
			for _, c := range []struct {
				name string
				g    float32
			}{{"Exp", got[i]}, {"portable", gen[i]}, {"in place", in[i]}} {
				if math.Abs(float64(c.g)-want) > 3e-7*want {
					t.Fatalf("n %d: %s(%v) = %v, math.Exp %v (rel %g)", n, c.name, v, c.g, want, math.Abs(float64(c.g)-want)/want)
				}
			}
		}
	}
	lo := make([]float32, 9)
	Exp(lo, []float32{-1000, -1000, -1000, -1000, -1000, -1000, -1000, -1000, -1000})
	for _, v := range lo {
		if want := float32(math.Exp(-87.33654)); math.Abs(float64(v-want)) > 1e-6*float64(want) {
			t.Errorf("Exp(-1000) = %v, want the clamp's %v", v, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("short x: no panic")
		}
	}()
	Exp(make([]float32, 9), make([]float32, 8))
}

// TestNormalizeYCenter: NormalizeY gives Normalize's y, and with relu
// Relu's of it, and Center Normalize's xh, bit for bit (NaNs, -0 and
// values that rectify to 0 included), in place too, for every length
// that reaches the vector loop and its tail.
func TestNormalizeYCenter(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for n := 0; n <= 70; n++ {
		x := randScaled(r, n)
		if n > 3 {
			x[1], x[2], x[3] = float32(math.NaN()), float32(math.Copysign(0, -1)), 0.3 // 0.3: y = -0 below
		}
		mu, s, g, b := float32(0.3), float32(1.7), float32(-0.8), float32(0)
		xh, y, rel := make([]float32, n), make([]float32, n), make([]float32, n)
		Normalize(xh, y, x, mu, s, g, b)
		Relu(rel, y)
		for _, relu := range []bool{false, true} {
			want := y
			if relu {
				want = rel
			}
			got := make([]float32, n)
			NormalizeY(got, x, mu, s, g, b, relu)
			inPlace := append([]float32(nil), x...)
			NormalizeY(inPlace, inPlace, mu, s, g, b, relu)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(inPlace[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d relu=%v i=%d: NormalizeY %#x (in place %#x), want %#x", n, relu, i, math.Float32bits(got[i]), math.Float32bits(inPlace[i]), math.Float32bits(want[i]))
				}
			}
		}
		c := make([]float32, n)
		Center(c, x, mu, s)
		for i := range xh {
			if math.Float32bits(c[i]) != math.Float32bits(xh[i]) {
				t.Fatalf("n=%d i=%d: Center %#x, want Normalize's xh %#x", n, i, math.Float32bits(c[i]), math.Float32bits(xh[i]))
			}
		}
	}
}
