package sdk

import (
	"context"
	"errors"
	"sync"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk/internal/check"
	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file is the plugin side of the protocol: gRPC services that decode
// a request, call the plugin and encode its answer. A plugin's error goes
// back as a gRPC status with the plugin's message; the client adds the ID.

// toStatus converts a plugin's error to a gRPC status error.
func toStatus(err error, code codes.Code) error {
	switch {
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	return status.Error(code, err.Error())
}

// serviceStatus is the status of an Explain (or a Load) whose
// model-service call failed: DeadlineExceeded for a request past the
// host's limit (the host then stops what serves the draw), else
// toStatus's (Unknown).
func serviceStatus(err error) error {
	if _, ok := errors.AsType[*CallTimeoutError](err); ok {
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return toStatus(err, codes.Unknown)
}

// guard turns a panic in a handler into an Internal status and logs the
// stack in the plugin's log (which the host shows).
func guard(log hclog.Logger, id, method string, err *error) {
	if r := recover(); r != nil {
		e := check.Recovered(id, method, r)
		log.Error("plugin panicked", "plugin", id, "method", method, "error", e)
		*err = status.Errorf(codes.Internal, "panic: %v (stack trace in the plugin's log)", r)
	}
}

type posteriorServer struct {
	pb.UnimplementedPosteriorServer
	impl Posterior
	info Info // as Describe read it when the plugin started
	log  hclog.Logger
}

func (s *posteriorServer) Info(context.Context, *pb.InfoRequest) (*pb.PosteriorInfo, error) {
	return &pb.PosteriorInfo{Info: encodeInfo(s.info), Finite: s.info.Finite, Base: s.info.Base, BaseKeys: s.info.BaseKeys, Files: s.info.Files,
		Replicates: s.info.Replicates, ServesModels: s.info.ServesModels}, nil
}

// serveCheck answers a Check for a plugin of any kind.
func serveCheck(log hclog.Logger, id string, r *pb.CheckRequest, check func(Config) error) (_ *pb.CheckResponse, err error) {
	defer guard(log, id, "Check", &err)
	cfg, err := decodeConfig(r.GetConfigJson())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := check(cfg); err != nil {
		return nil, toStatus(err, codes.InvalidArgument)
	}
	return &pb.CheckResponse{}, nil
}

func (s *posteriorServer) Check(_ context.Context, r *pb.CheckRequest) (*pb.CheckResponse, error) {
	draws := int(r.GetDraws())
	return serveCheck(s.log, s.info.ID, r, func(cfg Config) error { return s.impl.Check(cfg, draws) })
}

// Parts answers the plugin's number of parts for a recipe table (see
// Parted); a plugin that is not Parted answers 0, not parted.
func (s *posteriorServer) Parts(_ context.Context, r *pb.CheckRequest) (_ *pb.PartsResponse, err error) {
	defer guard(s.log, s.info.ID, "Parts", &err)
	p, ok := s.impl.(Parted)
	if !ok {
		return &pb.PartsResponse{}, nil
	}
	cfg, err := decodeConfig(r.GetConfigJson())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	k, err := p.Parts(cfg)
	if err != nil {
		return nil, toStatus(err, codes.InvalidArgument)
	}
	return &pb.PartsResponse{Parts: int64(k)}, nil
}

func (s *posteriorServer) Fit(r *pb.FitRequest, stream pb.Posterior_FitServer) (err error) {
	defer guard(s.log, s.info.ID, "Fit", &err)
	req, err := decodeFitRequest(r)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	if err := unparted(s.impl, req); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	// Progress may be called from several goroutines, and after Fit
	// returns by a careless plugin: sends are serialised and stop with
	// the call.
	var mu sync.Mutex
	done := false
	req.Progress = func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		ev := &pb.FitEvent{Event: &pb.FitEvent_Progress{Progress: &pb.Progress{Done: int64(p.Done), Total: int64(p.Total), Message: p.Message}}}
		if err := stream.Send(ev); err != nil {
			s.log.Debug("progress not sent", "error", err)
		}
	}
	defer func() {
		mu.Lock()
		done = true
		mu.Unlock()
	}()
	a, err := s.impl.Fit(stream.Context(), req)
	if err != nil {
		return toStatus(err, codes.Unknown)
	}
	pa, err := encodeArtifact(a)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	mu.Lock()
	defer mu.Unlock()
	done = true
	return stream.Send(&pb.FitEvent{Event: &pb.FitEvent_Artifact{Artifact: pa}})
}

func (s *posteriorServer) Sample(ctx context.Context, r *pb.SampleRequest) (_ *pb.SampleResponse, err error) {
	defer guard(s.log, s.info.ID, "Sample", &err)
	a, err := decodeArtifact(r.GetArtifact())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	cfg, err := decodeConfig(r.GetConfigJson())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	req := SampleRequest{Seeds: r.GetSeeds(), Config: cfg, SocketDir: r.GetSocketDir()}
	if ds, ok := s.impl.(DrawSampler); ok && s.info.ServesModels {
		draws, err := ds.SampleDraws(ctx, a, req)
		if err != nil {
			return nil, toStatus(err, codes.Unknown)
		}
		return encodeDraws(draws)
	}
	draws, err := s.impl.Sample(ctx, a, req)
	if err != nil {
		return nil, toStatus(err, codes.Unknown)
	}
	return encodeDraws(ParamsDraws(draws))
}

// encodeDraws is the answer to a Sample: the draws' parameters, or their
// references when they are served (all one way or all the other).
func encodeDraws(draws []Draw) (*pb.SampleResponse, error) {
	out := &pb.SampleResponse{}
	for i, d := range draws {
		if (d.Served != nil) != (draws[0].Served != nil) {
			return nil, status.Errorf(codes.Internal, "draw %d is %s and draw 0 is %s: a posterior's draws are all served or all parameters", i, drawKind(d), drawKind(draws[0]))
		}
		if d.Served != nil {
			out.Served = append(out.Served, &pb.ModelService{Address: d.Served.Address, Handle: d.Served.Handle})
			continue
		}
		p, err := wire.Params(d.Params)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "draw %d: %v", i, err)
		}
		out.Draws = append(out.Draws, p)
	}
	return out, nil
}

