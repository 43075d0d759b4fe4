package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// The tests of this file check post-hoc posteriors (sdk.Info.Base): a
// fake "posterior.base" (the fake posterior of engine_test.go, which also
// logs the tables it is fitted with) and a fake "posterior.posthoc" fitted
// on top of it, which echoes its base's members as its own draws.

// baseFake is the fake posterior under another ID and version, logging
// the table of every fit.
type baseFake struct {
	fakePosterior
	version string
	base    string // Info.Base: a base with a base of its own
	configs []sdk.Config
}

func (b *baseFake) Info() sdk.Info {
	return sdk.Info{ID: b.id, Version: b.version, Finite: true, Base: b.base}
}

func (b *baseFake) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	b.mu.Lock()
	b.configs = append(b.configs, req.Config.Clone())
	b.mu.Unlock()
	a, err := b.fakePosterior.Fit(ctx, req)
	a.Meta = map[string]string{"seed": fmt.Sprint(req.Config["seed"])}
	return a, err
}

// postHoc is fitted on posterior.base with its "seed" and "lr"; its
// artifact is its base's members and meta, and its own "scale".
type postHoc struct {
	lock  sync.Mutex
	fits  int
	bases []*sdk.Artifact // FitRequest.Base of every fit
	note  string          // Meta["note"] of its artifacts
}

func (p *postHoc) Info() sdk.Info {
	return sdk.Info{ID: "posterior.posthoc", Version: "1.0.0", Base: "posterior.base", BaseKeys: []string{"seed", "lr"}}
}
func (p *postHoc) Check(sdk.Config, int) error { return nil }
func (p *postHoc) Fit(_ context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	p.lock.Lock()
	defer p.lock.Unlock()
	p.fits++
	p.bases = append(p.bases, req.Base)
	if req.Base == nil {
		return sdk.Artifact{}, errors.New("no base artifact")
	}
	a := sdk.Artifact{Arch: req.Base.Arch, Tensors: maps.Clone(req.Base.Tensors), Meta: map[string]string{"scale": fmt.Sprint(req.Config["scale"]), "base_seed": req.Base.Meta["seed"]}}
	if p.note != "" {
		a.Meta["note"] = p.note
	}
	return a, nil
}
func (p *postHoc) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	return (&fakePosterior{}).Sample(ctx, a, req)
}

// posthocPlugins resolves the fake base (if not nil), the post-hoc fake,
// and the engine_test fakes' explainer and summary.
type posthocPlugins struct {
	*fakes
	base *baseFake
	ph   *postHoc
}

func (x posthocPlugins) Posterior(_ context.Context, id string) (sdk.Posterior, error) {
	switch {
	case x.base != nil && id == x.base.id:
		return driver.LocalPosterior(x.base)
	case id == "posterior.posthoc":
		return driver.LocalPosterior(x.ph)
	}
	return nil, fmt.Errorf("unknown posterior %q", id)
}

func newPosthoc(version string) posthocPlugins {
	return posthocPlugins{fakes: newFakes(2), base: &baseFake{fakePosterior: fakePosterior{id: "posterior.base", members: 2}, version: version}, ph: &postHoc{}}
}

// posthocPlan has the base posterior (seed 3) and the post-hoc one (seed
// baseSeed) as its posteriors, in that order or the other.
func posthocPlan(baseSeed int64, posthocFirst bool) Plan {
	p := testPlan(4, 2, 2, 4)
	base := Step{ID: "posterior.base", Label: "Base", Draws: 2, Config: sdk.Config{"seed": int64(3)}}
	ph := Step{ID: "posterior.posthoc", Label: "Post hoc", Draws: 2, Config: sdk.Config{"seed": baseSeed, "scale": 2.5, "own": "x"}}
	p.Posteriors = []Step{base, ph}
	if posthocFirst {
		p.Posteriors = []Step{ph, base}
	}
	return p
}

// labelFreeKey is a cache key that, as host/runner's, depends on the
// plugin, its version and its table only.
func labelFreeKey(p Step, info sdk.Info) (string, error) {
	return fmt.Sprintf("%s-%s-%v", info.ID, info.Version, p.Config) + strings.Repeat("0", 12), nil
}

