package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/uaxai/uaxai/sdk"
)

// This file fits the plan's posteriors: each through the cache, and a
// post-hoc posterior (sdk.Info.Base, a Laplace approximation around a
// trained network) after its base, which is fitted through the same cache
// under the base's own key, so that a recipe's own deterministic posterior
// and a Laplace posterior on the same seed share one trained network.

// BaseStep is the step of a post-hoc posterior's base: the base's ID and,
// as its table, the keys info.BaseKeys of the posterior's table (those that
// are set). Its label names the post-hoc posterior it serves.
func BaseStep(ps Step, info sdk.Info) Step {
	cfg := sdk.Config{}
	for _, k := range info.BaseKeys {
		if v, ok := ps.Config[k]; ok {
			cfg[k] = sdk.CloneValue(v)
		}
	}
	return Step{ID: info.Base, Label: ps.Label + " base (" + info.Base + ")", Draws: 1, Config: cfg, Replicate: ps.Replicate, Replicated: ps.Replicated}
}

// ResolveBase resolves the base of a post-hoc posterior (info is the
// posterior's): the base must be available and have no base of its own.
// It returns the base and its step (BaseStep).
func ResolveBase(ctx context.Context, res Plugins, ps Step, info sdk.Info) (sdk.Posterior, Step, error) {
	bp, err := res.Posterior(ctx, info.Base)
	if err != nil {
		return nil, Step{}, fmt.Errorf("%s is fitted post hoc on %s, which is not available: %w", info.ID, info.Base, err)
	}
	if bi := bp.Info(); bi.Base != "" {
		return nil, Step{}, fmt.Errorf("%s is fitted post hoc on %s, which is itself fitted post hoc (on %s); a base must have no base of its own", info.ID, info.Base, bi.Base)
	}
	return bp, BaseStep(ps, info), nil
}

// fitKeys identify one fit: run within this run (the plan is fixed, so
// the plugin, its version and its table; a post-hoc fit adds its base's),
// cache across runs (Plan.CacheKey; a post-hoc fit's covers its base's).
// An empty key is no key.
type fitKeys struct{ run, cache string }

// fitted is an artifact kept for the run, and the label it was fitted for.
type fitted struct {
	art   sdk.Artifact
	label string
}

// fitter fits the plan's posteriors. An artifact that two fits of the
// plan share (a post-hoc posterior's base and the recipe's own table of
// it, or two tables alike) is kept for the run, so that it is fitted at
// most once per run, with or without the cache.
type fitter struct {
	p     *Plan
	res   Plugins
	cache Cache
	obs   Observer
	tim   Timings
	ctx   context.Context
	keep  map[string]bool   // run keys of the fits the plan needs twice or more
	kept  map[string]fitted // those fitted or loaded so far
}

// newFitter resolves the base of every post-hoc posterior of the plan
// (posts[i] is the plugin of p.Posteriors[i]) before anything is fitted,
// and counts the fits the plan needs.
func newFitter(ctx context.Context, p *Plan, res Plugins, cache Cache, obs Observer, tim Timings, posts []sdk.Posterior) (*fitter, error) {
	f := &fitter{p: p, res: res, cache: cache, obs: obs, tim: tim, ctx: ctx, keep: map[string]bool{}, kept: map[string]fitted{}}
	needs := map[string]int{}
	for i, ps := range p.Posteriors {
		info := posts[i].Info()
		if err := replicable(ps, info); err != nil {
			return nil, err
		}
		var base *fitKeys
		if info.Base != "" {
			bp, bs, err := ResolveBase(ctx, res, ps, info)
			if err != nil {
				return nil, fmt.Errorf("posterior %s: %w", ps.Name(), err)
			}
			if err := replicable(bs, bp.Info()); err != nil {
				return nil, err
			}
			base = &fitKeys{run: runKey(bs, bp.Info(), nil)}
			needs[base.run]++
		}
		needs[runKey(ps, info, base)]++
	}
	for k, n := range needs {
		if k != "" && n > 1 {
			f.keep[k] = true
		}
	}
	return f, nil
}

