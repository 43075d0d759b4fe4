package data

import (
	"maps"
	"math"
	"math/bits"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk/rng"
)

// oneOf3 is the spec's table of the one-phase class whose rule and
// parameters each three-phase class uses (docs/spec/pqd-3phase.md).
var oneOf3 = map[int]int{
	PQD3Normal:               Normal,
	PQD3SLGSag:               Sag,
	PQD3SLGSagSwell:          Sag,
	PQD3LLSag:                Sag,
	PQD3ThreePhaseSag:        Sag,
	PQD3Swell:                Swell,
	PQD3Interruption:         Interruption,
	PQD3ImpulsiveTransient:   ImpulsiveTransient,
	PQD3OscillatoryTransient: OscillatoryTransient,
	PQD3Notch:                Notch,
	PQD3Spike:                Spike,
	PQD3Harmonics:            Harmonics,
	PQD3Flicker:              Flicker,
}

// gen3 returns count noise-free records of class, each from its own stream.
func gen3(cfg Config, class, count int) []Record {
	out := make([]Record, count)
	for i := range out {
		out[i] = PQD3{}.Generate(cfg, class, rng.For(7, "test3", PQD3ClassNames[class], i, -1))
	}
	return out
}

// phaseRow returns phase c's n samples of a channel-major slice.
func phaseRow[T any](v []T, c, n int) []T { return v[c*n : (c+1)*n] }

// spec3Y transcribes docs/spec/pqd-3phase.md: y_c(t_n) of phase c from the
// recorded parameters. The one-phase rules come from specY with phi
// replaced by phi_c; the line-to-line sag is Bollen's type C in phasor
// form (V_{h+1,h+2} = -1/2 -+ j sqrt(3)/2 (1 - a u) relative to phase h).
func spec3Y(cfg Config, class int, p map[string]float64, c, n int) float64 {
	t := float64(n) / cfg.Fs
	w := 2 * math.Pi * cfg.F0
	phiC := p["phi"] - 2*math.Pi*float64(c)/3
	x0c := math.Sin(w*t + phiC)
	u := 0.0
	if p["t1"] <= t && t < p["t2"] {
		u = 1
	}
	phases, faulted := int(p["phases"]), int(p["faulted"])
	switch class {
	case PQD3SLGSagSwell:
		f := bits.TrailingZeros(uint(faulted))
		return x0c - p["a"]*u*math.Sin(w*t+p["phi"]-2*math.Pi*float64(f)/3)
	case PQD3LLSag:
		h := bits.TrailingZeros(uint(7 &^ phases))
		th := w*t + p["phi"] - 2*math.Pi*float64(h)/3
		v := math.Sqrt(3) / 2 * (1 - p["a"]*u)
		switch (c - h + 3) % 3 {
		case 1:
			return -0.5*math.Sin(th) - v*math.Cos(th)
		case 2:
			return -0.5*math.Sin(th) + v*math.Cos(th)
		}
		return x0c
	}
	if phases&(1<<c) == 0 {
		return x0c
	}
	pc := maps.Clone(p)
	pc["phi"] = phiC
	return specY(cfg, oneOf3[class], pc, n)
}

func TestPQD3Interface(t *testing.T) {
	var g Generator = PQD3{}
	if g.Name() != "pqd-3phase" || g.Channels() != 3 {
		t.Errorf("Name %q Channels %d, want pqd-3phase 3", g.Name(), g.Channels())
	}
	names := g.Classes()
	if len(names) != PQD3NumClasses || len(oneOf3) != PQD3NumClasses {
		t.Fatalf("%d class names, %d in the spec table, want %d", len(names), len(oneOf3), PQD3NumClasses)
	}
	seen := map[string]bool{}
	for i, s := range names {
		if s == "" || s != strings.ToLower(s) || strings.ContainsAny(s, " -") || seen[s] {
			t.Errorf("class %d: name %q not unique snake_case", i, s)
		}
		seen[s] = true
	}
	for _, c := range []int{-1, PQD3NumClasses} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("class %d: no panic", c)
				}
			}()
			PQD3{}.Generate(cfg50(), c, rng.New(1))
		}()
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("invalid config: no panic")
			}
		}()
		bad := cfg50()
		bad.Cycles = 2
		PQD3{}.Generate(bad, PQD3Normal, rng.New(1))
	}()
}

