package graphtest

import (
	"math"
	"testing"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// TestEveryOp: EveryOp and Transformer compile, have between them a
// node of every op kind of the table (so a test running them on another
// implementation sees a new op), and with PositiveVar give finite
// probabilities that depend on the input.
func TestEveryOp(t *testing.T) {
	has := map[string]bool{}
	for _, spec := range []graph.Spec{EveryOp(), Transformer()} {
		for _, nd := range spec.Nodes {
			has[nd.Op] = true
		}
		t.Run(spec.Name, func(t *testing.T) { probsDependOnInput(t, spec) })
	}
	for _, k := range graph.Ops().Kinds() {
		if !has[k] {
			t.Errorf("neither EveryOp nor Transformer has a %s node", k)
		}
	}
}

func probsDependOnInput(t *testing.T, spec graph.Spec) {
	net := RandomNet(t, spec, 3)
	PositiveVar(net)
	in := net.InShape().Size()
	x := make([]float32, 2*in)
	for i := range x {
		x[i] = float32(math.Sin(float64(i) * 0.37))
	}
	for i := range in {
		x[in+i] = -x[i] * 2
	}
	p := make([]float32, 2*net.Classes())
	if err := net.Forward(p, x); err != nil {
		t.Fatal(err)
	}
	same := true
	for k := range net.Classes() {
		same = same && p[k] == p[net.Classes()+k]
	}
	if same {
		t.Error("two inputs gave the same probabilities")
	}
}
