package runner

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/sdk/metric"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

const metricsExtra = `
[evaluate]
metrics = ["sparseness", "pixel_flipping", "max_sensitivity", "mprt", "faithfulness_correlation"]
randomise_draws = true

[evaluate.metric.pixel_flipping]
features_in_step = 64

[evaluate.metric.max_sensitivity]
nr_samples = 3

[output]
maps = true
`

func runMetrics(t *testing.T, dir string, workers int) *Outcome {
	t.Helper()
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), metricsExtra)), dir)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(context.Background(), r, Options{Plugins: inProcess(t), Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestRecipeMetrics: [evaluate] metrics score every draw's map and every
// map summary's: metrics.csv is the same bytes for 1 and 2 workers; its
// sparseness of each draw's map and of the mean's is the metric computed
// here on the maps the run stored (maps/*.safetensors), so the scores
// belong to the maps they name; results.json has a row a pair and group,
// whose draws' mean is the mean over the splits of the class means of
// the records' draw means.
func TestRecipeMetrics(t *testing.T) {
	dir := t.TempDir()
	one := runMetrics(t, dir, 1)
	two := runMetrics(t, dir, 2)
	a, b := read(t, filepath.Join(one.Dir, "metrics.csv")), read(t, filepath.Join(two.Dir, "metrics.csv"))
	if !bytes.Equal(a, b) {
		t.Fatal("metrics.csv differs between 1 and 2 workers")
	}

	// uaxai evaluate RUN_DIR: the stored maps scored again, the same
	// bytes; with other metrics named, the lines of those metrics.
	again, err := EvaluateRun(context.Background(), one.Dir, nil, Options{Plugins: inProcess(t), Workers: 2, Out: filepath.Join(dir, "again")})
	if err != nil {
		t.Fatal(err)
	}
	if c := read(t, filepath.Join(again.Dir, "metrics.csv")); !bytes.Equal(c, a) {
		t.Errorf("uaxai evaluate RUN_DIR gives another metrics.csv:\n%.600s\n---\n%.600s", c, a)
	}
	only, err := EvaluateRun(context.Background(), one.Dir, []MetricSpec{{ID: "sparseness"}}, Options{Plugins: inProcess(t), Workers: 1, Out: filepath.Join(dir, "only")})
	if err != nil {
		t.Fatal(err)
	}
	var sub bytes.Buffer
	for k, l := range bytes.SplitAfter(a, []byte("\n")) {
		if k == 0 || bytes.Contains(l, []byte(",metric.sparseness,")) {
			sub.Write(l)
		}
	}
	if c := read(t, filepath.Join(only.Dir, "metrics.csv")); !bytes.Equal(c, sub.Bytes()) {
		t.Error("uaxai evaluate RUN_DIR --metric sparseness: not the run's sparseness lines")
	}
	if _, err := EvaluateRun(context.Background(), filepath.Join(dir, "nowhere"), nil, Options{Plugins: inProcess(t)}); err == nil {
		t.Error("a directory without a run: no error")
	}

	lines, err := csv.NewReader(bytes.NewReader(a)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range lines[0] {
		col[h] = i
	}
	// (posterior, split, record, map, metric) -> value
	got := map[[5]string]string{}
	counts := map[string]int{}
	for _, l := range lines[1:] {
		got[[5]string{l[col["posterior"]], l[col["split"]], l[col["record"]], l[col["map"]], l[col["metric"]]}] = l[col["value"]]
		counts[l[col["metric"]]]++
		if l[col["metric"]] == "metric.pixel_flipping" && l[col["undefined"]] == "" && len(bytes.Fields([]byte(l[col["curve"]]))) != 640/64 {
			t.Errorf("pixel flipping curve %q: want %d points", l[col["curve"]], 640/64)
		}
	}
	if counts["metric.sparseness"] == 0 || counts["metric.sparseness"] != counts["metric.max_sensitivity"] {
		t.Errorf("lines per metric %v", counts)
	}
	// One draw: the mean map is the draw's map and the predictive is the
	// draw's network, and the metrics' draws are common to the draws and
	// the summaries, so every metric scores the two alike, to the bit
	// (MPRT and the robustness metric's re-explanations included).
	whole := map[[5]string]string{}
	for _, l := range lines[1:] {
		whole[[5]string{l[col["posterior"]], l[col["split"]], l[col["record"]], l[col["map"]], l[col["metric"]]}] = l[col["value"]] + "|" + l[col["undefined"]] + "|" + l[col["curve"]]
	}
	same := 0
	for key, v := range whole {
		if key[0] != "Deterministic" || key[3] != "draw 0" {
			continue
		}
		m := key
		m[3] = "summary.mean"
		if whole[m] != v {
			t.Errorf("%v: %q; the mean of the one draw: %q", key, v, whole[m])
		}
		same++
	}
	if same != 5*counts["metric.sparseness"]/(1+1+2+2) {
		t.Errorf("%d deterministic draw lines compared", same)
	}

	sp, err := metric.Builtin().New("metric.sparseness", nil)
	if err != nil {
		t.Fatal(err)
	}
	sparseness := func(m []float32) float64 {
		x := make([]float32, len(m))
		in := metric.Input{N: 1, C: 1, T: len(m), X: x, Maps: make([]float64, len(m)), Targets: []int{0}}
		for j, v := range m {
			in.Maps[j] = float64(v)
		}
		dst := make([]metric.Score, 1)
		if err := sp.Score(context.Background(), &in, dst); err != nil {
			t.Fatal(err)
		}
		return dst[0].Value
	}
	var splits []string // in the order metrics.csv lists them: the run's
	for _, l := range lines[1:] {
		if sp := l[col["split"]]; len(splits) == 0 || splits[len(splits)-1] != sp && (len(splits) < 2 || splits[0] != sp) {
			splits = append(splits, sp)
		}
	}
	if len(splits) != 2 {
		t.Fatalf("splits %v in metrics.csv, want the recipe's 2", splits)
	}
	checked := 0
	for _, c := range []struct{ file, post, what string }{
		{"maps/01-deterministic_explainer-occlusion.safetensors", "Deterministic", "draws"},
		{"maps/02-ensemble_explainer-occlusion.safetensors", "Ensemble", "draws"},
		{"maps/02-ensemble_explainer-occlusion_summary-mean.safetensors", "Ensemble", "summary.mean"},
	} {
		f, err := safetensors.ReadFile(filepath.Join(one.Dir, c.file))
		if err != nil {
			ents, _ := os.ReadDir(filepath.Join(one.Dir, "maps"))
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Fatalf("%v (maps/ holds %v)", err, names)
		}
		split, _ := f.Get("split")
		rec, _ := f.Get("record")
		name := "maps"
		if c.what != "draws" {
			name = "map"
		}
		maps, ok := f.Get(name)
		if !ok {
			t.Fatalf("%s has no %s", c.file, name)
		}
		R := len(split.Data)
		per := len(maps.Data) / R
		S, N := 1, per
		if c.what == "draws" {
			S = maps.Shape[1]
			N = per / S
		}
		for i := range R {
			for s := range S {
				m := maps.Data[i*per+s*N : i*per+(s+1)*N]
				what := c.what
				if what == "draws" {
					what = "draw " + strconv.Itoa(s)
				}
				key := [5]string{c.post, splits[int(split.Data[i])], strconv.Itoa(int(rec.Data[i])), what, "metric.sparseness"}
				v, ok := got[key]
				if !ok {
					t.Fatalf("metrics.csv has no line %v", key)
				}
				want := sparseness(m)
				gv, _ := strconv.ParseFloat(v, 64)
				// the run scores the maps as it stores them (float32)
				if gv != want {
					t.Errorf("%v: sparseness %v in metrics.csv, %v of the stored map", key, gv, want)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no map checked")
	}

	// A curve metric's figure a pair, and report.html's chart of each.
	for _, name := range []string{"metric-pixel-flipping-01-deterministic_explainer-occlusion.png", "metric-mprt-02-ensemble_explainer-occlusion.png"} {
		if _, err := png.Decode(bytes.NewReader(read(t, filepath.Join(one.Dir, "figures", name)))); err != nil {
			t.Errorf("figures/%s: %v", name, err)
		}
	}
	figs, err := filepath.Glob(filepath.Join(one.Dir, "figures", "metric-*.png"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(read(t, filepath.Join(one.Dir, "report.html"))), `class="curves"`); n != len(figs) || n == 0 {
		t.Errorf("report.html has %d curve charts for %d curve figures", n, len(figs))
	}

	// records.csv: each summary row's record has its summary's score and
	// its draws' mean, those of metrics.csv.
	rc, err := csv.NewReader(bytes.NewReader(read(t, filepath.Join(one.Dir, "records.csv")))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	rcol := map[string]int{}
	for i, h := range rc[0] {
		rcol[h] = i
	}
	for _, h := range []string{"metric.sparseness", "metric.sparseness_draws", "metric.faithfulness_correlation_draws"} {
		if _, ok := rcol[h]; !ok {
			t.Fatalf("records.csv lacks column %s: %v", h, rc[0])
		}
	}
	postLabel := map[string]string{"posterior.deterministic": "Deterministic", "posterior.ensemble": "Ensemble"}
	compared := 0
	for _, l := range rc[1:] {
		post, sum := postLabel[l[rcol["posterior"]]], l[rcol["summary"]]
		key := [5]string{post, l[rcol["split"]], l[rcol["record"]], sum, "metric.sparseness"}
		v, ok := got[key]
		if !ok {
			if l[rcol["metric.sparseness"]] != "" {
				t.Errorf("records.csv %v: sparseness %s, and metrics.csv has none", key, l[rcol["metric.sparseness"]])
			}
			continue
		}
		if l[rcol["metric.sparseness"]] != v {
			t.Errorf("records.csv %v: sparseness %s, metrics.csv %s", key, l[rcol["metric.sparseness"]], v)
		}
		var sum0 float64
		S := 1
		if post == "Ensemble" {
			S = 2
		}
		for s := range S {
			key[3] = "draw " + strconv.Itoa(s)
			x, _ := strconv.ParseFloat(got[key], 64)
			sum0 += x
		}
		d, _ := strconv.ParseFloat(l[rcol["metric.sparseness_draws"]], 64)
		if math.Abs(d-sum0/float64(S)) > 1e-15 {
			t.Errorf("records.csv %v: draws' mean %v, metrics.csv's %v", key, d, sum0/float64(S))
		}
		compared++
	}
	if compared == 0 {
		t.Error("no records.csv line compared")
	}

	var res struct {
		Analysis struct {
			Randomised []struct {
				Posterior string `json:"posterior"`
				Scope     string `json:"scope"`
				W1        struct {
					Mean    float64 `json:"mean"`
					Records int     `json:"records"`
				} `json:"w1"`
				Relative struct {
					Mean float64 `json:"mean"`
				} `json:"w1_relative"`
			} `json:"randomised_draws"`
			Metrics []struct {
				Metric string `json:"metric"`
				Rows   []struct {
					Posterior string `json:"posterior"`
					Scope     string `json:"scope"`
					Draws     struct {
						Mean    float64 `json:"mean"`
						N       int     `json:"n"`
						Records int     `json:"records"`
					} `json:"draws"`
					Summaries []struct {
						Summary string `json:"summary"`
						Gain    *struct {
							Mean float64 `json:"mean"`
						} `json:"gain_over_draws"`
					} `json:"summaries"`
				} `json:"rows"`
			} `json:"metrics"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal(read(t, filepath.Join(one.Dir, "results.json")), &res); err != nil {
		t.Fatal(err)
	}
	// randomise_draws: a row a pair and group; re-initialising every
	// layer moves occlusion's maps (a distance above 0, finite, of the
	// order of the maps' own size).
	if len(res.Analysis.Randomised) != 4 {
		t.Errorf("randomised_draws rows %+v, want 2 posteriors x 2 groups", res.Analysis.Randomised)
	}
	for _, r := range res.Analysis.Randomised {
		if !(r.W1.Mean > 0) || !(r.Relative.Mean > 0.05 && r.Relative.Mean < 20) || r.W1.Records == 0 {
			t.Errorf("randomised draws %+v", r)
		}
	}
	ms := res.Analysis.Metrics
	if len(ms) != 5 || ms[0].Metric != "metric.sparseness" || ms[2].Metric != "metric.max_sensitivity" {
		t.Fatalf("results.json metrics: %+v", ms)
	}
	// The deterministic network's draws' mean of sparseness, by hand from
	// metrics.csv: per split the mean over classes of the class means.
	classOf := map[[2]string]string{}
	for _, l := range lines[1:] {
		classOf[[2]string{l[col["split"]], l[col["record"]]}] = l[col["label"]]
	}
	var splitMeans []float64
	for _, sp := range splits {
		sum, cnt := map[string]float64{}, map[string]int{}
		for key, v := range got {
			if key[0] == "Deterministic" && key[1] == sp && key[3] == "draw 0" && key[4] == "metric.sparseness" {
				x, _ := strconv.ParseFloat(v, 64)
				c := classOf[[2]string{key[1], key[2]}]
				sum[c] += x
				cnt[c]++
			}
		}
		m := 0.0
		for c := range sum {
			m += sum[c] / float64(cnt[c])
		}
		splitMeans = append(splitMeans, m/float64(len(sum)))
	}
	want := (splitMeans[0] + splitMeans[1]) / 2
	found := false
	for _, row := range ms[0].Rows {
		if row.Posterior == "Deterministic" && row.Scope == "all-15" {
			found = true
			if math.Abs(row.Draws.Mean-want) > 1e-12 || row.Draws.N != 2 {
				t.Errorf("deterministic sparseness: results.json %v over %d splits, by hand %v", row.Draws.Mean, row.Draws.N, want)
			}
			if len(row.Summaries) != 2 || row.Summaries[0].Gain != nil && math.Abs(row.Summaries[0].Gain.Mean) > 1e-12 {
				t.Errorf("one draw: the mean map is the draw's map, no gain; got %+v", row.Summaries)
			}
		}
	}
	if !found {
		t.Error("results.json has no deterministic all-15 row")
	}
}

// TestRecordingMetrics: on a recording (no labels, no masks) the metrics
// score every window; a localisation metric is undefined for each, saying
// why, instead of failing the run; the tables' scope is every record.
func TestRecordingMetrics(t *testing.T) {
	o := runTinyRecordingWith(t, "\n[evaluate]\nmetrics = [\"sparseness\", \"pointing_game\"]\n")
	lines, err := csv.NewReader(bytes.NewReader(read(t, filepath.Join(o.Dir, "metrics.csv")))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	sp, pg := 0, 0
	for _, l := range lines[1:] {
		switch l[9] {
		case "metric.sparseness":
			if l[10] == "" || l[11] != "" {
				t.Errorf("sparseness of a window: %q", l)
			}
			sp++
		case "metric.pointing_game":
			if l[10] != "" || !strings.Contains(l[11], "needs a ground-truth mask") {
				t.Errorf("pointing game of a window: %q", l)
			}
			pg++
		}
	}
	if sp == 0 || sp != pg {
		t.Errorf("%d sparseness and %d pointing game lines", sp, pg)
	}
	if tables := string(read(t, filepath.Join(o.Dir, "tables.md"))); !strings.Contains(tables, "| all records |") {
		t.Error("the metrics' tables have no \"all records\" scope")
	}
}
