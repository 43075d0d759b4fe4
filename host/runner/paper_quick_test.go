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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/ood"
	"github.com/uaxai/uaxai/host/paperreport"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/store"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// Every recipe of a paper folder shares seed, data, model and training
// (the test splits aside: the training pool does not depend on them), so
// that `uaxai paper` trains each network once.
func TestPaperRecipesShareTheirNetworks(t *testing.T) {
	for _, dir := range []string{"recipes/paper", "recipes/paper/quick"} {
		files, err := paperreport.Recipes(filepath.Join(golden.RepoRoot(t), dir))
		if err != nil {
			t.Fatal(err)
		}
		want := ""
		for _, f := range files {
			r, err := recipe.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			r.Data.TestSplits, r.Data.TestPerClass = 0, 0
			h := r.Hash(recipe.FitParts...)
			if want == "" {
				want = h
			}
			if h != want {
				t.Errorf("%s: its seed, [data], [model] or [train] differ from the folder's first recipe", f)
			}
		}
		if base := filepath.Base(files[0]); base != "bnn_results.toml" {
			t.Errorf("%s: first recipe %s, want bnn_results.toml (the paper's order)", dir, base)
		}
	}
}

// TestPaperQuick runs every quick paper recipe through Paper, as `uaxai
// paper --quick` does, and checks what REPORT.md and the run directories
// hold: every table of the paper beside the paper's values, the figures,
// the maps, and networks trained once for all recipes.
func TestPaperQuick(t *testing.T) {
	skipUnlessHeavy(t)
	dir := filepath.Join(golden.RepoRoot(t), "recipes", "paper", "quick")
	cache := t.TempDir()
	var log bytes.Buffer
	po, err := Paper(context.Background(), dir, t.TempDir(), Options{Plugins: inProcess(t), Workers: 2, Cache: store.Cache{Dir: cache}}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	files, _ := paperreport.Recipes(dir)
	if len(po.Parts) != len(files) {
		t.Fatalf("%d parts, %d recipes", len(po.Parts), len(files))
	}
	rep, err := os.ReadFile(filepath.Join(po.Dir, "REPORT.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(rep)
	for _, want := range []string{
		"Machine: ", "Total wall time",
		"tab:bnn_results", "tab:perclass_bnn", "tab:xai_results", "tab:perclass_xai", "tab:uarao_results", "tab:perclass_uarao",
		"tab:sensitivity", "tab:calibration", "Paired disc-7 IoU difference", "Law of total variance", "Agreement sets", "cor:meanmap", "Predictive quality",
		// The paper's values beside ours (one of each table).
		"0.2985 ± 0.0092", "0.7476 ± 0.0262", "0.5831 ± 0.0018", "(0.773 ± 0.010)", "0.112 ± 0.020", "0.455 / 0.455 / +0.000",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("REPORT.md lacks %q", want)
		}
	}
	if strings.Contains(text, "Incomplete") {
		t.Error("a finished run's report is marked incomplete")
	}
	// The out-of-distribution check on the test splits: of the records a
	// posterior classified correctly (so checked against their own class's
	// training windows, as the threshold was fitted), about ood.DefaultAlpha
	// flagged: within 4 binomial sigmas, over the first part's first row.
	checkOODRate(t, po.Parts[0].Dir)
	// The metrics study: its three metrics' tables, every pair's rows, and
	// a summary of the one deterministic draw scoring as the draw does.
	for _, p := range po.Parts {
		if p.Name != "metrics-study-quick" {
			continue
		}
		tables, err := os.ReadFile(filepath.Join(p.Dir, "tables.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"metric.faithfulness_correlation", "metric.region_perturbation", "metric.sparseness"} {
			if !strings.Contains(text, id+" (") {
				t.Errorf("REPORT.md lacks the %s table", id)
			}
		}
		// Its 2 replicates: every replicate's rows, named, and a table
		// across them after each metric's.
		rows, across, inMetric := 0, 0, false
		for _, l := range strings.Split(string(tables), "\n") {
			if strings.HasPrefix(l, "## ") {
				inMetric = strings.HasPrefix(l, "## metric.")
			}
			if !inMetric || !strings.Contains(l, "all-15") {
				continue
			}
			switch {
			case strings.Contains(l, "Deterministic baseline (replicate 0) / "), strings.Contains(l, "Deterministic baseline (replicate 1) / "):
				rows++
			case strings.Contains(l, "Deterministic baseline / "):
				across++
			default:
				continue
			}
			if !strings.Contains(l, "+0.000 (+0.000, +0.000)") {
				t.Errorf("one draw: the mean map's gain over it is not 0: %s", l)
			}
		}
		if rows != 3*4*2 || across != 3*4 {
			t.Errorf("%d deterministic all-15 rows of a replicate and %d across replicates in the study's tables, want 3 metrics x 4 explainers x 2 replicates and 3 x 4", rows, across)
		}
		if !strings.Contains(string(tables), "## metric.sparseness across 2 training-seed replicates") {
			t.Error("the study's tables lack sparseness across its replicates")
		}
		// Only the tables of aggregate rows are over the replicates' means;
		// a metric's rows are each replicate's, over its test splits.
		for _, want := range []string{"## Accuracy and localisation of the UA-RAO maps (mean ± sd over 2 replicates' means over the test splits)",
			"## metric.sparseness (complexity, higher is better): the draws' maps under their own networks and each map summary's under the posterior predictive (mean ± sd over test splits;"} {
			if !strings.Contains(string(tables), want) {
				t.Errorf("the study's tables lack the title %q", want)
			}
		}
		if _, err := os.Stat(filepath.Join(p.Dir, "metrics.csv")); err != nil {
			t.Error(err)
		}
		if !strings.Contains(string(tables), "## Randomisation of the whole posterior") {
			t.Error("the study's tables lack randomise_draws' table")
		}
	}
	// The report written again from the run directories alone has the same
	// body (the wall times come from the manifests, so the head differs).
	if _, err := paperreport.Rewrite(po.Dir); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(po.Dir, "REPORT.md"))
	body := func(s string) string { return s[strings.Index(s, "Each table below"):] }
	if body(string(again)) != body(text) {
		t.Error("paperreport.Rewrite gives another body than Paper")
	}
	// Every figure is referenced, and decodes.
	figs := regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`).FindAllStringSubmatch(text, -1)
	if len(figs) < 4+3 {
		t.Errorf("%d figures in REPORT.md, want the four qualitative panels and the per-class charts", len(figs))
	}
	for _, f := range figs {
		b, err := os.ReadFile(filepath.Join(po.Dir, f[1]))
		if err != nil {
			t.Error(err)
			continue
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s: %v", f[1], err)
		}
	}
	// The networks: a deterministic one (also Laplace's MAP), the five
	// members (each an entry: the ensemble's fit units are its members),
	// MC dropout's and Laplace's fit, and the five members as
	// deterministic networks of their own (headline/members_alone), each
	// fitted once for all the recipes. Replicates share their fits too:
	// the metrics study's replicate 1 trains its deterministic network and
	// members as headline/replicated's replicate 1 does (the same recipe
	// seed), so of its own it adds only Laplace's and MC dropout's.
	entries, _ := filepath.Glob(filepath.Join(cache, "posteriors", "*.safetensors"))
	if len(entries) != 3+5+5+2*(1+5)+2 {
		t.Errorf("%d cache entries after every recipe, want 27 (deterministic, laplace, mcdropout, the ensemble's 5 members, 5 members alone, the deterministic network and 5 members of headline/replicated's replicates 1 and 2, and the metrics study's replicate 1's laplace and mcdropout)", len(entries))
	}
	// The headline section has a row a setting, and the paper's.
	head := text[strings.Index(text, "## The headline finding"):]
	for _, want := range []string{" bnn_results ", " eps_0.02 ", " eps_0.0001 ", " event_mask ", " baseline_mean ", " baseline_noise ", " baseline_fundamental ", " the paper ", "### headline-members-alone-quick",
		" replicated (Occlusion, zero baseline) ", " replicated (Occlusion, fundamental baseline) ", "across 3 replicates", " of 3 replicates "} {
		if !strings.Contains(head, want) {
			t.Errorf("the headline section lacks %q", want)
		}
	}
	// The uarao recipe keeps its maps: one file for the draws, one a summary.
	var uarao paperreport.Part
	for _, p := range po.Parts {
		if strings.HasPrefix(p.Name, "uarao") {
			uarao = p
		}
	}
	var res struct {
		Rows []struct {
			Records int `json:"records"`
		} `json:"rows"`
		Analysis map[string]any `json:"analysis"`
	}
	b, err := os.ReadFile(filepath.Join(uarao.Dir, "results.json"))
	if err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("uarao results.json: %v", err)
	}
	maps, _ := filepath.Glob(filepath.Join(uarao.Dir, "maps", "*.safetensors"))
	if len(maps) != 1+8 {
		t.Errorf("%d map files, want the draws' and 8 summaries'", len(maps))
	}
	f, err := safetensors.ReadFile(filepath.Join(uarao.Dir, "maps", "01-deep-ensemble_occlusion.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := f.Get("maps")
	if !ok || len(m.Shape) != 3 || m.Shape[1] != 5 || m.Shape[2] != 640 {
		t.Fatalf("maps tensor %v", m.Shape)
	}
	if res.Analysis["agreement"] == nil {
		t.Error("no agreement section in uarao's results.json")
	}
	// The recording: five windows of the shipped demonstration file, each
	// explained and drawn, nothing scored.
	for _, p := range po.Parts {
		if !strings.HasPrefix(p.Name, "real-recordings") {
			continue
		}
		figs, _ := filepath.Glob(filepath.Join(p.Dir, "figures", "qual-*-rec-demo-*.png"))
		if len(figs) != 5 {
			t.Errorf("%d figures of the recording's windows, want 5", len(figs))
		}
		b, _ := os.ReadFile(filepath.Join(p.Dir, "results.json"))
		if !strings.Contains(string(b), "5 windows of 640 samples at 3200 Hz") || !strings.Contains(string(b), `"rows": []`) {
			t.Errorf("the recording's results.json: %.600s", b)
		}
		// Nothing to score against: no predictive quality, and an
		// analysis of figures alone has nothing for results.json.
		for _, key := range []string{`"predictive"`, `"analysis"`} {
			if strings.Contains(string(b), key) {
				t.Errorf("the recording's results.json has %s: %.600s", key, b)
			}
		}
		if md, _ := os.ReadFile(filepath.Join(p.Dir, "tables.md")); strings.Contains(string(md), "Predictive quality") {
			t.Errorf("the recording's tables.md has a predictive quality table:\n%s", md)
		}
		checkWindows(t, p.Dir, b, 5, 5, 0.2)
	}
}

// checkWindows checks a recording run's per-window answers: windows.csv
// has one line a window (n) and results.json's "windows" the same rows;
// each window starts step seconds after the previous (the import's hop);
// the class is a class of the data; 0 < probability <= 1; the predictive
// entropy is at most ln K and at least the mutual information, which is
// >= 0; the agreement is a whole number of the S draws over S.
func checkWindows(t *testing.T, dir string, resultsJSON []byte, n, S int, step float64) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "windows.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != n+1 || strings.Join(lines[0], ",") != "posterior,posterior_label,window,start_s,class,probability,predictive_entropy,mutual_information,agreement,ood_score,feature_ood_score,ood,ood_reason,held_out_precision,held_out_predicted" {
		t.Fatalf("windows.csv: %q", lines)
	}
	var res struct {
		Windows []windowRow `json:"windows"`
	}
	if err := json.Unmarshal(resultsJSON, &res); err != nil || len(res.Windows) != n {
		t.Fatalf("results.json windows: %d (%v)", len(res.Windows), err)
	}
	// The timeline of the whole recording, one a posterior.
	tls, _ := filepath.Glob(filepath.Join(dir, "figures", "timeline-*.png"))
	if len(tls) != 1 {
		t.Errorf("timelines %q, want one", tls)
	}
	for _, f := range tls {
		b, _ := os.ReadFile(f)
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// events.csv partitions the windows into runs of one class.
	ef, err := os.ReadFile(filepath.Join(dir, "events.csv"))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := csv.NewReader(bytes.NewReader(ef)).ReadAll()
	if err != nil || len(evs) < 2 {
		t.Fatalf("events.csv: %q, %v", evs, err)
	}
	covered := 0
	for _, e := range evs[1:] {
		first, _ := strconv.Atoi(e[4])
		last, _ := strconv.Atoi(e[5])
		if first != covered || last < first || last >= n {
			t.Errorf("event %q: windows %d..%d, want from %d", e, first, last, covered)
			break
		}
		for w := first; w <= last; w++ {
			if res.Windows[w].Class != e[3] {
				t.Errorf("event %q holds window %d of class %s", e, w, res.Windows[w].Class)
			}
		}
		if last+1 < n && res.Windows[last+1].Class == e[3] {
			t.Errorf("event %q stops before window %d of its class", e, last+1)
		}
		covered = last + 1
	}
	if covered != n {
		t.Errorf("events cover windows 0..%d of %d", covered-1, n)
	}
	for i, w := range res.Windows {
		l := lines[i+1]
		num := func(j int) float64 {
			v, err := strconv.ParseFloat(l[j], 64)
			if err != nil {
				t.Fatalf("windows.csv line %d column %d: %v", i+2, j+1, err)
			}
			return v
		}
		if l[4] != w.Class || math.Abs(num(5)-w.Probability) > 1e-5 || l[2] != strconv.Itoa(i) {
			t.Errorf("window %d: windows.csv %q and results.json %+v differ", i, l, w)
		}
		if !slices.Contains(data.ClassNames[:], w.Class) || !(w.Probability > 0 && w.Probability <= 1) ||
			!(w.MutualInfo >= 0 && w.MutualInfo <= w.Entropy+1e-12 && w.Entropy <= math.Log(16)+1e-12) {
			t.Errorf("window %d: %+v", i, w)
		}
		if a := w.Agreement * float64(S); math.Abs(a-math.Round(a)) > 1e-9 || a < 0 || a > float64(S) {
			t.Errorf("window %d: agreement %g is not a share of %d draws", i, w.Agreement, S)
		}
		if i > 0 && math.Abs(w.Start-res.Windows[i-1].Start-step) > 1e-3 {
			t.Errorf("window %d starts at %g s, %g after the previous; want %g", i, w.Start, w.Start-res.Windows[i-1].Start, step)
		}
	}
}

// checkOODRate checks records.csv's ood column of a labelled run: over
// the first row's correctly classified records, the flagged share is
// ood.DefaultAlpha within 4 binomial sigmas, and a flagged record names
// its reason.
func checkOODRate(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "records.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(lines) < 2 {
		t.Fatalf("records.csv: %v", err)
	}
	col := map[string]int{}
	for i, h := range lines[0] {
		col[h] = i
	}
	for _, h := range []string{"row", "target", "predicted", "label", "ood", "ood_score", "ood_reason"} {
		if _, ok := col[h]; !ok {
			t.Fatalf("records.csv has no %s column: %q", h, lines[0])
		}
	}
	// each check flags about alpha; ood is either's flag
	n, input, feature := 0, 0, 0
	for _, l := range lines[1:] {
		if l[col["row"]] != lines[1][col["row"]] || l[col["label"]] != l[col["predicted"]] {
			continue
		}
		n++
		why := l[col["ood_reason"]]
		i, f := inputReason.MatchString(why), strings.Contains(why, "penultimate features")
		if i {
			input++
		}
		if f {
			feature++
		}
		if (l[col["ood"]] == "true") != (i || f) || why != "" && !strings.HasPrefix(why, "outside what the model was trained on: ") {
			t.Errorf("record flagged %s, reason %q", l[col["ood"]], why)
		}
	}
	a := ood.DefaultAlpha
	for _, c := range []struct {
		what    string
		flagged int
	}{{"input check", input}, {"feature check", feature}} {
		rate := float64(c.flagged) / float64(n)
		t.Logf("out of distribution, %s: %d of %d correctly classified test records flagged (%.3f), alpha %.2f", c.what, c.flagged, n, rate, a)
		if n < 100 || math.Abs(rate-a) > 4*math.Sqrt(a*(1-a)/float64(n)) {
			t.Errorf("out of distribution, %s: %d of %d correctly classified test records flagged; want about %.2f", c.what, c.flagged, n, a)
		}
	}
}