// TestPQD3SpecFormula checks every class and phase against spec3Y, the
// parameters against the one-phase ranges, the phase bitmasks against the
// class, and the ground truth: d_c = 0 and no event on an undisturbed
// phase, x = x0_c + d_c with noise off.
func TestPQD3SpecFormula(t *testing.T) {
	for _, cfg := range []Config{cfg50(), cfg60odd()} {
		n := cfg.N()
		for class := range PQD3NumClasses {
			name := PQD3ClassNames[class]
			one := oneOf3[class]
			for i, r := range gen3(cfg, class, 30) {
				if r.Label != class || len(r.X) != 3*n || len(r.D) != 3*n || len(r.Event) != 3*n {
					t.Fatalf("%s %d: label %d, lengths %d %d %d, want 3 x %d", name, i, r.Label, len(r.X), len(r.D), len(r.Event), n)
				}
				want := slices.Sorted(slices.Values(append([]string{"phi", "phases", "faulted"}, keys[one]...)))
				if got := slices.Sorted(maps.Keys(r.Params)); !slices.Equal(got, want) {
					t.Fatalf("%s: params %v, want %v", name, got, want)
				}
				for k, v := range r.Params {
					if k == "phases" || k == "faulted" {
						continue
					}
					if lo, hi := paramRange(cfg, one, k); !(v >= lo && v <= hi) {
						t.Errorf("%s %d: %s = %v outside [%v, %v]", name, i, k, v, lo, hi)
					}
				}
				ph, fl := int(r.Params["phases"]), int(r.Params["faulted"])
				var wantPh, wantCount int
				switch class {
				case PQD3Normal:
					wantPh, wantCount = 0, 0
				case PQD3ThreePhaseSag, PQD3Harmonics, PQD3Flicker:
					wantPh, wantCount = 7, 3
				case PQD3SLGSagSwell:
					wantPh, wantCount = 7, 1
				case PQD3LLSag:
					wantPh, wantCount = fl, 2
				default:
					wantPh, wantCount = fl, 1
				}
				if ph != wantPh || bits.OnesCount(uint(fl)) != wantCount || fl&^7 != 0 || fl&^ph != 0 {
					t.Fatalf("%s %d: phases %b faulted %b, want phases %b and %d faulted phase(s) among them", name, i, ph, fl, wantPh, wantCount)
				}
				for c := range 3 {
					d, x, ev := phaseRow(r.D, c, n), phaseRow(r.X, c, n), phaseRow(r.Event, c, n)
					on := ph&(1<<c) != 0
					phiC := r.Params["phi"] - 2*math.Pi*float64(c)/3
					for j := range n {
						ref := spec3Y(cfg, class, r.Params, c, j)
						x0c := x0(cfg, phiC, j)
						if !near(x0c+d[j], ref, 1e-12) || !near(x[j], ref, 1e-12) {
							t.Fatalf("%s %d (F0 %v) phase %d: y[%d] = %v, x = %v, spec formula %v", name, i, cfg.F0, c, j, x0c+d[j], x[j], ref)
						}
						if !on && (d[j] != 0 || ev[j]) {
							t.Fatalf("%s %d phase %d (undisturbed, phases %b): d[%d] = %v, event %v, want exactly 0 and none", name, i, c, ph, j, d[j], ev[j])
						}
					}
					if !on {
						continue
					}
					// The event: the fault window on the faulted phases, the
					// one-phase event on the disturbed phase.
					for j := range n {
						tj := float64(j) / cfg.Fs
						inWin := r.Params["t1"] <= tj && tj < r.Params["t2"]
						switch class {
						case PQD3SLGSag, PQD3SLGSagSwell, PQD3LLSag, PQD3ThreePhaseSag, PQD3Swell, PQD3Interruption, PQD3OscillatoryTransient:
							if ev[j] != inWin {
								t.Fatalf("%s %d phase %d: event[%d] = %v, want t in [t1, t2) = %v", name, i, c, j, ev[j], inWin)
							}
						case PQD3Harmonics, PQD3Flicker:
							if !ev[j] {
								t.Fatalf("%s %d phase %d: event[%d] false, want the whole record", name, i, c, j)
							}
						}
					}
				}
			}
		}
	}
}

