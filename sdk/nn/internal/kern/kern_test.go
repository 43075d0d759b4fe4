package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// The tests compare the exported kernels (assembly on AVX2 machines, for
// lengths >= 8) with the portable functions and with float64 references,
// in one run. Tolerances allow for float32 rounding of sums computed in a
// different order and with fused multiply-adds.

const relTol = 2e-6 // times the sum of the magnitudes of the terms, per term count factor below

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.Float64()*2 - 1)
	}
	return v
}

const guard = 5
const sentinel = float32(12345.5)

// padded returns a slice of length n at offset off in a buffer with guard
// sentinels on both sides, and the buffer.
func padded(r *rand.Rand, n, off int) (s, buf []float32) {
	buf = make([]float32, off+n+guard)
	for i := range buf {
		buf[i] = sentinel
	}
	s = buf[off : off+n : off+n]
	copy(s, randVec(r, n))
	return
}

func checkGuards(t *testing.T, what string, buf []float32, off, n int) {
	t.Helper()
	for i := 0; i < off; i++ {
		if buf[i] != sentinel {
			t.Fatalf("%s: wrote before the slice at %d", what, i-off)
		}
	}
	for i := off + n; i < len(buf); i++ {
		if buf[i] != sentinel {
			t.Fatalf("%s: wrote after the slice at +%d", what, i-off-n)
		}
	}
}

// close reports whether got is within float32 rounding of want, where mag
// bounds the sum of the magnitudes of the terms that make up want and
// terms is their count.
func near(got, want, mag float64, terms int) bool {
	tol := 4e-7*mag*math.Sqrt(float64(terms+1))*4 + 1e-30
	return math.Abs(got-want) <= tol
}

var lengths = func() []int {
	var l []int
	for n := 0; n <= 70; n++ {
		l = append(l, n)
	}
	return append(l, 127, 128, 129, 630, 632, 636, 638, 640)
}()

// asmBuiltAndCPU reports whether this build has the assembly kernels
// (amd64 without -tags purego) and the CPU has AVX2 and FMA, as x/sys/cpu
// says: the CPU's best path, whatever KernelsEnv asks.
func asmBuiltAndCPU() bool {
	return runtime.GOARCH == "amd64" && !puregoTag && cpu.X86.HasAVX2 && cpu.X86.HasFMA
}

// TestPath: the assembly kernels are in use exactly when the build
// allows them (amd64 without -tags purego) and the CPU has AVX2 and FMA,
// as x/sys/cpu says; and on Linux x/sys/cpu's answer agrees with the
// kernel's own flags in /proc/cpuinfo (which Linux clears when the OS
// does not save the YMM registers), so the path is not decided on a
// misread CPUID.
func TestPath(t *testing.T) {
	want := asmBuiltAndCPU() && os.Getenv(KernelsEnv) != "portable"
	if Accelerated() != want {
		t.Errorf("Accelerated() = %v; want %v (GOARCH %s, purego %v, AVX2 %v, FMA %v)",
			Accelerated(), want, runtime.GOARCH, puregoTag, cpu.X86.HasAVX2, cpu.X86.HasFMA)
	}
	if runtime.GOARCH != "amd64" {
		return
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return // not Linux: x/sys/cpu is the only witness
	}
	var flags []string
	for _, l := range strings.Split(string(info), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = strings.Fields(v)
			break
		}
	}
	if flags == nil {
		t.Fatal("/proc/cpuinfo has no flags line")
	}
	for _, f := range []struct {
		name string
		has  bool
	}{{"avx2", cpu.X86.HasAVX2}, {"fma", cpu.X86.HasFMA}} {
		if slices.Contains(flags, f.name) != f.has {
			t.Errorf("/proc/cpuinfo flag %s present %v, x/sys/cpu says %v", f.name, !f.has, f.has)
		}
	}
}