// runKey identifies a fit within a run: the plugin, its version, its
// table, its replicate and, for a post-hoc fit, its base's run key (""
// if any is missing).
func runKey(ps Step, info sdk.Info, base *fitKeys) string {
	b, err := json.Marshal(struct {
		ID, Version string
		Config      sdk.Config
		Replicate   int `json:",omitempty"`
	}{info.ID, info.Version, ps.Config, ps.Replicate})
	if err != nil {
		return ""
	}
	if base == nil {
		return string(b)
	}
	if base.run == "" {
		return ""
	}
	return string(b) + "\x00base " + base.run
}

// PostHocKey is the cache key of a post-hoc posterior whose own key (from
// Plan.CacheKey) is own and whose base's key is base: a new base (another
// version, seed or training) is a new entry.
func PostHocKey(own, base string) string {
	h := sha256.Sum256([]byte("uaxai-posthoc-1\x00" + own + "\x00" + base))
	return hex.EncodeToString(h[:])
}

// keys returns the keys of a fit (of a post-hoc fit whose base has keys
// base, if base is not nil). The cache key is computed only when there is
// a cache.
func (f *fitter) keys(ps Step, info sdk.Info, base *fitKeys) fitKeys {
	k := fitKeys{run: runKey(ps, info, base)}
	if f.cache == nil || f.p.CacheKey == nil {
		return k
	}
	own, err := f.p.CacheKey(ps, info)
	if err != nil {
		f.obs.Note(fmt.Sprintf("%s: no cache key (%v): fitting without the cache", ps.Name(), err))
		return k
	}
	if base == nil {
		k.cache = own
		return k
	}
	if base.cache == "" {
		f.obs.Note(fmt.Sprintf("%s: its base %s has no cache key: fitting without the cache", ps.Name(), info.Base))
		return k
	}
	k.cache = PostHocKey(own, base.cache)
	return k
}

// fit returns the artifact of posterior post for step ps: kept from
// earlier in the run, from the cache, or fitted (a post-hoc posterior
// after its base, which goes through the same path).
func (f *fitter) fit(ctx context.Context, ps Step, post sdk.Posterior) (sdk.Artifact, error) {
	info := post.Info()
	if info.Base == "" {
		return f.cached(ps, f.keys(ps, info, nil), func() (sdk.Artifact, error) { return f.fitOne(ctx, ps, post, nil, 0, 0) })
	}
	bp, bs, err := ResolveBase(ctx, f.res, ps, info)
	if err != nil {
		return sdk.Artifact{}, fmt.Errorf("posterior %s: %w", ps.Name(), err)
	}
	bk := f.keys(bs, bp.Info(), nil)
	return f.cached(ps, f.keys(ps, info, &bk), func() (sdk.Artifact, error) {
		t0 := time.Now()
		base, err := f.cached(bs, bk, func() (sdk.Artifact, error) { return f.fitOne(ctx, bs, bp, nil, 0, 0) })
		f.tim["fit "+bs.Name()] = time.Since(t0)
		if err != nil {
			return sdk.Artifact{}, err
		}
		return f.fitOne(ctx, ps, post, &base, 0, 0)
	})
}

// Locker is a Cache whose entries can be locked across processes
// (host/store): a fit holds its entry's lock from the lookup to the store.
type Locker interface {
	Lock(ctx context.Context, key string, onWait func()) (func(), error)
}

// cached returns the artifact kept under k.run, else the cache's under
// k.cache, else fitArt's (stored in the cache); it keeps the artifact for
// the run if another fit of the plan needs it too.
func (f *fitter) cached(ps Step, k fitKeys, fitArt func() (sdk.Artifact, error)) (sdk.Artifact, error) {
	if k.run != "" {
		if a, ok := f.kept[k.run]; ok {
			f.obs.Note(fmt.Sprintf("%s: fitted posterior reused from %s, fitted or loaded earlier in this run", ps.Name(), a.label))
			return a.art, nil
		}
	}
	keep := func(a sdk.Artifact) {
		if k.run != "" && f.keep[k.run] {
			f.kept[k.run] = fitted{art: a, label: ps.Name()}
		}
	}
	if l, ok := f.cache.(Locker); ok && k.cache != "" {
		unlock, err := l.Lock(f.ctx, k.cache, func() {
			f.obs.Note(fmt.Sprintf("%s: another process is fitting it into the cache (%s): waiting", ps.Name(), k.cache[:min(12, len(k.cache))]))
		})
		if err != nil {
			return sdk.Artifact{}, fmt.Errorf("%s: %w", ps.Name(), err)
		}
		defer unlock()
	}
	if k.cache != "" {
		a, ok, err := f.cache.Get(k.cache)
		if err != nil {
			f.obs.Note(fmt.Sprintf("cache: %v (fitting again)", err))
		} else if ok {
			f.obs.Note(fmt.Sprintf("%s: fitted posterior taken from the cache (%s)", ps.Name(), k.cache[:min(12, len(k.cache))]))
			keep(a)
			return a, nil
		}
	}
	art, err := fitArt()
	if err != nil {
		return sdk.Artifact{}, err
	}
	if k.cache != "" {
		if err := f.cache.Put(k.cache, art); err != nil {
			f.obs.Note(fmt.Sprintf("cache: could not store %s: %v", ps.Name(), err))
		}
	}
	keep(art)
	return art, nil
}

