package ood

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Gaussian is a class-conditional Gaussian model of one network's
// penultimate features with a covariance shared by the classes (Lee et
// al. 2018, "A simple unified framework for detecting out-of-distribution
// samples"), fitted on the training records. A record's distance is its
// squared Mahalanobis distance to the nearest class mean:
//
//	d(f) = min_c (f - mu_c)^T Sigma^{-1} (f - mu_c),
//	mu_c = mean of the features of the training records of label c,
//	Sigma = (1/N) sum_i (f_i - mu_{y_i})(f_i - mu_{y_i})^T + lambda I,
//
// lambda = 1e-6 tr(S)/D + 1e-12 (S the first term: 1e-6 of the mean
// within-class variance), which keeps Sigma invertible when a feature
// never varies (a ReLU unit that is always 0).
// Classes without a training record take no part in the minimum.
type Gaussian struct {
	D     int
	Means [][]float64 // per class, D values; nil for a class without records
	chol  mat.Cholesky
	// pm[c] = Sigma^{-1} mu_c and mpm[c] = mu_c^T Sigma^{-1} mu_c, so that
	// d_c(f) = f^T Sigma^{-1} f - 2 f . pm[c] + mpm[c]
	pm  [][]float64
	mpm []float64
}

// FitGaussian fits the model on the features of N records (feats: N x D,
// row-major) with labels y in 0..classes-1. Errors: no record, features
// that are not N x D, a label out of range, a non-finite feature.
func FitGaussian(feats []float32, y []int, classes, D int) (*Gaussian, error) {
	N := len(y)
	if N == 0 || D <= 0 || len(feats) != N*D {
		return nil, fmt.Errorf("ood: %d feature values for %d records of %d features; want N x D with N > 0", len(feats), N, D)
	}
	g := &Gaussian{D: D, Means: make([][]float64, classes)}
	counts := make([]int, classes)
	for i, c := range y {
		if c < 0 || c >= classes {
			return nil, fmt.Errorf("ood: record %d has label %d; want 0..%d", i, c, classes-1)
		}
		if g.Means[c] == nil {
			g.Means[c] = make([]float64, D)
		}
		counts[c]++
		for j, v := range feats[i*D : (i+1)*D] {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("ood: record %d feature %d is %v; want finite features", i, j, v)
			}
			g.Means[c][j] += float64(v)
		}
	}
	for c, m := range g.Means {
		for j := range m {
			m[j] /= float64(counts[c])
		}
	}
	// S = sum_i r_i r_i^T, r_i the residual from the class mean
	S := make([]float64, D*D)
	r := make([]float64, D)
	for i, c := range y {
		for j, v := range feats[i*D : (i+1)*D] {
			r[j] = float64(v) - g.Means[c][j]
		}
		for a := range D {
			if r[a] == 0 {
				continue
			}
			row := S[a*D : (a+1)*D]
			for b := a; b < D; b++ {
				row[b] += r[a] * r[b]
			}
		}
	}
	var tr float64
	for a := range D {
		tr += S[a*D+a]
	}
	lambda := 1e-6*tr/float64(N*D) + 1e-12
	sym := mat.NewSymDense(D, nil)
	for a := range D {
		for b := a; b < D; b++ {
			v := S[a*D+b] / float64(N)
			if a == b {
				v += lambda
			}
			sym.SetSym(a, b, v)
		}
	}
	if !g.chol.Factorize(sym) {
		return nil, fmt.Errorf("ood: the features' covariance (%d x %d, from %d records) is not positive definite", D, D, N)
	}
	g.pm = make([][]float64, classes)
	g.mpm = make([]float64, classes)
	for c, m := range g.Means {
		if m == nil {
			continue
		}
		v := mat.NewVecDense(D, nil)
		if err := g.chol.SolveVecTo(v, mat.NewVecDense(D, append([]float64(nil), m...))); err != nil {
			return nil, fmt.Errorf("ood: solving for class %d's mean: %w", c, err)
		}
		g.pm[c] = v.RawVector().Data
		g.mpm[c] = dot(m, g.pm[c])
	}
	return g, nil
}

// Distance writes into dst[i] the squared Mahalanobis distance d(f_i) of
// each of the len(dst) records of feats (len(dst) x D) to the nearest
// class mean. work, if not nil, holds 2*D values of scratch.
func (g *Gaussian) Distance(dst []float64, feats []float32, work []float64) {
	D := g.D
	if len(feats) != len(dst)*D {
		panic(fmt.Sprintf("ood: Distance: %d feature values for %d records of %d", len(feats), len(dst), D))
	}
	if len(work) < 2*D {
		work = make([]float64, 2*D)
	}
	f, pf := work[:D], mat.NewVecDense(D, work[D:2*D])
	fv := mat.NewVecDense(D, f) // f's values, as gonum reads them
	for i := range dst {
		for j, v := range feats[i*D : (i+1)*D] {
			f[j] = float64(v)
		}
		if err := g.chol.SolveVecTo(pf, fv); err != nil {
			dst[i] = math.Inf(1)
			continue
		}
		fpf := dot(f, pf.RawVector().Data)
		best := math.Inf(1)
		for c, pm := range g.pm {
			if pm == nil {
				continue
			}
			best = math.Min(best, fpf-2*dot(f, pm)+g.mpm[c])
		}
		dst[i] = math.Max(best, 0) // >= 0 in exact arithmetic
	}
}

func dot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
