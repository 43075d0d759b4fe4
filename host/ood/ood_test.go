package ood

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
)

// sine is A sin(2 pi f t / rate + phase) + a3 sin(3 (2 pi f0 t / rate)),
// T samples.
func sine(T int, rate, f, A, phase, f0, a3 float64) []float32 {
	x := make([]float32, T)
	for t := range x {
		x[t] = float32(A*math.Sin(2*math.Pi*f*float64(t)/rate+phase) + a3*math.Sin(3*2*math.Pi*f0*float64(t)/rate))
	}
	return x
}

// TestMeasureClosedForm: a sine of amplitude A over whole cycles has RMS
// A/sqrt(2) and its own frequency (50.4 Hz, ending mid-cycle, within
// 0.5%), a pure sine THD 0 also at 60 Hz (measured at its own
// frequency); adding a third harmonic of amplitude a gives THD a/A; two
// channels are measured each on its own.
func TestMeasureClosedForm(t *testing.T) {
	const T, rate, f0 = 640, 3200.0, 50.0
	for _, c := range []struct{ f, A, a3 float64 }{{50, 1, 0}, {50, 0.1, 0}, {50, 1, 0.1}, {50.4, 0.8, 0}, {60, 1, 0}} {
		x := sine(T, rate, c.f, c.A, 0.3, f0, c.a3)
		d := make([]float64, PerChannel)
		Measure(d, x, 1, T, rate, f0)
		rms := math.Sqrt(c.A*c.A/2 + c.a3*c.a3/2)
		tol := 1e-4 // whole cycles; 50.4 Hz ends mid-cycle
		if c.f == 50.4 {
			tol = 5e-3
		}
		if math.Abs(d[0]-rms) > tol*rms {
			t.Errorf("%+v: RMS %v, want %v", c, d[0], rms)
		}
		if math.Abs(d[1]-c.f) > 0.01*c.f {
			t.Errorf("%+v: f0 %v, want %v", c, d[1], c.f)
		}
		if c.f != 50.4 && math.Abs(d[2]-c.a3/c.A) > 1e-3 {
			t.Errorf("%+v: THD %v, want %v", c, d[2], c.a3/c.A)
		}
	}
	two := append(sine(T, rate, 50, 1, 0, f0, 0.2), sine(T, rate, 50, 0.5, 1, f0, 0)...)
	d := make([]float64, 2*PerChannel)
	Measure(d, two, 2, T, rate, f0)
	if math.Abs(d[0]-math.Sqrt(0.5+0.02)) > 2e-3 || math.Abs(d[3]-0.5/math.Sqrt2) > 2e-3 || math.Abs(d[2]-0.2) > 1e-3 || d[5] > 1e-3 {
		t.Errorf("two channels: %v", d)
	}
	flat := make([]float32, T)
	d = make([]float64, PerChannel)
	Measure(d, flat, 1, T, rate, f0)
	if d[0] != 0 || d[1] != 0 || d[2] != 0 {
		t.Errorf("a flat line: %v, want zeros", d)
	}
}

// features measures every record of a split.
func features(recs []data.Record, rate, f0 float64) ([][]float64, []int) {
	var fs [][]float64
	var ys []int
	for _, r := range recs {
		x := make([]float32, len(r.X))
		for i, v := range r.X {
			x[i] = float32(v)
		}
		d := make([]float64, PerChannel)
		Measure(d, x, 1, len(x), rate, f0)
		fs, ys = append(fs, d), append(ys, r.Label)
	}
	return fs, ys
}

// TestFitFlagsAtTheStatedRate: fitted on the generator's training and
// validation windows, the check flags fresh test windows of the same
// distribution under their own labels at about alpha (within a binomial
// 4-sigma bound), and flags a deep sag (0.10 pu) or a 60 Hz window
// scored as a normal one, naming the feature and the training range.
func TestFitFlagsAtTheStatedRate(t *testing.T) {
	cfg := data.DefaultConfig()
	ps, err := data.MakePaperSplits(context.Background(), cfg, 7, 120, 0.3, 1, 60)
	if err != nil {
		t.Fatal(err)
	}
	names := FeatureNames([]string{"ch0"})
	tr, ty := features(ps.Train.Records, cfg.Fs, cfg.F0)
	va, vy := features(ps.Val.Records, cfg.Fs, cfg.F0)
	const alpha = 0.05
	ref, err := Fit(names, 16, tr, ty, va, vy, alpha)
	if err != nil {
		t.Fatal(err)
	}
	te, yy := features(ps.Tests[0].Records, cfg.Fs, cfg.F0)
	flagged := 0
	for i, f := range te {
		if _, ok, _ := ref.Check(f, yy[i], "c"); ok {
			flagged++
		}
	}
	n := float64(len(te))
	rate := float64(flagged) / n
	t.Logf("flagged %d of %d test windows (%.3f), alpha %.2f, threshold %.3g", flagged, len(te), rate, alpha, ref.Threshold)
	if bound := 4 * math.Sqrt(alpha*(1-alpha)/n); math.Abs(rate-alpha) > bound {
		t.Errorf("flagged %d of %d test windows (%.3f); want about alpha = %.2f (within %.3f)", flagged, len(te), rate, alpha, bound)
	}
	normal := 0 // data.ClassNames[0]
	T := len(ps.Train.Records[0].X)
	for _, c := range []struct {
		x    []float32
		want string
	}{
		{sine(T, cfg.Fs, 50, 0.1, 0, 50, 0), "RMS"},
		{sine(T, cfg.Fs, 60, 1, 0, 50, 0), "f0"},
	} {
		f := make([]float64, PerChannel)
		Measure(f, c.x, 1, T, cfg.Fs, cfg.F0)
		s, ok, why := ref.Check(f, normal, "normal")
		if !ok || !strings.Contains(why, "outside what the model was trained on: "+c.want) || !strings.Contains(why, "(normal)") {
			t.Errorf("%s: score %v (threshold %v), flagged %v: %q", c.want, s, ref.Threshold, ok, why)
		}
	}
}

// TestFitErrors: inputs Fit cannot use are errors saying what it wants.
func TestFitErrors(t *testing.T) {
	names := []string{"a"}
	one := [][]float64{{1}}
	for _, c := range []struct {
		train [][]float64
		y     []int
		val   [][]float64
		vy    []int
		alpha float64
		want  string
	}{
		{nil, nil, one, []int{0}, 0.1, "at least one training window"},
		{one, []int{0}, one, []int{0}, 1, "0 < alpha < 1"},
		{[][]float64{{1, 2}}, []int{0}, one, []int{0}, 0.1, "has 2 features; want 1"},
		{one, []int{5}, one, []int{0}, 0.1, "label 5; want 0..1"},
		{one, []int{0}, one, []int{1}, 0.1, "a label with training windows"},
		{one, []int{0}, nil, nil, 0.1, "no validation window"},
	} {
		if _, err := Fit(names, 2, c.train, c.y, c.val, c.vy, c.alpha); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v; want one saying %q", err, c.want)
		}
	}
}