func TestCorr3(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range lengths {
		for off := 0; off < 4; off++ {
			dst, dbuf := padded(r, n, off)
			x, _ := padded(r, n+2, (off+1)%4)
			w := randVec(r, 3)
			ref := append([]float32(nil), dst...)
			corr3Generic(ref, x, w[0], w[1], w[2])
			want := append([]float32(nil), dst...)
			Corr3(dst, x, w[0], w[1], w[2])
			checkGuards(t, "Corr3", dbuf, off, n)
			for i := range dst {
				exact := float64(want[i])
				mag := math.Abs(exact)
				for k := 0; k < 3; k++ {
					exact += float64(w[k]) * float64(x[i+k])
					mag += math.Abs(float64(w[k]) * float64(x[i+k]))
				}
				if !near(float64(dst[i]), exact, mag, 4) || !near(float64(ref[i]), exact, mag, 4) {
					t.Fatalf("Corr3 n=%d off=%d t=%d: got %g generic %g exact %g", n, off, i, dst[i], ref[i], exact)
				}
			}
		}
	}
}

func TestCorrK(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{0, 1, 2, 3, 4, 5, 7, 9} {
		for _, n := range lengths {
			off := n % 4
			dst, dbuf := padded(r, n, off)
			x, _ := padded(r, n+max(k-1, 0), (off+3)%4)
			w := randVec(r, k)
			orig := append([]float32(nil), dst...)
			ref := append([]float32(nil), dst...)
			corrKGeneric(ref, x, w)
			CorrK(dst, x, w)
			checkGuards(t, "CorrK", dbuf, off, n)
			for i := range dst {
				exact, mag := float64(orig[i]), math.Abs(float64(orig[i]))
				for j := 0; j < k; j++ {
					exact += float64(w[j]) * float64(x[i+j])
					mag += math.Abs(float64(w[j]) * float64(x[i+j]))
				}
				if !near(float64(dst[i]), exact, mag, k+1) || !near(float64(ref[i]), exact, mag, k+1) {
					t.Fatalf("CorrK k=%d n=%d t=%d: got %g generic %g exact %g", k, n, i, dst[i], ref[i], exact)
				}
			}
		}
	}
}

func TestDot3DotK(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{1, 2, 3, 4, 5} {
		for _, n := range lengths {
			off := (n + k) % 4
			dy, _ := padded(r, n, off)
			x, _ := padded(r, n+k-1, (off+1)%4)
			// Poison the sentinels beyond x and dy: the kernels must not read them.
			exact := make([]float64, k)
			mag := make([]float64, k)
			for j := 0; j < k; j++ {
				for i := 0; i < n; i++ {
					p := float64(dy[i]) * float64(x[i+j])
					exact[j] += p
					mag[j] += math.Abs(p)
				}
			}
			dst := make([]float32, k)
			DotK(dst, dy, x)
			for j := range dst {
				if !near(float64(dst[j]), exact[j], mag[j], n) {
					t.Fatalf("DotK k=%d n=%d j=%d: got %g exact %g", k, n, j, dst[j], exact[j])
				}
			}
			if k == 3 {
				s0, s1, s2 := Dot3(dy, x)
				g0, g1, g2 := dot3Generic(dy, x)
				for j, s := range []float32{s0, s1, s2, g0, g1, g2} {
					if !near(float64(s), exact[j%3], mag[j%3], n) {
						t.Fatalf("Dot3 n=%d result %d: got %g exact %g", n, j, s, exact[j%3])
					}
				}
			}
		}
	}
}

func TestDotSum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range lengths {
		for off := 0; off < 4; off++ {
			x, _ := padded(r, n, off)
			y, _ := padded(r, n+off, 3-off) // longer y is allowed
			var ed, md, es, ms float64
			for i := 0; i < n; i++ {
				p := float64(x[i]) * float64(y[i])
				ed += p
				md += math.Abs(p)
				es += float64(x[i])
				ms += math.Abs(float64(x[i]))
			}
			if d, g := Dot(x, y), dotGeneric(x, y); !near(float64(d), ed, md, n) || !near(float64(g), ed, md, n) {
				t.Fatalf("Dot n=%d: got %g generic %g exact %g", n, d, g, ed)
			}
			if s, g := Sum(x), sumGeneric(x); !near(float64(s), es, ms, n) || !near(float64(g), es, ms, n) {
				t.Fatalf("Sum n=%d: got %g generic %g exact %g", n, s, g, es)
			}
		}
	}
}

