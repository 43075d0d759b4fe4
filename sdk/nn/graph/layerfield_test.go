package graph

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// nd builds a Node for the field tests.
func nd(name, op string, inputs []string, attrs map[string]any) Node {
	return Node{Name: name, Op: op, Inputs: inputs, Attrs: attrs}
}

// head ends a field test's graph: global average pooling and a linear
// layer of two classes.
func head(nodes ...Node) []Node {
	return append(nodes, nd("gap", "globalavgpool", nil, nil), nd("fc", "linear", nil, map[string]any{"out": 2}))
}

// chainSpec: strided, dilated, padded (asymmetrically) convolutions and
// pools, and an explicit pad, one after the other.
func chainSpec() Spec {
	return Spec{Name: "chain", InChannels: 1, InLen: 120, Nodes: head(
		nd("c1", "conv1d", nil, map[string]any{"out": 3, "kernel": 3, "stride": 2, "dilation": 2, "padding": []int64{3, 1}}),
		nd("r1", "relu", nil, nil),
		nd("p1", "maxpool1d", nil, map[string]any{"kernel": 3, "stride": 2, "padding": 1}),
		nd("c2", "conv1d", nil, map[string]any{"out": 3, "kernel": 4, "dilation": 3, "padding": []int64{1, 2}}),
		nd("p2", "avgpool1d", nil, map[string]any{"kernel": 2, "stride": 2}),
		nd("pd", "pad", nil, map[string]any{"left": 2, "right": 1}),
		nd("c3", "conv1d", nil, map[string]any{"out": 2, "kernel": 3, "stride": 3}),
	)}
}

// residualSpec: a strided block whose main path reaches further right and
// whose shortcut (an explicit left pad and a strided convolution) reaches
// further left, joined by an addition.
func residualSpec() Spec {
	return Spec{Name: "residual", InChannels: 1, InLen: 64, Nodes: head(
		nd("a", "conv1d", nil, map[string]any{"out": 2, "kernel": 3, "stride": 2, "padding": []int64{1, 1}}),
		nd("b", "relu", nil, nil),
		nd("m.conv", "conv1d", nil, map[string]any{"out": 2, "kernel": 5, "padding": []int64{0, 4}}),
		nd("m.relu", "relu", nil, nil),
		nd("m.conv2", "conv1d", nil, map[string]any{"out": 2, "kernel": 3, "dilation": 2, "padding": []int64{2, 2}}),
		nd("sc.pad", "pad", []string{"input"}, map[string]any{"left": 3, "right": 0}),
		nd("sc.conv", "conv1d", nil, map[string]any{"out": 2, "kernel": 5, "stride": 2}),
		nd("add", "add", []string{"m.conv2", "sc.conv"}, nil),
		nd("out", "relu", nil, nil),
	)}
}

// inceptionSpec: two InceptionTime-like modules, parallel convolutions of
// kernels 9, 5 and 4 (padded asymmetrically) and a max-pool branch joined
// by concatenation; the second module's branches have stride 2.
func inceptionSpec() Spec {
	return Spec{Name: "inception", InChannels: 1, InLen: 48, Nodes: head(
		nd("inc1.bottleneck", "conv1d", nil, map[string]any{"out": 2, "kernel": 1}),
		nd("inc1.c9", "conv1d", []string{"inc1.bottleneck"}, map[string]any{"out": 2, "kernel": 9, "padding": []int64{4, 4}}),
		nd("inc1.c5", "conv1d", []string{"inc1.bottleneck"}, map[string]any{"out": 2, "kernel": 5, "padding": []int64{2, 2}}),
		nd("inc1.c4", "conv1d", []string{"inc1.bottleneck"}, map[string]any{"out": 2, "kernel": 4, "padding": []int64{0, 3}}),
		nd("inc1.pool", "maxpool1d", []string{"input"}, map[string]any{"kernel": 3, "stride": 1, "padding": 1}),
		nd("inc1.pconv", "conv1d", nil, map[string]any{"out": 2, "kernel": 1}),
		nd("inc1.cat", "concat", []string{"inc1.c9", "inc1.c5", "inc1.c4", "inc1.pconv"}, nil),
		nd("inc1.relu", "relu", nil, nil),
		nd("inc2.c3", "conv1d", []string{"inc1.relu"}, map[string]any{"out": 2, "kernel": 3, "stride": 2, "padding": []int64{1, 1}}),
		nd("inc2.pool", "maxpool1d", []string{"inc1.relu"}, map[string]any{"kernel": 3, "stride": 2, "padding": 1}),
		nd("inc2.cat", "concat", []string{"inc2.c3", "inc2.pool"}, nil),
	)}
}

// positiveNet compiles spec with every parameter in [0.1, 0.5): on a
// positive input every value is positive and grows with every input
// sample it reads, so nothing cancels and a ReLU never cuts.
func positiveNet(t *testing.T, spec Spec) *Net {
	t.Helper()
	net, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range net.Theta {
		net.Theta[i] = 0.1 + 0.4*rng.Float32()
	}
	return net
}

