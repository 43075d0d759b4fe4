package graph

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestFeatures: the penultimate features are what the last linear layer
// reads: W f + b, written out here, gives ForwardLogits's logits, and f
// equals the value the gradient pass keeps for the layer that produces
// it (LayerGrad's act, another code path).
func TestFeatures(t *testing.T) {
	for si, spec := range windowSpecs() {
		n := randomNet(t, spec, uint64(90+si))
		in, K := n.InShape(), n.Classes()
		v, shape, err := n.penultimate()
		if err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		D := shape.Size()
		B := 5
		rng := rand.New(rand.NewPCG(uint64(si), 7))
		x := randVec(rng, B*in.Size())
		f := make([]float32, B*D)
		if err := n.Features(f, x); err != nil {
			t.Fatal(err)
		}
		logits := make([]float32, B*K)
		if err := n.ForwardLogits(logits, x); err != nil {
			t.Fatal(err)
		}
		lin := n.output
		for n.nodes[lin].op.Kind != "linear" { // past a softmax or dropout (eval: the identity)
			lin = n.nodes[lin].inputs[0] - 1
		}
		p := n.theta(nil, lin)
		want := make([]float32, B*K)
		for b := range B {
			for k := range K {
				s := float64(0)
				if len(p) > 1 {
					s = float64(p[1][k])
				}
				for j := range D {
					s += float64(p[0][k*D+j]) * float64(f[b*D+j])
				}
				want[b*K+k] = float32(s)
			}
		}
		if d, ok := closeTo(logits, want, 1e-5); !ok {
			t.Errorf("%s: W f + b differs from the logits by %.3g of the largest", spec.Name, d)
		}
		l, err := n.Layer(n.nodes[v-1].name)
		if err != nil {
			t.Fatal(err)
		}
		act, grad := make([]float32, B*D), make([]float32, B*D)
		if err := n.Grad(x, GradRequest{Targets: make([]int, B), Layer: &l, Act: act, LayerGrad: grad}); err != nil {
			t.Fatal(err)
		}
		if d, ok := closeTo(f, act, 1e-6); !ok {
			t.Errorf("%s: features differ from layer %s's output by %.3g", spec.Name, l.Name, d)
		}
	}
}

// TestFeaturesRefused: a network whose scores are not a linear layer's
// has no penultimate features, and says which node gives them.
func TestFeaturesRefused(t *testing.T) {
	spec := Spec{Name: "convhead", InChannels: 1, InLen: 20, Nodes: []Node{
		wnode("c1", "conv1d", nil, map[string]any{"out": 3, "kernel": 3}),
		wnode("gap", "globalavgpool", nil, nil),
		wnode("sm", "softmax", nil, nil),
	}}
	n := randomNet(t, spec, 1)
	_, err := n.Penultimate()
	if err == nil || !strings.Contains(err.Error(), `"gap"`) || !strings.Contains(err.Error(), "linear") {
		t.Fatalf("got %v; want an error naming node gap and the linear layer it needs", err)
	}
	if err := n.Features(make([]float32, 3), make([]float32, 20)); err == nil {
		t.Fatal("Features of a network without a linear head: no error")
	}
}