func TestElementwise(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range lengths {
		for off := 0; off < 4; off++ {
			a := float32(r.Float64()*2 - 1)
			x, _ := padded(r, n, (off+2)%4)
			for _, op := range []string{"axpy", "scale", "addconst", "relu"} {
				dst, dbuf := padded(r, n, off)
				if op == "relu" && n > 3 {
					dst[0] = float32(math.NaN())
					dst[n-1] = float32(math.Copysign(0, -1))
					dst[n-2] = float32(math.Inf(-1))
				}
				want := append([]float32(nil), dst...)
				switch op {
				case "axpy":
					Axpy(dst, x, a)
					axpyGeneric(want, x, a)
				case "scale":
					Scale(dst, a)
					scaleGeneric(want, a)
				case "addconst":
					AddConst(dst, a)
					addConstGeneric(want, a)
				case "relu":
					ReluInPlace(dst)
					reluGeneric(want)
				}
				checkGuards(t, op, dbuf, off, n)
				for i := range dst {
					// axpy rounds once with FMA, twice without: allow an ulp.
					g, w := float64(dst[i]), float64(want[i])
					if math.Float32bits(dst[i]) == math.Float32bits(want[i]) {
						continue
					}
					if op == "axpy" && math.Abs(g-w) <= 2e-7*(math.Abs(w)+math.Abs(float64(a*x[i]))) {
						continue
					}
					t.Fatalf("%s n=%d off=%d i=%d: got %g (%#x) want %g (%#x)", op, n, off, i, g, math.Float32bits(dst[i]), w, math.Float32bits(want[i]))
				}
			}
		}
	}
}

type convCase struct{ O, C, K, T int }

func convCases() []convCase {
	cs := []convCase{
		{8, 1, 3, 638}, {8, 8, 3, 636}, {16, 8, 3, 632}, {16, 16, 3, 630},
		{1, 1, 3, 0}, {0, 3, 3, 10}, {3, 0, 3, 10}, {4, 4, 0, 10},
	}
	for _, o := range []int{1, 3, 4, 5, 8, 9} {
		for _, c := range []int{1, 2, 4, 7} {
			for _, k := range []int{1, 2, 3, 5} {
				for _, t := range []int{1, 7, 8, 9, 15, 16, 17, 23, 24, 31, 40, 63} {
					cs = append(cs, convCase{o, c, k, t})
				}
			}
		}
	}
	// More input channels than fit one packed weight block (packMax/(4K)).
	cs = append(cs, convCase{4, 70, 3, 20}, convCase{5, 4, 70, 30}, convCase{8, 5, 200, 9}, convCase{4, 3, 300, 12})
	// More output channels than fit one packed block of ConvMultiGradX
	// (packMax/(4K) dy rows), with an interior of 8 steps or more: its
	// edges come in windows, block by block.
	cs = append(cs, convCase{50, 5, 5, 40}, convCase{9, 8, 39, 100}, convCase{100, 4, 2, 9}, convCase{7, 6, 192, 200})
	return cs
}

// convBufs makes row-major buffers with a stride a little larger than the
// row length, sentinel-filled padding included.
func convBuf(r *rand.Rand, rows, length, stride int) []float32 {
	b := make([]float32, max(rows*stride, 1)+guard)
	for i := range b {
		b[i] = sentinel
	}
	for i := 0; i < rows; i++ {
		copy(b[i*stride:i*stride+length], randVec(r, length))
	}
	return b
}

