package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/ood"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file checks the inputs of Predict (and Explain) against a
// reference: the labelled records the network was trained on, a data
// folder (PredictOptions.Reference). It is the check a recipe's run makes
// of its records (host/ood's input check and the engine's feature check),
// for inputs that come without a recipe.

// InputCheck is an input's out-of-distribution check.
type InputCheck struct {
	Score   float64 // the input check's score under the predicted class (host/ood)
	Feature float64 // the feature check's score (HasFeature: there is one)
	// HasFeature is false when the draws give no penultimate features.
	HasFeature bool
	OOD        bool   // either score above its threshold
	Reason     string // why, when OOD
}

// refRecords is the most reference records each check is fitted on
// (every k-th record).
const refRecords = 2048

// thin keeps every k-th record of recs, at most max.
func thin(recs []data.Record, max int) []data.Record {
	k := (len(recs) + max - 1) / max
	if k <= 1 {
		return recs
	}
	var out []data.Record
	for i := 0; i < len(recs); i += k {
		out = append(out, recs[i])
	}
	return out
}

// checkInputs checks the inputs in, predicted preds by the S draws whose
// features features gives (nil: no feature check; featureLen D), against
// the records of the folder ref: a tenth of each class (HoldOut, seed 1)
// sets the thresholds, the rest is the training range. rate and f0 are
// the inputs' sampling rate and system frequency (Hz). It returns a
// check an input and notes saying how the checks were fitted.
func checkInputs(ctx context.Context, ref string, rate, f0 float64, in inputs, preds []int, classes []string, S, D int, features ood.Features) ([]InputCheck, []string, error) {
	split, err := data.ReadDir(ref, data.ReadOptions{Channels: in.c})
	if err != nil {
		return nil, nil, fmt.Errorf("--reference: %w", err)
	}
	if split.C() != in.c || len(split.Records) == 0 || len(split.Records[0].X) != in.c*in.t {
		n := 0
		if len(split.Records) > 0 {
			n = len(split.Records[0].X)
		}
		return nil, nil, fmt.Errorf("--reference %s: %d records of %d channel(s), %d values each; the inputs have %d channel(s) x %d samples (accepted: the network's training records, in the inputs' shape)", ref, len(split.Records), split.C(), n, in.c, in.t)
	}
	for i, r := range split.Records {
		if r.Label < 0 || r.Label >= len(classes) {
			return nil, nil, fmt.Errorf("--reference %s: record %d has label %d (accepted: 0..%d, the network's classes)", ref, i, r.Label, len(classes)-1)
		}
	}
	if !(rate > 0 && f0 > 0 && f0 < rate/2) {
		return nil, nil, fmt.Errorf("--fs %v, --f0 %v (accepted: a sampling rate and a system frequency below half of it, Hz)", rate, f0)
	}
	train, val := HoldOut(split.Records, 0.1, 1)
	if len(val) == 0 || len(train) == 0 {
		return nil, nil, fmt.Errorf("--reference %s: %d records leave no tenth of a class to set the thresholds on (accepted: at least 10 records of a class)", ref, len(split.Records))
	}
	train, val = thin(train, refRecords), thin(val, refRecords)
	ds := Datasets{Channels: in.c, Rate: rate, F0: f0}
	tr, va := ToDataset(train), ToDataset(val)
	var names []string
	for c := range in.c {
		names = append(names, fmt.Sprintf("ch%d", c))
	}
	if in.c == 1 {
		names = []string{""}
	}
	inRef, err := ood.Fit(ood.FeatureNames(names), len(classes), measureSplit(ds, tr), tr.Y, measureSplit(ds, va), va.Y, ood.DefaultAlpha)
	if err != nil {
		return nil, nil, fmt.Errorf("--reference %s: %w", ref, err)
	}
	notes := []string{fmt.Sprintf("out-of-distribution check of the inputs: each one's RMS, fundamental frequency and THD per channel against the %d reference records of its predicted class (%s); the threshold %.3g flags %.0f%% of the %d held back", len(train), ref, inRef.Threshold, 100*inRef.Alpha, len(val))}
	feats := measureSplit(ds, sdk.Dataset{X: in.x, N: in.n, Len: in.c * in.t})
	out := make([]InputCheck, in.n)
	for i := range out {
		s, flag, why := inRef.Check(feats[i], preds[i], classes[preds[i]])
		out[i] = InputCheck{Score: s, OOD: flag, Reason: why}
	}
	if features == nil {
		return out, append(notes, "no feature-space out-of-distribution check: the model gives no penultimate features"), nil
	}
	fd, err := ood.FitDraws(S, D, in.c*in.t, features, tr.X, tr.Y, len(classes), va.X, ood.DefaultAlpha)
	if err != nil {
		return nil, nil, fmt.Errorf("--reference %s: the feature check: %w", ref, err)
	}
	scores := make([]float64, in.n)
	if err := fd.Score(scores, features, in.x); err != nil {
		return nil, nil, fmt.Errorf("the feature check of the inputs: %w", err)
	}
	for i, sc := range scores {
		out[i].Feature, out[i].HasFeature = sc, true
		if why := fd.Reason(sc); why != "" {
			out[i].OOD, out[i].Reason = true, joinReasons(out[i].Reason, why)
		}
	}
	notes = append(notes, fmt.Sprintf("feature-space out-of-distribution check of the inputs: the squared Mahalanobis distance to the nearest class on each draw's penultimate features (%d), a Gaussian a draw fitted on the reference records; the threshold %.3g flags %.0f%% of those held back", D, fd.Threshold, 100*fd.Alpha))
	return out, notes, nil
}

