package sdk

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file is the plugin side of the protocol: gRPC services that decode
// a request, call the plugin and encode its answer. A plugin's error goes
// back as a gRPC status with the plugin's message; the client adds the ID.

// modelBuilder builds the model of a parameter draw inside the plugin
// process; Serve uses nn.NewModel, tests inject fakes.
type modelBuilder func(nn.Params) (nn.Model, error)

// newModel is nn.NewModel as a modelBuilder.
func newModel(p nn.Params) (nn.Model, error) {
	m, err := nn.NewModel(p)
	if err != nil {
		return nil, err
	}
	return m, nil
}

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

// guard turns a panic in a handler into an Internal status and logs the
// stack in the plugin's log (which the host shows).
func guard(log hclog.Logger, id, method string, err *error) {
	if r := recover(); r != nil {
		e := recovered(id, method, r)
		log.Error("plugin panicked", "plugin", id, "method", method, "error", e)
		*err = status.Errorf(codes.Internal, "panic: %v (stack trace in the plugin's log)", r)
	}
}

// modelCacheSize is how many built models the explainer server keeps: the
// host sends the same draw for consecutive batches, and a few draws at
// once when it runs workers in parallel.
const modelCacheSize = 8

// modelCache keeps the last built models keyed by a hash of (architecture
// JSON, parameter bytes), most recent first.
type modelCache struct {
	build   modelBuilder
	mu      sync.Mutex
	entries []cachedModel
}

type cachedModel struct {
	key [sha256.Size]byte
	m   nn.Model
}

func (c *modelCache) get(p *pb.Params) (nn.Model, error) {
	h := sha256.New()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(p.GetArchJson())))
	h.Write(n[:])
	h.Write(p.GetArchJson())
	h.Write(p.GetData())
	var key [sha256.Size]byte
	h.Sum(key[:0])

	c.mu.Lock()
	for i, e := range c.entries {
		if e.key == key {
			copy(c.entries[1:i+1], c.entries[:i])
			c.entries[0] = e
			c.mu.Unlock()
			return e.m, nil
		}
	}
	c.mu.Unlock()

	params, err := wire.DecodeParams(p)
	if err != nil {
		return nil, err
	}
	m, err := c.build(params)
	if err != nil {
		return nil, fmt.Errorf("building the model: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) < modelCacheSize {
		c.entries = append(c.entries, cachedModel{})
	}
	copy(c.entries[1:], c.entries[:len(c.entries)-1])
	c.entries[0] = cachedModel{key: key, m: m}
	return m, nil
}

type posteriorServer struct {
	pb.UnimplementedPosteriorServer
	impl Posterior
	id   string
	log  hclog.Logger
}

func (s *posteriorServer) Info(context.Context, *pb.InfoRequest) (_ *pb.PosteriorInfo, err error) {
	defer guard(s.log, s.id, "Info", &err)
	i := s.impl.Info()
	return &pb.PosteriorInfo{Info: encodeInfo(i.Info), Finite: i.Finite}, nil
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
	return serveCheck(s.log, s.id, r, s.impl.Check)
}

func (s *posteriorServer) Fit(r *pb.FitRequest, stream pb.Posterior_FitServer) (err error) {
	defer guard(s.log, s.id, "Fit", &err)
	req, err := decodeFitRequest(r)
	if err != nil {
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
	defer guard(s.log, s.id, "Sample", &err)
	a, err := decodeArtifact(r.GetArtifact())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	cfg, err := decodeConfig(r.GetConfigJson())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	draws, err := s.impl.Sample(ctx, a, SampleRequest{Seeds: r.GetSeeds(), Config: cfg})
	if err != nil {
		return nil, toStatus(err, codes.Unknown)
	}
	out := &pb.SampleResponse{Draws: make([]*pb.Params, len(draws))}
	for i, d := range draws {
		if out.Draws[i], err = wire.Params(d); err != nil {
			return nil, status.Errorf(codes.Internal, "draw %d: %v", i, err)
		}
	}
	return out, nil
}

type explainerServer struct {
	pb.UnimplementedExplainerServer
	impl   Explainer
	id     string
	log    hclog.Logger
	models *modelCache
}

func (s *explainerServer) Info(context.Context, *pb.InfoRequest) (_ *pb.ExplainerInfo, err error) {
	defer guard(s.log, s.id, "Info", &err)
	i := s.impl.Info()
	return &pb.ExplainerInfo{Info: encodeInfo(i.Info), Needs: uint32(i.Needs), Stochastic: i.Stochastic}, nil
}

func (s *explainerServer) Check(_ context.Context, r *pb.CheckRequest) (*pb.CheckResponse, error) {
	return serveCheck(s.log, s.id, r, s.impl.Check)
}

func (s *explainerServer) Explain(ctx context.Context, r *pb.ExplainRequest) (_ *pb.ExplainResponse, err error) {
	defer guard(s.log, s.id, "Explain", &err)
	info := s.impl.Info()
	m, err := s.models.get(r.GetModel())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
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
	if err := checkExplainRequest(m, req, info.Stochastic); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	maps, err := s.impl.Explain(ctx, m, req)
	if err != nil {
		return nil, toStatus(err, codes.Unknown)
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
	id   string
	log  hclog.Logger
}

func (s *summaryServer) Info(context.Context, *pb.InfoRequest) (_ *pb.SummaryInfo, err error) {
	defer guard(s.log, s.id, "Info", &err)
	i := s.impl.Info()
	return &pb.SummaryInfo{Info: encodeInfo(i.Info), Output: string(i.Output), MinDraws: int64(i.MinDraws)}, nil
}

func (s *summaryServer) Check(_ context.Context, r *pb.CheckRequest) (*pb.CheckResponse, error) {
	return serveCheck(s.log, s.id, r, s.impl.Check)
}

func (s *summaryServer) Summarise(ctx context.Context, r *pb.SummariseRequest) (_ *pb.SummariseResponse, err error) {
	defer guard(s.log, s.id, "Summarise", &err)
	draws, err := decodeDraws(r.GetInputs())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := checkDrawsIn(draws, s.impl.Info().MinDraws); err != nil {
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
