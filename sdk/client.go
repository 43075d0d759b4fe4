package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file is the host side of the protocol: values that implement
// Posterior, Explainer and Summary by calling a plugin process. They
// check requests before sending them and answers before returning them,
// and every error they return names the plugin.

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

type posteriorClient struct {
	rpc  pb.PosteriorClient
	info PosteriorInfo
}

func (c *posteriorClient) Info() PosteriorInfo { return c.info }

func (c *posteriorClient) Check(cfg Config) error { return remoteCheck(c.info.ID, cfg, c.rpc.Check) }

func (c *posteriorClient) Fit(ctx context.Context, req FitRequest) (Artifact, error) {
	id := c.info.ID
	if err := checkFitRequest(req); err != nil {
		return Artifact{}, pluginErr(id, "Fit", err)
	}
	r, err := encodeFitRequest(req)
	if err != nil {
		return Artifact{}, pluginErr(id, "Fit", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Fit(ctx, r)
	if err != nil {
		return Artifact{}, callErr(ctx, id, "Fit", err)
	}
	var art *pb.Artifact
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Artifact{}, callErr(ctx, id, "Fit", err)
		}
		switch e := ev.GetEvent().(type) {
		case *pb.FitEvent_Progress:
			if art != nil {
				return Artifact{}, pluginErr(id, "Fit", errors.New("protocol error: progress after the artifact"))
			}
			if req.Progress != nil {
				p := e.Progress
				req.Progress(Progress{Done: int(p.GetDone()), Total: int(p.GetTotal()), Message: p.GetMessage()})
			}
		case *pb.FitEvent_Artifact:
			if art != nil {
				return Artifact{}, pluginErr(id, "Fit", errors.New("protocol error: two artifacts"))
			}
			art = e.Artifact
		}
	}
	if art == nil {
		return Artifact{}, pluginErr(id, "Fit", errors.New("protocol error: the stream ended without an artifact"))
	}
	a, err := decodeArtifact(art)
	if err != nil {
		return Artifact{}, pluginErr(id, "Fit", err)
	}
	if err := checkArtifact(a); err != nil {
		return Artifact{}, pluginErr(id, "Fit", err)
	}
	return a, nil
}

func (c *posteriorClient) Sample(ctx context.Context, a Artifact, req SampleRequest) ([]nn.Params, error) {
	id := c.info.ID
	if err := checkSampleRequest(req); err != nil {
		return nil, pluginErr(id, "Sample", err)
	}
	pa, err := encodeArtifact(a)
	if err != nil {
		return nil, pluginErr(id, "Sample", err)
	}
	cfg, err := encodeConfig(req.Config)
	if err != nil {
		return nil, pluginErr(id, "Sample", err)
	}
	resp, err := c.rpc.Sample(ctx, &pb.SampleRequest{Artifact: pa, Seeds: req.Seeds, ConfigJson: cfg})
	if err != nil {
		return nil, callErr(ctx, id, "Sample", err)
	}
	draws := make([]nn.Params, len(resp.GetDraws()))
	for i, d := range resp.GetDraws() {
		if draws[i], err = wire.DecodeParams(d); err != nil {
			return nil, pluginErr(id, "Sample", fmt.Errorf("draw %d: %w", i, err))
		}
	}
	if err := checkDrawsOut(draws, len(req.Seeds)); err != nil {
		return nil, pluginErr(id, "Sample", err)
	}
	return draws, nil
}

// remoteCheck sends a Check to a plugin of any kind (the three services
// share the request and response messages).
func remoteCheck(id string, cfg Config, call func(context.Context, *pb.CheckRequest, ...grpc.CallOption) (*pb.CheckResponse, error)) error {
	b, err := encodeConfig(cfg)
	if err != nil {
		return pluginErr(id, "Check", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), infoTimeout)
	defer cancel()
	if _, err := call(ctx, &pb.CheckRequest{ConfigJson: b}); err != nil {
		return callErr(ctx, id, "Check", err)
	}
	return nil
}

type explainerClient struct {
	rpc  pb.ExplainerClient
	info ExplainerInfo
}

func (c *explainerClient) Info() ExplainerInfo { return c.info }

func (c *explainerClient) Check(cfg Config) error { return remoteCheck(c.info.ID, cfg, c.rpc.Check) }

// paramser is what the client needs of a model to send it: nn.NewModel's
// models have it.
type paramser interface{ Params() nn.Params }

func (c *explainerClient) Explain(ctx context.Context, m nn.Model, req ExplainRequest) ([][]float64, error) {
	id := c.info.ID
	if err := checkExplainRequest(m, req, c.info.Stochastic); err != nil {
		return nil, pluginErr(id, "Explain", err)
	}
	pm, ok := m.(paramser)
	if !ok {
		return nil, pluginErr(id, "Explain", fmt.Errorf("model %T has no Params() nn.Params method, so it cannot be sent to an out-of-process plugin; build it with nn.NewModel", m))
	}
	params, err := wire.Params(pm.Params())
	if err != nil {
		return nil, pluginErr(id, "Explain", err)
	}
	cfg, err := encodeConfig(req.Config)
	if err != nil {
		return nil, pluginErr(id, "Explain", err)
	}
	resp, err := c.rpc.Explain(ctx, &pb.ExplainRequest{
		Model: params, X: wire.Float32Bytes(req.X), Targets: wire.Int64s(req.Targets),
		Seeds: req.Seeds, ConfigJson: cfg,
	})
	if err != nil {
		return nil, callErr(ctx, id, "Explain", err)
	}
	maps := make([][]float64, len(resp.GetMaps()))
	for i, b := range resp.GetMaps() {
		if maps[i], err = wire.Float64s(b); err != nil {
			return nil, pluginErr(id, "Explain", fmt.Errorf("input %d: %w", i, err))
		}
	}
	if err := checkMaps(maps, len(req.Targets), m.InputLen()); err != nil {
		return nil, pluginErr(id, "Explain", err)
	}
	return maps, nil
}

type summaryClient struct {
	rpc  pb.SummaryClient
	info SummaryInfo
}

func (c *summaryClient) Info() SummaryInfo { return c.info }

func (c *summaryClient) Check(cfg Config) error { return remoteCheck(c.info.ID, cfg, c.rpc.Check) }

func (c *summaryClient) Summarise(ctx context.Context, draws [][][]float64, cfg Config) ([]Result, error) {
	id := c.info.ID
	if err := checkDrawsIn(draws, c.info.MinDraws); err != nil {
		return nil, pluginErr(id, "Summarise", err)
	}
	b, err := encodeConfig(cfg)
	if err != nil {
		return nil, pluginErr(id, "Summarise", err)
	}
	resp, err := c.rpc.Summarise(ctx, &pb.SummariseRequest{Inputs: encodeDraws(draws), ConfigJson: b})
	if err != nil {
		return nil, callErr(ctx, id, "Summarise", err)
	}
	res := make([]Result, len(resp.GetResults()))
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