// fitPart returns part k of K of a parted posterior's fit (not post
// hoc): through the cache, under a key derived from the whole fit's.
func (f *fitter) fitPart(ctx context.Context, ps Step, post sdk.Posterior, k, K int) (sdk.Artifact, error) {
	keys := f.keys(ps, post.Info(), nil)
	tag := fmt.Sprintf("part %d/%d", k, K)
	if keys.run != "" {
		keys.run += "\x00" + tag
	}
	if keys.cache != "" {
		h := sha256.Sum256([]byte("uaxai-part-1\x00" + keys.cache + "\x00" + tag))
		keys.cache = hex.EncodeToString(h[:])
	}
	label := fmt.Sprintf("%s part %d/%d", ps.Name(), k+1, K)
	// label names the replicate already: the steps keep Replicate (the
	// fit's seed) but not Replicated (Name's suffix).
	return f.cached(Step{ID: ps.ID, Label: label, Draws: ps.Draws, Target: ps.Target, Config: ps.Config, Replicate: ps.Replicate}, keys, func() (sdk.Artifact, error) {
		return f.fitOne(ctx, Step{ID: ps.ID, Label: label, Config: ps.Config, Replicate: ps.Replicate}, post, nil, k, K)
	})
}

// fitOne fits one posterior (part k of K when K > 0), on top of base if
// it is not nil.
func (f *fitter) fitOne(ctx context.Context, ps Step, post sdk.Posterior, base *sdk.Artifact, part, parts int) (sdk.Artifact, error) {
	p := f.p
	f.obs.Stage("fit "+ps.Name(), 0)
	req := sdk.FitRequest{
		Arch: p.Arch, Train: p.TrainSet, Val: p.ValSet, Training: p.Train, Config: ps.Config,
		Seed: p.seedOf(ps), Replicate: ps.Replicate, Workers: p.Workers, Base: base,
		Progress: func(pr sdk.Progress) {
			f.obs.Stage("fit "+ps.Name(), pr.Total)
			f.obs.Advance(pr.Done, pr.Message)
		},
	}
	if parts > 0 {
		req.Part, req.Parts = part, parts
	}
	art, err := post.Fit(ctx, req)
	if err != nil {
		return sdk.Artifact{}, fmt.Errorf("posterior %s: fit: %w", ps.ID, err)
	}
	return art, nil
}

// replicable refuses a step of a replicate after the first whose plugin
// does not derive its training seeds from FitRequest.Replicate: its
// replicates would be replicate 0's networks again, and the spread across
// replicates would be zero for want of training, not measured.
func replicable(ps Step, info sdk.Info) error {
	if ps.Replicate == 0 || info.Replicates {
		return nil
	}
	return fmt.Errorf("posterior %s: %s %s does not derive its training seeds from the replicate (sdk.Info.Replicates is false), so its replicates would be the same networks: accepted with [replicates]: posteriors that do (the built-ins but posterior.files)", ps.Name(), info.ID, info.Version)
}

// seedOf is the FitRequest.Seed of a posterior step: its replicate's seed.
func (p *Plan) seedOf(ps Step) uint64 {
	if p.ReplicateSeeds == nil {
		return p.Seed
	}
	return p.ReplicateSeeds[ps.Replicate]
}

// fitMeta is the artifact's metadata for a result row (never nil, so
// that results.json always has the key).
func fitMeta(a sdk.Artifact) map[string]string {
	m := maps.Clone(a.Meta)
	if m == nil {
		m = map[string]string{}
	}
	return m
}
