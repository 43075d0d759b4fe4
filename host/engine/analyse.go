package engine

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/metric"
)

// Distortion is an input distortion of the sensitivity experiment
// (tab:sensitivity): every explained batch is explained once more with
// its inputs distorted, under the same draws, targets and explainer seeds
// (the aligned coupling of Corollary cor:input), and the maps reach
// Analysis.Batch aligned back to the clean input's coordinates.
type Distortion struct {
	Name string
	// Apply writes into dst the distorted copy of record x (one record,
	// every channel) of the named split. It must be a pure function of
	// its arguments, so that a run gives the same bytes for any number
	// of workers.
	Apply func(dst, x []float32, split string, record int)
	// Align, if not nil, maps a map of the distorted input back to the
	// clean input's coordinates (the inverse of a circular shift): it
	// writes into dst. Nil is the identity.
	Align func(dst, r []float64)
}

// Batch is what Analysis.Batch receives of one explained batch: the
// records of one test split with a non-empty mask, their inputs, masks,
// every draw's map (and every repeat's and distortion's), and the map
// summaries. Slices are the engine's: Analyse may keep them (the engine
// does not reuse them) but must not change them.
type Batch struct {
	Posterior, Explainer Step
	Split                int
	SplitName            string
	Records              []int       // record indices in the split
	Labels, Targets      []int       // true class (-1: unlabelled), explained class
	Preds                []int       // predicted class (predictive mean)
	Probs                [][]float64 // predictive mean probabilities, per record
	// DrawProbs[j][s] is draw s's own probability of record j's
	// predicted class, p_s(Preds[j] | x_j): the spread of the prediction
	// over the draws whose mean is Probs[j][Preds[j]].
	DrawProbs [][]float64
	X         [][]float32 // clean inputs
	Masks     [][]bool    // ground-truth masks (nil for an unlabelled split)
	// Channels is the split's C (TestSplit.NumChannels) and ChannelNames
	// its channels' names (TestSplit.ChannelLabels): inputs, masks and
	// maps are C rows of T values, channel-major.
	Channels     int
	ChannelNames []string
	// ClassNames is the plan's (nil: the one-phase PQD's).
	ClassNames []string
	// Maps[j][s] is the map of record j under draw s.
	Maps [][][]float64
	// Repeats[j][s][k] is the map of record j under draw s and explainer
	// seed k (k = 0 is Maps[j][s]); nil unless Analysis.Repeats() > 1 and the
	// explainer is stochastic.
	Repeats [][][][]float64
	// Distorted[d][j][s] is the map of record j under draw s with
	// distortion d applied to its input, aligned back; nil without
	// Analysis.Distortions().
	Distorted [][][][]float64
	// Summaries[i][j] is map summary i's map of record j (nil for a set or
	// band summary, or one that was not run).
	Summaries [][][]float64
	// DrawScores[k][j][s] is Plan.Metrics[k]'s score of record j's map
	// under draw s, and SummaryScores[k][i][j] its score of summary i's
	// map of record j (nil for a summary without maps); nil without
	// metrics.
	DrawScores, SummaryScores [][][]metric.Score
	// RandomisedW1[j], with Plan.RandomiseDraws, is the mean over the
	// samples of record j of the 1-Wasserstein distance between its S
	// maps and its S maps under the draws re-initialised; nil, with the
	// reason in RandomisedWhy, when the draws cannot be re-initialised.
	RandomisedW1  []float64
	RandomisedWhy string
}

