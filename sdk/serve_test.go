package sdk

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk/nn"
)

// serveTest serves p inside the test process over go-plugin's gRPC (test
// mode) with the given model builder, and returns the dispensed client.
func serveTest(t *testing.T, p any, build modelBuilder) any {
	t.Helper()
	cfg, err := serveConfig(p, build)
	if err != nil {
		t.Fatal(err)
	}
	quiet := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: &testWriter{t}})
	cfg.Logger = quiet
	ctx, cancel := context.WithCancel(context.Background())
	rc := make(chan *goplugin.ReattachConfig, 1)
	closed := make(chan struct{})
	cfg.Test = &goplugin.ServeTestConfig{Context: ctx, ReattachConfigCh: rc, CloseCh: closed}
	go goplugin.Serve(cfg)
	var r *goplugin.ReattachConfig
	select {
	case r = <-rc:
	case <-time.After(10 * time.Second):
		t.Fatal("plugin did not start")
	}
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake(),
		Plugins:          ClientPlugins(),
		Reattach:         r,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions:  GRPCDialOptions(),
		Logger:           quiet,
	})
	rpc, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rpc.Close() // stops the server; cancel only if it does not
		c.Kill()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			cancel()
			<-closed
		}
		cancel()
	})
	kind, _ := KindOf(p)
	v, err := rpc.Dispense(string(kind))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// fakeModel is an nn.Model of InLen inputs and 3 classes whose only use
// here is to carry its parameters.
type fakeModel struct{ p nn.Params }

func (m *fakeModel) Arch() nn.Arch     { return m.p.Arch }
func (m *fakeModel) InputLen() int     { return m.p.Arch.InChannels * m.p.Arch.InLen }
func (m *fakeModel) Classes() int      { return 3 }
func (m *fakeModel) Params() nn.Params { return m.p }
func (m *fakeModel) Probs(dst, x []float32) {
	for i := range dst {
		dst[i] = 1.0 / 3
	}
}
func (m *fakeModel) InputGrad(dst, probs, x []float32, target []int) { copy(dst, x) }
func (m *fakeModel) LayerShape(string) (nn.Shape, error)             { return nn.Shape{}, errors.New("no layers") }
func (m *fakeModel) LayerGrad(act, grad, x []float32, target []int, layer string) error {
	return errors.New("no layers")
}

// noParams is a model that cannot be sent.
type noParams struct{ nn.Model }

func fakeArch(n int) nn.Arch {
	return nn.Arch{Name: "fake", InChannels: 1, InLen: n, Layers: []nn.Layer{{Kind: nn.KindFlatten}, {Kind: nn.KindDense, Name: "fc", Out: 3}}}
}

func fakeParams(n int, w float32) nn.Params {
	lay, err := nn.NewLayout(fakeArch(n))
	if err != nil {
		panic(err)
	}
	d := make([]float32, lay.Size)
	for i := range d {
		d[i] = w
	}
	return nn.Params{Arch: fakeArch(n), Data: d}
}

func countingBuilder(n *atomic.Int64) modelBuilder {
	return func(p nn.Params) (nn.Model, error) {
		n.Add(1)
		return &fakeModel{p: p}, nil
	}
}

// fakeExplainer returns map[b][t] = x[b][t] * w * (target+1) + seed, where
// w is the model's first parameter, or misbehaves as Config "mode" says.
type fakeExplainer struct {
	started   chan struct{} // mode "block": signalled when Explain starts
	cancelled chan error    // mode "block": receives ctx.Err() when it ends
}

func (e *fakeExplainer) Info() ExplainerInfo {
	return ExplainerInfo{Info: Info{ID: "explainer.fake", Version: "1.2.3", Summary: "a fake"}, Needs: NeedsInputGrad, Stochastic: true}
}

func (e *fakeExplainer) Check(cfg Config) error {
	if err := cfg.Only("mode", "size"); err != nil {
		return err
	}
	_, err := cfg.String("mode", "")
	return err
}

