package engine

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk"
)

// scoreBatch is the score step: every active summary of the maps of the
// explained records idx, scored against their masks; records b0..b1-1
// without a mask are counted as such.
func (b *block) scoreBatch(ctx context.Context, si, b0, b1 int, idx []int, maps [][][]float64) ([][][]float64, error) {
	ts := b.tests[si]
	sumMaps := make([][][]float64, len(b.sums))
	for i, sm := range b.sums {
		if !b.active[i] && !b.output[i] {
			continue
		}
		var results []sdk.Result
		if len(idx) > 0 {
			var err error
			if results, err = sm.Summarise(ctx, maps, b.p.Summaries[i].Config); err != nil {
				return nil, fmt.Errorf("%s on split %s records %d..%d: %w", sm.Info().ID, ts.Name, b0, b1-1, err)
			}
		}
		if b.output[i] {
			for j, r := range idx {
				b.outs[i][si][r] = &OutputRecord{Split: si, Index: r, Label: b.label(si, r), Target: b.target(si, r), Pred: b.preds[si][r],
					MaskLen: b.maskLen(si, r), Set: results[j].Set, Lower: results[j].Lower, Upper: results[j].Upper}
			}
			continue
		}
		if b.p.Analysis != nil && b.active[i] {
			sumMaps[i] = make([][]float64, len(results))
			for j := range results {
				sumMaps[i][j] = results[j].Map
			}
		}
		if ts.Unlabelled {
			continue // nothing to score
		}
		j := 0
		for r := b0; r < b1; r++ {
			rec := Record{Split: si, Index: r, Label: ts.Data.Y[r], Target: b.target(si, r), Pred: b.preds[si][r], MaskLen: MaskLen(ts.Masks[r])}
			if rec.MaskLen == 0 {
				rec.Why = eval.EmptyMask
			} else {
				var err error
				rec.RMA, rec.IoU, rec.Why, rec.Channels, err = score(results[j].Map, ts.Masks[r], b.p.Abs, ts.NumChannels())
				if err != nil {
					return nil, fmt.Errorf("%s on split %s record %d: %w", sm.Info().ID, ts.Name, r, err)
				}
				rec.OK = rec.Why == eval.Scored
				j++
			}
			b.recs[i][si][r] = rec
		}
	}
	return sumMaps, nil
}

// rows aggregates the scores of every active summary into its row (none
// for unlabelled splits).
func (b *block) rows() ([]Row, []string, error) {
	p := b.p
	if len(b.tests) > 0 && b.tests[0].Unlabelled {
		return nil, []string{fmt.Sprintf("%s / %s: unlabelled inputs: explained for their predicted class, not scored", b.ps.Name(), b.es.Label)}, nil
	}
	reported := map[int]bool{}
	for _, c := range p.Classes {
		reported[c] = true
	}
	var rows []Row
	var notes []string
	for i, sm := range b.sums {
		if !b.active[i] {
			continue
		}
		var scores []eval.Score
		var all []Record
		outside := 0
		for si := range b.tests {
			for _, rec := range b.recs[i][si] {
				all = append(all, rec)
				if !reported[rec.Label] {
					outside++ // the normal class: counted in records.csv, never scored
					continue
				}
				scores = append(scores, eval.Score{Split: si, Class: rec.Label, RMA: rec.RMA, IoU: rec.IoU, OK: rec.OK, Why: rec.Why})
			}
		}
		agg, err := eval.Aggregate(scores, p.Classes, p.Groups, len(b.tests))
		if err != nil {
			return nil, nil, fmt.Errorf("aggregate %s / %s / %s: %w", b.ps.Name(), b.es.Label, sm.Info().ID, err)
		}
		chAgg, err := b.channelAgg(all, reported)
		if err != nil {
			return nil, nil, fmt.Errorf("aggregate %s / %s / %s by channel: %w", b.ps.Name(), b.es.Label, sm.Info().ID, err)
		}
		if i == firstActive(b.active) {
			notes = append(notes, fmt.Sprintf("%s / %s: %d records of unscored classes (normal) left out; %d disturbance records with an empty mask, %d with zero relevance mass, %d non-finite: counted, not scored",
				b.ps.Name(), b.es.Label, outside, agg.Counts.EmptyMask, agg.Counts.ZeroMass, agg.Counts.NonFinite))
		}
		rows = append(rows, Row{Posterior: b.ps.ID, Explainer: b.es.ID, Summary: sm.Info().ID, Label: b.ps.Label, Replicate: b.ps.Replicate, ExplainerLabel: b.es.Label, SummaryLabel: p.Summaries[i].Label,
			Draws: b.draws, Agg: agg, Records: all, Channels: chAgg})
	}
	return rows, notes, nil
}

// channelAgg aggregates the channel view of the records of the reported
// classes; nil when the splits have one channel.
func (b *block) channelAgg(recs []Record, reported map[int]bool) (*eval.ChannelAgg, error) {
	C, names, err := channelsOf(b.tests)
	if err != nil || C == 1 {
		return nil, err
	}
	var crs []eval.ChannelRecord
	for _, rec := range recs {
		if rec.Channels != nil && reported[rec.Label] {
			crs = append(crs, eval.ChannelRecord{Split: rec.Split, Class: rec.Label, Ch: *rec.Channels})
		}
	}
	a, err := eval.AggregateChannels(crs, names, b.p.Classes, b.p.Groups, len(b.tests))
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// score takes RMA and IoU of a map (of |R| when abs) and, for C > 1
// channels, its channel view (eval.ScoreChannels, of the same |R|).
func score(m []float64, mask []bool, abs bool, C int) (rma, iou float64, why eval.Skip, ch *eval.Channels, err error) {
	if len(m) != len(mask) {
		return 0, 0, 0, nil, fmt.Errorf("a map of %d values for a mask of %d", len(m), len(mask))
	}
	if abs {
		m = eval.Abs(make([]float64, len(m)), m)
	} else {
		for n, v := range m {
			if v < 0 {
				return 0, 0, 0, nil, fmt.Errorf("map value %d is %g: a signed map needs evaluate.abs = true", n, v)
			}
		}
	}
	rma, iou, why = eval.Localise(m, mask)
	if C > 1 {
		if len(m)%C != 0 {
			return 0, 0, 0, nil, fmt.Errorf("a map of %d values is not %d channels of equal length", len(m), C)
		}
		c := eval.ScoreChannels(nil, m, mask, C)
		ch = &c
	}
	return rma, iou, why, ch, nil
}

func firstActive(a []bool) int {
	for i, v := range a {
		if v {
			return i
		}
	}
	return -1
}

// MaskLen is the number of true values of a mask, |I(x)|.
func MaskLen(m []bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}
