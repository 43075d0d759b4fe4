package sdktest

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// recorder is a testing.TB that records failures instead of failing the
// test; Fatal ends the harness goroutine as testing does.
type recorder struct {
	testing.TB
	mu    sync.Mutex
	fails []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fails = append(r.fails, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *recorder) Logf(format string, args ...any)   {}

// run runs f against a recorder and returns the failures it reported.
func run(t *testing.T, f func(tb testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.fails
}

// expect checks that exactly the failures matching want were reported:
// none if want is empty, else at least one containing each of want.
func expect(t *testing.T, name string, fails []string, want ...string) {
	t.Helper()
	if len(want) == 0 {
		for _, f := range fails {
			t.Errorf("%s: unexpected failure: %s", name, f)
		}
		return
	}
	for _, w := range want {
		if !slices.ContainsFunc(fails, func(f string) bool { return strings.Contains(f, w) }) {
			t.Errorf("%s: no failure mentions %q; failures: %q", name, w, fails)
		}
	}
}

// tinyArch is a 1-D CNN small enough for fast tests: 8 samples, conv to
// 2 x 6, global max, 3 classes.
func tinyArch() nn.Arch {
	return nn.Arch{Name: "tiny", InChannels: 1, InLen: 8, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 2, Kernel: 3},
		{Kind: nn.KindReLU},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc", Out: 3},
	}}
}

func tinyParams(seed uint64) nn.Params {
	lay, err := nn.NewLayout(tinyArch())
	if err != nil {
		panic(err)
	}
	r := rng.New(seed)
	d := make([]float32, lay.Size)
	for i := range d {
		d[i] = float32(r.NormFloat64() * 0.5)
	}
	return nn.Params{Arch: tinyArch(), Data: d}
}

func explainerCase() ExplainerCase {
	x := make([]float32, 3*8)
	r := rng.New(7)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return ExplainerCase{Model: tinyParams(1), X: x, Targets: []int{0, 2, 1}, Config: sdk.Config{"scale": int64(2)}}
}

// gradX is a correct explainer: scale * x * d p / d x, plus seeded noise
// of size Config "noise" when stochastic. Its fields break it on purpose.
type gradX struct {
	id             string
	stochastic     bool
	acceptsAll     bool
	counter        *atomic.Int64 // adds a call counter: not deterministic
	batchNorm      bool          // divides by the batch's largest value
	usesSeeds      bool          // adds seed noise while declared deterministic
	mutates        bool          // overwrites its input
	nan            bool          // returns a NaN
	strictInt      bool          // reads "scale" as int64 only: works in process only
	ignoreSeedsToo bool          // stochastic but ignores the seeds
	wantsModel     bool          // asks for the model service
	localOnly      bool          // doubles its maps unless the model is an *nn.GraphModel
}

func (g *gradX) Info() sdk.Info {
	id := g.id
	if id == "" {
		id = "explainer.gradx"
	}
	return sdk.Info{ID: id, Version: "0.0.1", Needs: sdk.NeedsInputGrad, Stochastic: g.stochastic, WantsModel: g.wantsModel}
}

func (g *gradX) Check(cfg sdk.Config) error {
	if g.acceptsAll {
		return nil
	}
	if err := cfg.Only("scale"); err != nil {
		return err
	}
	_, err := cfg.Float("scale", 1)
	return err
}