// readers returns, by brute force, which positions of layer path each
// input sample changes: reads[s][l] is set if raising sample s (of every
// channel) by 1e5 changes any channel of position l of the layer.
func readers(t *testing.T, net *Net, path string) [][]bool {
	t.Helper()
	l, err := net.Layer(path)
	if err != nil {
		t.Fatal(err)
	}
	in := net.InShape()
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, in.Size())
	for i := range x {
		x[i] = 0.5 + rng.Float32()
	}
	act := func(x []float32) []float32 {
		a := make([]float32, l.Shape.Size())
		if err := net.Grad(x, GradRequest{Targets: []int{0}, Layer: &l, Act: a}); err != nil {
			t.Fatal(err)
		}
		return a
	}
	a0 := act(x)
	reads := make([][]bool, in.T)
	for s := range in.T {
		xs := append([]float32(nil), x...)
		for c := range in.C {
			xs[c*in.T+s] += 1e5
		}
		a := act(xs)
		reads[s] = make([]bool, l.Shape.T)
		for i, v := range a {
			if v != a0[i] {
				reads[s][i%l.Shape.T] = true
			}
		}
	}
	return reads
}

// TestLayerSpanBruteForce: on chains, residual blocks and concatenated
// branches of strided, dilated, padded convolutions and pools, each
// layer's span holds every input sample that changes a position (raising
// one sample, on a network of positive weights), and each end of a
// position's span that lies inside the input is a sample the position
// reads: the span is the hull of what each position reads. (A position
// of padding only, which reads no sample, is held to the first rule
// alone; padding in between counts as steps, as the centre rule wants.)
func TestLayerSpanBruteForce(t *testing.T) {
	for _, c := range []struct {
		spec   Spec
		layers []string
	}{
		{chainSpec(), []string{"c1", "r1", "p1", "c2", "p2", "pd", "c3"}},
		{residualSpec(), []string{"a", "m.conv", "m.conv2", "sc.pad", "sc.conv", "add", "out"}},
		{inceptionSpec(), []string{"inc1.c9", "inc1.c4", "inc1.pool", "inc1.pconv", "inc1.cat", "inc1", "inc2.c3", "inc2.pool", "inc2.cat"}},
	} {
		net := positiveNet(t, c.spec)
		N := net.InShape().T
		for _, layer := range c.layers {
			sp, err := net.LayerSpan(layer)
			if err != nil {
				t.Fatalf("%s %s: %v", c.spec.Name, layer, err)
			}
			if sp.Stride < 1 || sp.Lo > sp.Hi {
				t.Fatalf("%s %s: span %+v", c.spec.Name, layer, sp)
			}
			reads := readers(t, net, layer)
			T := len(reads[0])
			exact := 0
			for l := range T {
				lo, hi := -1, -1
				for s := range N {
					if !reads[s][l] {
						continue
					}
					if lo < 0 {
						lo = s
					}
					hi = s
					if s < l*sp.Stride+sp.Lo || s > l*sp.Stride+sp.Hi {
						t.Errorf("%s %s: sample %d changes position %d, outside its span [%d, %d]", c.spec.Name, layer, s, l, l*sp.Stride+sp.Lo, l*sp.Stride+sp.Hi)
					}
				}
				if lo < 0 {
					continue // a position of padding only (pd's first two)
				}
				if a := l*sp.Stride + sp.Lo; a >= 0 && a < N {
					exact++
					if lo != a {
						t.Errorf("%s %s: position %d: first sample read %d, span starts at %d", c.spec.Name, layer, l, lo, a)
					}
				}
				if b := l*sp.Stride + sp.Hi; b >= 0 && b < N {
					exact++
					if hi != b {
						t.Errorf("%s %s: position %d: last sample read %d, span ends at %d", c.spec.Name, layer, l, hi, b)
					}
				}
			}
			if exact == 0 {
				t.Errorf("%s %s: span %+v has no end inside the input at any of its %d positions: a weak case", c.spec.Name, layer, sp, T)
			}
			t.Logf("%s %s: span %+v, %d positions, %d ends inside the input", c.spec.Name, layer, sp, T, exact)
		}
	}
}

// TestLayerSpanClosedForm: a 'same'-padded stride-1 chain's span is
// symmetric about 0, R = 1 + sum (kernel-1)*dilation wide; strides
// multiply; a pad of left p shifts the span by -p input steps of its
// input; a pointwise op or a batchnorm changes nothing.
func TestLayerSpanClosedForm(t *testing.T) {
	spec := Spec{Name: "closed", InChannels: 2, InLen: 64, Nodes: head(
		nd("c1", "conv1d", nil, map[string]any{"out": 2, "kernel": 5, "padding": 2}),
		nd("bn", "batchnorm1d", nil, nil),
		nd("g", "gelu", nil, nil),
		nd("c2", "conv1d", nil, map[string]any{"out": 2, "kernel": 3, "dilation": 4, "padding": 4}),
		nd("s", "conv1d", nil, map[string]any{"out": 2, "kernel": 2, "stride": 2}),
		nd("pd", "pad", nil, map[string]any{"left": 3, "right": 0}),
		nd("s2", "maxpool1d", nil, map[string]any{"kernel": 3, "stride": 3}),
	)}
	net, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	r := 1 + (5-1)*1 + (3-1)*4
	for _, c := range []struct {
		layer string
		want  Span
	}{
		{"c1", Span{1, -2, 2}},
		{"bn", Span{1, -2, 2}},
		{"g", Span{1, -2, 2}},
		{"c2", Span{1, -(r - 1) / 2, (r - 1) / 2}},
		// stride 2, kernel 2: step t reads c2's steps 2t, 2t+1.
		{"s", Span{2, -(r - 1) / 2, 1 + (r-1)/2}},
		// the pad moves back 3 of s's steps, 3*2 samples.
		{"pd", Span{2, -(r-1)/2 - 3*2, 1 + (r-1)/2 - 3*2}},
		// kernel 3, stride 3 on steps of 2 samples.
		{"s2", Span{6, -(r-1)/2 - 3*2, 1 + (r-1)/2 - 3*2 + 2*2}},
	} {
		got, err := net.LayerSpan(c.layer)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.layer, got, err, c.want)
		}
	}
}

