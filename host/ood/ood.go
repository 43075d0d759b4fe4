// Package ood says when a window is outside what a model was trained on,
// from the input alone: per channel its RMS, fundamental frequency and
// total harmonic distortion, against the training windows of the class
// the model gave it. A network trained on synthetic disturbances answers
// with confidence on a field recording it has never seen the like of (a
// 0.10 pu open-pole sag called flicker_sag with p = 1.000); this check
// does not depend on the network, so it sees what the posterior does not.
//
// Per class c and feature j, the training windows of label c give the
// range [lo_cj, hi_cj] = [q_0.005, q_0.995] of their values and its width
// w_cj = hi_cj - lo_cj (at least 1% of the feature's median |value| over
// all training windows, so that a feature a class never varies still has
// a scale). A window's score under class c is how far its farthest
// feature lies outside the class's range, in widths of the range:
//
//	score(v, c) = max_j max(0, v_j - hi_cj, lo_cj - v_j) / w_cj,
//
// and it is flagged when the score exceeds the threshold: the (1 - alpha)
// quantile of the validation windows' scores under their own labels, so
// that about a share alpha of windows like the training data's is
// flagged.
package ood

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// PerChannel is the number of features of one channel.
const PerChannel = 3

// DefaultAlpha is the share of in-distribution windows flagged.
const DefaultAlpha = 0.01

// Harmonics is the highest harmonic THD sums (fewer below Nyquist).
const Harmonics = 25

// FeatureNames names the features of C channels, channel-major: "RMS",
// "f0", "THD" with the channel's name when C > 1.
func FeatureNames(channels []string) []string {
	var out []string
	for _, ch := range channels {
		for _, f := range []string{"RMS", "f0", "THD"} {
			if len(channels) > 1 {
				f += " " + ch
			}
			out = append(out, f)
		}
	}
	return out
}

// Measure writes the features of x (C channels of T samples at rate Hz,
// channel-major; f0 the system frequency, Hz) to dst (PerChannel*C
// values): per channel
//
//	RMS = sqrt(mean_t x_t^2),
//	f0  = the frequency of the mean-removed signal's sign changes,
//	      (n - 1) / (2 (t_n - t_1)) for its n linearly interpolated
//	      zero crossings t_i (0 when n < 2),
//	THD = sqrt(sum_{h=2..H} A_h^2) / A_1 (0 when A_1 = 0),
//
// A_h = |sum_t x_t e^{-2 pi i h f t / rate}| the amplitude at the h-th
// harmonic of f, the measured f0 when it lies within half the system
// frequency of it (else the system frequency), H = min(Harmonics, the
// last below Nyquist).
func Measure(dst []float64, x []float32, C, T int, rate, f0 float64) {
	if len(dst) != PerChannel*C || len(x) != C*T || rate <= 0 || f0 <= 0 {
		panic(fmt.Sprintf("ood: Measure: %d features, %d values for %d x %d, rate %v, f0 %v", len(dst), len(x), C, T, rate, f0))
	}
	for c := range C {
		row := x[c*T : (c+1)*T]
		var ss, mean float64
		for _, v := range row {
			ss += float64(v) * float64(v)
			mean += float64(v)
		}
		mean /= float64(T)
		d := dst[c*PerChannel : (c+1)*PerChannel]
		d[0] = math.Sqrt(ss / float64(T))
		d[1] = crossingFrequency(row, mean, rate)
		f := f0
		if math.Abs(d[1]-f0) < f0/2 {
			f = d[1]
		}
		H := min(Harmonics, int(math.Ceil(rate/2/f))-1)
		a1 := amplitude(row, f/rate)
		var hs float64
		for h := 2; h <= H; h++ {
			a := amplitude(row, float64(h)*f/rate)
			hs += a * a
		}
		d[2] = 0
		if a1 > 0 {
			d[2] = math.Sqrt(hs) / a1
		}
	}
}

// crossingFrequency is the frequency of row's sign changes about mean.
func crossingFrequency(row []float32, mean, rate float64) float64 {
	first, last, n := 0.0, 0.0, 0
	prev := float64(row[0]) - mean
	for t := 1; t < len(row); t++ {
		v := float64(row[t]) - mean
		if (prev < 0) != (v < 0) && prev != v {
			at := float64(t-1) + prev/(prev-v) // the linear interpolation's zero
			if n == 0 {
				first = at
			}
			last = at
			n++
		}
		prev = v
	}
	if n < 2 || last == first {
		return 0
	}
	return float64(n-1) / (2 * (last - first) / rate)
}

// amplitude is |sum_t row_t e^{-2 pi i f t}|, f in cycles a sample.
func amplitude(row []float32, f float64) float64 {
	var re, im float64
	s, c := math.Sincos(2 * math.Pi * f)
	cr, ci := 1.0, 0.0 // e^{-2 pi i f t}, by rotation
	for t, v := range row {
		re += float64(v) * cr
		im += float64(v) * ci
		cr, ci = cr*c+ci*s, ci*c-cr*s
		if t%64 == 63 { // renormalise against the rotation's drift
			r := math.Hypot(cr, ci)
			cr, ci = cr/r, ci/r
		}
	}
	return math.Hypot(re, im)
}