func (g *gradX) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	scale, err := req.Config.Float("scale", 1)
	if err != nil {
		return nil, err
	}
	if g.strictInt {
		if _, ok := req.Config["scale"].(int64); !ok {
			scale = 1
		}
	}
	if _, local := m.(*nn.GraphModel); g.localOnly && !local {
		scale *= 2
	}
	n := m.InputLen()
	grad := make([]float32, len(req.X))
	if err := m.InputGrad(ctx, grad, nil, req.X, req.Targets); err != nil {
		return nil, err
	}
	maps := make([][]float64, len(req.Targets))
	top := 0.0
	for b := range maps {
		maps[b] = make([]float64, n)
		var r interface{ Float64() float64 }
		if (g.stochastic && !g.ignoreSeedsToo) || g.usesSeeds {
			r = rng.New(req.Seeds[b])
		}
		for t := range maps[b] {
			v := scale * float64(req.X[b*n+t]) * float64(grad[b*n+t])
			if r != nil {
				v += 0.01 * r.Float64()
			}
			if g.counter != nil {
				v += float64(g.counter.Add(1))
			}
			maps[b][t] = v
			top = math.Max(top, math.Abs(v))
		}
	}
	if g.batchNorm {
		for _, mp := range maps {
			for t := range mp {
				mp[t] /= top
			}
		}
	}
	if g.mutates {
		req.X[0] = 42
	}
	if g.nan {
		maps[1][3] = math.NaN()
	}
	return maps, nil
}

func TestExplainerConforming(t *testing.T) {
	for _, g := range []*gradX{{}, {stochastic: true}, {wantsModel: true}} {
		expect(t, fmt.Sprintf("stochastic %v wants the model %v", g.stochastic, g.wantsModel), run(t, func(tb testing.TB) { Explainer(tb, g, explainerCase()) }))
	}
	// The real testing.T passes too.
	Explainer(t, &gradX{}, explainerCase())
}

func TestExplainerBroken(t *testing.T) {
	for _, c := range []struct {
		name string
		g    *gradX
		want []string
	}{
		{"namespace", &gradX{id: "summary.gradx"}, []string{`is a plugin of kind explainer but its ID "summary.gradx" is namespaced summary`}},
		{"bad ID", &gradX{id: "gradx"}, []string{`not of the form kind.name`}},
		{"accepts unknown keys", &gradX{acceptsAll: true}, []string{`in process: Check accepts the unknown key "sdktest_unknown_key"`, "remote: Check accepts"}},
		{"not deterministic", &gradX{counter: new(atomic.Int64)}, []string{"not deterministic: the same request gave different maps (input 0: index 0:", "remote: maps of inputs", "remote with the model service: maps of inputs"}},
		{"batch dependent", &gradX{batchNorm: true}, []string{"maps depend on the batch: inputs 0..0 explained alone"}},
		{"seeds while deterministic", &gradX{usesSeeds: true}, []string{"declares itself deterministic (Stochastic false) but its maps changed with the seeds"}},
		{"stochastic ignoring seeds", &gradX{stochastic: true, ignoreSeedsToo: true}, []string{"declares itself stochastic but its maps did not change"}},
		{"mutates input", &gradX{mutates: true}, []string{"Explain modified its input X (index 0:"}},
		{"NaN", &gradX{nan: true}, []string{"sdktest: explainer.gradx: in process: explainer.gradx: Explain: input 1: map value 3 is NaN"}},
		{"remote differs", &gradX{strictInt: true}, []string{"remote: maps of inputs 0..0 differ from in-process maps (input 0: index", "remote with the model service: maps of inputs 0..0 differ"}},
		{"model service differs", &gradX{localOnly: true}, []string{"remote with the model service: maps of inputs 0..0 differ from in-process maps (input 0: index"}},
	} {
		expect(t, c.name, run(t, func(tb testing.TB) { Explainer(tb, c.g, explainerCase()) }), c.want...)
	}
}

func TestExplainerBadCase(t *testing.T) {
	c := explainerCase()
	c.X = c.X[1:]
	expect(t, "bad case", run(t, func(tb testing.TB) { Explainer(tb, &gradX{}, c) }), "bad case: 23 values in X for 3 targets of input length 8")
}

// meanSummary is the pointwise mean; first returns the first draw.
type meanSummary struct {
	first    bool
	minDraws int
}

func (s meanSummary) Info() sdk.Info {
	return sdk.Info{ID: "summary.mean", Version: "1", Output: sdk.OutputMap, MinDraws: s.minDraws}
}
func (meanSummary) Check(cfg sdk.Config) error { return cfg.Only() }
func (s meanSummary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	out := make([]sdk.Result, len(draws))
	for i, d := range draws {
		m := make([]float64, len(d[0]))
		for _, r := range d {
			for j, v := range r {
				m[j] += v / float64(len(d))
			}
		}
		if s.first {
			m = slices.Clone(d[0])
		}
		out[i].Map = m
	}
	return out, nil
}

