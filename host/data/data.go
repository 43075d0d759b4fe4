package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Class indices; the order is the paper's (the "classes" of
// testdata/golden/paper-1dcnn/manifest.json).
const (
	Normal = iota
	Sag
	Swell
	Interruption
	ImpulsiveTransient
	OscillatoryTransient
	Harmonics
	Flicker
	Notch
	Spike
	SagHarmonics
	SwellHarmonics
	InterruptionHarmonics
	FlickerHarmonics
	FlickerSag
	FlickerSwell

	// NumClasses is the number of classes.
	NumClasses
)

// ClassNames holds the snake_case class names, indexed by class. Treat it as
// read-only; ClassName and ClassByName are the accessors.
var ClassNames = [NumClasses]string{
	"normal",
	"sag",
	"swell",
	"interruption",
	"impulsive_transient",
	"oscillatory_transient",
	"harmonics",
	"flicker",
	"notch",
	"spike",
	"sag_harmonics",
	"swell_harmonics",
	"interruption_harmonics",
	"flicker_harmonics",
	"flicker_sag",
	"flicker_swell",
}

// Disc7 lists the paper's seven discriminative classes: impulsive transient,
// interruption, notch, oscillatory transient, sag, spike, swell. Treat it as
// read-only; IsDisc7 is the accessor.
var Disc7 = []int{ImpulsiveTransient, Interruption, Notch, OscillatoryTransient, Sag, Spike, Swell}

// IsDisc7 reports whether class c is one of the seven discriminative classes.
func IsDisc7(c int) bool {
	switch c {
	case ImpulsiveTransient, Interruption, Notch, OscillatoryTransient, Sag, Spike, Swell:
		return true
	}
	return false
}

// ClassName returns the snake_case name of class i, or "class(i)" when i is
// out of range.
func ClassName(i int) string {
	if i < 0 || i >= NumClasses {
		return fmt.Sprintf("class(%d)", i)
	}
	return ClassNames[i]
}

// ClassByName returns the index of the class named s (snake_case, as in
// ClassNames).
func ClassByName(s string) (int, error) {
	for i, n := range ClassNames {
		if n == s {
			return i, nil
		}
	}
	return -1, fmt.Errorf("data: unknown class %q (accepted: normal, sag, swell, interruption, impulsive_transient, oscillatory_transient, harmonics, flicker, notch, spike, sag_harmonics, swell_harmonics, interruption_harmonics, flicker_harmonics, flicker_sag, flicker_swell)", s)
}

// Config sets the grid, the sampling and the noise of generated records.
type Config struct {
	F0     float64  // nominal frequency in Hz, default 50 (60 works)
	Fs     float64  // sampling rate in Hz, default 3200
	Cycles int      // cycles a record, default 10; N = Cycles*Fs/F0 must be a whole number
	Phase  *float64 // nil: phi ~ U[-pi, pi) per record; else the fixed phase in radians
	Noise  bool     // add white Gaussian noise, default true
	SNRMin float64  // dB, default 30; the SNR is drawn ~ U[SNRMin, SNRMax)
	SNRMax float64  // dB, default 50; SNRMin == SNRMax fixes the SNR
}

// DefaultConfig returns the spec's setting: 50 Hz, 3200 Hz, 10 cycles
// (N = 640), random phase, noise with SNR ~ U[30, 50] dB (the spec's
// revised floor).
func DefaultConfig() Config {
	return Config{F0: 50, Fs: 3200, Cycles: 10, Noise: true, SNRMin: 30, SNRMax: 50}
}