func (e *fakeExplainer) Explain(ctx context.Context, m nn.Model, req ExplainRequest) ([][]float64, error) {
	mode, _ := req.Config.String("mode", "ok")
	n := m.InputLen()
	w := float64(m.(paramser).Params().Data[0])
	maps := make([][]float64, len(req.Targets))
	for b := range maps {
		maps[b] = make([]float64, n)
		for t := range maps[b] {
			maps[b][t] = float64(req.X[b*n+t])*w*float64(req.Targets[b]+1) + float64(req.Seeds[b]%7)
		}
	}
	switch mode {
	case "few":
		maps = maps[:len(maps)-1]
	case "short":
		maps[1] = maps[1][:n-1]
	case "nan":
		maps[1][2] = math.NaN()
	case "inf":
		maps[0][0] = math.Inf(-1)
	case "error":
		return nil, errors.New("window 700 exceeds the input length")
	case "panic":
		var z []int
		_ = z[3]
	case "block":
		e.started <- struct{}{}
		<-ctx.Done()
		e.cancelled <- ctx.Err()
		return nil, ctx.Err()
	}
	return maps, nil
}

func explainCase(n, b int) (nn.Model, ExplainRequest) {
	m := &fakeModel{p: fakeParams(n, 0.5)}
	req := ExplainRequest{X: make([]float32, n*b), Targets: make([]int, b), Seeds: make([]uint64, b)}
	for i := range req.X {
		req.X[i] = float32(i%13) - 6
	}
	for i := range req.Targets {
		req.Targets[i] = i % 3
		req.Seeds[i] = uint64(100 + i)
	}
	return m, req
}

func TestExplainerRemoteMatchesInProcess(t *testing.T) {
	var builds atomic.Int64
	impl := &fakeExplainer{}
	remote := serveTest(t, impl, countingBuilder(&builds)).(Explainer)
	if got, want := remote.Info(), impl.Info(); got != want {
		t.Fatalf("remote Info %+v, want %+v", got, want)
	}
	m, req := explainCase(16, 4)
	req.Config = Config{"mode": "ok", "size": int64(3)}
	local, err := CheckedExplainer(impl).Explain(context.Background(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		got, err := remote.Explain(context.Background(), m, req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, local) {
			t.Fatalf("remote maps %v\nin-process maps %v", got, local)
		}
	}
	if builds.Load() != 1 {
		t.Errorf("built the model %d times for 3 batches of one draw, want 1", builds.Load())
	}
	m2 := &fakeModel{p: fakeParams(16, 2)}
	got, err := remote.Explain(context.Background(), m2, req)
	if err != nil {
		t.Fatal(err)
	}
	if got[1][1] != 4*local[1][1]-3*float64(req.Seeds[1]%7) {
		t.Errorf("second draw: map value %v, want %v (the plugin used a stale model?)", got[1][1], 4*local[1][1]-3*float64(req.Seeds[1]%7))
	}
	if builds.Load() != 2 {
		t.Errorf("built %d models for 2 draws, want 2", builds.Load())
	}
	if _, err := remote.Explain(context.Background(), m, req); err != nil || builds.Load() != 2 {
		t.Errorf("going back to the first draw rebuilt it (builds %d, err %v); the cache should keep it", builds.Load(), err)
	}
}

func TestExplainerAnswerValidation(t *testing.T) {
	impl := &fakeExplainer{}
	remote := serveTest(t, impl, countingBuilder(new(atomic.Int64))).(Explainer)
	m, req := explainCase(8, 3)
	cases := []struct{ mode, want string }{
		{"few", "returned 2 maps for a batch of 3 inputs"},
		{"short", "input 1: map has 7 values, want 8"},
		{"nan", "input 1: map value 2 is NaN"},
		{"inf", "input 0: map value 0 is -Inf"},
		{"error", "window 700 exceeds the input length"},
		{"panic", "panic"},
	}
	for _, c := range cases {
		for name, e := range map[string]Explainer{"remote": remote, "in-process": CheckedExplainer(impl)} {
			req.Config = Config{"mode": c.mode}
			_, err := e.Explain(context.Background(), m, req)
			if err == nil {
				t.Errorf("%s, mode %s: no error", name, c.mode)
				continue
			}
			if !strings.HasPrefix(err.Error(), "explainer.fake: Explain: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, mode %s: error %q, want the plugin ID and %q", name, c.mode, err, c.want)
			}
		}
	}
	// The plugin survives its panic.
	req.Config = nil
	if _, err := remote.Explain(context.Background(), m, req); err != nil {
		t.Fatalf("after a panic: %v", err)
	}
	// Requests are checked before they leave the host.
	bad := req
	bad.Targets = []int{0, 5, 1}
	if _, err := remote.Explain(context.Background(), m, bad); err == nil || !strings.Contains(err.Error(), "input 1: target class 5 out of range 0..2") {
		t.Errorf("bad target: %v", err)
	}
	bad = req
	bad.Seeds = nil
	if _, err := remote.Explain(context.Background(), m, bad); err == nil || !strings.Contains(err.Error(), "one seed per input") {
		t.Errorf("stochastic explainer without seeds: %v", err)
	}
	if _, err := remote.Explain(context.Background(), noParams{m}, req); err == nil || !strings.Contains(err.Error(), "no Params() nn.Params method") {
		t.Errorf("model without Params: %v", err)
	}
	// A plugin's error keeps its gRPC code for the host.
	req.Config = Config{"mode": "error"}
	if _, err := remote.Explain(context.Background(), m, req); status.Code(err) != codes.Unknown {
		t.Errorf("plugin error has code %v, want Unknown", status.Code(err))
	}
}

