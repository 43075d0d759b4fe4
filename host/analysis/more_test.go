package analysis

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/plugins/summary/cv"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// macroOf is the aggregate of groupStat, computed here from the batches:
// per split, the mean over each class's records of f, the mean over the
// classes, then mean and sd over the splits.
func macroOf(w world, classes []int, f func(b *engine.Batch) (float64, bool)) eval.Stat {
	var macros []float64
	for si := range 2 {
		sum, cnt := map[int]float64{}, map[int]int{}
		for _, b := range w.batches {
			if b.Split != si {
				continue
			}
			if v, ok := f(b); ok {
				sum[b.Labels[0]] += v
				cnt[b.Labels[0]]++
			}
		}
		m, k := 0.0, 0
		for _, c := range classes {
			if cnt[c] > 0 {
				m += sum[c] / float64(cnt[c])
				k++
			}
		}
		macros = append(macros, m/float64(k))
	}
	return eval.StatOf(macros)
}

func TestAgreementBoundAndTotalVariance(t *testing.T) {
	an := recipe.Analysis{Agreement: &recipe.Agreement{Etas: []float64{0.5, 1}, Deltas: []float64{0.3, 0.9}}, Bound: &recipe.Bound{Delta: 0.1}, TotalVariance: &recipe.TotalVariance{Repeats: 3}}
	w := newWorld(t, an, 9, 4, nil)
	rnd := rand.New(rand.NewPCG(5, 6))
	for _, b := range w.batches { // three explainer seeds a draw: the draw's map plus noise
		rep := make([][][]float64, 4)
		for s := range rep {
			rep[s] = [][]float64{b.Maps[0][s]}
			for range 2 {
				m := make([]float64, N)
				for n := range m {
					m[n] = b.Maps[0][s][n] + 0.1*rnd.NormFloat64()
				}
				rep[s] = append(rep[s], m)
			}
		}
		b.Repeats = [][][][]float64{rep}
	}
	rep := w.run(t, identity(len(w.batches)))
	rows := rep.JSON["agreement"].([]agreeJSON)
	if len(rows) != 2*2*2 {
		t.Fatalf("%d agreement rows, want 2 scopes x 2 etas x 2 deltas", len(rows))
	}
	for i, r := range rows {
		classes := w.setup.Groups[map[string]string{"all-15": "all", "disc-7": "disc-7"}[r.Scope]]
		cell := (i % 4)
		want := macroOf(w, classes, func(b *engine.Batch) (float64, bool) {
			g, ok := eval.AgreementGrid(nil, b.Maps[0], b.Masks[0], an.Agreement.Etas, an.Agreement.Deltas)
			return g[cell].F1, ok
		})
		if math.Abs(r.F1.Mean-want.Mean) > 1e-15 || math.Abs(r.F1.SD-want.SD) > 1e-15 || r.Eta != an.Agreement.Etas[cell/2] || r.Delta != an.Agreement.Deltas[cell%2] {
			t.Errorf("row %d (%s eta %v delta %v): F1 %+v, want %+v", i, r.Scope, r.Eta, r.Delta, r.F1.Stat, want)
		}
	}
	// At delta 0.9 with eta 1 most sets are empty; they are counted.
	empty := 0
	for _, b := range w.batches {
		g, _ := eval.AgreementGrid(nil, b.Maps[0], b.Masks[0], an.Agreement.Etas, an.Agreement.Deltas)
		if g[3].Size == 0 {
			empty++
		}
	}
	if rows[3].Empty != empty || empty == 0 || rows[0].Empty != 0 {
		t.Errorf("empty sets: %d at (1, 0.9), want %d; %d at (0.5, 0.3)", rows[3].Empty, empty, rows[0].Empty)
	}
	var sc, st, mx float64
	var tot, exp float64
	for _, b := range w.batches {
		cx, term := eval.MeanMapBound(b.Maps[0], 0.1)
		sc, st, mx = sc+cx, st+term, math.Max(mx, term)
		to, _, ex := eval.TotalVariance(nil, nil, nil, b.Repeats[0])
		tot += stat.Mean(to, nil)
		exp += stat.Mean(ex, nil)
	}
	n := float64(len(w.batches))
	var bound struct {
		Delta float64 `json:"delta"`
		Rows  []struct {
			Draws    int     `json:"draws"`
			MeanCx   float64 `json:"mean_cx"`
			MeanTerm float64 `json:"mean_term"`
			MaxTerm  float64 `json:"max_term"`
			Records  int     `json:"records"`
		} `json:"rows"`
	}
	roundTrip(t, rep.JSON["bound"], &bound)
	if b := bound.Rows; len(b) != 1 || math.Abs(b[0].MeanCx-sc/n) > 1e-15 || math.Abs(b[0].MeanTerm-st/n) > 1e-15 || b[0].MaxTerm != mx || b[0].Records != 18 || b[0].Draws != 4 || bound.Delta != 0.1 {
		t.Errorf("bound %+v, want mean C_x %v, mean term %v, max %v", bound, sc/n, st/n, mx)
	}
	var tv []struct {
		Total float64 `json:"total"`
		Share float64 `json:"explainer_share"`
		N     int     `json:"records"`
	}
	roundTrip(t, rep.JSON["total_variance"], &tv)
	if len(tv) != 1 || math.Abs(tv[0].Total-tot/n) > 1e-15 || math.Abs(tv[0].Share-exp/tot) > 1e-12 || tv[0].N != 18 {
		t.Errorf("total variance %+v, want total %v share %v", tv, tot/n, exp/tot)
	}
}