// Limits accepted by Validate.
const (
	maxF0     = 1000.0
	maxFs     = 1e7
	minCycles = 9 // the longest sag (9 T) must fit in the record
	maxN      = 1 << 22
	minSNR    = -40.0
	maxSNR    = 200.0
	maxOscHz  = 900.0 // highest oscillatory-transient frequency
)

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Validate reports the first field of c that the generator cannot use, with
// the accepted range.
func (c Config) Validate() error {
	if !finite(c.F0) || c.F0 <= 0 || c.F0 > maxF0 {
		return fmt.Errorf("data: F0 = %v Hz: want a nominal frequency in (0, %v] Hz, e.g. 50 or 60", c.F0, maxF0)
	}
	minFs := 2 * math.Max(7*c.F0, maxOscHz)
	if !finite(c.Fs) || c.Fs <= minFs || c.Fs > maxFs {
		return fmt.Errorf("data: Fs = %v Hz: want a sampling rate in (%v, %v] Hz (above the Nyquist rate of the 7th harmonic and of the 900 Hz oscillatory transient), e.g. 3200", c.Fs, minFs, maxFs)
	}
	if c.Cycles < minCycles {
		return fmt.Errorf("data: Cycles = %d: want at least %d (the longest sag lasts 9 cycles and must fit in the record), e.g. 10", c.Cycles, minCycles)
	}
	n := float64(c.Cycles) * c.Fs / c.F0
	if math.Abs(n-math.Round(n)) > 1e-9*n {
		return fmt.Errorf("data: Cycles*Fs/F0 = %d*%v/%v = %v samples is not a whole number: choose Cycles, Fs and F0 so that it is (e.g. Fs = 3840 or Cycles = 15 at 60 Hz)", c.Cycles, c.Fs, c.F0, n)
	}
	if n > maxN {
		return fmt.Errorf("data: Cycles*Fs/F0 = %v samples: want at most %d samples a record", n, maxN)
	}
	if c.Phase != nil && !finite(*c.Phase) {
		return fmt.Errorf("data: Phase = %v: want a finite phase in radians, or none for phi ~ U[-pi, pi)", *c.Phase)
	}
	if c.Noise {
		if !finite(c.SNRMin) || c.SNRMin < minSNR || c.SNRMin > maxSNR {
			return fmt.Errorf("data: SNRMin = %v dB: want a number in [%v, %v] dB", c.SNRMin, minSNR, maxSNR)
		}
		if !finite(c.SNRMax) || c.SNRMax < minSNR || c.SNRMax > maxSNR {
			return fmt.Errorf("data: SNRMax = %v dB: want a number in [%v, %v] dB", c.SNRMax, minSNR, maxSNR)
		}
		if c.SNRMin > c.SNRMax {
			return fmt.Errorf("data: SNRMin = %v dB > SNRMax = %v dB: want SNRMin <= SNRMax (equal values fix the SNR)", c.SNRMin, c.SNRMax)
		}
	}
	return nil
}

// N returns the number of samples a record, Cycles*Fs/F0 rounded to the
// nearest integer. It is meaningful only for a valid c.
func (c Config) N() int { return int(math.Round(float64(c.Cycles) * c.Fs / c.F0)) }

// Record is one generated (or read) waveform.
//
// Params holds every drawn parameter, in SI units (seconds, Hz, radians,
// p.u.): phi; a, t1, t2 (sag, swell, interruption and their combinations);
// a3, a5, a7, th3, th5, th7 (harmonics); lam, beta, thf (flicker); psi,
// sign, tr, td, ta (impulsive transient); a, tau, fn, th, t1, t2
// (oscillatory transient); K, width (samples), t1, t2 = t1 + width/fs and
// n1 (first sample of the first notch or spike) (notch, spike); for the
// three-phase generator PQD3 also phases and faulted (bit masks of the
// phases d may be non-zero on, and of the faulted phases); snr_db when
// noise is on.
type Record struct {
	Label  int
	X      []float64          // observed waveform y + noise: C channels of N samples, channel-major (x[c*N+n])
	D      []float64          // d = y - x0, noise excluded, as X
	Event  []bool             // true inside the drawn disturbance interval(s), as X
	Params map[string]float64 // every drawn parameter
	// SNRdB is the drawn SNR; +Inf when noise is off (the record is
	// noise-free), NaN when unknown (a file without params.jsonl).
	SNRdB float64
	// Seed is the key of the record's stream: Generate(cfg, Label,
	// rng.New(Seed)) regenerates the record. Generate leaves it 0;
	// MakeSplit sets it.
	Seed uint64
	// Mask is the ground-truth mask a dataset file gives (masks.npy, the
	// "masks" tensor): C x T values, channel-major, like X; nil when the
	// file has none (and for generated records). Downstream a given Mask
	// wins over the masks computed from D (amplitude, |d| > eps) and
	// Event.
	Mask []bool
}

// signal holds the drawn parameters of one record.
type signal struct {
	phi float64

	// amplitude event: y gets the factor 1 + amp u(t)
	ampEv  bool
	amp    float64 // -a (sag, interruption) or +a (swell)
	t1, t2 float64 // amplitude or oscillatory event, s

	harm bool
	ah   [3]float64 // a3, a5, a7
	th   [3]float64 // th3, th5, th7

	flick           bool
	lam, beta, thf  float64
	imp             bool
	psi, sgn        float64
	tr, td, ta, gmx float64

	osc                bool
	oa, tau, fn, theta float64

	per   float64 // -1 notch, +1 spike, 0 none
	k     float64
	width int
	n1    int

	whole bool // the event covers the whole record
}

