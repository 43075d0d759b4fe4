package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/proto"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// The plugin side of the model service (servicemodel.go), through the
// protocol: an explainer served over gRPC gets the host's model and
// compares every answer with the same network in its own process.

func probeArch() nn.Arch {
	return nn.Arch{Name: "probe", InChannels: 2, InLen: 20, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 3, Kernel: 3}, {Kind: nn.KindReLU},
		{Kind: nn.KindGlobalMaxPool}, {Kind: nn.KindFlatten}, {Kind: nn.KindDense, Name: "fc", Out: 4},
	}}
}

// flatArch has no global max pool (no incremental window path) and a
// layer of one channel.
func flatArch() nn.Arch {
	return nn.Arch{Name: "flat", InChannels: 2, InLen: 20, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 1, Kernel: 3}, {Kind: nn.KindReLU},
		{Kind: nn.KindFlatten}, {Kind: nn.KindDense, Name: "fc", Out: 4},
	}}
}

func probeParams(t *testing.T) nn.Params { return paramsOf(t, probeArch()) }

func paramsOf(t *testing.T, a nn.Arch) nn.Params {
	t.Helper()
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := nn.Params{Arch: a, Data: make([]float32, lay.Size)}
	nn.Init(lay, p.Data, rand.New(rand.NewPCG(3, 4)))
	return p
}

// probe checks the model it is given against local, the same network in
// process: Config "fail" makes it call the service after the test closed
// it (svc), "layer" asks for an unknown layer.
type probe struct {
	local *nn.GraphModel
	svc   *driver.ModelService
}

func (probe) Info() sdk.Info {
	return sdk.Info{ID: "explainer.probe", Version: "1", Needs: sdk.NeedsProbs | sdk.NeedsInputGrad | sdk.NeedsLayer, WantsModel: true}
}
func (probe) Check(cfg sdk.Config) error { return cfg.Only("fail", "layer") }

