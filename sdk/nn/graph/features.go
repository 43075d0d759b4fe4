package graph

import (
	"fmt"
	"math"
)

// Penultimate is the value the network's last linear layer reads: its
// features, the values the class scores are a linear function of (the
// output node's input, after a softmax or dropout output). The Mahalanobis
// out-of-distribution score is measured on it. It is an error for a
// network whose class scores do not come from a linear layer.
func (n *Net) Penultimate() (Shape, error) {
	_, s, err := n.penultimate()
	return s, err
}

// penultimate is Penultimate's value id and shape.
func (n *Net) penultimate() (int, Shape, error) {
	i := n.output
	for k := n.nodes[i].op.Kind; k == "softmax" || k == "dropout"; k = n.nodes[i].op.Kind {
		v := n.nodes[i].inputs[0]
		if v == 0 {
			return 0, Shape{}, fmt.Errorf("graph %q: the %s reads the input; no linear layer gives the class scores", n.spec.Name, k)
		}
		i = v - 1
	}
	if n.nodes[i].op.Kind != "linear" {
		return 0, Shape{}, fmt.Errorf("graph %q: the class scores come from node %q (%s), not a linear layer: no penultimate features (accepted: a network whose scores are a linear layer's, before an optional softmax)", n.spec.Name, n.nodes[i].name, n.nodes[i].op.Kind)
	}
	v := n.nodes[i].inputs[0]
	return v, n.shapes[v], nil
}

// Features writes the penultimate features (Penultimate) of the B
// samples of x to dst (B x the value's size), computed by the unfolded
// forward pass (ForwardUnfolded's arithmetic) up to the node that gives
// them.
func (n *Net) Features(dst, x []float32) error {
	v, s, err := n.penultimate()
	if err != nil {
		return err
	}
	B, err := n.batch(x)
	if err != nil {
		return err
	}
	if len(dst) != B*s.Size() {
		panic(fmt.Sprintf("graph: features have length %d, want %d", len(dst), B*s.Size()))
	}
	if v == 0 {
		copy(dst, x)
		return nil
	}
	w := n.workspace(B)
	slots, slot := w.fwd, n.fwdSlot
	val := func(v int) []float32 {
		if v == 0 {
			return x
		}
		return slots[slot[v]][:B*n.shapes[v].Size()]
	}
	for i := 0; i < v; i++ {
		n.chunked(w, i, n.call(w, i, B, val), n.nodes[i].op.Forward, false)
	}
	copy(dst, val(v))
	per := s.Size()
	for j, f := range dst {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Errorf("graph %q: sample %d feature %d: %v (the input or the parameters hold non-finite values)", n.spec.Name, j/per, j%per, f)
		}
	}
	return nil
}
