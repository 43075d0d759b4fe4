package engine

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/rng"
)

// This file is the explain step, the one place that calls an explainer:
// a run's maps, its repeats and distortions (host/analysis), `uaxai
// explain` (host/runner) and a recipe check's trial all go through
// Explaining.Explain, so the request, the seeds, the errors and the
// scatter of the maps are written once.

// ExplainerSeed is the seed of a stochastic explainer's random stream
// for input record of a split under draw, at repeat k:
//
//	k = 0:  rng.Key(seed, "explainer", split, record, draw)
//	k >= 1: rng.Key(seed, "explainer.repeat.<k>", split, record, draw)
//
// Repeat 0 is the map of a run (and of `uaxai explain`, whose split is
// "explain"); the repeats k >= 1 of the law of total variance
// (Plan.Repeats) get streams of their own. A distorted input keeps its
// clean input's seed (the aligned coupling of cor:input).
func ExplainerSeed(seed uint64, split string, record, draw, k int) uint64 {
	if k == 0 {
		return rng.Key(seed, "explainer", split, record, draw)
	}
	return rng.Key(seed, fmt.Sprintf("explainer.repeat.%d", k), split, record, draw)
}

// Explaining is one explainer with S draws loaded into it: what the
// explain step needs beside the inputs.
type Explaining struct {
	ID         string         // the explainer's plugin ID, for errors
	Config     sdk.Config     // its table
	Stochastic bool           // Info().Stochastic: it gets one seed an input
	Seed       uint64         // the base seed of its streams (ExplainerSeed)
	Models     []driver.Model // Models[s]: draw s loaded into the explainer
	// DrawNames, if not nil, name the draws in errors (the weights file
	// of `uaxai explain`).
	DrawNames []string
}

// Inputs is one batch of the explain step.
type Inputs struct {
	Split   string    // the split's name: the seeds' key
	Records []int     // the index of each input in its split: the seeds' key
	X       []float32 // the inputs, one after the other
	Targets []int     // the class explained for each input
	Repeat  int       // the seeds' repeat (ExplainerSeed); 0 for a run's maps
	// Where is what errors call the batch; "": "split <Split> records
	// <first>..<last>". Variant, if not "", follows it (", distortion
	// shift").
	Where, Variant string
}

// Explain is the explain step: for each draw s of draws (none given:
// every draw, in order), one Explain call on the whole batch, whose maps
// go to dst[j][s] (input j under draw s). A stochastic explainer's
// request carries ExplainerSeed(e.Seed, in.Split, in.Records[j], s,
// in.Repeat) for input j. An error names the explainer, the batch, the
// draw and the variant. ctx reaches every call: the caller's worker
// context, so that a sibling's failure stops it.
func (e *Explaining) Explain(ctx context.Context, dst [][][]float64, in Inputs, draws ...int) error {
	if draws == nil {
		draws = make([]int, len(e.Models))
		for s := range draws {
			draws[s] = s
		}
	}
	for _, s := range draws {
		req := sdk.ExplainRequest{X: in.X, Targets: in.Targets, Config: e.Config}
		if e.Stochastic {
			req.Seeds = make([]uint64, len(in.Records))
			for j, r := range in.Records {
				req.Seeds[j] = ExplainerSeed(e.Seed, in.Split, r, s, in.Repeat)
			}
		}
		out, err := e.Models[s].Explain(ctx, req)
		if err != nil {
			return fmt.Errorf("%s on %s, %s: %w", e.ID, in.where(), e.drawName(s, in), err)
		}
		for j := range out {
			dst[j][s] = out[j]
		}
	}
	return nil
}

// where is what errors call the batch.
func (in Inputs) where() string {
	if in.Where != "" {
		return in.Where
	}
	if len(in.Records) == 0 {
		return "split " + in.Split
	}
	return fmt.Sprintf("split %s records %d..%d", in.Split, in.Records[0], in.Records[len(in.Records)-1])
}

// drawName is the draw, its name, the repeat and the variant, for errors.
func (e *Explaining) drawName(s int, in Inputs) string {
	d := fmt.Sprintf("draw %d", s)
	if s < len(e.DrawNames) {
		d += " (" + e.DrawNames[s] + ")"
	}
	if in.Repeat > 0 {
		d += fmt.Sprintf(", repeat %d", in.Repeat)
	}
	if in.Variant != "" {
		d += ", " + in.Variant
	}
	return d
}
