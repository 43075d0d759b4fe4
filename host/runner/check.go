package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/script"
	"github.com/uaxai/uaxai/sdk"
)

// This file checks a recipe with its plugins before anything runs: each
// plugin's Check on its table (a posterior's file keys resolved in the
// recipe itself), the base of a post-hoc posterior, and the trial. Check
// does all of it with every plugin the recipe names, and so runs their
// code; CheckStatic does it with the built-ins only, and runs no code
// that comes with the recipe (see "Trust model" in the package doc).

// Check validates a recipe's plugin tables with the plugins themselves,
// and runs the trial (trial.go), fitting nothing and writing nothing. It
// starts every plugin and script the recipe names: the binaries and
// Python plugins of the plugin directories and the summary scripts run,
// as they would in a run (`uaxai recipe check --trial`; a run checks its
// recipe so).
func Check(ctx context.Context, r *recipe.Recipe, p engine.Plugins) error {
	res, err := newResolver(p, r, 1)
	if err != nil {
		return err
	}
	_, err = check(ctx, r, res)
	return err
}

// NotStarted is a plugin or script that CheckStatic found and did not
// start: a plugin binary or directory (Source its path), a summary
// script (ID and Source its path), or a plugin of Plugins that are no
// Locator (Source "").
type NotStarted struct {
	ID     string
	Source string
}

// Locator finds a plugin without starting it: host/plugin's Manager.
// builtin is true for a plugin compiled into uaxai; else source is the
// binary or plugin directory that would serve it. Its error is that of a
// plugin that cannot be had (unknown, or a bad manifest).
type Locator interface {
	Locate(id string) (builtin bool, source string, err error)
}

// CheckStatic is Check without running any code that comes with the
// recipe (`uaxai recipe check` and `uaxai slurm submit --dry-run`): the
// recipe's own checks, then for every plugin table the plugin is located
// (Locator; the plugin directories and their plugin.toml manifests read
// as data) and only a built-in is started, checked on its table and
// tried (the trial); a summary script is parsed (script.Inspect), not
// loaded. A plugin that p cannot locate without starting it (p is not a
// Locator) is not started either. It returns what it did not start: the
// tables of those plugins were not checked by their plugins, and Check
// does that.
func CheckStatic(ctx context.Context, r *recipe.Recipe, p engine.Plugins) ([]NotStarted, error) {
	res, err := newResolver(p, r, 1)
	if err != nil {
		return nil, err
	}
	_, skipped, err := checkWith(ctx, r, res, true)
	return skipped, err
}

// check is Check, returning the version of every plugin by ID.
func check(ctx context.Context, r *recipe.Recipe, res *resolver) (map[string]string, error) {
	versions, _, err := checkWith(ctx, r, res, false)
	return versions, err
}

