package ood

import (
	"math"
	"strings"
	"testing"
)

// TestQuantileIsNumpys: Quantile interpolates linearly between order
// statistics, numpy's default: on 1, 2, 3, 4 (given out of order) the
// 0, 0.25, 0.5, 0.9 and 1 quantiles are 1, 1.75, 2.5, 3.7 and 4.
func TestQuantileIsNumpys(t *testing.T) {
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.25, 1.75}, {0.5, 2.5}, {0.9, 3.7}, {1, 4}} {
		if got := Quantile([]float64{3, 1, 4, 2}, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("q %g: %g, want %g", c.q, got, c.want)
		}
	}
	if got := Quantile([]float64{5}, 0.3); got != 5 {
		t.Errorf("one value: %g", got)
	}
}

// TestFeatureNamesByChannel: one channel's features are "RMS", "f0",
// "THD"; with two, each carries its channel's name.
func TestFeatureNamesByChannel(t *testing.T) {
	if got := strings.Join(FeatureNames([]string{"A"}), ","); got != "RMS,f0,THD" {
		t.Errorf("one channel: %s", got)
	}
	if got := strings.Join(FeatureNames([]string{"A", "B"}), ","); got != "RMS A,f0 A,THD A,RMS B,f0 B,THD B" {
		t.Errorf("two channels: %s", got)
	}
}

// sines is sum_k amps[k] sin(2 pi freqs[k] t / rate + phases[k]) over T
// samples.
func sines(T int, rate float64, freqs, amps, phases []float64) []float32 {
	x := make([]float32, T)
	for t := range x {
		var v float64
		for k, f := range freqs {
			v += amps[k] * math.Sin(2*math.Pi*f*float64(t)/rate+phases[k])
		}
		x[t] = float32(v)
	}
	return x
}

// TestMeasureFrequencyAndHarmonics: the zero-crossing frequency of sines
// of 45, 50 and 55 Hz (whole cycles in the window) at three phases, with
// an offset of 0.5, is within 0.001 Hz (crossings about the mean,
// linearly interpolated: without the interpolation the error is up to a
// sample's worth, 0.08 Hz); THD sums the harmonics up to the last below Nyquist
// (rate 1 kHz, 50 Hz: the 9th, 450 Hz), never the component at Nyquist
// itself.
func TestMeasureFrequencyAndHarmonics(t *testing.T) {
	d := make([]float64, PerChannel)
	for _, f := range []float64{45, 50, 55} { // whole cycles: the mean is the offset
		for _, ph := range []float64{0.3, 1.7, 2.9} {
			x := sines(640, 3200, []float64{f}, []float64{1}, []float64{ph})
			for t := range x {
				x[t] += 0.5 // the crossings are about the mean
			}
			Measure(d, x, 1, 640, 3200, 50)
			if math.Abs(d[1]-f) > 1e-3 {
				t.Errorf("f0 of a %g Hz sine at phase %g with an offset: %g", f, ph, d[1])
			}
		}
	}
	T := 1000
	x := sines(T, 1000, []float64{50, 450}, []float64{1, 0.1}, []float64{0, 0})
	for t := range x {
		x[t] += float32(0.2 * math.Cos(math.Pi*float64(t))) // at Nyquist, 500 Hz
	}
	Measure(d, x, 1, T, 1000, 50)
	if math.Abs(d[2]-0.1) > 1e-3 {
		t.Errorf("THD with a 9th harmonic of 0.1 and a Nyquist component: %g, want 0.1", d[2])
	}
	// a measured frequency far from the system's is not used for the
	// harmonics: a 120 Hz sine on a 50 Hz system has no 50 Hz fundamental
	Measure(d, sines(640, 3200, []float64{120}, []float64{1}, []float64{0}), 1, 640, 3200, 50)
	if math.Abs(d[1]-120) > 0.05 || d[2] < 1 {
		t.Errorf("a 120 Hz sine on a 50 Hz system: f0 %g, THD %g (want 120 and the 50 Hz fundamental's near-zero amplitude below its harmonics)", d[1], d[2])
	}
}

// TestMeasurePanicsOnBadArguments: a rate or system frequency of 0 is a
// programmer's error.
func TestMeasurePanicsOnBadArguments(t *testing.T) {
	for _, c := range []struct{ rate, f0 float64 }{{0, 50}, {3200, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("rate %g, f0 %g: no panic", c.rate, c.f0)
				}
			}()
			Measure(make([]float64, PerChannel), make([]float32, 64), 1, 64, c.rate, c.f0)
		}()
	}
}

// TestFitWidthsAndScore: a class's range is its features' 0.5%-99.5%
// quantiles; a feature that never varies in the class gets the floor,
// 1% of the feature's median |value| over all training windows; a
// window's score is its farthest feature's distance outside the range in
// widths, 0 inside; the reason names that feature; a label past the
// classes (equal to their count) is an error.
func TestFitWidthsAndScore(t *testing.T) {
	names := []string{"a", "b"}
	var train [][]float64
	var y []int
	for i := range 201 {
		train = append(train, []float64{float64(i), 10}) // class 0: a spread, b fixed at 10
		y = append(y, 0)
	}
	r, err := Fit(names, 1, train, y, train[:10], y[:10], 0.5)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := Quantile([]float64{0, 200}, 0.005), Quantile([]float64{0, 200}, 0.995) // 1 and 199
	if math.Abs(r.Lo[0][0]-lo) > 1e-9 || math.Abs(r.Hi[0][0]-hi) > 1e-9 {
		t.Errorf("range of a: %g..%g, want %g..%g", r.Lo[0][0], r.Hi[0][0], lo, hi)
	}
	floor := 0.01*10 + 1e-9
	if math.Abs(r.Width[0][1]-floor) > 1e-12 {
		t.Errorf("width of the fixed feature: %g, want the floor %g", r.Width[0][1], floor)
	}
	for _, c := range []struct {
		f    []float64
		want float64
		at   int
	}{
		{[]float64{100, 10}, 0, 0},
		{[]float64{hi + 2*(hi-lo), 10}, 2, 0},
		{[]float64{100, 10 + 3*floor}, 3, 1},
		{[]float64{lo - (hi - lo), 10 - 0.5*floor}, 1, 0},
	} {
		s, at := r.Score(c.f, 0)
		if math.Abs(s-c.want) > 1e-6 || at != c.at {
			t.Errorf("%v: score %g at %d, want %g at %d", c.f, s, at, c.want, c.at)
		}
	}
	if _, flag, why := r.Check([]float64{100, 10 + 3*floor}, 0, "x"); !flag || !strings.Contains(why, "b 10") {
		t.Errorf("flagged %v, reason %q: want b named", flag, why)
	}
	if _, err := Fit(names, 1, train, append(y[:200:200], 1), train[:10], y[:10], 0.5); err == nil || !strings.Contains(err.Error(), "label 1; want 0..0") {
		t.Errorf("a label equal to the class count: %v", err)
	}
}

// TestGaussianEdges: features of no dimension and a label equal to the
// class count are errors; the error for a label names the labels
// accepted.
func TestGaussianEdges(t *testing.T) {
	if _, err := FitGaussian(nil, []int{0}, 2, 0); err == nil {
		t.Error("D = 0: no error")
	}
	if _, err := FitGaussian([]float32{1, 2, 3, 4}, []int{0, 2}, 2, 2); err == nil || !strings.Contains(err.Error(), "label 2; want 0..1") {
		t.Errorf("a label equal to the class count: %v", err)
	}
}
