package engine

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"strings"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk"
)

// Merge reads every unit of the plan from store and builds the run's
// Results, exactly as one uninterrupted run in one process gives them:
// the Sink and the Analysis's Put are called as the run would call
// them. A missing unit, or one that does not read back whole, is an error
// that names it. It also returns the wall time each unit took when it was
// done.
func Merge(ctx context.Context, p Plan, res Plugins, store UnitStore) (*Results, map[string]float64, error) {
	if err := checkPlan(ctx, &p, res); err != nil {
		return nil, nil, err
	}
	e, err := resolve(ctx, &p, res, false)
	if err != nil {
		return nil, nil, err
	}
	units := Units(p)
	if err := allDone(units, store); err != nil {
		return nil, nil, err
	}
	m := &merger{p: &p, e: e, store: store, units: units, out: &Results{ClassNames: p.ClassNames}, costs: map[string]float64{}}
	for pi := range p.Posteriors {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if err := m.posterior(pi); err != nil {
			return nil, nil, err
		}
	}
	return m.out, m.costs, nil
}

// merger is Merge's state: the plan's units, read from store, become out
// and the units' costs.
type merger struct {
	p     *Plan
	e     *exec
	store UnitStore
	units []Unit
	out   *Results
	costs map[string]float64
}

// allDone says which of units store does not hold, if any: the first 8
// by name, and how to finish them.
func allDone(units []Unit, store UnitStore) error {
	var missing []string
	for _, u := range units {
		if !store.Has(u.Name) {
			missing = append(missing, u.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	shown := missing[:min(len(missing), 8)]
	more := ""
	if len(missing) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(missing)-len(shown))
	}
	return fmt.Errorf("%d of %d units are not done: %s%s (finish them with uaxai run --resume, or the shards that own them)", len(missing), len(units), strings.Join(shown, ", "), more)
}

// read decodes unit u's payload into v, whose fingerprint and unit ID
// are *fp and *id, and checks that it is this run's and u's.
func (m *merger) read(u Unit, v any, fp *string, id *UnitID) error {
	name := u.Name
	b, _, err := m.store.Load(name)
	if err != nil {
		return fmt.Errorf("%w: do it again with uaxai run --resume", err)
	}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		return fmt.Errorf("unit %s: decoding: %w (set it aside and do it again with uaxai run --resume)", name, err)
	}
	if *fp != m.p.Fingerprint {
		return fmt.Errorf("unit %s belongs to another run (fingerprint %.12s, this run's is %.12s)", name, *fp, m.p.Fingerprint)
	}
	if *id != u.ID() {
		return fmt.Errorf("unit %s holds unit %s's output, expected %s's (a unit file copied onto another's name): do it again with uaxai run --resume", name, *id, u.ID())
	}
	return nil
}

// posterior merges posterior pi: its fit, then each of its (posterior,
// explainer) pairs in plan order.
func (m *merger) posterior(pi int) error {
	ps := m.p.Posteriors[pi]
	art, err := m.fitted(pi)
	if err != nil {
		return err
	}
	if n := art.Meta["note"]; n != "" {
		m.out.Notes = append(m.out.Notes, ps.Name()+": "+n)
	}
	var acc []float64
	for ei := range m.p.Explainers {
		b := newBlock(m.p, pi, ei, nil, m.e.summaries)
		notes := b.activate(ps.Draws)
		if err := m.readPair(b, pi, ei); err != nil {
			return err
		}
		if ei == 0 {
			if acc, err = m.predicted(b); err != nil {
				return err
			}
		}
		if firstActive(b.active) < 0 && firstActive(b.output) < 0 && m.p.Analysis == nil {
			m.out.Notes = append(m.out.Notes, notes...) // nothing was explained
			continue
		}
		if err := m.pairResults(b, art, acc, notes); err != nil {
			return err
		}
	}
	return nil
}

// fitted is posterior pi's artifact: its fit unit's, or its parts'
// joined.
func (m *merger) fitted(pi int) (sdk.Artifact, error) {
	var parts []sdk.Artifact
	for _, u := range m.units {
		if u.Kind != FitUnit || u.Post != pi {
			continue
		}
		var fp fitPayload
		if err := m.read(u, &fp, &fp.Fingerprint, &fp.ID); err != nil {
			return sdk.Artifact{}, err
		}
		m.costs[u.Name] = fp.Seconds
		parts = append(parts, fp.Artifact)
	}
	art := parts[0]
	if len(parts) > 1 {
		var err error
		if art, err = JoinParts(parts); err != nil {
			return sdk.Artifact{}, fmt.Errorf("posterior %s: joining its %d parts: %w", m.p.Posteriors[pi].Name(), len(parts), err)
		}
	}
	return art, nil
}

