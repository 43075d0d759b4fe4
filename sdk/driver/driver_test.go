package driver

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
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/proto"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// serveTest serves p inside the test process over go-plugin's gRPC (test
// mode), with the configuration sdk.Serve uses, and returns the client
// that PluginSet dispenses for its kind.
func serveTest(t *testing.T, p sdk.Plugin) any {
	t.Helper()
	kind, _, err := sdk.Describe(p)
	if err != nil {
		t.Fatal(err)
	}
	quiet := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: &testWriter{t}})
	rpc, stop, err := proto.InProcess(p, PluginSet(), DialOptions(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
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

// spyRPC counts the Load and Explain calls that leave the host and keeps
// the last Load's request.
type spyRPC struct {
	pb.ExplainerClient
	loads, explains atomic.Int64
	lastLoad        atomic.Pointer[pb.LoadRequest]
}

func (s *spyRPC) Load(ctx context.Context, in *pb.LoadRequest, opts ...grpc.CallOption) (*pb.LoadResponse, error) {
	s.loads.Add(1)
	s.lastLoad.Store(in)
	return s.ExplainerClient.Load(ctx, in, opts...)
}

func (s *spyRPC) Explain(ctx context.Context, in *pb.ExplainRequest, opts ...grpc.CallOption) (*pb.ExplainResponse, error) {
	s.explains.Add(1)
	return s.ExplainerClient.Explain(ctx, in, opts...)
}

// spy puts a spyRPC between a remote explainer and its connection.
func spy(t *testing.T, e Explainer) *spyRPC {
	t.Helper()
	c, ok := e.(*explainerClient)
	if !ok {
		t.Fatalf("dispensed %T, want *explainerClient", e)
	}
	s := &spyRPC{ExplainerClient: c.rpc}
	c.rpc = s
	return s
}

// fakeArch is a flatten+dense network of n inputs and 3 classes.
func fakeArch(n int) nn.Arch {
	return nn.Arch{Name: "fake", InChannels: 1, InLen: n, Layers: []nn.Layer{{Kind: nn.KindFlatten}, {Kind: nn.KindDense, Name: "fc", Out: 3}}}
}

// fakeParams is fakeArch(n) with every parameter w.
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

// fakeExplainer returns map[b][t] = x[b][t] * w * (target+1) + seed%7,
// where w is the model's first parameter, or misbehaves as Config "mode"
// says.
type fakeExplainer struct {
	started   chan struct{} // mode "block": signalled when Explain starts
	cancelled chan error    // mode "block": receives ctx.Err() when it ends
}

func (e *fakeExplainer) Info() sdk.Info {
	return sdk.Info{ID: "explainer.fake", Version: "1.2.3", Summary: "a fake", Needs: sdk.NeedsInputGrad, Stochastic: true}
}

func (e *fakeExplainer) Check(cfg sdk.Config) error {
	if err := cfg.Only("mode", "size"); err != nil {
		return err
	}
	_, err := cfg.String("mode", "")
	return err
}

func (e *fakeExplainer) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	mode, _ := req.Config.String("mode", "ok")
	n := m.InputLen()
	w := float64(m.(interface{ Params() nn.Params }).Params().Data[0])
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

// explainCase is a draw of n inputs (every parameter 0.5) and a batch of
// b inputs to explain under it.
func explainCase(n, b int) (nn.Params, sdk.ExplainRequest) {
	req := sdk.ExplainRequest{X: make([]float32, n*b), Targets: make([]int, b), Seeds: make([]uint64, b)}
	for i := range req.X {
		req.X[i] = float32(i%13) - 6
	}
	for i := range req.Targets {
		req.Targets[i] = i % 3
		req.Seeds[i] = uint64(100 + i)
	}
	return fakeParams(n, 0.5), req
}

func load(t *testing.T, e Explainer, p nn.Params) Model {
	t.Helper()
	m, err := e.Load(context.Background(), sdk.Draw{Params: p})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestExplainerHandles: each draw's parameters cross once, batches name
// the draw's handle, the remote maps equal the in-process ones, and Close
// releases the draw in the plugin process.
func TestExplainerHandles(t *testing.T) {
	impl := &fakeExplainer{}
	remote := serveTest(t, impl).(Explainer)
	if got, want := remote.Info(), impl.Info(); !reflect.DeepEqual(got, want) {
		t.Fatalf("remote Info %+v, want %+v", got, want)
	}
	local, err := LocalExplainer(impl)
	if err != nil {
		t.Fatal(err)
	}
	sp := spy(t, remote)
	p1, req := explainCase(16, 4)
	req.Config = sdk.Config{"mode": "ok", "size": int64(3)}
	p2 := fakeParams(16, 2)
	r1, r2 := load(t, remote, p1), load(t, remote, p2)
	l1, l2 := load(t, local, p1), load(t, local, p2)
	h1, h2 := r1.(*loadedDraw).handle, r2.(*loadedDraw).handle
	if h1 == h2 {
		t.Fatalf("two draws got the same handle %d", h1)
	}
	seed1 := float64(req.Seeds[1] % 7)
	for i := 0; i < 3; i++ { // interleaved batches of the two draws
		for _, d := range []struct {
			name          string
			remote, local Model
		}{{"draw 1", r1, l1}, {"draw 2", r2, l2}} {
			got, err := d.remote.Explain(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: %v", d.name, err)
			}
			want, err := d.local.Explain(context.Background(), req)
			if err != nil {
				t.Fatalf("%s in process: %v", d.name, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, batch %d: remote maps %v\nin-process maps %v", d.name, i, got, want)
			}
		}
		m1, err := r1.Explain(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := r2.Explain(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if want := 4*m1[1][1] - 3*seed1; m2[1][1] != want || m1[1][1] == m2[1][1] {
			t.Fatalf("batch %d: draw 2 map value %v, want %v (draw 1 gives %v; the plugin used a stale model?)", i, m2[1][1], want, m1[1][1])
		}
	}
	if n := sp.loads.Load(); n != 2 {
		t.Errorf("%d Load calls for 2 draws and 12 batches, want 2 (parameters cross once per draw)", n)
	}
	if n := sp.explains.Load(); n != 12 {
		t.Errorf("%d Explain calls reached the plugin, want 12", n)
	}

	// Closing draw 1 releases it; draw 2 is unaffected.
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r1.Close(); err != nil {
		t.Errorf("closing twice: %v (want a no-op)", err)
	}
	before := sp.explains.Load()
	for name, m := range map[string]Model{"remote": r1, "in-process": l1} {
		if name == "in-process" {
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		}
		_, err := m.Explain(context.Background(), req)
		if !errors.Is(err, errClosed) || !strings.HasPrefix(err.Error(), "explainer.fake: Explain: ") {
			t.Errorf("%s: Explain after Close: %v, want %q naming the plugin", name, err, errClosed)
		}
	}
	if sp.explains.Load() != before {
		t.Errorf("an Explain through a closed model was sent to the plugin")
	}
	// The server forgot the handle: a raw call naming it is NotFound.
	rpc := r1.(*loadedDraw).c.rpc
	raw := &pb.ExplainRequest{Model: h1, X: wire.Float32Bytes(req.X), Targets: wire.Int64s(req.Targets), Seeds: req.Seeds}
	if _, err := rpc.Explain(context.Background(), raw); status.Code(err) != codes.NotFound {
		t.Errorf("raw Explain of released handle %d: %v (code %v), want NotFound", h1, err, status.Code(err))
	}
	if _, err := rpc.Release(context.Background(), &pb.ReleaseRequest{Handle: h1}); status.Code(err) != codes.NotFound {
		t.Errorf("raw Release of released handle %d: %v (code %v), want NotFound", h1, err, status.Code(err))
	}
	raw.Model = h2
	if _, err := rpc.Explain(context.Background(), raw); err != nil {
		t.Errorf("raw Explain of live handle %d: %v", h2, err)
	}
	got, err := r2.Explain(context.Background(), req)
	if err != nil {
		t.Fatalf("draw 2 after closing draw 1: %v", err)
	}
	want, _ := l2.Explain(context.Background(), req)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("draw 2 after closing draw 1: remote %v, in-process %v", got, want)
	}
	if err := r2.Close(); err != nil {
		t.Errorf("closing draw 2: %v", err)
	}
}

func TestExplainerAnswerValidation(t *testing.T) {
	impl := &fakeExplainer{}
	remote := serveTest(t, impl).(Explainer)
	local, err := LocalExplainer(impl)
	if err != nil {
		t.Fatal(err)
	}
	sp := spy(t, remote)
	p, req := explainCase(8, 3)
	rm, lm := load(t, remote, p), load(t, local, p)
	models := map[string]Model{"remote": rm, "in-process": lm}
	cases := []struct{ mode, want string }{
		{"few", "returned 2 maps for a batch of 3 inputs"},
		{"short", "input 1: map has 7 values, want 8"},
		{"nan", "input 1: map value 2 is NaN"},
		{"inf", "input 0: map value 0 is -Inf"},
		{"error", "window 700 exceeds the input length"},
		{"panic", "panic"},
	}
	for _, c := range cases {
		for name, m := range models {
			req.Config = sdk.Config{"mode": c.mode}
			_, err := m.Explain(context.Background(), req)
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
	if _, err := rm.Explain(context.Background(), req); err != nil {
		t.Fatalf("after a panic: %v", err)
	}
	// Requests are checked before they leave the host.
	sent := sp.explains.Load()
	bad := req
	bad.Targets = []int{0, 5, 1}
	for name, m := range models {
		if _, err := m.Explain(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "explainer.fake: Explain: bad request: input 1: target class 5 out of range 0..2") {
			t.Errorf("%s, bad target: %v", name, err)
		}
	}
	bad = req
	bad.Seeds = nil
	for name, m := range models {
		if _, err := m.Explain(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "one seed per input") {
			t.Errorf("%s, stochastic explainer without seeds: %v", name, err)
		}
	}
	if n := sp.explains.Load() - sent; n != 0 {
		t.Errorf("%d bad requests were sent to the plugin", n)
	}
	// The plugin process checks them too.
	raw := &pb.ExplainRequest{Model: rm.(*loadedDraw).handle, X: wire.Float32Bytes(req.X), Targets: []int64{0, 5, 1}, Seeds: req.Seeds}
	if _, err := sp.ExplainerClient.Explain(context.Background(), raw); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "target class 5") {
		t.Errorf("raw bad target: %v, want InvalidArgument naming the target", err)
	}
	// A draw whose parameters do not fit its arch is refused before it
	// is sent.
	short := fakeParams(8, 0.5)
	short.Data = short.Data[1:]
	for name, e := range map[string]Explainer{"remote": remote, "in-process": local} {
		_, err := e.Load(context.Background(), sdk.Draw{Params: short})
		if err == nil || !strings.Contains(err.Error(), `explainer.fake: Load: bad request: draw: 26 parameters, want 27 for arch "fake"`) {
			t.Errorf("%s, short draw: %v", name, err)
		}
	}
	if n := sp.loads.Load(); n != 1 {
		t.Errorf("%d Load calls reached the plugin, want 1 (the short draw must not be sent)", n)
	}
	// A plugin's error keeps its gRPC code for the host.
	req.Config = sdk.Config{"mode": "error"}
	if _, err := rm.Explain(context.Background(), req); status.Code(err) != codes.Unknown {
		t.Errorf("plugin error %v has code %v, want Unknown", err, status.Code(err))
	}
	req.Config = sdk.Config{"mode": "panic"}
	if _, err := rm.Explain(context.Background(), req); status.Code(err) != codes.Internal {
		t.Errorf("plugin panic %v has code %v, want Internal", err, status.Code(err))
	}
}

func TestCheckOverTheWire(t *testing.T) {
	impl := &fakeExplainer{}
	remote := serveTest(t, impl).(Explainer)
	local, err := LocalExplainer(impl)
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]Explainer{"remote": remote, "in-process": local} {
		if err := e.Check(sdk.Config{"mode": "ok", "size": int64(3)}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		err := e.Check(sdk.Config{"mode": "ok", "windw": 3})
		if err == nil || !strings.Contains(err.Error(), `explainer.fake: Check: unknown key "windw"`) {
			t.Errorf("%s, unknown key: %v", name, err)
		}
		if err := e.Check(sdk.Config{"mode": 3.5}); err == nil || !strings.Contains(err.Error(), `explainer.fake: Check: key "mode": want a string`) {
			t.Errorf("%s, wrong type: %v", name, err)
		}
	}
	if err := remote.Check(sdk.Config{"windw": 3}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a rejected config has code %v, want InvalidArgument", status.Code(err))
	}
}

func TestCancellationReachesThePlugin(t *testing.T) {
	impl := &fakeExplainer{started: make(chan struct{}, 1), cancelled: make(chan error, 1)}
	remote := serveTest(t, impl).(Explainer)
	p, req := explainCase(8, 2)
	m := load(t, remote, p)
	req.Config = sdk.Config{"mode": "block"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := m.Explain(ctx, req)
		errc <- err
	}()
	select {
	case <-impl.started:
	case <-time.After(time.Minute):
		t.Fatal("Explain did not reach the plugin")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "explainer.fake") {
			t.Errorf("host error %v, want context.Canceled naming the plugin", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("cancelled call did not return")
	}
	select {
	case err := <-impl.cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("plugin's ctx ended with %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the plugin's context was not cancelled")
	}
}

func TestLargeMessages(t *testing.T) {
	// 2^20 input values (4 MB of float32) in, 8 MB of float64 maps out:
	// both exceed gRPC's default 4 MB receive limit. (The request fails
	// without the plugin server's raised limit; the answer is covered by
	// go-plugin's own client default, MaxInt32, as well as DialOptions.)
	remote := serveTest(t, &fakeExplainer{}).(Explainer)
	n := 1 << 12
	p, req := explainCase(n, 256)
	m := load(t, remote, p)
	maps, err := m.Explain(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 256 || maps[255][n-1] != float64(req.X[len(req.X)-1])*0.5*float64(req.Targets[255]+1)+float64(req.Seeds[255]%7) {
		t.Errorf("large batch came back wrong")
	}
}

// fakePosterior's artifact holds "w" = [seed, 1, sum of the training X];
// draw s is fakeParams with every value w[0] + Seeds[s]. It is finite,
// of 3 members: Check rejects more draws. Config "mode" makes it
// misbehave.
type fakePosterior struct{}

func (fakePosterior) Info() sdk.Info {
	return sdk.Info{ID: "posterior.fake", Version: "0.1", Finite: true,
		Base: "posterior.base", BaseKeys: []string{"seed", "lr"}, Files: []string{"weights"}}
}

func (fakePosterior) Check(cfg sdk.Config, draws int) error {
	if err := cfg.Only("mode"); err != nil {
		return err
	}
	if draws > 3 {
		return fmt.Errorf("the recipe asks for %d draws; this posterior has 3", draws)
	}
	return nil
}

func (fakePosterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ { // progress from several goroutines is safe
		wg.Add(1)
		go func() { defer wg.Done(); req.Progress(sdk.Progress{Done: 0, Total: 4, Message: "started"}) }()
	}
	wg.Wait()
	for e := 1; e <= req.Training.Epochs; e++ {
		req.Progress(sdk.Progress{Done: e, Total: req.Training.Epochs, Message: fmt.Sprintf("epoch %d", e)})
	}
	if mode, _ := req.Config.String("mode", ""); mode == "nan" {
		return sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{"w": {float32(math.NaN())}}}, nil
	}
	sum := float32(0)
	for _, v := range req.Train.X {
		sum += v
	}
	a := sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{"w": {float32(req.Seed), 1, sum}, "empty": {}}, Meta: map[string]string{"workers": fmt.Sprint(req.Workers)}}
	if req.Base != nil { // a post-hoc fit echoes its base
		a.Tensors["base"] = req.Base.Tensors["w"]
		a.Meta["base"] = req.Base.Meta["name"]
	}
	return a, nil
}

func (fakePosterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
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
	remote := serveTest(t, fakePosterior{}).(sdk.Posterior)
	if !reflect.DeepEqual(remote.Info(), (fakePosterior{}).Info()) {
		t.Fatalf("Info %+v, want %+v", remote.Info(), fakePosterior{}.Info())
	}
	local, err := LocalPosterior(fakePosterior{})
	if err != nil {
		t.Fatal(err)
	}
	posteriors := map[string]sdk.Posterior{"remote": remote, "in-process": local}

	// Check gets the recipe's number of draws.
	for name, p := range posteriors {
		if err := p.Check(sdk.Config{"mode": "ok"}, 3); err != nil {
			t.Errorf("%s: Check of 3 draws: %v", name, err)
		}
		for _, draws := range []int{4, 17} {
			want := fmt.Sprintf("posterior.fake: Check: the recipe asks for %d draws; this posterior has 3", draws)
			if err := p.Check(nil, draws); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: Check of %d draws: %v, want %q", name, draws, err, want)
			}
		}
		if err := p.Check(sdk.Config{"windw": 1}, 1); err == nil || !strings.Contains(err.Error(), `posterior.fake: Check: unknown key "windw"`) {
			t.Errorf("%s: unknown key: %v", name, err)
		}
	}

	req := sdk.FitRequest{
		Arch:     fakeArch(4),
		Train:    sdk.Dataset{X: []float32{1, 2, 3, 4, 5, 6, 7, 8}, Y: []int{0, 1}, N: 2, Len: 4},
		Training: nn.TrainConfig{Epochs: 3},
		Seed:     9, Workers: 2,
	}
	var got []sdk.Progress
	req.Progress = func(p sdk.Progress) { got = append(got, p) }
	a, err := remote.Fit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 || got[6] != (sdk.Progress{Done: 3, Total: 3, Message: "epoch 3"}) {
		t.Errorf("progress events %v, want 4 starts then epochs 1..3", got)
	}
	if !reflect.DeepEqual(a.Tensors["w"], []float32{9, 1, 36}) || a.Meta["workers"] != "2" || !reflect.DeepEqual(a.Arch, req.Arch) {
		t.Errorf("artifact %+v", a)
	}
	// A post-hoc fit gets its base's artifact, checked like an answer.
	base := sdk.Artifact{Arch: fakeArch(4), Tensors: map[string][]float32{"w": {5, 6}}, Meta: map[string]string{"name": "the base"}}
	req.Base = &base
	for name, p := range posteriors {
		a, err := p.Fit(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: Fit with a base: %v", name, err)
		}
		if !reflect.DeepEqual(a.Tensors["base"], []float32{5, 6}) || a.Meta["base"] != "the base" {
			t.Errorf("%s: Fit with a base: artifact %+v, want the base's tensor and meta echoed", name, a)
		}
	}
	base.Tensors["w"][1] = float32(math.Inf(-1))
	for name, p := range posteriors {
		if _, err := p.Fit(context.Background(), req); err == nil || !strings.Contains(err.Error(), `posterior.fake: Fit: bad request: base artifact tensor "w" value 1 is -Inf`) {
			t.Errorf("%s: an infinite base: %v", name, err)
		}
	}
	req.Base = nil
	req.Config = sdk.Config{"mode": "nan"}
	for name, p := range posteriors {
		if _, err := p.Fit(context.Background(), req); err == nil || !strings.Contains(err.Error(), `posterior.fake: Fit: artifact tensor "w" value 0 is NaN`) {
			t.Errorf("%s: NaN artifact: %v", name, err)
		}
	}

	draws, err := remote.Sample(context.Background(), a, sdk.SampleRequest{Seeds: []uint64{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := local.Sample(context.Background(), a, sdk.SampleRequest{Seeds: []uint64{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(draws, want) {
		t.Errorf("remote draws differ from in-process ones")
	}
	if draws[2].Data[0] != 12 {
		t.Errorf("draw 2's first parameter is %v, want 9+3", draws[2].Data[0])
	}
	for _, c := range []struct{ mode, want string }{
		{"few", "returned 2 draws for 3 seeds"},
		{"short", "draw 1: 14 parameters, want 15"},
		{"inf", "draw 2: parameter 3 is +Inf"},
	} {
		for name, p := range posteriors {
			_, err := p.Sample(context.Background(), a, sdk.SampleRequest{Seeds: []uint64{1, 2, 3}, Config: sdk.Config{"mode": c.mode}})
			if err == nil || !strings.HasPrefix(err.Error(), "posterior.fake: Sample: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, mode %s: error %v, want %q", name, c.mode, err, c.want)
			}
		}
	}
}

// fakeSummary returns, per input, the mean map, the set where the mean is
// positive or the min/max band, as its output says; Config "mode" makes
// it misbehave.
type fakeSummary struct{ out sdk.OutputKind }

func (s fakeSummary) Info() sdk.Info {
	return sdk.Info{ID: "summary.fake", Version: "1", Output: s.out, MinDraws: 2}
}
func (fakeSummary) Check(cfg sdk.Config) error { return cfg.Only("mode") }

func (s fakeSummary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	mode, _ := cfg.String("mode", "")
	out := make([]sdk.Result, len(draws))
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
		case sdk.OutputMap:
			out[i].Map = mean
		case sdk.OutputSet:
			out[i].Set = set
		case sdk.OutputBand:
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
	for _, out := range []sdk.OutputKind{sdk.OutputMap, sdk.OutputSet, sdk.OutputBand} {
		impl := fakeSummary{out}
		remote := serveTest(t, impl).(sdk.Summary)
		if !reflect.DeepEqual(remote.Info(), impl.Info()) {
			t.Errorf("%s: remote Info %+v, want %+v", out, remote.Info(), impl.Info())
		}
		got, err := remote.Summarise(context.Background(), draws, nil)
		if err != nil {
			t.Fatal(err)
		}
		local, err := LocalSummary(impl)
		if err != nil {
			t.Fatal(err)
		}
		want, err := local.Summarise(context.Background(), draws, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: remote %+v, in-process %+v", out, got, want)
		}
	}
	bandLocal, _ := LocalSummary(fakeSummary{sdk.OutputBand})
	mapLocal, _ := LocalSummary(fakeSummary{sdk.OutputMap})
	bands := map[string]sdk.Summary{"remote": serveTest(t, fakeSummary{sdk.OutputBand}).(sdk.Summary), "in-process": bandLocal}
	maps := map[string]sdk.Summary{"remote": serveTest(t, fakeSummary{sdk.OutputMap}).(sdk.Summary), "in-process": mapLocal}
	for name, band := range bands {
		_, err := band.Summarise(context.Background(), draws, sdk.Config{"mode": "swap"})
		if err == nil || !strings.Contains(err.Error(), "summary.fake: Summarise: input 1: band index 0 has lower 2 > upper -1") {
			t.Errorf("%s, swapped band: %v", name, err)
		}
	}
	for name, m := range maps {
		_, err := m.Summarise(context.Background(), draws, sdk.Config{"mode": "short"})
		if err == nil || !strings.Contains(err.Error(), "input 0: map has 1 values, want 3") {
			t.Errorf("%s, short map: %v", name, err)
		}
		_, err = m.Summarise(context.Background(), [][][]float64{{{1, 2}, {3}}}, nil)
		if err == nil || !strings.Contains(err.Error(), "input 0: draw 1 has 1 values, draw 0 has 2") {
			t.Errorf("%s, ragged draws: %v", name, err)
		}
		if m.Info().MinDraws != 2 {
			t.Errorf("%s: MinDraws %d, want 2", name, m.Info().MinDraws)
		}
		_, err = m.Summarise(context.Background(), [][][]float64{{{1, 2}, {3, 4}}, {{1, 2}}}, nil)
		if err == nil || !strings.Contains(err.Error(), "input 1 has 1 draws; the summary needs at least 2") {
			t.Errorf("%s, too few draws: %v", name, err)
		}
	}
}

type notAPlugin struct{}

type badIDExplainer struct{ fakeExplainer }

func (badIDExplainer) Info() sdk.Info { return sdk.Info{ID: "summary.oops", Version: "1"} }

// TestServeConfigRejects: the configuration sdk.Serve uses refuses what
// is not a valid plugin, and so does Local.
func TestServeConfigRejects(t *testing.T) {
	if _, err := proto.ServeConfig(notAPlugin{}); err == nil || !strings.Contains(err.Error(), "is not a plugin") {
		t.Errorf("not a plugin: %v", err)
	}
	const wrongNS = `is a plugin of kind explainer but its ID "summary.oops" is namespaced summary`
	if _, err := proto.ServeConfig(&badIDExplainer{}); err == nil || !strings.Contains(err.Error(), wrongNS) {
		t.Errorf("wrong namespace: %v", err)
	}
	if _, _, err := Local(&badIDExplainer{}); err == nil || !strings.Contains(err.Error(), wrongNS) {
		t.Errorf("Local, wrong namespace: %v", err)
	}
}
