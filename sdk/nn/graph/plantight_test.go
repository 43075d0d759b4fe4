package graph

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// maxLive is the largest number of intervals [start[v], end[v]]
// (inclusive; end < start: none) that hold one step in common: the fewest
// buffers any plan needs, since intervals that pairwise overlap share a
// step and so each needs its own.
func maxLive(start, end []int) int {
	best := 0
	for v := range start {
		if end[v] < start[v] {
			continue
		}
		at := start[v] // a set of pairwise overlapping intervals shares the latest start
		n := 0
		for u := range start {
			if end[u] >= start[u] && start[u] <= at && at <= end[u] {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

// gradLives gives, per value, the backward steps (step output-k for node
// k) over which its gradient is held: from the first step that writes it
// (its last ancestor reader's) to the last that reads it (its producer's,
// or the fused node's that reads it in a training pass). Values without a
// gradient get end < start; the input's gradient has its own buffer.
func gradLives(n *Net) (start, end []int) {
	nv := len(n.shapes)
	start, end = make([]int, nv), make([]int, nv)
	for v := range nv {
		start[v], end[v] = 0, -1
	}
	for k := n.output; k >= 0; k-- {
		if !n.anc[k] {
			continue
		}
		for _, v := range n.nodes[k].inputs {
			if v > 0 && end[v] < start[v] {
				start[v], end[v] = n.output-k, n.output-(v-1)
			}
		}
	}
	for j, i := range n.fuse {
		if i >= 0 && n.anc[i] {
			end[i+1] = max(end[i+1], n.output-j)
		}
	}
	start[n.output+1], end[n.output+1] = -1, 0
	return start, end
}

// TestPlansAreTight: the inference plan and the gradients' plan use as
// many buffers as the most values live at one step, no more (a value
// kept past its last reader, or a gradient written before its first
// writer, costs a buffer on some graph), and a value's slot is exactly as
// large as the largest value it holds.
func TestPlansAreTight(t *testing.T) {
	for _, spec := range planSpecs(t, longLivedSpec(), fuseSpec(), residualConcatSpec(false), residualConcatSpec(true)) {
		n, err := Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		nv := len(n.shapes)
		fs, fe := make([]int, nv), make([]int, nv)
		for v := 1; v < nv; v++ {
			fs[v], fe[v] = v-1, v-1
			for _, r := range n.readers[v] {
				fe[v] = max(fe[v], r)
			}
		}
		fs[0], fe[0] = 0, -1
		fe[n.output+1] = len(n.nodes)
		if want := maxLive(fs, fe); len(n.fwdSize) != want {
			t.Errorf("%s: inference plan of %d buffers; at most %d values are live at once", spec.Name, len(n.fwdSize), want)
		}
		bs, be := gradLives(n)
		if want := maxLive(bs, be); len(n.bwdSize) != want {
			t.Errorf("%s: gradient plan of %d buffers; at most %d gradients are live at once", spec.Name, len(n.bwdSize), want)
		}
		for v := range nv {
			if (fe[v] >= fs[v]) != (n.fwdSlot[v] >= 0) {
				t.Errorf("%s: value %d (live %d..%d) in forward slot %d", spec.Name, v, fs[v], fe[v], n.fwdSlot[v])
			}
			if (be[v] >= bs[v]) != (n.bwdSlot[v] >= 0) {
				t.Errorf("%s: gradient of value %d (live %d..%d) in slot %d", spec.Name, v, bs[v], be[v], n.bwdSlot[v])
			}
		}
		for _, c := range []struct {
			what       string
			slot, size []int
		}{{"inference", n.fwdSlot, n.fwdSize}, {"gradient", n.bwdSlot, n.bwdSize}} {
			largest := make([]int, len(c.size))
			for v, s := range c.slot {
				if s >= 0 {
					largest[s] = max(largest[s], n.shapes[v].Size())
				}
			}
			for s := range c.size {
				if c.size[s] != largest[s] {
					t.Errorf("%s: %s slot %d of %d floats holds values of at most %d", spec.Name, c.what, s, c.size[s], largest[s])
				}
			}
		}
	}
}

// TestPlanSlotsByHand: intervals whose slots follow from the rule (share
// only when one ends before the other starts; of the free slots, the
// smallest that fits, else the largest).
func TestPlanSlotsByHand(t *testing.T) {
	//            v:  0  1  2  3  4
	size := []int{4, 4, 8, 2, 16}
	start := []int{0, 1, 2, 4, 5}
	end := []int{1, 2, 3, 4, 3} // v4: end < start, no buffer
	slot, slotSize := planSlots(size, start, end, false)
	// v0 -> 0; v1 overlaps v0 at step 1 -> 1; v2 starts at 2, when v0 has
	// ended (1 < 2) but v1 has not -> 0, grown to 8; v3 at 4: both free,
	// slot 1 (4) is the smallest that fits 2.
	wantSlot, wantSize := []int{0, 1, 0, 1, -1}, []int{8, 4}
	for v := range wantSlot {
		if slot[v] != wantSlot[v] {
			t.Errorf("value %d in slot %d, want %d (slots %v)", v, slot[v], wantSlot[v], slot)
		}
	}
	if len(slotSize) != len(wantSize) || slotSize[0] != wantSize[0] || slotSize[1] != wantSize[1] {
		t.Errorf("slot sizes %v, want %v", slotSize, wantSize)
	}
	sep, sepSize := planSlots(size, start, end, true)
	if len(sepSize) != 4 || sep[4] != -1 {
		t.Errorf("separate: slots %v of sizes %v, want one per live value", sep, sepSize)
	}

	for _, c := range []struct {
		a, b, need int
		want       bool
	}{
		{4, 8, 4, true}, // both fit: the smaller
		{8, 4, 4, false},
		{4, 4, 4, false},
		{4, 3, 4, true}, // only a fits
		{3, 4, 4, false},
		{3, 2, 4, true}, // neither: the larger
		{2, 3, 4, false},
	} {
		if got := better(c.a, c.b, c.need); got != c.want {
			t.Errorf("better(%d, %d, need %d) = %v, want %v", c.a, c.b, c.need, got, c.want)
		}
	}
}

// TestNonFiniteNamesSampleAndClass: a NaN in the second sample's input
// is reported at that sample's first class.
func TestNonFiniteNamesSampleAndClass(t *testing.T) {
	n := randomNet(t, residualConcatSpec(false), 3)
	T := n.InShape().Size()
	x := make([]float32, 3*T)
	x[T+T/2] = float32(math.NaN())
	probs := make([]float32, 3*n.Classes())
	err := n.Forward(probs, x)
	if err == nil || !strings.Contains(err.Error(), "sample 1 class 0:") {
		t.Errorf("NaN in sample 1: error %v, want one naming sample 1 class 0", err)
	}
}

// TestBackpropArguments: Backprop takes nil for dTheta and dx, and panics
// (a programmer's error) on a dx of the wrong length.
func TestBackpropArguments(t *testing.T) {
	n := randomNet(t, residualConcatSpec(false), 4)
	T := n.InShape().Size()
	x := make([]float32, 2*T)
	for j := range x {
		x[j] = float32(j%5) / 5
	}
	if _, err := n.Run(x, false, nil); err != nil {
		t.Fatal(err)
	}
	dOut := make([]float32, 2*n.Classes())
	dOut[1] = 1
	dTheta := make([]float32, n.NumParams())
	n.Backprop(dOut, dTheta, nil)
	nonzero := false
	for _, g := range dTheta {
		nonzero = nonzero || g != 0
	}
	if !nonzero {
		t.Error("Backprop without dx gave no parameter gradient")
	}
	dx := make([]float32, len(x))
	n.Backprop(dOut, nil, dx)
	defer func() {
		r := recover()
		want := fmt.Sprintf("dOut %d (want %d), dTheta 0 (want %d), dx %d (want %d)", len(dOut), len(dOut), n.NumParams(), len(x)-1, len(x))
		if s, _ := r.(string); !strings.Contains(s, want) {
			t.Errorf("Backprop with a dx one short: panic %v, want one with %q", r, want)
		}
	}()
	n.Backprop(dOut, nil, dx[1:])
}

// TestLayerOffTheOutputsPath: a layer before the output node that the
// output does not read gets its activation and a zero gradient, whatever
// LayerGrad held.
func TestLayerOffTheOutputsPath(t *testing.T) {
	spec := Spec{Name: "side", InChannels: 1, InLen: 16, Output: "fc", Nodes: []Node{
		{Name: "a", Op: "conv1d", Attrs: map[string]any{"out": 2, "kernel": 3, "padding": []int64{1, 1}}},
		{Name: "side", Op: "conv1d", Inputs: []string{"input"}, Attrs: map[string]any{"out": 2, "kernel": 3, "padding": []int64{1, 1}}},
		{Name: "gap", Op: "globalavgpool", Inputs: []string{"a"}},
		{Name: "fc", Op: "linear", Attrs: map[string]any{"out": 3}},
	}}
	n := randomNet(t, spec, 5)
	l, err := n.Layer("side")
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 2*16)
	for j := range x {
		x[j] = float32(j%7)/7 - 0.4
	}
	sz := 2 * l.Shape.Size()
	act, lg := make([]float32, sz), make([]float32, sz)
	for j := range lg {
		lg[j] = 7
	}
	if err := n.Grad(x, GradRequest{Targets: []int{0, 2}, Layer: &l, Act: act, LayerGrad: lg}); err != nil {
		t.Fatal(err)
	}
	for j, g := range lg {
		if g != 0 {
			t.Fatalf("layer gradient %g at %d, want 0: the output does not read the layer", g, j)
		}
	}
	nonzero := false
	for _, a := range act {
		nonzero = nonzero || a != 0
	}
	if !nonzero {
		t.Error("the layer's activation was not written")
	}
}