// TestPostHocBaseFittedOnce: with the base posterior and a post-hoc one
// on the same seed in one plan, the base is fitted once, in either order,
// with or without a cache, and the post-hoc fit gets its artifact; a
// second run with the cache fits nothing; a run of the post-hoc posterior
// alone takes its base from the cache and says so.
func TestPostHocBaseFittedOnce(t *testing.T) {
	for _, withCache := range []bool{false, true} {
		for _, first := range []bool{false, true} {
			name := fmt.Sprintf("cache %v, post hoc first %v", withCache, first)
			x := newPosthoc("1.0.0")
			p := posthocPlan(3, first)
			var cache *memCache
			if withCache {
				cache, p.CacheKey = &memCache{}, labelFreeKey
			}
			obs := &recorder{}
			var c Cache
			if cache != nil {
				c = cache
			}
			res, _, err := Run(context.Background(), p, x, c, obs)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if x.base.fits != 1 || x.ph.fits != 1 {
				t.Errorf("%s: base fitted %d times, post hoc %d; want 1 and 1", name, x.base.fits, x.ph.fits)
			}
			if len(x.ph.bases) != 1 || x.ph.bases[0] == nil || x.ph.bases[0].Meta["seed"] != "3" || len(x.ph.bases[0].Tensors) != 2 {
				t.Fatalf("%s: post-hoc fit got base %+v, want the base's artifact", name, x.ph.bases)
			}
			if !obs.noted("base (posterior.base): fitted posterior reused from Base") && !obs.noted("Base: fitted posterior reused from Post hoc base (posterior.base)") {
				t.Errorf("%s: notes %q do not say the base was reused", name, obs.notes)
			}
			if len(res.Rows) != 2 {
				t.Fatalf("%s: %d rows, want 2", name, len(res.Rows))
			}
			if withCache && (cache.puts != 2 || len(cache.m) != 2) {
				t.Errorf("%s: %d puts, %d entries; want the base's and the post-hoc's", name, cache.puts, len(cache.m))
			}
			if !withCache || first {
				continue
			}
			// A warm cache: nothing is fitted.
			y := newPosthoc("1.0.0")
			if _, _, err := Run(context.Background(), p, y, c, &recorder{}); err != nil {
				t.Fatal(err)
			}
			if y.base.fits != 0 || y.ph.fits != 0 {
				t.Errorf("%s, warm cache: %d base fits, %d post-hoc fits; want none", name, y.base.fits, y.ph.fits)
			}
			// The post-hoc posterior alone, its own entry gone: the base
			// comes from the cache, under the base's own key.
			for k := range cache.m {
				if strings.HasPrefix(k, "posterior.base") {
					continue
				}
				delete(cache.m, k)
			}
			z := newPosthoc("1.0.0")
			q := p
			q.Posteriors = p.Posteriors[1:]
			obs = &recorder{}
			if _, _, err := Run(context.Background(), q, z, c, obs); err != nil {
				t.Fatal(err)
			}
			if z.base.fits != 0 || z.ph.fits != 1 || !obs.noted("Post hoc base (posterior.base): fitted posterior taken from the cache") {
				t.Errorf("post hoc alone: %d base fits, %d post-hoc fits, notes %q; want the base from the cache", z.base.fits, z.ph.fits, obs.notes)
			}
		}
	}
}

