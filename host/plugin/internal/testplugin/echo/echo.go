package echo

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// Explainer returns map[b][t] = x[b][t] * (target[b] + 1). Its config
// makes it misbehave on request:
//
//	crash = true      panic in a goroutine, which kills the process
//	block = true      wait until the call is cancelled
//	cancelled = true  fill the maps with the number of cancelled calls seen
//	fail = "message"  return that error
type Explainer struct {
	id        string
	cancelled atomic.Int64
}

// New returns an echo explainer with the given ID.
func New(id string) *Explainer { return &Explainer{id: id} }

// Info describes it.
func (e *Explainer) Info() sdk.Info {
	return sdk.Info{ID: e.id, Version: "0.0.1", Summary: "test echo"}
}

// Check accepts the keys above.
func (e *Explainer) Check(cfg sdk.Config) error {
	return cfg.Only("crash", "block", "cancelled", "fail")
}

// Explain echoes its input, or misbehaves.
func (e *Explainer) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	if crash, _ := req.Config.Bool("crash", false); crash {
		go func() { panic("echo: crashing on request") }()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if msg, _ := req.Config.String("fail", ""); msg != "" {
		return nil, errors.New(msg)
	}
	if block, _ := req.Config.Bool("block", false); block {
		<-ctx.Done()
		e.cancelled.Add(1)
		return nil, ctx.Err()
	}
	report, _ := req.Config.Bool("cancelled", false)
	n := m.InputLen()
	maps := make([][]float64, len(req.Targets))
	for b := range maps {
		maps[b] = make([]float64, n)
		for t := range maps[b] {
			maps[b][t] = float64(req.X[b*n+t]) * float64(req.Targets[b]+1)
			if report {
				maps[b][t] = float64(e.cancelled.Load())
			}
		}
	}
	return maps, nil
}

// Mean is a summary: the pointwise mean of the draws.
type Mean struct{}

// Info describes it.
func (Mean) Info() sdk.Info {
	return sdk.Info{ID: "summary.mean", Version: "1.0.0", Output: sdk.OutputMap}
}

// Check accepts no keys.
func (Mean) Check(cfg sdk.Config) error { return cfg.Only() }

// Summarise averages.
func (Mean) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	out := make([]sdk.Result, len(draws))
	for i, d := range draws {
		m := make([]float64, len(d[0]))
		for _, r := range d {
			for j, v := range r {
				m[j] += v / float64(len(d))
			}
		}
		out[i].Map = m
	}
	return out, nil
}
