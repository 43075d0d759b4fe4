package engine

import (
	"context"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// PredictMean writes into dst[i] the class of the posterior predictive
// mean of input i of x (len(dst) inputs, classes outputs each):
//
//	dst[i] = argmax_c (1/S) sum_s p(c | x_i, theta_s)
//
// ties going to the lower class. A failed call of a draw is the error,
// naming the draw.
func PredictMean(ctx context.Context, dst []int, models []nn.Model, x []float32, classes int) error {
	sum := make([]float64, len(dst)*classes)
	if err := sumProbs(ctx, sum, models, x); err != nil {
		return err
	}
	argmaxRows(dst, sum, classes)
	return nil
}

// sumProbs writes into dst the sum over the draws of p(c | x_i, theta_s).
func sumProbs(ctx context.Context, dst []float64, models []nn.Model, x []float32) error {
	clear(dst)
	pr := make([]float32, len(dst))
	for s, m := range models {
		if err := m.Probs(ctx, pr, x); err != nil {
			return fmt.Errorf("draw %d: %w", s, err)
		}
		for j, v := range pr {
			dst[j] += float64(v)
		}
	}
	return nil
}

// Prediction is a posterior's predictions on every split (index split,
// then record; Probs row major, Arch.Classes() a record): with p_s the
// class probabilities of draw s of S and p = (1/S) sum_s p_s their mean,
//
//	Probs[i]       = p                             (the predictive mean)
//	MeanEntropy[i] = (1/S) sum_s H(p_s),  H(q) = -sum_c q_c ln q_c   (nats)
//	Agree[i]       = |{s : argmax p_s = argmax p}| / S
//
// so that H(p) - MeanEntropy is the mutual information between the
// prediction and the draw (the epistemic part of the predictive
// entropy), and Agree the share of draws that vote for the predicted
// class (ties: the lower class, as everywhere).
//
// The posterior's check of itself (selfcheck.go) comes with them:
// FeatureOOD[i] is each record's feature-space out-of-distribution score
// (FeatureCheck's; nil when the posterior has no feature check, and
// FeatureNote says why), and HeldOut the predictive mean on the plan's
// held-out records (Plan.HeldOut; row major; nil without them).
type Prediction struct {
	Probs, MeanEntropy, Agree [][]float64
	FeatureOOD                [][]float64
	FeatureCheck              *FeatureCheck
	FeatureNote               string
	HeldOut                   []float64
}

// Entropy is H(q) = -sum_c q_c ln q_c in nats (0 ln 0 = 0).
func Entropy(q []float64) float64 {
	var h float64
	for _, v := range q {
		if v > 0 {
			h -= v * math.Log(v)
		}
	}
	return h
}

// sumDrawProbs is sumProbs over the draws as the host opened them: a
// served draw's probabilities are its model service's, and a call that
// fails is the error, naming the draw. If ent is not nil it gets each
// record's sum over the draws of H(p_s), and votes (classes a record) the
// number of draws whose argmax is each class.
func sumDrawProbs(ctx context.Context, dst []float64, models []*driver.DrawModel, x []float32, ent []float64, votes []int32) error {
	clear(dst)
	clear(ent)
	clear(votes)
	pr := make([]float32, len(dst))
	var k int
	if ent != nil {
		k = len(dst) / len(ent)
	}
	row := make([]float64, k)
	return eachDrawProbs(ctx, models, x, pr, func(int) {
		for j, v := range pr {
			dst[j] += float64(v)
		}
		for i := range ent {
			best := 0
			for c := range k {
				row[c] = float64(pr[i*k+c])
				if row[c] > row[best] {
					best = c
				}
			}
			ent[i] += Entropy(row)
			votes[i*k+best]++
		}
	})
}

// eachDrawProbs writes each draw's class probabilities of x into pr and
// calls f(s) after draw s, in draw order; a failed call is the error,
// naming the draw.
func eachDrawProbs(ctx context.Context, models []*driver.DrawModel, x, pr []float32, f func(s int)) error {
	for s, m := range models {
		err := m.Call(ctx, func(nm nn.Model) error { return nm.Probs(ctx, pr, x) })
		if err != nil {
			return fmt.Errorf("draw %d: %w", s, err)
		}
		f(s)
	}
	return nil
}

func scale(dst []float64, a float64) {
	for j := range dst {
		dst[j] *= a
	}
}

// argmaxRows writes into dst[i] the index of the largest value of row i
// of the row-major m (classes columns), ties going to the lower index.
func argmaxRows(dst []int, m []float64, classes int) {
	for i := range dst {
		row := m[i*classes : (i+1)*classes]
		best := 0
		for c, v := range row {
			if v > row[best] {
				best = c
			}
		}
		dst[i] = best
	}
}