// extraMaps explains the batch again: under each repeat seed k >= 1 (a
// stochastic explainer, Plan.Repeats > 1), and under each distortion.
func (b *block) extraMaps(ctx context.Context, ab *Batch, x []float32, ts TestSplit) error {
	n := len(ab.Records)
	S := len(b.step.Models)
	in := Inputs{Split: ts.Name, Records: ab.Records, X: x, Targets: ab.Targets}
	if b.repeats > 1 && b.step.Stochastic {
		ab.Repeats = make([][][][]float64, n)
		for j := range ab.Repeats {
			ab.Repeats[j] = make([][][]float64, S)
			for s := range ab.Repeats[j] {
				ab.Repeats[j][s] = make([][]float64, b.repeats)
				ab.Repeats[j][s][0] = ab.Maps[j][s]
			}
		}
		for k := 1; k < b.repeats; k++ {
			maps := newMaps(n, S)
			in.Repeat = k
			if err := b.step.Explain(ctx, maps, in); err != nil {
				return err
			}
			for j := range maps {
				for s := range maps[j] {
					ab.Repeats[j][s][k] = maps[j][s]
				}
			}
		}
		in.Repeat = 0
	}
	if len(b.dists) == 0 {
		return nil
	}
	L := ts.Data.Len
	ab.Distorted = make([][][][]float64, len(b.dists))
	xd := make([]float32, len(x))
	for d, dist := range b.dists {
		for j, r := range ab.Records {
			dist.Apply(xd[j*L:(j+1)*L], x[j*L:(j+1)*L], ts.Name, r)
		}
		ab.Distorted[d] = newMaps(n, S)
		in.X, in.Variant = xd, "distortion "+dist.Name
		if err := b.step.Explain(ctx, ab.Distorted[d], in); err != nil {
			return err
		}
		if dist.Align == nil {
			continue
		}
		for j := range ab.Distorted[d] {
			for s, m := range ab.Distorted[d][j] {
				al := make([]float64, len(m))
				dist.Align(al, m)
				ab.Distorted[d][j][s] = al
			}
		}
	}
	return nil
}

// analyse hands the batch to the plan's Analysis, with its repeats and
// distortions explained first.
func (b *block) analyse(ctx context.Context, si int, idx []int, maps, sumMaps [][][]float64, models []*driver.DrawModel) error {
	if b.p.Analysis == nil || len(idx) == 0 {
		return nil
	}
	ts := b.tests[si]
	d := ts.Data
	k := b.p.Arch.Classes()
	ab := &Batch{Posterior: b.ps, Explainer: b.es, Split: si, SplitName: ts.Name, Records: idx, Maps: maps, Summaries: sumMaps,
		Channels: ts.NumChannels(), ChannelNames: ts.ChannelLabels(), ClassNames: b.p.ClassNames,
		Labels: make([]int, len(idx)), Targets: make([]int, len(idx)), Preds: make([]int, len(idx)),
		Probs: make([][]float64, len(idx)), X: make([][]float32, len(idx)), Masks: make([][]bool, len(idx))}
	x := make([]float32, 0, len(idx)*d.Len)
	for j, r := range idx {
		ab.Labels[j] = b.label(si, r)
		ab.Targets[j] = b.target(si, r)
		ab.Preds[j] = b.preds[si][r]
		ab.Probs[j] = b.probs[si][r*k : (r+1)*k]
		ab.X[j] = d.Row(r)
		if !ts.Unlabelled {
			ab.Masks[j] = ts.Masks[r]
		}
		x = append(x, d.Row(r)...)
	}
	if err := setDrawProbs(ctx, ab, models, x, k); err != nil {
		return fmt.Errorf("%s, split %s records %d..%d: %w", b.ps.Name(), ts.Name, idx[0], idx[len(idx)-1], err)
	}
	if err := b.extraMaps(ctx, ab, x, ts); err != nil {
		return err
	}
	if len(b.p.Metrics) > 0 {
		if err := b.metricScores(ctx, ab, x, models, ts); err != nil {
			return err
		}
	}
	if b.p.RandomiseDraws {
		if err := b.randomisedW1(ctx, ab, x, models, ts); err != nil {
			return err
		}
	}
	if err := b.p.Analysis.Batch(ab); err != nil {
		return fmt.Errorf("%s / %s, split %s records %d..%d: %w", b.ps.Name(), b.es.Label, ts.Name, idx[0], idx[len(idx)-1], err)
	}
	return nil
}

// setDrawProbs sets ab.DrawProbs: each draw's probability of each record's
// predicted class, p_s(c_j | x_j) with c_j = ab.Preds[j], from one call
// of each draw on the batch's inputs x (the records one after another).
func setDrawProbs(ctx context.Context, ab *Batch, models []*driver.DrawModel, x []float32, k int) error {
	n := len(ab.Records)
	ab.DrawProbs = make([][]float64, n)
	for j := range ab.DrawProbs {
		ab.DrawProbs[j] = make([]float64, len(models))
	}
	pr := make([]float32, n*k)
	return eachDrawProbs(ctx, models, x, pr, func(s int) {
		for j, c := range ab.Preds {
			ab.DrawProbs[j][s] = float64(pr[j*k+c])
		}
	})
}