func roundTrip(t *testing.T, v any, dst any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// rowOf is a Results row whose disc-7 macro in split s is v[s] (every
// class of the group scored v[s]).
func rowOf(t *testing.T, post, sum string, v []float64) engine.Row {
	t.Helper()
	var scores []eval.Score
	for s, x := range v {
		for _, c := range []int{1, 2, 3, 4, 5, 8, 9} {
			scores = append(scores, eval.Score{Split: s, Class: c, RMA: x, IoU: x, OK: true})
		}
	}
	agg, err := eval.Aggregate(scores, []int{1, 2, 3, 4, 5, 8, 9}, map[string][]int{"disc-7": {1, 2, 3, 4, 5, 8, 9}}, len(v))
	if err != nil {
		t.Fatal(err)
	}
	return engine.Row{Posterior: post, Explainer: "explainer.occlusion", ExplainerLabel: "Occlusion", Summary: "summary." + sum, SummaryLabel: sum, Agg: agg}
}

func TestPaired(t *testing.T) {
	det := []float64{0.20, 0.22, 0.25, 0.21, 0.24}
	ens := []float64{0.25, 0.26, 0.27, 0.24, 0.23}
	res := &engine.Results{Rows: []engine.Row{
		rowOf(t, "posterior.deterministic", "mean", det), rowOf(t, "posterior.ensemble", "mean", ens),
		rowOf(t, "posterior.ensemble", "variance", ens), // no deterministic twin: not paired
	}}
	tb, js := Paired(res)
	if len(js) != 1 || len(tb.Rows) != 1 {
		t.Fatalf("%d pairs, want 1: %v", len(js), tb.Rows)
	}
	want, err := eval.PairedT(ens, det, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if got := js[0]["difference"].(eval.Interval); math.Abs(got.Mean-want.Mean) > 1e-15 || got.Lo != want.Lo || js[0]["splits_up"] != 4 {
		t.Errorf("paired %+v, want %+v and 4 splits up", js[0], want)
	}
	if !strings.Contains(tb.Rows[0][1], "+0.0260") || tb.Rows[0][3] != "4 of 5" {
		t.Errorf("row %v", tb.Rows[0])
	}
}

func TestFiguresAndMaps(t *testing.T) {
	an := recipe.Analysis{Figures: &recipe.Figures{Qualitative: []string{"sag", "Interruption"}, PerClass: true}, Output: recipe.Output{Maps: true}}
	w := newWorld(t, an, 7, 3, nil)
	w.setup.Summaries = []string{"Mean", "Band"}
	for _, b := range w.batches {
		b.Summaries = [][][]float64{{eval.Abs(nil, b.Maps[0][0])}, nil} // a map summary and a set or band one
		if b.Split == 0 && b.Records[0] == 0 {
			b.Preds[0] = 2 // record 0 (sag) is misclassified: the figure takes the next sag
		}
	}
	a := New(w.setup)
	for _, i := range identity(len(w.batches)) {
		if err := a.Batch(w.batches[i]); err != nil {
			t.Fatal(err)
		}
	}
	res := &engine.Results{Rows: []engine.Row{rowOf(t, "posterior.ensemble", "mean", []float64{0.3, 0.4})}}
	rep, err := a.Finish(res)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range rep.Files {
		files[f.Name] = f.Data
	}
	for _, name := range []string{"figures/qual-01-p_e-sag.png", "figures/qual-01-p_e-interruption.png", "figures/perclass-iou.png"} {
		b, ok := files[name]
		if !ok {
			t.Errorf("no %s among %d files", name, len(files))
			continue
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The sag panel is record 3 of split 0: labels cycle 1, 2, 3 and record 0 is wrong.
	if p := a.pairs[pairKey{"P", 0, "E"}].recs[0][3].figure; p == nil || !strings.Contains(p.Title, "record 3") || p.Labels.Class != "sag" {
		t.Errorf("sag panel %+v", p)
	}
	f, err := safetensors.Decode(files["maps/01-p_e.safetensors"], "maps")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := f.Get("maps")
	rec, _ := f.Get("record")
	split, _ := f.Get("split")
	if len(m.Shape) != 3 || m.Shape[0] != 14 || m.Shape[1] != 3 || m.Shape[2] != N {
		t.Fatalf("maps shape %v", m.Shape)
	}
	// Record i of the file is (split i/7, record i%7), its draws in order.
	for i := range 14 {
		b := w.batches[i]
		if int(split.Data[i]) != b.Split || int(rec.Data[i]) != b.Records[0] {
			t.Fatalf("file record %d: split %v record %v", i, split.Data[i], rec.Data[i])
		}
		for s := range 3 {
			for n := range N {
				if m.Data[(i*3+s)*N+n] != float32(b.Maps[0][s][n]) {
					t.Fatalf("file record %d draw %d coordinate %d differs", i, s, n)
				}
			}
		}
	}
	g, err := safetensors.Decode(files["maps/01-p_e_mean.safetensors"], "mean")
	if err != nil {
		t.Fatal(err)
	}
	if sm, _ := g.Get("map"); len(sm.Shape) != 2 || sm.Shape[0] != 14 || sm.Data[N+1] != float32(math.Abs(w.batches[1].Maps[0][0][1])) {
		t.Errorf("summary file: shape %v", sm.Shape)
	}
	if _, ok := files["maps/01-p_e_band.safetensors"]; ok {
		t.Error("a set or band summary got a map file")
	}
}

// Unlabelled windows (a recording): a figure for each, up to
// MaxAllFigures, and no measure that needs a mask.
func TestUnlabelledWindows(t *testing.T) {
	an := recipe.Analysis{Figures: &recipe.Figures{Qualitative: []string{"all"}}, Agreement: &recipe.Agreement{Etas: []float64{1}, Deltas: []float64{0}}}
	w := newWorld(t, an, MaxAllFigures, 2, nil)
	for _, b := range w.batches {
		b.Labels[0], b.Masks[0] = -1, nil
	}
	rep := w.run(t, identity(len(w.batches)))
	figs := 0
	for _, f := range rep.Files {
		if strings.HasPrefix(f.Name, "figures/qual-") {
			figs++
		}
	}
	if figs != MaxAllFigures {
		t.Errorf("%d figures of %d windows, want %d", figs, len(w.batches), MaxAllFigures)
	}
	// a window's panel is titled as one: "window 3 of recording test-0"
	b := w.batches[3]
	if p := newPanel(b, 0, b.Maps[0]); p.Title != "P / E, window 3 of recording test-0" {
		t.Errorf("a window's panel title %q", p.Title)
	}
	if rows := rep.JSON["agreement"].([]agreeJSON); len(rows) != 2 || rows[0].F1.N != 0 {
		t.Errorf("agreement on unlabelled windows: %+v", rows)
	}
}

// Records = "correct" leaves out the misclassified records; "all" keeps
// them.
func TestSensitivityRecords(t *testing.T) {
	for _, which := range []string{"correct", "all"} {
		s := sens("amplitude 1.05")
		s.Records = which
		w := newWorld(t, recipe.Analysis{Sensitivity: s}, 9, 3, func(m []float64, _ *rand.Rand) []float64 { return m })
		for _, b := range w.batches[:5] {
			b.Preds[0] = 0 // wrong
		}
		rows := w.run(t, identity(len(w.batches))).JSON["sensitivity"].(map[string]any)["rows"].([]sensJSON)
		want := 18
		if which == "correct" {
			want = 13
		}
		if rows[0].W1.Records != want {
			t.Errorf("records = %q: %d records, want %d", which, rows[0].W1.Records, want)
		}
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct {
		d    string
		want string
	}{{"noise 30", "Noise 30 dB"}, {"amplitude 0.95", "Amplitude x 0.95"}, {"shift 4", "Shift +4 samples"}, {"shift -4", "Shift -4 samples"}} {
		d, _ := recipe.ParseDistortion(c.d)
		if got := DistortionName(d); got != c.want {
			t.Errorf("%s: %q, want %q", c.d, got, c.want)
		}
	}
	if report.PM3(eval.Stat{}) != "n/a" || signed3(eval.Stat{}) != "n/a" || signed3(eval.Stat{Mean: 0.01, N: 2}) != "+0.010 ± 0.000" {
		t.Error("pm3, signed3")
	}
	a := New(Setup{Explainers: []string{"E1", "E2"}})
	if got := a.pairLabel(&pair{post: "P", exp: "E2"}); got != "P / E2" {
		t.Errorf("pair label %q", got)
	}
	if got := New(Setup{Explainers: []string{"E1"}}).pairLabel(&pair{post: "P", exp: "E1"}); got != "P" {
		t.Errorf("pair label %q", got)
	}
	if !wantsFigure([]string{"Imp. trans."}, 4, nil) || !wantsFigure([]string{"sag"}, 1, nil) || wantsFigure([]string{"sag"}, 2, nil) {
		t.Error("wantsFigure")
	}
}

// newPanel: one draw has no spread (variance and CV 0, not an error); the
// class of label 0 is "normal", of -1 none; a wave longer than the maps is
// cut to them.
func TestNewPanel(t *testing.T) {
	b := &engine.Batch{Posterior: engine.Step{Label: "P"}, Explainer: engine.Step{Label: "E"}, SplitName: "s", Records: []int{4},
		Labels: []int{0}, Preds: []int{1}, Probs: [][]float64{{0.3, 0.7}}, X: [][]float32{make([]float32, 12)}, Masks: [][]bool{make([]bool, 10)}}
	one := [][]float64{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	p := newPanel(b, 0, one)
	if p.Labels.Class != "normal" || p.Labels.Predicted != "sag" || p.Labels.Prob != 0.7 || len(p.Wave) != 10 {
		t.Errorf("panel labels %+v, wave %d", p.Labels, len(p.Wave))
	}
	for n := range p.Variance {
		if p.Variance[n] != 0 || p.CV[n] != 0 || p.Mean[n] != one[0][n] || p.Q05[n] != one[0][n] {
			t.Fatalf("one draw: variance %v CV %v mean %v", p.Variance, p.CV, p.Mean)
		}
	}
	two := [][]float64{{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {3, 3, 3, 3, 3, 3, 3, 3, 3, 3}}
	b.Labels[0] = -1
	p = newPanel(b, 0, two)
	if p.Labels.Class != "" || p.Variance[0] != 2 || p.Q05[0] != 1 || p.Q95[0] != 3 {
		t.Errorf("two draws: class %q variance %v q05 %v q95 %v", p.Labels.Class, p.Variance[0], p.Q05[0], p.Q95[0])
	}
	if figureKappa != cv.DefaultKappa {
		t.Errorf("the figures' CV kappa %v is not summary.cv's default %v", figureKappa, cv.DefaultKappa)
	}
}

// The per-class bars carry the paper's values only when a per-class table
// is named, and a class without a score is drawn at 0.
func TestPerClassBars(t *testing.T) {
	row := rowOf(t, "posterior.ensemble", "mean", []float64{0.3, 0.4})
	res := &engine.Results{Rows: []engine.Row{row}}
	b, err := perClassBars(res, "")
	if err != nil || b.Paper != nil || len(b.Classes) != 7 || b.Values[0][0] != 0.35 {
		t.Fatalf("bars %+v %v", b, err)
	}
	b, err = perClassBars(res, "tab:perclass_bnn")
	if err != nil || len(b.Paper) != 1 || b.Paper[0][0] != 0.364 { // sag under the deep ensemble
		t.Errorf("paper values %v (%v)", b.Paper, err)
	}
	if _, err := perClassBars(res, "tab:nope"); err == nil {
		t.Error("an unknown table")
	}
	// A class with no scored record in any split draws 0, not NaN.
	row.Agg.Classes[0].IoU = eval.Stat{}
	b, _ = perClassBars(&engine.Results{Rows: []engine.Row{row}}, "")
	if b.Values[0][0] != 0 || b.SD[0][0] != 0 {
		t.Errorf("unscored class drawn as %v ± %v", b.Values[0][0], b.SD[0][0])
	}
}

// TestMapsOfChannels: with C > 1 channels the maps files hold (C, T)
// maps, channel-major as the engine's, and name the channels; the values
// are the one-channel file's, reshaped.
func TestMapsOfChannels(t *testing.T) {
	an := recipe.Analysis{Output: recipe.Output{Maps: true}}
	files := func(channels int) map[string]*safetensors.File {
		w := newWorld(t, an, 4, 3, nil)
		w.setup.Summaries = []string{"Mean"}
		for i := range w.setup.Tests {
			w.setup.Tests[i].Channels = channels
			if channels > 1 {
				w.setup.Tests[i].ChannelNames = []string{"A", "B"}
			}
		}
		for _, b := range w.batches {
			b.Summaries = [][][]float64{{eval.Abs(nil, b.Maps[0][0])}}
		}
		a := New(w.setup)
		for _, b := range w.batches {
			if err := a.Batch(b); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := a.Finish(&engine.Results{Rows: []engine.Row{rowOf(t, "posterior.ensemble", "mean", []float64{0.3, 0.4})}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*safetensors.File{}
		for _, f := range rep.Files {
			if out[f.Name], err = safetensors.Decode(f.Data, f.Name); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	one, two := files(1), files(2)
	for _, c := range []struct {
		file, tensor string
		shape        []int
	}{{"maps/01-p_e.safetensors", "maps", []int{8, 3, 2, N / 2}}, {"maps/01-p_e_mean.safetensors", "map", []int{8, 2, N / 2}}} {
		a, _ := one[c.file].Get(c.tensor)
		b, _ := two[c.file].Get(c.tensor)
		if !slices.Equal(b.Shape, c.shape) || !slices.Equal(a.Data, b.Data) || two[c.file].Meta["channels"] != "A,B" || one[c.file].Meta["channels"] != "" {
			t.Errorf("%s: shape %v (one channel %v), want %v; the same values; channels %q", c.file, b.Shape, a.Shape, c.shape, two[c.file].Meta["channels"])
		}
	}
}

// TestFigureFailureIsANote: a qualitative figure that cannot be drawn
// (here a panel holding NaN) costs the run nothing: Finish succeeds, a
// note names the figure and why, and the other figures are written.
func TestFigureFailureIsANote(t *testing.T) {
	an := recipe.Analysis{Figures: &recipe.Figures{Qualitative: []string{"sag", "Interruption"}}}
	w := newWorld(t, an, 7, 3, nil)
	a := New(w.setup)
	for _, i := range identity(len(w.batches)) {
		if err := a.Batch(w.batches[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, recs := range a.pairs[pairKey{"P", 0, "E"}].recs {
		for _, r := range recs {
			if r != nil && r.figure != nil && r.figure.Labels.Class == "sag" {
				r.figure.Wave[0] = math.NaN()
			}
		}
	}
	rep, err := a.Finish(&engine.Results{})
	if err != nil {
		t.Fatalf("a figure that cannot be drawn failed the run: %v", err)
	}
	names := map[string]bool{}
	for _, f := range rep.Files {
		names[f.Name] = true
	}
	if names["figures/qual-01-p_e-sag.png"] || !names["figures/qual-01-p_e-interruption.png"] {
		t.Errorf("files %v: want the interruption figure and no sag figure", names)
	}
	found := false
	for _, n := range rep.Notes {
		found = found || strings.Contains(n, "qualitative figure of sag under") && strings.Contains(n, "not drawn")
	}
	if !found {
		t.Errorf("notes %q: none says the sag figure was not drawn", rep.Notes)
	}
}

// TestRandomisedDrawsServedIsANote: batches whose draws could not be
// re-initialised (RandomisedWhy, a served network) give no randomisation
// table but a note naming the pair and the reason; measured batches give
// the table and no note.
func TestRandomisedDrawsServedIsANote(t *testing.T) {
	for _, served := range []bool{true, false} {
		w := newWorld(t, recipe.Analysis{}, 4, 3, nil)
		a := New(w.setup)
		for _, b := range w.batches {
			if served {
				b.RandomisedWhy = "draw 0 is served by a PyTorch process"
			} else {
				b.RandomisedW1 = make([]float64, len(b.Records))
			}
			if err := a.Batch(b); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := a.Finish(&engine.Results{})
		if err != nil {
			t.Fatal(err)
		}
		noted := false
		for _, n := range rep.Notes {
			noted = noted || strings.Contains(n, "P / E is left out of the randomisation table: draw 0 is served")
		}
		_, table := rep.JSON["randomised_draws"]
		if noted != served || table == served {
			t.Errorf("served %v: note %v, table %v (notes %q)", served, noted, table, rep.Notes)
		}
	}
}