// TestPQD3PhaseIsOnePhaseRecord: the documented draw order makes the
// disturbed phase f of a one-phase-disturbance class the one-phase record
// of the same class drawn with phi_f after phi and f, parameter for
// parameter and sample for sample; on phase a also the noise.
func TestPQD3PhaseIsOnePhaseRecord(t *testing.T) {
	cfg := DefaultConfig()
	n := cfg.N()
	seenA := 0
	for _, class := range []int{PQD3SLGSag, PQD3Swell, PQD3Interruption, PQD3ImpulsiveTransient, PQD3OscillatoryTransient, PQD3Notch, PQD3Spike} {
		for i := range 12 {
			key := rng.Key(5, "test3", PQD3ClassNames[class], i, -1)
			r3 := PQD3{}.Generate(cfg, class, rng.New(key))
			r := rng.New(key)
			phi := -math.Pi + 2*math.Pi*r.Float64()
			f := r.IntN(3)
			phiF := phi - 2*math.Pi*float64(f)/3
			c1 := cfg
			c1.Phase = &phiF
			r1 := Generate(c1, oneOf3[class], r)
			if int(r3.Params["faulted"]) != 1<<f || r3.Params["phi"] != phi {
				t.Fatalf("%s %d: faulted %v phi %v, want %b and %v from the stream", PQD3ClassNames[class], i, r3.Params["faulted"], r3.Params["phi"], 1<<f, phi)
			}
			for k, v := range r1.Params {
				if k != "phi" && r3.Params[k] != v {
					t.Fatalf("%s %d: %s = %v, one-phase record %v", PQD3ClassNames[class], i, k, r3.Params[k], v)
				}
			}
			if !slices.Equal(phaseRow(r3.D, f, n), r1.D) || !slices.Equal(phaseRow(r3.Event, f, n), r1.Event) {
				t.Fatalf("%s %d: phase %d's d or event differs from the one-phase record's", PQD3ClassNames[class], i, f)
			}
			if f == 0 {
				seenA++
				if !slices.Equal(phaseRow(r3.X, 0, n), r1.X) {
					t.Fatalf("%s %d: phase a's x (noise drawn first) differs from the one-phase record's", PQD3ClassNames[class], i)
				}
			}
		}
	}
	if seenA == 0 {
		t.Fatal("no record faulted phase a")
	}
}

