package sdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/proto"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// These tests call the plugin side of the protocol (server.go, convert.go,
// serve.go) directly with protocol messages, as the host's gRPC client
// would, and check every answer and every status.

// ---- fakes -----------------------------------------------------------------

// fakePosterior is a Posterior whose methods are the test's functions.
type fakePosterior struct {
	info   Info
	check  func(cfg Config, draws int) error
	fit    func(ctx context.Context, req FitRequest) (Artifact, error)
	sample func(ctx context.Context, a Artifact, req SampleRequest) ([]nn.Params, error)
}

func (f *fakePosterior) Info() Info { return f.info }
func (f *fakePosterior) Check(cfg Config, draws int) error {
	return f.check(cfg, draws)
}
func (f *fakePosterior) Fit(ctx context.Context, req FitRequest) (Artifact, error) {
	return f.fit(ctx, req)
}
func (f *fakePosterior) Sample(ctx context.Context, a Artifact, req SampleRequest) ([]nn.Params, error) {
	return f.sample(ctx, a, req)
}

// fakeExplainer is an Explainer whose methods are the test's functions.
type fakeExplainer struct {
	info    Info
	check   func(cfg Config) error
	explain func(ctx context.Context, m nn.Model, req ExplainRequest) ([][]float64, error)
	calls   atomic.Int32 // Explain calls
}

func (f *fakeExplainer) Info() Info             { return f.info }
func (f *fakeExplainer) Check(cfg Config) error { return f.check(cfg) }
func (f *fakeExplainer) Explain(ctx context.Context, m nn.Model, req ExplainRequest) ([][]float64, error) {
	f.calls.Add(1)
	return f.explain(ctx, m, req)
}

// fakeSummary is a Summary whose methods are the test's functions.
type fakeSummary struct {
	info      Info
	check     func(cfg Config) error
	summarise func(ctx context.Context, draws [][][]float64, cfg Config) ([]Result, error)
	calls     atomic.Int32 // Summarise calls
}

func (f *fakeSummary) Info() Info             { return f.info }
func (f *fakeSummary) Check(cfg Config) error { return f.check(cfg) }
func (f *fakeSummary) Summarise(ctx context.Context, draws [][][]float64, cfg Config) ([]Result, error) {
	f.calls.Add(1)
	return f.summarise(ctx, draws, cfg)
}

// fitStream is the server side of a Fit stream: it records the events
// sent, can refuse progress events, and notes two Sends at once.
type fitStream struct {
	ctx          context.Context
	failProgress bool

	mu      sync.Mutex
	events  []*pb.FitEvent
	inside  atomic.Int32
	overlap atomic.Bool
}

func (s *fitStream) Send(ev *pb.FitEvent) error {
	if s.inside.Add(1) != 1 {
		s.overlap.Store(true)
	}
	defer s.inside.Add(-1)
	for range 100 { // widen the window in which a second Send would overlap
		if s.inside.Load() != 1 {
			s.overlap.Store(true)
		}
	}
	if _, ok := ev.GetEvent().(*pb.FitEvent_Progress); ok && s.failProgress {
		return errors.New("stream closed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	return nil
}

func (s *fitStream) Context() context.Context     { return s.ctx }
func (s *fitStream) SetHeader(metadata.MD) error  { return errors.New("fitStream: no headers") }
func (s *fitStream) SendHeader(metadata.MD) error { return errors.New("fitStream: no headers") }
func (s *fitStream) SetTrailer(metadata.MD)       {}
func (s *fitStream) SendMsg(any) error            { return errors.New("fitStream: use Send") }
func (s *fitStream) RecvMsg(any) error            { return errors.New("fitStream: nothing to receive") }

func (s *fitStream) sent() []*pb.FitEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*pb.FitEvent(nil), s.events...)
}

// ---- helpers ---------------------------------------------------------------

// wantStatus checks that err is a gRPC status of the given code whose
// message holds every one of want.
func wantStatus(t *testing.T, what string, err error, code codes.Code, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %s", what, code)
		return
	}
	st, ok := status.FromError(err)
	if !ok {
		t.Errorf("%s: error %v is not a gRPC status", what, err)
		return
	}
	if st.Code() != code {
		t.Errorf("%s: code %s (%q), want %s", what, st.Code(), st.Message(), code)
	}
	for _, w := range want {
		if !strings.Contains(st.Message(), w) {
			t.Errorf("%s: message %q does not hold %q", what, st.Message(), w)
		}
	}
}