func (p probe) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	l := p.local
	if _, ok := m.(*nn.GraphModel); ok {
		return nil, fmt.Errorf("a local model, not the service's")
	}
	if _, ok := req.Config["fail"]; ok {
		p.svc.Close()
		if err := m.Probs(ctx, make([]float32, len(req.Targets)*m.Classes()), req.X); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("Probs returned after the service closed")
	}
	if _, ok := req.Config["layer"]; ok {
		if _, err := m.LayerShape(ctx, "conv9"); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("LayerShape of an unknown layer succeeded")
	}
	var diffs []string
	same := func(what string, a, b []float32) {
		if !slices.Equal(a, b) {
			diffs = append(diffs, what)
		}
	}
	if !slices.Equal(m.Arch().Layers, l.Arch().Layers) || m.InputLen() != l.InputLen() || m.Classes() != l.Classes() {
		diffs = append(diffs, "arch")
	}
	B, n, k := len(req.Targets), l.InputLen(), l.Classes()
	x, tg := req.X, req.Targets
	a, b := make([]float32, B*k), make([]float32, B*k)
	for _, err := range []error{m.Probs(ctx, a, x), l.Probs(ctx, b, x)} {
		if err != nil {
			return nil, err
		}
	}
	same("Probs", a, b)
	ga, gb, pa, pb := make([]float32, B*n), make([]float32, B*n), make([]float32, B*k), make([]float32, B*k)
	for _, err := range []error{m.InputGrad(ctx, ga, pa, x, tg), l.InputGrad(ctx, gb, pb, x, tg)} {
		if err != nil {
			return nil, err
		}
	}
	same("InputGrad", ga, gb)
	same("InputGrad probs", pa, pb)
	if err := m.InputGrad(ctx, ga, nil, x, tg); err != nil {
		return nil, err
	}
	same("InputGrad without probs", ga, gb)
	for _, name := range []string{"fc", "conv1"} {
		sh, err := m.LayerShape(ctx, name)
		if lsh, _ := l.LayerShape(ctx, name); err != nil || sh != lsh {
			diffs = append(diffs, fmt.Sprintf("LayerShape %s %v %v", name, sh, err))
		}
	}
	sh, _ := l.LayerShape(ctx, "conv1")
	aa, ab, da, db := make([]float32, B*sh.Size()), make([]float32, B*sh.Size()), make([]float32, B*sh.Size()), make([]float32, B*sh.Size())
	if err := m.LayerGrad(ctx, aa, da, x, tg, "conv1"); err != nil {
		diffs = append(diffs, "LayerGrad: "+err.Error())
	}
	if err := l.LayerGrad(ctx, ab, db, x, tg, "conv1"); err != nil {
		return nil, err
	}
	same("LayerGrad act", aa, ab)
	same("LayerGrad grad", da, db)
	if err := m.LayerGrad(ctx, aa, da, x, tg, "conv9"); err == nil || !strings.Contains(err.Error(), "conv9") {
		diffs = append(diffs, fmt.Sprintf("LayerGrad of an unknown layer: %v", err))
	}
	if err := m.LayerGrad(ctx, aa[:1], da, x, tg, "conv1"); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("want act and grad of %d values, got 1 and %d", len(aa), len(da))) {
		diffs = append(diffs, fmt.Sprintf("LayerGrad into a short act: %v", err))
	}
	if err := m.LayerGrad(ctx, aa, da[:len(da)-1], x, tg, "conv1"); err == nil {
		diffs = append(diffs, "LayerGrad into a short grad succeeded")
	}
	// The perturbed copies (nn.Perturbed), input 0: the service's own
	// path (the model is an nn.Perturber) against the local network's.
	if _, ok := m.(nn.Perturber); !ok {
		return nil, fmt.Errorf("the service model has no path of its own to perturbed copies")
	}
	x0, z := x[:n], make([]float32, n)
	for i := range z {
		z[i] = float32(i%5) - 2
	}
	starts := []int{0, 4, 13}
	perturbed := func(what string, r nn.Perturbation) float32 {
		r.X, r.Class = x0, tg[0]
		wa, wb := make([]float32, r.Copies()+1), make([]float32, r.Copies()+1)
		if !r.Unperturbed {
			wa, wb = wa[:r.Copies()], wb[:r.Copies()]
		}
		if err := nn.Perturbed(ctx, m, r, wa); err != nil {
			diffs = append(diffs, what+": "+err.Error())
		}
		lr, lw := r, make([]float32, len(wb))
		if r.Spans == nil {
			// The service computes windows by the cached path (the
			// unperturbed probability with them), whose windows are
			// the same computation.
			lr.Unperturbed, lw = true, make([]float32, r.Copies()+1)
		}
		if err := nn.Perturbed(ctx, l, lr, lw); err != nil {
			diffs = append(diffs, what+" (local): "+err.Error())
		}
		copy(wb, lw)
		same(what, wa, wb)
		if r.Unperturbed {
			return wa[r.Copies()]
		}
		return 0
	}
	// Four window calls: a constant baseline and a signal, every channel
	// and one.
	p0 := perturbed("windows", nn.Perturbation{Starts: starts, Width: 7, Baseline: 0.5, Channel: nn.AllChannels, Unperturbed: true})
	perturbed("windows of a signal", nn.Perturbation{Starts: starts, Width: 7, Signal: z, Channel: nn.AllChannels, Unperturbed: true})
	perturbed("windows of channel 1", nn.Perturbation{Starts: starts, Width: 7, Baseline: 0.5, Channel: 1})
	perturbed("windows of a signal in channel 0", nn.Perturbation{Starts: starts, Width: 7, Signal: z, Channel: 0, Unperturbed: true})
	if _, fast := any(l).(nn.Perturber); !fast { // no incremental path: forward passes, and Probs's p(x)
		same("p0 without a pool", []float32{p0}, b[tg[0]:tg[0]+1])
		return p.answer(B, n, diffs)
	}
	u := make([]float32, 1)
	if err := nn.Perturbed(ctx, m, nn.Perturbation{X: x0, Class: tg[0], Channel: nn.AllChannels, Unperturbed: true}, u); err != nil || u[0] != b[tg[0]] {
		diffs = append(diffs, fmt.Sprintf("no windows: p0 %v (%v), Probs %v", u[0], err, b[tg[0]]))
	}
	all := func(sp ...[2]int) []nn.ChannelSpan {
		out := []nn.ChannelSpan{}
		for _, s := range sp {
			out = append(out, nn.ChannelSpan{Ch: nn.AllChannels, Lo: s[0], Hi: s[1]})
		}
		return out
	}
	perturbed("spans", nn.Perturbation{Spans: [][]nn.ChannelSpan{all(), all([2]int{2, 6}), all([2]int{0, 3}, [2]int{10, 20}), all([2]int{1, 2}, [2]int{4, 5}, [2]int{7, 9})}, Baseline: -1, Channel: nn.AllChannels})
	// no perturbation: no call, no panic
	if err := nn.Perturbed(ctx, m, nn.Perturbation{X: x0, Class: tg[0], Spans: [][]nn.ChannelSpan{}, Channel: nn.AllChannels}, nil); err != nil {
		diffs = append(diffs, "no perturbation: "+err.Error())
	}
	perturbed("channel spans", nn.Perturbation{Spans: [][]nn.ChannelSpan{{}, {{Ch: 0, Lo: 2, Hi: 6}}, {{Ch: nn.AllChannels, Lo: 10, Hi: 20}, {Ch: l.Arch().InChannels - 1, Lo: 0, Hi: 3}}}, Baseline: -1, Channel: nn.AllChannels})
	if err := m.Probs(ctx, nil, x[:0]); err != nil { // no input: no call
		diffs = append(diffs, "no input: "+err.Error())
	}
	return p.answer(B, n, diffs)
}

