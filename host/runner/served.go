package runner

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/host/torchserver"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file computes with served draws, for `uaxai explain --model` and
// `uaxai predict --model` (a ModelSource, or a torchserver.Server the
// caller started): one served draw a weights file, to which every
// explainer's model calls go.

// servedShape opens each served draw and checks that it takes inputs of
// n values and that all have the classes of draw 0, which it returns.
// names are the draws' weights files, for messages; calls bounds each
// Describe.
func servedShape(ctx context.Context, refs []sdk.ModelRef, names []string, n int, calls driver.ModelCalls) (classes int, err error) {
	for s, r := range refs {
		m, err := driver.OpenDraw(ctx, sdk.Draw{Served: &r}, calls)
		if err != nil {
			return 0, fmt.Errorf("draw %d (%s): %w", s, names[s], err)
		}
		dn, dk := m.InputLen(), m.Classes()
		m.Close()
		switch {
		case dn != n:
			return 0, fmt.Errorf("draw %d (%s): the served model takes inputs of %d values, and the input's waveforms have %d", s, names[s], dn, n)
		case s == 0:
			classes = dk
		case dk != classes:
			return 0, fmt.Errorf("draw %d (%s): %d classes, and draw 0 has %d (want one shape for all draws)", s, names[s], dk, classes)
		}
	}
	return classes, nil
}

// servedBatch is the inputs of one Probs request of servedProbs: a
// forward pass's batch, which the network bounds count (forwardBatch).
const servedBatch = forwardBatch

// servedProbs writes into dst (nIn x classes) the mean over the served
// draws of the class probabilities of the inputs x (nIn x n),
// (1/S) sum_s p(c | x_i, theta_s), accumulated in float64. calls bounds
// each request (a batch of servedBatch inputs).
func servedProbs(ctx context.Context, dst []float64, refs []sdk.ModelRef, names []string, x []float32, n, classes int, calls driver.ModelCalls) error {
	nIn := len(x) / n
	clear(dst)
	pr := make([]float32, servedBatch*classes)
	for s, r := range refs {
		m, err := driver.OpenDraw(ctx, sdk.Draw{Served: &r}, calls)
		if err != nil {
			return fmt.Errorf("draw %d (%s): %w", s, names[s], err)
		}
		err = m.Call(ctx, func(model nn.Model) error {
			for b0 := 0; b0 < nIn; b0 += servedBatch {
				b := min(servedBatch, nIn-b0)
				if err := model.Probs(ctx, pr[:b*classes], x[b0*n:(b0+b)*n]); err != nil {
					return err
				}
				for j, v := range pr[:b*classes] {
					if math.IsNaN(float64(v)) {
						return fmt.Errorf("input %d: a probability is NaN", b0+j/classes)
					}
					dst[b0*classes+j] += float64(v)
				}
			}
			return nil
		})
		m.Close()
		if err != nil {
			return fmt.Errorf("draw %d (%s): %w", s, names[s], err)
		}
	}
	for i := range dst {
		dst[i] /= float64(len(refs))
	}
	return nil
}

// serveDraws returns the served draws of an Explain or a Predict and
// their names: served's, a server the caller started (weights, if any,
// must be its files), else those model serves on the shape of in (one a
// weights file, or mc's MC-dropout draws), which the caller closes
// (started): the Python kit's server of a PyTorch module, or, for a
// native graph network, a model service of this process.
//
// calls bounds each request to the draws' service by lim's model_call;
// past it a PyTorch model's server is killed (torchserver.Server.ModelCalls).
func serveDraws(ctx context.Context, model ModelSource, served *torchserver.Server, weights []string, mc mcDropout, in inputs, lim limits.Limits) (refs []sdk.ModelRef, names []string, started io.Closer, calls driver.ModelCalls, err error) {
	if served == nil {
		return model.serve(ctx, weights, mc, in, lim)
	}
	if c, t := served.Shape(); c != in.c || t != in.t {
		return nil, nil, nil, calls, fmt.Errorf("the model server of %s takes inputs of %d channel(s) x %d samples, and the input's waveforms have %d x %d", served.Module(), c, t, in.c, in.t)
	}
	if len(weights) > 0 && strings.Join(weights, "\x00") != strings.Join(served.Weights(), "\x00") {
		return nil, nil, nil, calls, fmt.Errorf("weights %s: the model server of %s serves %s (want its files, or none)", strings.Join(weights, ","), served.Module(), strings.Join(served.Weights(), ","))
	}
	return served.Draws(), served.Names(), nil, served.ModelCalls(modelCallLimit(lim)), nil
}

// modelCallLimit is limits.model_call of l (its default if unset).
func modelCallLimit(l limits.Limits) sdk.CallLimit {
	return sdk.CallLimit{Timeout: l.OrDefault().ModelCall, Key: "limits.model_call"}
}
