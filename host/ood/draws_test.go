package ood

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// drawFeatures is a posterior of draws whose features of a 2-value input
// x are draw s's own linear map of it: (x0 + s x1, x1 - s x0).
func drawFeatures(s int, dst, x []float32) error {
	for i := 0; i < len(x)/2; i++ {
		a, b := x[2*i], x[2*i+1]
		dst[2*i], dst[2*i+1] = a+float32(s)*b, b-float32(s)*a
	}
	return nil
}

// TestDrawsAreTheMeanOfEachDrawsGaussian: FitDraws fits draw s's Gaussian
// on draw s's own features (FitGaussian on them, written out here), a
// score is the mean over the draws of the distances, and the threshold
// is the (1 - alpha) quantile of the validation inputs' scores; Reason is
// empty at and below it and names the score above.
func TestDrawsAreTheMeanOfEachDrawsGaussian(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const S, K = 3, 2
	train, y := gaussianSample(rng, 400, 2, K, 1)
	val, _ := gaussianSample(rng, 200, 2, K, 1)
	test, _ := gaussianSample(rng, 50, 2, K, 2)
	d, err := FitDraws(S, 2, 2, drawFeatures, train, y, K, val, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 50)
	vs := make([]float64, 200)
	for s := range S {
		f := make([]float32, len(train))
		_ = drawFeatures(s, f, train)
		g, err := FitGaussian(f, y, K, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			x   []float32
			dst []float64
		}{{test, want}, {val, vs}} {
			fx := make([]float32, len(c.x))
			_ = drawFeatures(s, fx, c.x)
			dist := make([]float64, len(c.dst))
			g.Distance(dist, fx, nil)
			for i, v := range dist {
				c.dst[i] += v / S
			}
		}
	}
	got := make([]float64, 50)
	if err := d.Score(got, drawFeatures, test); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-9*math.Max(1, want[i]) {
			t.Fatalf("input %d: score %g, the draws' mean %g", i, got[i], want[i])
		}
	}
	if thr := Quantile(vs, 0.95); math.Abs(d.Threshold-thr) > 1e-9*thr || d.Alpha != 0.05 || d.D != 2 || len(d.Gaussians) != S {
		t.Errorf("threshold %g (alpha %g, D %d, %d Gaussians); want %g, 0.05, 2, %d", d.Threshold, d.Alpha, d.D, len(d.Gaussians), thr, S)
	}
	if d.Reason(d.Threshold) != "" || d.Reason(d.Threshold/2) != "" {
		t.Error("a score at or below the threshold has a reason")
	}
	if r := d.Reason(2 * d.Threshold); !strings.Contains(r, "outside what the model was trained on") || !strings.Contains(r, "95%") {
		t.Errorf("a score above the threshold: reason %q", r)
	}
	if r := d.Reason(math.NaN()); r == "" {
		t.Error("a NaN score has no reason")
	}
}

// TestFitDrawsErrors: bad shapes, alpha or a failing draw are errors
// naming what is wrong.
func TestFitDrawsErrors(t *testing.T) {
	x := []float32{0, 0, 1, 1, 2, 2, 3, 3}
	y := []int{0, 0, 1, 1}
	fail := func(s int, dst, x []float32) error {
		if s == 1 {
			return errors.New("the service is gone")
		}
		return drawFeatures(s, dst, x)
	}
	for _, c := range []struct {
		S, D, in int
		f        Features
		train    []float32
		val      []float32
		alpha    float64
		want     string
	}{
		{0, 2, 2, drawFeatures, x, x, 0.1, "at least one draw"},
		{2, 2, 2, drawFeatures, x[:6], x, 0.1, "6 training values for 4 labels"},
		{2, 2, 2, drawFeatures, x, nil, 0.1, "0 validation values"},
		{2, 2, 2, drawFeatures, x, x[:3], 0.1, "3 validation values"},
		{2, 2, 2, drawFeatures, x, x, 1, "alpha 1"},
		{2, 2, 2, fail, x, x, 0.1, "draw 1: the training inputs' features: the service is gone"},
	} {
		_, err := FitDraws(c.S, c.D, c.in, c.f, c.train, y, 2, c.val, c.alpha)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want an error with %q", c, err, c.want)
		}
	}
	d, err := FitDraws(2, 2, 2, drawFeatures, x, y, 2, x, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Score(make([]float64, 4), fail, x); err == nil || !strings.Contains(err.Error(), "draw 1: features") {
		t.Errorf("a draw failing in Score: %v", err)
	}
}