// answer is B zero maps, or the differences found as the error.
func (probe) answer(B, n int, diffs []string) ([][]float64, error) {
	if len(diffs) > 0 {
		return nil, fmt.Errorf("the service model differs from the local one: %s", strings.Join(diffs, ", "))
	}
	maps := make([][]float64, B)
	for i := range maps {
		maps[i] = make([]float64, n)
	}
	return maps, nil
}

// TestServiceModel: every nn.Model method and fast path of the service model
// gives the local network's bytes; a failed service call and an unknown
// layer are the Explain's errors, never a panic of the plugin.
func TestServiceModel(t *testing.T) {
	for _, a := range []nn.Arch{probeArch(), flatArch()} {
		t.Run(a.Name, func(t *testing.T) { testServiceModel(t, paramsOf(t, a)) })
	}
}

// recorder is a model service that passes every request on to the real
// one and records, for each method, its calls and the largest batch,
// starts, perturbations and span pairs a request carried.
type recorder struct {
	pb.UnimplementedModelServer
	to    pb.ModelClient
	n     int // values an input
	mu    sync.Mutex
	calls map[string]int
	most  map[string]int
}

func (r *recorder) see(method string, counts map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[method]++
	for k, v := range counts {
		r.most[method+" "+k] = max(r.most[method+" "+k], v)
	}
}
func (r *recorder) Describe(ctx context.Context, q *pb.ModelRef) (*pb.ModelInfo, error) {
	return r.to.Describe(ctx, q)
}
func (r *recorder) Probs(ctx context.Context, q *pb.ModelBatch) (*pb.ProbsResponse, error) {
	r.see("Probs", map[string]int{"inputs": len(q.GetX()) / 4 / r.n})
	return r.to.Probs(ctx, q)
}
func (r *recorder) InputGrad(ctx context.Context, q *pb.ModelBatch) (*pb.InputGradResponse, error) {
	r.see("InputGrad", map[string]int{"inputs": len(q.GetX()) / 4 / r.n})
	return r.to.InputGrad(ctx, q)
}
func (r *recorder) Layer(ctx context.Context, q *pb.LayerRequest) (*pb.LayerResponse, error) {
	if len(q.GetX()) > 0 {
		r.see("Layer", map[string]int{"inputs": len(q.GetX()) / 4 / r.n})
	}
	return r.to.Layer(ctx, q)
}
func (r *recorder) Windows(ctx context.Context, q *pb.WindowsRequest) (*pb.WindowsResponse, error) {
	r.see("Windows", map[string]int{"starts": len(q.GetStarts())})
	return r.to.Windows(ctx, q)
}
func (r *recorder) Spans(ctx context.Context, q *pb.SpansRequest) (*pb.SpansResponse, error) {
	r.see("Spans", map[string]int{"perturbations": len(q.GetEnds()), "pairs": len(q.GetBounds()) / 2})
	return r.to.Spans(ctx, q)
}