func drawKind(d Draw) string {
	if d.Served != nil {
		return "served"
	}
	return "parameters"
}

type explainerServer struct {
	pb.UnimplementedExplainerServer
	impl Explainer
	info Info
	log  hclog.Logger

	mu     sync.Mutex
	next   uint64              // the last handle given out
	models map[uint64]nn.Model // loaded draws by handle
	conns  serviceConns        // connections to the host's model service
}

func (s *explainerServer) Info(context.Context, *pb.InfoRequest) (*pb.ExplainerInfo, error) {
	return &pb.ExplainerInfo{Info: encodeInfo(s.info), Needs: uint32(s.info.Needs), Stochastic: s.info.Stochastic, WantsModel: s.info.WantsModel}, nil
}

func (s *explainerServer) Check(_ context.Context, r *pb.CheckRequest) (*pb.CheckResponse, error) {
	return serveCheck(s.log, s.info.ID, r, s.impl.Check)
}

// Load builds a draw's model once; batches then name it by its handle.
// A request with a model service (the host's answer to Info.WantsModel,
// or a host that serves every explainer so) gives a model that the host
// computes; one with parameters, a local nn.GraphModel.
func (s *explainerServer) Load(ctx context.Context, r *pb.LoadRequest) (_ *pb.LoadResponse, err error) {
	defer guard(s.log, s.info.ID, "Load", &err)
	var m nn.Model
	switch {
	case r.GetService() != nil && r.GetModel() != nil:
		return nil, status.Error(codes.InvalidArgument, "the Load carries both a model service and parameters; want one of them")
	case r.GetService() != nil:
		// The host's limit of each request comes in the metadata.
		rm, err := newServiceModel(ctx, &s.conns, r.GetService(), callLimitOf(ctx))
		if _, ok := errors.AsType[*CallTimeoutError](err); ok {
			return nil, serviceStatus(err)
		}
		if err != nil {
			return nil, toStatus(err, codes.InvalidArgument)
		}
		m = rm
	default:
		params, err := wire.DecodeParams(r.GetModel())
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		if m, err = nn.Open(params); err != nil {
			return nil, status.Error(codes.InvalidArgument, "building the model: "+err.Error())
		}
	}
	// A host that gave up waiting never learns the handle and could never
	// release the model: keep nothing for it.
	if err := ctx.Err(); err != nil {
		return nil, toStatus(err, codes.Canceled)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	s.models[s.next] = m
	return &pb.LoadResponse{Handle: s.next}, nil
}

// Release forgets a loaded draw.
func (s *explainerServer) Release(_ context.Context, r *pb.ReleaseRequest) (*pb.ReleaseResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.models[r.GetHandle()]; !ok {
		return nil, status.Errorf(codes.NotFound, "no model with handle %d is loaded", r.GetHandle())
	}
	delete(s.models, r.GetHandle())
	return &pb.ReleaseResponse{}, nil
}

func (s *explainerServer) Explain(ctx context.Context, r *pb.ExplainRequest) (_ *pb.ExplainResponse, err error) {
	defer guard(s.log, s.info.ID, "Explain", &err)
	s.mu.Lock()
	m, ok := s.models[r.GetModel()]
	s.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no model with handle %d is loaded (Load it first)", r.GetModel())
	}
	x, err := wire.Float32s(r.GetX())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, "x: "+err.Error())
	}
	cfg, err := decodeConfig(r.GetConfigJson())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	req := ExplainRequest{X: x, Targets: wire.Ints(r.GetTargets()), Seeds: r.GetSeeds(), Config: cfg}
	if err := check.Batch(m.InputLen(), m.Classes(), req.X, req.Targets, req.Seeds, s.info.Stochastic); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if rm, ok := m.(*serviceModel); ok {
		m = rm.withCall(ctx) // its requests bounded by the limit of the Explain's metadata
	}
	maps, err := s.impl.Explain(ctx, m, req)
	if err != nil {
		return nil, serviceStatus(err)
	}
	out := &pb.ExplainResponse{Maps: make([][]byte, len(maps))}
	for i, mp := range maps {
		out.Maps[i] = wire.Float64Bytes(mp)
	}
	return out, nil
}