func TestConvMulti(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range convCases() {
		O, C, K, T := c.O, c.C, c.K, c.T
		Tin := T + max(K-1, 0)
		xs, ds := Tin+1+T%3, T+2
		x := convBuf(r, C, Tin, xs)
		w := randVec(r, O*C*K)
		dst := convBuf(r, O, T, ds)
		orig := append([]float32(nil), dst...)
		gen := append([]float32(nil), dst...)
		ConvMulti(dst, ds, x, xs, w, O, C, K, T)
		convMultiGeneric(gen, ds, x, xs, w, O, C, K, T)
		for i := range dst {
			o, tt := i/ds, i%ds
			if o >= O || tt >= T {
				if dst[i] != orig[i] {
					t.Fatalf("ConvMulti %+v: wrote outside the output at %d", c, i)
				}
				continue
			}
			exact, mag := float64(orig[i]), math.Abs(float64(orig[i]))
			for ci := 0; ci < C; ci++ {
				for k := 0; k < K; k++ {
					p := float64(w[(o*C+ci)*K+k]) * float64(x[ci*xs+tt+k])
					exact += p
					mag += math.Abs(p)
				}
			}
			if !near(float64(dst[i]), exact, mag, C*K+1) || !near(float64(gen[i]), exact, mag, C*K+1) {
				t.Fatalf("ConvMulti %+v o=%d t=%d: got %g generic %g exact %g", c, o, tt, dst[i], gen[i], exact)
			}
		}
	}
}

func TestConvMultiGradW(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, c := range convCases() {
		O, C, K, T := c.O, c.C, c.K, c.T
		Tin := T + max(K-1, 0)
		xs, dys := Tin+T%4, T+1
		x := convBuf(r, C, Tin, xs)
		dy := convBuf(r, O, T, dys)
		dw := randVec(r, O*C*K+guard)
		orig := append([]float32(nil), dw...)
		gen := append([]float32(nil), dw...)
		ConvMultiGradW(dw[:O*C*K], dy, dys, x, xs, O, C, K, T)
		convGradWGeneric(gen, dy, dys, x, xs, O, C, K, T)
		for j := range dw {
			if j >= O*C*K {
				if dw[j] != orig[j] {
					t.Fatalf("ConvMultiGradW %+v: wrote past dw", c)
				}
				continue
			}
			o, ci, k := j/(C*K), j/K%C, j%K
			exact, mag := float64(orig[j]), math.Abs(float64(orig[j]))
			for tt := 0; tt < T; tt++ {
				p := float64(dy[o*dys+tt]) * float64(x[ci*xs+tt+k])
				exact += p
				mag += math.Abs(p)
			}
			if !near(float64(dw[j]), exact, mag, T+1) || !near(float64(gen[j]), exact, mag, T+1) {
				t.Fatalf("ConvMultiGradW %+v o=%d i=%d k=%d: got %g generic %g exact %g", c, o, ci, k, dw[j], gen[j], exact)
			}
		}
	}
}

func TestConvMultiGradX(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, c := range convCases() {
		O, C, K, T := c.O, c.C, c.K, c.T
		Tin := T + max(K-1, 0)
		dxs, dys := Tin+3, T+T%5
		dy := convBuf(r, O, T, dys)
		w := randVec(r, O*C*K)
		dx := convBuf(r, C, Tin, dxs)
		orig := append([]float32(nil), dx...)
		gen := append([]float32(nil), dx...)
		ConvMultiGradX(dx, dxs, dy, dys, w, O, C, K, T)
		convGradXGeneric(gen, dxs, dy, dys, w, O, C, K, T)
		for j := range dx {
			ci, s := j/dxs, j%dxs
			if ci >= C || s >= Tin || K == 0 || T == 0 || O == 0 {
				if dx[j] != orig[j] {
					t.Fatalf("ConvMultiGradX %+v: wrote outside dx at %d", c, j)
				}
				continue
			}
			exact, mag := float64(orig[j]), math.Abs(float64(orig[j]))
			for o := 0; o < O; o++ {
				for k := 0; k < K; k++ {
					if tt := s - k; tt >= 0 && tt < T {
						p := float64(w[(o*C+ci)*K+k]) * float64(dy[o*dys+tt])
						exact += p
						mag += math.Abs(p)
					}
				}
			}
			if !near(float64(dx[j]), exact, mag, O*K+1) || !near(float64(gen[j]), exact, mag, O*K+1) {
				t.Fatalf("ConvMultiGradX %+v i=%d s=%d: got %g generic %g exact %g", c, ci, s, dx[j], gen[j], exact)
			}
		}
	}
}

