package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/internal/check"
	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file is the gRPC client of each kind: values that implement the
// host-side interfaces by calling a plugin process. They check requests
// before sending them and answers before returning them, and every error
// they return names the plugin.

// clientPlugin is the go-plugin glue of the host side: it makes the
// kind's client. The plugin side is sdk.Serve. timeouts bound the Info
// call a client makes when it connects, and every Check and Release call
// (which have no context of their own).
type clientPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	kind     sdk.Kind
	timeouts Timeouts
	models   *ModelService // serves the explainers that want it
	serveAll bool          // serve every explainer's draws, wanted or not
	// modelCall bounds each request to a served draw's service.
	modelCall sdk.CallLimit
}

// GRPCServer is the plugin's side, which a host never plays.
func (p *clientPlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error {
	return errors.New("driver is the host side; plugins serve with sdk.Serve")
}

// GRPCClient makes the kind's client and asks the plugin's Info.
func (p *clientPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeouts.Info)
	defer cancel()
	var (
		v    any
		info sdk.Info
		err  error
	)
	switch p.kind {
	case sdk.KindPosterior:
		c := &posteriorClient{rpc: pb.NewPosteriorClient(conn), timeouts: p.timeouts, models: p.models, modelCall: p.modelCall}
		var r *pb.PosteriorInfo
		if r, err = c.rpc.Info(ctx, &pb.InfoRequest{}); err == nil {
			info = decodeInfo(r.GetInfo())
			info.Finite, info.Base, info.BaseKeys, info.Files = r.GetFinite(), r.GetBase(), r.GetBaseKeys(), r.GetFiles()
			info.Replicates, info.ServesModels = r.GetReplicates(), r.GetServesModels()
			c.info = info
		}
		v = c
	case sdk.KindExplainer:
		c := &explainerClient{rpc: pb.NewExplainerClient(conn), timeouts: p.timeouts, models: p.models, serveAll: p.serveAll, modelCall: p.modelCall}
		var r *pb.ExplainerInfo
		if r, err = c.rpc.Info(ctx, &pb.InfoRequest{}); err == nil {
			info = decodeInfo(r.GetInfo())
			info.Needs, info.Stochastic, info.WantsModel = sdk.Needs(r.GetNeeds()), r.GetStochastic(), r.GetWantsModel()
			c.info = info
		}
		v = c
	case sdk.KindSummary:
		c := &summaryClient{rpc: pb.NewSummaryClient(conn), timeouts: p.timeouts}
		var r *pb.SummaryInfo
		if r, err = c.rpc.Info(ctx, &pb.InfoRequest{}); err == nil {
			info = decodeInfo(r.GetInfo())
			info.Output, info.MinDraws = sdk.OutputKind(r.GetOutput()), int(r.GetMinDraws())
			c.info = info
		}
		v = c
	default:
		return nil, fmt.Errorf("unknown plugin kind %q", p.kind)
	}
	if err != nil {
		return nil, fmt.Errorf("asking the %s plugin for its Info: %w", p.kind, err)
	}
	if err := info.Validate(p.kind); err != nil {
		return nil, fmt.Errorf("the plugin serving the %s protocol reports a bad Info: %w", p.kind, err)
	}
	return v, nil
}

// Both posterior clients answer Parts, whether the plugin is parted or not.
var (
	_ sdk.Parted = (*posteriorClient)(nil)
	_ sdk.Parted = (*localPosterior)(nil)
)

type posteriorClient struct {
	described
	rpc      pb.PosteriorClient
	timeouts Timeouts
	models   *ModelService // makes the socket directories of served draws
	// modelCall bounds each Describe of a served draw.
	modelCall sdk.CallLimit
}

func (c *posteriorClient) Check(cfg sdk.Config, draws int) error {
	return remoteCheck(c.info.ID, cfg, int64(draws), c.timeouts.Check, c.rpc.Check)
}