func summaryCase() SummaryCase {
	r := rng.New(3)
	draws := make([][][]float64, 3)
	for i := range draws {
		draws[i] = make([][]float64, 5)
		for s := range draws[i] {
			draws[i][s] = make([]float64, 7)
			for j := range draws[i][s] {
				draws[i][s][j] = r.NormFloat64() * 1e3
			}
		}
	}
	return SummaryCase{Draws: draws}
}

func TestSummary(t *testing.T) {
	expect(t, "mean", run(t, func(tb testing.TB) { Summary(tb, meanSummary{}, summaryCase()) }))
	expect(t, "first draw", run(t, func(tb testing.TB) { Summary(tb, meanSummary{first: true}, summaryCase()) }),
		"input 0: the result depends on the order of the draws (map index 0:")
	c := summaryCase()
	c.OrderDependent = true
	expect(t, "first draw, declared", run(t, func(tb testing.TB) { Summary(tb, meanSummary{first: true}, c) }))
}

// noisePosterior's artifact is a base parameter vector drawn from the
// seed (and, broken, the worker count); draw s is base + 0.1 N(0, 1) from
// Seeds[s] (broken: from a shared counter).
type noisePosterior struct {
	workerDependent bool
	replicates      bool          // sets Info.Replicates and derives its seed with sdk.ReplicateSeed
	ignoresReplicas bool          // sets Info.Replicates but fits replicate 0 in every replicate
	replicaCounter  *atomic.Int64 // sets Info.Replicates; replicate r >= 1 draws a new seed on every fit
	counter         *atomic.Int64
	reports         []sdk.Progress // Fit's progress reports; nil: epochs 1..3 of 3
}

func (p noisePosterior) Info() sdk.Info {
	return sdk.Info{ID: "posterior.noise", Version: "2", Replicates: p.replicates || p.ignoresReplicas || p.replicaCounter != nil}
}
func (noisePosterior) Check(cfg sdk.Config, _ int) error { return cfg.Only("sigma") }
func (p noisePosterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	seed := req.Seed
	if p.workerDependent {
		seed += uint64(req.Workers)
	}
	if p.replicates {
		seed = sdk.ReplicateSeed(seed, req)
	}
	if p.replicaCounter != nil && req.Replicate > 0 {
		seed = uint64(p.replicaCounter.Add(1)) << 32
	}
	reports := p.reports
	if reports == nil {
		reports = []sdk.Progress{{Done: 1, Total: 3}, {Done: 2, Total: 3}, {Done: 3, Total: 3}}
	}
	for _, r := range reports {
		req.Progress(r)
	}
	base := tinyParams(seed)
	return sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{"base": base.Data}, Meta: map[string]string{"rows": fmt.Sprint(req.Train.N)}}, nil
}
func (p noisePosterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	sigma, err := req.Config.Float("sigma", 0.1)
	if err != nil {
		return nil, err
	}
	out := make([]nn.Params, len(req.Seeds))
	for s, seed := range req.Seeds {
		if p.counter != nil {
			seed = uint64(p.counter.Add(1))
		}
		r := rng.New(seed)
		d := slices.Clone(a.Tensors["base"])
		for i := range d {
			d[i] += float32(sigma * r.NormFloat64())
		}
		out[s] = nn.Params{Arch: a.Arch, Data: d}
	}
	return out, nil
}

func posteriorCase() PosteriorCase {
	return PosteriorCase{
		Arch:   tinyArch(),
		Train:  sdk.Dataset{X: make([]float32, 4*8), Y: []int{0, 1, 2, 0}, N: 4, Len: 8},
		Config: sdk.Config{"sigma": 0.2}, Seed: 11, Draws: 3,
	}
}