func mustConfig(t *testing.T, c map[string]any) []byte {
	t.Helper()
	b, err := wire.Config(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustArch(t *testing.T, a nn.Arch) []byte {
	t.Helper()
	b, err := wire.Arch(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParams(t *testing.T, p nn.Params) *pb.Params {
	t.Helper()
	m, err := wire.Params(p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tinyArch is flatten + dense: 4 inputs, 3 classes, logits W x + b.
func tinyArch() nn.Arch {
	return nn.Arch{Name: "t", InChannels: 1, InLen: 4, Layers: []nn.Layer{{Kind: nn.KindFlatten}, {Kind: nn.KindDense, Name: "fc", Out: 3}}}
}

// tinyParams is a parameter vector of tinyArch; scale makes draws differ.
func tinyParams(t *testing.T, scale float32) nn.Params {
	t.Helper()
	lay, err := nn.NewLayout(tinyArch())
	if err != nil {
		t.Fatal(err)
	}
	d := make([]float32, lay.Size)
	for i := range d {
		d[i] = scale * float32((i*7)%5-2) / 4
	}
	return nn.Params{Arch: tinyArch(), Data: d}
}

// tinyProbs is the closed form of tinyArch's class probabilities:
// softmax(W x + b), W (3 x 4) row-major then b, in float64.
func tinyProbs(p nn.Params, x []float32) []float64 {
	z := make([]float64, 3)
	for j := range z {
		z[j] = float64(p.Data[12+j])
		for i := range 4 {
			z[j] += float64(p.Data[j*4+i]) * float64(x[i])
		}
	}
	m := math.Max(z[0], math.Max(z[1], z[2]))
	var s float64
	for j := range z {
		z[j] = math.Exp(z[j] - m)
		s += z[j]
	}
	for j := range z {
		z[j] /= s
	}
	return z
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// bufLog is a logger that writes into a buffer the test reads.
type bufLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *bufLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *bufLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *bufLog) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: l, Level: hclog.Debug})
}

// ---- toStatus and guard ----------------------------------------------------

func TestToStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		code codes.Code
		want codes.Code
	}{
		{errors.New("bad"), codes.Unknown, codes.Unknown},
		{errors.New("bad"), codes.InvalidArgument, codes.InvalidArgument},
		{context.Canceled, codes.Unknown, codes.Canceled},
		{fmt.Errorf("member 2: %w", context.Canceled), codes.InvalidArgument, codes.Canceled},
		{context.DeadlineExceeded, codes.Unknown, codes.DeadlineExceeded},
		{fmt.Errorf("epoch 3: %w", context.DeadlineExceeded), codes.InvalidArgument, codes.DeadlineExceeded},
	} {
		err := toStatus(c.err, c.code)
		wantStatus(t, fmt.Sprintf("toStatus(%v, %s)", c.err, c.code), err, c.want, c.err.Error())
		if st, _ := status.FromError(err); st.Message() != c.err.Error() {
			t.Errorf("toStatus(%v): message %q, want the error's own", c.err, st.Message())
		}
	}
}

func TestGuardTurnsAPanicIntoInternal(t *testing.T) {
	var log bufLog
	run := func(panicking bool) (err error) {
		defer guard(log.logger(), "explainer.x", "Explain", &err)
		if panicking {
			panic("index out of range")
		}
		return status.Error(codes.NotFound, "kept")
	}
	wantStatus(t, "a panic", run(true), codes.Internal, "panic: index out of range", "stack trace in the plugin's log")
	out := log.String()
	for _, w := range []string{"plugin panicked", "explainer.x", "Explain", "index out of range", "goroutine"} {
		if !strings.Contains(out, w) {
			t.Errorf("the plugin's log %q does not hold %q", out, w)
		}
	}
	before := log.String()
	wantStatus(t, "no panic", run(false), codes.NotFound, "kept")
	if log.String() != before {
		t.Errorf("a call without a panic logged %q", strings.TrimPrefix(log.String(), before))
	}
}

// ---- Check, for every kind -------------------------------------------------

func TestServeCheck(t *testing.T) {
	var got Config
	calls := 0
	check := func(cfg Config) error {
		calls++
		got = cfg
		if v, ok := cfg["fail"]; ok {
			switch v {
			case "canceled":
				return fmt.Errorf("checking: %w", context.Canceled)
			case "deadline":
				return context.DeadlineExceeded
			case "panic":
				panic("check exploded")
			}
			return fmt.Errorf("key fail: %v", v)
		}
		return nil
	}
	log := hclog.NewNullLogger()

	resp, err := serveCheck(log, "summary.x", &pb.CheckRequest{ConfigJson: mustConfig(t, map[string]any{"k": int64(3), "s": "a"})}, check)
	if err != nil || resp == nil {
		t.Fatalf("Check of a good config: %v, %v", resp, err)
	}
	if want := (Config{"k": 3.0, "s": "a"}); !reflect.DeepEqual(got, want) {
		t.Errorf("the plugin checked %#v, want %#v", got, want)
	}
	if _, err := serveCheck(log, "summary.x", &pb.CheckRequest{}, check); err != nil || got != nil {
		t.Errorf("Check without a config: %v, config %#v (want nil)", err, got)
	}

	calls = 0
	_, err = serveCheck(log, "summary.x", &pb.CheckRequest{ConfigJson: []byte(`{"k":`)}, check)
	wantStatus(t, "bad JSON", err, codes.InvalidArgument, "decoding config")
	if calls != 0 {
		t.Error("the plugin checked a config that did not decode")
	}
	_, err = serveCheck(log, "summary.x", &pb.CheckRequest{ConfigJson: mustConfig(t, map[string]any{"fail": "nope"})}, check)
	wantStatus(t, "a rejected config", err, codes.InvalidArgument, "key fail: nope")
	_, err = serveCheck(log, "summary.x", &pb.CheckRequest{ConfigJson: mustConfig(t, map[string]any{"fail": "canceled"})}, check)
	wantStatus(t, "a canceled check", err, codes.Canceled, "checking: context canceled")
	_, err = serveCheck(log, "summary.x", &pb.CheckRequest{ConfigJson: mustConfig(t, map[string]any{"fail": "deadline"})}, check)
	wantStatus(t, "a check past its deadline", err, codes.DeadlineExceeded)
	_, err = serveCheck(log, "summary.x", &pb.CheckRequest{ConfigJson: mustConfig(t, map[string]any{"fail": "panic"})}, check)
	wantStatus(t, "a panicking check", err, codes.Internal, "panic: check exploded")
}

func TestCheckOfEachKind(t *testing.T) {
	ctx := context.Background()
	cfgJSON := mustConfig(t, map[string]any{"members": int64(5)})
	wantCfg := Config{"members": 5.0}

	var pCfg Config
	pDraws := -1
	post := &posteriorServer{
		impl: &fakePosterior{check: func(cfg Config, draws int) error {
			pCfg, pDraws = cfg, draws
			if draws > 5 {
				return fmt.Errorf("%d draws, 5 members", draws)
			}
			return nil
		}},
		info: Info{ID: "posterior.ens"}, log: hclog.NewNullLogger(),
	}
	if _, err := post.Check(ctx, &pb.CheckRequest{ConfigJson: cfgJSON, Draws: 4}); err != nil {
		t.Fatal(err)
	}
	if pDraws != 4 || !reflect.DeepEqual(pCfg, wantCfg) {
		t.Errorf("the posterior checked %#v with %d draws, want %#v with 4", pCfg, pDraws, wantCfg)
	}
	_, err := post.Check(ctx, &pb.CheckRequest{ConfigJson: cfgJSON, Draws: 7})
	wantStatus(t, "posterior Check of 7 draws", err, codes.InvalidArgument, "7 draws, 5 members")

	var eCfg Config
	expl := &explainerServer{impl: &fakeExplainer{check: func(cfg Config) error {
		eCfg = cfg
		return errors.New("explainer says no")
	}}, info: Info{ID: "explainer.x"}, log: hclog.NewNullLogger(), models: map[uint64]nn.Model{}}
	_, err = expl.Check(ctx, &pb.CheckRequest{ConfigJson: cfgJSON})
	wantStatus(t, "explainer Check", err, codes.InvalidArgument, "explainer says no")
	if !reflect.DeepEqual(eCfg, wantCfg) {
		t.Errorf("the explainer checked %#v, want %#v", eCfg, wantCfg)
	}

	var sCfg Config
	sum := &summaryServer{impl: &fakeSummary{check: func(cfg Config) error {
		sCfg = cfg
		return nil
	}}, info: Info{ID: "summary.x"}, log: hclog.NewNullLogger()}
	if _, err := sum.Check(ctx, &pb.CheckRequest{ConfigJson: cfgJSON}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sCfg, wantCfg) {
		t.Errorf("the summary checked %#v, want %#v", sCfg, wantCfg)
	}
}

// ---- Info ------------------------------------------------------------------

func TestInfoRPCs(t *testing.T) {
	ctx := context.Background()
	base := func(id string) Info { return Info{ID: id, Version: "1.2.3", Summary: "one line of " + id} }
	wantInfo := func(what string, got *pb.Info, i Info) {
		t.Helper()
		if got.GetId() != i.ID || got.GetVersion() != i.Version || got.GetSummary() != i.Summary {
			t.Errorf("%s: info %v, want %+v", what, got, i)
		}
	}

	for _, c := range []struct{ finite, replicates bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		i := base("posterior.ens")
		i.Finite, i.Replicates = c.finite, c.replicates
		r, err := (&posteriorServer{info: i}).Info(ctx, &pb.InfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		wantInfo("posterior", r.GetInfo(), i)
		if r.GetFinite() != c.finite || r.GetReplicates() != c.replicates {
			t.Errorf("posterior Finite %v Replicates %v, want %v %v", r.GetFinite(), r.GetReplicates(), c.finite, c.replicates)
		}
	}

	for _, c := range []struct {
		needs      Needs
		stochastic bool
	}{{0, false}, {NeedsProbs | NeedsLayer, true}, {NeedsInputGrad, false}} {
		i := base("explainer.x")
		i.Needs, i.Stochastic = c.needs, c.stochastic
		r, err := (&explainerServer{info: i}).Info(ctx, &pb.InfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		wantInfo("explainer", r.GetInfo(), i)
		if Needs(r.GetNeeds()) != c.needs || r.GetStochastic() != c.stochastic {
			t.Errorf("explainer Needs %d Stochastic %v, want %d %v", r.GetNeeds(), r.GetStochastic(), c.needs, c.stochastic)
		}
	}

	for _, c := range []struct {
		out OutputKind
		min int
	}{{OutputMap, 0}, {OutputSet, 2}, {OutputBand, 7}} {
		i := base("summary.s")
		i.Output, i.MinDraws = c.out, c.min
		r, err := (&summaryServer{info: i}).Info(ctx, &pb.InfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		wantInfo("summary", r.GetInfo(), i)
		if OutputKind(r.GetOutput()) != c.out || int(r.GetMinDraws()) != c.min {
			t.Errorf("summary Output %q MinDraws %d, want %q %d", r.GetOutput(), r.GetMinDraws(), c.out, c.min)
		}
	}
}

// ---- Fit -------------------------------------------------------------------

// goodFitRequest is a valid FitRequest and what the plugin should get.
func goodFitRequest(t *testing.T) (*pb.FitRequest, FitRequest) {
	train := Dataset{X: []float32{1, 2, 3, 4, 5, 6, 7, 8}, Y: []int{0, 2}, N: 2, Len: 4}
	val := Dataset{X: []float32{-1, -2, -3, -4}, Y: []int{1}, N: 1, Len: 4}
	tc := nn.PaperTrainConfig()
	tc.Epochs = 3
	tj := fmt.Appendf(nil, `{"epochs":%d,"batch":%d,"lr":%g,"weight_decay":%g,"step_every":%d,"step_gamma":%g,"beta1":%g,"beta2":%g,"eps":%g}`,
		tc.Epochs, tc.Batch, tc.LR, tc.WeightDecay, tc.StepEvery, tc.StepGamma, tc.Beta1, tc.Beta2, tc.Eps)
	r := &pb.FitRequest{
		ArchJson:     mustArch(t, tinyArch()),
		Train:        &pb.Dataset{X: wire.Float32Bytes(train.X), Y: wire.Int64s(train.Y), N: int64(train.N), Len: int64(train.Len)},
		Val:          &pb.Dataset{X: wire.Float32Bytes(val.X), Y: wire.Int64s(val.Y), N: int64(val.N), Len: int64(val.Len)},
		TrainingJson: tj,
		ConfigJson:   mustConfig(t, map[string]any{"members": int64(2)}),
		Seed:         1<<63 + 5,
		Workers:      3,
		Replicate:    2,
	}
	want := FitRequest{Arch: tinyArch(), Train: train, Val: val, Training: tc, Config: Config{"members": 2.0}, Seed: 1<<63 + 5, Workers: 3, Replicate: 2}
	return r, want
}

func tinyArtifact(t *testing.T) Artifact {
	return Artifact{
		Arch:    tinyArch(),
		Tensors: map[string][]float32{"member0": tinyParams(t, 1).Data, "member1": tinyParams(t, -2).Data, "empty": {}},
		Meta:    map[string]string{"members": "2"},
	}
}

func TestFitStreamsProgressThenOneArtifact(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "the stream's")
	r, want := goodFitRequest(t)
	art := tinyArtifact(t)
	var got FitRequest
	var leaked func(Progress)
	var sawCtx any
	const workers, each = 4, 5
	f := &fakePosterior{fit: func(ctx context.Context, req FitRequest) (Artifact, error) {
		got, leaked, sawCtx = req, req.Progress, ctx.Value(key{})
		req.Progress(Progress{Done: 0, Total: 2, Message: "start"})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					req.Progress(Progress{Done: 1, Total: 2, Message: fmt.Sprintf("worker %d step %d", w, i)})
				}
			})
		}
		wg.Wait()
		req.Progress(Progress{Done: 2, Total: 2, Message: "member 1 epoch 3 loss 0.25"})
		return art, nil
	}}
	var log bufLog
	s := &posteriorServer{impl: f, info: Info{ID: "posterior.ens"}, log: log.logger()}
	stream := &fitStream{ctx: ctx}
	if err := s.Fit(r, stream); err != nil {
		t.Fatal(err)
	}
	if sawCtx != "the stream's" {
		t.Error("Fit did not get the stream's context")
	}
	if got.Progress == nil {
		t.Fatal("Fit got no Progress function")
	}
	got.Progress = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fit got\n%+v\nwant\n%+v", got, want)
	}

	ev := stream.sent()
	if n := 2 + workers*each + 1; len(ev) != n {
		t.Fatalf("%d events, want %d progress reports and one artifact", len(ev), n-1)
	}
	first, last := ev[0].GetProgress(), ev[len(ev)-2].GetProgress()
	if first.GetDone() != 0 || first.GetTotal() != 2 || first.GetMessage() != "start" {
		t.Errorf("first progress %v", first)
	}
	if last.GetDone() != 2 || last.GetTotal() != 2 || last.GetMessage() != "member 1 epoch 3 loss 0.25" {
		t.Errorf("last progress %v", last)
	}
	var msgs []string
	for _, e := range ev[1 : len(ev)-2] {
		p := e.GetProgress()
		if p == nil || p.GetDone() != 1 || p.GetTotal() != 2 {
			t.Fatalf("event %v, want a progress report 1/2", e)
		}
		msgs = append(msgs, p.GetMessage())
	}
	sort.Strings(msgs)
	var wantMsgs []string
	for w := range workers {
		for i := range each {
			wantMsgs = append(wantMsgs, fmt.Sprintf("worker %d step %d", w, i))
		}
	}
	sort.Strings(wantMsgs)
	if !reflect.DeepEqual(msgs, wantMsgs) {
		t.Errorf("progress messages %v, want %v", msgs, wantMsgs)
	}
	if stream.overlap.Load() {
		t.Error("progress reports were sent concurrently")
	}
	pa := ev[len(ev)-1].GetArtifact()
	if pa == nil {
		t.Fatalf("last event %v is not the artifact", ev[len(ev)-1])
	}
	a, err := decodeArtifact(pa)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, art) {
		t.Errorf("artifact %+v, want %+v", a, art)
	}

	// A careless plugin reports after Fit returned: nothing more is sent.
	leaked(Progress{Done: 3, Total: 2, Message: "late"})
	if n := len(stream.sent()); n != len(ev) {
		t.Errorf("a progress report after Fit returned was sent (%d events, want %d)", n, len(ev))
	}
	if strings.Contains(log.String(), "progress not sent") {
		t.Errorf("progress reports that were sent were logged as not sent: %s", log.String())
	}
}