// checkWith is Check, or CheckStatic when static, returning the version
// of every plugin started by ID and, when static, what it did not start.
func checkWith(ctx context.Context, r *recipe.Recipe, res *resolver, static bool) (map[string]string, []NotStarted, error) {
	if len(r.Data.Classes) > 0 {
		return nil, nil, r.Errorf([]string{"data", "classes"}, "a class subset is not supported yet (accepted: leave classes out for all 16)")
	}
	var skipped []NotStarted
	// may says whether plugin id (a summary script's path when isScript)
	// may be started: always, unless static; then a built-in only. A
	// plugin it refuses is checked here as far as that runs nothing.
	may := func(id string, isScript bool) (bool, error) {
		if !static {
			return true, nil
		}
		ns := NotStarted{ID: id} // no Source: p cannot say without starting it
		switch loc, ok := res.Plugins.(Locator); {
		case isScript:
			if err := script.Inspect(id); err != nil {
				return false, err
			}
			ns.Source = id
		case ok:
			builtin, src, err := loc.Locate(id)
			if err != nil {
				return false, err
			}
			if builtin {
				return true, nil
			}
			ns.Source = src
		}
		for _, s := range skipped {
			if s == ns {
				return false, nil
			}
		}
		skipped = append(skipped, ns)
		return false, nil
	}
	arch, err := r.Arch()
	if err != nil {
		return nil, nil, err
	}
	versions := map[string]string{}
	for i, ref := range r.Posteriors {
		if ok, err := may(ref.ID, false); err != nil || !ok {
			if err != nil {
				return nil, nil, r.PluginError(ref, err)
			}
			continue
		}
		pl, err := res.Posterior(ctx, ref.ID)
		if err != nil {
			return nil, nil, r.PluginError(ref, err)
		}
		info := pl.Info()
		if arch.ShapeOnly() && !info.ServesModels {
			return nil, nil, r.Errorf([]string{"posterior", strconv.Itoa(i), "use"}, "%s (%s) needs a network uaxai builds, and [model] torch = %s is a PyTorch module (accepted: use = \"torch\", posterior.torch, whose draws are the module with its weights files: several for an ensemble, mc_dropout = true for MC dropout; or a posterior that serves its draws)", "[[posterior]] #"+strconv.Itoa(i+1)+" use", info.ID, sdk.Quote(r.Model.Torch))
		}
		// File keys are resolved in the recipe itself (see files.go).
		ref.Config = resolveFiles(ref.Config, info.Files, r.Dir)
		r.Posteriors[i].Config = ref.Config
		if err := pl.Check(ref.Config, ref.Draws); err != nil {
			return nil, nil, r.PluginError(ref, err)
		}
		if n := r.Replicates.N(); n > 1 && !info.Replicates {
			// before the run: its replicates would be one network again
			return nil, nil, r.Errorf([]string{"replicates", "count"}, "%d replicates, and [[posterior]] #%d uses %s, whose fit does not derive its training seeds from the replicate (it trains nothing of its own, or is older than sdk.Info.Replicates): its replicates would be the same networks (accepted with [replicates]: posteriors that train, such as deterministic, ensemble, mcdropout, laplace, noisegrad)", n, i+1, info.ID)
		}
		if err := checkFiles(r, ref, info.Files); err != nil {
			return nil, nil, err
		}
		versions[info.ID] = info.Version
		if info.Base != "" {
			ok, err := may(info.Base, false)
			if err != nil {
				return nil, nil, r.PluginError(ref, fmt.Errorf("key \"use\": %s is fitted post hoc on %s, which is not available: %w", info.ID, info.Base, err))
			}
			if !ok {
				continue
			}
			v, err := checkBase(ctx, res, ref, info)
			if err != nil {
				return nil, nil, r.PluginError(ref, err)
			}
			versions[info.Base] = v
		}
	}
	var explainers, summaries []recipe.PluginRef // those started, for the trial
	for _, ref := range r.Explainers {
		if ok, err := may(ref.ID, false); err != nil || !ok {
			if err != nil {
				return nil, nil, r.PluginError(ref, err)
			}
			continue
		}
		e, err := res.Explainer(ctx, ref.ID)
		if err != nil {
			return nil, nil, r.PluginError(ref, err)
		}
		if err := e.Check(ref.Config); err != nil {
			return nil, nil, r.PluginError(ref, err)
		}
		versions[e.Info().ID] = e.Info().Version
		explainers = append(explainers, ref)
	}
	for _, ref := range r.Summaries {
		id := steps([]recipe.PluginRef{ref})[0].ID
		if ok, err := may(id, ref.Script != ""); err != nil || !ok {
			if err != nil {
				return nil, nil, r.PluginError(ref, err)
			}
			continue
		}
		s, err := res.Summary(ctx, id)
		if err != nil {
			return nil, nil, r.PluginError(ref, err)
		}
		if err := s.Check(ref.Config); err != nil {
			return nil, nil, r.PluginError(ref, err)
		}
		versions[s.Info().ID] = s.Info().Version
		summaries = append(summaries, ref)
	}
	if err := trial(ctx, r, res, arch, explainers, summaries); err != nil {
		return nil, nil, err
	}
	return versions, skipped, nil
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