// TestServiceModelSplitsByTheBounds: under bounds so small that every call
// of the probe is split, the answers are still the local model's, bit for
// bit, and every request the service sees is within the bounds, in as few
// requests as they allow. The probe's 3 inputs of 40 values go 2 + 1 (100
// values a request), conv1's outputs of 54 values 1 + 1 + 1; its 3 window
// starts 2 + 1; its 4 perturbations of 0, 1, 2 and 3 span pairs (3 pairs a
// request, 3 perturbations) go {0, 1, 2} + {3}.
func TestServiceModelSplitsByTheBounds(t *testing.T) {
	defer sdk.SetServiceBounds(100, 1000, 2, 3, 3)()
	local, svc, h, cc := probeService(t)
	rec := &recorder{to: pb.NewModelClient(cc), n: local.InputLen(), calls: map[string]int{}, most: map[string]int{}}
	proxy := filepath.Join(t.TempDir(), "proxy.sock")
	lis, err := net.Listen("unix", proxy)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterModelServer(srv, rec)
	go srv.Serve(lis)
	defer srv.Stop()

	quiet := hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})
	rpc, stop, err := proto.InProcess(probe{local: local, svc: svc}, driver.PluginSet(), driver.DialOptions(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	raw := pb.NewExplainerClient(rpc.(*goplugin.GRPCClient).Conn)
	ctx := context.Background()
	r, err := raw.Load(ctx, &pb.LoadRequest{Service: &pb.ModelService{Address: proxy, Handle: h}})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 3*local.InputLen())
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	if _, err := raw.Explain(ctx, &pb.ExplainRequest{Model: r.GetHandle(), X: wire.Float32Bytes(x), Targets: []int64{3, 0, 2}, ConfigJson: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]int{
		"Probs inputs": 2, "InputGrad inputs": 2, "Layer inputs": 1,
		"Windows starts": 2, "Spans perturbations": 3, "Spans pairs": 3,
	} {
		if got := rec.most[k]; got != want {
			t.Errorf("%s: at most %d a request; want %d", k, got, want)
		}
	}
	// InputGrad: two requests for each of its two calls (with the
	// probabilities and without); Layer: conv1's 3 inputs one a request;
	// Windows: two requests for each of the 4 window calls; Spans: two
	// for SpanProbs, one for ChannelSpanProbs (3 perturbations, 3 pairs).
	for k, want := range map[string]int{"InputGrad": 2 * 2, "Layer": 3, "Windows": 4 * 2, "Spans": 2 + 1} {
		if got := rec.calls[k]; got != want {
			t.Errorf("%s: %d requests; want %d", k, got, want)
		}
	}
}

func testServiceModel(t *testing.T, params nn.Params) {
	local, err := nn.NewModel(params)
	if err != nil {
		t.Fatal(err)
	}
	svc := driver.NewModelService()
	defer svc.Close()
	quiet := hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})
	rpc, stop, err := proto.InProcess(probe{local: local, svc: svc}, driver.PluginSetFor(driver.Options{Models: svc}), driver.DialOptions(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	v, err := rpc.Dispense("explainer")
	if err != nil {
		t.Fatal(err)
	}
	e := v.(driver.Explainer)
	ctx := context.Background()
	lm, err := e.Load(ctx, sdk.Draw{Params: params})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 3*local.InputLen())
	r := rand.New(rand.NewPCG(5, 6))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	req := sdk.ExplainRequest{X: x, Targets: []int{3, 0, 2}}
	if _, err := lm.Explain(ctx, req); err != nil {
		t.Fatal(err)
	}
	req.Config = sdk.Config{"layer": true}
	if _, err := lm.Explain(ctx, req); err == nil || !strings.Contains(err.Error(), "explainer.probe: Explain: model service: Layer:") || !strings.Contains(err.Error(), "conv9") {
		t.Errorf("unknown layer: %v", err)
	}
	req.Config = sdk.Config{"fail": true}
	_, err = lm.Explain(ctx, req)
	if err == nil || !strings.Contains(err.Error(), "explainer.probe: Explain: model service: Probs: ") || strings.Contains(err.Error(), "panic") {
		t.Errorf("a call after the service closed: %v", err)
	}
}

