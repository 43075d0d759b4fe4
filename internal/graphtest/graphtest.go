// Package graphtest holds small graph architectures (sdk/nn/graph) that
// tests of several packages train and explain.
package graphtest

import (
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// Residual is a small graph with a residual block on one channel of
// inLen samples: conv (same padding), conv, batchnorm, add, relu, global
// average pooling, linear 6, relu, linear 3 (logits of 3 classes).
func Residual(inLen int) nn.Arch {
	n := func(name, op string, in []string, attrs map[string]any) graph.Node {
		return graph.Node{Name: name, Op: op, Inputs: in, Attrs: attrs}
	}
	return nn.GraphArch(graph.Spec{Name: "residual", InChannels: 1, InLen: inLen, Nodes: []graph.Node{
		n("stem", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": 1}),
		n("blk.conv", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": []int64{1, 1}}),
		n("blk.bn", "batchnorm1d", nil, nil),
		n("blk.add", "add", []string{"stem", "blk.bn"}, nil),
		n("blk.relu", "relu", nil, nil),
		n("gap", "globalavgpool", nil, nil),
		n("fc1", "linear", nil, map[string]any{"out": 6}),
		n("relu", "relu", nil, nil),
		n("fc2", "linear", nil, map[string]any{"out": 3}),
	}})
}
