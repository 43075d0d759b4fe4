package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/sdk"
)

// This file checks a recipe with its plugins before anything runs: each
// plugin's Check on its table (a posterior's file keys resolved in the
// recipe itself), the base of a post-hoc posterior, and the trial.

// Check validates a recipe's plugin tables with the plugins themselves,
// without running anything.
func Check(ctx context.Context, r *recipe.Recipe, p engine.Plugins) error {
	_, err := check(ctx, r, newResolver(p, r, 1))
	return err
}

// check is Check, returning the version of every plugin by ID.
func check(ctx context.Context, r *recipe.Recipe, res *resolver) (map[string]string, error) {
	if len(r.Data.Classes) > 0 {
		return nil, r.Errorf([]string{"data", "classes"}, "a class subset is not supported yet (accepted: leave classes out for all 16)")
	}
	versions := map[string]string{}
	for i, ref := range r.Posteriors {
		pl, err := res.Posterior(ctx, ref.ID)
		if err != nil {
			return nil, r.PluginError(ref, err)
		}
		info := pl.Info()
		// File keys are resolved in the recipe itself (see files.go).
		ref.Config = resolveFiles(ref.Config, info.Files, r.Dir)
		r.Posteriors[i].Config = ref.Config
		if err := pl.Check(ref.Config, ref.Draws); err != nil {
			return nil, r.PluginError(ref, err)
		}
		if err := checkFiles(r, ref, info.Files); err != nil {
			return nil, err
		}
		versions[info.ID] = info.Version
		if info.Base != "" {
			v, err := checkBase(ctx, res, ref, info)
			if err != nil {
				return nil, r.PluginError(ref, err)
			}
			versions[info.Base] = v
		}
	}
	for _, ref := range r.Explainers {
		e, err := res.Explainer(ctx, ref.ID)
		if err != nil {
			return nil, r.PluginError(ref, err)
		}
		if err := e.Check(ref.Config); err != nil {
			return nil, r.PluginError(ref, err)
		}
		versions[e.Info().ID] = e.Info().Version
	}
	for _, ref := range r.Summaries {
		s, err := res.Summary(ctx, steps([]recipe.PluginRef{ref})[0].ID)
		if err != nil {
			return nil, r.PluginError(ref, err)
		}
		if err := s.Check(ref.Config); err != nil {
			return nil, r.PluginError(ref, err)
		}
		versions[s.Info().ID] = s.Info().Version
	}
	arch, err := r.Arch()
	if err != nil {
		return nil, err
	}
	if err := trial(ctx, r, res, arch); err != nil {
		return nil, err
	}
	return versions, nil
}

// checkBase checks the base of a post-hoc posterior (sdk.Info.Base): it
// must be available, have no base of its own, and accept the keys of the
// posterior's table that it gets (BaseKeys). It returns the base's version.
func checkBase(ctx context.Context, res engine.Plugins, ref recipe.PluginRef, info sdk.Info) (string, error) {
	bp, bs, err := engine.ResolveBase(ctx, res, steps([]recipe.PluginRef{ref})[0], info)
	if err != nil {
		return "", fmt.Errorf("key \"use\": %w", err)
	}
	if err := bp.Check(bs.Config, 1); err != nil {
		return "", fmt.Errorf("its base %s, with the keys %s of this table: %w", info.Base, strings.Join(info.BaseKeys, ", "), err)
	}
	return bp.Info().Version, nil
}
