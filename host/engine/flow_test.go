package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// The tests of this file check the engine's flow around the push-forward:
// the cache of fitted posteriors, which summaries are
// scored, progress, and how failures are reported.

// memCache is a Cache in memory; getErr and putErr make it fail.
type memCache struct {
	mu             sync.Mutex
	m              map[string]sdk.Artifact
	gets, puts     int
	getErr, putErr error
}

func (c *memCache) Get(key string) (sdk.Artifact, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gets++
	if c.getErr != nil {
		return sdk.Artifact{}, false, c.getErr
	}
	a, ok := c.m[key]
	return a, ok, nil
}

func (c *memCache) Put(key string, a sdk.Artifact) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.puts++
	if c.putErr != nil {
		return c.putErr
	}
	if c.m == nil {
		c.m = map[string]sdk.Artifact{}
	}
	c.m[key] = a
	return nil
}

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu     sync.Mutex
	stages map[string][]int // the totals each stage was given
	max    int              // the largest Advance
	notes  []string
}

func (r *recorder) Stage(name string, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stages == nil {
		r.stages = map[string][]int{}
	}
	r.stages[name] = append(r.stages[name], total)
}

func (r *recorder) Advance(done int, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.max = max(r.max, done)
}

func (r *recorder) Note(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, msg)
}