func uniform(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

// ampEvent draws a ~ U[lo, hi), the duration ~ U[T, 9T] and then
// t1 ~ U[0, L - duration].
func (s *signal) ampEvent(r *rand.Rand, p map[string]float64, sign, lo, hi, T, L float64) {
	a := uniform(r, lo, hi)
	dur := uniform(r, T, 9*T)
	s.t1 = uniform(r, 0, L-dur)
	s.t2 = s.t1 + dur
	s.ampEv, s.amp = true, sign*a
	p["a"], p["t1"], p["t2"] = a, s.t1, s.t2
}

// harmonics draws a3, a5, a7 ~ U[0.05, 0.15], then th3, th5, th7 ~ U[-pi, pi).
func (s *signal) harmonics(r *rand.Rand, p map[string]float64) {
	s.harm = true
	for i := range s.ah {
		s.ah[i] = uniform(r, 0.05, 0.15)
	}
	for i := range s.th {
		s.th[i] = uniform(r, -math.Pi, math.Pi)
	}
	p["a3"], p["a5"], p["a7"] = s.ah[0], s.ah[1], s.ah[2]
	p["th3"], p["th5"], p["th7"] = s.th[0], s.th[1], s.th[2]
}

// flicker draws lam ~ U[0.1, 0.2], beta ~ U[5, 20] Hz, thf ~ U[-pi, pi).
func (s *signal) flicker(r *rand.Rand, p map[string]float64) {
	s.flick = true
	s.lam = uniform(r, 0.1, 0.2)
	s.beta = uniform(r, 5, 20)
	s.thf = uniform(r, -math.Pi, math.Pi)
	p["lam"], p["beta"], p["thf"] = s.lam, s.beta, s.thf
}

// PulsePeak returns the time s* > 0 at which the unnormalised double
// exponential e^{-s/td} - e^{-s/tr} (td > tr > 0) peaks, and its value
// gmax there: s* = ln(td/tr) td tr / (td - tr).
func PulsePeak(tr, td float64) (sStar, gmax float64) {
	sStar = math.Log(td/tr) * td * tr / (td - tr)
	return sStar, math.Exp(-sStar/td) - math.Exp(-sStar/tr)
}

// Generate returns one record of class with the parameters drawn from r.
// It panics if cfg is invalid or class is out of range (check with
// Validate first).
//
// Draws, in this order: phi ~ U[-pi, pi) (unless cfg.Phase is set); the
// class parameters in the order the factors appear in the class formula
// (e.g. Sag+Harmonics: a, duration, t1, then a3, a5, a7, th3, th5, th7;
// Flicker+Sag: lam, beta, thf, then a, duration, t1); snr_db ~ U[SNRMin,
// SNRMax); then N standard normals for the noise.
//
// y(t) by class (a u stands for a u(t); durations and ranges as in the
// spec; combined classes use the duration rule of their base disturbance,
// T <= t2 - t1 <= 9T):
//
//	0 normal                 x0
//	1 sag                    (1 - a u) x0,  a ~ U[0.1, 0.9)
//	2 swell                  (1 + a u) x0,  a ~ U[0.1, 0.8)
//	3 interruption           (1 - a u) x0,  a ~ U[0.9, 1.0)
//	4 impulsive_transient    x0 + sign psi g(t - ta)
//	5 oscillatory_transient  x0 + a e^{-(t-t1)/tau} sin(2 pi fn (t-t1) + th) u
//	6 harmonics              H
//	7 flicker                F x0
//	8 notch                  x0 - sign(x0) K sum_c 1[t1 + cT <= t < t2 + cT]
//	9 spike                  x0 + sign(x0) K sum_c 1[t1 + cT <= t < t2 + cT]
//	10..12                   (1 - a u) H, (1 + a u) H, (1 - a u) H
//	13 flicker_harmonics     F H
//	14, 15                   F (1 - a u) x0, F (1 + a u) x0
//
// with g(s) = (e^{-s/td} - e^{-s/tr}) / gmax for s >= 0, else 0 (peak 1);
// tr ~ U[0.05, 0.2) ms, td ~ U[0.5, 2) ms, psi ~ U[0.2, 1), sign = +-1
// with equal odds, ta ~ U[T, (Cycles-1) T); oscillatory a ~ U[0.1, 0.8),
// tau ~ U[8, 40) ms, fn ~ U[300, 900) Hz, th ~ U[-pi, pi), duration
// ~ U[0.5T, 3T); notch/spike K ~ U[0.1, 0.4), width ~ {1, 2, 3, 4}
// samples, t1 ~ U[0, T - width/fs), t2 = t1 + width/fs; sign(x0) uses the
// phase phi of x0. The notch of cycle c covers the samples
// ceil((t1 + cT) fs) .. ceil((t1 + cT) fs) + width - 1, exactly width
// samples, all inside cycle c.
//
// Event: [t1, t2) for sag, swell, interruption and the oscillatory
// transient; [ta, ta + 5 td) for the impulsive transient; the notch or
// spike samples; the whole record for every class with harmonics or
// flicker (6, 7, 10..15: the disturbance is present everywhere; the drawn
// [t1, t2) of 10..12, 14, 15 is in Params); none for normal.
//
// d = y - x0 is computed from its terms, so d is exactly 0 where no
// disturbance acts and y = x0 + d exactly. Noise: x = y + sigma z with
// sigma^2 = P_y 10^{-snr/10}, P_y = (1/N) sum y[n]^2, z ~ N(0, 1).
func Generate(cfg Config, class int, r *rand.Rand) Record {
	if err := cfg.Validate(); err != nil {
		panic("data.Generate: " + err.Error())
	}
	if class < 0 || class >= NumClasses {
		panic(fmt.Sprintf("data.Generate: class %d out of range [0, %d)", class, NumClasses))
	}
	n := cfg.N()
	rec := Record{
		Label:  class,
		X:      make([]float64, n),
		D:      make([]float64, n),
		Event:  make([]bool, n),
		Params: make(map[string]float64, 12),
	}
	var s signal
	s.draw(cfg, class, r, rec.Params)
	s.render(cfg, rec.X, rec.D, rec.Event)
	if !cfg.Noise {
		rec.SNRdB = math.Inf(1)
		return rec
	}
	snr := uniform(r, cfg.SNRMin, cfg.SNRMax)
	rec.SNRdB = snr
	rec.Params["snr_db"] = snr
	var p float64
	for _, y := range rec.X {
		p += y * y
	}
	p /= float64(n)
	sigma := math.Sqrt(p * math.Pow(10, -snr/10))
	for i := range rec.X {
		rec.X[i] += sigma * r.NormFloat64()
	}
	return rec
}

// draw draws the parameters of class into s and p.
func (s *signal) draw(cfg Config, class int, r *rand.Rand, p map[string]float64) {
	T := 1 / cfg.F0
	L := float64(cfg.N()) / cfg.Fs
	if cfg.Phase != nil {
		s.phi = *cfg.Phase
	} else {
		s.phi = uniform(r, -math.Pi, math.Pi)
	}
	p["phi"] = s.phi
	switch class {
	case Normal:
	case Sag:
		s.ampEvent(r, p, -1, 0.1, 0.9, T, L)
	case Swell:
		s.ampEvent(r, p, +1, 0.1, 0.8, T, L)
	case Interruption:
		s.ampEvent(r, p, -1, 0.9, 1.0, T, L)
	case ImpulsiveTransient:
		s.imp = true
		s.psi = uniform(r, 0.2, 1.0)
		s.sgn = 1
		if r.IntN(2) == 1 {
			s.sgn = -1
		}
		s.tr = uniform(r, 0.05e-3, 0.2e-3)
		s.td = uniform(r, 0.5e-3, 2e-3)
		s.ta = uniform(r, T, float64(cfg.Cycles-1)*T)
		_, s.gmx = PulsePeak(s.tr, s.td)
		p["psi"], p["sign"], p["tr"], p["td"], p["ta"] = s.psi, s.sgn, s.tr, s.td, s.ta
	case OscillatoryTransient:
		s.osc = true
		s.oa = uniform(r, 0.1, 0.8)
		s.tau = uniform(r, 8e-3, 40e-3)
		s.fn = uniform(r, 300, 900)
		s.theta = uniform(r, -math.Pi, math.Pi)
		dur := uniform(r, 0.5*T, 3*T)
		s.t1 = uniform(r, 0, L-dur)
		s.t2 = s.t1 + dur
		p["a"], p["tau"], p["fn"], p["th"], p["t1"], p["t2"] = s.oa, s.tau, s.fn, s.theta, s.t1, s.t2
	case Harmonics:
		s.harmonics(r, p)
		s.whole = true
	case Flicker:
		s.flicker(r, p)
		s.whole = true
	case Notch, Spike:
		s.per = -1
		if class == Spike {
			s.per = 1
		}
		s.k = uniform(r, 0.1, 0.4)
		s.width = 1 + r.IntN(4)
		w := float64(s.width) / cfg.Fs
		s.t1 = uniform(r, 0, T-w)
		s.t2 = s.t1 + w
		s.n1 = int(math.Ceil(s.t1 * cfg.Fs))
		p["K"], p["width"], p["t1"], p["t2"], p["n1"] = s.k, float64(s.width), s.t1, s.t2, float64(s.n1)
	case SagHarmonics:
		s.ampEvent(r, p, -1, 0.1, 0.9, T, L)
		s.harmonics(r, p)
		s.whole = true
	case SwellHarmonics:
		s.ampEvent(r, p, +1, 0.1, 0.8, T, L)
		s.harmonics(r, p)
		s.whole = true
	case InterruptionHarmonics:
		s.ampEvent(r, p, -1, 0.9, 1.0, T, L)
		s.harmonics(r, p)
		s.whole = true
	case FlickerHarmonics:
		s.flicker(r, p)
		s.harmonics(r, p)
		s.whole = true
	case FlickerSag:
		s.flicker(r, p)
		s.ampEvent(r, p, -1, 0.1, 0.9, T, L)
		s.whole = true
	case FlickerSwell:
		s.flicker(r, p)
		s.ampEvent(r, p, +1, 0.1, 0.8, T, L)
		s.whole = true
	}
}

// render writes y into y, d = y - x0 into d and the event indicator into ev.
//
//	m(t)   = F(t) (1 + amp u(t)),      m - 1 = f + amp u + f amp u, f = F - 1
//	d(t)   = (m - 1) x0 + m h + add(t), h = H - x0
//	y(t)   = x0 + d
func (s *signal) render(cfg Config, y, d []float64, ev []bool) {
	n := len(y)
	fs := cfg.Fs
	w := 2 * math.Pi * cfg.F0
	wf := 2 * math.Pi * s.beta
	wn := 2 * math.Pi * s.fn
	var invTd, invTr, invTau, impEnd float64
	if s.imp {
		invTd, invTr = 1/s.td, 1/s.tr
		impEnd = s.ta + 5*s.td
	}
	if s.osc {
		invTau = 1 / s.tau
	}
	if s.per != 0 {
		spc := fs / cfg.F0
		for c := 0; c < cfg.Cycles; c++ {
			start := int(math.Ceil(s.t1*fs + float64(c)*spc))
			for j := start; j < start+s.width && j < n; j++ {
				ev[j] = true
			}
		}
	}
	for i := range n {
		t := float64(i) / fs
		ph := w*t + s.phi
		x0 := math.Sin(ph)
		var f, au float64
		if s.flick {
			f = s.lam * math.Sin(wf*t+s.thf)
		}
		if s.ampEv && s.t1 <= t && t < s.t2 {
			au = s.amp
			ev[i] = true
		}
		g := f + au + f*au // m - 1
		var di float64
		if g != 0 {
			di = g * x0
		}
		if s.harm {
			h := s.ah[0]*math.Sin(3*ph+s.th[0]) + s.ah[1]*math.Sin(5*ph+s.th[1]) + s.ah[2]*math.Sin(7*ph+s.th[2])
			di += (1 + g) * h
		}
		if s.imp {
			if u := t - s.ta; u >= 0 {
				di += s.sgn * s.psi * (math.Exp(-u*invTd) - math.Exp(-u*invTr)) / s.gmx
				if t < impEnd {
					ev[i] = true
				}
			}
		}
		if s.osc && s.t1 <= t && t < s.t2 {
			u := t - s.t1
			di += s.oa * math.Exp(-u*invTau) * math.Sin(wn*u+s.theta)
			ev[i] = true
		}
		if s.per != 0 && ev[i] {
			switch {
			case x0 > 0:
				di += s.per * s.k
			case x0 < 0:
				di -= s.per * s.k
			}
		}
		if s.whole {
			ev[i] = true
		}
		d[i] = di
		y[i] = x0 + di
	}
}