func TestFitProgressThatCannotBeSentIsLoggedAndFitGoesOn(t *testing.T) {
	r, _ := goodFitRequest(t)
	art := tinyArtifact(t)
	f := &fakePosterior{fit: func(_ context.Context, req FitRequest) (Artifact, error) {
		req.Progress(Progress{Done: 1, Total: 1})
		return art, nil
	}}
	var log bufLog
	s := &posteriorServer{impl: f, info: Info{ID: "posterior.ens"}, log: log.logger()}
	stream := &fitStream{ctx: context.Background(), failProgress: true}
	if err := s.Fit(r, stream); err != nil {
		t.Fatal(err)
	}
	ev := stream.sent()
	if len(ev) != 1 || ev[0].GetArtifact() == nil {
		t.Fatalf("events %v, want the artifact alone", ev)
	}
	if out := log.String(); !strings.Contains(out, "progress not sent") || !strings.Contains(out, "stream closed") {
		t.Errorf("the plugin's log %q does not report the unsent progress and why", out)
	}
}

func TestFitErrors(t *testing.T) {
	art := tinyArtifact(t)
	nanArt := art
	nanArt.Arch = tinyArch()
	nanArt.Arch.Layers = append([]nn.Layer{{Kind: nn.KindDropout, P: math.NaN()}}, nanArt.Arch.Layers...)

	edit := func(f func(r *pb.FitRequest)) *pb.FitRequest {
		r, _ := goodFitRequest(t)
		f(r)
		return r
	}
	badRequests := []struct {
		name string
		r    *pb.FitRequest
		want string
	}{
		{"unknown arch field", edit(func(r *pb.FitRequest) { r.ArchJson = []byte(`{"name":"t","in_channels":1,"in_len":4,"layerz":[]}`) }), "layerz"},
		{"no arch", edit(func(r *pb.FitRequest) { r.ArchJson = nil }), "decoding architecture"},
		{"bad training JSON", edit(func(r *pb.FitRequest) { r.TrainingJson = []byte(`{"epochs":"ten"}`) }), "decoding training config"},
		{"bad config JSON", edit(func(r *pb.FitRequest) { r.ConfigJson = []byte(`[1`) }), "decoding config"},
		{"odd training bytes", edit(func(r *pb.FitRequest) { r.Train.X = r.Train.X[:7] }), "training set: float32 array of 7 bytes"},
		{"training set of the wrong shape", edit(func(r *pb.FitRequest) { r.Train.N = 3 }), "training set: 8 values for 3 rows of 4"},
		{"training labels", edit(func(r *pb.FitRequest) { r.Train.Y = []int64{1} }), "training set: 1 labels for 2 rows"},
		{"odd validation bytes", edit(func(r *pb.FitRequest) { r.Val.X = r.Val.X[:5] }), "validation set: float32 array of 5 bytes"},
		{"validation set of the wrong shape", edit(func(r *pb.FitRequest) { r.Val.Len = 3 }), "validation set: 4 values for 1 rows of 3"},
		{"negative replicate", edit(func(r *pb.FitRequest) { r.Replicate = -1 }), "bad request: replicate = -1 (accepted: 0 for the run without replicates"},
	}
	for _, c := range badRequests {
		called := false
		f := &fakePosterior{fit: func(context.Context, FitRequest) (Artifact, error) {
			called = true
			return art, nil
		}}
		stream := &fitStream{ctx: context.Background()}
		err := (&posteriorServer{impl: f, info: Info{ID: "posterior.ens"}, log: hclog.NewNullLogger()}).Fit(c.r, stream)
		wantStatus(t, c.name, err, codes.InvalidArgument, c.want)
		if called || len(stream.sent()) != 0 {
			t.Errorf("%s: the plugin ran (%v) or events were sent (%v)", c.name, called, stream.sent())
		}
	}

	failing := []struct {
		name string
		fit  func(ctx context.Context, req FitRequest) (Artifact, error)
		code codes.Code
		want string
	}{
		{"plugin error", func(context.Context, FitRequest) (Artifact, error) {
			return Artifact{}, errors.New("diverged at epoch 4")
		}, codes.Unknown, "diverged at epoch 4"},
		{"canceled", func(ctx context.Context, _ FitRequest) (Artifact, error) {
			return Artifact{}, fmt.Errorf("member 1: %w", context.Canceled)
		}, codes.Canceled, "member 1"},
		{"deadline", func(context.Context, FitRequest) (Artifact, error) {
			return Artifact{}, context.DeadlineExceeded
		}, codes.DeadlineExceeded, "deadline"},
		{"panic", func(context.Context, FitRequest) (Artifact, error) {
			panic("fit exploded")
		}, codes.Internal, "panic: fit exploded"},
		{"artifact that cannot be encoded", func(context.Context, FitRequest) (Artifact, error) {
			return nanArt, nil
		}, codes.Internal, "encoding architecture"},
	}
	for _, c := range failing {
		var leaked func(Progress)
		f := &fakePosterior{fit: func(ctx context.Context, req FitRequest) (Artifact, error) {
			leaked = req.Progress
			req.Progress(Progress{Done: 1, Total: 9})
			return c.fit(ctx, req)
		}}
		stream := &fitStream{ctx: context.Background()}
		r, _ := goodFitRequest(t)
		err := (&posteriorServer{impl: f, info: Info{ID: "posterior.ens"}, log: hclog.NewNullLogger()}).Fit(r, stream)
		wantStatus(t, c.name, err, c.code, c.want)
		leaked(Progress{Done: 2, Total: 9})
		ev := stream.sent()
		if len(ev) != 1 || ev[0].GetProgress().GetDone() != 1 {
			t.Errorf("%s: events %v, want the one progress report sent during Fit", c.name, ev)
		}
	}
}