func TestPanics(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	a := make([]float32, 20)
	mustPanic("Corr3", func() { Corr3(a[:10], a[:11], 1, 2, 3) })
	mustPanic("CorrK", func() { CorrK(a[:10], a[:12], a[:4]) })
	mustPanic("Dot3", func() { Dot3(a[:10], a[:11]) })
	mustPanic("DotK", func() { DotK(a[:2], a[:10], a[:10]) })
	mustPanic("Dot", func() { Dot(a[:10], a[:9]) })
	mustPanic("Axpy", func() { Axpy(a[:10], a[:9], 1) })
	mustPanic("ConvMulti x", func() { ConvMulti(a, 10, a, 10, a, 2, 2, 3, 9) })
	mustPanic("ConvMulti dst", func() { ConvMulti(a[:16], 9, a, 10, a, 2, 1, 3, 8) })
	mustPanic("ConvMulti w", func() { ConvMulti(a, 10, a, 10, a[:5], 2, 1, 3, 8) })
	mustPanic("ConvMulti neg", func() { ConvMulti(a, 10, a, 10, a, -1, 1, 3, 8) })
	mustPanic("ConvMulti stride", func() { ConvMulti(a, -1, a, 10, a, 1, 1, 3, 8) })
	mustPanic("ConvMultiGradW", func() { ConvMultiGradW(a[:5], a, 10, a, 10, 2, 1, 3, 8) })
	mustPanic("ConvMultiGradX", func() { ConvMultiGradX(a, 9, a, 10, a, 2, 3, 3, 8) })
}

func TestNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	x, dst, w := randVec(r, 16*640), randVec(r, 16*640), randVec(r, 16*16*3)
	for name, f := range map[string]func(){
		"ConvMulti":      func() { ConvMulti(dst, 640, x, 640, w, 16, 16, 3, 630) },
		"ConvMultiGradW": func() { ConvMultiGradW(w, dst, 640, x, 640, 16, 16, 3, 630) },
		"ConvMultiGradX": func() { ConvMultiGradX(x, 640, dst, 640, w, 16, 16, 3, 630) },
		"ConvMultiGradX K=5, its edges in windows": func() { ConvMultiGradX(x, 640, dst, 640, w, 16, 8, 5, 630) },
		"NormalizeY": func() { NormalizeY(dst[:640], x, 0.1, 2, 0.5, 0.1, true) },
		"Dot3":       func() { Dot3(dst[:630], x) },
	} {
		if n := testing.AllocsPerRun(10, f); n != 0 {
			t.Errorf("%s allocates %v times per call", name, n)
		}
	}
}

// Benchmarks: GFLOP/s with 2 flops per multiply-add. "generic" is the
// portable code, "asm" the exported kernel (AVX2 when Accelerated()), and
// "pairwise" the multi-channel op done with one single-row kernel call per
// channel pair.

var hotShapes = []convCase{{8, 1, 3, 638}, {8, 8, 3, 636}, {16, 8, 3, 632}, {16, 16, 3, 630}}

