package nn

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/rng"
)

// TestGraphTrainsAsLayers: the paper's network of layers and the same
// network written as a graph (graphtest.PaperGraph) have the same layout
// (names, shapes, offsets), so Init gives them the same starting point,
// and Train computes them by the same graph, so after two epochs the
// parameters, the validation losses and Open's probabilities are the
// same bits: the front end of layers adds nothing to the network.
func TestGraphTrainsAsLayers(t *testing.T) {
	const L, K = 16, 4
	la, err := PaperArch().Reshaped(1, L, K)
	if err != nil {
		t.Fatal(err)
	}
	ga, err := GraphArch(graphtest.PaperGraph()).Reshaped(1, L, K)
	if err != nil {
		t.Fatal(err)
	}
	ll, err := NewLayout(la)
	if err != nil {
		t.Fatal(err)
	}
	gl, err := NewLayout(ga)
	if err != nil {
		t.Fatal(err)
	}
	if len(ll.Tensors) != len(gl.Tensors) || ll.Size != gl.Size {
		t.Fatalf("layouts: %d tensors of %d values and %d of %d", len(ll.Tensors), ll.Size, len(gl.Tensors), gl.Size)
	}
	for i, tl := range ll.Tensors {
		tg := gl.Tensors[i]
		if tl.Name != tg.Name || tl.Offset != tg.Offset || tl.Trainable != tg.Trainable || len(tl.Shape) != len(tg.Shape) {
			t.Fatalf("tensor %d: layers %+v, graph %+v", i, tl, tg)
		}
	}
	if ga.Classes() != K || la.Classes() != K {
		t.Fatalf("reshaped archs have %d and %d classes, want %d", la.Classes(), ga.Classes(), K)
	}
	train, val := plainData(48, 1, false), plainData(16, 2, false)
	cfg := plainCfg()
	cfg.Epochs, cfg.Batch = 2, 16
	rl, err := Train(context.Background(), la, train, val, cfg, 5, TrainOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	rg, err := Train(context.Background(), ga, train, val, cfg, 5, TrainOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rl.BestEpoch != rg.BestEpoch || rl.History[1].ValLoss != rg.History[1].ValLoss {
		t.Errorf("best epoch %d, val loss %v with layers; %d, %v as a graph", rl.BestEpoch, rl.History[1].ValLoss, rg.BestEpoch, rg.History[1].ValLoss)
	}
	for i, v := range rl.Params.Data {
		if math.Float32bits(v) != math.Float32bits(rg.Params.Data[i]) {
			t.Fatalf("parameter %d: %v with layers, %v as a graph", i, v, rg.Params.Data[i])
		}
	}
	ml, err := Open(rl.Params)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := Open(rg.Params)
	if err != nil {
		t.Fatal(err)
	}
	pl, pg := make([]float32, val.N*K), make([]float32, val.N*K)
	if err := ml.Probs(context.Background(), pl, val.X); err != nil {
		t.Fatal(err)
	}
	if err := mg.Probs(context.Background(), pg, val.X); err != nil {
		t.Fatal(err)
	}
	for i := range pl {
		if pl[i] != pg[i] {
			t.Fatalf("probability %d: %g with layers, %g as a graph", i, pl[i], pg[i])
		}
	}
}

// TestGraphArchJSON: a graph architecture survives encoding/json (the
// wire's and the artifacts' form) with its attributes' types, so the
// decoded arch compiles to the same layout; unknown node fields are
// refused.
func TestGraphArchJSON(t *testing.T) {
	a, err := GraphArch(graphtest.PaperGraph()).Reshaped(2, 40, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back Arch
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	l1, err := NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := NewLayout(back)
	if err != nil {
		t.Fatalf("decoded arch: %v", err)
	}
	if l1.Size != l2.Size || back.Classes() != 3 || back.InChannels != 2 || back.Graph.Nodes[0].Attrs["kernel"] != int64(3) {
		t.Errorf("decoded arch: %d parameters (want %d), %d classes, %d channels, kernel %#v", l2.Size, l1.Size, back.Classes(), back.InChannels, back.Graph.Nodes[0].Attrs["kernel"])
	}
	bad := []byte(`{"name":"x","in_channels":1,"in_len":8,"layers":null,"graph":{"name":"x","in_channels":1,"in_len":8,"nodes":[{"name":"a","op":"relu","colour":1}]}}`)
	if err := json.Unmarshal(bad, &back); err == nil {
		t.Error("a node with an unknown field decoded")
	}
}

// TestGraphSoftmaxOutputTrains: a graph whose output node is a softmax
// (its values probabilities) trains as the same graph ending in the
// logits: Pass's logits are log p, whose softmax is p, and the gradient
// through the softmax node equals the one of the logits (within float32
// rounding), so the losses and the parameter gradients agree.
func TestGraphSoftmaxOutputTrains(t *testing.T) {
	logits := graphtest.PaperGraph()
	probs := logits
	probs.Nodes = append(append([]graph.Node(nil), logits.Nodes...), graph.Node{Name: "probs", Op: "softmax"})
	la, err := GraphArch(logits).Reshaped(1, 16, 4)
	if err != nil {
		t.Fatal(err)
	}
	pa, err := GraphArch(probs).Reshaped(1, 16, 4)
	if err != nil {
		t.Fatal(err)
	}
	d := plainData(8, 3, false)
	lp, err := NewPass(la, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	pp, err := NewPass(pa, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float32, lp.Layout().Size)
	Init(lp.Layout(), theta, rng.For(4, "init", "", -1, -1))
	var loss [2]float64
	var grads [2][]float32
	for k, p := range []Pass{lp, pp} {
		th := append([]float32(nil), theta...)
		z := p.Forward(th, d.X, false, nil)
		dz := make([]float32, len(z))
		loss[k] = CrossEntropy(dz, z, d.Y, 4)
		grads[k] = make([]float32, len(th))
		p.Backward(th, dz, grads[k])
	}
	if math.Abs(loss[0]-loss[1]) > 1e-5 {
		t.Errorf("loss %.7g on the logits, %.7g through the softmax node", loss[0], loss[1])
	}
	top, worst := 0.0, 0.0
	for i, g := range grads[0] {
		top = max(top, math.Abs(float64(g)))
		worst = max(worst, math.Abs(float64(g-grads[1][i])))
	}
	if top == 0 || worst > 1e-4*top {
		t.Errorf("gradients differ by %.3g (largest %.3g)", worst, top)
	}
}