func TestFitWithoutTrainingConfigOrSets(t *testing.T) {
	r, want := goodFitRequest(t)
	r.TrainingJson, r.Val, r.ConfigJson = nil, nil, nil
	want.Training, want.Val, want.Config = nn.TrainConfig{}, Dataset{}, nil
	var got FitRequest
	f := &fakePosterior{fit: func(_ context.Context, req FitRequest) (Artifact, error) {
		got = req
		return tinyArtifact(t), nil
	}}
	stream := &fitStream{ctx: context.Background()}
	if err := (&posteriorServer{impl: f, info: Info{ID: "posterior.ens"}, log: hclog.NewNullLogger()}).Fit(r, stream); err != nil {
		t.Fatal(err)
	}
	got.Progress = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fit got\n%+v\nwant\n%+v", got, want)
	}
}

// ---- Sample ----------------------------------------------------------------

func TestSample(t *testing.T) {
	ctx := context.Background()
	art := tinyArtifact(t)
	pa, err := encodeArtifact(art)
	if err != nil {
		t.Fatal(err)
	}
	var gotArt Artifact
	var gotReq SampleRequest
	f := &fakePosterior{sample: func(_ context.Context, a Artifact, req SampleRequest) ([]nn.Params, error) {
		gotArt, gotReq = a, req
		out := make([]nn.Params, len(req.Seeds))
		for i := range out {
			out[i] = tinyParams(t, float32(req.Seeds[i]))
		}
		out[0].Data[0] = float32(math.Copysign(0, -1))
		return out, nil
	}}
	s := &posteriorServer{impl: f, info: Info{ID: "posterior.ens"}, log: hclog.NewNullLogger()}
	seeds := []uint64{3, 1<<64 - 1, 7}
	resp, err := s.Sample(ctx, &pb.SampleRequest{Artifact: pa, Seeds: seeds, ConfigJson: mustConfig(t, map[string]any{"t": 0.5})})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotArt, art) {
		t.Errorf("Sample got artifact %+v, want %+v", gotArt, art)
	}
	if want := (SampleRequest{Seeds: seeds, Config: Config{"t": 0.5}}); !reflect.DeepEqual(gotReq, want) {
		t.Errorf("Sample got %+v, want %+v", gotReq, want)
	}
	if len(resp.GetDraws()) != len(seeds) {
		t.Fatalf("%d draws for %d seeds", len(resp.GetDraws()), len(seeds))
	}
	for i, d := range resp.GetDraws() {
		p, err := wire.DecodeParams(d)
		if err != nil {
			t.Fatal(err)
		}
		want := tinyParams(t, float32(seeds[i]))
		if i == 0 {
			want.Data[0] = float32(math.Copysign(0, -1))
		}
		if !reflect.DeepEqual(p.Arch, want.Arch) || len(p.Data) != len(want.Data) {
			t.Fatalf("draw %d: %+v, want %+v", i, p, want)
		}
		for j := range p.Data {
			if math.Float32bits(p.Data[j]) != math.Float32bits(want.Data[j]) {
				t.Errorf("draw %d value %d: %v, want %v", i, j, p.Data[j], want.Data[j])
			}
		}
	}
}

func TestSampleErrors(t *testing.T) {
	ctx := context.Background()
	pa, err := encodeArtifact(tinyArtifact(t))
	if err != nil {
		t.Fatal(err)
	}
	nan := tinyParams(t, 1)
	nan.Arch.Layers = append([]nn.Layer{{Kind: nn.KindDropout, P: math.Inf(1)}}, nan.Arch.Layers...)
	for _, c := range []struct {
		name   string
		r      *pb.SampleRequest
		sample func(context.Context, Artifact, SampleRequest) ([]nn.Params, error)
		code   codes.Code
		want   string
	}{
		{"no artifact", &pb.SampleRequest{Seeds: []uint64{1}}, nil, codes.InvalidArgument, "missing artifact"},
		{"bad artifact", &pb.SampleRequest{Artifact: &pb.Artifact{ArchJson: []byte("{")}, Seeds: []uint64{1}}, nil, codes.InvalidArgument, "artifact: decoding architecture"},
		{"bad config", &pb.SampleRequest{Artifact: pa, Seeds: []uint64{1}, ConfigJson: []byte("{")}, nil, codes.InvalidArgument, "decoding config"},
		{"plugin error", &pb.SampleRequest{Artifact: pa, Seeds: []uint64{1}}, func(context.Context, Artifact, SampleRequest) ([]nn.Params, error) {
			return nil, errors.New("no such member")
		}, codes.Unknown, "no such member"},
		{"canceled", &pb.SampleRequest{Artifact: pa, Seeds: []uint64{1}}, func(context.Context, Artifact, SampleRequest) ([]nn.Params, error) {
			return nil, context.Canceled
		}, codes.Canceled, "canceled"},
		{"panic", &pb.SampleRequest{Artifact: pa, Seeds: []uint64{1}}, func(context.Context, Artifact, SampleRequest) ([]nn.Params, error) {
			panic("sample exploded")
		}, codes.Internal, "panic: sample exploded"},
		{"draw that cannot be encoded", &pb.SampleRequest{Artifact: pa, Seeds: []uint64{1, 2}}, func(context.Context, Artifact, SampleRequest) ([]nn.Params, error) {
			return []nn.Params{tinyParams(t, 1), nan}, nil
		}, codes.Internal, "draw 1: encoding architecture"},
	} {
		called := false
		f := &fakePosterior{sample: func(ctx context.Context, a Artifact, req SampleRequest) ([]nn.Params, error) {
			called = true
			return c.sample(ctx, a, req)
		}}
		resp, err := (&posteriorServer{impl: f, info: Info{ID: "posterior.ens"}, log: hclog.NewNullLogger()}).Sample(ctx, c.r)
		wantStatus(t, c.name, err, c.code, c.want)
		if resp != nil {
			t.Errorf("%s: an answer %v with the error", c.name, resp)
		}
		if c.sample == nil && called {
			t.Errorf("%s: the plugin ran on a bad request", c.name)
		}
	}
}

// ---- Load, Release, Explain ------------------------------------------------

// tinyExplainer returns, for input b, the closed-form-comparable map
// p_{target_b}(x_b) * (t+1) + seed_b at t, computed with the model it gets.
func tinyExplainer(info Info) *fakeExplainer {
	f := &fakeExplainer{info: info}
	f.explain = func(_ context.Context, m nn.Model, req ExplainRequest) ([][]float64, error) {
		n, k := m.InputLen(), m.Classes()
		probs := make([]float32, len(req.Targets)*k)
		if err := m.Probs(context.Background(), probs, req.X); err != nil {
			return nil, err
		}
		out := make([][]float64, len(req.Targets))
		for b, tg := range req.Targets {
			out[b] = make([]float64, n)
			for t := range n {
				out[b][t] = float64(probs[b*k+tg]) * float64(t+1)
				if req.Seeds != nil {
					out[b][t] += float64(req.Seeds[b])
				}
			}
		}
		return out, nil
	}
	return f
}

