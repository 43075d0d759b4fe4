package record

import (
	"fmt"
	"math"
	"slices"
)

// DefaultCycles is the cycles of the system frequency a window holds
// when the target rate is not given: the paper's network was trained on
// 640 samples of 10 cycles of 50 Hz (3200 Hz).
const DefaultCycles = 10

// SystemFrequency is the power system's frequency of rec, 50 or 60 Hz:
// the one within 5 % of the frequency its zero crossings give
// (Recording.EstFreq), else its stated line frequency when that is 50 or
// 60, else 50. why says which, for the import's warnings.
func SystemFrequency(rec *Recording) (f float64, why string) {
	for _, sys := range []float64{50, 60} {
		if rec.EstFreq > 0 && math.Abs(rec.EstFreq-sys) <= 0.05*sys {
			why = fmt.Sprintf("the samples' zero crossings give %.6g Hz", rec.EstFreq)
			if rec.LineFreq > 0 && rec.LineFreq != sys {
				why += fmt.Sprintf(", and the file states %g Hz", rec.LineFreq)
			}
			return sys, why
		}
	}
	if rec.LineFreq == 50 || rec.LineFreq == 60 {
		return rec.LineFreq, fmt.Sprintf("the file states it (the zero crossings give %.3g Hz, near neither 50 nor 60)", rec.EstFreq)
	}
	return 50, fmt.Sprintf("assumed: neither the zero crossings (%.3g Hz) nor the file (%g Hz) say 50 or 60", rec.EstFreq, rec.LineFreq)
}

// cycleRMS returns the RMS of each whole cycle of f Hz in samples lo..hi-1
// of rec's first segment holding lo (cycles with a missing sample are
// left out).
func cycleRMS(rec *Recording, f float64, lo, hi int) []float64 {
	var out []float64
	for _, s := range rec.Segments {
		a, b := max(lo, s.Start), min(hi, s.End)
		n := int(math.Round(s.Rate / f)) // samples a cycle
		if n < 2 {
			continue
		}
		for c := a; c+n <= b; c += n {
			var sq float64
			ok := true
			for _, v := range rec.Samples[c : c+n] {
				if math.IsNaN(v) {
					ok = false
					break
				}
				sq += v * v
			}
			if ok {
				out = append(out, math.Sqrt(sq/float64(n)))
			}
		}
	}
	return out
}

// PreEventRMS is the nominal value --nominal auto takes: the median RMS of
// the whole cycles of f Hz before the trigger when the file states one at
// least two cycles after its first sample, else of the first 5 cycles
// (the median of per-cycle values, so that a cycle of the event does not
// move it). why says which cycles.
func PreEventRMS(rec *Recording, f float64) (rms float64, why string, err error) {
	end := 0
	if !rec.Trigger.IsZero() && !rec.Start.IsZero() {
		if dt := rec.Trigger.Sub(rec.Start).Seconds(); dt >= 2/f {
			for end < len(rec.Samples) && rec.Time(end) < dt {
				end++
			}
			why = "before the trigger"
		}
	}
	if end == 0 && len(rec.Segments) > 0 {
		end = min(len(rec.Samples), int(math.Round(5*rec.Segments[0].Rate/f)))
		why = "of the first 5 cycles"
	}
	c := cycleRMS(rec, f, 0, end)
	if len(c) == 0 {
		return 0, "", fmt.Errorf("record: %s: --nominal auto: no whole cycle of %g Hz without a missing sample %s (accepted: a recording with one, or --nominal V)", rec.Path, f, why)
	}
	slices.Sort(c)
	return c[len(c)/2], fmt.Sprintf("the median RMS of %d cycles %s", len(c), why), nil
}

// medianCycleRMS is the median RMS of the whole cycles of f Hz of the
// recording (0 when it has none), the level lineToLine and
// ratingDisagrees compare a rating with.
func medianCycleRMS(rec *Recording, f float64) float64 {
	c := cycleRMS(rec, f, 0, len(rec.Samples))
	if len(c) == 0 {
		return 0
	}
	slices.Sort(c)
	return c[len(c)/2]
}

// lineToLine reports whether nominal, a rating from the file, is the
// line-to-line value of a phase-to-neutral channel: m, the median RMS of
// the recording's cycles (medianCycleRMS), is within 15 % of
// nominal/sqrt(3) and nearer it than nominal itself.
func lineToLine(m, nominal float64) bool {
	pn := nominal / math.Sqrt(3)
	return m > 0 && math.Abs(m-pn) <= 0.15*pn && math.Abs(m-pn) < math.Abs(m-nominal)
}

// RatingFactor is how far a file's nominal rating may be from the signal
// before the import distrusts it (ratingDisagrees).
const RatingFactor = 2

// ratingDisagrees reports whether nominal, a rating from the file, is
// contradicted by the signal: the pre-event RMS (PreEventRMS) and m, the
// median RMS of all the recording's cycles (medianCycleRMS), are both
// more than RatingFactor times nominal, or both less than
// nominal/RatingFactor. Field recorders write a transformer ratio (100:1,
// 1100:1) where the rating belongs; the pre-event RMS is then the nominal
// taken (v, with how it was found). Both must agree so that a recording
// that is all interruption, or whose event fills its pre-event cycles,
// keeps its rating.
func ratingDisagrees(rec *Recording, f, nominal, m float64) (v float64, how string, ok bool) {
	pre, how, err := PreEventRMS(rec, f)
	if err != nil || !(pre > 0) || !(nominal > 0) || !(m > 0) {
		return 0, "", false
	}
	off := func(x float64) int {
		switch {
		case x > RatingFactor*nominal:
			return 1
		case x < nominal/RatingFactor:
			return -1
		}
		return 0
	}
	if s := off(pre); s == 0 || s != off(m) {
		return 0, "", false
	}
	return pre, how, true
}
