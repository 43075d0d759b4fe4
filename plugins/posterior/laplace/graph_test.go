package laplace

import (
	"context"
	"math"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// bnGraph is bnArch written as a graph of ops: the same modules under the
// same names.
func bnGraph() nn.Arch {
	n := func(name, op string, attrs map[string]any) graph.Node {
		return graph.Node{Name: name, Op: op, Attrs: attrs}
	}
	return nn.GraphArch(graph.Spec{Name: "laplace-graph", InChannels: 1, InLen: 16, Nodes: []graph.Node{
		n("conv1", "conv1d", map[string]any{"out": 4, "kernel": 3}), n("relu1", "relu", nil),
		n("gmp", "globalmaxpool", nil), n("bn1", "batchnorm1d", nil), n("flat", "flatten", nil),
		n("fc1", "linear", map[string]any{"out": 6}), n("relu2", "relu", nil),
		n("fc2", "linear", map[string]any{"out": 3}),
	}})
}

// TestFisherOfAGraph: the Fisher diagonal of a graph network equals that
// of the same network written as layers (same parameters, same records),
// within float32 rounding; a fit on the graph (the base's network given)
// gives draws that are graph networks of the base's layout.
func TestFisherOfAGraph(t *testing.T) {
	la, ga := bnArch(), bnGraph()
	lay, err := nn.NewLayout(la)
	if err != nil {
		t.Fatal(err)
	}
	theta := randomParams(t, la, 3)
	d := tinyData(40, 1, 0.5)
	fl, err := Fisher(context.Background(), la, theta, d, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	fg, err := Fisher(context.Background(), ga, theta, d, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	top, worst := 0.0, 0.0
	for i := range fl {
		top = max(top, fl[i])
		worst = max(worst, math.Abs(fl[i]-fg[i]))
	}
	t.Logf("largest Fisher entry %.4g, largest difference %.3g", top, worst)
	if top == 0 || worst > 1e-5*top {
		t.Errorf("Fisher of the graph differs from the layers' by %.3g (largest entry %.3g)", worst, top)
	}
	base := sdk.Artifact{Arch: ga, Tensors: map[string][]float32{"member.0": theta}}
	req := sdk.FitRequest{Arch: ga, Train: d, Val: tinyData(30, 2, 0.5), Config: sdk.Config{"calibration_draws": int64(4)}, Seed: 5, Base: &base, Workers: 2}
	a, err := New().Fit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	draws, err := New().Sample(context.Background(), a, sdk.SampleRequest{Config: req.Config, Seeds: []uint64{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	for s, p := range draws {
		m, err := nn.Open(p)
		if err != nil {
			t.Fatalf("draw %d: %v", s, err)
		}
		if _, ok := m.(*nn.GraphModel); !ok || len(p.Data) != lay.Size {
			t.Errorf("draw %d: a %T of %d parameters, want a graph of %d", s, m, len(p.Data), lay.Size)
		}
	}
}