func TestPosterior(t *testing.T) {
	expect(t, "noise", run(t, func(tb testing.TB) { Posterior(tb, noisePosterior{}, posteriorCase()) }))
	expect(t, "worker dependent", run(t, func(tb testing.TB) { Posterior(tb, noisePosterior{workerDependent: true}, posteriorCase()) }),
		`Fit with 2 workers gives another artifact than with 1 (tensor "base"`)
	expect(t, "counter", run(t, func(tb testing.TB) { Posterior(tb, noisePosterior{counter: new(atomic.Int64)}, posteriorCase()) }),
		"Sample is not deterministic", "draw s must depend only on Seeds[s]", "remote draws differ")
}

// TestReplicatesConformance: a posterior that sets Info.Replicates must
// fit another artifact in replicate 1, the same one every time and over
// the wire; one that does not set it is not asked for replicate 1.
func TestReplicatesConformance(t *testing.T) {
	expect(t, "replicates", run(t, func(tb testing.TB) { Posterior(tb, noisePosterior{replicates: true}, posteriorCase()) }))
	expect(t, "ignores the replicate", run(t, func(tb testing.TB) { Posterior(tb, noisePosterior{ignoresReplicas: true}, posteriorCase()) }),
		"replicate 1 gave the same artifact as replicate 0")
	expect(t, "replicate not deterministic", run(t, func(tb testing.TB) {
		Posterior(tb, noisePosterior{replicaCounter: new(atomic.Int64)}, posteriorCase())
	}), "replicate 1 is not deterministic", "remote: replicate 1 differs from the in-process replicate 1")
}

// memberPosterior is a finite ensemble of three members drawn from the
// seed; broken, it returns member 0 for every draw, or member order
// depends on the number of draws, or the seeds pick the members.
type memberPosterior struct {
	repeat, reversed, seeded bool
}

func (memberPosterior) Info() sdk.Info {
	return sdk.Info{ID: "posterior.members", Version: "1", Finite: true}
}
func (memberPosterior) Check(cfg sdk.Config, draws int) error {
	if draws > 3 {
		return fmt.Errorf("%d draws of 3 members", draws)
	}
	return cfg.Only("sigma")
}
func (memberPosterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	a := sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{}}
	for k := range 3 {
		a.Tensors[fmt.Sprint(k)] = tinyParams(req.Seed + uint64(k)).Data
	}
	return a, nil
}
func (p memberPosterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	out := make([]nn.Params, len(req.Seeds))
	for s := range out {
		k := s
		switch {
		case p.repeat:
			k = 0
		case p.reversed:
			k = len(out) - 1 - s
		case p.seeded:
			k = int(req.Seeds[s] % 3)
		}
		out[s] = nn.Params{Arch: a.Arch, Data: slices.Clone(a.Tensors[fmt.Sprint(k)])}
	}
	return out, nil
}

func TestFinitePosterior(t *testing.T) {
	expect(t, "members", run(t, func(tb testing.TB) { Posterior(tb, memberPosterior{}, posteriorCase()) }))
	expect(t, "member 0 repeated", run(t, func(tb testing.TB) { Posterior(tb, memberPosterior{repeat: true}, posteriorCase()) }),
		"draws 0 and 1 are the same network")
	expect(t, "order depends on S", run(t, func(tb testing.TB) { Posterior(tb, memberPosterior{reversed: true}, posteriorCase()) }),
		"2 draws are not the first 2 of 3 draws")
	expect(t, "seeds pick members", run(t, func(tb testing.TB) { Posterior(tb, memberPosterior{seeded: true}, posteriorCase()) }),
		"other seeds gave other draws")
}

