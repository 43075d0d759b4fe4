package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Class indices of the three-phase generator PQD3 (docs/spec/pqd-3phase.md).
const (
	PQD3Normal = iota
	PQD3SLGSag
	PQD3SLGSagSwell
	PQD3LLSag
	PQD3ThreePhaseSag
	PQD3Swell
	PQD3Interruption
	PQD3ImpulsiveTransient
	PQD3OscillatoryTransient
	PQD3Notch
	PQD3Spike
	PQD3Harmonics
	PQD3Flicker

	// PQD3NumClasses is the number of three-phase classes.
	PQD3NumClasses
)

// PQD3ClassNames holds the snake_case names of the three-phase classes,
// indexed by class. Treat it as read-only; PQD3{}.Classes returns it.
var PQD3ClassNames = [PQD3NumClasses]string{
	"normal",
	"slg_sag",
	"slg_sag_swell",
	"ll_sag",
	"three_phase_sag",
	"swell",
	"interruption",
	"impulsive_transient",
	"oscillatory_transient",
	"notch",
	"spike",
	"harmonics",
	"flicker",
}

// pqd3One maps the three-phase classes whose disturbed phases follow a
// one-phase class rule to that class (the parameters are drawn as for it);
// -1 for the classes without one.
var pqd3One = [PQD3NumClasses]int{
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

// PQD3 is the three-phase generator of docs/spec/pqd-3phase.md: balanced
// phases a, b, c (channels 0, 1, 2), 120 degrees apart, with the
// disturbances of single-line-to-ground, line-to-line and three-phase
// faults and the one-phase disturbances on one or all phases.
type PQD3 struct{}

// Name returns "pqd-3phase".
func (PQD3) Name() string { return "pqd-3phase" }

// Classes returns PQD3ClassNames.
func (PQD3) Classes() []string { return PQD3ClassNames[:] }

// Channels returns 3.
func (PQD3) Channels() int { return 3 }

// Phase bitmasks of Record.Params["phases"] and ["faulted"]: bit c is
// phase c (a = 1, b = 2, c = 4).
const allPhases = 7

// Generate returns one three-phase record of class with the parameters
// drawn from r. X, D and Event hold 3 x N values, channel-major: phase c
// (0 = a, 1 = b, 2 = c) at c*N .. (c+1)*N-1. It panics if cfg is invalid
// or class is out of range (check with Validate first).
//
// Phase c's reference is x0_c(t) = sin(w t + phi_c), phi_c = phi - 2 pi c/3,
// and y_c = x0_c + d_c. With f the faulted phase, h the healthy phase of a
// line-to-line fault, u = u(t) and the one-phase rules of Generate applied
// to phase c (its phase phi_c in x0, H, sign(x0)):
//
//	0  normal                 d_c = 0
//	1  slg_sag                d_f = -a u x0_f; d_c = 0 otherwise   a ~ U[0.1, 0.9)
//	2  slg_sag_swell          d_c = -a u x0_f on every phase        a ~ U[0.1, 0.9)
//	3  ll_sag                 d_{h+1} = -d_{h+2} = (sqrt(3)/2) a u cos(w t + phi_h); d_h = 0
//	4  three_phase_sag        d_c = -a u x0_c on every phase
//	5  swell                  d_f = +a u x0_f                       a ~ U[0.1, 0.8)
//	6  interruption           d_f = -a u x0_f                       a ~ U[0.9, 1.0)
//	7  impulsive_transient    d_f = sign psi g(t - ta)
//	8  oscillatory_transient  d_f = one-phase class 5
//	9  notch                  d_f = -sign(x0_f) K sum_k 1[...]
//	10 spike                  d_f = +sign(x0_f) K sum_k 1[...]
//	11 harmonics              d_c = H_c - x0_c on every phase, the same a_k, th_k
//	12 flicker                d_c = (F - 1) x0_c on every phase, the same F
//
// (h+1, h+2 mod 3). Class 2 is a ground fault on an ungrounded or
// impedance-grounded system: the neutral shifts by -a u x0_f, the faulted
// phase sags to 1 - a and the healthy ones swell to sqrt(1 + a + a^2).
// Class 3 is Bollen's type C sag: the line voltage between the faulted
// phases sags to 1 - a, the phases sum to 0.
//
// Draws, in this order: phi ~ U[-pi, pi) (unless cfg.Phase is set); the
// phase: f = r.IntN(3) for classes 1, 2, 5..10, h = r.IntN(3) for class
// 3, none for 0, 4, 11, 12; the parameters of the one-phase class (sag,
// swell, interruption, ...) in Generate's order; snr_db ~ U[SNRMin,
// SNRMax); then N standard normals for phase a, N for b, N for c.
//
// Params: phi (phase a's), the one-phase class's parameters, "phases" (the
// bitmask of the phases a disturbance acts on: d_c may be non-zero and
// Event_c is set only there) and "faulted" (the bitmask of the drawn
// faulted phase(s); the same as phases except slg_sag_swell, where only f
// is faulted; 0 for normal, 7 for the classes on every phase).
//
// Event_c: [t1, t2) on the phases of the amplitude classes 1..6, the
// one-phase event on f for 7..10, the whole record on every phase for 11
// and 12, none on the other phases. Noise per phase: x_c = y_c + sigma_c
// z, sigma_c^2 = P_c 10^{-snr/10}, P_c = (1/N) sum y_c[n]^2, one snr a
// record.
func (PQD3) Generate(cfg Config, class int, r *rand.Rand) Record {
	if err := cfg.Validate(); err != nil {
		panic("data.PQD3.Generate: " + err.Error())
	}
	if class < 0 || class >= PQD3NumClasses {
		panic(fmt.Sprintf("data.PQD3.Generate: class %d out of range [0, %d)", class, PQD3NumClasses))
	}
	n := cfg.N()
	rec := Record{
		Label:  class,
		X:      make([]float64, 3*n),
		D:      make([]float64, 3*n),
		Event:  make([]bool, 3*n),
		Params: make(map[string]float64, 14),
	}
	var phi float64
	if cfg.Phase != nil {
		phi = *cfg.Phase
	} else {
		phi = uniform(r, -math.Pi, math.Pi)
	}
	var sel int // f, or h for ll_sag
	switch class {
	case PQD3Normal, PQD3ThreePhaseSag, PQD3Harmonics, PQD3Flicker:
	default:
		sel = r.IntN(3)
	}
	// The one-phase class's parameters, drawn by the one-phase code with
	// phi fixed (so it draws no phase).
	one := cfg
	one.Phase = &phi
	var s signal
	s.draw(one, pqd3One[class], r, rec.Params)

	phases, faulted := 0, 0
	switch class {
	case PQD3Normal:
	case PQD3ThreePhaseSag, PQD3Harmonics, PQD3Flicker:
		phases, faulted = allPhases, allPhases
	case PQD3SLGSagSwell:
		phases, faulted = allPhases, 1<<sel
	case PQD3LLSag:
		phases = allPhases &^ (1 << sel)
		faulted = phases
	default:
		phases, faulted = 1<<sel, 1<<sel
	}
	rec.Params["phases"], rec.Params["faulted"] = float64(phases), float64(faulted)

	for c := range 3 {
		x, d, ev := rec.X[c*n:(c+1)*n], rec.D[c*n:(c+1)*n], rec.Event[c*n:(c+1)*n]
		pc := s
		pc.phi = phaseOf(phi, c)
		switch {
		case class == PQD3SLGSagSwell && c != sel:
			// The neutral shift -a u x0_f, the faulted phase's d.
			neutralShift(cfg, x, d, ev, pc.phi, s.amp, phaseOf(phi, sel), s.t1, s.t2)
			continue
		case class == PQD3LLSag && c != sel:
			k := math.Sqrt(3) / 2 * -s.amp
			if c == (sel+2)%3 {
				k = -k
			}
			typeC(cfg, x, d, ev, pc.phi, k, phaseOf(phi, sel), s.t1, s.t2)
			continue
		case phases&(1<<c) == 0:
			pc = signal{phi: pc.phi}
		}
		pc.render(cfg, x, d, ev)
	}
	if !cfg.Noise {
		rec.SNRdB = math.Inf(1)
		return rec
	}
	snr := uniform(r, cfg.SNRMin, cfg.SNRMax)
	rec.SNRdB = snr
	rec.Params["snr_db"] = snr
	for c := range 3 {
		x := rec.X[c*n : (c+1)*n]
		var p float64
		for _, v := range x {
			p += v * v
		}
		p /= float64(n)
		sigma := math.Sqrt(p * math.Pow(10, -snr/10))
		for i := range x {
			x[i] += sigma * r.NormFloat64()
		}
	}
	return rec
}

// phaseOf returns phi_c = phi - 2 pi c / 3, the phase of phase c.
func phaseOf(phi float64, c int) float64 { return phi - 2*math.Pi*float64(c)/3 }

// neutralShift writes a healthy phase of an ungrounded ground fault:
// d = amp u(t) sin(w t + phiF) (amp = -a; phiF the faulted phase's phase),
// y = sin(w t + phi) + d, ev = u(t).
func neutralShift(cfg Config, y, d []float64, ev []bool, phi, amp, phiF, t1, t2 float64) {
	w := 2 * math.Pi * cfg.F0
	for i := range y {
		t := float64(i) / cfg.Fs
		var di float64
		if t1 <= t && t < t2 {
			di = amp * math.Sin(w*t+phiF)
			ev[i] = true
		}
		d[i] = di
		y[i] = math.Sin(w*t+phi) + di
	}
}

// typeC writes a faulted phase of a line-to-line fault: d = k u(t)
// cos(w t + phiH) (phiH the healthy phase's phase), y = sin(w t + phi) + d,
// ev = u(t).
func typeC(cfg Config, y, d []float64, ev []bool, phi, k, phiH, t1, t2 float64) {
	w := 2 * math.Pi * cfg.F0
	for i := range y {
		t := float64(i) / cfg.Fs
		var di float64
		if t1 <= t && t < t2 {
			di = k * math.Cos(w*t+phiH)
			ev[i] = true
		}
		d[i] = di
		y[i] = math.Sin(w*t+phi) + di
	}
}

// ChannelNames names the phases: A, B, C (channels 0, 1, 2).
func (PQD3) ChannelNames() []string { return []string{"A", "B", "C"} }