func TestCheckOverTheWire(t *testing.T) {
	remote := serveTest(t, &fakeExplainer{}, countingBuilder(new(atomic.Int64))).(Explainer)
	if err := remote.Check(Config{"mode": "ok", "size": int64(3)}); err != nil {
		t.Fatal(err)
	}
	err := remote.Check(Config{"mode": "ok", "windw": 3})
	if err == nil || !strings.Contains(err.Error(), `explainer.fake: Check: unknown key "windw"`) {
		t.Errorf("unknown key: %v", err)
	}
	if err := remote.Check(Config{"mode": 3.5}); err == nil || !strings.Contains(err.Error(), `key "mode": want a string`) {
		t.Errorf("wrong type: %v", err)
	}
}

func TestCancellationReachesThePlugin(t *testing.T) {
	impl := &fakeExplainer{started: make(chan struct{}, 1), cancelled: make(chan error, 1)}
	remote := serveTest(t, impl, countingBuilder(new(atomic.Int64))).(Explainer)
	m, req := explainCase(8, 2)
	req.Config = Config{"mode": "block"}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := remote.Explain(ctx, m, req)
		errc <- err
	}()
	<-impl.started
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "explainer.fake") {
			t.Errorf("host error %v, want context.Canceled naming the plugin", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled call did not return")
	}
	select {
	case err := <-impl.cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("plugin's ctx ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin's context was not cancelled")
	}
}

