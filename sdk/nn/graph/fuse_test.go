package graph

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// fuseSpec has batchnorm -> relu and conv1d -> relu pairs that fold (a chain; a pair with a
// node of another branch between the two, so that the relu's gradient
// must outlive its own step; a pair before a residual addition) and ones
// that do not (a batchnorm read by two nodes; one before an addition).
func fuseSpec() Spec {
	n := func(name, op string, inputs []string, attrs map[string]any) Node {
		return Node{Name: name, Op: op, Inputs: inputs, Attrs: attrs}
	}
	return Spec{Name: "fuse", InChannels: 2, InLen: 20, Nodes: []Node{
		n("c1", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": 1}),
		n("bn1", "batchnorm1d", nil, nil),
		n("r1", "relu", nil, nil), // folds into bn1
		n("c2", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": 1}),
		n("bn2", "batchnorm1d", nil, nil),
		n("side", "conv1d", []string{"r1"}, map[string]any{"out": 4, "kernel": 1}),
		n("sbn", "batchnorm1d", nil, nil),
		n("r2", "relu", []string{"bn2"}, nil), // folds into bn2, "side" and "sbn" between
		n("add", "add", []string{"r2", "sbn"}, nil),
		n("bn3", "batchnorm1d", nil, nil),
		n("r3", "relu", nil, nil),             // not folded: bn3 is read twice
		n("t3", "tanh", []string{"bn3"}, nil), // the second reader
		n("add2", "add", []string{"r3", "t3"}, nil),
		n("c5", "conv1d", nil, map[string]any{"out": 3, "kernel": 3}),
		n("r5", "relu", nil, nil), // folds into c5
		n("gap", "globalavgpool", nil, nil),
		n("fc", "linear", nil, map[string]any{"out": 3}),
	}}
}

// unfuse makes n run every node by itself (tests: the reference of the
// folded pass).
func (n *Net) unfuse() {
	for j := range n.fuse {
		n.fuse[j], n.folded[j] = -1, false
	}
}

// TestFusionPlan: batchnorm and conv1d fold the relu that is their only reader, also
// with nodes of another branch between them, and not a relu that shares
// its input.
func TestFusionPlan(t *testing.T) {
	net := randomNet(t, fuseSpec(), 1)
	var got []string
	for j, i := range net.fuse {
		if i >= 0 {
			got = append(got, net.nodes[j].name+">"+net.nodes[i].name)
			if !net.folded[i] {
				t.Errorf("%s folds %s, which is not marked folded", net.nodes[j].name, net.nodes[i].name)
			}
		}
	}
	if want := []string{"bn1>r1", "bn2>r2", "c5>r5"}; !slices.Equal(got, want) {
		t.Errorf("folded pairs %v, want %v", got, want)
	}
}

// TestFusedTrainingSameBits: a training pass with the relus folded into
// their batchnorms gives the bits of the pass that runs every node by
// itself (outputs, running statistics, parameter and input gradients),
// on 1 and 2 workers, twice in a row (the kept state of the first pass
// is not reused wrongly), and the evaluation pass is untouched.
func TestFusedTrainingSameBits(t *testing.T) {
	const B = 5
	pass := func(fused bool, workers int) [][]float32 {
		net := randomNet(t, fuseSpec(), 7)
		if !fused {
			net.unfuse()
		}
		net.Workers = workers
		return passes(t, net, B, true, true, false)
	}
	for _, workers := range []int{1, 2} {
		want, got := pass(false, workers), pass(true, workers)
		for k := range want {
			if !slices.Equal(got[k], want[k]) {
				t.Errorf("%d workers: result %d (pass %d: output, dTheta, dx, Theta) differs from the unfused pass's", workers, k, k/4)
			}
		}
		if slices.Equal(want[1], make([]float32, len(want[1]))) {
			t.Fatal("zero parameter gradients: the test compares nothing")
		}
	}
}

// planSpecs are specs and the golden networks of recipes/archs whose
// buffer plans the plan tests check.
func planSpecs(t *testing.T, specs ...Spec) []Spec {
	t.Helper()
	for _, name := range []string{"fcn", "resnet1d", "inceptiontime", "stridednet"} {
		spec, err := ReadSpecFile(filepath.Join(golden.RepoRoot(t), "recipes", "archs", name+".toml"))
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	return specs
}

// TestGradientPlanHolds walks the backward pass of training and of
// evaluation over the gradient slots the plan assigned and checks that no
// node writes a gradient into a slot that holds another value's gradient
// still to be read, and that every gradient a node reads is still in its
// slot: the liveness the plan (and, in training, the folded nodes'
// longer-lived gradients) must keep; the same of inference's forward
// slots. On the test graphs and the golden networks of recipes/archs.
func TestGradientPlanHolds(t *testing.T) {
	for _, spec := range planSpecs(t, fuseSpec(), residualConcatSpec(false), residualConcatSpec(true)) {
		net, err := Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, train := range []bool{true, false} {
			checkGradPlan(t, net, train)
		}
		checkForwardPlan(t, net)
	}
}

func checkGradPlan(t *testing.T, n *Net, train bool) {
	t.Helper()
	// reader[v]: the node that reads value v's gradient.
	reader := make([]int, len(n.shapes))
	for v := 1; v < len(n.shapes); v++ {
		reader[v] = v - 1
	}
	if train {
		for j, i := range n.fuse {
			if i >= 0 {
				reader[i+1] = j
			}
		}
	}
	done := make([]bool, len(n.nodes))
	owner := map[int]int{} // slot -> the value whose gradient it holds
	write := func(k, v int) {
		s := n.bwdSlot[v]
		if s < 0 {
			t.Fatalf("graph %q (train %v): node %d writes the gradient of value %d, which has no slot", n.spec.Name, train, k, v)
		}
		if u, ok := owner[s]; ok && u != v && !done[reader[u]] {
			t.Errorf("graph %q (train %v): node %d writes value %d's gradient into slot %d, which holds value %d's, still to be read by node %d", n.spec.Name, train, k, v, s, u, reader[u])
		}
		owner[s] = v
	}
	write(-1, n.output+1)
	for k := n.output; k >= 0; k-- {
		if !n.anc[k] || (train && n.folded[k]) {
			continue
		}
		in := k + 1
		if f := n.fuse[k]; train && f >= 0 {
			in = f + 1
		}
		if s := n.bwdSlot[in]; owner[s] != in {
			t.Errorf("graph %q (train %v): node %d reads value %d's gradient from slot %d, which holds value %d's", n.spec.Name, train, k, in, s, owner[s])
		}
		for _, v := range n.nodes[k].inputs {
			if v > 0 {
				write(k, v)
			}
		}
		done[k] = true
	}
}

// checkForwardPlan walks inference's forward pass over the value slots:
// a node's inputs are still in their slots when it runs, and its output
// does not overwrite a value that a later node reads, nor the output.
func checkForwardPlan(t *testing.T, n *Net) {
	t.Helper()
	lastRead := lastReads(n)
	owner := map[int]int{}
	for k := 0; k <= n.output; k++ {
		for _, v := range n.nodes[k].inputs {
			if v > 0 && owner[n.fwdSlot[v]] != v {
				t.Errorf("graph %q: node %d reads value %d from slot %d, which holds value %d", n.spec.Name, k, v, n.fwdSlot[v], owner[n.fwdSlot[v]])
			}
		}
		s := n.fwdSlot[k+1]
		if u, ok := owner[s]; ok && lastRead[u] > k {
			t.Errorf("graph %q: node %d writes value %d into slot %d, which holds value %d, read by node %d later", n.spec.Name, k, k+1, s, u, lastRead[u])
		}
		owner[s] = k + 1
	}
}

// lastReads is, per value, the last node that reads it (-1: none; the
// output's is len(nodes), for finish).
func lastReads(n *Net) []int {
	lastRead := make([]int, len(n.shapes))
	for v := range lastRead {
		lastRead[v] = -1
	}
	for k, nd := range n.nodes {
		for _, v := range nd.inputs {
			lastRead[v] = max(lastRead[v], k)
		}
	}
	lastRead[n.output+1] = len(n.nodes) // read by finish
	return lastRead
}