// TestPostHocBaseConfig: the base is fitted with the keys BaseKeys of the
// post-hoc table that are set (seed, not lr, nor the post-hoc's own keys);
// a post-hoc posterior on another seed than the plan's base step gets a
// base of its own.
func TestPostHocBaseConfig(t *testing.T) {
	x := newPosthoc("1.0.0")
	if _, _, err := Run(context.Background(), posthocPlan(4, false), x, nil, nil); err != nil {
		t.Fatal(err)
	}
	want := []sdk.Config{{"seed": int64(3)}, {"seed": int64(4)}}
	if x.base.fits != 2 || !reflect.DeepEqual(x.base.configs, want) {
		t.Errorf("base fitted %d times with %v, want %v", x.base.fits, x.base.configs, want)
	}
	if got := x.ph.bases[0].Meta["seed"]; got != "4" {
		t.Errorf("post hoc on seed 4 got the base of seed %s", got)
	}
	bs := BaseStep(Step{Label: "L", Config: sdk.Config{"seed": int64(1), "lr": 0.1, "scale": 2.0}}, (&postHoc{}).Info())
	if bs.ID != "posterior.base" || bs.Label != "L base (posterior.base)" || !reflect.DeepEqual(bs.Config, sdk.Config{"seed": int64(1), "lr": 0.1}) {
		t.Errorf("BaseStep: %+v", bs)
	}
	// The base's table is a copy.
	cfg := sdk.Config{"seed": []any{int64(1)}}
	bs = BaseStep(Step{Config: cfg}, (&postHoc{}).Info())
	bs.Config["seed"].([]any)[0] = int64(9)
	if cfg["seed"].([]any)[0] != int64(1) {
		t.Error("BaseStep shares the post-hoc table's values")
	}
}

// TestPostHocKeyCoversBase: the post-hoc posterior's cache key changes
// when its base's key does (another base version, another seed), though
// its own key does not; the base's entry is the base's own key.
func TestPostHocKeyCoversBase(t *testing.T) {
	keysOf := func(version string, seed int64) (base, ph string) {
		x := newPosthoc(version)
		cache := &memCache{}
		p := posthocPlan(seed, true)
		p.Posteriors = p.Posteriors[:1]
		p.CacheKey = labelFreeKey
		if _, _, err := Run(context.Background(), p, x, cache, nil); err != nil {
			t.Fatal(err)
		}
		if len(cache.m) != 2 {
			t.Fatalf("%d cache entries, want 2", len(cache.m))
		}
		for k := range cache.m {
			if strings.HasPrefix(k, "posterior.base") {
				base = k
			} else {
				ph = k
			}
		}
		own, _ := labelFreeKey(p.Posteriors[0], x.ph.Info())
		bk, _ := labelFreeKey(BaseStep(p.Posteriors[0], x.ph.Info()), x.base.Info())
		if base != bk || ph != PostHocKey(own, bk) {
			t.Errorf("keys %q, %q; want the base's own and PostHocKey(own, base)", base, ph)
		}
		return base, ph
	}
	b1, p1 := keysOf("1.0.0", 3)
	b2, p2 := keysOf("2.0.0", 3)
	b3, p3 := keysOf("1.0.0", 4)
	if b1 == b2 || p1 == p2 || b1 == b3 || p1 == p3 || p2 == p3 {
		t.Errorf("keys do not follow the base: version 1 %s %s, version 2 %s %s, seed 4 %s %s", b1, p1, b2, p2, b3, p3)
	}
	if PostHocKey("a", "b") == PostHocKey("ab", "") || PostHocKey("a", "b") == PostHocKey("b", "a") {
		t.Error("PostHocKey is ambiguous")
	}
	// A base without a cache key: the post-hoc posterior is fitted
	// without the cache too.
	x := newPosthoc("1.0.0")
	p := posthocPlan(3, true)
	p.Posteriors = p.Posteriors[:1]
	p.CacheKey = func(s Step, info sdk.Info) (string, error) {
		if info.ID == "posterior.base" {
			return "", errors.New("unhashable")
		}
		return labelFreeKey(s, info)
	}
	cache, obs := &memCache{}, &recorder{}
	if _, _, err := Run(context.Background(), p, x, cache, obs); err != nil {
		t.Fatal(err)
	}
	if len(cache.m) != 0 || !obs.noted("Post hoc: its base posterior.base has no cache key: fitting without the cache") {
		t.Errorf("base without a key: %d entries, notes %q", len(cache.m), obs.notes)
	}
}