// TestPQD3Balanced: the phase sums of closed form. The positive-sequence
// classes sum to 0; a type C sag has no zero sequence (sum 0) and its
// faulted line voltage is (1 - a) sqrt(3) times nominal; a balanced
// harmonic set leaves only the zero-sequence triplen, 3 a3 sin(3 (w t +
// phi) + th3); an ungrounded ground fault adds 3 times the neutral shift,
// -3 a u x0_f, and raises the healthy phases to sqrt(1 + a + a^2).
func TestPQD3Balanced(t *testing.T) {
	cfg := cfg50()
	n := cfg.N()
	w := 2 * math.Pi * cfg.F0
	for _, class := range []int{PQD3Normal, PQD3ThreePhaseSag, PQD3Flicker, PQD3LLSag, PQD3Harmonics, PQD3SLGSagSwell} {
		for i, r := range gen3(cfg, class, 20) {
			p := r.Params
			a := p["a"]
			for j := range n {
				tj := float64(j) / cfg.Fs
				u := 0.0
				if p["t1"] <= tj && tj < p["t2"] {
					u = 1
				}
				sum := r.X[j] + r.X[n+j] + r.X[2*n+j]
				want := 0.0
				switch class {
				case PQD3Harmonics:
					want = 3 * p["a3"] * math.Sin(3*(w*tj+p["phi"])+p["th3"])
				case PQD3SLGSagSwell:
					f := bits.TrailingZeros(uint(p["faulted"]))
					want = -3 * a * u * math.Sin(w*tj+p["phi"]-2*math.Pi*float64(f)/3)
				}
				if !near(sum, want, 1e-12) {
					t.Fatalf("%s %d: x_a + x_b + x_c at %d = %v, want %v", PQD3ClassNames[class], i, j, sum, want)
				}
				if class == PQD3LLSag {
					h := bits.TrailingZeros(uint(7 &^ int(p["phases"])))
					b, c := (h+1)%3, (h+2)%3
					line := r.X[b*n+j] - r.X[c*n+j]
					nominal := x0(cfg, p["phi"]-2*math.Pi*float64(b)/3, j) - x0(cfg, p["phi"]-2*math.Pi*float64(c)/3, j)
					if !near(line, (1-a*u)*nominal, 1e-12) {
						t.Fatalf("ll_sag %d: line voltage %d-%d at %d = %v, want (1 - a u) x %v", i, b, c, j, line, nominal)
					}
				}
			}
			if class == PQD3SLGSagSwell {
				// The peak of a healthy phase over the samples in [t1, t2)
				// (at least one cycle): the phasor magnitude
				// |e^{j phi_c} - a e^{j phi_f}| = sqrt(1 + a + a^2), less at
				// most the factor cos(pi f0/fs): some sample lies within half
				// a sample step of the crest.
				f := bits.TrailingZeros(uint(p["faulted"]))
				want := math.Sqrt(1 + a + a*a)
				tol := want * (1 - math.Cos(math.Pi*cfg.F0/cfg.Fs))
				for c := range 3 {
					if c == f {
						continue
					}
					peak := 0.0
					for j, v := range phaseRow(r.X, c, n) {
						if tj := float64(j) / cfg.Fs; p["t1"] <= tj && tj < p["t2"] {
							peak = max(peak, math.Abs(v))
						}
					}
					if peak > want+1e-12 || peak < want-tol {
						t.Errorf("slg_sag_swell %d: healthy phase %d peaks at %v during the fault, want sqrt(1+a+a^2) = %v (-%v)", i, c, peak, want, tol)
					}
				}
			}
		}
	}
}

func TestPQD3Deterministic(t *testing.T) {
	cfg := DefaultConfig()
	for class := range PQD3NumClasses {
		a := PQD3{}.Generate(cfg, class, rng.New(99))
		b := PQD3{}.Generate(cfg, class, rng.New(99))
		c := PQD3{}.Generate(cfg, class, rng.New(100))
		if !sameRecord(a, b) {
			t.Errorf("%s: same stream, different records", PQD3ClassNames[class])
		}
		if slices.Equal(a.X, c.X) {
			t.Errorf("%s: different streams, same waveform", PQD3ClassNames[class])
		}
	}
}

