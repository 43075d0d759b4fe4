package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
	"github.com/uaxai/uaxai/sdk/stat"
)

// The fakes below make every draw, record and seed visible:
//
//   - a tiny network (conv 1x1, global max pool, dense to 3 classes) whose
//     dense weights are zero, so its class probabilities are softmax(bias)
//     for every input: draw s of a fake posterior has its own bias, and a
//     model tells which draw it was built from by its probabilities;
//   - record r of test split k holds the value 1000k+r+1 in every sample,
//     so an explainer tells which record it was given;
//   - an echo explainer logs (split, record, draw, seed, target) and
//     returns a map that encodes the draw and the record;
//   - a spy summary logs the maps it is given, in order.

const (
	inLen   = 8
	classes = 3
	seed    = 2026
)

func tinyArch() nn.Arch {
	return nn.Arch{Name: "engine-test", InChannels: 1, InLen: inLen, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "c", Out: 1, Kernel: 1},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc", Out: classes},
	}}
}

// drawParams returns a network whose class probabilities are p for every
// input.
func drawParams(t testing.TB, p []float64) nn.Params {
	t.Helper()
	a := tinyArch()
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float32, lay.Size)
	lay.View(data, "c.weight")[0] = 1
	b := lay.View(data, "fc.bias")
	for j, v := range p {
		b[j] = float32(math.Log(v))
	}
	return nn.Params{Arch: a, Data: data}
}

// drawProbs are the class probabilities of draw s of the fake posterior.
// No single draw predicts class 1, but their mean does:
// (0.5+0.05)/2 = 0.275 < 0.45 for two draws, and so on for more.
func drawProbs(s int) []float64 {
	if s%2 == 0 {
		return []float64{0.5 + 0.001*float64(s), 0.45, 0.05 - 0.001*float64(s)}
	}
	return []float64{0.05 - 0.001*float64(s), 0.45, 0.5 + 0.001*float64(s)}
}

// whichDraw identifies the draw a model was built from by its
// probabilities.
func whichDraw(m nn.Model, maxDraws int) (int, error) {
	x := make([]float32, m.InputLen())
	pr := make([]float32, m.Classes())
	if err := m.Probs(context.Background(), pr, x); err != nil {
		return 0, err
	}
	for s := range maxDraws {
		want := drawProbs(s)
		ok := true
		for j := range pr {
			if math.Abs(float64(pr[j])-want[j]) > 1e-4 {
				ok = false
			}
		}
		if ok {
			return s, nil
		}
	}
	return -1, fmt.Errorf("model with probabilities %v is no draw of the fake posterior", pr)
}

// fakePosterior is a finite posterior of K members; member s has
// probabilities drawProbs(s).
type fakePosterior struct {
	id         string
	members    int
	replicates bool // Info.Replicates
	mu         sync.Mutex
	fits       int
	seeds      [][]uint64 // Sample's seeds, per call
	fitted     []sdk.FitRequest
}

func (p *fakePosterior) Info() sdk.Info {
	return sdk.Info{ID: p.id, Version: "1.0.0", Finite: true, Replicates: p.replicates}
}
func (p *fakePosterior) Check(sdk.Config, int) error { return nil }
func (p *fakePosterior) Fit(_ context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	p.mu.Lock()
	p.fits++
	p.fitted = append(p.fitted, req)
	p.mu.Unlock()
	if req.Progress != nil {
		for m := range p.members {
			req.Progress(sdk.Progress{Done: m + 1, Total: p.members, Message: "member"})
		}
	}
	a := sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{}}
	for s := range p.members {
		a.Tensors[strconv.Itoa(s)] = drawParams(testingT{}, drawProbs(s)).Data
	}
	return a, nil
}
func (p *fakePosterior) Sample(_ context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	p.mu.Lock()
	p.seeds = append(p.seeds, slices.Clone(req.Seeds))
	p.mu.Unlock()
	out := make([]nn.Params, len(req.Seeds))
	for s := range out {
		d, ok := a.Tensors[strconv.Itoa(s)]
		if !ok {
			return nil, fmt.Errorf("no member %d", s)
		}
		out[s] = nn.Params{Arch: a.Arch, Data: d}
	}
	return out, nil
}

// testingT lets drawParams run outside a test (in Fit); the tiny arch
// always has a layout, so Fatal is never reached.
type testingT struct{ testing.TB }

func (testingT) Helper()           {}
func (testingT) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

// call is one explained (record, draw) as the echo explainer saw it.
type call struct {
	Split, Record, Draw, Target int
	Seed                        uint64
}

