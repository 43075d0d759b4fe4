package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestAnalyse: every explained record reaches Analysis.Batch exactly once,
// with its own inputs, maps, summaries, repeats and distortions, whatever
// the batch size and the number of workers.
func TestAnalyse(t *testing.T) {
	const n, S, K = 7, 3, 3
	for _, workers := range []int{1, 3} {
		f := newFakes(S)
		p := testPlan(n, S, workers, 2)
		an := analysisFunc{repeats: K}
		// A distortion the echo explainer can see (it reads the input's
		// value), and an alignment that leaves a mark.
		an.dists = []Distortion{{
			Name:  "plus",
			Apply: func(dst, x []float32, split string, rec int) { copy(dst, x); dst[0] += 7000 },
			Align: func(dst, r []float64) {
				for i, v := range r {
					dst[i] = v + 0.5
				}
			},
		}}
		var mu sync.Mutex
		seen := map[[2]int]int{}
		var errs []string
		an.batch = func(b *Batch) error {
			mu.Lock()
			defer mu.Unlock()
			bad := func(format string, args ...any) { errs = append(errs, b.SplitName+": "+fmt.Sprintf(format, args...)) }
			if b.Posterior.Label != "Fake" || b.Explainer.Label != "Echo" || b.SplitName != splitNames[b.Split] {
				bad("steps %q %q split %d", b.Posterior.Label, b.Explainer.Label, b.Split)
			}
			for j, r := range b.Records {
				seen[[2]int{b.Split, r}]++
				v := 1000*b.Split + r
				if r == 3 {
					bad("record 3 has an empty mask and was analysed")
				}
				if int(b.X[j][0]) != v+1 || b.Labels[j] != 1 || b.Targets[j] != 1 || b.Preds[j] != 1 || len(b.Probs[j]) != tinyArch().Classes() || !b.Masks[j][(r+b.Split)%inLen] {
					bad("record %d: x %v label %d target %d pred %d probs %v", r, b.X[j][0], b.Labels[j], b.Targets[j], b.Preds[j], b.Probs[j])
				}
				// The draws' own probabilities of the predicted class
				// average to the predictive mean's (Probs is their mean).
				if len(b.DrawProbs[j]) != S {
					bad("record %d: %d draw probabilities, want %d", r, len(b.DrawProbs[j]), S)
				} else {
					sum := 0.0
					for s, q := range b.DrawProbs[j] {
						sum += q
						// float32 softmax of the fake's log-probabilities: a few ulps
						if want := drawProbs(s)[b.Preds[j]]; math.Abs(q-want) > 1e-6 {
							bad("record %d draw %d: probability %v of the predicted class, want the draw's %v", r, s, q, want)
						}
					}
					if d := sum/S - b.Probs[j][b.Preds[j]]; d > 1e-12 || d < -1e-12 {
						bad("record %d: draws' probabilities %v average to %v, predictive mean %v", r, b.DrawProbs[j], sum/S, b.Probs[j][b.Preds[j]])
					}
				}
				mean := 0.0
				for s := range S {
					m := b.Maps[j][s]
					if m[0] != float64(s+1) || m[1] != float64(v+1) {
						bad("record %d draw %d: map %v", r, s, m[:2])
					}
					mean += m[1] / S
					if &b.Repeats[j][s][0][0] != &m[0] || len(b.Repeats[j][s]) != K {
						bad("record %d draw %d: repeat 0 is not the map, or %d repeats", r, s, len(b.Repeats[j][s]))
					}
					for k := 1; k < K; k++ {
						if rk := b.Repeats[j][s][k]; rk[0] != float64(s+1) || rk[1] != float64(v+1) {
							bad("record %d draw %d repeat %d: %v", r, s, k, rk[:2])
						}
					}
					if d := b.Distorted[0][j][s]; d[0] != float64(s+1)+0.5 || d[1] != float64(v+7001)+0.5 {
						bad("record %d draw %d: distorted map %v", r, s, d[:2])
					}
				}
				if got := b.Summaries[0][j][1]; got != mean {
					bad("record %d: summary %v, want the mean %v", r, got, mean)
				}
			}
			return nil
		}
		p.Analysis = an
		runPlan(t, p, f, nil)
		for _, e := range errs {
			t.Error(e)
		}
		for si := range 2 {
			for r := range n {
				want := 1
				if r == 3 {
					want = 0
				}
				if seen[[2]int{si, r}] != want {
					t.Errorf("workers %d: split %d record %d analysed %d times, want %d", workers, si, r, seen[[2]int{si, r}], want)
				}
			}
		}
		// Repeat k of draw s has its own seed; repeat 0 the seed of a run
		// without repeats, which the clean and distorted maps share.
		seeds := map[[3]int]map[uint64]bool{}
		for _, c := range f.ex.calls {
			if c.Split >= 7 { // a distorted input (value + 7000)
				if c.Seed != ExplainerSeed(seed, splitNames[c.Split-7], c.Record, c.Draw, 0) {
					t.Errorf("distorted split %d record %d draw %d: not the plain seed", c.Split-7, c.Record, c.Draw)
				}
				continue
			}
			k := [3]int{c.Split, c.Record, c.Draw}
			if seeds[k] == nil {
				seeds[k] = map[uint64]bool{}
			}
			seeds[k][c.Seed] = true
		}
		for k, ss := range seeds {
			if len(ss) != K {
				t.Errorf("split %d record %d draw %d: %d distinct seeds, want %d", k[0], k[1], k[2], len(ss), K)
			}
			if !ss[ExplainerSeed(seed, splitNames[k[0]], k[1], k[2], 0)] {
				t.Errorf("split %d record %d draw %d: the plain seed was not used", k[0], k[1], k[2])
			}
		}
	}
}

