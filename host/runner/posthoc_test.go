package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/store"
	"github.com/uaxai/uaxai/plugins/posterior/laplace"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// laplaceTable is a Laplace posterior on the tiny recipe's deterministic
// network (its seed is the recipe's, as the deterministic table's).
const laplaceTable = `
[[posterior]]
use = "laplace"
label = "Laplace"
draws = 2
calibration_draws = 3
`

// TestLaplaceSharesTheBase: in a recipe with the deterministic posterior
// and a Laplace posterior on the same seed, the network is trained once;
// a second run takes the Laplace fit from the cache; each Laplace row
// records its scale and delta in results.json ("fit").
func TestLaplaceSharesTheBase(t *testing.T) {
	dir := t.TempDir()
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), laplaceTable)), dir)
	if err != nil {
		t.Fatal(err)
	}
	cache := store.Cache{Dir: filepath.Join(dir, "cache")}
	m := inProcess(t)
	obs := &notes{}
	o, err := Run(context.Background(), r, Options{Plugins: m, Workers: 2, Cache: cache, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(obs.all, "\n"), "Laplace base (posterior.deterministic): fitted posterior reused from Deterministic") {
		t.Errorf("notes %q do not say the deterministic network was reused", obs.all)
	}
	// Three posteriors, four cache entries (the ensemble's two members
	// are fitted as parts): the deterministic network is one of them,
	// under its own key.
	entries, _ := filepath.Glob(filepath.Join(dir, "cache", "posteriors", "*.safetensors"))
	if len(entries) != 4 {
		t.Errorf("%d cache entries, want 4 (deterministic, the ensemble's 2 members, laplace)", len(entries))
	}
	var doc struct {
		Rows []struct {
			Posterior string            `json:"posterior"`
			Fit       map[string]string `json:"fit"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(read(t, filepath.Join(o.Dir, "results.json")), &doc); err != nil {
		t.Fatal(err)
	}
	laplaceRows := 0
	for _, row := range doc.Rows {
		if row.Posterior != laplace.ID {
			if row.Fit == nil {
				t.Errorf("%s row without fit metadata", row.Posterior)
			}
			continue
		}
		laplaceRows++
		if row.Fit["delta"] != "100" || row.Fit["scale"] == "" || row.Fit["calibrated"] != "true" || row.Fit["base_seed"] != "7" {
			t.Errorf("laplace row fit metadata %v", row.Fit)
		}
	}
	if laplaceRows != 2 {
		t.Errorf("%d laplace rows, want 2 (mean, variance)", laplaceRows)
	}
	if man := string(read(t, filepath.Join(o.Dir, "manifest.json"))); !strings.Contains(man, `"posterior.laplace": "`+laplace.Version+`"`) {
		t.Errorf("manifest lacks the laplace version:\n%s", man)
	}

	obs = &notes{}
	if _, err := Run(context.Background(), r, Options{Plugins: m, Workers: 2, Cache: cache, Observer: obs}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(obs.all, "\n"), "Laplace: fitted posterior taken from the cache") {
		t.Errorf("second run notes %q: want the Laplace fit from the cache", obs.all)
	}
}

// withPostHoc serves the fake post-hoc posteriors besides the built-ins.
type withPostHoc struct {
	engine.Plugins
	fakes map[string]sdk.Posterior
}

func (w withPostHoc) Posterior(ctx context.Context, id string) (sdk.Posterior, error) {
	if p, ok := w.fakes[id]; ok {
		return driver.LocalPosterior(p)
	}
	return w.Plugins.Posterior(ctx, id)
}

// TestPostHocCheck: at check time, a post-hoc posterior whose base is not
// installed, whose base is itself post hoc, or whose forwarded keys its
// base rejects, is an error at the line of its table's use key or of the
// forwarded key.
func TestPostHocCheck(t *testing.T) {
	dir := t.TempDir()
	res := withPostHoc{Plugins: inProcess(t), fakes: map[string]sdk.Posterior{
		"posterior.fakeposthoc":  postHocOn{id: "posterior.fakeposthoc", base: "posterior.missing"},
		"posterior.fakeposthoc2": postHocOn{id: "posterior.fakeposthoc2", base: "posterior.chained"},
		"posterior.fakeposthoc3": postHocOn{id: "posterior.fakeposthoc3", base: "posterior.deterministic"},
		"posterior.chained":      postHocOn{id: "posterior.chained", base: "posterior.deterministic"},
	}}
	for _, c := range []struct {
		name, table, line string
		want              []string
	}{
		{"missing base", "\n[[posterior]]\nuse = \"fakeposthoc\"\nlabel = \"F\"\n", `use = "fakeposthoc"`,
			[]string{`key "use": posterior.fakeposthoc is fitted post hoc on posterior.missing, which is not available`, "[[posterior]] #3"}},
		{"base with a base", "\n[[posterior]]\nuse = \"fakeposthoc2\"\nlabel = \"F\"\n", `use = "fakeposthoc2"`,
			[]string{`posterior.fakeposthoc2 is fitted post hoc on posterior.chained, which is itself fitted post hoc (on posterior.deterministic)`}},
		{"base rejects the seed", "\n[[posterior]]\nuse = \"fakeposthoc3\"\nlabel = \"F\"\nseed = 1.5\n", `seed = 1.5`,
			[]string{`its base posterior.deterministic, with the keys seed of this table: posterior.deterministic: Check: key "seed": want a nonnegative integer, got 1.5`}},
	} {
		text := tinyRecipe(dir, c.table)
		r, err := recipe.Parse("tiny.toml", []byte(text), dir)
		if err != nil {
			t.Fatal(err)
		}
		err = Check(context.Background(), r, res)
		want := append(c.want, fmt.Sprintf("line %d", lineOf(text, c.line)))
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", c.name, err, w)
			}
		}
	}
	// Laplace itself checks out, and its base's version is recorded.
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(dir, laplaceTable)), dir)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := newResolver(res, r, 1)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := check(context.Background(), r, rs)
	if err != nil || versions["posterior.laplace"] != laplace.Version || versions["posterior.deterministic"] == "" {
		t.Errorf("laplace: versions %v, %v", versions, err)
	}
}

// postHocOn is a post-hoc posterior with any ID and base.
type postHocOn struct{ id, base string }

func (p postHocOn) Info() sdk.Info {
	return sdk.Info{ID: p.id, Version: "1", Base: p.base, BaseKeys: []string{"seed"}}
}
func (postHocOn) Check(sdk.Config, int) error { return nil }
func (postHocOn) Fit(context.Context, sdk.FitRequest) (sdk.Artifact, error) {
	return sdk.Artifact{}, fmt.Errorf("not fitted")
}
func (postHocOn) Sample(context.Context, sdk.Artifact, sdk.SampleRequest) ([]nn.Params, error) {
	return nil, fmt.Errorf("not sampled")
}