// echoExplainer is stochastic, so that the engine gives it seeds. Its map
// of input v (1000 split + record) under draw s holds s+1 at sample 0 and
// v+1 at sample 1, so the spy summary sees which draw and record each map
// came from.
type echoExplainer struct {
	id       string
	maxDraws int
	mu       sync.Mutex
	calls    []call
}

func (e *echoExplainer) Info() sdk.Info {
	return sdk.Info{ID: e.id, Version: "1.0.0", Needs: sdk.NeedsProbs, Stochastic: true}
}
func (e *echoExplainer) Check(sdk.Config) error { return nil }
func (e *echoExplainer) Explain(_ context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	s, err := whichDraw(m, e.maxDraws)
	if err != nil {
		return nil, err
	}
	if len(req.Seeds) != len(req.Targets) {
		return nil, errors.New("echo: a stochastic explainer needs a seed per input")
	}
	maps := make([][]float64, len(req.Targets))
	e.mu.Lock()
	defer e.mu.Unlock()
	for j := range maps {
		v := int(req.X[j*inLen]) - 1
		r := v % 1000
		e.calls = append(e.calls, call{Split: v / 1000, Record: r, Draw: s, Target: req.Targets[j], Seed: req.Seeds[j]})
		maps[j] = echoMap(v, s)
	}
	return maps, nil
}

func echoMap(v, s int) []float64 {
	m := make([]float64, inLen)
	m[0] = float64(s + 1)
	m[1] = float64(v + 1)
	return m
}

// spySummary is the mean map (plugins/summary/mean), and logs the maps it
// is given.
type spySummary struct {
	mu      sync.Mutex
	draws   [][][]float64 // per input, in call order
	batches []int         // inputs per call
}

func (*spySummary) Info() sdk.Info {
	return sdk.Info{ID: "summary.spy", Version: "1.0.0", Output: sdk.OutputMap, MinDraws: 1}
}
func (*spySummary) Check(sdk.Config) error { return nil }
func (sp *spySummary) Summarise(_ context.Context, draws [][][]float64, _ sdk.Config) ([]sdk.Result, error) {
	sp.mu.Lock()
	sp.draws = append(sp.draws, draws...)
	sp.batches = append(sp.batches, len(draws))
	sp.mu.Unlock()
	out := make([]sdk.Result, len(draws))
	for i, d := range draws {
		out[i] = sdk.Result{Map: stat.Mean(make([]float64, len(d[0])), d)}
	}
	return out, nil
}

// fakes resolves IDs to the fakes above, driven in process as the host
// drives any plugin (package driver), so their answers are checked.
type fakes struct {
	post *fakePosterior
	ex   *echoExplainer
	sum  *spySummary
}

func (f *fakes) Posterior(_ context.Context, id string) (sdk.Posterior, error) {
	if id != f.post.id {
		return nil, fmt.Errorf("unknown posterior %q", id)
	}
	return driver.LocalPosterior(f.post)
}
func (f *fakes) Explainer(_ context.Context, id string) (driver.Explainer, error) {
	if id != f.ex.id {
		return nil, fmt.Errorf("unknown explainer %q", id)
	}
	return driver.LocalExplainer(f.ex)
}
func (f *fakes) Summary(context.Context, string) (sdk.Summary, error) {
	return driver.LocalSummary(f.sum)
}

func newFakes(members int) *fakes {
	return &fakes{
		post: &fakePosterior{id: "posterior.fake", members: members},
		ex:   &echoExplainer{id: "explainer.echo", maxDraws: members},
		sum:  &spySummary{},
	}
}

// testPlan has two test splits of n records each, every record of class 1
// with a one-sample mask at r mod inLen; record 3 of every split has an
// empty mask, so it must never be explained.
func testPlan(n, draws, workers, batch int) Plan {
	var tests []TestSplit
	for si, name := range []string{"test-0", "test-1"} {
		d := sdk.Dataset{N: n, Len: inLen, X: make([]float32, n*inLen), Y: make([]int, n)}
		masks := make([][]bool, n)
		for r := range n {
			for t := range inLen {
				d.X[r*inLen+t] = float32(1000*si + r + 1)
			}
			d.Y[r] = 1
			masks[r] = make([]bool, inLen)
			if r != 3 {
				masks[r][(r+si)%inLen] = true
			}
		}
		tests = append(tests, TestSplit{Name: name, Data: d, Masks: masks})
	}
	return Plan{
		Seed: seed, Workers: workers, Batch: batch, Arch: tinyArch(), Tests: tests,
		Classes: []int{1}, Groups: map[string][]int{"all": {1}}, Abs: true,
		Posteriors: []Step{{ID: "posterior.fake", Label: "Fake", Draws: draws}},
		Explainers: []Step{{ID: "explainer.echo", Label: "Echo", Target: "true"}},
		Summaries:  []Step{{ID: "summary.spy", Label: "Spy"}},
	}
}

