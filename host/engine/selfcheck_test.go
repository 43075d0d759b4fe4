package engine

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/host/ood"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// predSink keeps the predictions a run hands its Sink.
type predSink struct {
	mu    sync.Mutex
	preds []Prediction
}

func (s *predSink) Predicted(_ Step, p Prediction) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.preds = append(s.preds, p)
	return nil
}
func (s *predSink) Output(*Output) error { return nil }

// checkData is n records of inLen samples whose values are r/scale + the
// label, labels r mod classes.
func checkData(n int, scale float64) sdk.Dataset {
	d := sdk.Dataset{N: n, Len: inLen, X: make([]float32, n*inLen), Y: make([]int, n)}
	for r := range n {
		d.Y[r] = r % classes
		for t := range inLen {
			d.X[r*inLen+t] = float32(3*float64(d.Y[r]) + float64((r*7+t)%11)/scale)
		}
	}
	return d
}

// TestSelfCheck: a plan with training, validation and held-out records
// hands the Sink each record's feature score, the fitted check and the
// predictive mean on the held-out records. The scores are what host/ood
// gives on the draws' own features of the same records (computed here
// without the engine), the same bytes for any workers and unit size;
// the held-out mean is the mean of the draws' probabilities.
func TestSelfCheck(t *testing.T) {
	var got [][]float64
	var checks []*FeatureCheck
	for _, c := range []struct{ workers, units int }{{1, 0}, {3, 8}} {
		p := testPlan(20, 3, c.workers, 4)
		p.UnitRecords = c.units
		p.TrainSet, p.ValSet, p.HeldOut = checkData(60, 5), checkData(30, 7), checkData(9, 3)
		sink := &predSink{}
		p.Sink = sink
		if _, _, err := Run(context.Background(), p, newFakes(3), nil, nil); err != nil {
			t.Fatal(err)
		}
		if len(sink.preds) != 1 {
			t.Fatalf("%d predictions, want 1", len(sink.preds))
		}
		pr := sink.preds[0]
		if pr.FeatureCheck == nil || pr.FeatureNote != "" || len(pr.FeatureOOD) != 2 {
			t.Fatalf("feature check %+v, note %q, %d splits of scores", pr.FeatureCheck, pr.FeatureNote, len(pr.FeatureOOD))
		}
		var flat []float64
		for _, s := range pr.FeatureOOD {
			flat = append(flat, s...)
		}
		got, checks = append(got, flat), append(checks, pr.FeatureCheck)
		// the held-out mean: every draw gives every input drawProbs(s)
		for i := range p.HeldOut.N {
			for j := range classes {
				want := (drawProbs(0)[j] + drawProbs(1)[j] + drawProbs(2)[j]) / 3
				if v := pr.HeldOut[i*classes+j]; math.Abs(v-want) > 1e-6 {
					t.Fatalf("held-out record %d class %d: %g, want %g", i, j, v, want)
				}
			}
		}
		if c.workers == 1 {
			// host/ood directly on the draws' networks
			models := make([]nn.Model, 3)
			for s := range models {
				m, err := nn.Open(drawParams(t, drawProbs(s)))
				if err != nil {
					t.Fatal(err)
				}
				models[s] = m
			}
			feats := func(s int, dst, x []float32) error {
				return models[s].(nn.Featurer).Features(context.Background(), dst, x)
			}
			d, err := ood.FitDraws(3, 1, inLen, feats, p.TrainSet.X, p.TrainSet.Y, classes, p.ValSet.X, ood.DefaultAlpha)
			if err != nil {
				t.Fatal(err)
			}
			if d.Threshold != pr.FeatureCheck.Threshold || pr.FeatureCheck.Features != 1 || pr.FeatureCheck.Train != 60 || pr.FeatureCheck.Val != 30 {
				t.Errorf("check %+v; host/ood gives threshold %g of 1 feature, 60 and 30 records", pr.FeatureCheck, d.Threshold)
			}
			for si, ts := range p.Tests {
				want := make([]float64, ts.Data.N)
				if err := d.Score(want, feats, ts.Data.X); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(want, pr.FeatureOOD[si]) {
					t.Errorf("split %d: scores %v, host/ood gives %v", si, pr.FeatureOOD[si], want)
				}
			}
		}
	}
	if !slices.Equal(got[0], got[1]) || *checks[0] != *checks[1] {
		t.Errorf("1 worker and whole units, 3 workers and units of 8 differ: %v / %v", got[0], got[1])
	}
}

// TestSelfCheckWithoutTraining: without training records the Sink gets
// no scores and a note saying why.
func TestSelfCheckWithoutTraining(t *testing.T) {
	p := testPlan(8, 2, 1, 4)
	sink := &predSink{}
	p.Sink = sink
	if _, _, err := Run(context.Background(), p, newFakes(2), nil, nil); err != nil {
		t.Fatal(err)
	}
	pr := sink.preds[0]
	if pr.FeatureCheck != nil || pr.FeatureOOD != nil || pr.HeldOut != nil || pr.FeatureNote == "" {
		t.Errorf("without training records: check %+v, %d splits of scores, held-out %v, note %q", pr.FeatureCheck, len(pr.FeatureOOD), pr.HeldOut, pr.FeatureNote)
	}
}
