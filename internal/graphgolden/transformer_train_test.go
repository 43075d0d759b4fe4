package graphgolden

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
	"github.com/uaxai/uaxai/sdk/onnx"
)

// TestGoldenTransformerTraining: the golden Transformer trains in Go as
// in PyTorch. recipes/archs/transformer.toml with its dropout off (every
// dropout node's p and attention's dropout set to 0), from
// model.safetensors, trained 8 Adam steps (lr 1e-3, weight decay 1e-4 as
// L2) on 4 fixed batches of 8 taken in order (train_x.csv, train_y.csv),
// gives before each step the mean cross-entropy PyTorch 1.13 gave
// (train_losses.csv, testdata/peers/transformer_golden.py's train_curve)
// within 1e-5 relative, and after the last every parameter within 1e-5
// of PyTorch's (train_final.safetensors; 2.4e-7 measured). The
// attention's key biases are the exception, compared only to Adam's bound: a key bias adds the same q.b
// to every score of a query, which the softmax ignores, so its gradient is
// zero but for rounding, and Adam, which divides by the gradient's size,
// turns that noise into steps of about lr on both sides (up to steps x
// lr from the start). The ONNX export (no dropout nodes; LayerNorm as
// its operators, its parameters named after them) imported and trained
// the same way gives the same losses.
func TestGoldenTransformerTraining(t *testing.T) {
	file := func(name string) string { return golden.File(t, "transformer", name) }
	spec, err := graph.ReadSpecFile(filepath.Join(golden.RepoRoot(t), "recipes", "archs", "transformer.toml"))
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for i := range spec.Nodes {
		nd := &spec.Nodes[i]
		switch nd.Op {
		case "dropout":
			nd.Attrs["p"] = 0.0
			off++
		case "attention":
			nd.Attrs["dropout"] = 0.0
			off++
		}
	}
	if off < 8 {
		t.Fatalf("%d dropout nodes and attention blocks turned off; the spec has 2 layers of 4", off)
	}
	arch := nn.GraphArch(spec)
	start, err := safetensors.ReadFile(file("model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	params, err := nn.ParamsFromFile(arch, start, "model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	const batch, batches, steps = 8, 4, 8
	pass, err := nn.NewPass(arch, batch, 1)
	if err != nil {
		t.Fatal(err)
	}
	lay := pass.Layout()
	x := golden.Flat(golden.CSV32(t, file("train_x.csv")))
	var y []int
	for _, r := range golden.CSV32(t, file("train_y.csv")) {
		y = append(y, int(r[0]))
	}
	if len(y) != batch*batches || len(x) != len(y)*pass.InputLen() {
		t.Fatalf("%d labels and %d values; want %d records of %d", len(y), len(x), batch*batches, pass.InputLen())
	}
	want := golden.CSV32(t, file("train_losses.csv"))
	p := append([]float32(nil), params.Data...)
	cfg := nn.TrainConfig{LR: 1e-3, WeightDecay: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	opt := nn.NewAdam(lay, cfg)
	K, n := pass.Classes(), pass.InputLen()
	dz, grad := make([]float32, batch*K), make([]float32, lay.Size)
	var lossRel, paramAbs float64
	for k := range steps {
		b := k % batches
		logits := pass.Forward(p, x[b*batch*n:(b+1)*batch*n], true, nil)
		loss := nn.CrossEntropy(dz, logits, y[b*batch:(b+1)*batch], K)
		w := float64(want[k][0])
		lossRel = max(lossRel, math.Abs(loss-w)/math.Abs(w))
		if math.Abs(loss-w) > 1e-5*math.Abs(w) {
			t.Errorf("step %d: loss %.9g, PyTorch %.9g", k, loss, w)
		}
		clear(grad)
		pass.Backward(p, dz, grad)
		opt.Step(p, grad)
	}
	final, err := safetensors.ReadFile(file("train_final.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	const E = 16 // the model's width: in_proj_bias is [q; k; v], E each
	compared := 0
	for _, tn := range final.Tensors {
		if _, ok := lay.Lookup(tn.Name); !ok {
			t.Errorf("PyTorch's %s is not a parameter of the spec", tn.Name)
			continue
		}
		got, from := lay.View(p, tn.Name), lay.View(params.Data, tn.Name)
		for i, w := range tn.Data {
			if strings.HasSuffix(tn.Name, ".in_proj_bias") && i >= E && i < 2*E {
				bound := steps * cfg.LR * 1.01
				if math.Abs(float64(got[i]-from[i])) > bound || math.Abs(float64(w-from[i])) > bound {
					t.Errorf("%s[%d] (a key bias) moved from %.7g to %.7g, PyTorch to %.7g: more than Adam's %g", tn.Name, i, from[i], got[i], w, bound)
				}
				compared++
				continue
			}
			d := math.Abs(float64(got[i] - w))
			paramAbs = max(paramAbs, d)
			if d > 1e-5 || math.IsNaN(d) {
				t.Errorf("%s[%d] = %.7g after %d steps, PyTorch %.7g", tn.Name, i, got[i], steps, w)
				break
			}
			compared++
		}
	}
	t.Logf("losses within %.2g relative of PyTorch's, parameters within %.2g after %d steps", lossRel, paramAbs, steps)
	if compared != lay.Size {
		t.Errorf("%d values compared of the spec's %d", compared, lay.Size)
	}

	ospec, oparams, err := onnx.LoadSpec(file("model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	oarch := nn.GraphArch(ospec)
	opass, err := nn.NewPass(oarch, batch, 1)
	if err != nil {
		t.Fatal(err)
	}
	olay := opass.Layout()
	q := make([]float32, olay.Size)
	set := 0
	for name, tn := range oparams {
		if _, ok := olay.Lookup(name); ok {
			copy(olay.View(q, name), tn.Float)
			set += len(tn.Float)
		}
	}
	if set != olay.Size {
		t.Fatalf("the ONNX import's parameters fill %d of its %d values", set, olay.Size)
	}
	oopt := nn.NewAdam(olay, cfg)
	ograd := make([]float32, olay.Size)
	for k := range steps {
		b := k % batches
		logits := opass.Forward(q, x[b*batch*n:(b+1)*batch*n], true, nil)
		loss := nn.CrossEntropy(dz, logits, y[b*batch:(b+1)*batch], K)
		if w := float64(want[k][0]); math.Abs(loss-w) > 1e-5*math.Abs(w) {
			t.Errorf("ONNX import, step %d: loss %.9g, PyTorch %.9g", k, loss, w)
		}
		clear(ograd)
		opass.Backward(q, dz, ograd)
		oopt.Step(q, ograd)
	}
}
