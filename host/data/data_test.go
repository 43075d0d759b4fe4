package data

import (
	"encoding/json"
	"math"
	"math/cmplx"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/rng"
)

// Test configurations: the spec's grid, 60 Hz with 64 samples a cycle, and
// 60 Hz at 3200 Hz (53.3 samples a cycle, 15 cycles, N = 800).
func cfg50() Config { c := DefaultConfig(); c.Noise = false; return c }
func cfg60() Config { c := cfg50(); c.F0, c.Fs = 60, 3840; return c }
func cfg60odd() Config {
	c := cfg50()
	c.F0, c.Cycles = 60, 15
	return c
}

// gen returns count records of class, each from its own test stream.
func gen(cfg Config, class, count int) []Record {
	out := make([]Record, count)
	for i := range out {
		out[i] = Generate(cfg, class, rng.For(7, "test", ClassNames[class], i, -1))
	}
	return out
}

// x0 is the reference sinusoid of the spec at sample n.
func x0(cfg Config, phi float64, n int) float64 {
	return math.Sin(2*math.Pi*cfg.F0*float64(n)/cfg.Fs + phi)
}

// y returns the noise-free record x0 + d.
func y(cfg Config, r Record) []float64 {
	out := make([]float64, len(r.D))
	for n := range out {
		out[n] = x0(cfg, r.Params["phi"], n) + r.D[n]
	}
	return out
}

func rms(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s / float64(len(v)))
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for _, tc := range []struct {
		cfg Config
		n   int
	}{{DefaultConfig(), 640}, {cfg60(), 640}, {cfg60odd(), 800}} {
		if err := tc.cfg.Validate(); err != nil {
			t.Fatalf("%+v: %v", tc.cfg, err)
		}
		if got := tc.cfg.N(); got != tc.n {
			t.Errorf("%+v: N = %d, want %d", tc.cfg, got, tc.n)
		}
	}
	nan := math.NaN()
	bad := []struct {
		mod  func(*Config)
		want []string
	}{
		{func(c *Config) { c.F0 = 60 }, []string{"Cycles*Fs/F0", "whole number"}},
		{func(c *Config) { c.F0 = 0 }, []string{"F0", "(0, 1000]"}},
		{func(c *Config) { c.F0 = nan }, []string{"F0"}},
		{func(c *Config) { c.Fs = 1000 }, []string{"Fs", "1800"}},
		{func(c *Config) { c.Fs = math.Inf(1) }, []string{"Fs"}},
		{func(c *Config) { c.Cycles = 5 }, []string{"Cycles", "at least 9"}},
		{func(c *Config) { c.Phase = &nan }, []string{"Phase", "finite"}},
		{func(c *Config) { c.SNRMin, c.SNRMax = 40, 30 }, []string{"SNRMin", "SNRMax"}},
		{func(c *Config) { c.SNRMin = nan }, []string{"SNRMin", "[-40, 200]"}},
		{func(c *Config) { c.SNRMax = 1e9 }, []string{"SNRMax"}},
	}
	for i, b := range bad {
		c := DefaultConfig()
		b.mod(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("case %d: %+v accepted", i, c)
			continue
		}
		for _, w := range b.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("case %d: error %q does not mention %q", i, err, w)
			}
		}
	}
	c := DefaultConfig()
	c.Noise, c.SNRMin, c.SNRMax = false, 40, 30
	if err := c.Validate(); err != nil {
		t.Errorf("SNR range checked with noise off: %v", err)
	}
}