// TestCheckEdges: the checks hold at the ends of their ranges: two
// inputs are a batch that can be split, two draws are enough to check a
// posterior's draws, S = MinDraws is enough for a summary, and progress
// may reach its total or have none.
func TestCheckEdges(t *testing.T) {
	two := explainerCase()
	two.X, two.Targets = two.X[:16], two.Targets[:2]
	expect(t, "two inputs, batch dependent", run(t, func(tb testing.TB) { Explainer(tb, &gradX{batchNorm: true}, two) }),
		"maps depend on the batch: inputs 1..1 explained alone")
	expect(t, "two inputs", run(t, func(tb testing.TB) { Explainer(tb, &gradX{}, two) }))

	c := posteriorCase()
	c.Draws = 0 // the default, 3
	expect(t, "default draws", run(t, func(tb testing.TB) { Posterior(tb, memberPosterior{}, c) }))
	c.Draws = 2
	expect(t, "two draws, counter", run(t, func(tb testing.TB) { Posterior(tb, noisePosterior{counter: new(atomic.Int64)}, c) }),
		"draw s must depend only on Seeds[s]")
	expect(t, "two draws, reversed", run(t, func(tb testing.TB) { Posterior(tb, memberPosterior{reversed: true}, c) }),
		"1 draws are not the first 1 of 2 draws")

	for _, pc := range []struct {
		name    string
		reports []sdk.Progress
		want    string
	}{
		{"done = total", []sdk.Progress{{Done: 0, Total: 2}, {Done: 2, Total: 2}}, ""},
		{"no total", []sdk.Progress{{Done: 5, Total: 0}}, ""},
		{"negative done", []sdk.Progress{{Done: -1, Total: 2}}, "progress report 0: done -1 of 2"},
		{"negative total", []sdk.Progress{{Done: 0, Total: 2}, {Done: 0, Total: -1}}, "progress report 1: done 0 of -1"},
		{"done > total", []sdk.Progress{{Done: 3, Total: 2}}, "progress report 0: done 3 of 2"},
	} {
		var want []string
		if pc.want != "" {
			want = []string{pc.want}
		}
		expect(t, pc.name, run(t, func(tb testing.TB) { Posterior(tb, noisePosterior{reports: pc.reports}, posteriorCase()) }), want...)
	}

	expect(t, "S = MinDraws", run(t, func(tb testing.TB) { Summary(tb, meanSummary{minDraws: 5}, summaryCase()) }))
	expect(t, "S < MinDraws", run(t, func(tb testing.TB) { Summary(tb, meanSummary{minDraws: 6}, summaryCase()) }),
		"bad case: input 0 has 5 draws; the summary declares MinDraws 6")
}

// postHocPosterior is the noise posterior around its base's "member.0"
// (Info.Base); broken, it scales the base's tensor in place.
type postHocPosterior struct {
	noisePosterior
	mutates bool
}

func (postHocPosterior) Info() sdk.Info {
	return sdk.Info{ID: "posterior.posthoc", Version: "1", Base: "posterior.deterministic", BaseKeys: []string{"seed"}}
}
func (p postHocPosterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	if req.Base == nil {
		return sdk.Artifact{}, fmt.Errorf("no base")
	}
	m := req.Base.Tensors["member.0"]
	if p.mutates {
		m[0] *= 2
	}
	return sdk.Artifact{Arch: req.Base.Arch, Tensors: map[string][]float32{"base": slices.Clone(m)}}, nil
}

// TestPostHocPosterior: a post-hoc posterior's case needs its base's
// artifact, which Fit gets (in process and over the wire) and must not
// modify.
func TestPostHocPosterior(t *testing.T) {
	c := posteriorCase()
	expect(t, "no base", run(t, func(tb testing.TB) { Posterior(tb, postHocPosterior{}, c) }),
		`bad case: a post-hoc posterior (Info.Base "posterior.deterministic") needs PosteriorCase.Base`)
	c.Base = &sdk.Artifact{Arch: tinyArch(), Tensors: map[string][]float32{"member.0": tinyParams(4).Data}, Meta: map[string]string{"seed.0": "4"}}
	expect(t, "post hoc", run(t, func(tb testing.TB) { Posterior(tb, postHocPosterior{}, c) }))
	expect(t, "mutates its base", run(t, func(tb testing.TB) { Posterior(tb, postHocPosterior{mutates: true}, c) }),
		`Fit modified its base artifact (tensor "member.0": index 0:`)
	if c.Base.Tensors["member.0"][0] != tinyParams(4).Data[0] {
		t.Error("the case's base artifact was modified: Fit must get a copy")
	}
}
