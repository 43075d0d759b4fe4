package occlusion

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// graphModel is a two-channel graph network of 90 samples with random
// weights: asymmetric padding, stride, dilation, a residual addition, a
// concatenation of branches with different kernels, max pooling with
// padding, global average pooling, linear.
func graphModel(t *testing.T) *nn.GraphModel {
	t.Helper()
	n := func(name, op string, in []string, attrs map[string]any) graph.Node {
		return graph.Node{Name: name, Op: op, Inputs: in, Attrs: attrs}
	}
	spec := graph.Spec{Name: "occ", InChannels: 2, InLen: 90, Nodes: []graph.Node{
		n("stem", "conv1d", nil, map[string]any{"out": 6, "kernel": 4, "padding": []int64{1, 2}}),
		n("b.conv", "conv1d", nil, map[string]any{"out": 6, "kernel": 3, "dilation": 2, "padding": []int64{2, 2}, "groups": 2}),
		n("b.add", "add", []string{"stem", "b.conv"}, nil),
		n("b.relu", "relu", nil, nil),
		n("k3", "conv1d", []string{"b.relu"}, map[string]any{"out": 4, "kernel": 3, "padding": []int64{1, 1}}),
		n("k9", "conv1d", []string{"b.relu"}, map[string]any{"out": 4, "kernel": 9, "padding": []int64{4, 4}}),
		n("pool", "maxpool1d", []string{"b.relu"}, map[string]any{"kernel": 3, "stride": 1, "padding": 1}),
		n("cat", "concat", []string{"k3", "k9", "pool"}, nil),
		n("down", "conv1d", nil, map[string]any{"out": 6, "kernel": 4, "stride": 2, "padding": []int64{1, 1}}),
		n("act", "tanh", nil, nil),
		n("gap", "globalavgpool", nil, nil),
		n("fc", "linear", nil, map[string]any{"out": 4}),
	}}
	net := graphtest.RandomNet(t, spec, 11)
	return nn.NewGraphModel(net)
}

// TestGraphModelFastPath: occlusion on a graph network takes the
// model's receptive-field path (its Path reports incremental copies at
// less than the forward passes' work) and gives the maps of batched
// forward passes of the occluded copies (the model with the path
// hidden), for a constant and signal baselines, one channel at a time
// and all channels, windows from 1 sample to the whole input.
func TestGraphModelFastPath(t *testing.T) {
	m := graphModel(t)
	n := m.InputLen()
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 3*n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	targets := []int{0, 3, 1}
	for _, c := range []struct {
		window, stride int
		baseline       any
	}{{1, 1, 0.5}, {7, 3, 0.0}, {20, 10, Mean}, {30, 7, Noise}, {90, 1, -1.0}} {
		for _, channels := range []string{Each, All} {
			cfg := sdk.Config{"window": int64(c.window), "stride": int64(c.stride), "baseline": c.baseline, "channels": channels}
			what := fmt.Sprintf("window %d stride %d baseline %v channels %s", c.window, c.stride, c.baseline, channels)
			before := m.Path()
			got, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: targets, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			p := m.Path()
			if p.Copies == before.Copies {
				t.Fatalf("%s: the model's WindowProbs was not called", what)
			}
			if c.window < 90 && (p.Incremental == before.Incremental || p.Done-before.Done >= p.Dense-before.Dense) {
				t.Errorf("%s: path %v: no incremental copies, or no work saved", what, p)
			}
			want, err := New().Explain(context.Background(), plainModel{m}, sdk.ExplainRequest{X: x, Targets: targets, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			for b := range want {
				top := 0.0
				for _, v := range want[b] {
					top = max(top, math.Abs(v))
				}
				for i := range want[b] {
					if d := math.Abs(got[b][i] - want[b][i]); d > 1e-5*top+1e-7 {
						t.Fatalf("%s: input %d: map[%d] = %v, by forward passes %v", what, b, i, got[b][i], want[b][i])
					}
				}
			}
		}
	}
}