var splitNames = []string{"test-0", "test-1"}

func runPlan(t *testing.T, p Plan, f *fakes, cache Cache) *Results {
	t.Helper()
	res, _, err := Run(context.Background(), p, f, cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDrawSUsesModelS: the S maps a summary gets for a record are the
// explainer's maps under draws 0..S-1, in order, each computed with its
// own draw's model, for the same record.
func TestDrawSUsesModelS(t *testing.T) {
	const n, S = 10, 4
	f := newFakes(S)
	runPlan(t, testPlan(n, S, 2, 4), f, nil)
	if got, want := len(f.sum.draws), 2*(n-1); got != want {
		t.Fatalf("summary got %d inputs, want %d (every record with a mask)", got, want)
	}
	seen := map[int]bool{}
	for i, d := range f.sum.draws {
		if len(d) != S {
			t.Fatalf("input %d: %d draws, want %d", i, len(d), S)
		}
		v := int(d[0][1]) - 1
		seen[v] = true
		for s, m := range d {
			if int(m[0])-1 != s {
				t.Errorf("input %d (record %d of split %d), draw %d: explained under the model of draw %d", i, v%1000, v/1000, s, int(m[0])-1)
			}
			if int(m[1])-1 != v {
				t.Errorf("input %d, draw %d: map of record %d mixed with record %d", i, s, int(m[1])-1, v)
			}
		}
	}
	for si := range splitNames {
		for r := range n {
			if seen[1000*si+r] == (r == 3) {
				t.Errorf("split %d record %d: summarised = %v, want %v (record 3 has an empty mask)", si, r, seen[1000*si+r], r != 3)
			}
		}
	}
	if f.post.fits != 1 {
		t.Errorf("posterior fitted %d times, want 1", f.post.fits)
	}
}

// TestSeedsKeyedByRecordAndDraw: a stochastic explainer's seed for record
// r of split k under draw s is rng.Key(seed, "explainer", k, r, s), every
// (split, record, draw) is explained once, and no two share a seed; the
// posterior's draw s gets rng.Key(seed, "posterior", id, -1, s).
func TestSeedsKeyedByRecordAndDraw(t *testing.T) {
	const n, S = 9, 3
	f := newFakes(S)
	runPlan(t, testPlan(n, S, 2, 4), f, nil)
	type key struct{ split, record, draw int }
	count := map[key]int{}
	seeds := map[uint64]key{}
	for _, c := range f.ex.calls {
		k := key{c.Split, c.Record, c.Draw}
		count[k]++
		if want := rng.Key(seed, "explainer", splitNames[c.Split], c.Record, c.Draw); c.Seed != want {
			t.Errorf("split %d record %d draw %d: seed %d, want %d", c.Split, c.Record, c.Draw, c.Seed, want)
		}
		if other, dup := seeds[c.Seed]; dup && other != k {
			t.Errorf("%+v and %+v share seed %d", k, other, c.Seed)
		}
		seeds[c.Seed] = k
		if c.Target != 1 {
			t.Errorf("%+v: target %d, want the true class 1", k, c.Target)
		}
	}
	for si := range splitNames {
		for r := range n {
			for s := range S {
				want := 1
				if r == 3 {
					want = 0
				}
				if got := count[key{si, r, s}]; got != want {
					t.Errorf("split %d record %d draw %d explained %d times, want %d", si, r, s, got, want)
				}
			}
		}
	}
	if len(f.post.seeds) != 1 || len(f.post.seeds[0]) != S {
		t.Fatalf("Sample seeds: %v, want one call with %d seeds", f.post.seeds, S)
	}
	for s, got := range f.post.seeds[0] {
		if want := rng.Key(seed, "posterior", "posterior.fake", -1, s); got != want {
			t.Errorf("posterior draw %d: seed %d, want %d", s, got, want)
		}
	}
}

// TestPredictiveMean: the prediction is the argmax of the mean of every
// draw's probabilities. No single draw of the fake posterior predicts
// class 1, every record is of class 1, and the mean predicts class 1; one
// draw alone predicts class 0.
func TestPredictiveMean(t *testing.T) {
	for _, tc := range []struct {
		draws int
		pred  int
	}{{1, 0}, {2, 1}, {3, 1}, {4, 1}} {
		t.Run(strconv.Itoa(tc.draws), func(t *testing.T) {
			f := newFakes(4)
			p := testPlan(6, tc.draws, 2, 4)
			p.Explainers[0].Target = "predicted"
			res := runPlan(t, p, f, nil)
			if len(res.Rows) != 1 {
				t.Fatalf("%d rows, want 1", len(res.Rows))
			}
			row := res.Rows[0]
			wantAcc := 0.0
			if tc.pred == 1 {
				wantAcc = 1
			}
			if row.Accuracy.Mean != wantAcc || row.Accuracy.N != 2 || len(row.AccuracyBySplit) != 2 {
				t.Errorf("accuracy %+v by split %v, want %v over 2 splits", row.Accuracy, row.AccuracyBySplit, wantAcc)
			}
			for _, rec := range row.Records {
				if rec.Pred != tc.pred || rec.Target != tc.pred || rec.Label != 1 {
					t.Errorf("record %d/%d: pred %d target %d label %d, want pred = target = %d, label 1", rec.Split, rec.Index, rec.Pred, rec.Target, rec.Label, tc.pred)
				}
			}
			for _, c := range f.ex.calls {
				if c.Target != tc.pred {
					t.Errorf("explainer asked for class %d, want the predicted %d", c.Target, tc.pred)
				}
			}
			if row.Draws != tc.draws {
				t.Errorf("row draws %d, want %d", row.Draws, tc.draws)
			}
		})
	}
}

// TestScoresOfSummaryMaps: each record is scored on the summary's map of
// that record against that record's mask.
func TestScoresOfSummaryMaps(t *testing.T) {
	const n, S = 7, 3
	f := newFakes(S)
	p := testPlan(n, S, 1, 3)
	res := runPlan(t, p, f, nil)
	row := res.Rows[0]
	if len(row.Records) != 2*n {
		t.Fatalf("%d records, want %d", len(row.Records), 2*n)
	}
	for _, rec := range row.Records {
		mask := p.Tests[rec.Split].Masks[rec.Index]
		if rec.Index == 3 {
			if rec.OK || rec.Why != eval.EmptyMask || rec.MaskLen != 0 {
				t.Errorf("record %d/3: %+v, want skipped for its empty mask", rec.Split, rec)
			}
			continue
		}
		maps := make([][]float64, S)
		for s := range S {
			maps[s] = echoMap(1000*rec.Split+rec.Index, s)
		}
		rma, iou, why := eval.Localise(stat.Mean(make([]float64, inLen), maps), mask)
		if rec.RMA != rma || rec.IoU != iou || rec.Why != why || rec.OK != (why == eval.Scored) || rec.MaskLen != 1 {
			t.Errorf("record %d/%d: %+v, want RMA %v IoU %v why %v", rec.Split, rec.Index, rec, rma, iou, why)
		}
	}
}

// TestSameBytesForAnyWorkers: 1, 2 and 3 workers, and two batch sizes,
// give the same results.
func TestSameBytesForAnyWorkers(t *testing.T) {
	var ref []byte
	for _, wb := range [][2]int{{1, 4}, {2, 4}, {3, 4}, {2, 5}} {
		f := newFakes(3)
		res := runPlan(t, testPlan(11, 3, wb[0], wb[1]), f, nil)
		b, err := json.Marshal(struct {
			R       *Results
			Records [][]Record
		}{res, [][]Record{res.Rows[0].Records}})
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = b
		} else if string(b) != string(ref) {
			t.Errorf("workers %d batch %d: results differ from workers 1 batch 4", wb[0], wb[1])
		}
	}
}

// analysisFunc is an Analysis for tests: Batch calls batch, and nothing
// travels in the units' payloads (Take gives nil), as for a run in one
// process.
type analysisFunc struct {
	batch   func(*Batch) error
	dists   []Distortion
	repeats int
}

func (a analysisFunc) Distortions() []Distortion                    { return a.dists }
func (a analysisFunc) Repeats() int                                 { return a.repeats }
func (a analysisFunc) Batch(b *Batch) error                         { return a.batch(b) }
func (analysisFunc) Take(Step, Step, int, int, int) ([]byte, error) { return nil, nil }
func (analysisFunc) Put(Step, Step, int, []byte) error              { return nil }

// sinkFunc is a Sink for tests; a nil function accepts everything.
type sinkFunc struct {
	predicted func(Step, Prediction) error
	output    func(*Output) error
}

func (s sinkFunc) Predicted(ps Step, pred Prediction) error {
	if s.predicted == nil {
		return nil
	}
	return s.predicted(ps, pred)
}

func (s sinkFunc) Output(o *Output) error {
	if s.output == nil {
		return nil
	}
	return s.output(o)
}