type summaryServer struct {
	pb.UnimplementedSummaryServer
	impl Summary
	info Info
	log  hclog.Logger
}

func (s *summaryServer) Info(context.Context, *pb.InfoRequest) (*pb.SummaryInfo, error) {
	return &pb.SummaryInfo{Info: encodeInfo(s.info), Output: string(s.info.Output), MinDraws: int64(s.info.MinDraws)}, nil
}

func (s *summaryServer) Check(_ context.Context, r *pb.CheckRequest) (*pb.CheckResponse, error) {
	return serveCheck(s.log, s.info.ID, r, s.impl.Check)
}

func (s *summaryServer) Summarise(ctx context.Context, r *pb.SummariseRequest) (_ *pb.SummariseResponse, err error) {
	defer guard(s.log, s.info.ID, "Summarise", &err)
	draws, err := decodeDraws(r.GetInputs())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := check.Draws(draws, s.info.MinDraws); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	cfg, err := decodeConfig(r.GetConfigJson())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	res, err := s.impl.Summarise(ctx, draws, cfg)
	if err != nil {
		return nil, toStatus(err, codes.Unknown)
	}
	out := &pb.SummariseResponse{Results: make([]*pb.Result, len(res))}
	for i, x := range res {
		out.Results[i] = encodeResult(x)
	}
	return out, nil
}