func (c *posteriorClient) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	id := c.info.ID
	if err := checkFitRequest(req); err != nil {
		return sdk.Artifact{}, pluginErr(id, "Fit", err)
	}
	r, err := encodeFitRequest(req)
	if err != nil {
		return sdk.Artifact{}, pluginErr(id, "Fit", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Fit(ctx, r)
	if err != nil {
		return sdk.Artifact{}, callErr(ctx, id, "Fit", err)
	}
	var art *pb.Artifact
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sdk.Artifact{}, callErr(ctx, id, "Fit", err)
		}
		switch e := ev.GetEvent().(type) {
		case *pb.FitEvent_Progress:
			if art != nil {
				return sdk.Artifact{}, pluginErr(id, "Fit", errors.New("protocol error: progress after the artifact"))
			}
			if req.Progress != nil {
				p := e.Progress
				req.Progress(sdk.Progress{Done: int(p.GetDone()), Total: int(p.GetTotal()), Message: p.GetMessage()})
			}
		case *pb.FitEvent_Artifact:
			if art != nil {
				return sdk.Artifact{}, pluginErr(id, "Fit", errors.New("protocol error: two artifacts"))
			}
			art = e.Artifact
		}
	}
	if art == nil {
		return sdk.Artifact{}, pluginErr(id, "Fit", errors.New("protocol error: the stream ended without an artifact"))
	}
	a, err := decodeArtifact(art)
	if err != nil {
		return sdk.Artifact{}, pluginErr(id, "Fit", err)
	}
	if err := checkArtifact(a); err != nil {
		return sdk.Artifact{}, pluginErr(id, "Fit", err)
	}
	return a, nil
}

// Parts asks the plugin for the number of parts of its fit (sdk.Parted),
// bounded by the Check timeout. A plugin that predates the method answers
// codes.Unimplemented, which is 0: its fit is not parted.
func (c *posteriorClient) Parts(cfg sdk.Config) (int, error) {
	id := c.info.ID
	b, err := wire.Config(cfg)
	if err != nil {
		return 0, pluginErr(id, "Parts", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeouts.Check)
	defer cancel()
	resp, err := c.rpc.Parts(ctx, &pb.CheckRequest{ConfigJson: b})
	if err != nil {
		if status.Code(err) == codes.Unimplemented && ctx.Err() == nil {
			return 0, nil
		}
		return 0, callErr(ctx, id, "Parts", err)
	}
	if err := check.Parts(resp.GetParts()); err != nil {
		return 0, pluginErr(id, "Parts", err)
	}
	return int(resp.GetParts()), nil
}

func (c *posteriorClient) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	draws, err := c.SampleDraws(ctx, a, req)
	if err != nil {
		return nil, err
	}
	return paramsOf(c.info.ID, draws)
}

// paramsOf are the parameters of draws, none of which may be served.
func paramsOf(id string, draws []sdk.Draw) ([]nn.Params, error) {
	out := make([]nn.Params, len(draws))
	for s, d := range draws {
		if d.Served != nil {
			return nil, pluginErr(id, "Sample", fmt.Errorf("draw %d is served (%v), not parameters: sample it with SampleDraws", s, *d.Served))
		}
		out[s] = d.Params
	}
	return out, nil
}

// SampleDraws asks the plugin for its draws: parameters, or, from a
// posterior that serves its draws, references to its model service,
// which are checked (checkServed) before they are returned.
func (c *posteriorClient) SampleDraws(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]sdk.Draw, error) {
	id := c.info.ID
	if err := checkSampleRequest(req); err != nil {
		return nil, pluginErr(id, "Sample", err)
	}
	pa, err := wire.Artifact(a.Arch, a.Tensors, a.Meta)
	if err != nil {
		return nil, pluginErr(id, "Sample", err)
	}
	cfg, err := wire.Config(req.Config)
	if err != nil {
		return nil, pluginErr(id, "Sample", err)
	}
	r := &pb.SampleRequest{Artifact: pa, Seeds: req.Seeds, ConfigJson: cfg}
	if c.info.ServesModels {
		if r.SocketDir, err = drawDir(c.models); err != nil {
			return nil, pluginErr(id, "Sample", err)
		}
	}
	resp, err := c.rpc.Sample(ctx, r)
	if err != nil {
		return nil, callErr(ctx, id, "Sample", err)
	}
	if len(resp.GetServed()) > 0 {
		if !c.info.ServesModels {
			return nil, pluginErr(id, "Sample", errors.New("protocol error: served draws from a posterior whose Info does not set serves_models"))
		}
		if len(resp.GetDraws()) > 0 {
			return nil, pluginErr(id, "Sample", fmt.Errorf("protocol error: %d draws and %d served draws (want one or the other)", len(resp.GetDraws()), len(resp.GetServed())))
		}
		refs := make([]sdk.ModelRef, len(resp.GetServed()))
		for i, m := range resp.GetServed() {
			refs[i] = sdk.ModelRef{Address: m.GetAddress(), Handle: m.GetHandle()}
		}
		if err := checkServed(ctx, refs, r.SocketDir, len(req.Seeds), c.modelCall); err != nil {
			return nil, pluginErr(id, "Sample", err)
		}
		draws := make([]sdk.Draw, len(refs))
		for i := range refs {
			draws[i] = sdk.Draw{Served: &refs[i]}
		}
		return draws, nil
	}
	params := make([]nn.Params, len(resp.GetDraws()))
	for i, d := range resp.GetDraws() {
		if params[i], err = wire.DecodeParams(d); err != nil {
			return nil, pluginErr(id, "Sample", fmt.Errorf("draw %d: %w", i, err))
		}
	}
	if err := checkDrawsOut(params, len(req.Seeds)); err != nil {
		return nil, pluginErr(id, "Sample", err)
	}
	return sdk.ParamsDraws(params), nil
}

