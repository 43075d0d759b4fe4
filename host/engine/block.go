package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// block is the work of one (posterior, explainer) pair: explain every
// scorable record under every draw, summarise, score.
type block struct {
	p      *Plan
	ps, es Step
	tests  []TestSplit // the posterior's test splits (Plan.testsOf)
	ex     driver.Explainer
	step   Explaining // the explainer with the S draws loaded: the explain step
	sums   []sdk.Summary
	active []bool              // summaries whose maps are scored
	output []bool              // set and band summaries, written per record
	preds  [][]int             // predicted class per split and record
	ment   [][]float64         // the draws' mean entropy per split and record (Prediction)
	agree  [][]float64         // the share of draws voting for the predicted class
	fscore [][]float64         // the feature-space OOD score per split and record (nil: no check)
	check  *checkPayload       // the posterior's check (the merge: from its first unit)
	probs  [][]float64         // predictive mean per split, row major
	recs   [][][]Record        // summary -> split -> record
	outs   [][][]*OutputRecord // summary -> split -> record (nil: not explained)
	draws  int                 // S
	done   *atomic.Int64       // records explained, for the progress
	// repeats and dists are the Analysis's (1 and none without one).
	repeats int
	dists   []Distortion
}

// activate marks the summaries whose maps RMA and IoU score, and says
// why the others are left out.
func (b *block) activate(S int) []string {
	var notes []string
	b.active = make([]bool, len(b.sums))
	b.output = make([]bool, len(b.sums))
	for i, sm := range b.sums {
		info := sm.Info()
		if S < info.MinDraws {
			notes = append(notes, fmt.Sprintf("%s with %s: %d draw(s), %s needs at least %d: skipped", b.ps.Name(), b.es.Label, S, info.ID, info.MinDraws))
			continue
		}
		if info.Output != sdk.OutputMap {
			b.output[i] = true
			continue
		}
		b.active[i] = true
	}
	return notes
}

// outputs gathers the records of every set and band summary, in the
// order of the recipe's summaries, splits and records.
func (b *block) outputs() []Output {
	var out []Output
	for i, sm := range b.sums {
		if !b.output[i] {
			continue
		}
		info := sm.Info()
		o := Output{ClassNames: b.p.ClassNames, Posterior: b.ps.ID, Explainer: b.es.ID, Summary: info.ID, Label: b.ps.Label, Replicate: b.ps.Replicate, ExplainerLabel: b.es.Label,
			SummaryLabel: b.p.Summaries[i].Label, Kind: info.Output, Draws: b.draws, Records: []OutputRecord{}}
		for si := range b.tests {
			for _, rec := range b.outs[i][si] {
				if rec != nil {
					o.Records = append(o.Records, *rec)
				}
			}
		}
		o.Count = len(o.Records)
		if o.Count > 0 {
			o.N = max(len(o.Records[0].Set), len(o.Records[0].Lower))
		}
		out = append(out, o)
	}
	return out
}

// pathReporter is a loaded draw whose model says how it computed the
// perturbed copies of occlusion and LIME (a graph network's, driver's
// PerturbedPath).
type pathReporter interface {
	PerturbedPath() (nn.PathStats, bool)
}

// notePaths notes how the block's draws computed perturbed copies, if
// they say and computed any.
func (b *block) notePaths(obs Observer) {
	var p nn.PathStats
	for _, m := range b.step.Models {
		if r, ok := m.(pathReporter); ok {
			if q, ok := r.PerturbedPath(); ok {
				p = p.Add(q)
			}
		}
	}
	if p.Copies > 0 {
		obs.Note(fmt.Sprintf("%s / %s on a graph network: %v", b.ps.Name(), b.es.Label, p))
	}
}

// close releases every loaded draw.
func (b *block) close() error {
	var errs []error
	for _, m := range b.step.Models {
		errs = append(errs, m.Close())
	}
	b.step.Models = nil
	return errors.Join(errs...)
}

// explainBatch explains the records b0..b1-1 of split si that have a
// non-empty mask (idx; every record of an unlabelled split) under every
// draw: maps[j][s] is the map of record idx[j] under draw s. The draws of
// a batch run one after the other on one worker: an explainer that caches
// per input what draws share (occlusion's trunk cache under MC dropout)
// then needs one batch of entries a worker.
func (b *block) explainBatch(ctx context.Context, si, b0, b1 int) (idx []int, maps [][][]float64, err error) {
	ts := b.tests[si]
	d := ts.Data
	for r := b0; r < b1; r++ {
		if ts.Unlabelled || MaskLen(ts.Masks[r]) > 0 {
			idx = append(idx, r)
		}
	}
	if len(idx) == 0 {
		return nil, nil, nil
	}
	x := make([]float32, 0, len(idx)*d.Len)
	targets := make([]int, len(idx))
	for j, r := range idx {
		x = append(x, d.Row(r)...)
		targets[j] = b.target(si, r)
	}
	maps = newMaps(len(idx), b.draws)
	if b.p.Stored != nil {
		if err := b.p.Stored.Maps(b.ps, b.es, si, idx, maps); err != nil {
			return nil, nil, fmt.Errorf("%s / %s, split %s: stored maps: %w", b.ps.Name(), b.es.Label, ts.Name, err)
		}
		return idx, maps, nil
	}
	if err := b.step.Explain(ctx, maps, Inputs{Split: ts.Name, Records: idx, X: x, Targets: targets}); err != nil {
		return nil, nil, err
	}
	return idx, maps, nil
}

// newMaps is room for the maps of n inputs under S draws each.
func newMaps(n, S int) [][][]float64 {
	maps := make([][][]float64, n)
	for j := range maps {
		maps[j] = make([][]float64, S)
	}
	return maps
}

// target is the class explained for record r of split si: the predicted
// class for an unlabelled split.
func (b *block) target(si, r int) int {
	if b.es.Target == "predicted" || b.tests[si].Unlabelled {
		return b.preds[si][r]
	}
	return b.tests[si].Data.Y[r]
}

// label is the class of record r of split si, -1 for an unlabelled split.
func (b *block) label(si, r int) int {
	if b.tests[si].Unlabelled {
		return -1
	}
	return b.tests[si].Data.Y[r]
}

// maskLen is the mask length of record r of split si, 0 when unlabelled.
func (b *block) maskLen(si, r int) int {
	if b.tests[si].Unlabelled {
		return 0
	}
	return MaskLen(b.tests[si].Masks[r])
}
