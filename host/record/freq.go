package record

import "math"

// EstimateFrequency estimates the fundamental frequency of rec from its
// rising zero crossings. The mean of the samples is removed; a crossing
// counts only after the signal went below -h, h = 0.1 * RMS (hysteresis
// against noise and harmonics); its time is interpolated linearly between
// the two samples around it. Over every run of crossings not broken by a
// gap or a rate change, f = sum(crossings - 1) / sum(t_last - t_first).
// It returns 0 with fewer than two crossings in a run.
func EstimateFrequency(rec *Recording) float64 {
	x := rec.Samples
	mean, n := 0.0, 0
	for _, v := range x {
		if !math.IsNaN(v) {
			mean += v
			n++
		}
	}
	if n == 0 {
		return 0
	}
	mean /= float64(n)
	rms := 0.0
	for _, v := range x {
		if !math.IsNaN(v) {
			rms += (v - mean) * (v - mean)
		}
	}
	rms = math.Sqrt(rms / float64(n))
	if rms == 0 {
		return 0
	}
	h := 0.1 * rms
	periods, span := 0.0, 0.0
	t0 := 0.0
	for _, s := range rec.Segments {
		armed := false
		count, first, last := 0, 0.0, 0.0
		flush := func() {
			if count >= 2 {
				periods += float64(count - 1)
				span += last - first
			}
			count = 0
			armed = false
		}
		for i := s.Start; i < s.End; i++ {
			v := x[i] - mean
			if math.IsNaN(v) {
				flush()
				continue
			}
			if v < -h {
				armed = true
			}
			if armed && i > s.Start && v >= 0 {
				p := x[i-1] - mean
				if !math.IsNaN(p) && p < 0 {
					t := t0 + (float64(i-s.Start-1)+(-p)/(v-p))/s.Rate
					if count == 0 {
						first = t
					}
					last = t
					count++
					armed = false
				}
			}
		}
		flush()
		t0 += float64(s.End-s.Start) / s.Rate
	}
	if periods == 0 || span <= 0 {
		return 0
	}
	return periods / span
}
