package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// stallExplainer fails batch A (records 0..3 of split test-0) once batch
// B (records 4..7) is inside its stallOn-th call, which waits for its
// context: it ends when the engine cancels it, or after a minute (which
// only a broken engine waits for).
type stallExplainer struct {
	stallOn   int // the call of batch B that waits: 1 its maps, 2 its distortion's
	started   chan struct{}
	once      sync.Once
	callsB    atomic.Int32
	cancelled atomic.Bool
	waited    atomic.Bool
}

func (e *stallExplainer) Info() sdk.Info {
	return sdk.Info{ID: "explainer.stall", Version: "1.0.0", Needs: sdk.NeedsProbs}
}
func (e *stallExplainer) Check(sdk.Config) error { return nil }
func (e *stallExplainer) Explain(ctx context.Context, _ nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	first := int(req.X[0]) - 1 // 1000 split + record
	switch {
	case first == 0: // batch A
		select {
		case <-e.started:
		case <-time.After(time.Minute):
		}
		return nil, errors.New("batch A failed")
	case first == 4 && int(e.callsB.Add(1)) == e.stallOn: // batch B
		e.once.Do(func() { close(e.started) })
		select {
		case <-ctx.Done():
			e.cancelled.Store(true)
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			e.waited.Store(true)
		}
	}
	maps := make([][]float64, len(req.Targets))
	for j := range maps {
		maps[j] = echoMap(int(req.X[j*inLen])-1, 0)
	}
	return maps, nil
}

// TestFailingBatchCancelsSiblings: when one batch of a unit fails, the
// batches in flight beside it get a cancelled context at once, in the
// explain step and in the analysis's extra maps (a distortion), so a
// failed run does not wait for its siblings to reach their deadlines
// (limits.explain_batch, 10 minutes by default). The explainer decides
// nothing by time: batch A fails only once batch B is waiting, and the
// test asks whether B's wait ended by cancellation.
func TestFailingBatchCancelsSiblings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stallOn int
		distort bool
	}{
		{"explain step", 1, false},
		{"distortion", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakes(1)
			ex := &stallExplainer{stallOn: tc.stallOn, started: make(chan struct{})}
			p := testPlan(8, 1, 2, 4)
			for si := range p.Tests {
				for r := range p.Tests[si].Masks {
					p.Tests[si].Masks[r][0] = true // every record explained
				}
			}
			p.Explainers[0].ID = "explainer.stall"
			if tc.distort {
				p.Analysis = analysisFunc{batch: func(*Batch) error { return nil },
					dists: []Distortion{{Name: "identity", Apply: func(dst, x []float32, _ string, _ int) { copy(dst, x) }}}}
			}
			t0 := time.Now()
			_, _, err := Run(context.Background(), p, explainers{fakes: f, e: ex}, nil, nil)
			if err == nil || !strings.Contains(err.Error(), "batch A failed") {
				t.Fatalf("error %v, want batch A's", err)
			}
			if !ex.cancelled.Load() || ex.waited.Load() {
				t.Errorf("batch B: cancelled %v, waited a minute %v; want it cancelled when batch A failed", ex.cancelled.Load(), ex.waited.Load())
			}
			t.Logf("Run returned after %v", time.Since(t0))
		})
	}
}