// readPair reads the explain units of the pair (pi, ei) into b, and
// hands each unit's analysis to the plan's Analysis.
func (m *merger) readPair(b *block, pi, ei int) error {
	k := m.p.Arch.Classes()
	haveScores := false
	defer func() {
		if !haveScores {
			b.fscore = nil
		}
	}()
	for _, u := range m.units {
		if u.Kind != ExplainUnit || u.Post != pi || u.Exp != ei {
			continue
		}
		var pl explainPayload
		if err := m.read(u, &pl, &pl.Fingerprint, &pl.ID); err != nil {
			return err
		}
		m.costs[u.Name] = pl.Seconds
		if len(pl.Preds) != u.B1-u.B0 || len(pl.Probs) != (u.B1-u.B0)*k || len(pl.MeanEntropy) != u.B1-u.B0 || len(pl.Agree) != u.B1-u.B0 || len(pl.Recs) != len(b.sums) || len(pl.Outs) != len(b.sums) {
			return fmt.Errorf("unit %s: its payload does not fit the plan (%d predictions for %d records)", u.Name, len(pl.Preds), u.B1-u.B0)
		}
		copy(b.preds[u.Split][u.B0:], pl.Preds)
		copy(b.probs[u.Split][u.B0*k:], pl.Probs)
		copy(b.ment[u.Split][u.B0:], pl.MeanEntropy)
		copy(b.agree[u.Split][u.B0:], pl.Agree)
		if !pl.Checked {
			return fmt.Errorf("unit %s: its payload was written by an older uaxai, without the posterior's check of itself: run the recipe again in its run directory to redo the unit", u.Name)
		}
		if ei == 0 {
			if pl.FeatureOOD != nil {
				if len(pl.FeatureOOD) != u.B1-u.B0 {
					return fmt.Errorf("unit %s: %d feature scores for %d records", u.Name, len(pl.FeatureOOD), u.B1-u.B0)
				}
				copy(b.fscore[u.Split][u.B0:], pl.FeatureOOD)
				haveScores = true
			}
			if pl.Check != nil {
				b.check = pl.Check
			}
		}
		for i := range b.sums {
			if b.active[i] {
				if len(pl.Recs[i]) != u.B1-u.B0 {
					return fmt.Errorf("unit %s: summary %d has %d records, want %d", u.Name, i, len(pl.Recs[i]), u.B1-u.B0)
				}
				copy(b.recs[i][u.Split][u.B0:], pl.Recs[i])
			}
			for j := range pl.Outs[i] {
				o := pl.Outs[i][j]
				if o.Index < u.B0 || o.Index >= u.B1 {
					return fmt.Errorf("unit %s: an output of record %d, outside the unit", u.Name, o.Index)
				}
				b.outs[i][u.Split][o.Index] = &o
			}
		}
		if m.p.Analysis != nil && pl.Analysis != nil {
			if err := m.p.Analysis.Put(b.ps, b.es, u.Split, pl.Analysis); err != nil {
				return fmt.Errorf("unit %s: analysis: %w", u.Name, err)
			}
		}
	}
	return nil
}

// predicted is the accuracy of the posterior's predictions, which b (its
// first pair) holds, on each split; it hands them to the plan's Sink.
func (m *merger) predicted(b *block) ([]float64, error) {
	acc, err := accuracies(b.tests, b.preds)
	if err != nil {
		return nil, err
	}
	if m.p.Sink != nil {
		pred := Prediction{Probs: b.probs, MeanEntropy: b.ment, Agree: b.agree}
		if c := b.check; c != nil {
			pred.FeatureCheck, pred.FeatureNote, pred.HeldOut = c.Feature, c.Note, c.HeldOut
			if c.Feature != nil {
				pred.FeatureOOD = b.fscore
			}
		}
		if err := m.p.Sink.Predicted(b.ps, pred); err != nil {
			return nil, fmt.Errorf("%s: predictive quality: %w", b.ps.Name(), err)
		}
	}
	return acc, nil
}

// pairResults adds b's rows (with the posterior's accuracy acc and fit
// art), outputs (their records handed to the Sink) and notes to the
// results.
func (m *merger) pairResults(b *block, art sdk.Artifact, acc []float64, notes []string) error {
	rows, notes2, err := b.rows()
	if err != nil {
		return err
	}
	outs := b.outputs()
	for i := range outs {
		if m.p.Sink != nil {
			if err := m.p.Sink.Output(&outs[i]); err != nil {
				return fmt.Errorf("%s / %s / %s: writing its records: %w", b.ps.Name(), b.es.Label, outs[i].SummaryLabel, err)
			}
			outs[i].Records = nil
		}
		m.out.Outputs = append(m.out.Outputs, outs[i])
	}
	for i := range rows {
		rows[i].Accuracy = eval.StatOf(acc)
		rows[i].AccuracyBySplit = acc
		rows[i].Fit = fitMeta(art)
		m.out.Rows = append(m.out.Rows, rows[i])
	}
	m.out.Notes = append(m.out.Notes, append(notes, notes2...)...)
	return nil
}

// accuracies is the accuracy of the predictive mean on each split (nil
// for unlabelled splits).
func accuracies(tests []TestSplit, preds [][]int) ([]float64, error) {
	if len(tests) > 0 && tests[0].Unlabelled {
		return nil, nil
	}
	acc := make([]float64, len(tests))
	for si, ts := range tests {
		a, ok := eval.Accuracy(preds[si], ts.Data.Y)
		if !ok {
			return nil, fmt.Errorf("test split %s is empty", ts.Name)
		}
		acc[si] = a
	}
	return acc, nil
}