func newExplainerServer(impl Explainer) *explainerServer {
	return &explainerServer{impl: impl, info: impl.Info(), log: hclog.NewNullLogger(), models: map[uint64]nn.Model{}}
}

func TestLoadExplainRelease(t *testing.T) {
	ctx := context.Background()
	f := tinyExplainer(Info{ID: "explainer.tiny"})
	var gotReq ExplainRequest
	var gotModel nn.Model
	inner := f.explain
	f.explain = func(ctx context.Context, m nn.Model, req ExplainRequest) ([][]float64, error) {
		gotReq, gotModel = req, m
		return inner(ctx, m, req)
	}
	s := newExplainerServer(f)

	params := []nn.Params{tinyParams(t, 1), tinyParams(t, -3)}
	var handles []uint64
	for _, p := range params {
		r, err := s.Load(ctx, &pb.LoadRequest{Model: mustParams(t, p)})
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, r.GetHandle())
	}
	if handles[0] == 0 || handles[1] <= handles[0] {
		t.Fatalf("handles %v, want distinct increasing handles from 1", handles)
	}

	x := []float32{0.5, -1, 2, 0.25, 1, 1, -0.5, 3}
	targets := []int{2, 0}
	for i, h := range handles {
		resp, err := s.Explain(ctx, &pb.ExplainRequest{Model: h, X: wire.Float32Bytes(x), Targets: wire.Int64s(targets), ConfigJson: mustConfig(t, map[string]any{"w": int64(2)})})
		if err != nil {
			t.Fatal(err)
		}
		if pm, ok := gotModel.(interface{ Params() nn.Params }); !ok || !reflect.DeepEqual(pm.Params(), params[i]) {
			t.Errorf("handle %d: the explainer got another model than the one loaded as %d", h, h)
		}
		if want := (ExplainRequest{X: x, Targets: targets, Config: Config{"w": 2.0}}); !reflect.DeepEqual(gotReq, want) {
			t.Errorf("handle %d: the explainer got %+v, want %+v", h, gotReq, want)
		}
		if len(resp.GetMaps()) != len(targets) {
			t.Fatalf("handle %d: %d maps for %d inputs", h, len(resp.GetMaps()), len(targets))
		}
		for b, raw := range resp.GetMaps() {
			mp, err := wire.Float64s(raw)
			if err != nil || len(mp) != 4 {
				t.Fatalf("handle %d map %d: %v, %v", h, b, mp, err)
			}
			p := tinyProbs(params[i], x[b*4:(b+1)*4])[targets[b]]
			for j, v := range mp {
				if w := p * float64(j+1); math.Abs(v-w) > 1e-5 {
					t.Errorf("handle %d map %d[%d] = %v, want p_%d(x) * %d = %v", h, b, j, v, targets[b], j+1, w)
				}
			}
		}
	}

	// Seeds reach the plugin and the maps come back bit for bit.
	seeds := []uint64{1 << 40, 3}
	resp, err := s.Explain(ctx, &pb.ExplainRequest{Model: handles[1], X: wire.Float32Bytes(x), Targets: wire.Int64s(targets), Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotReq.Seeds, seeds) || gotReq.Config != nil {
		t.Errorf("the explainer got seeds %v and config %v, want %v and none", gotReq.Seeds, gotReq.Config, seeds)
	}
	want, _ := inner(ctx, gotModel, gotReq)
	for b, raw := range resp.GetMaps() {
		if mp, _ := wire.Float64s(raw); !sameBits(mp, want[b]) {
			t.Errorf("map %d came back as %v, want %v bit for bit", b, mp, want[b])
		}
	}

	// Release forgets handle 0 only.
	if _, err := s.Release(ctx, &pb.ReleaseRequest{Handle: handles[0]}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Explain(ctx, &pb.ExplainRequest{Model: handles[0], X: wire.Float32Bytes(x), Targets: wire.Int64s(targets)})
	wantStatus(t, "Explain of a released handle", err, codes.NotFound, fmt.Sprintf("no model with handle %d is loaded", handles[0]))
	_, err = s.Release(ctx, &pb.ReleaseRequest{Handle: handles[0]})
	wantStatus(t, "a second Release", err, codes.NotFound, fmt.Sprintf("handle %d", handles[0]))
	if _, err := s.Explain(ctx, &pb.ExplainRequest{Model: handles[1], X: wire.Float32Bytes(x), Targets: wire.Int64s(targets)}); err != nil {
		t.Errorf("Explain of the handle still loaded: %v", err)
	}

	// A third Load does not reuse a released handle.
	r, err := s.Load(ctx, &pb.LoadRequest{Model: mustParams(t, params[0])})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetHandle() <= handles[1] {
		t.Errorf("third handle %d, want one above %v", r.GetHandle(), handles)
	}
	_, err = s.Explain(ctx, &pb.ExplainRequest{Model: 0, X: wire.Float32Bytes(x), Targets: wire.Int64s(targets)})
	wantStatus(t, "Explain of handle 0", err, codes.NotFound, "Load it first")
	_, err = s.Release(ctx, &pb.ReleaseRequest{Handle: 12345})
	wantStatus(t, "Release of an unknown handle", err, codes.NotFound, "12345")
}

func TestLoadErrors(t *testing.T) {
	ctx := context.Background()
	s := newExplainerServer(tinyExplainer(Info{ID: "explainer.tiny"}))
	short := tinyParams(t, 1)
	short.Data = short.Data[:5]
	nonFinite := tinyParams(t, 1)
	nonFinite.Data[2] = float32(math.Inf(-1))
	badArch := tinyParams(t, 1)
	badArch.Arch.InLen = 0
	for _, c := range []struct {
		name string
		r    *pb.LoadRequest
		want string
	}{
		{"no model", &pb.LoadRequest{}, "missing model parameters"},
		{"unknown arch field", &pb.LoadRequest{Model: &pb.Params{ArchJson: []byte(`{"name":"t","inlen":4}`)}}, "inlen"},
		{"odd data", &pb.LoadRequest{Model: &pb.Params{ArchJson: mustArch(t, tinyArch()), Data: make([]byte, 6)}}, "parameters: float32 array of 6 bytes"},
		{"short vector", &pb.LoadRequest{Model: mustParams(t, short)}, "building the model: "},
		{"non-finite value", &pb.LoadRequest{Model: mustParams(t, nonFinite)}, "building the model: "},
		{"invalid arch", &pb.LoadRequest{Model: mustParams(t, badArch)}, "building the model: "},
	} {
		resp, err := s.Load(ctx, c.r)
		wantStatus(t, c.name, err, codes.InvalidArgument, c.want)
		if resp != nil {
			t.Errorf("%s: answer %v", c.name, resp)
		}
	}
	if len(s.models) != 0 {
		t.Errorf("failed Loads left %d models", len(s.models))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	resp, err := s.Load(cancelled, &pb.LoadRequest{Model: mustParams(t, tinyParams(t, 1))})
	wantStatus(t, "cancelled", err, codes.Canceled, "context canceled")
	if resp != nil || len(s.models) != 0 {
		t.Errorf("a Load whose host gave up kept a model (%d) or answered %v", len(s.models), resp)
	}
	r, err := s.Load(ctx, &pb.LoadRequest{Model: mustParams(t, tinyParams(t, 1))})
	if err != nil || r.GetHandle() != 1 {
		t.Errorf("the first good Load after failed ones: handle %d, %v; want 1", r.GetHandle(), err)
	}
}

func TestExplainRefusesBadBatchesBeforeThePluginRuns(t *testing.T) {
	ctx := context.Background()
	x := wire.Float32Bytes([]float32{1, 2, 3, 4, 5, 6, 7, 8})
	for _, stochastic := range []bool{false, true} {
		f := tinyExplainer(Info{ID: "explainer.tiny", Stochastic: stochastic})
		s := newExplainerServer(f)
		r, err := s.Load(ctx, &pb.LoadRequest{Model: mustParams(t, tinyParams(t, 1))})
		if err != nil {
			t.Fatal(err)
		}
		h := r.GetHandle()
		bad := []struct {
			name string
			r    *pb.ExplainRequest
			want string
		}{
			{"odd x bytes", &pb.ExplainRequest{Model: h, X: x[:30], Targets: []int64{0, 1}, Seeds: []uint64{1, 2}}, "x: float32 array of 30 bytes"},
			{"x of the wrong length", &pb.ExplainRequest{Model: h, X: x[:28], Targets: []int64{0, 1}, Seeds: []uint64{1, 2}}, "x has 7 values, want 8"},
			{"no targets", &pb.ExplainRequest{Model: h, X: x, Seeds: []uint64{1, 2}}, "empty batch"},
			{"target past the classes", &pb.ExplainRequest{Model: h, X: x, Targets: []int64{0, 3}, Seeds: []uint64{1, 2}}, "input 1: target class 3 out of range 0..2"},
			{"negative target", &pb.ExplainRequest{Model: h, X: x, Targets: []int64{-1, 0}, Seeds: []uint64{1, 2}}, "input 0: target class -1"},
			{"one seed for two inputs", &pb.ExplainRequest{Model: h, X: x, Targets: []int64{0, 1}, Seeds: []uint64{1}}, "1 seeds for 2 inputs"},
			{"bad config", &pb.ExplainRequest{Model: h, X: x, Targets: []int64{0, 1}, Seeds: []uint64{1, 2}, ConfigJson: []byte(`{"a"}`)}, "decoding config"},
		}
		if stochastic {
			bad = append(bad, struct {
				name string
				r    *pb.ExplainRequest
				want string
			}{"no seeds for a stochastic explainer", &pb.ExplainRequest{Model: h, X: x, Targets: []int64{0, 1}}, "stochastic explainer needs one seed per input"})
		}
		for _, c := range bad {
			resp, err := s.Explain(ctx, c.r)
			wantStatus(t, fmt.Sprintf("%s (stochastic %v)", c.name, stochastic), err, codes.InvalidArgument, c.want)
			if resp != nil {
				t.Errorf("%s: answer %v", c.name, resp)
			}
		}
		if n := f.calls.Load(); n != 0 {
			t.Errorf("stochastic %v: the plugin ran %d times on bad batches", stochastic, n)
		}
		// The same batch, well formed, does reach it.
		if _, err := s.Explain(ctx, &pb.ExplainRequest{Model: h, X: x, Targets: []int64{0, 2}, Seeds: []uint64{1, 2}}); err != nil {
			t.Errorf("stochastic %v: a good batch: %v", stochastic, err)
		}
		_, err = s.Explain(ctx, &pb.ExplainRequest{Model: h, X: x, Targets: []int64{0, 2}})
		if stochastic {
			wantStatus(t, "no seeds", err, codes.InvalidArgument, "stochastic")
		} else if err != nil {
			t.Errorf("a deterministic explainer without seeds: %v", err)
		}
	}
}

func TestExplainPluginFailures(t *testing.T) {
	ctx := context.Background()
	x := wire.Float32Bytes([]float32{1, 2, 3, 4})
	for _, c := range []struct {
		name    string
		explain func(context.Context, nn.Model, ExplainRequest) ([][]float64, error)
		code    codes.Code
		want    string
	}{
		{"plugin error", func(context.Context, nn.Model, ExplainRequest) ([][]float64, error) {
			return nil, errors.New("no layer conv9")
		}, codes.Unknown, "no layer conv9"},
		{"deadline", func(context.Context, nn.Model, ExplainRequest) ([][]float64, error) {
			return nil, fmt.Errorf("sample 3: %w", context.DeadlineExceeded)
		}, codes.DeadlineExceeded, "sample 3"},
		{"canceled", func(context.Context, nn.Model, ExplainRequest) ([][]float64, error) {
			return nil, context.Canceled
		}, codes.Canceled, "canceled"},
		{"panic", func(context.Context, nn.Model, ExplainRequest) ([][]float64, error) {
			var m []float64
			_ = m[3]
			return nil, nil
		}, codes.Internal, "panic: runtime error: index out of range"},
	} {
		f := &fakeExplainer{info: Info{ID: "explainer.x"}, explain: c.explain}
		s := newExplainerServer(f)
		r, err := s.Load(ctx, &pb.LoadRequest{Model: mustParams(t, tinyParams(t, 1))})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := s.Explain(ctx, &pb.ExplainRequest{Model: r.GetHandle(), X: x, Targets: []int64{1}})
		wantStatus(t, c.name, err, c.code, c.want)
		if resp != nil {
			t.Errorf("%s: answer %v", c.name, resp)
		}
		// The model stays loaded after a failure.
		if _, err := s.Release(ctx, &pb.ReleaseRequest{Handle: r.GetHandle()}); err != nil {
			t.Errorf("%s: Release after the failure: %v", c.name, err)
		}
	}
}

// ---- Summarise -------------------------------------------------------------

// drawsMsg encodes an S x N input.
func drawsMsg(rows [][]float64) *pb.Draws {
	var flat []float64
	for _, r := range rows {
		flat = append(flat, r...)
	}
	n := 0
	if len(rows) > 0 {
		n = len(rows[0])
	}
	return &pb.Draws{S: int64(len(rows)), N: int64(n), Data: wire.Float64Bytes(flat)}
}

// meanBand is a summary: the mean as Map, its sign as Set, and the
// elementwise min and max as the band.
func meanBand(_ context.Context, draws [][][]float64, _ Config) ([]Result, error) {
	out := make([]Result, len(draws))
	for i, d := range draws {
		n := len(d[0])
		r := Result{Map: make([]float64, n), Set: make([]bool, n), Lower: append([]float64(nil), d[0]...), Upper: append([]float64(nil), d[0]...)}
		for _, row := range d {
			for j, v := range row {
				r.Map[j] += v / float64(len(d))
				r.Lower[j] = math.Min(r.Lower[j], v)
				r.Upper[j] = math.Max(r.Upper[j], v)
			}
		}
		for j := range r.Set {
			r.Set[j] = r.Map[j] > 0
		}
		out[i] = r
	}
	return out, nil
}

func TestSummarise(t *testing.T) {
	ctx := context.Background()
	in := [][][]float64{
		{{1, -2, 4}, {3, -6, 0}},
		{{0.5, 8}, {-0.5, 8}, {3.5, -1}, {0.5, 1}},
	}
	want := []Result{
		{Map: []float64{2, -4, 2}, Set: []bool{true, false, true}, Lower: []float64{1, -6, 0}, Upper: []float64{3, -2, 4}},
		{Map: []float64{1, 4}, Set: []bool{true, true}, Lower: []float64{-0.5, -1}, Upper: []float64{3.5, 8}},
	}
	var gotDraws [][][]float64
	var gotCfg Config
	f := &fakeSummary{summarise: func(ctx context.Context, draws [][][]float64, cfg Config) ([]Result, error) {
		gotDraws, gotCfg = draws, cfg
		return meanBand(ctx, draws, cfg)
	}}
	s := &summaryServer{impl: f, info: Info{ID: "summary.mean", Output: OutputBand, MinDraws: 2}, log: hclog.NewNullLogger()}
	resp, err := s.Summarise(ctx, &pb.SummariseRequest{Inputs: []*pb.Draws{drawsMsg(in[0]), drawsMsg(in[1])}, ConfigJson: mustConfig(t, map[string]any{"q": 0.9})})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotDraws, in) || !reflect.DeepEqual(gotCfg, Config{"q": 0.9}) {
		t.Errorf("the summary got %v, %v; want %v, q = 0.9", gotDraws, gotCfg, in)
	}
	if len(resp.GetResults()) != len(want) {
		t.Fatalf("%d results for %d inputs", len(resp.GetResults()), len(want))
	}
	for i, r := range resp.GetResults() {
		m, _ := wire.Float64s(r.GetMap())
		lo, _ := wire.Float64s(r.GetLower())
		hi, _ := wire.Float64s(r.GetUpper())
		got := Result{Map: m, Set: r.GetSet(), Lower: lo, Upper: hi}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("result %d: %+v, want %+v", i, got, want[i])
		}
	}
}

