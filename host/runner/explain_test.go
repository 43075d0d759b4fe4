package runner

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/plugins/explainer/lime"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
	"github.com/uaxai/uaxai/sdk/rng"
)

// explainCSV runs Explain and returns its output.
func explainCSV(t *testing.T, opt ExplainOptions) string {
	t.Helper()
	if opt.Plugins == nil {
		opt.Plugins = inProcess(t)
	}
	var b bytes.Buffer
	if err := Explain(context.Background(), opt, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// csvRows reads an output as CSV (RFC 4180, as encoding/csv reads it)
// into its header (nil if the first field is not "input") and rows.
func csvRows(t *testing.T, out string) (header []string, rows [][]string) {
	t.Helper()
	r := csv.NewReader(strings.NewReader(out))
	r.FieldsPerRecord = -1
	all, err := r.ReadAll()
	if err != nil {
		t.Fatalf("the output is not CSV: %v", err)
	}
	if len(all) > 0 && all[0][0] == "input" {
		return all[0], all[1:]
	}
	return nil, all
}

func floats(t *testing.T, fields []string) []float64 {
	t.Helper()
	out := make([]float64, len(fields))
	for i, s := range fields {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("field %d: %v", i, err)
		}
		out[i] = v
	}
	return out
}

// goldenOpt explains the golden waveforms with the golden model for their
// labels.
func goldenOpt(t *testing.T, explainer string, cfg sdk.Config) ExplainOptions {
	dir := golden.Dir(t, "paper-1dcnn")
	return ExplainOptions{Weights: []string{filepath.Join(dir, "model.safetensors")}, Input: filepath.Join(dir, "waveforms.csv"),
		Explainer: explainer, Config: cfg, Target: filepath.Join(dir, "labels.csv")}
}

// TestExplainGolden: one weights file, no summary: one headerless line an
// input, which is Captum's occlusion (window 60, stride 1, baseline 0)
// within 1e-5, and Captum's raw LayerGradCam of conv4 with align = none in
// the first 630 values (the last 10 are 0), within 1e-5 of each map's
// largest value.
func TestExplainGolden(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	m := inProcess(t)
	for _, c := range []struct {
		explainer, file string
		cfg             sdk.Config
		tol             func(row []float32) float64
	}{
		{"occlusion", "occlusion.csv", sdk.Config{"window": int64(60), "stride": int64(1), "baseline": 0.0}, func([]float32) float64 { return 1e-5 }},
		{"explainer.gradcam", "gradcam_raw.csv", sdk.Config{"align": "none"}, func(row []float32) float64 {
			s := 0.0
			for _, v := range row {
				s = math.Max(s, math.Abs(float64(v)))
			}
			return 1e-5 * s
		}},
	} {
		opt := goldenOpt(t, c.explainer, c.cfg)
		opt.Plugins, opt.Workers = m, 2
		header, rows := csvRows(t, explainCSV(t, opt))
		want := golden.CSV32(t, filepath.Join(dir, c.file))
		if header != nil || len(rows) != len(want) {
			t.Fatalf("%s: header %v and %d lines, want no header and %d", c.explainer, header, len(rows), len(want))
		}
		for r, f := range rows {
			got := floats(t, f)
			if len(got) != 640 {
				t.Fatalf("%s line %d: %d values, want 640", c.explainer, r+1, len(got))
			}
			tol := c.tol(want[r])
			for n, v := range got {
				ref := 0.0
				if n < len(want[r]) {
					ref = float64(want[r][n])
				}
				if math.Abs(v-ref) > tol {
					t.Fatalf("%s line %d value %d: %g, golden %g", c.explainer, r+1, n, v, ref)
				}
			}
		}
	}
}

// twoDraws returns the golden model and another network of the paper's
// architecture, as files.
func twoDraws(t *testing.T) []string {
	other, _ := paperWeights(t)
	return []string{filepath.Join(golden.Dir(t, "paper-1dcnn"), "model.safetensors"), other}
}

// TestExplainDraws: with several weights files, line (i, s) is the map of
// input i under file s alone (a metamorphic relation: the files' maps do
// not depend on each other), in input-major order after a header; the
// mean summary is the mean of those lines; band k=1, l=S is their minimum
// and maximum; agreement is a set of 0s and 1s.
func TestExplainDraws(t *testing.T) {
	m := inProcess(t)
	files := twoDraws(t)
	opt := goldenOpt(t, "occlusion", sdk.Config{"window": int64(80), "stride": int64(16)})
	opt.Plugins, opt.Weights = m, files
	header, rows := csvRows(t, explainCSV(t, opt))
	if len(header) != 642 || header[0] != "input" || header[1] != "draw" || header[2] != "v0" || header[641] != "v639" {
		t.Fatalf("header %v...", header[:min(4, len(header))])
	}
	if len(rows) != 16*2 {
		t.Fatalf("%d lines, want 32", len(rows))
	}
	single := make([][][]string, 2)
	for s, f := range files {
		o := opt
		o.Weights = []string{f}
		_, single[s] = csvRows(t, explainCSV(t, o))
	}
	draws := make([][][]float64, 16)
	for k, row := range rows {
		i, s := k/2, k%2
		if row[0] != strconv.Itoa(i) || row[1] != strconv.Itoa(s) {
			t.Fatalf("line %d tagged %s,%s, want %d,%d", k+2, row[0], row[1], i, s)
		}
		if !slices.Equal(row[2:], single[s][i]) {
			t.Errorf("input %d draw %d differs from explaining with %s alone", i, s, files[s])
		}
		draws[i] = append(draws[i], floats(t, row[2:]))
	}
	if slices.Equal(draws[0][0], draws[0][1]) {
		t.Fatal("the two networks give the same map: the test cannot tell draws apart")
	}

	opt.Summaries = []SummarySpec{mustSummary(t, "mean"), mustSummary(t, "band:k=1,l=2"), mustSummary(t, "agreement:eta=0.5,delta=0.001")}
	header, rows = csvRows(t, explainCSV(t, opt))
	if len(header) != 643 || header[1] != "summary" || header[2] != "part" || header[3] != "v0" {
		t.Fatalf("summary header %v...", header[:min(4, len(header))])
	}
	// Each input: mean (1 line), band (2), agreement (1). Labels with a
	// comma are quoted, and read back whole.
	if len(rows) != 16*4 {
		t.Fatalf("%d summary lines, want 64", len(rows))
	}
	for i := range 16 {
		mean, lower, upper, agree := rows[4*i], rows[4*i+1], rows[4*i+2], rows[4*i+3]
		for _, r := range [][]string{mean, lower, upper, agree} {
			if r[0] != strconv.Itoa(i) {
				t.Fatalf("input %d: line tagged %s", i, r[0])
			}
		}
		if mean[1] != "mean" || mean[2] != "map" || lower[1] != "band:k=1,l=2" || lower[2] != "lower" || upper[1] != "band:k=1,l=2" || upper[2] != "upper" ||
			agree[1] != "agreement:eta=0.5,delta=0.001" || agree[2] != "set" {
			t.Fatalf("input %d: tags %v %v %v %v", i, mean[:3], lower[:3], upper[:3], agree[:3])
		}
		a, b := draws[i][0], draws[i][1]
		got, lo, hi := floats(t, mean[3:]), floats(t, lower[3:]), floats(t, upper[3:])
		for n := range a {
			if d := math.Abs(got[n] - (a[n]+b[n])/2); d > 1e-15 {
				t.Fatalf("input %d value %d: mean %g, mean of the draw lines %g", i, n, got[n], (a[n]+b[n])/2)
			}
			if lo[n] != math.Min(a[n], b[n]) || hi[n] != math.Max(a[n], b[n]) {
				t.Fatalf("input %d value %d: band [%g, %g], draws %g, %g", i, n, lo[n], hi[n], a[n], b[n])
			}
		}
		for _, v := range agree[3:] {
			if v != "0" && v != "1" {
				t.Fatalf("input %d: agreement value %q", i, v)
			}
		}
	}
}

func mustSummary(t *testing.T, spec string) SummarySpec {
	t.Helper()
	s, err := ParseSummary(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestExplainWorkersAndSeeds: the output is the same bytes for 1 and 2
// workers, for a stochastic explainer too; its maps change with the seed.
func TestExplainWorkersAndSeeds(t *testing.T) {
	m := inProcess(t)
	opt := goldenOpt(t, "lime", sdk.Config{"samples": int64(24)})
	opt.Plugins, opt.Weights, opt.Seed = m, twoDraws(t), 3
	opt.Summaries = []SummarySpec{mustSummary(t, "mean")}
	var outs []string
	for _, w := range []int{1, 2} {
		opt.Workers = w
		outs = append(outs, explainCSV(t, opt))
	}
	if outs[0] != outs[1] {
		t.Error("the output differs between 1 and 2 workers")
	}
	opt.Seed = 4
	if explainCSV(t, opt) == outs[0] {
		t.Error("another seed gives the same LIME maps")
	}
}

// TestExplainTargets: "predicted" is the argmax of the mean of the draws'
// probabilities, computed here independently and written to a target file;
// an integer target is a file of that class on every line. (The golden
// waveforms are scaled, each by its own factor, so that the untrained
// networks predict more than one class.)
func TestExplainTargets(t *testing.T) {
	m := inProcess(t)
	dir := t.TempDir()
	files := twoDraws(t)
	g, _ := golden.Inputs(t, golden.Dir(t, "paper-1dcnn"))
	const rows = 191 // two batches of 64 predictions and one of 63
	x := make([]float32, rows*640)
	var in strings.Builder
	for i := range x {
		r := i / 640
		x[i] = g[(r%16)*640+i%640] * (float32((r+r/16)%8)*4 - 14)
		in.WriteString(strconv.FormatFloat(float64(x[i]), 'g', -1, 32))
		if i%640 == 639 {
			in.WriteString("\n")
		} else {
			in.WriteString(",")
		}
	}
	input := filepath.Join(dir, "scaled.csv")
	if err := os.WriteFile(input, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mean := make([]float64, rows*16)
	for _, f := range files {
		p, err := nn.LoadParams(f, nn.PaperArch())
		if err != nil {
			t.Fatal(err)
		}
		model, err := nn.NewModel(p)
		if err != nil {
			t.Fatal(err)
		}
		pr := make([]float32, 16)
		for i := range rows {
			if err := model.Probs(context.Background(), pr, x[i*640:(i+1)*640]); err != nil {
				t.Fatal(err)
			}
			for c, v := range pr {
				mean[i*16+c] += float64(v)
			}
		}
	}
	var pred strings.Builder
	classes := map[int]bool{}
	for i := range rows {
		row := mean[i*16 : (i+1)*16]
		c := 0
		for k, v := range row {
			if v > row[c] {
				c = k
			}
		}
		classes[c] = true
		pred.WriteString(strconv.Itoa(c) + "\n")
	}
	if len(classes) < 2 {
		t.Fatalf("every input is predicted as one class %v: the test cannot tell targets apart", classes)
	}
	predFile := filepath.Join(dir, "pred.csv")
	threes := filepath.Join(dir, "threes.csv")
	if err := os.WriteFile(predFile, []byte(pred.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(threes, []byte(strings.Repeat("3\n", rows)), 0o644); err != nil {
		t.Fatal(err)
	}
	opt := goldenOpt(t, "gradcam", nil)
	opt.Plugins, opt.Weights, opt.Input = m, files, input
	for _, c := range [][2]string{{"predicted", predFile}, {"3", threes}} {
		opt.Target = c[0]
		a := explainCSV(t, opt)
		opt.Target = c[1]
		if b := explainCSV(t, opt); a != b {
			t.Errorf("target %s differs from the target file %s", c[0], c[1])
		}
	}
	opt.Target = "4"
	if explainCSV(t, opt) == explainCSV(t, ExplainOptions{Plugins: m, Weights: files, Input: opt.Input, Explainer: "gradcam", Target: "3"}) {
		t.Error("targets 3 and 4 give the same maps")
	}
	for _, c := range []string{"0", "15"} { // the first and the last class
		opt.Target = c
		if _, lines := csvRows(t, explainCSV(t, opt)); len(lines) != 2*rows {
			t.Errorf("target %s: %d lines, want %d", c, len(lines), 2*rows)
		}
	}
}

// TestExplainPredictedTies: a class tied with a later one for the largest
// mean probability is the one predicted. In both networks only classes 4
// and 9 have a probability above 0 (every other bias is -1000); the second
// network is the first with classes 4 and 9 swapped, so that the mean over
// the two is an exact tie of 4 and 9 for every input, while each network
// tells them apart: predicted is class 4, whose maps are not class 9's.
func TestExplainPredictedTies(t *testing.T) {
	_, p := paperWeights(t)
	lay, err := nn.NewLayout(p.Arch)
	if err != nil {
		t.Fatal(err)
	}
	w, b := lay.View(p.Data, "fc2.weight"), lay.View(p.Data, "fc2.bias")
	for c := range b {
		if c != 4 && c != 9 {
			b[c] = -1000
		}
	}
	dir := t.TempDir()
	var files []string
	for k := range 2 {
		f := filepath.Join(dir, strconv.Itoa(k)+".safetensors")
		if err := nn.SaveParams(f, p, nil); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for i := range 64 { // swap classes 4 and 9 for the second network
			w[4*64+i], w[9*64+i] = w[9*64+i], w[4*64+i]
		}
		b[4], b[9] = b[9], b[4]
	}
	opt := goldenOpt(t, "gradcam", nil)
	opt.Plugins, opt.Weights = inProcess(t), files
	out := map[string]string{}
	for _, c := range []string{"predicted", "4", "9"} {
		opt.Target = c
		out[c] = explainCSV(t, opt)
	}
	if out["4"] == out["9"] {
		t.Fatal("classes 4 and 9 give the same maps: the test cannot tell them apart")
	}
	if out["predicted"] != out["4"] {
		t.Errorf("a tie of classes 4 and 9 is not explained as class 4 (as class 9: %v)", out["predicted"] == out["9"])
	}
}

// recorder keeps an observer's stages and its last Advance.
type recorder struct {
	mu     sync.Mutex
	stages []string
	totals []int
	last   int
}

func (r *recorder) Stage(name string, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stages, r.totals = append(r.stages, name), append(r.totals, total)
}

func (r *recorder) Advance(done int, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = max(r.last, done)
}

func (*recorder) Note(string) {}

// TestExplainProgress: one stage of N inputs x S draws units, advanced to
// its total.
func TestExplainProgress(t *testing.T) {
	rec := &recorder{}
	opt := goldenOpt(t, "gradcam", nil)
	opt.Plugins, opt.Weights, opt.Observer = inProcess(t), twoDraws(t), rec
	explainCSV(t, opt)
	if len(rec.stages) != 1 || rec.stages[0] != "explain 16 inputs x 2 draws (explainer.gradcam)" || rec.totals[0] != 32 || rec.last != 32 {
		t.Errorf("stages %q of %v units, advanced to %d; want one of 32, advanced to 32", rec.stages, rec.totals, rec.last)
	}
}

// TestExplainSeeds: a stochastic explainer's map of input i under draw s
// is the plugin's own map of that input alone, under that draw, with the
// seed rng.Key(seed, "explainer", "explain", i, s).
func TestExplainSeeds(t *testing.T) {
	opt := goldenOpt(t, "lime", sdk.Config{"samples": int64(16)})
	opt.Plugins, opt.Weights, opt.Seed = inProcess(t), twoDraws(t), 11
	_, rows := csvRows(t, explainCSV(t, opt))
	x, _ := golden.Inputs(t, golden.Dir(t, "paper-1dcnn"))
	y := golden.CSV32(t, opt.Target)
	for s, f := range opt.Weights {
		p, err := nn.LoadParams(f, nn.PaperArch())
		if err != nil {
			t.Fatal(err)
		}
		m, err := nn.NewModel(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 16 {
			want, err := lime.New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[i*640 : (i+1)*640], Targets: []int{int(y[i][0])},
				Seeds: []uint64{rng.Key(11, "explainer", "explain", i, s)}, Config: opt.Config})
			if err != nil {
				t.Fatal(err)
			}
			if got := floats(t, rows[2*i+s][2:]); !slices.Equal(got, want[0]) {
				t.Fatalf("input %d draw %d: the map differs from LIME's own with seed rng.Key(11, explainer, explain, %d, %d)", i, s, i, s)
			}
		}
	}
}

// TestExplainErrors: every bad input is an error that names it.
func TestExplainErrors(t *testing.T) {
	m := inProcess(t)
	dir := t.TempDir()
	gdir := golden.Dir(t, "paper-1dcnn")
	model := filepath.Join(gdir, "model.safetensors")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A state dict whose conv1 has kernel 5 instead of 3.
	p, err := nn.LoadParams(model, nn.PaperArch())
	if err != nil {
		t.Fatal(err)
	}
	ts, err := p.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	ts[0] = safetensors.Tensor{Name: "conv1.weight", DType: "F32", Shape: []int{8, 1, 5}, Data: make([]float32, 40)}
	wide := filepath.Join(dir, "wide.safetensors")
	if err := safetensors.WriteFile(wide, ts, nil); err != nil {
		t.Fatal(err)
	}
	short := write("short.csv", "1,2,3\n")
	fifteen := write("fifteen.csv", strings.Repeat("1\n", 15))
	badLine := write("bad.csv", strings.Repeat("1\n", 5)+"x\n"+strings.Repeat("1\n", 10))
	base := goldenOpt(t, "occlusion", nil)
	base.Plugins = m
	for _, c := range []struct {
		name string
		edit func(o *ExplainOptions)
		want []string
	}{
		{"no weights", func(o *ExplainOptions) { o.Weights = nil }, []string{"no weights file"}},
		{"no input", func(o *ExplainOptions) { o.Input = "" }, []string{"no input file"}},
		{"no explainer", func(o *ExplainOptions) { o.Explainer = "" }, []string{"no explainer"}},
		{"no target", func(o *ExplainOptions) { o.Target = "" }, []string{"no target (accepted: a class 0..15, predicted, or a file"}},
		{"wrong shape", func(o *ExplainOptions) { o.Weights = []string{model, wide} },
			[]string{"weights file 2 (draw 1)", wide, `tensor "conv1.weight" has shape [8 1 5], want [8 1 3] for arch "paper-1dcnn"`}},
		{"missing weights", func(o *ExplainOptions) { o.Weights = []string{filepath.Join(dir, "none.safetensors")} }, []string{"none.safetensors"}},
		{"unknown arch", func(o *ExplainOptions) { o.Arch = "nope" }, []string{`unknown architecture "nope"`}},
		{"short input", func(o *ExplainOptions) { o.Input = short }, []string{short, "1 channel(s) x 3 samples (line 1, record 0)", "e.g. 640"}},
		{"class 16", func(o *ExplainOptions) { o.Target = "16" }, []string{"target 16 is not a class (accepted: a class 0..15"}},
		{"class -1", func(o *ExplainOptions) { o.Target = "-1" }, []string{"target -1 is not a class"}},
		{"target count", func(o *ExplainOptions) { o.Target = fifteen }, []string{fifteen, "15 classes, want 16 (one a line of " + base.Input}},
		{"target line", func(o *ExplainOptions) { o.Target = badLine }, []string{badLine, `line 6 (record 5): label "x", want an integer 0..15`}},
		{"target file missing", func(o *ExplainOptions) { o.Target = filepath.Join(dir, "nofile") }, []string{"target file", "nofile"}},
		{"summary kind", func(o *ExplainOptions) { o.Explainer = "summary.mean" }, []string{`"summary.mean" is a summary plugin, not a explainer`}},
		{"unknown explainer", func(o *ExplainOptions) { o.Explainer = "nope" }, []string{`explainer.nope`}},
		{"explainer config", func(o *ExplainOptions) { o.Config = sdk.Config{"windw": int64(3)} }, []string{"explainer config (--set)", `unknown key "windw"`}},
		{"unknown summary", func(o *ExplainOptions) { o.Summaries = []SummarySpec{{Label: "nope", ID: "summary.nope"}} }, []string{`summary "nope"`, "summary.nope"}},
		{"summary config", func(o *ExplainOptions) { o.Summaries = []SummarySpec{mustSummary(t, "quantile:alpha=2.0")} }, []string{`summary "quantile:alpha=2.0"`, "alpha"}},
		{"summary draws", func(o *ExplainOptions) { o.Summaries = []SummarySpec{mustSummary(t, "variance")} }, []string{`summary "variance" needs at least 2 draws; 1 weights file(s) given`}},
		{"summary twice", func(o *ExplainOptions) { o.Summaries = []SummarySpec{mustSummary(t, "mean"), mustSummary(t, "mean")} }, []string{`summary "mean" is given twice`}},
		{"no manager", func(o *ExplainOptions) { o.Plugins = nil }, []string{"no plugin manager"}},
	} {
		o := base
		c.edit(&o)
		var b bytes.Buffer
		err := Explain(context.Background(), o, &b)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to contain %q", c.name, err, w)
			}
		}
		if b.Len() > 0 {
			t.Errorf("%s: output written before the error: %q", c.name, b.String()[:min(40, b.Len())])
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Explain(ctx, base, &bytes.Buffer{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestExplainFile: the file is the bytes Explain writes, and a failed
// explanation leaves no file behind; a failing writer is an error.
func TestExplainFile(t *testing.T) {
	m := inProcess(t)
	opt := goldenOpt(t, "gradcam", nil)
	opt.Plugins = m
	path := filepath.Join(t.TempDir(), "maps.csv")
	if err := ExplainFile(context.Background(), opt, path); err != nil {
		t.Fatal(err)
	}
	if got := string(read(t, path)); got != explainCSV(t, opt) {
		t.Error("the file differs from the output of Explain")
	}
	bad := opt
	bad.Target = "99"
	other := filepath.Join(filepath.Dir(path), "other.csv")
	if err := ExplainFile(context.Background(), bad, other); err == nil {
		t.Error("target 99: no error")
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("a failed explanation left files behind: %v", ents)
	}
	if err := ExplainFile(context.Background(), opt, filepath.Join(t.TempDir(), "no", "dir.csv")); err == nil {
		t.Error("a file in a missing folder: no error")
	}
	if err := Explain(context.Background(), opt, failWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("a failing writer: %v", err)
	}
}

func TestParseSetting(t *testing.T) {
	for _, c := range []struct {
		in  string
		key string
		val any
	}{
		{"window=60", "window", int64(60)},
		{" baseline = -0.5 ", "baseline", -0.5},
		{"fit=true", "fit", true},
		{"align=none", "align", "none"},
		{`layer="conv4"`, "layer", "conv4"},
		{`name='60'`, "name", "60"},
		{"when=1979-05-27", "when", "1979-05-27"},
		{"x=a=b", "x", "a=b"},
		{"my-key_2=1e-3", "my-key_2", 1e-3},
		{"azAZ09_-=1", "azAZ09_-", int64(1)},
	} {
		k, v, err := ParseSetting(c.in)
		if err != nil || k != c.key || v != c.val {
			t.Errorf("ParseSetting(%q) = %q, %#v, %v; want %q, %#v", c.in, k, v, err, c.key, c.val)
		}
	}
	if _, v, err := ParseSetting("seeds=[1, 2]"); err != nil || len(v.([]any)) != 2 || v.([]any)[1] != int64(2) {
		t.Errorf("an array: %#v, %v", v, err)
	}
	for _, c := range []struct{ in, want string }{
		{"window", "is not key=value"},
		{"=3", "is not key=value"},
		{"window=", "no value after '='"},
		{"win dow=3", `key "win dow" may hold letters`},
		{"a.b=3", `key "a.b"`},
		{"a{=3", `key "a{"`}, {"a`=3", "key \"a`\""}, {"a@=3", `key "a@"`}, {"a[=3", `key "a["`}, {"a/=3", `key "a/"`}, {"a:=3", `key "a:"`},
	} {
		if _, _, err := ParseSetting(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSetting(%q): %v, want %q", c.in, err, c.want)
		}
	}
	if _, err := ParseSettings([]string{"a=1", "b=2", "a=3"}); err == nil || !strings.Contains(err.Error(), `key "a" is set twice`) {
		t.Errorf("a key twice: %v", err)
	}
	if cfg, err := ParseSettings(nil); err != nil || len(cfg) != 0 || cfg == nil {
		t.Errorf("no settings: %v, %v", cfg, err)
	}
}

func TestParseSummary(t *testing.T) {
	s := mustSummary(t, `band:k=1, l=3`)
	if s.ID != "summary.band" || s.Label != "band:k=1, l=3" || s.Config["k"] != int64(1) || s.Config["l"] != int64(3) || len(s.Config) != 2 {
		t.Errorf("band: %+v", s)
	}
	s = mustSummary(t, `summary.x:list=[1,2],name="a,b",c='d,e',t={u=1,v=2}`)
	if s.ID != "summary.x" || len(s.Config) != 4 || s.Config["name"] != "a,b" || s.Config["c"] != "d,e" || len(s.Config["list"].([]any)) != 2 || len(s.Config["t"].(map[string]any)) != 2 {
		t.Errorf("commas inside values: %+v", s)
	}
	if s = mustSummary(t, "mean"); s.ID != "summary.mean" || len(s.Config) != 0 {
		t.Errorf("mean: %+v", s)
	}
	for _, c := range []struct{ in, want string }{
		{"", "no summary name"},
		{":alpha=1", "no summary name"},
		{"quantile:", `"quantile:": "" is not key=value`},
		{"quantile:alpha", "is not key=value"},
		{"quantile:alpha=1,alpha=2", `key "alpha" is set twice`},
		{"explainer.occlusion", "is a explainer plugin, not a summary"},
	} {
		if _, err := ParseSummary(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSummary(%q): %v, want %q", c.in, err, c.want)
		}
	}
}

func TestCSVField(t *testing.T) {
	for in, want := range map[string]string{"mean": "mean", "band:k=1,l=2": `"band:k=1,l=2"`, `a"b`: `"a""b"`, "a\nb": "\"a\nb\""} {
		if got := csvField(in); got != want {
			t.Errorf("csvField(%q) = %q, want %q", in, got, want)
		}
	}
}

// refusing is an explainer that refuses one target class and explains
// every other input by a constant map of its target.
type refusing struct{ class int }

func (refusing) Info() sdk.Info {
	return sdk.Info{ID: "explainer.refusing", Version: "1.0.0", Needs: sdk.NeedsProbs}
}
func (refusing) Check(cfg sdk.Config) error { return cfg.Only() }
func (r refusing) Explain(_ context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	out := make([][]float64, len(req.Targets))
	for i, c := range req.Targets {
		if c == r.class {
			return nil, errors.New("class refused")
		}
		out[i] = make([]float64, m.InputLen())
		for n := range out[i] {
			out[i][n] = float64(c)
		}
	}
	return out, nil
}

// failing is a map summary that always fails.
type failing struct{}

func (failing) Info() sdk.Info {
	return sdk.Info{ID: "summary.failing", Version: "1.0.0", Output: sdk.OutputMap}
}
func (failing) Check(cfg sdk.Config) error { return cfg.Only() }
func (failing) Summarise(context.Context, [][][]float64, sdk.Config) ([]sdk.Result, error) {
	return nil, errors.New("cannot summarise")
}

// withFakes adds the fakes above to a manager.
type withFakes struct {
	engine.Plugins
	ex  driver.Explainer
	sum sdk.Summary
}

func (w withFakes) Explainer(ctx context.Context, id string) (driver.Explainer, error) {
	if id == w.ex.Info().ID {
		return w.ex, nil
	}
	return w.Plugins.Explainer(ctx, id)
}

func (w withFakes) Summary(ctx context.Context, id string) (sdk.Summary, error) {
	if id == w.sum.Info().ID {
		return w.sum, nil
	}
	return w.Plugins.Summary(ctx, id)
}

// TestExplainPluginFailures: an explainer's or a summary's error names the
// plugin, the inputs of the batch and the draw's file.
func TestExplainPluginFailures(t *testing.T) {
	ex, err := driver.LocalExplainer(refusing{class: 13})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := driver.LocalSummary(failing{})
	if err != nil {
		t.Fatal(err)
	}
	opt := goldenOpt(t, "refusing", nil)
	opt.Plugins = withFakes{Plugins: inProcess(t), ex: ex, sum: sum}
	opt.Weights = twoDraws(t)
	// Label 13 is line 4 of labels.csv: the first batch, inputs 0..7.
	err = Explain(context.Background(), opt, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "explainer.refusing on inputs 0..7, draw ") || !strings.Contains(err.Error(), "class refused") {
		t.Errorf("a refused batch: %v", err)
	}
	opt.Target, opt.Workers = "2", 1
	opt.Summaries = []SummarySpec{mustSummary(t, "mean"), mustSummary(t, "failing")}
	err = Explain(context.Background(), opt, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `summary "failing" on inputs 0..7: summary.failing: Summarise: cannot summarise`) {
		t.Errorf("a failing summary: %v", err)
	}
	opt.Summaries = nil
	_, rows := csvRows(t, explainCSV(t, opt))
	if len(rows) != 32 || rows[31][0] != "15" || rows[31][1] != "1" || rows[31][2] != "2" || rows[31][641] != "2" {
		t.Errorf("target 2: %d lines, last %v...", len(rows), rows[len(rows)-1][:3])
	}
}
