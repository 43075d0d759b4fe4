package ood

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestGaussianClosedForm: in two dimensions, the distance is the squared
// Mahalanobis distance to the nearest class mean under the pooled
// within-class covariance, written out with the 2 x 2 inverse.
func TestGaussianClosedForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const N, D, K = 40, 2, 3
	feats := make([]float32, N*D)
	y := make([]int, N)
	for i := range y {
		y[i] = i % 2 // class 2 has no record
		feats[i*D] = float32(3*float64(y[i]) + rng.NormFloat64())
		feats[i*D+1] = float32(-2*float64(y[i]) + 0.5*rng.NormFloat64() + 0.3*float64(feats[i*D]))
	}
	g, err := FitGaussian(feats, y, K, D)
	if err != nil {
		t.Fatal(err)
	}
	// means and pooled covariance by hand
	var mu [2][2]float64
	var cnt [2]float64
	for i, c := range y {
		mu[c][0] += float64(feats[i*D])
		mu[c][1] += float64(feats[i*D+1])
		cnt[c]++
	}
	for c := range 2 {
		mu[c][0] /= cnt[c]
		mu[c][1] /= cnt[c]
	}
	var a, b, d float64 // [[a b] [b d]]
	for i, c := range y {
		r0, r1 := float64(feats[i*D])-mu[c][0], float64(feats[i*D+1])-mu[c][1]
		a += r0 * r0
		b += r0 * r1
		d += r1 * r1
	}
	a, b, d = a/N, b/N, d/N
	lambda := 1e-6*(a+d)/D + 1e-12
	a, d = a+lambda, d+lambda
	det := a*d - b*b
	maha := func(x0, x1 float64, c int) float64 {
		u0, u1 := x0-mu[c][0], x1-mu[c][1]
		return (d*u0*u0 - 2*b*u0*u1 + a*u1*u1) / det
	}
	pts := []float32{0, 0, 3, -2, 10, 10, -4, 1, 1.5, -1}
	got := make([]float64, len(pts)/2)
	g.Distance(got, pts, nil)
	for i := range got {
		want := math.Min(maha(float64(pts[2*i]), float64(pts[2*i+1]), 0), maha(float64(pts[2*i]), float64(pts[2*i+1]), 1))
		if math.Abs(got[i]-want) > 1e-9*math.Max(1, want) {
			t.Errorf("point %d: distance %.12g, want %.12g", i, got[i], want)
		}
	}
	if g.Means[2] != nil {
		t.Errorf("class 2 has no record, and a mean %v", g.Means[2])
	}
}

// TestGaussianAffineInvariance: the Mahalanobis distance does not change
// when every feature vector goes through the same invertible affine map
// (up to the ridge, 1e-6 of the variance).
func TestGaussianAffineInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const N, D, K = 300, 4, 3
	feats, y := gaussianSample(rng, N, D, K, 1)
	A := make([]float64, D*D)
	for i := range A {
		A[i] = rng.NormFloat64()
	}
	for i := range D {
		A[i*D+i] += 3 // well conditioned
	}
	shift := []float64{5, -1, 2, 0.5}
	tr := func(f []float32) []float32 {
		out := make([]float32, len(f))
		for i := 0; i < len(f)/D; i++ {
			for r := range D {
				s := shift[r]
				for c := range D {
					s += A[r*D+c] * float64(f[i*D+c])
				}
				out[i*D+r] = float32(s)
			}
		}
		return out
	}
	g1, err := FitGaussian(feats, y, K, D)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := FitGaussian(tr(feats), y, K, D)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := gaussianSample(rng, 50, D, K, 2)
	d1, d2 := make([]float64, 50), make([]float64, 50)
	g1.Distance(d1, q, nil)
	g2.Distance(d2, tr(q), nil)
	for i := range d1 {
		if math.Abs(d1[i]-d2[i]) > 1e-4*math.Max(1, d1[i]) {
			t.Errorf("point %d: %g before the map, %g after", i, d1[i], d2[i])
		}
	}
}

// gaussianSample draws N points of K classes, class c centred at 4c in
// every feature, unit variance times spread, labels i mod K.
func gaussianSample(rng *rand.Rand, N, D, K int, spread float64) ([]float32, []int) {
	f := make([]float32, N*D)
	y := make([]int, N)
	for i := range y {
		y[i] = i % K
		for j := range D {
			f[i*D+j] = float32(4*float64(y[i]) + spread*rng.NormFloat64())
		}
	}
	return f, y
}

// TestGaussianFlagsAtTheStatedRate: with the threshold the 99% quantile
// of validation points' distances, fresh points of the same classes are
// flagged at about 1%, and a point 10 standard deviations from every
// class is.
func TestGaussianFlagsAtTheStatedRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const D, K = 6, 4
	train, ty := gaussianSample(rng, 4000, D, K, 1)
	g, err := FitGaussian(train, ty, K, D)
	if err != nil {
		t.Fatal(err)
	}
	val, _ := gaussianSample(rng, 4000, D, K, 1)
	dv := make([]float64, 4000)
	g.Distance(dv, val, nil)
	thr := Quantile(dv, 1-DefaultAlpha)
	const n = 20000
	test, _ := gaussianSample(rng, n, D, K, 1)
	dt := make([]float64, n)
	g.Distance(dt, test, nil)
	flagged := 0
	for _, d := range dt {
		if d > thr {
			flagged++
		}
	}
	a := DefaultAlpha
	rate := float64(flagged) / n
	// the threshold's own sampling error (4000 validation points) adds to the test's
	if math.Abs(rate-a) > 4*math.Sqrt(a*(1-a)/n)+0.004 {
		t.Errorf("%d of %d in-distribution points flagged (%.4f); want about %.2f", flagged, n, rate, a)
	}
	far := make([]float32, D)
	for j := range far {
		far[j] = float32(4*float64(K-1)/2 + 10) // 10 sd off every mean along each axis
	}
	d := make([]float64, 1)
	g.Distance(d, far, nil)
	if !(d[0] > thr) {
		t.Errorf("a point 10 sd away: distance %g, threshold %g: not flagged", d[0], thr)
	}
}

// TestGaussianErrors: bad input is an error naming the record.
func TestGaussianErrors(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		feats []float32
		y     []int
		want  string
	}{
		{nil, nil, "want N x D"},
		{[]float32{1, 2, 3}, []int{0, 1}, "want N x D"},
		{[]float32{1, 2, 3, 4}, []int{0, 5}, "record 1 has label 5"},
		{[]float32{1, 2, nan, 4}, []int{0, 1}, "record 1 feature 0"},
	} {
		_, err := FitGaussian(c.feats, c.y, 2, 2)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FitGaussian(%v, %v): %v; want an error with %q", c.feats, c.y, err, c.want)
		}
	}
}