// remoteCheck sends a Check to a plugin of any kind (the three services
// share the request and response messages; draws is 0 but for
// posteriors).
func remoteCheck(id string, cfg sdk.Config, draws int64, timeout time.Duration, call func(context.Context, *pb.CheckRequest, ...grpc.CallOption) (*pb.CheckResponse, error)) error {
	b, err := wire.Config(cfg)
	if err != nil {
		return pluginErr(id, "Check", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := call(ctx, &pb.CheckRequest{ConfigJson: b, Draws: draws}); err != nil {
		return callErr(ctx, id, "Check", err)
	}
	return nil
}

type explainerClient struct {
	described
	rpc      pb.ExplainerClient
	timeouts Timeouts
	models   *ModelService
	serveAll bool
	// modelCall bounds the Describe of a served draw it loads.
	modelCall sdk.CallLimit
}

func (c *explainerClient) Check(cfg sdk.Config) error {
	return remoteCheck(c.info.ID, cfg, 0, c.timeouts.Check, c.rpc.Check)
}

// Load sends the draw's parameters to the plugin process, once, with
// every layer's (or graph node's) output shape (wire.LoadParams): a Go
// plugin builds any network from them (nn.Open), a Python one has its
// arch and parameters (the Captum bridge rebuilds graphs in torch); or, for
// an explainer that wants the model service, builds the draw's network in
// the host, serves it, and sends its address and handle. A served draw
// (its posterior serves it) goes as its service's address and handle,
// whether the explainer wants the model service or not: the plugin's
// model calls go to the posterior's process.
func (c *explainerClient) Load(ctx context.Context, draw sdk.Draw) (Model, error) {
	id := c.info.ID
	if draw.Served != nil {
		n, k, err := drawShape(ctx, draw, c.modelCall)
		if err != nil {
			return nil, pluginErr(id, "Load", err)
		}
		svc := &pb.ModelService{Address: draw.Served.Address, Handle: draw.Served.Handle}
		resp, err := c.rpc.Load(sdk.WithCallLimit(ctx, c.modelCall), &pb.LoadRequest{Service: svc})
		if err != nil {
			return nil, modelCallErr(ctx, callErr(ctx, id, "Load", err))
		}
		return &loadedDraw{c: c, handle: resp.GetHandle(), inputLen: n, classes: k, service: svc}, nil
	}
	n, k, err := checkModel(draw.Params)
	if err != nil {
		return nil, pluginErr(id, "Load", err)
	}
	if c.info.WantsModel && c.models == nil {
		return nil, pluginErr(id, "Load", errors.New("the explainer wants the model service (Info.WantsModel), which this host does not serve"))
	}
	if c.models != nil && (c.info.WantsModel || c.serveAll) {
		return c.loadService(ctx, draw.Params, n, k)
	}
	p, err := wire.LoadParams(draw.Params)
	if err != nil {
		return nil, pluginErr(id, "Load", err)
	}
	resp, err := c.rpc.Load(ctx, &pb.LoadRequest{Model: p})
	if err != nil {
		return nil, callErr(ctx, id, "Load", err)
	}
	return &loadedDraw{c: c, handle: resp.GetHandle(), inputLen: n, classes: k}, nil
}

// loadService serves the draw's network in the model service and loads
// its handle into the plugin.
func (c *explainerClient) loadService(ctx context.Context, draw nn.Params, n, k int) (Model, error) {
	id := c.info.ID
	net, err := nn.Open(draw)
	if err != nil {
		return nil, pluginErr(id, "Load", fmt.Errorf("building the model: %w", err))
	}
	addr, h, err := c.models.Add(net)
	if err != nil {
		return nil, pluginErr(id, "Load", err)
	}
	svc := &pb.ModelService{Address: addr, Handle: h}
	resp, err := c.rpc.Load(ctx, &pb.LoadRequest{Service: svc})
	if err != nil {
		c.models.Remove(h)
		return nil, callErr(ctx, id, "Load", err)
	}
	return &loadedDraw{c: c, handle: resp.GetHandle(), inputLen: n, classes: k, service: svc, hosted: true, net: net}, nil
}

// PerturbedPath is how the draw's network, served by the host, computed
// the perturbed copies of the plugin's Windows and Spans calls so far
// (nn.GraphModel.Path), and false for a model that does not say.
func (m *loadedDraw) PerturbedPath() (nn.PathStats, bool) {
	if m.net == nil {
		return nn.PathStats{}, false
	}
	return nn.PathStatsOf(m.net)
}

// loadedDraw is the driver.Model of one draw loaded into a plugin
// process over gRPC: the plugin's handle of the draw, which every Explain
// names and Close releases; service, if not nil, is where the host serves
// its network.
type loadedDraw struct {
	c                 *explainerClient
	handle            uint64
	inputLen, classes int
	service           *pb.ModelService
	hosted            bool     // the host's model service serves it (Close removes it)
	net               nn.Model // the network the service serves, when hosted
	mu                sync.Mutex
	closed            bool
}

func (m *loadedDraw) Explain(ctx context.Context, req sdk.ExplainRequest) ([][]float64, error) {
	id := m.c.info.ID
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, pluginErr(id, "Explain", errClosed)
	}
	if err := check.Batch(m.inputLen, m.classes, req.X, req.Targets, req.Seeds, m.c.info.Stochastic); err != nil {
		return nil, pluginErr(id, "Explain", err)
	}
	cfg, err := wire.Config(req.Config)
	if err != nil {
		return nil, pluginErr(id, "Explain", err)
	}
	cctx := ctx
	if m.service != nil && !m.hosted { // a served draw: the plugin bounds each request to it
		cctx = sdk.WithCallLimit(ctx, m.c.modelCall)
	}
	resp, err := m.c.rpc.Explain(cctx, &pb.ExplainRequest{
		Model: m.handle, X: wire.Float32Bytes(req.X), Targets: wire.Int64s(req.Targets),
		Seeds: req.Seeds, ConfigJson: cfg, Service: m.service,
	})
	if err != nil {
		err = callErr(ctx, id, "Explain", err)
		if m.service != nil && !m.hosted {
			err = modelCallErr(ctx, err)
		}
		return nil, err
	}
	maps := make([][]float64, len(resp.GetMaps()))
	for i, b := range resp.GetMaps() {
		if maps[i], err = wire.Float64s(b); err != nil {
			return nil, pluginErr(id, "Explain", fmt.Errorf("input %d: %w", i, err))
		}
	}
	if err := checkMaps(maps, len(req.Targets), m.inputLen); err != nil {
		return nil, pluginErr(id, "Explain", err)
	}
	return maps, nil
}

// Close releases the draw in the plugin process. Closing twice is a no-op.
// Calls of Explain that are under way when Close starts may fail.
func (m *loadedDraw) Close() error {
	m.mu.Lock()
	closed := m.closed
	m.closed = true
	m.mu.Unlock()
	if closed {
		return nil
	}
	if m.hosted {
		defer m.c.models.Remove(m.service.GetHandle())
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.c.timeouts.Release)
	defer cancel()
	if _, err := m.c.rpc.Release(ctx, &pb.ReleaseRequest{Handle: m.handle}); err != nil {
		return callErr(ctx, m.c.info.ID, "Release", err)
	}
	return nil
}

type summaryClient struct {
	described
	rpc      pb.SummaryClient
	timeouts Timeouts
}

func (c *summaryClient) Check(cfg sdk.Config) error {
	return remoteCheck(c.info.ID, cfg, 0, c.timeouts.Check, c.rpc.Check)
}

func (c *summaryClient) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	id := c.info.ID
	if err := check.Draws(draws, c.info.MinDraws); err != nil {
		return nil, pluginErr(id, "Summarise", err)
	}
	b, err := wire.Config(cfg)
	if err != nil {
		return nil, pluginErr(id, "Summarise", err)
	}
	resp, err := c.rpc.Summarise(ctx, &pb.SummariseRequest{Inputs: encodeDraws(draws), ConfigJson: b})
	if err != nil {
		return nil, callErr(ctx, id, "Summarise", err)
	}
	res := make([]sdk.Result, len(resp.GetResults()))
	for i, r := range resp.GetResults() {
		if res[i], err = decodeResult(r); err != nil {
			return nil, pluginErr(id, "Summarise", fmt.Errorf("input %d: %w", i, err))
		}
	}
	if err := checkResults(c.info.Output, res, draws); err != nil {
		return nil, pluginErr(id, "Summarise", err)
	}
	return res, nil
}

