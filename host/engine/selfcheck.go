package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/uaxai/uaxai/host/ood"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file is a posterior's check of itself: the feature-space
// out-of-distribution score of every record it predicts (host/ood's
// Gaussian, one a draw, on the draw's penultimate features) and its
// predictions on the plan's held-out records, for the model's quality
// beside a recording's answers.

// MaxCheckRecords is the most training (and validation) records the
// feature check is fitted (and its threshold set) on: every k-th record,
// k = ceil(N / MaxCheckRecords).
const MaxCheckRecords = 2048

// FeatureCheck is how a posterior's feature-space out-of-distribution
// score was fitted. A record's score is the mean over the S draws of its
// squared Mahalanobis distance to the nearest class (ood.Gaussian) on
// the draw's penultimate features:
//
//	score(x) = (1/S) sum_s min_c (f_s(x) - mu_sc)^T Sigma_s^{-1} (f_s(x) - mu_sc),
//
// mu_sc and Sigma_s fitted on draw s's features of the training records,
// and x is flagged when score(x) > Threshold, the (1 - Alpha) quantile of
// the validation records' scores.
type FeatureCheck struct {
	Features  int     `json:"features"`           // D, the penultimate layer's size
	Train     int     `json:"training_records"`   // records fitted on
	Val       int     `json:"validation_records"` // records the threshold is set on
	Threshold float64 `json:"threshold"`
	Alpha     float64 `json:"alpha"`
}

// posteriorCheck is what the check of a posterior keeps in a process:
// the fitted Gaussians (nil without a feature check, Note saying why),
// and the predictive mean of the held-out records.
type posteriorCheck struct {
	draws   *ood.Draws
	Feature *FeatureCheck
	Note    string    // why there is no feature check ("" when there is)
	HeldOut []float64 // the predictive mean on Plan.HeldOut, row-major (nil: none)
}

// everyKth is the records of d the check uses: every k-th, at most max.
func everyKth(d sdk.Dataset, max int) (x []float32, y []int) {
	k := (d.N + max - 1) / max
	for i := 0; i < d.N; i += k {
		x = append(x, d.X[i*d.Len:(i+1)*d.Len]...)
		y = append(y, d.Y[i])
	}
	return x, y
}

// errNoFeatures is a draw's model without penultimate features.
var errNoFeatures = errors.New("no penultimate features")

// drawFeatures is ood.Features of the draws: draw s's features of the
// inputs of x, in batches on the plan's workers.
func (e *exec) drawFeatures(ctx context.Context, models []*driver.DrawModel, D int) ood.Features {
	in := e.p.Arch.InChannels * e.p.Arch.InLen
	return func(s int, dst, x []float32) error {
		return parallelRange(ctx, 0, len(x)/in, e.p.Batch, e.p.Workers, func(ctx context.Context, b0, b1 int) error {
			return models[s].Call(ctx, func(nm nn.Model) error {
				f, ok := nm.(nn.Featurer)
				if !ok {
					return errNoFeatures
				}
				return f.Features(ctx, dst[b0*D:b1*D], x[b0*in:b1*in])
			})
		})
	}
}

// featureLen is the draws' feature count, or why they have none.
func featureLen(ctx context.Context, models []*driver.DrawModel) (int, error) {
	D := -1
	for s, m := range models {
		err := m.Call(ctx, func(nm nn.Model) error {
			f, ok := nm.(nn.Featurer)
			if !ok {
				return fmt.Errorf("draw %d: its model (%T) gives no penultimate features", s, nm)
			}
			d, err := f.FeatureLen()
			if err != nil {
				return fmt.Errorf("draw %d: %w", s, err)
			}
			if D >= 0 && d != D {
				return fmt.Errorf("draw %d has %d features, draw 0 %d", s, d, D)
			}
			D = d
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return D, nil
}

// checkOf is posterior pi's check: kept in this process, or computed
// (every process that explains the posterior's records computes the
// same bytes: the records are fixed and every sum runs in record order).
func (e *exec) checkOf(ctx context.Context, pi int) (*posteriorCheck, error) {
	if c, ok := e.checks[pi]; ok {
		return c, nil
	}
	_, models, err := e.drawsOf(ctx, pi)
	if err != nil {
		return nil, err
	}
	ps := e.p.Posteriors[pi]
	c := &posteriorCheck{}
	if e.p.HeldOut.N > 0 {
		k := e.p.Arch.Classes()
		sum := make([]float64, e.p.HeldOut.N*k)
		if err := sumDrawProbs(ctx, sum, models, e.p.HeldOut.X, nil, nil); err != nil {
			return nil, fmt.Errorf("posterior %s: predicting the held-out records: %w", ps.Name(), err)
		}
		scale(sum, 1/float64(len(models)))
		c.HeldOut = sum
	}
	if why, err := e.fitFeatureCheck(ctx, c, models); err != nil {
		// a failed model call: the draws' service may be stopped, and
		// nothing after it could be trusted
		return nil, fmt.Errorf("posterior %s: the out-of-distribution check: %w", ps.Name(), driver.ModelCallsOf(e.posts[pi]).Expire(err))
	} else if why != "" {
		c.draws, c.Feature = nil, nil
		c.Note = fmt.Sprintf("no feature-space out-of-distribution check of %s: %s", ps.Name(), why)
	}
	e.checks[pi] = c
	return c, nil
}

// fitFeatureCheck fits c's Gaussians on the training records and sets
// the threshold on the validation records. It returns why there is no
// check when the recipe or the model gives none, and an error when a
// model call fails.
func (e *exec) fitFeatureCheck(ctx context.Context, c *posteriorCheck, models []*driver.DrawModel) (string, error) {
	if e.p.TrainSet.N == 0 || e.p.ValSet.N == 0 {
		return "the recipe has no training and validation records to fit it on", nil
	}
	D, err := featureLen(ctx, models)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return err.Error(), nil
	}
	tx, ty := everyKth(e.p.TrainSet, MaxCheckRecords)
	vx, _ := everyKth(e.p.ValSet, MaxCheckRecords)
	in := e.p.Arch.InChannels * e.p.Arch.InLen
	d, err := ood.FitDraws(len(models), D, in, e.drawFeatures(ctx, models, D), tx, ty, e.p.Arch.Classes(), vx, ood.DefaultAlpha)
	if err != nil {
		return "", err
	}
	c.draws = d
	c.Feature = &FeatureCheck{Features: D, Train: len(ty), Val: len(vx) / in, Threshold: d.Threshold, Alpha: d.Alpha}
	return "", nil
}