func TestSummariseRefusesBadDrawsBeforeThePluginRuns(t *testing.T) {
	ctx := context.Background()
	good := drawsMsg([][]float64{{1, 2}, {3, 4}})
	for _, c := range []struct {
		name string
		r    *pb.SummariseRequest
		want string
	}{
		{"no inputs", &pb.SummariseRequest{}, "empty batch"},
		{"S x N does not match the data", &pb.SummariseRequest{Inputs: []*pb.Draws{good, {S: 2, N: 3, Data: good.Data}}}, "input 1: 32 bytes do not hold 2 x 3"},
		{"odd data", &pb.SummariseRequest{Inputs: []*pb.Draws{{S: 1, N: 1, Data: make([]byte, 7)}}}, "input 0: 7 bytes"},
		{"fewer draws than MinDraws", &pb.SummariseRequest{Inputs: []*pb.Draws{good, drawsMsg([][]float64{{1, 2}})}}, "input 1 has 1 draws; the summary needs at least 2"},
		{"no draws", &pb.SummariseRequest{Inputs: []*pb.Draws{{}}}, "input 0 has no draws"},
		{"empty draws", &pb.SummariseRequest{Inputs: []*pb.Draws{{S: 2, N: 0}}}, "input 0: draw 0 is empty"},
		{"bad config", &pb.SummariseRequest{Inputs: []*pb.Draws{good}, ConfigJson: []byte("nul")}, "decoding config"},
	} {
		f := &fakeSummary{summarise: meanBand}
		s := &summaryServer{impl: f, info: Info{ID: "summary.var", Output: OutputMap, MinDraws: 2}, log: hclog.NewNullLogger()}
		resp, err := s.Summarise(ctx, c.r)
		wantStatus(t, c.name, err, codes.InvalidArgument, c.want)
		if resp != nil || f.calls.Load() != 0 {
			t.Errorf("%s: answer %v, %d plugin calls", c.name, resp, f.calls.Load())
		}
	}

	for _, c := range []struct {
		name      string
		summarise func(context.Context, [][][]float64, Config) ([]Result, error)
		code      codes.Code
		want      string
	}{
		{"plugin error", func(context.Context, [][][]float64, Config) ([]Result, error) {
			return nil, errors.New("quantile 1.5")
		}, codes.Unknown, "quantile 1.5"},
		{"canceled", func(context.Context, [][][]float64, Config) ([]Result, error) {
			return nil, fmt.Errorf("input 3: %w", context.Canceled)
		}, codes.Canceled, "input 3"},
		{"panic", func(context.Context, [][][]float64, Config) ([]Result, error) {
			panic(errors.New("summary exploded"))
		}, codes.Internal, "panic: summary exploded"},
	} {
		s := &summaryServer{impl: &fakeSummary{summarise: c.summarise}, info: Info{ID: "summary.var", Output: OutputMap}, log: hclog.NewNullLogger()}
		resp, err := s.Summarise(ctx, &pb.SummariseRequest{Inputs: []*pb.Draws{good}})
		wantStatus(t, c.name, err, c.code, c.want)
		if resp != nil {
			t.Errorf("%s: answer %v", c.name, resp)
		}
	}
}

