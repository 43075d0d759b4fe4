package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/script"
	"github.com/uaxai/uaxai/host/torchserver"
	"github.com/uaxai/uaxai/sdk"
)

// This file resolves a recipe's plugins: the plugin manager with the
// recipe's [limits] and plugin_dirs, and its scripted summaries.

// resolver adds the recipe's scripted summaries to a plugin manager:
// a step whose ID is a script path of the recipe is served by the
// manager's Script, in a process of its own, like every other plugin
// (its digest is kept for the manifest); every other ID goes to the
// manager's Summary. Both keep their clients. newResolver hands the
// recipe's [limits] to the manager, with over (the command line's
// --limit) set over them.
type resolver struct {
	engine.Plugins
	workers int
	paths   map[string]bool // the recipe's script paths
	mu      sync.Mutex
	digests map[string]string // script path -> SHA-256 of its source
}

// Scripts is what serves summary scripts: host/plugin's Manager, which
// runs each in a process of its own.
type Scripts interface {
	Script(ctx context.Context, path string, instances int) (sdk.Summary, error)
}

// limiter is what takes the recipe's [limits]: host/plugin's Manager.
type limiter interface{ SetLimits(limits.Limits) }

// dirAdder is what takes the recipe's plugin_dirs: host/plugin's Manager.
type dirAdder interface{ AddDirs(dirs ...string) }

func newResolver(p engine.Plugins, r *recipe.Recipe, workers int, over ...limits.Setting) (*resolver, error) {
	lim := r.Limits
	if err := lim.Apply(over); err != nil {
		return nil, fmt.Errorf("--limit: %w", err)
	}
	if l, ok := p.(limiter); ok {
		l.SetLimits(lim)
	}
	if a, ok := p.(dirAdder); ok {
		if len(r.PluginDirs) > 0 {
			a.AddDirs(r.PluginDirs...)
		}
		if d := shippedTorchPosterior(r); d != "" {
			a.AddDirs(d)
		}
	}
	res := &resolver{Plugins: p, workers: workers, paths: map[string]bool{}, digests: map[string]string{}}
	for _, ref := range r.Summaries {
		if ref.Script != "" {
			res.paths[ref.Script] = true
		}
	}
	return res, nil
}

// shippedTorchPosterior is the repository's plugins/posterior/torch, the
// directory of posterior.torch beside the Python kit (torchserver.FindPythonKit),
// when a posterior of r uses it; else "". It comes after the recipe's
// plugin_dirs, which may hold another posterior.torch.
func shippedTorchPosterior(r *recipe.Recipe) string {
	uses := false
	for _, p := range r.Posteriors {
		uses = uses || p.ID == recipe.TorchPosterior
	}
	if !uses {
		return ""
	}
	kit, err := torchserver.FindPythonKit()
	if err != nil {
		return ""
	}
	d := filepath.Join(filepath.Dir(filepath.Dir(kit)), "plugins", "posterior", "torch")
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return ""
	}
	return d
}

func (r *resolver) Summary(ctx context.Context, id string) (sdk.Summary, error) {
	if !r.paths[id] {
		return r.Plugins.Summary(ctx, id)
	}
	sc, ok := r.Plugins.(Scripts)
	if !ok {
		return nil, fmt.Errorf("script %s: the plugins given (%T) do not serve scripts", id, r.Plugins)
	}
	s, err := sc.Script(ctx, id, max(r.workers, 1))
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.digests[id]; !ok {
		src, err := script.ReadSource(id)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(src)
		r.digests[id] = hex.EncodeToString(sum[:])
	}
	return s, nil
}

func steps(refs []recipe.PluginRef) []engine.Step {
	out := make([]engine.Step, len(refs))
	for i, p := range refs {
		id := p.ID
		if p.Script != "" {
			id = p.Script
		}
		out[i] = engine.Step{ID: id, Label: p.Label, Draws: p.Draws, Target: p.Target, Config: p.Config}
	}
	return out
}

// replicated is the posterior steps of a recipe, each once a replicate
// (replicate 0's first, in the recipe's order), and the replicates'
// seeds; without [replicates], the recipe's steps and nil.
func replicated(r *recipe.Recipe) ([]engine.Step, []uint64) {
	posts := steps(r.Posteriors)
	if r.Replicates == nil {
		return posts, nil
	}
	n := r.Replicates.N()
	out := make([]engine.Step, 0, n*len(posts))
	seeds := make([]uint64, n)
	for rep := range n {
		seeds[rep] = r.Replicates.Seed(r.Seed, rep)
		for _, p := range posts {
			p.Replicate, p.Replicated = rep, true
			p.Config = p.Config.Clone()
			out = append(out, p)
		}
	}
	return out, seeds
}

// resampleSplits gives the posterior steps of each replicate r >= 1 test
// splits of their own: those the recipe's data would have with the
// replicate's seed (the training and validation sets stay the recipe's).
// Replicate 0 keeps the recipe's splits.
func resampleSplits(ctx context.Context, r *recipe.Recipe, posts []engine.Step, seeds []uint64) error {
	for rep := 1; rep < len(seeds); rep++ {
		rr := *r
		rr.Seed, rr.Replicates = seeds[rep], nil
		ds, err := LoadData(ctx, &rr)
		if err != nil {
			return fmt.Errorf("replicate %d's test splits: %w", rep, err)
		}
		for i := range posts {
			if posts[i].Replicate == rep {
				posts[i].Tests = ds.Tests
			}
		}
	}
	return nil
}
