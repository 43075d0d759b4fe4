package graph

import (
	"slices"
	"testing"
)

// fuseSpec has batchnorm -> relu pairs that fold (a chain; a pair with a
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

// TestFusionPlan: batchnorm folds the relu that is its only reader, also
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
	if want := []string{"bn1>r1", "bn2>r2"}; !slices.Equal(got, want) {
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