func TestEncodeResultKeepsBits(t *testing.T) {
	odd := []float64{math.Copysign(0, -1), math.Float64frombits(0x7ff8000000000abc), math.Inf(-1), math.SmallestNonzeroFloat64, -1e300}
	for _, r := range []Result{
		{Map: odd},
		{Set: []bool{true, false, false, true}},
		{Lower: odd[:2], Upper: odd[2:]},
		{},
	} {
		e := encodeResult(r)
		m, err1 := wire.Float64s(e.GetMap())
		lo, err2 := wire.Float64s(e.GetLower())
		hi, err3 := wire.Float64s(e.GetUpper())
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		if !sameBits(m, r.Map) || !sameBits(lo, r.Lower) || !sameBits(hi, r.Upper) || !reflect.DeepEqual(e.GetSet(), r.Set) {
			t.Errorf("encodeResult(%+v) decodes to map %v set %v band %v..%v", r, m, e.GetSet(), lo, hi)
		}
	}
}

// ---- decoders --------------------------------------------------------------

func TestDecodeConfig(t *testing.T) {
	if c, err := decodeConfig(nil); c != nil || err != nil {
		t.Errorf("no config decodes to %#v, %v; want nil", c, err)
	}
	if c, err := decodeConfig([]byte("{}")); c == nil || len(c) != 0 || err != nil {
		t.Errorf("an empty table decodes to %#v, %v; want an empty Config", c, err)
	}
	c, err := decodeConfig([]byte(`{"a":1,"b":[true,"x"],"t":{"u":2.5}}`))
	if want := (Config{"a": 1.0, "b": []any{true, "x"}, "t": map[string]any{"u": 2.5}}); err != nil || !reflect.DeepEqual(c, want) {
		t.Errorf("decodeConfig: %#v, %v; want %#v", c, err, want)
	}
	for _, bad := range []string{"{", `{"a":}`, "[1]", `"x"`} {
		if c, err := decodeConfig([]byte(bad)); err == nil || c != nil {
			t.Errorf("decodeConfig(%s) = %#v, %v; want an error", bad, c, err)
		}
	}
}

func TestDecodeDataset(t *testing.T) {
	if d, err := decodeDataset("training", nil); err != nil || !reflect.DeepEqual(d, Dataset{}) {
		t.Errorf("no set: %+v, %v", d, err)
	}
	x := []float32{1, 2, 3, 4, 5, 6}
	d, err := decodeDataset("training", &pb.Dataset{X: wire.Float32Bytes(x), Y: []int64{4, 0, 9}, N: 3, Len: 2})
	if want := (Dataset{X: x, Y: []int{4, 0, 9}, N: 3, Len: 2}); err != nil || !reflect.DeepEqual(d, want) {
		t.Errorf("decodeDataset: %+v, %v; want %+v", d, err, want)
	}
	d, err = decodeDataset("validation", &pb.Dataset{X: wire.Float32Bytes(x), N: 2, Len: 3})
	if want := (Dataset{X: x, N: 2, Len: 3}); err != nil || !reflect.DeepEqual(d, want) {
		t.Errorf("an unlabelled set: %+v, %v; want %+v", d, err, want)
	}
	for _, c := range []struct {
		d    *pb.Dataset
		want string
	}{
		{&pb.Dataset{X: make([]byte, 10), N: 1, Len: 2}, "validation set: float32 array of 10 bytes"},
		{&pb.Dataset{X: wire.Float32Bytes(x), N: 2, Len: 2}, "validation set: 6 values for 2 rows of 2"},
		{&pb.Dataset{X: wire.Float32Bytes(x), N: -3, Len: -2}, "validation set: 6 values for -3 rows of -2"},
		{&pb.Dataset{X: wire.Float32Bytes(x), Y: []int64{1, 2}, N: 3, Len: 2}, "validation set: 2 labels for 3 rows"},
	} {
		if _, err := decodeDataset("validation", c.d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("decodeDataset(%v): %v, want an error holding %q", c.d, err, c.want)
		}
	}
}

func TestDecodeArtifactAndFitRequest(t *testing.T) {
	if _, err := decodeArtifact(nil); err == nil || !strings.Contains(err.Error(), "missing artifact") {
		t.Errorf("nil artifact: %v", err)
	}
	if _, err := decodeArtifact(&pb.Artifact{ArchJson: []byte(`{"name":"t","extra":1}`)}); err == nil || !strings.Contains(err.Error(), "extra") {
		t.Errorf("unknown arch field: %v", err)
	}
	pa, err := encodeArtifact(tinyArtifact(t))
	if err != nil {
		t.Fatal(err)
	}
	pa.Tensors["member1"] = pa.Tensors["member1"][:9]
	if _, err := decodeArtifact(pa); err == nil || !strings.Contains(err.Error(), `tensor "member1"`) {
		t.Errorf("odd tensor bytes: %v", err)
	}

	r, want := goodFitRequest(t)
	got, err := decodeFitRequest(r)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("decodeFitRequest: %+v, %v; want %+v", got, err, want)
	}
	r.TrainingJson = []byte(`{"epochs":1,"bogus":2}`)
	if _, err = decodeFitRequest(r); err == nil || !strings.Contains(err.Error(), `unknown field "bogus"`) {
		t.Errorf("training config with an unknown key: %v, want it refused and named", err)
	}
	r.TrainingJson = []byte(`{"epochs":1.5}`)
	if _, err := decodeFitRequest(r); err == nil || !strings.Contains(err.Error(), "decoding training config") {
		t.Errorf("fractional epochs: %v", err)
	}
}

func TestDecodeDraws(t *testing.T) {
	rows := [][]float64{{1, 2, 3}, {4, 5, 6}}
	got, err := decodeDraws([]*pb.Draws{drawsMsg(rows), drawsMsg(rows[:1])})
	if want := [][][]float64{rows, rows[:1]}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("decodeDraws: %v, %v; want %v", got, err, want)
	}
	if got, err := decodeDraws(nil); err != nil || len(got) != 0 {
		t.Errorf("no inputs: %v, %v", got, err)
	}
	for _, c := range []struct {
		d    *pb.Draws
		want string
	}{
		{&pb.Draws{S: 4, N: 2, Data: drawsMsg(rows).Data}, "input 1: 48 bytes do not hold 4 x 2"},
		{&pb.Draws{S: -2, N: -3, Data: drawsMsg(rows).Data}, "input 1: 48 bytes do not hold -2 x -3"},
		{&pb.Draws{S: 1, N: 1}, "input 1: 0 bytes do not hold 1 x 1"},
	} {
		if got, err := decodeDraws([]*pb.Draws{drawsMsg(rows), c.d}); err == nil || got != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("decodeDraws(%v): %v, %v; want an error holding %q", c.d, got, err, c.want)
		}
	}
}

