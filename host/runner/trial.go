package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// trial runs each of explainers (tables of r) once, on one input under a
// network of the recipe's architecture, and each of summaries on maps of
// the input's length for each number of draws the recipe's posteriors
// give: every table of r for Check, those of built-ins for CheckStatic. A plugin
// table that is valid on its own but not for this data (a window longer
// than the input, a band index above the number of draws) is then an
// error of `recipe check`, at the table's line, before any fit. The
// network's weights are fixed small random values and the input a fixed
// sine, so the trial is cheap (one map an explainer) and the same every
// time; its results are thrown away.
//
// A model known by its shape only ([model] torch) has no network to try
// the explainers on here (a stand-in would not have the module's layers
// that Grad-CAM names): they are tried on the run's first batch instead,
// and the summaries here as always.
func trial(ctx context.Context, r *recipe.Recipe, res *resolver, arch nn.Arch, explainers, summaries []recipe.PluginRef) error {
	n := arch.InChannels * arch.InLen
	if !arch.ShapeOnly() {
		if err := trialExplainers(ctx, r, res, arch, explainers); err != nil {
			return err
		}
	}
	return trialSummaries(ctx, r, res, n, summaries)
}

// trialExplainers tries each explainer on one input of a random network
// of arch.
func trialExplainers(ctx context.Context, r *recipe.Recipe, res *resolver, arch nn.Arch, explainers []recipe.PluginRef) error {
	layout, err := nn.NewLayout(arch)
	if err != nil {
		return err
	}
	params := make([]float32, layout.Size)
	nn.Init(layout, params, rand.New(rand.NewPCG(1, 2)))
	n := arch.InChannels * arch.InLen
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%20) / 10 // any fixed, non-constant input
	}
	for _, ref := range explainers {
		ex, err := res.Explainer(ctx, ref.ID)
		if err != nil {
			return r.PluginError(ref, err)
		}
		m, err := ex.Load(ctx, sdk.Draw{Params: nn.Params{Arch: arch, Data: params}})
		if err != nil {
			return r.PluginError(ref, fmt.Errorf("trial on one input: %w", err))
		}
		step := engine.Explaining{ID: ref.ID, Config: ref.Config, Stochastic: ex.Info().Stochastic, Models: []driver.Model{m}}
		err = step.Explain(ctx, [][][]float64{{nil}}, engine.Inputs{Split: "trial", Records: []int{0}, X: x, Targets: []int{0},
			Where: "the trial input"})
		if cerr := m.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return r.PluginError(ref, fmt.Errorf("trial on one input of %d samples: %w", n, err))
		}
	}
	return nil
}

// trialSummaries runs each summary on made-up maps of n values, for each
// number of draws of the posteriors.
func trialSummaries(ctx context.Context, r *recipe.Recipe, res *resolver, n int, summaries []recipe.PluginRef) error {
	var draws []int // the distinct numbers of draws, ascending
	for _, p := range r.Posteriors {
		if !slices.Contains(draws, p.Draws) {
			draws = append(draws, p.Draws)
		}
	}
	slices.Sort(draws)
	for _, ref := range summaries {
		sm, err := res.Summary(ctx, steps([]recipe.PluginRef{ref})[0].ID)
		if err != nil {
			return r.PluginError(ref, err)
		}
		for _, S := range draws {
			if S < sm.Info().MinDraws {
				continue // the engine skips it, and says so
			}
			maps := make([][]float64, S)
			for s := range maps {
				maps[s] = make([]float64, n)
				for i := range maps[s] {
					maps[s][i] = float64((i*7+s*3)%11) / 10 // distinct draws, no ties everywhere
				}
			}
			if _, err := sm.Summarise(ctx, [][][]float64{maps}, ref.Config); err != nil {
				return r.PluginError(ref, fmt.Errorf("trial on %d draws of maps of %d values: %w", S, n, err))
			}
		}
	}
	return nil
}