func (r *recorder) noted(sub string) bool {
	for _, n := range r.notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

func cacheKey(p Step, info sdk.Info) (string, error) {
	return fmt.Sprintf("%s-%s-%s-%d", info.ID, info.Version, p.Label, len(p.Config)) + strings.Repeat("0", 12), nil
}

// TestCache: a fitted posterior is stored, and taken from the cache on
// the next run with the same results; a failing cache costs a fit, never
// the run.
func TestCache(t *testing.T) {
	cache := &memCache{}
	p := testPlan(5, 2, 1, 4)
	p.CacheKey = cacheKey
	f := newFakes(2)
	obs := &recorder{}
	first, _, err := Run(context.Background(), p, f, cache, obs)
	if err != nil {
		t.Fatal(err)
	}
	if f.post.fits != 1 || cache.puts != 1 || len(cache.m) != 1 {
		t.Fatalf("first run: %d fits, %d puts, %d entries; want 1, 1, 1", f.post.fits, cache.puts, len(cache.m))
	}
	// The fit stage starts with an unknown total, then takes the
	// posterior's (2 members); the explain stage has one total.
	if !reflect.DeepEqual(obs.stages["fit Fake"], []int{0, 2, 2}) || !reflect.DeepEqual(obs.stages["explain Fake / Echo"], []int{10}) || obs.max != 10 {
		t.Errorf("progress: stages %v, last advance %d (want a fit of 2 members, and 10 of 10 records explained)", obs.stages, obs.max)
	}
	g := newFakes(2)
	obs = &recorder{}
	second, _, err := Run(context.Background(), p, g, cache, obs)
	if err != nil {
		t.Fatal(err)
	}
	if g.post.fits != 0 || !obs.noted("taken from the cache") {
		t.Errorf("second run: %d fits, notes %q; want the cached artifact", g.post.fits, obs.notes)
	}
	if !reflect.DeepEqual(first, second) {
		t.Errorf("results from the cache differ from the fitted ones")
	}

	for _, tc := range []struct {
		name  string
		cache *memCache
		key   func(Step, sdk.Info) (string, error)
		note  string
	}{
		{"get fails", &memCache{getErr: errors.New("disk on fire")}, cacheKey, "disk on fire (fitting again)"},
		{"put fails", &memCache{putErr: errors.New("disk full")}, cacheKey, "could not store Fake: disk full"},
		{"no key", &memCache{}, func(Step, sdk.Info) (string, error) { return "", errors.New("unhashable") }, "no cache key (unhashable)"},
	} {
		f := newFakes(2)
		obs := &recorder{}
		p.CacheKey = tc.key
		res, _, err := Run(context.Background(), p, f, tc.cache, obs)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if f.post.fits != 1 || !obs.noted(tc.note) {
			t.Errorf("%s: %d fits, notes %q; want a fit and a note %q", tc.name, f.post.fits, obs.notes, tc.note)
		}
		if !reflect.DeepEqual(res, first) {
			t.Errorf("%s: results differ", tc.name)
		}
	}
}

// setSummary gives, for a record of value v (its draws' sample 1 holds
// v+1, see echoMap), the set {v mod N}; bandSummary the min and max over
// the draws, sample by sample. Both tell which record they came from.
type setSummary struct{}

func (setSummary) Info() sdk.Info {
	return sdk.Info{ID: "summary.set", Version: "1", Output: sdk.OutputSet}
}
func (setSummary) Check(sdk.Config) error { return nil }
func (setSummary) Summarise(_ context.Context, draws [][][]float64, _ sdk.Config) ([]sdk.Result, error) {
	out := make([]sdk.Result, len(draws))
	for i, d := range draws {
		n := len(d[0])
		out[i].Set = make([]bool, n)
		out[i].Set[(int(d[0][1])-1)%n] = true
	}
	return out, nil
}

type bandSummary struct{}

func (bandSummary) Info() sdk.Info {
	return sdk.Info{ID: "summary.minmax", Version: "1", Output: sdk.OutputBand, MinDraws: 2}
}
func (bandSummary) Check(sdk.Config) error { return nil }
func (bandSummary) Summarise(_ context.Context, draws [][][]float64, _ sdk.Config) ([]sdk.Result, error) {
	out := make([]sdk.Result, len(draws))
	for i, d := range draws {
		lo, hi := slices.Clone(d[0]), slices.Clone(d[0])
		for _, m := range d[1:] {
			for n, v := range m {
				lo[n], hi[n] = min(lo[n], v), max(hi[n], v)
			}
		}
		out[i] = sdk.Result{Lower: lo, Upper: hi}
	}
	return out, nil
}

type needsMany struct{ spySummary }

func (*needsMany) Info() sdk.Info {
	return sdk.Info{ID: "summary.many", Version: "1", Output: sdk.OutputMap, MinDraws: 3}
}

// summaries resolves each summary ID to its fake.
type summaries struct {
	*fakes
	by map[string]sdk.Summary
}

func (s summaries) Summary(_ context.Context, id string) (sdk.Summary, error) {
	v, ok := s.by[id]
	if !ok {
		return nil, fmt.Errorf("unknown summary %q", id)
	}
	return driver.LocalSummary(v)
}

func withSummaries(f *fakes) summaries {
	return summaries{f, map[string]sdk.Summary{"summary.set": setSummary{}, "summary.minmax": bandSummary{}, "summary.many": &needsMany{}, "summary.spy": f.sum}}
}

// TestSetAndBandOutputs: set and band summaries get no row; their result
// for every explained record comes out in Results.Outputs, in the order
// of splits and records, each tied to its own record.
func TestSetAndBandOutputs(t *testing.T) {
	const n, S = 6, 2
	f := newFakes(S)
	p := testPlan(n, S, 2, 4)
	p.Summaries = []Step{{ID: "summary.set", Label: "Set"}, {ID: "summary.many", Label: "Many"}, {ID: "summary.minmax", Label: "Band"}, {ID: "summary.spy", Label: "Spy"}}
	out, _, err := Run(context.Background(), p, withSummaries(f), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Rows) != 1 || out.Rows[0].Summary != "summary.spy" || out.Rows[0].SummaryLabel != "Spy" {
		t.Fatalf("rows %+v, want only the spy's", out.Rows)
	}
	notes := strings.Join(out.Notes, "\n")
	if want := "Fake with Echo: 2 draw(s), summary.many needs at least 3: skipped"; !strings.Contains(notes, want) {
		t.Errorf("notes %q lack %q", notes, want)
	}
	if len(out.Outputs) != 2 {
		t.Fatalf("%d outputs, want the set's and the band's", len(out.Outputs))
	}
	for k, want := range []Output{
		{Posterior: "posterior.fake", Explainer: "explainer.echo", Summary: "summary.set", Label: "Fake", ExplainerLabel: "Echo", SummaryLabel: "Set", Kind: sdk.OutputSet, Draws: S, N: inLen, Count: 2 * (n - 1)},
		{Posterior: "posterior.fake", Explainer: "explainer.echo", Summary: "summary.minmax", Label: "Fake", ExplainerLabel: "Echo", SummaryLabel: "Band", Kind: sdk.OutputBand, Draws: S, N: inLen, Count: 2 * (n - 1)},
	} {
		o := out.Outputs[k]
		recs := o.Records
		o.Records = nil
		if !reflect.DeepEqual(o, want) {
			t.Errorf("output %d: %+v, want %+v", k, o, want)
		}
		var got [][2]int
		for _, rec := range recs {
			got = append(got, [2]int{rec.Split, rec.Index})
			v := 1000*rec.Split + rec.Index
			// The mean of two draws predicts class 1 (drawProbs).
			if rec.Label != 1 || rec.Target != 1 || rec.Pred != 1 || rec.MaskLen != 1 {
				t.Errorf("output %d record %v: label %d target %d pred %d mask_len %d", k, got[len(got)-1], rec.Label, rec.Target, rec.Pred, rec.MaskLen)
			}
			switch want.Kind {
			case sdk.OutputSet:
				if len(rec.Set) != inLen || !rec.Set[v%inLen] || MaskLen(rec.Set) != 1 || rec.Lower != nil {
					t.Errorf("set of record %v: %v, want {%d}", got[len(got)-1], rec.Set, v%inLen)
				}
			case sdk.OutputBand:
				// echoMap: sample 0 holds s+1 (1..S over the draws), sample 1 v+1.
				if rec.Lower[0] != 1 || rec.Upper[0] != S || rec.Lower[1] != float64(v+1) || rec.Upper[1] != float64(v+1) || rec.Set != nil {
					t.Errorf("band of record %v: [%v, %v]", got[len(got)-1], rec.Lower[:2], rec.Upper[:2])
				}
			}
		}
		var order [][2]int
		for si := range 2 {
			for r := range n {
				if r != 3 { // record 3 has an empty mask: never explained
					order = append(order, [2]int{si, r})
				}
			}
		}
		if !reflect.DeepEqual(got, order) {
			t.Errorf("output %d records %v, want %v", k, got, order)
		}
	}

	// A run whose only summaries are sets and bands still explains.
	f = newFakes(S)
	p.Summaries = []Step{{ID: "summary.set", Label: "Set"}}
	if out, _, err = Run(context.Background(), p, withSummaries(f), nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(out.Rows) != 0 || len(out.Outputs) != 1 || out.Outputs[0].Count != 2*(n-1) || len(f.ex.calls) != 2*(n-1)*S {
		t.Errorf("a set alone: %d rows, %d outputs, %d explained; want 0, 1 and every record under every draw", len(out.Rows), len(out.Outputs), len(f.ex.calls))
	}
	// With no record to explain (every mask empty), an output has none.
	f = newFakes(S)
	empty := testPlan(n, S, 2, 4)
	for _, ts := range empty.Tests {
		for _, m := range ts.Masks {
			clear(m)
		}
	}
	empty.Summaries = []Step{{ID: "summary.minmax", Label: "Band"}}
	if out, _, err = Run(context.Background(), empty, withSummaries(f), nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(out.Outputs) != 1 || out.Outputs[0].Count != 0 || out.Outputs[0].N != 0 || len(out.Outputs[0].Records) != 0 || len(f.ex.calls) != 0 {
		t.Errorf("no record to explain: outputs %+v, %d explained", out.Outputs, len(f.ex.calls))
	}
	// With nothing to take, nothing is explained.
	f = newFakes(S)
	p.Summaries = []Step{{ID: "summary.many", Label: "Many"}}
	if out, _, err = Run(context.Background(), p, withSummaries(f), nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(out.Rows) != 0 || len(out.Outputs) != 0 || len(f.ex.calls) != 0 {
		t.Errorf("no summary to take: %d rows, %d outputs, %d explained; want none", len(out.Rows), len(out.Outputs), len(f.ex.calls))
	}
}

// TestOutputCallback: with a Plan.Sink, each output's records go to
// it after their block, and Results keeps the rest; a failing callback
// fails the run, naming the output.
func TestOutputCallback(t *testing.T) {
	const n, S = 5, 2
	p := testPlan(n, S, 2, 2)
	p.Summaries = []Step{{ID: "summary.minmax", Label: "Band"}, {ID: "summary.set", Label: "Set"}}
	want, _, err := Run(context.Background(), p, withSummaries(newFakes(S)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []Output
	p.Sink = sinkFunc{output: func(o *Output) error {
		got = append(got, *o)
		o.File = fmt.Sprintf("file-%d", len(got))
		return nil
	}}
	out, _, err := Run(context.Background(), p, withSummaries(newFakes(S)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want.Outputs) {
		t.Errorf("the callback got %+v, want the outputs of a run without it", got)
	}
	for k, o := range out.Outputs {
		if o.Records != nil || o.File != fmt.Sprintf("file-%d", k+1) || o.Count != want.Outputs[k].Count {
			t.Errorf("output %d after the callback: %d records, file %q, count %d; want none, file-%d, %d", k, len(o.Records), o.File, o.Count, k+1, want.Outputs[k].Count)
		}
	}
	p.Sink = sinkFunc{output: func(*Output) error { return errors.New("disk full") }}
	if _, _, err := Run(context.Background(), p, withSummaries(newFakes(S)), nil, nil); err == nil || !strings.Contains(err.Error(), "Fake / Echo / Band: writing its records: disk full") {
		t.Errorf("failing callback: %v", err)
	}
}

// failing wraps the fakes with one failure.
type failing struct {
	*fakes
	post, ex, sum error // returned when resolving
	explain       error // returned by every Explain
}

func (f failing) Posterior(ctx context.Context, id string) (sdk.Posterior, error) {
	if f.post != nil {
		return nil, f.post
	}
	return f.fakes.Posterior(ctx, id)
}

func (f failing) Explainer(ctx context.Context, id string) (driver.Explainer, error) {
	if f.ex != nil {
		return nil, f.ex
	}
	if f.explain != nil {
		return failingExplainer{f.explain}, nil
	}
	return f.fakes.Explainer(ctx, id)
}

func (f failing) Summary(ctx context.Context, id string) (sdk.Summary, error) {
	if f.sum != nil {
		return nil, f.sum
	}
	return f.fakes.Summary(ctx, id)
}

type failingExplainer struct{ err error }

func (failingExplainer) Info() sdk.Info         { return sdk.Info{ID: "explainer.echo", Version: "1"} }
func (failingExplainer) Check(sdk.Config) error { return nil }
func (e failingExplainer) Load(context.Context, sdk.Draw) (driver.Model, error) {
	return failingModel(e), nil
}

type failingModel struct{ err error }

func (m failingModel) Explain(context.Context, sdk.ExplainRequest) ([][]float64, error) {
	return nil, m.err
}
func (failingModel) Close() error { return nil }

// signedExplainer returns a map with a negative value.
type signedExplainer struct{ echoExplainer }

func (e *signedExplainer) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	maps, err := e.echoExplainer.Explain(ctx, m, req)
	for _, mp := range maps {
		mp[2] = -1
	}
	return maps, err
}

// TestFailures: every failure stops the run with an error that says
// where it happened.
func TestFailures(t *testing.T) {
	p := testPlan(4, 2, 2, 4)
	for _, tc := range []struct {
		name string
		res  Plugins
		want []string
	}{
		{"posterior", failing{fakes: newFakes(2), post: errors.New("no such posterior")}, []string{"no such posterior"}},
		{"explainer", failing{fakes: newFakes(2), ex: errors.New("no such explainer")}, []string{"no such explainer"}},
		{"summary", failing{fakes: newFakes(2), sum: errors.New("no such summary")}, []string{"no such summary"}},
		// Records 0..2 went to the explainer: record 3 has an empty mask.
		{"explain", failing{fakes: newFakes(2), explain: errors.New("window too long")}, []string{"explainer.echo on split test-0 records 0..2, draw 0: window too long"}},
		{"too many draws", newFakes(1), []string{"posterior posterior.fake: sample:", "no member 1"}},
	} {
		_, _, err := Run(context.Background(), p, tc.res, nil, nil)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want it to say %q", tc.name, err, w)
			}
		}
	}

	// A signed map is scored only as |R|.
	f := newFakes(2)
	signed := &signedExplainer{echoExplainer{id: "explainer.echo", maxDraws: 2}}
	res := explainers{f, signed}
	p.Abs = false
	if _, _, err := Run(context.Background(), p, res, nil, nil); err == nil || !strings.Contains(err.Error(), "map value 2 is -1: a signed map needs evaluate.abs = true") {
		t.Errorf("signed map without abs: %v", err)
	}
	p.Abs = true
	if _, _, err := Run(context.Background(), p, res, nil, nil); err != nil {
		t.Errorf("signed map with abs: %v", err)
	}
	// Maps that are >= 0 (with zeros) need no abs.
	p.Abs = false
	if _, _, err := Run(context.Background(), p, newFakes(2), nil, nil); err != nil {
		t.Errorf("nonnegative map without abs: %v", err)
	}

	// A cancelled run stops.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Run(ctx, p, newFakes(2), nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v, want context.Canceled", err)
	}
}

// explainers serves another explainer in place of the echo.
type explainers struct {
	*fakes
	e sdk.Explainer
}

func (x explainers) Explainer(context.Context, string) (driver.Explainer, error) {
	return driver.LocalExplainer(x.e)
}

// TestParallelBatches: every batch of a range runs once, the first error wins and
// stops the others, and a panic becomes an error.
func TestParallelBatches(t *testing.T) {
	for _, w := range []int{1, 2, 5} {
		var mu sync.Mutex
		seen := map[[2]int]int{}
		err := parallelRange(context.Background(), 0, 23, 4, w, func(_ context.Context, b0, b1 int) error {
			mu.Lock()
			defer mu.Unlock()
			seen[[2]int{b0, b1}]++
			return nil
		})
		want := map[[2]int]int{{0, 4}: 1, {4, 8}: 1, {8, 12}: 1, {12, 16}: 1, {16, 20}: 1, {20, 23}: 1}
		if err != nil || !reflect.DeepEqual(seen, want) {
			t.Errorf("%d workers: batches %v, err %v; want %v", w, seen, err, want)
		}
	}
	err := parallelRange(context.Background(), 0, 100, 1, 2, func(_ context.Context, b0, _ int) error {
		if b0 == 7 {
			return errors.New("batch 7 failed")
		}
		return nil
	})
	if err == nil || err.Error() != "batch 7 failed" {
		t.Errorf("error: %v", err)
	}
	err = parallelRange(context.Background(), 0, 10, 5, 2, func(_ context.Context, b0, _ int) error {
		if b0 == 5 {
			var m map[string]int
			m["x"] = 1
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "internal error (please report)") {
		t.Errorf("panic: %v", err)
	}
}

// TestBatches: plugin calls carry at most Batch records (32 when unset),
// and an unset worker count still runs (GOMAXPROCS workers).
func TestBatches(t *testing.T) {
	// Batches of 1 put record 3 (no mask) alone: no summary call for it.
	for _, tc := range []struct{ batch, workers, n, max int }{{4, 1, 10, 4}, {1, 2, 5, 1}, {0, 0, 40, 32}, {-1, 2, 40, 32}} {
		f := newFakes(2)
		p := testPlan(tc.n, 2, tc.workers, tc.batch)
		runPlan(t, p, f, nil)
		total := 0
		for _, b := range f.sum.batches {
			total += b
			if b > tc.max {
				t.Errorf("batch %d workers %d: a call of %d records, want at most %d", tc.batch, tc.workers, b, tc.max)
			}
		}
		// Record 3 of each split has no mask and is not summarised.
		if total != 2*(tc.n-1) {
			t.Errorf("batch %d: %d records summarised, want %d", tc.batch, total, 2*(tc.n-1))
		}
		if tc.max == 32 && len(f.sum.batches) != 4 {
			t.Errorf("batch %d: %d calls for 2 splits of %d records, want 4 of at most 32", tc.batch, len(f.sum.batches), tc.n)
		}
	}
}

// tiedPosterior has one member whose classes 0 and 1 are equally likely.
type tiedPosterior struct{ fakePosterior }

func (p *tiedPosterior) Fit(_ context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	return sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{"0": drawParams(t0{}, []float64{0.4, 0.4, 0.2}).Data}}, nil
}

type t0 struct{ testingT }

// flatExplainer gives every input a map of ones, under any model.
type flatExplainer struct{}

func (flatExplainer) Info() sdk.Info         { return sdk.Info{ID: "explainer.echo", Version: "1"} }
func (flatExplainer) Check(sdk.Config) error { return nil }
func (flatExplainer) Explain(_ context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	maps := make([][]float64, len(req.Targets))
	for i := range maps {
		maps[i] = make([]float64, m.InputLen())
		for t := range maps[i] {
			maps[i][t] = 1
		}
	}
	return maps, nil
}

// TestPredictionTies: when the predictive mean ties, the lower class is
// predicted, as numpy's and torch's argmax do.
func TestPredictionTies(t *testing.T) {
	f := newFakes(1)
	tied := &tiedPosterior{fakePosterior{id: "posterior.fake", members: 1}}
	res, _, err := Run(context.Background(), testPlan(4, 1, 1, 4), both{posteriors{f, tied}, flatExplainer{}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range res.Rows[0].Records {
		if rec.Pred != 0 {
			t.Fatalf("record %d/%d: predicted %d for probabilities (0.4, 0.4, 0.2), want 0", rec.Split, rec.Index, rec.Pred)
		}
	}
}

// both serves another explainer too.
type both struct {
	posteriors
	e sdk.Explainer
}

func (x both) Explainer(context.Context, string) (driver.Explainer, error) {
	return driver.LocalExplainer(x.e)
}

// posteriors serves another posterior in place of the fake.
type posteriors struct {
	*fakes
	p sdk.Posterior
}

func (x posteriors) Posterior(context.Context, string) (sdk.Posterior, error) {
	return driver.LocalPosterior(x.p)
}

// closeFails is an explainer whose loaded draws fail to close.
type closeFails struct{ driver.Explainer }

func (c closeFails) Load(ctx context.Context, p sdk.Draw) (driver.Model, error) {
	m, err := c.Explainer.Load(ctx, p)
	return badClose{m}, err
}

type badClose struct{ driver.Model }

func (badClose) Close() error { return errors.New("release refused") }

type closing struct{ *fakes }

func (c closing) Explainer(ctx context.Context, id string) (driver.Explainer, error) {
	e, err := c.fakes.Explainer(ctx, id)
	return closeFails{e}, err
}

// summaryFails fails on the batch that holds record 5.
type summaryFails struct{ spySummary }

func (s *summaryFails) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	for _, d := range draws {
		if int(d[0][1])-1 == 5 {
			return nil, errors.New("no luck")
		}
	}
	return s.spySummary.Summarise(ctx, draws, cfg)
}

// TestMoreFailures: a draw that cannot be released fails the run after
// the block; a summary's error names the records of its batch.
func TestMoreFailures(t *testing.T) {
	p := testPlan(8, 2, 1, 4)
	if _, _, err := Run(context.Background(), p, closing{newFakes(2)}, nil, nil); err == nil || !strings.Contains(err.Error(), "release refused") {
		t.Errorf("failing release: %v", err)
	}
	f := newFakes(2)
	res := summaries{f, map[string]sdk.Summary{"summary.spy": &summaryFails{}}}
	if _, _, err := Run(context.Background(), p, res, nil, nil); err == nil || !strings.Contains(err.Error(), "summary.spy on split test-0 records 4..7:") || !strings.Contains(err.Error(), "no luck") {
		t.Errorf("failing summary: %v", err)
	}
}

// TestUnreportedClasses: records of a class the plan does not report (the
// normal class) are kept in the records and counted in the notes, never
// scored.
func TestUnreportedClasses(t *testing.T) {
	p := testPlan(6, 2, 2, 4)
	p.Classes, p.Groups = []int{0}, map[string][]int{"all": {0}}
	res := runPlan(t, p, newFakes(2), nil)
	if len(res.Rows) != 1 || len(res.Rows[0].Records) != 12 {
		t.Fatalf("rows %d, records %d; want 1 row of 12 records", len(res.Rows), len(res.Rows[0].Records))
	}
	if c := res.Rows[0].Agg.Counts; c.Scored != 0 || c.EmptyMask != 0 {
		t.Errorf("counts %+v, want nothing scored or counted: class 1 is not reported", c)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), ": 12 records of unscored classes (normal) left out") {
		t.Errorf("notes %q", res.Notes)
	}
}
