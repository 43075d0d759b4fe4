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
	var missing []string
	for _, u := range units {
		if !store.Has(u.Name) {
			missing = append(missing, u.Name)
		}
	}
	if len(missing) > 0 {
		shown := missing[:min(len(missing), 8)]
		more := ""
		if len(missing) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(missing)-len(shown))
		}
		return nil, nil, fmt.Errorf("%d of %d units are not done: %s%s (finish them with uaxai run --resume, or the shards that own them)", len(missing), len(units), strings.Join(shown, ", "), more)
	}
	read := func(u Unit, v any, fp *string, id *UnitID) error {
		name := u.Name
		b, _, err := store.Load(name)
		if err != nil {
			return fmt.Errorf("%w: do it again with uaxai run --resume", err)
		}
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
			return fmt.Errorf("unit %s: decoding: %w (set it aside and do it again with uaxai run --resume)", name, err)
		}
		if *fp != p.Fingerprint {
			return fmt.Errorf("unit %s belongs to another run (fingerprint %.12s, this run's is %.12s)", name, *fp, p.Fingerprint)
		}
		if *id != u.ID() {
			return fmt.Errorf("unit %s holds unit %s's output, expected %s's (a unit file copied onto another's name): do it again with uaxai run --resume", name, *id, u.ID())
		}
		return nil
	}
	out := &Results{ClassNames: p.ClassNames}
	costs := map[string]float64{}
	k := p.Arch.Classes()
	for pi, ps := range p.Posteriors {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		var parts []sdk.Artifact
		for _, u := range units {
			if u.Kind != FitUnit || u.Post != pi {
				continue
			}
			var fp fitPayload
			if err := read(u, &fp, &fp.Fingerprint, &fp.ID); err != nil {
				return nil, nil, err
			}
			costs[u.Name] = fp.Seconds
			parts = append(parts, fp.Artifact)
		}
		art := parts[0]
		if len(parts) > 1 {
			if art, err = JoinParts(parts); err != nil {
				return nil, nil, fmt.Errorf("posterior %s: joining its %d parts: %w", ps.Name(), len(parts), err)
			}
		}
		if n := art.Meta["note"]; n != "" {
			out.Notes = append(out.Notes, ps.Name()+": "+n)
		}
		var acc []float64
		for ei, es := range p.Explainers {
			b := newBlock(&p, pi, ei, nil, e.summaries)
			notes := b.activate(ps.Draws)
			for _, u := range units {
				if u.Kind != ExplainUnit || u.Post != pi || u.Exp != ei {
					continue
				}
				var pl explainPayload
				if err := read(u, &pl, &pl.Fingerprint, &pl.ID); err != nil {
					return nil, nil, err
				}
				costs[u.Name] = pl.Seconds
				if len(pl.Preds) != u.B1-u.B0 || len(pl.Probs) != (u.B1-u.B0)*k || len(pl.MeanEntropy) != u.B1-u.B0 || len(pl.Agree) != u.B1-u.B0 || len(pl.Recs) != len(b.sums) || len(pl.Outs) != len(b.sums) {
					return nil, nil, fmt.Errorf("unit %s: its payload does not fit the plan (%d predictions for %d records)", u.Name, len(pl.Preds), u.B1-u.B0)
				}
				copy(b.preds[u.Split][u.B0:], pl.Preds)
				copy(b.probs[u.Split][u.B0*k:], pl.Probs)
				copy(b.ment[u.Split][u.B0:], pl.MeanEntropy)
				copy(b.agree[u.Split][u.B0:], pl.Agree)
				for i := range b.sums {
					if b.active[i] {
						if len(pl.Recs[i]) != u.B1-u.B0 {
							return nil, nil, fmt.Errorf("unit %s: summary %d has %d records, want %d", u.Name, i, len(pl.Recs[i]), u.B1-u.B0)
						}
						copy(b.recs[i][u.Split][u.B0:], pl.Recs[i])
					}
					for j := range pl.Outs[i] {
						o := pl.Outs[i][j]
						if o.Index < u.B0 || o.Index >= u.B1 {
							return nil, nil, fmt.Errorf("unit %s: an output of record %d, outside the unit", u.Name, o.Index)
						}
						b.outs[i][u.Split][o.Index] = &o
					}
				}
				if p.Analysis != nil && pl.Analysis != nil {
					if err := p.Analysis.Put(b.ps, b.es, u.Split, pl.Analysis); err != nil {
						return nil, nil, fmt.Errorf("unit %s: analysis: %w", u.Name, err)
					}
				}
			}
			if ei == 0 {
				if acc, err = accuracies(b.tests, b.preds); err != nil {
					return nil, nil, err
				}
				if p.Sink != nil {
					if err := p.Sink.Predicted(ps, Prediction{Probs: b.probs, MeanEntropy: b.ment, Agree: b.agree}); err != nil {
						return nil, nil, fmt.Errorf("%s: predictive quality: %w", ps.Name(), err)
					}
				}
			}
			if firstActive(b.active) < 0 && firstActive(b.output) < 0 && p.Analysis == nil {
				out.Notes = append(out.Notes, notes...) // nothing was explained
				continue
			}
			rows, notes2, err := b.rows()
			if err != nil {
				return nil, nil, err
			}
			outs := b.outputs()
			for i := range outs {
				if p.Sink != nil {
					if err := p.Sink.Output(&outs[i]); err != nil {
						return nil, nil, fmt.Errorf("%s / %s / %s: writing its records: %w", ps.Name(), es.Label, outs[i].SummaryLabel, err)
					}
					outs[i].Records = nil
				}
				out.Outputs = append(out.Outputs, outs[i])
			}
			for i := range rows {
				rows[i].Accuracy = eval.StatOf(acc)
				rows[i].AccuracyBySplit = acc
				rows[i].Fit = fitMeta(art)
				out.Rows = append(out.Rows, rows[i])
			}
			out.Notes = append(out.Notes, append(notes, notes2...)...)
		}
	}
	return out, costs, nil
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