// remoteError is an error status a plugin returned. Its text is the
// plugin's message; status.Code and status.FromError see its code.
type remoteError struct{ st *status.Status }

func (e *remoteError) Error() string {
	switch e.st.Code() {
	case codes.Unknown, codes.InvalidArgument:
		return e.st.Message()
	}
	return e.st.Code().String() + ": " + e.st.Message()
}

// GRPCStatus lets status.Code and status.FromError see the code.
func (e *remoteError) GRPCStatus() *status.Status { return e.st }

// modelCallError is the error of an explainer's Load or Explain that
// answered DeadlineExceeded for a served draw while the host's context
// ran: a request of the plugin's to the draw's service had no answer
// within the limit the host gave it (sdk.WithCallLimit), which
// ModelCalls.Expire then handles as its own.
type modelCallError struct{ err error }

func (e *modelCallError) Error() string { return e.err.Error() }
func (e *modelCallError) Unwrap() error { return e.err }

// modelCallErr marks err as a modelCallError if it is one.
func modelCallErr(ctx context.Context, err error) error {
	if ctx.Err() == nil && status.Code(err) == codes.DeadlineExceeded {
		return &modelCallError{err}
	}
	return err
}

// callErr converts the error of a gRPC call. If the caller's context is
// done, the error wraps ctx.Err().
func callErr(ctx context.Context, id, method string, err error) error {
	if ce := ctx.Err(); ce != nil {
		return pluginErr(id, method, ce)
	}
	// gRPC's deadline timer may fire a moment before the context's.
	if dl, ok := ctx.Deadline(); ok && status.Code(err) == codes.DeadlineExceeded && !time.Now().Before(dl) {
		return pluginErr(id, method, context.DeadlineExceeded)
	}
	if st, ok := status.FromError(err); ok {
		return pluginErr(id, method, &remoteError{st})
	}
	return pluginErr(id, method, err)
}