// TestLayerSpanRefused: a layer behind a node that reads every step, or
// behind a join of paths of different strides, has no span, and the
// error names the node and what is accepted; a node beside them (not an
// ancestor) does not matter; an unknown layer is the Layer error.
func TestLayerSpanRefused(t *testing.T) {
	net, err := Compile(chainSpec())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		layer string
		want  []string
	}{
		{"gap", []string{`layer "gap"`, `node "gap" (op globalavgpool) reads every step`, "accepted: a layer before the network's global pooling"}},
		{"fc", []string{`layer "fc"`, `node "gap" (op globalavgpool)`}},
		{"nope", []string{`no layer "nope"`, "c1, r1"}},
	} {
		_, err := net.LayerSpan(c.layer)
		if err == nil {
			t.Errorf("%s: no error", c.layer)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want %q in it", c.layer, err, w)
			}
		}
	}
	// Strides 2 and 1 joined: both inputs have 8 steps.
	mixed := Spec{Name: "mixed", InChannels: 1, InLen: 16, Nodes: head(
		nd("b1", "conv1d", nil, map[string]any{"out": 2, "kernel": 1, "stride": 2}),
		nd("b2", "maxpool1d", []string{"input"}, map[string]any{"kernel": 9, "stride": 1}),
		nd("b3", "conv1d", nil, map[string]any{"out": 2, "kernel": 1}),
		nd("add", "add", []string{"b1", "b3"}, nil),
		nd("after", "relu", nil, nil),
	)}
	net, err = Compile(mixed)
	if err != nil {
		t.Fatal(err)
	}
	for _, layer := range []string{"add", "after"} {
		_, err = net.LayerSpan(layer)
		if err == nil || !strings.Contains(err.Error(), `node "add" (op add) joins "b1", of stride 2 input samples, and "b3", of stride 1`) {
			t.Errorf("%s behind strides 2 and 1: %v", layer, err)
		}
	}
	if sp, err := net.LayerSpan("b3"); err != nil || sp != (Span{1, 0, 8}) {
		t.Errorf("b3: %+v, %v; want {1 0 8}", sp, err)
	}
	// A window beyond 2^24 steps (a dilated kernel of 31 x 2^20 + 1 steps;
	// Compile bounds each attribute at MaxExtent = 2^20), and strides
	// whose product passes 2^36 samples: refused before int64 could
	// overflow.
	for _, c := range []struct {
		pad  int
		p    Node
		want string
	}{
		{1 << 20, nd("p", "conv1d", nil, map[string]any{"out": 1, "kernel": 32, "dilation": 1 << 20}), `node "p" (op conv1d) takes its input's field beyond`},
		{1 << 20, nd("p", "pad", nil, map[string]any{"left": 1 << 20, "right": 0}), `node "s2" (op avgpool1d) takes its input's field beyond`},
	} {
		net, err = Compile(Spec{Name: "huge", InChannels: 1, InLen: 1 << 25, Nodes: head(
			c.p,
			nd("s1", "avgpool1d", nil, map[string]any{"kernel": 1, "stride": 1 << 20}),
			nd("s2", "avgpool1d", nil, map[string]any{"kernel": 1, "stride": 1 << 20}),
		)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := net.LayerSpan("s2"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("padding %d, strides 2^20 twice: %v; want %q in it", c.pad, err, c.want)
		}
		if sp, err := net.LayerSpan("s1"); c.p.Op == "pad" && (err != nil || sp != (Span{1 << 20, -(1 << 20), -(1 << 20)})) {
			t.Errorf("padding 2^20, stride 2^20: %+v, %v", sp, err)
		}
	}
	// residualConcatSpec's flatten reads every step, but k is not behind it.
	net, err = Compile(residualConcatSpec(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := net.LayerSpan("k"); err != nil {
		t.Errorf("k, beside a flatten: %v", err)
	}
	if _, err := net.LayerSpan("cat2"); err == nil || !strings.Contains(err.Error(), `node "flat" (op flatten)`) {
		t.Errorf("cat2, behind a flatten: %v", err)
	}
}
