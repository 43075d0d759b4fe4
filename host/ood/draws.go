package ood

import (
	"fmt"
	"math"
)

// Features writes draw s's penultimate features of the inputs of x to
// dst (one row of D values an input).
type Features func(s int, dst, x []float32) error

// Draws is the feature-space check of a posterior of S draws: one
// Gaussian a draw (FitGaussian) on its own features, and a threshold. An
// input's score is the mean over the draws of its distance:
//
//	score(x) = (1/S) sum_s d_s(f_s(x)),
//
// and it is flagged when the score exceeds Threshold, the (1 - Alpha)
// quantile of the validation inputs' scores.
type Draws struct {
	D         int
	Gaussians []*Gaussian
	Threshold float64
	Alpha     float64
}

// FitDraws fits the check of S draws with D features each on the
// training inputs train (labels y, classes classes) and sets its
// threshold on the validation inputs val (n inputs of inLen values each
// in both). Errors name the draw.
func FitDraws(S, D, inLen int, features Features, train []float32, y []int, classes int, val []float32, alpha float64) (*Draws, error) {
	if S < 1 || D < 1 || inLen < 1 || len(train) != len(y)*inLen || len(val) == 0 || len(val)%inLen != 0 {
		return nil, fmt.Errorf("ood: %d draws of %d features; %d training values for %d labels and %d validation values of inputs of %d: want at least one draw, feature, training and validation input", S, D, len(train), len(y), len(val), inLen)
	}
	if !(alpha > 0 && alpha < 1) {
		return nil, fmt.Errorf("ood: alpha %v; want 0 < alpha < 1", alpha)
	}
	nv := len(val) / inLen
	tf := make([]float32, len(y)*D)
	vf := make([]float32, nv*D)
	vs := make([]float64, nv)
	dist := make([]float64, nv)
	d := &Draws{D: D, Alpha: alpha}
	for s := range S {
		if err := features(s, tf, train); err != nil {
			return nil, fmt.Errorf("draw %d: the training inputs' features: %w", s, err)
		}
		g, err := FitGaussian(tf, y, classes, D)
		if err != nil {
			return nil, fmt.Errorf("draw %d: %w", s, err)
		}
		if err := features(s, vf, val); err != nil {
			return nil, fmt.Errorf("draw %d: the validation inputs' features: %w", s, err)
		}
		g.Distance(dist, vf, nil)
		for i, v := range dist {
			vs[i] += v
		}
		d.Gaussians = append(d.Gaussians, g)
	}
	for i := range vs {
		vs[i] /= float64(S)
	}
	d.Threshold = quantile(vs, 1-alpha)
	return d, nil
}

// Score writes into dst the score of each of the len(dst) inputs of x.
func (d *Draws) Score(dst []float64, features Features, x []float32) error {
	f := make([]float32, len(dst)*d.D)
	dist := make([]float64, len(dst))
	work := make([]float64, 2*d.D)
	clear(dst)
	for s, g := range d.Gaussians {
		if err := features(s, f, x); err != nil {
			return fmt.Errorf("draw %d: features: %w", s, err)
		}
		g.Distance(dist, f, work)
		for i, v := range dist {
			dst[i] += v
		}
	}
	for i := range dst {
		dst[i] /= float64(len(d.Gaussians))
	}
	return nil
}

// Reason is why an input of feature score s is flagged: "" when it is
// not (s <= Threshold).
func (d *Draws) Reason(s float64) string {
	if !(s > d.Threshold) && !math.IsNaN(s) {
		return ""
	}
	return fmt.Sprintf("outside what the model was trained on: its penultimate features lie %.3g from the nearest class's training records (squared Mahalanobis distance, mean over the draws; %.0f%% of validation records lie within %.3g)",
		s, 100*(1-d.Alpha), d.Threshold)
}