// TestServiceModelLoad: a Load naming a draw the service does not serve,
// or no address, or both a service and parameters, is refused with a
// message that says so; the plugin keeps serving.
func TestServiceModelLoad(t *testing.T) {
	svc := driver.NewModelService()
	defer svc.Close()
	local, err := nn.NewModel(probeParams(t))
	if err != nil {
		t.Fatal(err)
	}
	addr, h, err := svc.Add(local)
	if err != nil {
		t.Fatal(err)
	}
	quiet := hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})
	rpc, stop, err := proto.InProcess(probe{local: local, svc: svc}, driver.PluginSetFor(driver.Options{Models: svc}), driver.DialOptions(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	raw := pb.NewExplainerClient(rpc.(*goplugin.GRPCClient).Conn)
	ctx := context.Background()
	params, err := wire.Params(probeParams(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		req  *pb.LoadRequest
		want string
	}{
		{"unknown handle", &pb.LoadRequest{Service: &pb.ModelService{Address: addr, Handle: h + 1}}, fmt.Sprintf("model service: Describe: no model with handle %d", h+1)},
		{"no address", &pb.LoadRequest{Service: &pb.ModelService{Handle: h}}, "the model service has no address"},
		{"both", &pb.LoadRequest{Service: &pb.ModelService{Address: addr, Handle: h}, Model: params}, "both a model service and parameters"},
	} {
		if _, err := raw.Load(ctx, c.req); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want InvalidArgument containing %q", c.name, err, c.want)
		}
	}
	if r, err := raw.Load(ctx, &pb.LoadRequest{Service: &pb.ModelService{Address: addr, Handle: h}}); err != nil || r.GetHandle() == 0 {
		t.Errorf("a good Load after the refusals: %v", err)
	}
}

// liar is a model service that answers with the wrong shapes: Describe
// as the draw's network but with input_len off by one when lieDescribe,
// Probs with one value too few and Layer with a shape of no channels.
type liar struct {
	pb.UnimplementedModelServer
	arch        []byte
	n, k        int64
	lieDescribe bool
}

func (l *liar) Describe(context.Context, *pb.ModelRef) (*pb.ModelInfo, error) {
	n := l.n
	if l.lieDescribe {
		n++
	}
	return &pb.ModelInfo{ArchJson: l.arch, InputLen: n, Classes: l.k, PooledLen: 3}, nil
}
func (l *liar) Probs(_ context.Context, r *pb.ModelBatch) (*pb.ProbsResponse, error) {
	return &pb.ProbsResponse{Probs: make([]byte, len(r.GetX())/4/int(l.n)*int(l.k)*4-4)}, nil
}
func (l *liar) Layer(context.Context, *pb.LayerRequest) (*pb.LayerResponse, error) {
	return &pb.LayerResponse{Channels: 0, Length: 5}, nil
}

// liarExplainer calls the service model as Config says and reports what
// it got as its error.
type liarExplainer struct{}

func (liarExplainer) Info() sdk.Info {
	return sdk.Info{ID: "explainer.liar", Version: "1", Needs: sdk.NeedsProbs, WantsModel: true}
}
func (liarExplainer) Check(cfg sdk.Config) error { return nil }
func (liarExplainer) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	if _, ok := req.Config["layer"]; ok {
		_, err := m.LayerShape(ctx, "conv1")
		return nil, err
	}
	if err := m.Probs(ctx, make([]float32, len(req.Targets)*m.Classes()), req.X); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("Probs accepted a short answer")
}