func TestLargeMessages(t *testing.T) {
	// 2^20 inputs values (4 MB of float32) in, 8 MB of float64 maps out:
	// both directions exceed gRPC's default 4 MB limit.
	remote := serveTest(t, &fakeExplainer{}, countingBuilder(new(atomic.Int64))).(Explainer)
	n := 1 << 12
	m, req := explainCase(n, 256)
	maps, err := remote.Explain(context.Background(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 256 || maps[255][n-1] != float64(req.X[len(req.X)-1])*0.5*float64(req.Targets[255]+1)+float64(req.Seeds[255]%7) {
		t.Errorf("large batch came back wrong")
	}
}

// fakePosterior's artifact holds "w" = [seed, 1, 2]; draw s is fakeParams
// with every value w[0] + Seeds[s]. Config "mode" makes it misbehave.
type fakePosterior struct{}

func (fakePosterior) Info() PosteriorInfo {
	return PosteriorInfo{Info: Info{ID: "posterior.fake", Version: "0.1"}, Finite: false}
}
func (fakePosterior) Check(cfg Config) error { return cfg.Only("mode") }

func (fakePosterior) Fit(ctx context.Context, req FitRequest) (Artifact, error) {
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ { // progress from several goroutines is safe
		wg.Add(1)
		go func() { defer wg.Done(); req.Progress(Progress{Done: 0, Total: 4, Message: "started"}) }()
	}
	wg.Wait()
	for e := 1; e <= req.Training.Epochs; e++ {
		req.Progress(Progress{Done: e, Total: req.Training.Epochs, Message: fmt.Sprintf("epoch %d", e)})
	}
	if mode, _ := req.Config.String("mode", ""); mode == "nan" {
		return Artifact{Arch: req.Arch, Tensors: map[string][]float32{"w": {float32(math.NaN())}}}, nil
	}
	sum := float32(0)
	for _, v := range req.Train.X {
		sum += v
	}
	return Artifact{Arch: req.Arch, Tensors: map[string][]float32{"w": {float32(req.Seed), 1, sum}, "empty": {}}, Meta: map[string]string{"workers": fmt.Sprint(req.Workers)}}, nil
}

func (fakePosterior) Sample(ctx context.Context, a Artifact, req SampleRequest) ([]nn.Params, error) {
	mode, _ := req.Config.String("mode", "")
	out := make([]nn.Params, len(req.Seeds))
	for s, seed := range req.Seeds {
		out[s] = fakeParams(a.Arch.InLen, a.Tensors["w"][0]+float32(seed))
	}
	switch mode {
	case "few":
		out = out[1:]
	case "short":
		out[1].Data = out[1].Data[1:]
	case "inf":
		out[2].Data[3] = float32(math.Inf(1))
	}
	return out, nil
}

func TestPosteriorRoundTrip(t *testing.T) {
	remote := serveTest(t, fakePosterior{}, nil).(Posterior)
	if remote.Info() != (fakePosterior{}).Info() {
		t.Fatalf("Info %+v", remote.Info())
	}
	req := FitRequest{
		Arch:     fakeArch(4),
		Train:    Dataset{X: []float32{1, 2, 3, 4, 5, 6, 7, 8}, Y: []int{0, 1}, N: 2, Len: 4},
		Training: nn.TrainConfig{Epochs: 3},
		Seed:     9, Workers: 2,
	}
	var got []Progress
	req.Progress = func(p Progress) { got = append(got, p) }
	a, err := remote.Fit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 || got[6] != (Progress{Done: 3, Total: 3, Message: "epoch 3"}) {
		t.Errorf("progress events %v, want 4 starts then epochs 1..3", got)
	}
	if !reflect.DeepEqual(a.Tensors["w"], []float32{9, 1, 36}) || a.Meta["workers"] != "2" || !reflect.DeepEqual(a.Arch, req.Arch) {
		t.Errorf("artifact %+v", a)
	}
	req.Config = Config{"mode": "nan"}
	if _, err := remote.Fit(context.Background(), req); err == nil || !strings.Contains(err.Error(), `posterior.fake: Fit: artifact tensor "w" value 0 is NaN`) {
		t.Errorf("NaN artifact: %v", err)
	}

	draws, err := remote.Sample(context.Background(), a, SampleRequest{Seeds: []uint64{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	local, _ := fakePosterior{}.Sample(context.Background(), a, SampleRequest{Seeds: []uint64{1, 2, 3}})
	if !reflect.DeepEqual(draws, local) {
		t.Errorf("remote draws differ from in-process ones")
	}
	for _, c := range []struct{ mode, want string }{
		{"few", "returned 2 draws for 3 seeds"},
		{"short", "draw 1: 14 parameters, want 15"},
		{"inf", "draw 2: parameter 3 is +Inf"},
	} {
		for name, p := range map[string]Posterior{"remote": remote, "in-process": CheckedPosterior(fakePosterior{})} {
			_, err := p.Sample(context.Background(), a, SampleRequest{Seeds: []uint64{1, 2, 3}, Config: Config{"mode": c.mode}})
			if err == nil || !strings.HasPrefix(err.Error(), "posterior.fake: Sample: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, mode %s: error %v, want %q", name, c.mode, err, c.want)
			}
		}
	}
}

// fakeSummary returns, per input, the mean map, the set where the mean is
// positive or the min/max band, as its output says; Config "mode" makes
// it misbehave.
type fakeSummary struct{ out OutputKind }

func (s fakeSummary) Info() SummaryInfo {
	return SummaryInfo{Info: Info{ID: "summary.fake", Version: "1"}, Output: s.out, MinDraws: 2}
}
func (fakeSummary) Check(cfg Config) error { return cfg.Only("mode") }

func (s fakeSummary) Summarise(ctx context.Context, draws [][][]float64, cfg Config) ([]Result, error) {
	mode, _ := cfg.String("mode", "")
	out := make([]Result, len(draws))
	for i, d := range draws {
		n := len(d[0])
		mean, lo, hi := make([]float64, n), make([]float64, n), make([]float64, n)
		set := make([]bool, n)
		for j := 0; j < n; j++ {
			lo[j], hi[j] = math.Inf(1), math.Inf(-1)
			for _, r := range d {
				mean[j] += r[j] / float64(len(d))
				lo[j], hi[j] = math.Min(lo[j], r[j]), math.Max(hi[j], r[j])
			}
			set[j] = mean[j] > 0
		}
		switch s.out {
		case OutputMap:
			out[i].Map = mean
		case OutputSet:
			out[i].Set = set
		case OutputBand:
			out[i].Lower, out[i].Upper = lo, hi
		}
	}
	switch mode {
	case "swap":
		out[1].Lower, out[1].Upper = out[1].Upper, out[1].Lower
	case "short":
		out[0].Map = out[0].Map[:1]
	}
	return out, nil
}

func TestSummaryRoundTrip(t *testing.T) {
	draws := [][][]float64{
		{{1, -2, 3}, {3, 2, 1}},
		{{0, 1}, {2, -5}, {-1, 1}},
	}
	for _, out := range []OutputKind{OutputMap, OutputSet, OutputBand} {
		impl := fakeSummary{out}
		remote := serveTest(t, impl, nil).(Summary)
		got, err := remote.Summarise(context.Background(), draws, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := impl.Summarise(context.Background(), draws, nil)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: remote %+v, in-process %+v", out, got, want)
		}
	}
	band := serveTest(t, fakeSummary{OutputBand}, nil).(Summary)
	_, err := band.Summarise(context.Background(), draws, Config{"mode": "swap"})
	if err == nil || !strings.Contains(err.Error(), "summary.fake: Summarise: input 1: band index 0 has lower 2 > upper -1") {
		t.Errorf("swapped band: %v", err)
	}
	m := serveTest(t, fakeSummary{OutputMap}, nil).(Summary)
	_, err = m.Summarise(context.Background(), draws, Config{"mode": "short"})
	if err == nil || !strings.Contains(err.Error(), "input 0: map has 1 values, want 3") {
		t.Errorf("short map: %v", err)
	}
	_, err = m.Summarise(context.Background(), [][][]float64{{{1, 2}, {3}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "input 0: draw 1 has 1 values, draw 0 has 2") {
		t.Errorf("ragged draws: %v", err)
	}
	if m.Info().MinDraws != 2 {
		t.Errorf("remote MinDraws %d, want 2", m.Info().MinDraws)
	}
	_, err = m.Summarise(context.Background(), [][][]float64{{{1, 2}, {3, 4}}, {{1, 2}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "input 1 has 1 draws; the summary needs at least 2") {
		t.Errorf("too few draws: %v", err)
	}
}

type notAPlugin struct{}

type badIDExplainer struct{ fakeExplainer }

func (badIDExplainer) Info() ExplainerInfo { return ExplainerInfo{Info: Info{ID: "summary.oops"}} }

func TestServeConfigRejects(t *testing.T) {
	if _, err := ServeConfig(notAPlugin{}); err == nil || !strings.Contains(err.Error(), "implements none of") {
		t.Errorf("not a plugin: %v", err)
	}
	if _, err := ServeConfig(&badIDExplainer{}); err == nil || !strings.Contains(err.Error(), `is a plugin of kind explainer but its ID "summary.oops" is namespaced summary`) {
		t.Errorf("wrong namespace: %v", err)
	}
}

func TestParseID(t *testing.T) {
	for _, c := range []struct {
		id   string
		kind Kind
		name string
		ok   bool
	}{
		{"explainer.occlusion", KindExplainer, "occlusion", true},
		{"summary.trimmed-mean", KindSummary, "trimmed-mean", true},
		{"posterior.mc_dropout2", KindPosterior, "mc_dropout2", true},
		{"occlusion", "", "", false},
		{"explainers.occlusion", "", "", false},
		{"explainer.", "", "", false},
		{"explainer.Occlusion", "", "", false},
		{"explainer.a.b", "", "", false},
		{"explainer.-x", "", "", false},
	} {
		k, n, err := ParseID(c.id)
		if (err == nil) != c.ok || k != c.kind || n != c.name {
			t.Errorf("ParseID(%q) = %q, %q, %v", c.id, k, n, err)
		}
	}
}