// TestPostHocMissingBase: a base that is not available, or that has a
// base of its own, is an error before anything is fitted.
func TestPostHocMissingBase(t *testing.T) {
	x := newPosthoc("1.0.0")
	x.base = nil
	p := posthocPlan(3, false)
	p.Posteriors = []Step{{ID: "posterior.fake", Label: "Fake", Draws: 2}, p.Posteriors[1]}
	_, _, err := Run(context.Background(), p, posthocWithFake{x}, nil, nil)
	want := `posterior Post hoc: posterior.posthoc is fitted post hoc on posterior.base, which is not available: unknown posterior "posterior.base"`
	if err == nil || err.Error() != want {
		t.Errorf("missing base: %v, want %q", err, want)
	}
	if x.post.fits != 0 || x.ph.fits != 0 {
		t.Errorf("missing base: %d + %d fits before the error, want none", x.post.fits, x.ph.fits)
	}
	y := newPosthoc("1.0.0")
	y.base.base = "posterior.other"
	p = posthocPlan(3, true)
	p.Posteriors = p.Posteriors[:1]
	_, _, err = Run(context.Background(), p, y, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "posterior.posthoc is fitted post hoc on posterior.base, which is itself fitted post hoc (on posterior.other)") {
		t.Errorf("a base with a base: %v", err)
	}
	if y.base.fits != 0 {
		t.Errorf("a base with a base: fitted %d times", y.base.fits)
	}
}

// posthocWithFake also serves the engine_test fake posterior.
type posthocWithFake struct{ posthocPlugins }

func (x posthocWithFake) Posterior(ctx context.Context, id string) (sdk.Posterior, error) {
	if id == x.post.id {
		return driver.LocalPosterior(x.post)
	}
	return x.posthocPlugins.Posterior(ctx, id)
}

// TestFitMetaInRows: every row carries its posterior's fit metadata (a
// copy), an empty map when it has none; a "note" goes to the run's notes.
func TestFitMetaInRows(t *testing.T) {
	x := newPosthoc("1.0.0")
	x.ph.note = "no root in the bracket: scale 1e+06 taken"
	p := posthocPlan(3, false)
	p.Posteriors = append(p.Posteriors, Step{ID: "posterior.fake", Label: "Fake", Draws: 2})
	res, _, err := Run(context.Background(), p, posthocWithFake{x}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]string
	for _, r := range res.Rows {
		got = append(got, r.Fit)
	}
	want := []map[string]string{{"seed": "3"}, {"scale": "2.5", "base_seed": "3", "note": x.ph.note}, {}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fit metadata %v, want %v", got, want)
	}
	if !slices.Contains(res.Notes, "Post hoc: no root in the bracket: scale 1e+06 taken") {
		t.Errorf("notes %q lack the post-hoc fit's note", res.Notes)
	}
}

// TestSameFitTwice: two tables alike (labels apart) share one fit, as
// two alike post-hoc tables do with their base; a post-hoc table on
// another base seed is another fit.
func TestSameFitTwice(t *testing.T) {
	x := newPosthoc("1.0.0")
	p := posthocPlan(3, true)
	ph := p.Posteriors[0]
	ph2, ph3 := ph, ph
	ph2.Label, ph3.Label = "Post hoc 2", "Post hoc 3"
	ph3.Config = sdk.Config{"seed": int64(5), "scale": 2.5, "own": "x"}
	base2 := p.Posteriors[1]
	base2.Label = "Base 2"
	p.Posteriors = append(p.Posteriors, ph2, base2, ph3)
	obs := &recorder{}
	res, _, err := Run(context.Background(), p, x, nil, obs)
	if err != nil {
		t.Fatal(err)
	}
	if x.base.fits != 2 || x.ph.fits != 2 || len(res.Rows) != 5 {
		t.Errorf("%d base fits, %d post-hoc fits, %d rows; want 2 (seeds 3 and 5), 2 (likewise) and 5", x.base.fits, x.ph.fits, len(res.Rows))
	}
	for _, n := range []string{"Post hoc 2: fitted posterior reused from Post hoc", "Base 2: fitted posterior reused from Post hoc base (posterior.base)"} {
		if !obs.noted(n) {
			t.Errorf("notes %q lack %q", obs.notes, n)
		}
	}
}