// TestServiceModelDistrustsTheService: answers of the wrong shape from the
// service are errors of the Load or the Explain, never values the
// explainer computes with.
func TestServiceModelDistrustsTheService(t *testing.T) {
	p := probeParams(t)
	arch, err := wire.Arch(p.Arch)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := filepath.Join(dir, "liar.sock")
	lis, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	lie := &liar{arch: arch, n: 40, k: 4}
	srv := grpc.NewServer()
	pb.RegisterModelServer(srv, lie)
	go srv.Serve(lis)
	defer srv.Stop()

	quiet := hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})
	rpc, stop, err := proto.InProcess(liarExplainer{}, driver.PluginSet(), driver.DialOptions(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	raw := pb.NewExplainerClient(rpc.(*goplugin.GRPCClient).Conn)
	ctx := context.Background()
	lie.lieDescribe = true
	if _, err := raw.Load(ctx, &pb.LoadRequest{Service: &pb.ModelService{Address: addr, Handle: 1}}); err == nil || !strings.Contains(err.Error(), "input length 41, 4 classes and pooled length 3 do not fit the architecture (2 x 20 inputs)") {
		t.Errorf("a Describe that does not fit: %v", err)
	}
	lie.lieDescribe = false
	r, err := raw.Load(ctx, &pb.LoadRequest{Service: &pb.ModelService{Address: addr, Handle: 1}})
	if err != nil {
		t.Fatal(err)
	}
	x := wire.Float32Bytes(make([]float32, 2*40))
	for _, c := range []struct {
		cfg, want string
	}{
		{`{}`, "model service: Probs: probs has 7 values, want 8"},
		{`{"layer": true}`, `model service: Layer "conv1": shape 0 x 5`},
	} {
		_, err := raw.Explain(ctx, &pb.ExplainRequest{Model: r.GetHandle(), X: x, Targets: []int64{0, 1}, ConfigJson: []byte(c.cfg)})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "panic") {
			t.Errorf("%s: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// cancelling is a model service that passes Probs on and cancels a
// context once it has answered `after` requests.
type cancelling struct {
	pb.UnimplementedModelServer
	to     pb.ModelClient
	after  int
	cancel context.CancelFunc
	mu     sync.Mutex
	probs  int
}

func (c *cancelling) Describe(ctx context.Context, q *pb.ModelRef) (*pb.ModelInfo, error) {
	return c.to.Describe(ctx, q)
}
func (c *cancelling) Probs(ctx context.Context, q *pb.ModelBatch) (*pb.ProbsResponse, error) {
	r, err := c.to.Probs(ctx, q)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.probs++; c.probs == c.after {
		c.cancel()
	}
	return r, err
}

// TestServiceModelCancelled: a Probs split into many requests (2 inputs a
// request, 20 inputs) whose ctx ends while the third is answered sends no
// request after it and returns an error wrapping context.Canceled, naming
// the request; the probabilities of the first two requests are the local
// network's, those after the third untouched. A ctx that ended before the
// call sends nothing.
func TestServiceModelCancelled(t *testing.T) {
	defer sdk.SetServiceBounds(100, 1000, 2, 3, 3)()
	local, _, h, cc := probeService(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proxy := &cancelling{to: pb.NewModelClient(cc), after: 3, cancel: cancel}
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterModelServer(srv, proxy)
	go srv.Serve(lis)
	defer srv.Stop()
	m, closeModel, err := sdk.DialModel(context.Background(), sock, h)
	if err != nil {
		t.Fatal(err)
	}
	defer closeModel()
	n, k, B := local.InputLen(), local.Classes(), 20
	x := make([]float32, B*n)
	for i := range x {
		x[i] = float32(i%9) - 4
	}
	got, want := make([]float32, B*k), make([]float32, B*k)
	for i := range got {
		got[i] = -1
	}
	if err := local.Probs(context.Background(), want, x); err != nil {
		t.Fatal(err)
	}
	err = m.Probs(ctx, got, x)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "model service: Probs: ") {
		t.Errorf("Probs cancelled during its third request: %v; want context.Canceled, naming Probs", err)
	}
	if proxy.probs != 3 {
		t.Errorf("the service saw %d Probs requests; want 3 (2 inputs each), none after the cancellation", proxy.probs)
	}
	// The third answer comes after the cancellation: taken or not, as the
	// transport sees the two.
	third := slices.Equal(got[4*k:6*k], want[4*k:6*k]) || !slices.ContainsFunc(got[4*k:6*k], func(v float32) bool { return v != -1 })
	if !slices.Equal(got[:4*k], want[:4*k]) || !third || slices.ContainsFunc(got[6*k:], func(v float32) bool { return v != -1 }) {
		t.Errorf("probabilities %v; want the first 4 inputs' %v (and the next 2's or none) and the rest untouched", got, want[:6*k])
	}
	if err := m.Probs(ctx, got, x); !errors.Is(err, context.Canceled) || proxy.probs != 3 {
		t.Errorf("Probs under an ended ctx: %v, %d requests; want context.Canceled and no request", err, proxy.probs)
	}
}

// probeService serves the probe network (probeParams) by a model service
// of this process and dials it: the network, the service, its handle and
// a connection, closed at the test's end.
func probeService(t *testing.T) (*nn.GraphModel, *driver.ModelService, uint64, *grpc.ClientConn) {
	t.Helper()
	local, err := nn.NewModel(probeParams(t))
	if err != nil {
		t.Fatal(err)
	}
	svc := driver.NewModelService()
	t.Cleanup(func() { svc.Close() })
	addr, h, err := svc.Add(local)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("unix:"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return local, svc, h, cc
}
