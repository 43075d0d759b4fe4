package mcdropout

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// TestGraphDraws: on a graph architecture, MC dropout trains with a
// dropout node on the output linear's input and passes the posterior
// conformance checks; each draw's probabilities are, independently
// computed, softmax(W (h m / (1-p)) + b) with h the dropout's input (the
// trained network's fc1 -> relu output), m the draw's keep mask and W, b
// the output linear's parameters.
func TestGraphDraws(t *testing.T) {
	req := fitRequest(sdk.Config{"p": 0.3})
	req.Arch = nn.GraphArch(graphtest.Residual(16))
	sdktest.Posterior(t, New(), sdktest.PosteriorCase{Arch: req.Arch, Train: req.Train, Val: req.Val, Training: req.Training, Config: req.Config, Seed: req.Seed, Draws: 3})
	a, err := New().Fit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	trained, err := nn.Open(nn.Params{Arch: a.Arch, Data: a.Tensors["map"]})
	if err != nil {
		t.Fatal(err)
	}
	lay, err := nn.NewLayout(a.Arch)
	if err != nil {
		t.Fatal(err)
	}
	W, b := lay.View(a.Tensors["map"], "fc2.weight"), lay.View(a.Tensors["map"], "fc2.bias")
	x := req.Val.X
	B := req.Val.N
	h := make([]float32, B*6)
	if err := trained.LayerGrad(context.Background(), h, make([]float32, B*6), x, make([]int, B), DropoutNode); err != nil {
		t.Fatal(err)
	}
	seeds := []uint64{7, 8}
	draws, err := New().Sample(context.Background(), a, sdk.SampleRequest{Config: req.Config, Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	for s, d := range draws {
		for _, nd := range d.Arch.Graph.Nodes {
			if nd.Op == "dropout" {
				t.Fatalf("draw %d keeps dropout node %q", s, nd.Name)
			}
		}
		m, err := nn.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, B*3)
		if err := m.Probs(context.Background(), got, x); err != nil {
			t.Fatal(err)
		}
		mask := Mask(make([]bool, 6), 0.3, seeds[s])
		for r := range B {
			z := make([]float64, 3)
			for o := range 3 {
				z[o] = float64(b[o])
				for i := range 6 {
					if mask[i] {
						z[o] += float64(W[o*6+i]) * float64(h[r*6+i]) / 0.7
					}
				}
			}
			mx := max(z[0], z[1], z[2])
			sum := 0.0
			for o := range z {
				z[o] = math.Exp(z[o] - mx)
				sum += z[o]
			}
			for o := range z {
				if want := z[o] / sum; math.Abs(float64(got[r*3+o])-want) > 1e-5 {
					t.Fatalf("draw %d input %d class %d: probability %.7g, want %.7g", s, r, o, got[r*3+o], want)
				}
			}
		}
	}
}

// TestGraphDropoutRefused: a graph whose output is not linear, or that
// has a dropout node already, is refused with what is accepted.
func TestGraphDropoutRefused(t *testing.T) {
	a := nn.GraphArch(graphtest.Residual(16))
	spec := *a.Graph
	spec.Nodes = append(append([]graph.Node(nil), spec.Nodes...), graph.Node{Name: "probs", Op: "softmax"})
	spec.Output = "probs"
	if _, err := WithDropout(nn.GraphArch(spec), 0.2); err == nil || !strings.Contains(err.Error(), "linear output node") {
		t.Errorf("softmax output: %v", err)
	}
	spec = *a.Graph
	spec.Nodes = append([]graph.Node{{Name: "drop", Op: "dropout"}}, spec.Nodes...)
	if _, err := WithDropout(nn.GraphArch(spec), 0.2); err == nil || !strings.Contains(err.Error(), `already has a dropout node "drop"`) {
		t.Errorf("dropout present: %v", err)
	}
}

// TestGraphDropoutReadsTheLinearsInput: the dropout node reads what the
// output linear read, here the first node (index 0) of the graph, and
// the linear reads the dropout.
func TestGraphDropoutReadsTheLinearsInput(t *testing.T) {
	a := nn.GraphArch(graph.Spec{Name: "two", InChannels: 2, InLen: 8, Nodes: []graph.Node{
		{Name: "gap", Op: "globalavgpool"}, {Name: "fc", Op: "linear", Attrs: map[string]any{"out": 3}},
	}})
	b, err := WithDropout(a, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	n := b.Graph.Nodes
	if len(n) != 3 || n[1].Name != DropoutNode || !slices.Equal(n[1].Inputs, []string{"gap"}) || !slices.Equal(n[2].Inputs, []string{DropoutNode}) {
		t.Errorf("nodes %+v", n)
	}
}