// Reference is the training windows' features per class, and the
// threshold fitted on the validation windows.
type Reference struct {
	Names     []string    // the features' names
	Lo, Hi    [][]float64 // per class and feature, the training range: the 0.5% and 99.5% quantiles; nil for a class without training windows
	Width     [][]float64 // the range's width, at least the feature's floor
	Threshold float64
	Alpha     float64
}

// Fit returns the reference of the training windows' features train
// (one slice a window) with labels y, and the threshold from the
// validation windows' features val with labels vy (their scores' 1 -
// alpha quantile). Errors: no training window, a feature count that
// differs from names', a label outside 0..classes-1, alpha outside (0,
// 1), no validation window of a class that has training windows.
func Fit(names []string, classes int, train [][]float64, y []int, val [][]float64, vy []int, alpha float64) (*Reference, error) {
	if len(train) == 0 || len(train) != len(y) || len(val) != len(vy) {
		return nil, fmt.Errorf("ood: %d training windows with %d labels, %d validation windows with %d: want at least one training window and a label each", len(train), len(y), len(val), len(vy))
	}
	if !(alpha > 0 && alpha < 1) {
		return nil, fmt.Errorf("ood: alpha %v; want 0 < alpha < 1", alpha)
	}
	F := len(names)
	r := &Reference{Names: names, Alpha: alpha, Width: make([][]float64, classes), Lo: make([][]float64, classes), Hi: make([][]float64, classes)}
	byClass := make([][][]float64, classes)
	for i, f := range train {
		if len(f) != F {
			return nil, fmt.Errorf("ood: training window %d has %d features; want %d", i, len(f), F)
		}
		if y[i] < 0 || y[i] >= classes {
			return nil, fmt.Errorf("ood: training window %d has label %d; want 0..%d", i, y[i], classes-1)
		}
		byClass[y[i]] = append(byClass[y[i]], f)
	}
	// the scale's floor: 1% of the feature's median |value| over all
	// training windows (a class whose feature never varies, such as the
	// generator's fixed frequency, still tolerates small deviations)
	floor := make([]float64, F)
	col := make([]float64, len(train))
	for j := range F {
		for i, f := range train {
			col[i] = math.Abs(f[j])
		}
		floor[j] = 0.01*quantile(col, 0.5) + 1e-9
	}
	for c, ws := range byClass {
		if len(ws) == 0 {
			continue
		}
		r.Width[c], r.Lo[c], r.Hi[c] = make([]float64, F), make([]float64, F), make([]float64, F)
		v := make([]float64, len(ws))
		for j := range F {
			for i, f := range ws {
				v[i] = f[j]
			}
			r.Lo[c][j], r.Hi[c][j] = quantile(v, 0.005), quantile(v, 0.995)
			r.Width[c][j] = math.Max(r.Hi[c][j]-r.Lo[c][j], floor[j])
		}
	}
	if len(val) == 0 {
		return nil, errors.New("ood: no validation window to fit the threshold on")
	}
	scores := make([]float64, len(val))
	for i, f := range val {
		if len(f) != F || vy[i] < 0 || vy[i] >= classes || r.Lo[vy[i]] == nil {
			return nil, fmt.Errorf("ood: validation window %d: %d features, label %d; want %d features and a label with training windows", i, len(f), vy[i], F)
		}
		scores[i], _ = r.Score(f, vy[i])
	}
	r.Threshold = quantile(scores, 1-alpha)
	return r, nil
}

// Score is the window's distance from class c's training windows (see
// the package comment) and the feature that gives it; +Inf, -1 when the
// class had no training window.
func (r *Reference) Score(f []float64, c int) (float64, int) {
	if c < 0 || c >= len(r.Lo) || r.Lo[c] == nil {
		return math.Inf(1), -1
	}
	best, at := 0.0, 0
	for j, v := range f {
		d := math.Max(0, math.Max(v-r.Hi[c][j], r.Lo[c][j]-v)) / r.Width[c][j]
		if d > best || math.IsNaN(v) {
			best, at = d, j
			if math.IsNaN(v) {
				return math.Inf(1), j
			}
		}
	}
	return best, at
}

// Check is the window's score under class c, whether it is flagged, and
// when it is, why: "outside what the model was trained on: RMS 0.071,
// training 0.61-0.78 (sag)".
func (r *Reference) Check(f []float64, c int, className string) (score float64, flagged bool, why string) {
	s, j := r.Score(f, c)
	if !(s > r.Threshold) {
		return s, false, ""
	}
	if j < 0 {
		return s, true, fmt.Sprintf("outside what the model was trained on: no training window of %s", className)
	}
	return s, true, fmt.Sprintf("outside what the model was trained on: %s %.3g, training %.3g-%.3g (%s)", r.Names[j], f[j], r.Lo[c][j], r.Hi[c][j], className)
}

// Quantile is the q-quantile of v by linear interpolation between order
// statistics (numpy's default); v is sorted in place.
func Quantile(v []float64, q float64) float64 { return quantile(v, q) }

func quantile(v []float64, q float64) float64 {
	sort.Float64s(v)
	p := q * float64(len(v)-1)
	i := int(math.Floor(p))
	if i >= len(v)-1 {
		return v[len(v)-1]
	}
	return v[i] + (p-float64(i))*(v[i+1]-v[i])
}
