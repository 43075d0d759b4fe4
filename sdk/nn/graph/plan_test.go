package graph

import (
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// longLivedSpec: "a" is read right away by "b" and again, four nodes
// later, by the residual "add"; a planner that freed a's buffer after its
// first reader would hand it to c, d or e and corrupt the sum.
func longLivedSpec() Spec {
	return Spec{Name: "long-lived", InChannels: 1, InLen: 32, Nodes: []Node{
		{Name: "a", Op: "conv1d", Attrs: map[string]any{"out": 3, "kernel": 3, "padding": []int64{1, 1}}},
		{Name: "b", Op: "tanh"},
		{Name: "c", Op: "sigmoid"},
		{Name: "d", Op: "gelu"},
		{Name: "e", Op: "silu"},
		{Name: "add", Op: "add", Inputs: []string{"a", "e"}},
		{Name: "gap", Op: "globalavgpool"},
		{Name: "fc", Op: "linear", Attrs: map[string]any{"out": 4}},
	}}
}

// disjoint checks that values sharing a slot have disjoint live ranges
// (the inference plan of net).
func disjoint(t *testing.T, net *Net) {
	t.Helper()
	start := func(v int) int { return v - 1 }
	end := func(v int) int {
		if v == net.output+1 {
			return len(net.nodes)
		}
		e := v - 1
		for _, r := range net.readers[v] {
			e = max(e, r)
		}
		return e
	}
	for v := 1; v < len(net.shapes); v++ {
		if net.fwdSize[net.fwdSlot[v]] < net.shapes[v].Size() {
			t.Errorf("%s: value %d in a slot of %d < %d", net.spec.Name, v, net.fwdSize[net.fwdSlot[v]], net.shapes[v].Size())
		}
		for u := 1; u < v; u++ {
			if net.fwdSlot[u] == net.fwdSlot[v] && !(end(u) < start(v)) {
				t.Errorf("%s: values %q (live %d..%d) and %q (%d..%d) share slot %d", net.spec.Name,
					net.nodes[u-1].name, start(u), end(u), net.nodes[v-1].name, start(v), end(v), net.fwdSlot[v])
			}
		}
	}
}

func forward(t *testing.T, net *Net, x []float32) []float32 {
	t.Helper()
	probs := make([]float32, len(x)/net.InShape().Size()*net.Classes())
	if err := net.Forward(probs, x); err != nil {
		t.Fatal(err)
	}
	return probs
}

// TestPlanKeepsLiveValues: the planned run equals the run with one
// buffer per value, bit for bit, while using fewer buffers; a plan that
// frees a value after its FIRST reader gives another result on this graph
// (so the comparison can see a corrupting plan); and no two values of
// overlapping lives share a buffer in this graph, the residual+concat
// graph or the golden architectures.
func TestPlanKeepsLiveValues(t *testing.T) {
	spec := longLivedSpec()
	planned := randomNet(t, spec, 11)
	plain := randomNet(t, spec, 11)
	plain.unplanned = true
	plain.plan()
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 4*32)
	for j := range x {
		x[j] = float32(rng.NormFloat64())
	}
	want := forward(t, plain, x)
	got := forward(t, planned, x)
	for j := range want {
		if got[j] != want[j] {
			t.Fatalf("planned %g, one buffer per value %g at %d", got[j], want[j], j)
		}
	}
	p, u := planned.Peak()
	pu, uu := plain.Peak()
	t.Logf("long-lived: planned %d floats per sample, unplanned %d (%d, %d)", p, u, pu, uu)
	if !(p < u) {
		t.Errorf("peak %d of %d: the plan reuses nothing", p, u)
	}
	if pu != uu {
		t.Errorf("one buffer per value holds %d floats, the values %d", pu, uu)
	}
	disjoint(t, planned)

	// The first-reader plan.
	bad := randomNet(t, spec, 11)
	n := len(bad.shapes)
	sizes, start, end := make([]int, n), make([]int, n), make([]int, n)
	for v := 1; v < n; v++ {
		sizes[v], start[v], end[v] = bad.shapes[v].Size(), v-1, v-1
		if len(bad.readers[v]) > 0 {
			end[v] = bad.readers[v][0]
		}
	}
	end[bad.output+1] = len(bad.nodes)
	end[0] = -1 // the input: no buffer
	bad.fwdSlot, bad.fwdSize = planSlots(sizes, start, end, false)
	wrong := forward(t, bad, x)
	same := true
	for j := range want {
		same = same && wrong[j] == want[j]
	}
	if same {
		t.Error("the first-reader plan gives the right result: this graph does not test liveness")
	}

	disjoint(t, randomNet(t, residualConcatSpec(false), 1))
	for _, a := range golden.TorchArchs {
		if a.Name == "lstm" {
			continue
		}
		net, err := Compile(archSpec(t, a))
		if err != nil {
			t.Fatal(err)
		}
		disjoint(t, net)
		p, u := net.Peak()
		t.Logf("%s: activations planned %d floats per sample, one buffer per value %d", a.Name, p, u)
	}
}

// TestForwardAllocates: after the first batch, Forward and Grad of a
// batch no larger allocate nothing.
func TestForwardAllocates(t *testing.T) {
	net := randomNet(t, residualConcatSpec(false), 2)
	x := make([]float32, 3*net.InShape().Size())
	for j := range x {
		x[j] = float32(j%7) / 7
	}
	probs := make([]float32, 3*net.Classes())
	gx := make([]float32, len(x))
	req := GradRequest{Targets: []int{0, 1, 2}, Input: gx, Params: make([]float32, net.NumParams())}
	if err := net.Grad(x, req); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(5, func() {
		if err := net.Forward(probs, x); err != nil {
			t.Fatal(err)
		}
		if err := net.Grad(x, req); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per Forward + Grad", a)
	}
}
