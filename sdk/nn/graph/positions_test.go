package graph_test

import (
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// TestLayerPositions: on the test Transformer, the patch convolution's
// steps are its receptive field (kernel 4, stride 4: position l reads
// samples 4l..4l+3); the transpose makes them rows of tokens, which
// attention, the residual adds, layernorm, the dense layers and
// layernorm written out as its ops (a mean of each token's features, a
// broadcast subtraction and division, an affine) keep; a transpose back
// makes them steps again; a product of two values, and what follows it,
// and a mean over the tokens have none, the error naming the node that
// mixed them and why. LayerSpan, the receptive field, ends at the first
// node that is not Local, as before.
func TestLayerPositions(t *testing.T) {
	net, err := graph.Compile(graphtest.Transformer())
	if err != nil {
		t.Fatal(err)
	}
	patch := graph.Span{Stride: 4, Lo: 0, Hi: 3}
	for _, c := range []struct {
		layer string
		rows  bool
		err   string
	}{
		{"patch", false, ""},
		{"tok", true, ""}, {"pos", true, ""}, {"attn", true, ""}, {"res1", true, ""}, {"norm1", true, ""},
		{"ff1", true, ""}, {"act", true, ""}, {"ff2", true, ""}, {"res2", true, ""},
		{"mu", true, ""}, {"dev", true, ""}, {"sq", true, ""}, {"var", true, ""}, {"eps", true, ""},
		{"sd", true, ""}, {"z", true, ""}, {"norm2", true, ""},
		{"tt", false, ""},
		{"sim", false, `node "sim" (op matmul) reads every step`},
		{"w", false, `node "sim" (op matmul)`},
		{"gated", false, `node "sim" (op matmul)`},
		{"pool", false, `node "sim"`},
		{"head", false, `node "sim"`},
	} {
		p, err := net.LayerPositions(c.layer)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "has no positions in time") {
				t.Errorf("%s: %+v, %v; want an error naming %s", c.layer, p, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.layer, err)
			continue
		}
		if p.Span != patch || p.Rows != c.rows {
			t.Errorf("%s: %+v; want the patch's span %+v, rows %v", c.layer, p, patch, c.rows)
		}
	}
	if s, err := net.LayerSpan("patch"); err != nil || s != patch {
		t.Errorf("LayerSpan(patch) = %+v, %v; want %+v", s, err, patch)
	}
	if _, err := net.LayerSpan("attn"); err == nil || !strings.Contains(err.Error(), `node "tok" (op transpose) reads every step`) {
		t.Errorf("LayerSpan(attn): %v; want the transpose named as not local", err)
	}
}

// TestLayerPositionsRefused: the ways a node loses its input's positions,
// each an error that says how: a dense layer or attention on the steps
// of a channel (not rows of tokens), a reshape that regroups values, a
// mean over the tokens, a convolution that reads across rows of tokens,
// and a join of a token value and a step value.
func TestLayerPositionsRefused(t *testing.T) {
	n := func(name, op string, in []string, attrs map[string]any) graph.Node {
		return graph.Node{Name: name, Op: op, Inputs: in, Attrs: attrs}
	}
	base := []graph.Node{n("c", "conv1d", nil, map[string]any{"out": 4, "kernel": 2, "stride": 2})}
	for _, c := range []struct {
		nodes []graph.Node
		want  string
	}{
		{[]graph.Node{n("d", "dense", nil, map[string]any{"out": 3})}, "op dense reads every step of each channel"},
		{[]graph.Node{n("a", "attention", nil, map[string]any{"heads": 1})}, "op attention reads every step of each channel"},
		{[]graph.Node{n("r", "reshape", nil, map[string]any{"rows": 8, "cols": 2})}, "regroups its input's values"},
		{[]graph.Node{n("t", "transpose", nil, nil), n("m", "reducemean", nil, map[string]any{"axis": 0})}, "reducemean over axis 0 averages"},
		{[]graph.Node{n("m", "reducemean", nil, map[string]any{"axis": 1})}, "reducemean over axis 1 averages"},
		{[]graph.Node{n("t", "transpose", nil, nil), n("k", "conv1d", nil, map[string]any{"out": 2, "kernel": 1})}, `reads across the rows of tokens of "t"`},
		{[]graph.Node{n("t", "transpose", nil, nil), n("tt", "transpose", nil, nil), n("s", "sub", []string{"t", "tt"}, nil)}, "sub of a value of rows of tokens and one of steps"},
	} {
		nodes := append(append([]graph.Node{}, base...), c.nodes...)
		last := nodes[len(nodes)-1].Name
		nodes = append(nodes, n("g", "globalavgpool", nil, nil), n("h", "linear", nil, map[string]any{"out": 2}))
		net, err := graph.Compile(graph.Spec{Name: "p", InChannels: 1, InLen: 8, Nodes: nodes})
		if err != nil {
			t.Fatalf("%s: %v", c.want, err)
		}
		if _, err := net.LayerPositions(last); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("layer %s: %v; want %q", last, err, c.want)
		}
	}
}
