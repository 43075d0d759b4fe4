package analysis

import (
	"bytes"
	"encoding/gob"
	"fmt"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/figure"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/sdk/metric"
)

// This file moves an analyser's per-record results in and out of a run's
// units (engine.Analysis.Take and Put): a shard hands over the
// results of its unit's records and forgets them, and the merge gives
// every unit's back before Finish. The encoding keeps every float64 bit,
// so a merged run's tables are the same bytes as a run in one piece.

// wireRecord is record with exported fields, for gob.
type wireRecord struct {
	Index                        int
	Label, Target, Pred          int
	MaskLen                      int
	Correct, LOO, AgreeOK, HasTV bool
	Sens                         []wireSens
	Cal                          []wireCal
	Agree                        []eval.SetMatch
	CX, Term                     float64
	TV                           [3]float64 // total, model, explainer
	Figure                       *figure.Panel
	Maps, Sums                   [][]float32
	Explore                      *report.Explored
	DrawScores, SumScores        [][]metric.Score
	RandW1, MeanAbs              float64
	RandOK                       bool
	RandWhy                      string `json:",omitempty"`
	ChanShare                    []float64
}

type wireSens struct {
	Corr, Stab, W1, DIoU  float64
	CorrOK, StabOK, IoUOK bool
}

type wireCal struct {
	Covered, Total int
	Ref            float64
}

type wireUnit struct {
	Draws   int
	Records []wireRecord
}

// Take returns, encoded, the results of records [b0, b1) of split si
// under the pair (ps, es), and forgets them (nil when the pair has none).
func (a *Analyser) Take(ps, es engine.Step, si, b0, b1 int) ([]byte, error) {
	a.mu.Lock()
	p := a.pairs[keyOf(ps, es)]
	if p == nil {
		a.mu.Unlock()
		return nil, nil
	}
	w := wireUnit{Draws: p.draws}
	for r := b0; r < b1; r++ {
		rec := p.recs[si][r]
		if rec == nil {
			continue
		}
		p.recs[si][r] = nil
		w.Records = append(w.Records, toWire(r, rec))
	}
	p.untake(si, b0, b1)
	a.mu.Unlock()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(w); err != nil {
		return nil, fmt.Errorf("encoding the analysis of split %d records %d..%d: %w", si, b0, b1-1, err)
	}
	return buf.Bytes(), nil
}

// Put gives back what Take returned for split si of the pair (ps, es).
func (a *Analyser) Put(ps, es engine.Step, si int, data []byte) error {
	var w wireUnit
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
		return fmt.Errorf("decoding the analysis of split %d: %w", si, err)
	}
	if si < 0 || si >= len(a.s.Tests) {
		return fmt.Errorf("analysis of split %d: the run has %d splits", si, len(a.s.Tests))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pairOf(ps, es, w.Draws)
	for _, wr := range w.Records {
		if wr.Index < 0 || wr.Index >= len(p.recs[si]) {
			return fmt.Errorf("analysis of split %d: record %d (the split has %d)", si, wr.Index, len(p.recs[si]))
		}
		p.recs[si][wr.Index] = fromWire(wr)
	}
	return nil
}

func toWire(i int, r *record) wireRecord {
	w := wireRecord{Index: i, Label: r.label, Target: r.target, Pred: r.pred, MaskLen: r.maskLen, Correct: r.correct, LOO: r.loo,
		Agree: r.agree, AgreeOK: r.agreeOK, CX: r.cx, Term: r.term, Figure: r.figure, Maps: r.maps, Sums: r.sums, Explore: r.explore, DrawScores: r.drawScores, SumScores: r.sumScores, RandW1: r.randW1, MeanAbs: r.meanAbs, RandOK: r.randOK, RandWhy: r.randWhy, ChanShare: r.chanShare}
	for _, s := range r.sens {
		w.Sens = append(w.Sens, wireSens{Corr: s.corr, Stab: s.stab, W1: s.w1, DIoU: s.dIoU, CorrOK: s.corrOK, StabOK: s.stabOK, IoUOK: s.iouOK})
	}
	for _, c := range r.cal {
		w.Cal = append(w.Cal, wireCal{Covered: c.covered, Total: c.total, Ref: c.ref})
	}
	if r.tv != nil {
		w.HasTV, w.TV = true, [3]float64{r.tv.total, r.tv.model, r.tv.explainer}
	}
	return w
}

func fromWire(w wireRecord) *record {
	r := &record{label: w.Label, target: w.Target, pred: w.Pred, maskLen: w.MaskLen, correct: w.Correct, loo: w.LOO,
		agree: w.Agree, agreeOK: w.AgreeOK, cx: w.CX, term: w.Term, figure: w.Figure, maps: w.Maps, sums: w.Sums, explore: w.Explore, drawScores: w.DrawScores, sumScores: w.SumScores, randW1: w.RandW1, meanAbs: w.MeanAbs, randOK: w.RandOK, randWhy: w.RandWhy, chanShare: w.ChanShare}
	for _, s := range w.Sens {
		r.sens = append(r.sens, sensResult{corr: s.Corr, stab: s.Stab, w1: s.W1, dIoU: s.DIoU, corrOK: s.CorrOK, stabOK: s.StabOK, iouOK: s.IoUOK})
	}
	for _, c := range w.Cal {
		r.cal = append(r.cal, calResult{covered: c.Covered, total: c.Total, ref: c.Ref})
	}
	if w.HasTV {
		r.tv = &tvResult{total: w.TV[0], model: w.TV[1], explainer: w.TV[2]}
	}
	return r
}