// ---- serveConfig, servedPlugin, Serve --------------------------------------

func TestServeConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Plugin
		want string
	}{
		{"not a plugin kind", stubNone{Info{ID: "explainer.none", Version: "1"}}, "is not a plugin"},
		{"wrong namespace", stubExplainer{Info{ID: "summary.oops", Version: "1"}}, "namespaced summary"},
		{"two kinds", stubBoth{stubExplainer{Info{ID: "explainer.both", Version: "1"}}}, "implements 2 plugin kinds"},
	} {
		cfg, err := serveConfig(c.p)
		if err == nil || cfg != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, %v; want an error holding %q", c.name, cfg, err, c.want)
		}
	}

	p := stubSummary{Info{ID: "summary.mean", Version: "1", Output: OutputMap}}
	cfg, err := serveConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HandshakeConfig != proto.Handshake() {
		t.Errorf("handshake %+v, want %+v", cfg.HandshakeConfig, proto.Handshake())
	}
	if cfg.Logger == nil || cfg.Logger.Name() != "summary.mean" {
		t.Errorf("logger %v, want one named after the plugin", cfg.Logger)
	}
	if len(cfg.Plugins) != 1 {
		t.Fatalf("plugins %v, want the summary alone", cfg.Plugins)
	}
	sp, ok := cfg.Plugins["summary"].(*servedPlugin)
	if !ok || sp.kind != KindSummary || !reflect.DeepEqual(sp.info, p.info) || !reflect.DeepEqual(sp.impl, Plugin(p)) {
		t.Fatalf("plugins %+v, want the summary served as kind summary", cfg.Plugins)
	}
	if cfg.GRPCServer == nil {
		t.Fatal("no gRPC server constructor")
	}
	srv := cfg.GRPCServer(nil)
	if srv == nil {
		t.Fatal("the gRPC server constructor gave nil")
	}
	srv.Stop()

	// The hook sdktest and the driver use is serveConfig behind a type check.
	if _, err := proto.ServeConfig(42); err == nil || !strings.Contains(err.Error(), "int is not a plugin") {
		t.Errorf("proto.ServeConfig(42): %v", err)
	}
	if c, err := proto.ServeConfig(p); err != nil || c.Plugins["summary"] == nil {
		t.Errorf("proto.ServeConfig of a summary: %v, %v", c, err)
	}
	if _, err := proto.ServeConfig(stubExplainer{Info{ID: "summary.oops", Version: "1"}}); err == nil {
		t.Error("proto.ServeConfig accepted a plugin Describe rejects")
	}
}

// TestServedServerTakesLargeMessages sends a summary request and gets an
// answer of about 5 MB each, past gRPC's default 4 MB limit, through the
// server that serveConfig's constructor builds.
func TestServedServerTakesLargeMessages(t *testing.T) {
	f := &fakeSummary{info: Info{ID: "summary.first", Version: "1", Output: OutputMap}, summarise: func(_ context.Context, draws [][][]float64, _ Config) ([]Result, error) {
		return []Result{{Map: draws[0][0]}}, nil
	}}
	cfg, err := serveConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	srv := cfg.GRPCServer(nil)
	if err := cfg.Plugins["summary"].(goplugin.GRPCPlugin).GRPCServer(nil, srv); err != nil {
		t.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///plugin",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(proto.MaxMessageSize), grpc.MaxCallSendMsgSize(proto.MaxMessageSize)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	const n = 5 << 17 // 5 MB of float64
	row := make([]float64, n)
	for i := range row {
		row[i] = float64(i) - 0.5
	}
	resp, err := pb.NewSummaryClient(conn).Summarise(context.Background(), &pb.SummariseRequest{Inputs: []*pb.Draws{drawsMsg([][]float64{row})}})
	if err != nil {
		t.Fatalf("a 5 MB request: %v", err)
	}
	if len(resp.GetResults()) != 1 {
		t.Fatalf("%d results", len(resp.GetResults()))
	}
	if m, _ := wire.Float64s(resp.GetResults()[0].GetMap()); !sameBits(m, row) {
		t.Errorf("the 5 MB map did not come back whole (%d values)", len(m))
	}

	// The same request is past the limit of a server built without the
	// constructor's options, so the test above does test them.
	plain := grpc.NewServer()
	if err := cfg.Plugins["summary"].(goplugin.GRPCPlugin).GRPCServer(nil, plain); err != nil {
		t.Fatal(err)
	}
	plis := bufconn.Listen(1 << 20)
	go func() { _ = plain.Serve(plis) }()
	defer plain.Stop()
	pconn, err := grpc.NewClient("passthrough:///plain",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return plis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(proto.MaxMessageSize), grpc.MaxCallSendMsgSize(proto.MaxMessageSize)))
	if err != nil {
		t.Fatal(err)
	}
	defer pconn.Close()
	_, err = pb.NewSummaryClient(pconn).Summarise(context.Background(), &pb.SummariseRequest{Inputs: []*pb.Draws{drawsMsg([][]float64{row})}})
	wantStatus(t, "a 5 MB request to a default server", err, codes.ResourceExhausted)
}

func TestServedPluginRegistersItsKind(t *testing.T) {
	null := hclog.NewNullLogger()
	for _, c := range []struct {
		kind Kind
		impl Plugin
		svc  string
	}{
		{KindPosterior, &fakePosterior{}, "uaxai.v2.Posterior"},
		{KindExplainer, &fakeExplainer{}, "uaxai.v2.Explainer"},
		{KindSummary, &fakeSummary{}, "uaxai.v2.Summary"},
	} {
		srv := grpc.NewServer()
		if err := (&servedPlugin{kind: c.kind, impl: c.impl, log: null}).GRPCServer(nil, srv); err != nil {
			t.Errorf("%s: %v", c.kind, err)
		}
		var names []string
		for name := range srv.GetServiceInfo() {
			names = append(names, name)
		}
		if len(names) != 1 || names[0] != c.svc {
			t.Errorf("%s: services %v, want %s alone", c.kind, names, c.svc)
		}
	}
	srv := grpc.NewServer()
	if err := (&servedPlugin{kind: "oracle", impl: &fakeSummary{}, log: null}).GRPCServer(nil, srv); err == nil || !strings.Contains(err.Error(), `unknown plugin kind "oracle"`) {
		t.Errorf("unknown kind: %v", err)
	}
	if len(srv.GetServiceInfo()) != 0 {
		t.Errorf("an unknown kind registered %v", srv.GetServiceInfo())
	}
	c, err := (&servedPlugin{kind: KindSummary}).GRPCClient(context.Background(), nil, nil)
	if err == nil || c != nil || !strings.Contains(err.Error(), "sdk/driver") {
		t.Errorf("GRPCClient: %v, %v; want an error pointing to sdk/driver", c, err)
	}
}

// TestServeExits runs Serve in a child process: a value Describe rejects,
// and a good plugin run by hand (without the host's cookie), both print a
// note to stderr and exit with status 1.
func TestServeExits(t *testing.T) {
	switch os.Getenv("UAXAI_SDK_SERVE_TEST") {
	case "bad":
		Serve(stubExplainer{Info{ID: "summary.oops", Version: "1"}})
		os.Exit(0)
	case "by-hand":
		Serve(stubExplainer{Info{ID: "explainer.ok", Version: "1"}})
		os.Exit(0)
	}
	for _, c := range []struct {
		mode string
		want string
	}{
		{"bad", "uaxai plugin: sdk.stubExplainer: it is a plugin of kind explainer but its ID \"summary.oops\""},
		{"by-hand", "This binary is a plugin"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestServeExits$", "-test.count=1")
		var env []string
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, proto.MagicCookieKey+"=") {
				env = append(env, e)
			}
		}
		cmd.Env = append(env, "UAXAI_SDK_SERVE_TEST="+c.mode)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%s: Serve ended with %v, want exit status 1 (stderr %q)", c.mode, err, stderr.String())
		}
		if !strings.Contains(stderr.String()+stdout.String(), c.want) {
			t.Errorf("%s: output %q %q does not hold %q", c.mode, stdout.String(), stderr.String(), c.want)
		}
	}
}