// The host side's conversions: it encodes requests and decodes answers.

func decodeInfo(i *pb.Info) sdk.Info {
	return sdk.Info{ID: i.GetId(), Version: i.GetVersion(), Summary: i.GetSummary()}
}

func decodeArtifact(a *pb.Artifact) (sdk.Artifact, error) {
	arch, tensors, meta, err := wire.DecodeArtifact(a)
	return sdk.Artifact{Arch: arch, Tensors: tensors, Meta: meta}, err
}

func encodeDataset(d sdk.Dataset) *pb.Dataset {
	return &pb.Dataset{X: wire.Float32Bytes(d.X), Y: wire.Int64s(d.Y), N: int64(d.N), Len: int64(d.Len)}
}

func encodeFitRequest(r sdk.FitRequest) (*pb.FitRequest, error) {
	arch, err := wire.Arch(r.Arch)
	if err != nil {
		return nil, err
	}
	tr, err := json.Marshal(r.Training)
	if err != nil {
		return nil, fmt.Errorf("encoding training config: %w", err)
	}
	cfg, err := wire.Config(r.Config)
	if err != nil {
		return nil, err
	}
	out := &pb.FitRequest{
		ArchJson: arch, Train: encodeDataset(r.Train), Val: encodeDataset(r.Val),
		TrainingJson: tr, ConfigJson: cfg, Seed: r.Seed, Workers: int64(r.Workers),
		Part: int64(r.Part), Parts: int64(r.Parts), Replicate: int64(r.Replicate),
	}
	if r.Base != nil {
		if out.Base, err = wire.Artifact(r.Base.Arch, r.Base.Tensors, r.Base.Meta); err != nil {
			return nil, fmt.Errorf("base artifact: %w", err)
		}
	}
	return out, nil
}

func decodeResult(r *pb.Result) (sdk.Result, error) {
	var out sdk.Result
	var err error
	if out.Map, err = wire.Float64s(r.GetMap()); err != nil {
		return sdk.Result{}, fmt.Errorf("map: %w", err)
	}
	if out.Lower, err = wire.Float64s(r.GetLower()); err != nil {
		return sdk.Result{}, fmt.Errorf("lower: %w", err)
	}
	if out.Upper, err = wire.Float64s(r.GetUpper()); err != nil {
		return sdk.Result{}, fmt.Errorf("upper: %w", err)
	}
	if len(r.GetSet()) > 0 {
		out.Set = r.GetSet()
	}
	return out, nil
}

// encodeDraws flattens the S x N draws of each input.
func encodeDraws(draws [][][]float64) []*pb.Draws {
	out := make([]*pb.Draws, len(draws))
	for i, d := range draws {
		n := len(d[0])
		flat := make([]float64, 0, len(d)*n)
		for _, r := range d {
			flat = append(flat, r...)
		}
		out[i] = &pb.Draws{S: int64(len(d)), N: int64(n), Data: wire.Float64Bytes(flat)}
	}
	return out
}