// modelFeatures is ood.Features of in-process models, and their feature
// count; nil when a model has none.
func modelFeatures(ctx context.Context, models []nn.Model) (ood.Features, int) {
	D := -1
	for _, m := range models {
		f, ok := m.(nn.Featurer)
		if !ok {
			return nil, 0
		}
		d, err := f.FeatureLen()
		if err != nil || D >= 0 && d != D {
			return nil, 0
		}
		D = d
	}
	return func(s int, dst, x []float32) error {
		return models[s].(nn.Featurer).Features(ctx, dst, x)
	}, D
}

// servedFeatures is ood.Features of served draws (each opened for the
// call), and their feature count; nil when a draw has none.
func servedFeatures(ctx context.Context, refs []sdk.ModelRef, calls driver.ModelCalls) (ood.Features, int) {
	D := -1
	for _, r := range refs {
		m, err := driver.OpenDraw(ctx, sdk.Draw{Served: &r}, calls)
		if err != nil {
			return nil, 0
		}
		err = m.Call(ctx, func(nm nn.Model) error {
			f, ok := nm.(nn.Featurer)
			if !ok {
				return errNoFeatures
			}
			d, err := f.FeatureLen()
			if err == nil && D >= 0 && d != D {
				err = fmt.Errorf("%d features, and draw 0 %d", d, D)
			}
			D = d
			return err
		})
		m.Close()
		if err != nil {
			return nil, 0
		}
	}
	return func(s int, dst, x []float32) error {
		m, err := driver.OpenDraw(ctx, sdk.Draw{Served: &refs[s]}, calls)
		if err != nil {
			return err
		}
		defer m.Close()
		n := len(x) / (len(dst) / D)
		return m.Call(ctx, func(nm nn.Model) error {
			for b0 := 0; b0 < len(dst)/D; b0 += servedBatch { // a forward pass's batch a request
				b1 := min(b0+servedBatch, len(dst)/D)
				if err := nm.(nn.Featurer).Features(ctx, dst[b0*D:b1*D], x[b0*n:b1*n]); err != nil {
					return fmt.Errorf("inputs %d..%d: %w", b0, b1-1, err)
				}
			}
			return nil
		})
	}, D
}

var errNoFeatures = errors.New("no penultimate features")