func report(b *testing.B, flops int) {
	b.ReportMetric(float64(flops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkCorr3(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{630, 638} {
		x, dst := randVec(r, n+2), randVec(r, n)
		b.Run(fmt.Sprintf("generic/n=%d", n), func(b *testing.B) {
			for range b.N {
				corr3Generic(dst, x, 0.1, 0.2, -0.3)
			}
			report(b, 6*n)
		})
		b.Run(fmt.Sprintf("asm/n=%d", n), func(b *testing.B) {
			for range b.N {
				Corr3(dst, x, 0.1, 0.2, -0.3)
			}
			report(b, 6*n)
		})
	}
}

func BenchmarkDot3(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	n := 632
	x, dy := randVec(r, n+2), randVec(r, n)
	var sink float32
	b.Run("generic", func(b *testing.B) {
		for range b.N {
			s0, _, _ := dot3Generic(dy, x)
			sink += s0
		}
		report(b, 6*n)
	})
	b.Run("asm", func(b *testing.B) {
		for range b.N {
			s0, _, _ := Dot3(dy, x)
			sink += s0
		}
		report(b, 6*n)
	})
	_ = sink
}

func BenchmarkVector(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	n := 638
	x, y := randVec(r, n), randVec(r, n)
	var sink float32
	for _, impl := range []string{"generic", "asm"} {
		gen := impl == "generic"
		b.Run("Dot/"+impl, func(b *testing.B) {
			for range b.N {
				if gen {
					sink += dotGeneric(x, y)
				} else {
					sink += Dot(x, y)
				}
			}
			report(b, 2*n)
		})
		b.Run("Axpy/"+impl, func(b *testing.B) {
			for range b.N {
				if gen {
					axpyGeneric(y, x, 1e-3)
				} else {
					Axpy(y, x, 1e-3)
				}
			}
			report(b, 2*n)
		})
		b.Run("Sum/"+impl, func(b *testing.B) {
			for range b.N {
				if gen {
					sink += sumGeneric(x)
				} else {
					sink += Sum(x)
				}
			}
			report(b, n)
		})
	}
	_ = sink
}

func shapeName(c convCase) string { return fmt.Sprintf("C=%d,O=%d,T=%d", c.C, c.O, c.T) }

func BenchmarkConvMulti(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range hotShapes {
		O, C, K, T := c.O, c.C, c.K, c.T
		s := T + K - 1
		x, dst, w := randVec(r, C*s), randVec(r, O*T), randVec(r, O*C*K)
		flops := 2 * O * C * K * T
		b.Run("generic/"+shapeName(c), func(b *testing.B) {
			for range b.N {
				convMultiGeneric(dst, T, x, s, w, O, C, K, T)
			}
			report(b, flops)
		})
		b.Run("pairwise/"+shapeName(c), func(b *testing.B) {
			for range b.N {
				for o := 0; o < O; o++ {
					for i := 0; i < C; i++ {
						wi := w[(o*C+i)*3:]
						Corr3(dst[o*T:o*T+T], x[i*s:i*s+s], wi[0], wi[1], wi[2])
					}
				}
			}
			report(b, flops)
		})
		b.Run("asm/"+shapeName(c), func(b *testing.B) {
			for range b.N {
				ConvMulti(dst, T, x, s, w, O, C, K, T)
			}
			report(b, flops)
		})
	}
}

func BenchmarkConvMultiGradW(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range hotShapes {
		O, C, K, T := c.O, c.C, c.K, c.T
		s := T + K - 1
		x, dy, dw := randVec(r, C*s), randVec(r, O*T), randVec(r, O*C*K)
		flops := 2 * O * C * K * T
		b.Run("generic/"+shapeName(c), func(b *testing.B) {
			for range b.N {
				convGradWGeneric(dw, dy, T, x, s, O, C, K, T)
			}
			report(b, flops)
		})
		b.Run("pairwise/"+shapeName(c), func(b *testing.B) {
			for range b.N {
				for o := 0; o < O; o++ {
					for i := 0; i < C; i++ {
						s0, s1, s2 := Dot3(dy[o*T:o*T+T], x[i*s:i*s+s])
						g := dw[(o*C+i)*3:]
						g[0] += s0
						g[1] += s1
						g[2] += s2
					}
				}
			}
			report(b, flops)
		})
		b.Run("asm/"+shapeName(c), func(b *testing.B) {
			for range b.N {
				ConvMultiGradW(dw, dy, T, x, s, O, C, K, T)
			}
			report(b, flops)
		})
	}
}

func BenchmarkConvMultiGradX(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range hotShapes {
		O, C, K, T := c.O, c.C, c.K, c.T
		s := T + K - 1
		dx, dy, w := randVec(r, C*s), randVec(r, O*T), randVec(r, O*C*K)
		flops := 2 * O * C * K * T
		b.Run("generic/"+shapeName(c), func(b *testing.B) {
			for range b.N {
				convGradXGeneric(dx, s, dy, T, w, O, C, K, T)
			}
			report(b, flops)
		})
		b.Run("pairwise/"+shapeName(c), func(b *testing.B) {
			for range b.N {
				for o := 0; o < O; o++ {
					for i := 0; i < C; i++ {
						for k := 0; k < 3; k++ {
							Axpy(dx[i*s+k:i*s+k+T], dy[o*T:o*T+T], w[(o*C+i)*3+k])
						}
					}
				}
			}
			report(b, flops)
		})
		b.Run("asm/"+shapeName(c), func(b *testing.B) {
			for range b.N {
				ConvMultiGradX(dx, s, dy, T, w, O, C, K, T)
			}
			report(b, flops)
		})
	}
}

func TestOverflowPanics(t *testing.T) {
	a := make([]float32, 64)
	huge := math.MaxInt/2 + 3
	for name, f := range map[string]func(){
		"dst stride": func() { ConvMulti(a, huge, a, 10, a, 4, 1, 3, 8) },
		"x stride":   func() { ConvMulti(a, 10, a, huge, a, 1, 4, 3, 8) },
		"w size":     func() { ConvMulti(a, 0, a, 0, a, 1, huge, huge, 8) },
		"gradw dy":   func() { ConvMultiGradW(a, a, huge, a, 10, 4, 1, 3, 8) },
		"gradx dx":   func() { ConvMultiGradX(a, huge, a, 10, a, 1, 4, 3, 8) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestChoose: UAXAI_KERNELS unset takes the CPU's best; "portable" the
// portable kernels on any CPU; "avx2" the assembly where there is one and
// an error naming what is accepted where not; any other value is an
// error that leaves the CPU's best.
func TestChoose(t *testing.T) {
	for _, c := range []struct {
		env       string
		has, want bool
		err       string
	}{
		{"", true, true, ""}, {"", false, false, ""},
		{"portable", true, false, ""}, {"portable", false, false, ""},
		{"avx2", true, true, ""}, {"avx2", false, false, "UAXAI_KERNELS=avx2: this CPU or build has no AVX2+FMA kernels (accepted: portable, or unset"},
		{"AVX2", true, true, `UAXAI_KERNELS="AVX2" (accepted: avx2, portable, or unset for the CPU's best)`},
		{"avx512", false, false, `UAXAI_KERNELS="avx512"`},
	} {
		got, err := choose(c.env, c.has)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("choose(%q, %v) = %v, %v; want %v, %q", c.env, c.has, got, err, c.want, c.err)
		}
	}
}

// TestKernelsEnv: a test binary started with UAXAI_KERNELS=portable runs
// the portable kernels (Path, Accelerated) without error, and one started
// with an unknown value reports it (EnvError) and runs the CPU's best.
func TestKernelsEnv(t *testing.T) {
	if os.Getenv("KERN_CHILD") != "" {
		fmt.Printf("PATH=%s ERR=%v\n", Path(), EnvError())
		return
	}
	best := "portable" // the CPU's best, whatever this binary was started with
	if asmBuiltAndCPU() {
		best = "avx2"
	}
	for env, want := range map[string]string{"portable": "PATH=portable ERR=<nil>", "bogus": "PATH=" + best + " ERR=UAXAI_KERNELS=\"bogus\""} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestKernelsEnv$", "-test.count=1")
		cmd.Env = append(os.Environ(), "KERN_CHILD=1", KernelsEnv+"="+env)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%s=%s: %v\n%s; want %q", KernelsEnv, env, err, out, want)
		}
	}
}
