package recipe

import (
	"strings"
	"testing"
)

const metricsRecipe = minimal + `
[evaluate]
metrics = ["sparseness", "metric.faithfulness_correlation", "pixel_flipping"]
randomise_draws = true

[evaluate.metric.faithfulness_correlation]
nr_runs = 7
subset_size = 16

[evaluate.metric.pixel_flipping]
features_in_step = 32
`

// TestEvaluateMetrics: [evaluate] metrics, with or without "metric.",
// become registry IDs in order, each with its table; the canonical form
// parses back to the same metrics; a metric's key changes the hash of
// the results, not of the fit.
func TestEvaluateMetrics(t *testing.T) {
	r, err := Parse("m.toml", []byte(metricsRecipe), "")
	if err != nil {
		t.Fatal(err)
	}
	ms := r.Evaluate.Metrics
	want := []string{"metric.sparseness", "metric.faithfulness_correlation", "metric.pixel_flipping"}
	if len(ms) != len(want) {
		t.Fatalf("metrics %+v, want %v", ms, want)
	}
	for i, id := range want {
		if ms[i].ID != id {
			t.Errorf("metric %d is %s, want %s", i, ms[i].ID, id)
		}
		if ms[i].Line != lineOf(t, metricsRecipe, "metrics =") {
			t.Errorf("metric %d at line %d", i, ms[i].Line)
		}
	}
	if len(ms[0].Config) != 0 || ms[1].Config["nr_runs"] != int64(7) || ms[1].Config["subset_size"] != int64(16) || ms[2].Config["features_in_step"] != int64(32) {
		t.Errorf("configs %v, %v, %v", ms[0].Config, ms[1].Config, ms[2].Config)
	}
	if !r.Evaluate.RandomiseDraws {
		t.Error("randomise_draws = true not read")
	}
	c := checkCanonical(t, r, "")
	if !strings.Contains(string(c), `metrics = ["metric.sparseness", "metric.faithfulness_correlation", "metric.pixel_flipping"]`) {
		t.Errorf("canonical form lacks the metrics:\n%s", c)
	}
	other, err := Parse("m.toml", []byte(strings.Replace(metricsRecipe, "nr_runs = 7", "nr_runs = 8", 1)), "")
	if err != nil {
		t.Fatal(err)
	}
	if other.Hash() == r.Hash() || other.Hash(FitParts...) != r.Hash(FitParts...) {
		t.Error("a metric's key must change the recipe's hash and not the fit's")
	}
	plain, err := Parse("m.toml", []byte(minimal), "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(checkCanonical(t, plain, "")), "metric") {
		t.Error("a recipe without metrics writes metric keys in its canonical form")
	}
}

func TestEvaluateMetricsErrors(t *testing.T) {
	for _, c := range []struct{ old, new, marker, want string }{
		{`"sparseness", `, `"sparsenes", `, "metrics =", `unknown metric "sparsenes"`},
		{`"sparseness", `, `"sparsenes", `, "metrics =", `did you mean "sparseness"?`},
		{`"sparseness", `, `"pixel_flipping", `, "metrics =", "listed twice"},
		{`"sparseness", `, `7, `, "metrics =", "want a string"},
		{"nr_runs = 7", "nr_run = 7", "[evaluate.metric.faithfulness_correlation]", "nr_run"},
		{"features_in_step = 32", "features_in_step = -1", "[evaluate.metric.pixel_flipping]", "features_in_step"},
		{"[evaluate.metric.pixel_flipping]", "[evaluate.metric.road]", "[evaluate.metric.road]", "does not list"},
	} {
		bad := strings.Replace(metricsRecipe, c.old, c.new, 1)
		_, err := Parse("m.toml", []byte(bad), "")
		wantErr(t, err, lineOf(t, bad, c.marker), c.want)
	}
}