func TestAnalyseErrors(t *testing.T) {
	f := newFakes(2)
	p := testPlan(4, 2, 1, 2)
	boom := errors.New("boom")
	p.Analysis = analysisFunc{batch: func(*Batch) error { return boom }}
	_, _, err := Run(context.Background(), p, f, nil, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "Fake / Echo, split test-") {
		t.Errorf("an Analyse error: %v", err)
	}
}

// TestUnlabelled: the windows of a recording have no class and no mask:
// every record is explained for its predicted class, nothing is scored,
// and a set summary's records carry label -1.
func TestUnlabelled(t *testing.T) {
	const n, S = 5, 2
	f := newFakes(S)
	p := testPlan(n, S, 2, 2)
	for i := range p.Tests {
		p.Tests[i].Unlabelled = true
		p.Tests[i].Masks = nil
		p.Tests[i].Data.Y = nil
	}
	p.Summaries = []Step{{ID: "summary.set", Label: "Set"}, {ID: "summary.spy", Label: "Spy"}}
	var mu sync.Mutex
	seen := 0
	p.Analysis = analysisFunc{batch: func(b *Batch) error {
		mu.Lock()
		defer mu.Unlock()
		for j := range b.Records {
			seen++
			// The fakes' mean predicts class 1 (drawProbs).
			if b.Labels[j] != -1 || b.Targets[j] != 1 || b.Preds[j] != 1 || b.Masks[j] != nil || b.Summaries[1][j] == nil {
				t.Errorf("record %d: label %d target %d pred %d mask %v", b.Records[j], b.Labels[j], b.Targets[j], b.Preds[j], b.Masks[j])
			}
		}
		return nil
	}}
	out, _, err := Run(context.Background(), p, withSummaries(f), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if seen != 2*n || len(out.Rows) != 0 {
		t.Errorf("%d records analysed (want %d, every one), %d rows (want none)", seen, 2*n, len(out.Rows))
	}
	if len(out.Outputs) != 1 || out.Outputs[0].Count != 2*n || out.Outputs[0].Records[0].Label != -1 {
		t.Errorf("outputs %+v", out.Outputs)
	}
	if !strings.Contains(strings.Join(out.Notes, "\n"), "not scored") {
		t.Errorf("notes %q", out.Notes)
	}
	p.Tests[1].Unlabelled = false
	if _, _, err := Run(context.Background(), p, withSummaries(f), nil, nil); err == nil || !strings.Contains(err.Error(), "one is labelled and one is not") {
		t.Errorf("mixed splits: %v", err)
	}
}

// TestNoRepeats: an Analysis that asks for one explainer seed a draw
// (or none) gets no Batch.Repeats, even from a stochastic explainer: the
// maps are the draw's only explanation.
func TestNoRepeats(t *testing.T) {
	for _, K := range []int{0, 1} {
		p := testPlan(4, 2, 2, 2)
		var with, batches atomic.Int32
		p.Analysis = analysisFunc{repeats: K, batch: func(b *Batch) error {
			batches.Add(1)
			if b.Repeats != nil {
				with.Add(1)
			}
			return nil
		}}
		runPlan(t, p, newFakes(2), nil)
		if batches.Load() == 0 || with.Load() != 0 {
			t.Errorf("repeats %d: %d of %d batches have Repeats, want none", K, with.Load(), batches.Load())
		}
	}
}