func TestClassNames(t *testing.T) {
	b, err := os.ReadFile(golden.File(t, "paper-1dcnn", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Waveforms struct{ Classes []string }
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Waveforms.Classes, ClassNames[:]) {
		t.Fatalf("ClassNames = %v, golden manifest %v", ClassNames, m.Waveforms.Classes)
	}
	for i, n := range ClassNames {
		if c, err := ClassByName(n); err != nil || c != i || ClassName(i) != n {
			t.Errorf("class %d %q: ClassByName = %d, %v; ClassName = %q", i, n, c, err, ClassName(i))
		}
	}
	if _, err := ClassByName("Sag"); err == nil || !strings.Contains(err.Error(), "flicker_swell") {
		t.Errorf("ClassByName(Sag): %v, want an error listing the names", err)
	}
	var d7 []string
	for _, c := range Disc7 {
		d7 = append(d7, ClassName(c))
	}
	sort.Strings(d7)
	want := []string{"impulsive_transient", "interruption", "notch", "oscillatory_transient", "sag", "spike", "swell"}
	if !slices.Equal(d7, want) {
		t.Errorf("Disc7 = %v, want %v", d7, want)
	}
	for c := range NumClasses {
		if IsDisc7(c) != slices.Contains(Disc7, c) {
			t.Errorf("IsDisc7(%d) disagrees with Disc7", c)
		}
	}
}

// keys lists the parameters every class must record (noise off).
var keys = map[int][]string{
	Normal:                {},
	Sag:                   {"a", "t1", "t2"},
	Swell:                 {"a", "t1", "t2"},
	Interruption:          {"a", "t1", "t2"},
	ImpulsiveTransient:    {"psi", "sign", "tr", "td", "ta"},
	OscillatoryTransient:  {"a", "tau", "fn", "th", "t1", "t2"},
	Harmonics:             {"a3", "a5", "a7", "th3", "th5", "th7"},
	Flicker:               {"lam", "beta", "thf"},
	Notch:                 {"K", "width", "t1", "t2", "n1"},
	Spike:                 {"K", "width", "t1", "t2", "n1"},
	SagHarmonics:          {"a", "t1", "t2", "a3", "a5", "a7", "th3", "th5", "th7"},
	SwellHarmonics:        {"a", "t1", "t2", "a3", "a5", "a7", "th3", "th5", "th7"},
	InterruptionHarmonics: {"a", "t1", "t2", "a3", "a5", "a7", "th3", "th5", "th7"},
	FlickerHarmonics:      {"lam", "beta", "thf", "a3", "a5", "a7", "th3", "th5", "th7"},
	FlickerSag:            {"lam", "beta", "thf", "a", "t1", "t2"},
	FlickerSwell:          {"lam", "beta", "thf", "a", "t1", "t2"},
}

// ranges gives the spec's range of each parameter; "a" depends on the class.
func paramRange(cfg Config, class int, k string) (lo, hi float64) {
	T := 1 / cfg.F0
	switch k {
	case "phi", "th3", "th5", "th7", "thf", "th":
		return -math.Pi, math.Pi
	case "a":
		switch class {
		case Sag, SagHarmonics, FlickerSag:
			return 0.1, 0.9
		case Swell, SwellHarmonics, FlickerSwell:
			return 0.1, 0.8
		case Interruption, InterruptionHarmonics:
			return 0.9, 1.0
		case OscillatoryTransient:
			return 0.1, 0.8
		}
	case "a3", "a5", "a7":
		return 0.05, 0.15
	case "lam":
		return 0.1, 0.2
	case "beta":
		return 5, 20
	case "psi":
		return 0.2, 1.0
	case "sign":
		return -1, 1
	case "tr":
		return 0.05e-3, 0.2e-3
	case "td":
		return 0.5e-3, 2e-3
	case "ta":
		return T, float64(cfg.Cycles-1) * T
	case "tau":
		return 8e-3, 40e-3
	case "fn":
		return 300, 900
	case "K":
		return 0.1, 0.4
	case "width":
		return 1, 4
	case "t1", "t2":
		return 0, float64(cfg.N()) / cfg.Fs
	case "n1":
		return 0, cfg.Fs / cfg.F0
	}
	panic("no range for " + k)
}

// gmaxRef finds the peak of e^{-s/td} - e^{-s/tr} by golden-section search,
// independently of PulsePeak's closed form.
func gmaxRef(tr, td float64) float64 {
	f := func(s float64) float64 { return math.Exp(-s/td) - math.Exp(-s/tr) }
	lo, hi := 0.0, 5*td
	g := (math.Sqrt(5) - 1) / 2
	for range 200 {
		a, b := hi-g*(hi-lo), lo+g*(hi-lo)
		if f(a) < f(b) {
			lo = a
		} else {
			hi = b
		}
	}
	return f((lo + hi) / 2)
}

// specY transcribes the spec's class table: y(t_n) from the drawn parameters.
func specY(cfg Config, class int, p map[string]float64, n int) float64 {
	t := float64(n) / cfg.Fs
	w := 2 * math.Pi * cfg.F0
	T := 1 / cfg.F0
	phi := p["phi"]
	x0 := math.Sin(w*t + phi)
	u := 0.0
	if p["t1"] <= t && t < p["t2"] {
		u = 1
	}
	H := x0 + p["a3"]*math.Sin(3*(w*t+phi)+p["th3"]) + p["a5"]*math.Sin(5*(w*t+phi)+p["th5"]) + p["a7"]*math.Sin(7*(w*t+phi)+p["th7"])
	F := 1 + p["lam"]*math.Sin(2*math.Pi*p["beta"]*t+p["thf"])
	a := p["a"]
	comb := 0.0
	for c := range cfg.Cycles {
		if p["t1"]+float64(c)*T <= t && t < p["t2"]+float64(c)*T {
			comb++
		}
	}
	sgn := 0.0
	if x0 > 0 {
		sgn = 1
	} else if x0 < 0 {
		sgn = -1
	}
	switch class {
	case Normal:
		return x0
	case Sag, Interruption:
		return (1 - a*u) * x0
	case Swell:
		return (1 + a*u) * x0
	case ImpulsiveTransient:
		s := t - p["ta"]
		g := 0.0
		if s >= 0 {
			g = (math.Exp(-s/p["td"]) - math.Exp(-s/p["tr"])) / gmaxRef(p["tr"], p["td"])
		}
		return x0 + p["sign"]*p["psi"]*g
	case OscillatoryTransient:
		s := t - p["t1"]
		return x0 + a*math.Exp(-s/p["tau"])*math.Sin(2*math.Pi*p["fn"]*s+p["th"])*u
	case Harmonics:
		return H
	case Flicker:
		return F * x0
	case Notch:
		return x0 - sgn*p["K"]*comb
	case Spike:
		return x0 + sgn*p["K"]*comb
	case SagHarmonics, InterruptionHarmonics:
		return (1 - a*u) * H
	case SwellHarmonics:
		return (1 + a*u) * H
	case FlickerHarmonics:
		return F * H
	case FlickerSag:
		return F * (1 - a*u) * x0
	case FlickerSwell:
		return F * (1 + a*u) * x0
	}
	panic("bad class")
}

// TestSpecFormula checks every class against a direct transcription of the
// spec's table, the recorded parameters against their ranges, and the basic
// record invariants.
func TestSpecFormula(t *testing.T) {
	for _, cfg := range []Config{cfg50(), cfg60odd()} {
		n := cfg.N()
		for class := range NumClasses {
			for i, r := range gen(cfg, class, 60) {
				if r.Label != class || len(r.X) != n || len(r.D) != n || len(r.Event) != n {
					t.Fatalf("%s %d: label %d, lengths %d %d %d, want %d", ClassNames[class], i, r.Label, len(r.X), len(r.D), len(r.Event), n)
				}
				if !math.IsInf(r.SNRdB, 1) {
					t.Fatalf("noise off: SNRdB = %v, want +Inf", r.SNRdB)
				}
				got := slices.Sorted(func(yield func(string) bool) {
					for k := range r.Params {
						if !yield(k) {
							return
						}
					}
				})
				want := slices.Sorted(slices.Values(append([]string{"phi"}, keys[class]...)))
				if !slices.Equal(got, want) {
					t.Fatalf("%s: params %v, want %v", ClassNames[class], got, want)
				}
				for k, v := range r.Params {
					lo, hi := paramRange(cfg, class, k)
					if !(v >= lo && v <= hi) {
						t.Errorf("%s %d: %s = %v outside [%v, %v]", ClassNames[class], i, k, v, lo, hi)
					}
				}
				for j := range n {
					ref := specY(cfg, class, r.Params, j)
					if yj := x0(cfg, r.Params["phi"], j) + r.D[j]; !near(yj, ref, 1e-12) {
						t.Fatalf("%s %d (F0 %v): y[%d] = %v, spec formula %v", ClassNames[class], i, cfg.F0, j, yj, ref)
					}
					if !near(r.X[j], ref, 1e-12) {
						t.Fatalf("%s %d: noise off but x[%d] = %v != y = %v", ClassNames[class], i, j, r.X[j], ref)
					}
				}
			}
		}
	}
}

func TestPhaseFixedAndDrawn(t *testing.T) {
	cfg := cfg50()
	phase := 0.25
	cfg.Phase = &phase
	for _, r := range gen(cfg, Sag, 5) {
		if r.Params["phi"] != phase || !near(r.X[0]-r.D[0], math.Sin(phase), 1e-15) {
			t.Fatalf("fixed phase: phi = %v, x0[0] = %v", r.Params["phi"], r.X[0]-r.D[0])
		}
	}
	// phi ~ U[-pi, pi): mean of cos and sin near 0 over many records.
	var c, s float64
	rs := gen(cfg50(), Normal, 2000)
	for _, r := range rs {
		c += math.Cos(r.Params["phi"])
		s += math.Sin(r.Params["phi"])
	}
	m := float64(len(rs))
	// each has variance 1/2; 5 sigma
	if tol := 5 * math.Sqrt(0.5/m); math.Abs(c/m) > tol || math.Abs(s/m) > tol {
		t.Errorf("phase not uniform: mean cos %v, mean sin %v", c/m, s/m)
	}
}

func TestNormal(t *testing.T) {
	for _, r := range gen(DefaultConfig(), Normal, 50) {
		for n, d := range r.D {
			if d != 0 || r.Event[n] {
				t.Fatalf("normal: d[%d] = %v, event %v", n, d, r.Event[n])
			}
		}
		if slices.Contains(Mask(nil, r.D, 0), true) {
			t.Fatal("normal: mask at eps 0 not empty")
		}
	}
}

// TestAmplitudeEvents: sag, swell, interruption (alone and with harmonics)
// scale the per-cycle RMS of y inside the event by 1 -+ a relative to the
// whole cycles outside it; the event is [t1, t2) with T <= t2 - t1 <= 9T.
func TestAmplitudeEvents(t *testing.T) {
	for _, cfg := range []Config{cfg50(), cfg60()} {
		spc := cfg.N() / cfg.Cycles
		T := 1 / cfg.F0
		L := float64(cfg.N()) / cfg.Fs
		for _, class := range []int{Sag, Swell, Interruption, SagHarmonics, SwellHarmonics, InterruptionHarmonics} {
			sign := -1.0
			if class == Swell || class == SwellHarmonics {
				sign = 1
			}
			whole := 0
			for i, r := range gen(cfg, class, 100) {
				p := r.Params
				a, t1, t2 := p["a"], p["t1"], p["t2"]
				if dur := t2 - t1; dur < T*(1-1e-12) || dur > 9*T*(1+1e-12) || t1 < 0 || t2 > L*(1+1e-12) {
					t.Fatalf("%s %d: event [%v, %v) breaks T <= t2-t1 <= 9T inside [0, %v]", ClassNames[class], i, t1, t2, L)
				}
				yy := y(cfg, r)
				var in, out []float64
				for c := range cfg.Cycles {
					lo, hi := c*spc, (c+1)*spc
					tl, th := float64(lo)/cfg.Fs, float64(hi-1)/cfg.Fs
					switch {
					case tl >= t1 && th < t2:
						in = append(in, rms(yy[lo:hi]))
					case th < t1 || tl >= t2:
						out = append(out, rms(yy[lo:hi]))
					}
				}
				// per-cycle RMS of x0 (or H) over a whole cycle: sqrt((1 + a3^2 + a5^2 + a7^2) / 2)
				ref := math.Sqrt((1 + p["a3"]*p["a3"] + p["a5"]*p["a5"] + p["a7"]*p["a7"]) / 2)
				for _, o := range out {
					if !near(o, ref, 1e-12) {
						t.Fatalf("%s %d: RMS outside the event %v, want %v", ClassNames[class], i, o, ref)
					}
				}
				for _, v := range in {
					whole++
					if !near(v/ref, 1+sign*a, 1e-9) {
						t.Fatalf("%s %d (F0 %v): RMS ratio inside/outside %v, want %v", ClassNames[class], i, cfg.F0, v/ref, 1+sign*a)
					}
				}
				if class == Interruption && len(in) > 0 && in[0]/ref > 0.1+1e-12 {
					t.Fatalf("interruption %d: RMS drops only to %v", i, in[0]/ref)
				}
				if class <= Interruption {
					for n, e := range r.Event {
						tn := float64(n) / cfg.Fs
						if e != (t1 <= tn && tn < t2) {
							t.Fatalf("%s %d: event[%d] = %v for t = %v, [t1, t2) = [%v, %v)", ClassNames[class], i, n, e, tn, t1, t2)
						}
						if !e && r.D[n] != 0 {
							t.Fatalf("%s %d: d[%d] = %v outside the event", ClassNames[class], i, n, r.D[n])
						}
					}
				} else if slices.Contains(r.Event, false) {
					t.Fatalf("%s %d: event not the whole record", ClassNames[class], i)
				}
			}
			if whole < 100 {
				t.Errorf("%s: only %d whole cycles inside events tested", ClassNames[class], whole)
			}
		}
	}
}

// dft returns X_m = sum_n v[n] e^{-2 pi i m n / N}.
func dft(v []float64, m int) complex128 {
	var s complex128
	for n, x := range v {
		s += complex(x, 0) * cmplx.Exp(complex(0, -2*math.Pi*float64(m*n)/float64(len(v))))
	}
	return s
}

func angleDiff(a, b float64) float64 {
	d := math.Mod(a-b, 2*math.Pi)
	if d > math.Pi {
		d -= 2 * math.Pi
	} else if d < -math.Pi {
		d += 2 * math.Pi
	}
	return d
}

// TestHarmonicsDFT: the spectrum of d has exactly the lines 3, 5, 7 f0 with
// amplitudes a3, a5, a7 and phases k phi + th_k; y keeps the fundamental
// at amplitude 1.
func TestHarmonicsDFT(t *testing.T) {
	for _, cfg := range []Config{cfg50(), cfg60()} {
		n := cfg.N()
		for i, r := range gen(cfg, Harmonics, 8) {
			p := r.Params
			amp := map[int]float64{3: p["a3"], 5: p["a5"], 7: p["a7"]}
			ph := map[int]float64{3: p["th3"], 5: p["th5"], 7: p["th7"]}
			for m := 0; m <= n/2; m++ {
				X := dft(r.D, m)
				a := 2 * cmplx.Abs(X) / float64(n)
				k := m / cfg.Cycles
				if ak, ok := amp[k]; ok && m%cfg.Cycles == 0 {
					if !near(a, ak, 1e-9) {
						t.Fatalf("harmonics %d: |D| at %d f0 = %v, want a%d = %v", i, k, a, k, ak)
					}
					// a sin(psi + 2 pi m n/N) has DFT a N/(2i) e^{i psi}
					if d := angleDiff(cmplx.Phase(X), float64(k)*p["phi"]+ph[k]-math.Pi/2); math.Abs(d) > 1e-7 {
						t.Fatalf("harmonics %d: phase at %d f0 off by %v", i, k, d)
					}
				} else if a > 1e-9 {
					t.Fatalf("harmonics %d: d has amplitude %v at bin %d (%v Hz)", i, a, m, float64(m)*cfg.Fs/float64(n))
				}
			}
			if a1 := 2 * cmplx.Abs(dft(y(cfg, r), cfg.Cycles)) / float64(n); !near(a1, 1, 1e-9) {
				t.Fatalf("harmonics %d: fundamental of y %v, want 1", i, a1)
			}
		}
	}
}

// fitSine fits e[j] ~ c + A sin(2 pi b t_j) + B cos(2 pi b t_j) by least
// squares and returns the residual sum of squares and the amplitude.
func fitSine(ts, e []float64, b float64) (rss, amp float64) {
	var g [3][3]float64
	var h [3]float64
	for j, t := range ts {
		f := [3]float64{1, math.Sin(2 * math.Pi * b * t), math.Cos(2 * math.Pi * b * t)}
		for r := range 3 {
			h[r] += f[r] * e[j]
			for c := range 3 {
				g[r][c] += f[r] * f[c]
			}
		}
	}
	// Gaussian elimination, 3x3.
	for c := range 3 {
		for r := c + 1; r < 3; r++ {
			m := g[r][c] / g[c][c]
			for k := c; k < 3; k++ {
				g[r][k] -= m * g[c][k]
			}
			h[r] -= m * h[c]
		}
	}
	var x [3]float64
	for r := 2; r >= 0; r-- {
		s := h[r]
		for k := r + 1; k < 3; k++ {
			s -= g[r][k] * x[k]
		}
		x[r] = s / g[r][r]
	}
	for j, t := range ts {
		d := e[j] - x[0] - x[1]*math.Sin(2*math.Pi*b*t) - x[2]*math.Cos(2*math.Pi*b*t)
		rss += d * d
	}
	return rss, math.Hypot(x[1], x[2])
}

// TestFlickerEnvelope estimates the envelope y/x0 of flicker records and
// finds its modulation frequency by a least-squares scan over 4..21 Hz: it
// must be beta (not beta*w), with depth lam.
func TestFlickerEnvelope(t *testing.T) {
	cfg := cfg50()
	for i, r := range gen(cfg, Flicker, 6) {
		var ts, e []float64
		yy := y(cfg, r)
		for n := range yy {
			if x := x0(cfg, r.Params["phi"], n); math.Abs(x) > 0.3 {
				ts = append(ts, float64(n)/cfg.Fs)
				e = append(e, yy[n]/x)
			}
		}
		best, bestB, bestA := math.Inf(1), 0.0, 0.0
		for b := 4.0; b <= 21; b += 0.005 {
			if rss, a := fitSine(ts, e, b); rss < best {
				best, bestB, bestA = rss, b, a
			}
		}
		if !near(bestB, r.Params["beta"], 0.005) || !near(bestA, r.Params["lam"], 0.002) {
			t.Errorf("flicker %d: envelope at %v Hz depth %v, drawn beta %v lam %v", i, bestB, bestA, r.Params["beta"], r.Params["lam"])
		}
	}
}

// runs returns the [start, end) sample ranges where ev is true.
func runs(ev []bool) [][2]int {
	var out [][2]int
	for n := 0; n < len(ev); n++ {
		if ev[n] {
			s := n
			for n < len(ev) && ev[n] {
				n++
			}
			out = append(out, [2]int{s, n})
		}
	}
	return out
}

// TestNotchSpike: exactly one notch (spike) a cycle, width samples wide,
// inside its cycle at the same phase, depth K, pulling |y| toward 0 (away
// from 0 for a spike).
func TestNotchSpike(t *testing.T) {
	for _, cfg := range []Config{cfg50(), cfg60(), cfg60odd()} {
		for _, class := range []int{Notch, Spike} {
			var widths [5]int
			for i, r := range gen(cfg, class, 200) {
				p := r.Params
				w := int(p["width"])
				widths[w]++
				rs := runs(r.Event)
				if len(rs) != cfg.Cycles {
					t.Fatalf("%s %d (F0 %v Fs %v): %d runs, want one a cycle (%d)", ClassNames[class], i, cfg.F0, cfg.Fs, len(rs), cfg.Cycles)
				}
				if rs[0][0] != int(p["n1"]) {
					t.Fatalf("%s %d: first notch at %d, n1 = %v", ClassNames[class], i, rs[0][0], p["n1"])
				}
				for c, ru := range rs {
					if ru[1]-ru[0] != w {
						t.Fatalf("%s %d: run %v of %d samples, width %d", ClassNames[class], i, ru, ru[1]-ru[0], w)
					}
					// the first sample is the first at or after t1 + cT
					cs := p["t1"] + float64(c)/cfg.F0
					t0 := float64(ru[0]) / cfg.Fs
					if t0 < cs-1e-12 || t0 >= cs+1/cfg.Fs {
						t.Fatalf("%s %d: notch %d starts at %v, want in [%v, %v)", ClassNames[class], i, c, t0, cs, cs+1/cfg.Fs)
					}
					if end := float64(ru[1]-1) / cfg.Fs; int(math.Floor(t0*cfg.F0)) != c || int(math.Floor(end*cfg.F0)) != c {
						t.Fatalf("%s %d: notch %d at samples %v not inside cycle %d", ClassNames[class], i, c, ru, c)
					}
				}
				for n, d := range r.D {
					x := x0(cfg, p["phi"], n)
					if !r.Event[n] {
						if d != 0 {
							t.Fatalf("%s %d: d[%d] = %v outside the notches", ClassNames[class], i, n, d)
						}
						continue
					}
					if math.Abs(d) != p["K"] || (class == Notch) != (d*x < 0) {
						t.Fatalf("%s %d: d[%d] = %v with x0 = %v, K = %v", ClassNames[class], i, n, d, x, p["K"])
					}
				}
			}
			for w := 1; w <= 4; w++ {
				if widths[w] < 20 {
					t.Errorf("%s: width %d drawn %d times in 200", ClassNames[class], w, widths[w])
				}
			}
		}
	}
}

func TestPulsePeak(t *testing.T) {
	r := rng.For(1, "test", "pulse", 0, -1)
	for range 50 {
		tr := uniform(r, 0.05e-3, 0.2e-3)
		td := uniform(r, 0.5e-3, 2e-3)
		s, g := PulsePeak(tr, td)
		if ref := gmaxRef(tr, td); !near(g, ref, 1e-12) {
			t.Fatalf("PulsePeak(%v, %v) = %v, search gives %v", tr, td, g, ref)
		}
		f := func(s float64) float64 { return math.Exp(-s/td) - math.Exp(-s/tr) }
		if f(s*0.99) >= g || f(s*1.01) >= g {
			t.Fatalf("PulsePeak(%v, %v): s* = %v is not the maximum", tr, td, s)
		}
	}
}

// TestImpulsive: d is 0 before ta, has the drawn sign, never exceeds psi,
// reaches psi when sampled finely; the event is [ta, ta + 5 td).
func TestImpulsive(t *testing.T) {
	fine := cfg50()
	fine.Fs = 51200
	for _, cfg := range []Config{cfg50(), cfg60(), fine} {
		worst := 1.0
		for i, r := range gen(cfg, ImpulsiveTransient, 100) {
			p := r.Params
			peak := 0.0
			for n, d := range r.D {
				tn := float64(n) / cfg.Fs
				if tn < p["ta"] && d != 0 {
					t.Fatalf("impulsive %d: d[%d] = %v before ta", i, n, d)
				}
				if d*p["sign"] < 0 {
					t.Fatalf("impulsive %d: d[%d] = %v against sign %v", i, n, d, p["sign"])
				}
				if e := p["ta"] <= tn && tn < p["ta"]+5*p["td"]; e != r.Event[n] {
					t.Fatalf("impulsive %d: event[%d] = %v at t = %v, ta %v td %v", i, n, r.Event[n], tn, p["ta"], p["td"])
				}
				if math.Abs(d) > peak {
					peak = math.Abs(d)
				}
			}
			if peak > p["psi"]*(1+1e-12) {
				t.Fatalf("impulsive %d: peak |d| = %v > psi = %v", i, peak, p["psi"])
			}
			worst = min(worst, peak/p["psi"])
		}
		// At 51.2 kHz the sampled peak is within 0.5% of psi; at 3.2 kHz
		// sampling can miss the peak (0.3 ms a sample), but not by half.
		if lim := map[bool]float64{true: 0.995, false: 0.5}[cfg.Fs > 50000]; worst < lim {
			t.Errorf("Fs %v: sampled peak down to %v psi, want >= %v", cfg.Fs, worst, lim)
		}
	}
}

// TestOscillatoryDecay: inside [t1, t2) the oscillation decays with time
// constant tau. The local maxima of |d| (sampled finely) sit at the same
// phase of every half period, tan(2 pi fn s + th) = 2 pi fn tau, where
// |d| = a e^{-s/tau} sin(atan(2 pi fn tau)); so the first and last maxima
// m1, m2 at s1, s2 satisfy ln(m2/m1) = -(s2 - s1)/tau.
func TestOscillatoryDecay(t *testing.T) {
	cfg := cfg50()
	cfg.Fs = 51200
	T := 1 / cfg.F0
	for i, r := range gen(cfg, OscillatoryTransient, 40) {
		p := r.Params
		t1, t2, tau, fn := p["t1"], p["t2"], p["tau"], p["fn"]
		if dur := t2 - t1; dur < 0.5*T*(1-1e-12) || dur > 3*T*(1+1e-12) {
			t.Fatalf("oscillatory %d: duration %v outside [T/2, 3T]", i, dur)
		}
		var peaks []int
		for n := 1; n+1 < len(r.D); n++ {
			a := math.Abs(r.D[n])
			if r.Event[n-1] && r.Event[n+1] && a > math.Abs(r.D[n-1]) && a >= math.Abs(r.D[n+1]) {
				peaks = append(peaks, n)
			}
		}
		if len(peaks) < 2 {
			t.Fatalf("oscillatory %d: %d local maxima", i, len(peaks))
		}
		s1 := float64(peaks[0])/cfg.Fs - t1
		s2 := float64(peaks[len(peaks)-1])/cfg.Fs - t1
		m1, m2 := math.Abs(r.D[peaks[0]]), math.Abs(r.D[peaks[len(peaks)-1]])
		wt := 2 * math.Pi * fn * tau
		if want := p["a"] * math.Exp(-s1/tau) * wt / math.Hypot(1, wt); !near(math.Log(m1/want), 0, 0.003) {
			t.Errorf("oscillatory %d: first maximum %v at s = %v, want %v", i, m1, s1, want)
		}
		if !near(math.Log(m2/m1), -(s2-s1)/tau, 0.004) || m2 >= m1 {
			t.Errorf("oscillatory %d: maxima %v -> %v over %v s, tau %v: no e^{-t/tau} decay", i, m1, m2, s2-s1, tau)
		}
		for n, d := range r.D {
			tn := float64(n) / cfg.Fs
			if in := t1 <= tn && tn < t2; in != r.Event[n] || (!in && d != 0) {
				t.Fatalf("oscillatory %d: sample %d at %v: event %v d %v, [t1, t2) = [%v, %v)", i, n, tn, r.Event[n], d, t1, t2)
			}
		}
	}
}

// TestMaskNonEmpty: over many noisy records of every class, the amplitude
// mask at eps 0.02 is empty exactly for normal records, and so is the event.
func TestMaskNonEmpty(t *testing.T) {
	for _, cfg := range []Config{DefaultConfig(), func() Config { c := cfg60(); c.Noise = true; return c }()} {
		s, err := MakeSplit(t.Context(), cfg, 11, "mask", 150, nil)
		if err != nil {
			t.Fatal(err)
		}
		var mask []bool
		minPeak := make([]float64, NumClasses)
		for i := range minPeak {
			minPeak[i] = math.Inf(1)
		}
		for i, r := range s.Records {
			mask = Mask(mask, r.D, 0.02)
			empty := !slices.Contains(mask, true)
			if empty != (r.Label == Normal) {
				t.Errorf("record %d (%s): mask empty = %v", i, ClassNames[r.Label], empty)
			}
			if ev := slices.Contains(EventMask(nil, r.Event), true); ev == (r.Label == Normal) {
				t.Errorf("record %d (%s): event non-empty = %v", i, ClassNames[r.Label], ev)
			}
			peak := 0.0
			for _, d := range r.D {
				peak = max(peak, math.Abs(d))
			}
			minPeak[r.Label] = min(minPeak[r.Label], peak)
			for n := range r.X {
				if r.X[n] == x0(cfg, r.Params["phi"], n)+r.D[n] {
					t.Fatalf("record %d: noise on but x[%d] = y", i, n)
				}
			}
		}
		for c, p := range minPeak {
			t.Logf("F0 %v %-22s smallest max|d| %.3f", cfg.F0, ClassNames[c], p)
		}
	}
}

func TestMaskAndEventMask(t *testing.T) {
	d := []float64{0, 0.02, -0.021, 0.5, -1, math.Inf(-1)}
	want := []bool{false, false, true, true, true, true}
	buf := make([]bool, 1, 10)
	got := Mask(buf, d, 0.02)
	if !slices.Equal(got, want) || &got[0] != &buf[0] {
		t.Errorf("Mask = %v (reused %v), want %v", got, &got[0] == &buf[0], want)
	}
	ev := []bool{true, false, true}
	if got := EventMask(nil, ev); !slices.Equal(got, ev) {
		t.Errorf("EventMask = %v", got)
	}
}

// TestSNR: the measured SNR 10 log10(P_y / P_{x-y}) of each record equals the
// drawn snr_db up to the sampling error of the noise power: with N samples,
// 10 log10 of a chi-square_N / N has standard deviation about
// (10 / ln 10) sqrt(2 / N).
func TestSNR(t *testing.T) {
	cfg := DefaultConfig()
	s, err := MakeSplit(t.Context(), cfg, 3, "snr", 50, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.N()
	sd := 10 / math.Ln10 * math.Sqrt(2/float64(n))
	var diffs []float64
	var snrSum float64
	for i, r := range s.Records {
		if r.SNRdB != r.Params["snr_db"] || r.SNRdB < cfg.SNRMin || r.SNRdB >= cfg.SNRMax {
			t.Fatalf("record %d: SNRdB %v, params %v, want in [%v, %v)", i, r.SNRdB, r.Params["snr_db"], cfg.SNRMin, cfg.SNRMax)
		}
		yy := y(cfg, r)
		var py, pn float64
		for j := range yy {
			py += yy[j] * yy[j]
			e := r.X[j] - yy[j]
			pn += e * e
		}
		diffs = append(diffs, 10*math.Log10(py/pn)-r.SNRdB)
		snrSum += r.SNRdB
	}
	m := float64(len(diffs))
	var mean, ss, worst float64
	for _, d := range diffs {
		mean += d / m
		worst = max(worst, math.Abs(d))
	}
	for _, d := range diffs {
		ss += (d - mean) * (d - mean)
	}
	got := math.Sqrt(ss / (m - 1))
	if math.Abs(mean) > 4*sd/math.Sqrt(m) {
		t.Errorf("measured - drawn SNR: mean %v dB, want 0 +- %v", mean, 4*sd/math.Sqrt(m))
	}
	if math.Abs(got/sd-1) > 0.15 {
		t.Errorf("measured - drawn SNR: sd %v dB, want %v", got, sd)
	}
	if worst > 6*sd {
		t.Errorf("measured - drawn SNR: worst %v dB > 6 sd", worst)
	}
	// snr ~ U[lo, hi): mean (lo+hi)/2, sd (hi-lo)/sqrt(12)
	lo, hi := cfg.SNRMin, cfg.SNRMax
	if tol := 4 * (hi - lo) / math.Sqrt(12*m); math.Abs(snrSum/m-(lo+hi)/2) > tol {
		t.Errorf("mean drawn SNR %v, want %v +- %v", snrSum/m, (lo+hi)/2, tol)
	}

	cfg.SNRMin, cfg.SNRMax = 30, 30
	for _, r := range gen(cfg, Swell, 5) {
		if r.SNRdB != 30 {
			t.Errorf("fixed SNR: drawn %v, want 30", r.SNRdB)
		}
	}
}

// ksUniform returns the Kolmogorov-Smirnov statistic of v against U[lo, hi].
func ksUniform(v []float64, lo, hi float64) float64 {
	v = slices.Sorted(slices.Values(v))
	n := float64(len(v))
	var d float64
	for i, x := range v {
		f := math.Min(1, math.Max(0, (x-lo)/(hi-lo)))
		d = max(d, float64(i+1)/n-f, f-float64(i)/n)
	}
	return d
}

// TestDistributions: every continuous parameter follows the spec's uniform
// law (Kolmogorov-Smirnov at level 0.001 over 1000 records a class);
// durations come first and t1 is uniform on what is left; the sign and the
// notch width are uniform on their sets.
func TestDistributions(t *testing.T) {
	cfg := cfg50()
	T := 1 / cfg.F0
	L := float64(cfg.N()) / cfg.Fs
	const n = 1000
	crit := 1.95 / math.Sqrt(n)
	for class := range NumClasses {
		vals := map[string][]float64{}
		var counts [5]int
		for _, r := range gen(cfg, class, n) {
			p := r.Params
			for k, v := range p {
				switch k {
				case "t1", "t2", "n1", "width", "sign":
				default:
					vals[k] = append(vals[k], v)
				}
			}
			if _, ok := p["t1"]; ok {
				dur := p["t2"] - p["t1"]
				switch class {
				case Notch, Spike:
					counts[int(p["width"])]++
					vals["t1/(T-width/fs)"] = append(vals["t1/(T-width/fs)"], p["t1"]/(T-p["width"]/cfg.Fs))
				default:
					vals["duration"] = append(vals["duration"], dur)
					vals["t1/(L-duration)"] = append(vals["t1/(L-duration)"], p["t1"]/(L-dur))
				}
			}
			if s, ok := p["sign"]; ok && s > 0 {
				counts[0]++
			}
		}
		for k, v := range vals {
			var lo, hi float64
			switch k {
			case "duration":
				lo, hi = T, 9*T
				if class == OscillatoryTransient {
					lo, hi = T/2, 3*T
				}
			case "t1/(L-duration)", "t1/(T-width/fs)":
				lo, hi = 0, 1
			default:
				lo, hi = paramRange(cfg, class, k)
			}
			if d := ksUniform(v, lo, hi); d > crit {
				t.Errorf("%s: %s not U[%v, %v]: KS %v > %v", ClassNames[class], k, lo, hi, d, crit)
			}
		}
		// binomial / multinomial: 4.5 sigma
		if class == ImpulsiveTransient && math.Abs(float64(counts[0])-n/2) > 4.5*math.Sqrt(n/4.0) {
			t.Errorf("impulsive: %d of %d signs positive", counts[0], n)
		}
		if class == Notch || class == Spike {
			for w := 1; w <= 4; w++ {
				if math.Abs(float64(counts[w])-n/4) > 4.5*math.Sqrt(n*3/16.0) {
					t.Errorf("%s: width %d drawn %d of %d times", ClassNames[class], w, counts[w], n)
				}
			}
		}
	}
}