// TestPQD3SplitsAndMasks: splits of PQD3 carry 3 channels and its class
// names, are class-balanced, and every noisy record is finite with a
// non-empty mask (|d| > 0.001) exactly on the phases of "phases"
// (none for normal); the noise follows each phase's power: the measured
// 10 log10(P_c / P_noise,c) is the drawn SNR within 6 standard deviations
// of a chi-square_N power estimate.
func TestPQD3SplitsAndMasks(t *testing.T) {
	cfg := DefaultConfig()
	n := cfg.N()
	const per = 12
	s, err := MakeSplitOf(t.Context(), PQD3{}, cfg, 4, "p3", per, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.C() != 3 || !slices.Equal(s.ClassList(), PQD3ClassNames[:]) || len(s.Records) != per*PQD3NumClasses {
		t.Fatalf("split: C %d, classes %v, %d records", s.C(), s.ClassList(), len(s.Records))
	}
	sd := 10 / math.Ln10 * math.Sqrt(2/float64(n))
	var mask []bool
	for i, r := range s.Records {
		if r.Label != i%PQD3NumClasses || r.Seed != RecordKey(4, "p3", i) {
			t.Fatalf("record %d: label %d seed %x", i, r.Label, r.Seed)
		}
		ph := int(r.Params["phases"])
		for c := range 3 {
			for j, v := range phaseRow(r.X, c, n) {
				if !finite(v) || !finite(r.D[c*n+j]) {
					t.Fatalf("record %d phase %d: x[%d] = %v, d = %v", i, c, j, v, r.D[c*n+j])
				}
			}
			mask = Mask(mask, phaseRow(r.D, c, n), 0.001)
			if got := slices.Contains(mask, true); got != (ph&(1<<c) != 0) {
				t.Errorf("record %d (%s) phase %d: mask non-empty %v, phases %b", i, PQD3ClassNames[r.Label], c, got, ph)
			}
			var py, pn float64
			for j := range n {
				yj := x0(cfg, r.Params["phi"]-2*math.Pi*float64(c)/3, j) + r.D[c*n+j]
				e := r.X[c*n+j] - yj
				py += yj * yj
				pn += e * e
			}
			if d := 10*math.Log10(py/pn) - r.SNRdB; math.Abs(d) > 6*sd {
				t.Errorf("record %d (%s) phase %d: measured SNR - drawn = %v dB, want within %v", i, PQD3ClassNames[r.Label], c, d, 6*sd)
			}
		}
	}
	ps, err := MakePaperSplitsOf(t.Context(), PQD3{}, cfg, 4, 10, 0.2, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range append([]Split{ps.Train, ps.Val}, ps.Tests...) {
		if sp.C() != 3 || !slices.Equal(sp.ClassList(), PQD3ClassNames[:]) {
			t.Errorf("%s: C %d, classes %v", sp.Name, sp.C(), sp.ClassList())
		}
		counts := make([]int, PQD3NumClasses)
		for _, r := range sp.Records {
			counts[r.Label]++
		}
		want := map[string]int{"train": 8, "val": 2}[sp.Name]
		if want == 0 {
			want = 3
		}
		for c, k := range counts {
			if k != want {
				t.Errorf("%s: %d records of %s, want %d", sp.Name, k, PQD3ClassNames[c], want)
			}
		}
	}
}

// TestPQD3PhaseUniform: the faulted phase of slg_sag and the healthy phase
// of ll_sag are uniform on {a, b, c}: Pearson's chi-square over 900
// records each stays below 13.8, the 0.999 quantile of chi-square with 2
// degrees of freedom (fixed streams, so the test is deterministic).
func TestPQD3PhaseUniform(t *testing.T) {
	cfg := cfg50()
	const m = 900
	for _, class := range []int{PQD3SLGSag, PQD3LLSag} {
		var counts [3]float64
		for i := range m {
			r := PQD3{}.Generate(cfg, class, rng.For(21, "uniform", PQD3ClassNames[class], i, -1))
			mask := int(r.Params["faulted"])
			if class == PQD3LLSag {
				mask = 7 &^ mask // the healthy phase
			}
			counts[bits.TrailingZeros(uint(mask))]++
		}
		var chi2 float64
		for _, k := range counts {
			chi2 += (k - m/3) * (k - m/3) / (m / 3)
		}
		if chi2 > 13.8 {
			t.Errorf("%s: phase counts %v, chi-square %.2f > 13.8", PQD3ClassNames[class], counts, chi2)
		}
	}
}

// TestPQDUnchanged: the one-phase generator as a Generator value is the
// package's Generate bit for bit, and generating three-phase records in
// between leaves no state behind.
func TestPQDUnchanged(t *testing.T) {
	cfg := DefaultConfig()
	for class := range NumClasses {
		for i := range 3 {
			key := rng.Key(8, "unchanged", ClassNames[class], i, -1)
			want := Generate(cfg, class, rng.New(key))
			PQD3{}.Generate(cfg, class%PQD3NumClasses, rng.New(key))
			if got := (PQD{}).Generate(cfg, class, rng.New(key)); !sameRecord(got, want) {
				t.Fatalf("%s %d: PQD{}.Generate differs from Generate", ClassNames[class], i)
			}
		}
	}
	a, err := MakeSplit(t.Context(), cfg, 3, "u", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := MakeSplitOf(t.Context(), PQD{}, cfg, 3, "u", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameSplit(t, "MakeSplit vs MakeSplitOf(PQD{})", a, b)
	if b.Channels != 0 || b.Classes != nil {
		t.Errorf("one-phase split: Channels %d Classes %v, want the zero values", b.Channels, b.Classes)
	}
}
