package graphtest

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

func node(name, op string, in []string, attrs map[string]any) graph.Node {
	return graph.Node{Name: name, Op: op, Inputs: in, Attrs: attrs}
}

// Residual is a small graph with a residual block on one channel of
// inLen samples: conv (same padding), conv, batchnorm, add, relu, global
// average pooling, linear 6, relu, linear 3 (logits of 3 classes).
func Residual(inLen int) graph.Spec {
	return graph.Spec{Name: "residual", InChannels: 1, InLen: inLen, Nodes: []graph.Node{
		node("stem", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": 1}),
		node("blk.conv", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": []int64{1, 1}}),
		node("blk.bn", "batchnorm1d", nil, nil),
		node("blk.add", "add", []string{"stem", "blk.bn"}, nil),
		node("blk.relu", "relu", nil, nil),
		node("gap", "globalavgpool", nil, nil),
		node("fc1", "linear", nil, map[string]any{"out": 6}),
		node("relu", "relu", nil, nil),
		node("fc2", "linear", nil, map[string]any{"out": 3}),
	}}
}

// MidOutput is a graph whose output node, "fc" (3 logits), is not its
// last: a softmax node follows it. On 2 channels of 10 samples: conv
// ('same'), a residual addition of the input, global average pooling,
// flatten, linear 3, softmax.
func MidOutput() graph.Spec {
	return graph.Spec{Name: "res-output", InChannels: 2, InLen: 10, Output: "fc", Nodes: []graph.Node{
		node("conv", "conv1d", nil, map[string]any{"out": 2, "kernel": 3, "padding": []int{1, 1}}),
		node("add", "add", []string{"conv", "input"}, nil),
		node("gap", "globalavgpool", nil, nil),
		node("flat", "flatten", nil, nil),
		node("fc", "linear", nil, map[string]any{"out": 3}),
		node("probs", "softmax", nil, nil),
	}}
}

// PaperGraph is the paper's network (sdk/nn's PaperArch) written as a
// graph of ops: the same modules under the same names, so the same
// state_dict, on 1 x 640 samples with 16 classes.
func PaperGraph() graph.Spec {
	conv := func(name string, out int) graph.Node {
		return node(name, "conv1d", nil, map[string]any{"out": out, "kernel": 3})
	}
	return graph.Spec{Name: "paper-as-graph", InChannels: 1, InLen: 640, Nodes: []graph.Node{
		conv("conv1", 8), node("relu1", "relu", nil, nil), conv("conv2", 8), node("relu2", "relu", nil, nil),
		node("pool", "maxpool1d", nil, map[string]any{"kernel": 3, "stride": 1}), node("bn1", "batchnorm1d", nil, nil),
		conv("conv3", 16), node("relu3", "relu", nil, nil), conv("conv4", 16), node("relu4", "relu", nil, nil),
		node("gmp", "globalmaxpool", nil, nil), node("bn2", "batchnorm1d", nil, nil), node("flat", "flatten", nil, nil),
		node("fc1", "linear", nil, map[string]any{"out": 64}), node("relu5", "relu", nil, nil), node("bn3", "batchnorm1d", nil, nil),
		node("fc2", "linear", nil, map[string]any{"out": 16}),
	}}
}

// EveryOp is a graph with a node of every op kind of graph.Ops() (2
// channels of 32 samples, 5 logits): padding (explicit, asymmetric and
// a pool's), a grouped dilated convolution and one without a bias,
// strided max pooling, average pooling, every activation, a softmax over
// channels mid-graph, residual additions on C x T and C x 1 values, a
// concatenation, both global pools, flatten of C x T, two linear layers
// and a batchnorm on 5 x 1 as the output. Its running variances must be
// positive for a finite output (RandomNet's are not: see PositiveVar).
func EveryOp() graph.Spec {
	return graph.Spec{Name: "everyop", InChannels: 2, InLen: 32, Output: "fbn", Nodes: []graph.Node{
		node("pad", "pad", []string{graph.Input}, map[string]any{"left": 1, "right": 2, "value": 0.5}),
		node("c1", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "dilation": 2, "groups": 2, "padding": []int64{2, 1}}),
		node("bn1", "batchnorm1d", nil, nil),
		node("lr", "leakyrelu", nil, map[string]any{"slope": 0.1}),
		node("mp", "maxpool1d", nil, map[string]any{"kernel": 3, "stride": 2, "padding": 1}),
		node("ap", "avgpool1d", nil, map[string]any{"kernel": 2, "stride": 1, "padding": 1}),
		node("ca", "conv1d", []string{"ap"}, map[string]any{"out": 3, "kernel": 1}),
		node("ga", "gelu", nil, nil),
		node("cb", "conv1d", []string{"ap"}, map[string]any{"out": 3, "kernel": 3, "padding": 1, "bias": false}),
		node("sb", "silu", nil, nil),
		node("sum", "add", []string{"ga", "sb"}, nil),
		node("r", "relu", nil, nil),
		node("sg", "sigmoid", []string{"ap"}, nil),
		node("cat", "concat", []string{"r", "sg"}, nil),
		node("th", "tanh", nil, nil),
		node("sm", "softmax", nil, nil),
		node("dr", "dropout", nil, map[string]any{"p": 0.2}),
		node("gmp", "globalmaxpool", []string{"dr"}, nil),
		node("gap", "globalavgpool", []string{"th"}, nil),
		node("g", "add", []string{"gmp", "gap"}, nil),
		node("fl", "flatten", []string{"dr"}, nil),
		node("fa", "linear", nil, map[string]any{"out": 5}),
		node("fb", "linear", []string{"g"}, map[string]any{"out": 5, "bias": false}),
		node("s2", "add", []string{"fa", "fb"}, nil),
		node("fbn", "batchnorm1d", nil, nil),
	}}
}

// Transformer is a small Transformer classifier (2 channels of 32
// samples, 5 logits) with a node of every op kind a Transformer needs: a
// patch convolution (kernel and stride 4) transposed to 8 tokens of 8
// features, a learned position embedding (affine), multi-head attention
// with a residual and a layernorm, a feed-forward block (dense, GELU's
// tanh form, dense), a layernorm written out (reducemean, sub, pow,
// sqrt, div, affine), a token-similarity branch (matmul of the tokens by
// their transpose, softmax over each row, mul, erf), and a mean over the
// tokens reshaped to a vector for the linear head.
func Transformer() graph.Spec {
	return graph.Spec{Name: "transformer", InChannels: 2, InLen: 32, Nodes: []graph.Node{
		node("patch", "conv1d", []string{graph.Input}, map[string]any{"out": 8, "kernel": 4, "stride": 4}),
		node("tok", "transpose", nil, nil),
		node("pos", "affine", nil, map[string]any{"bias": []int64{8, 8}}),
		node("attn", "attention", nil, map[string]any{"heads": 2}),
		node("res1", "add", []string{"pos", "attn"}, nil),
		node("norm1", "layernorm", nil, nil),
		node("ff1", "dense", nil, map[string]any{"out": 16}),
		node("act", "gelu_tanh", nil, nil),
		node("ff2", "dense", nil, map[string]any{"out": 8}),
		node("res2", "add", []string{"norm1", "ff2"}, nil),
		node("mu", "reducemean", nil, map[string]any{"axis": 1}),
		node("dev", "sub", []string{"res2", "mu"}, nil),
		node("sq", "pow", nil, map[string]any{"exponent": 2}),
		node("var", "reducemean", nil, map[string]any{"axis": 1}),
		node("eps", "affine", nil, map[string]any{"shift": 1e-5}),
		node("sd", "sqrt", nil, nil),
		node("z", "div", []string{"dev", "sd"}, nil),
		node("norm2", "affine", nil, map[string]any{"weight": []int64{1, 8}, "bias": []int64{1, 8}}),
		node("tt", "transpose", nil, nil),
		node("sim", "matmul", []string{"norm2", "tt"}, nil),
		node("w", "softmax", nil, map[string]any{"axis": 1}),
		node("mix", "matmul", []string{"w", "norm2"}, nil),
		node("gate", "erf", nil, nil),
		node("gated", "mul", []string{"norm2", "gate"}, nil),
		node("pool", "reducemean", nil, map[string]any{"axis": 0}),
		node("vec", "reshape", nil, map[string]any{"rows": 8, "cols": 1}),
		node("head", "linear", nil, map[string]any{"out": 5}),
	}}
}

// PositiveVar sets net's batchnorm running variances to |v| + 0.5.
func PositiveVar(net *graph.Net) {
	for _, p := range net.Params() {
		if strings.HasSuffix(p.Name, ".running_var") {
			for i := p.Offset; i < p.Offset+p.Len; i++ {
				net.Theta[i] = float32(math.Abs(float64(net.Theta[i]))) + 0.5
			}
		}
	}
}

// RandomNet compiles spec with parameters drawn from N(0, 0.5^2) by a
// stream of seed (running statistics too: a test network, not a trained
// one). A spec that does not compile fails t.
func RandomNet(t testing.TB, spec graph.Spec, seed uint64) *graph.Net {
	t.Helper()
	net, err := graph.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, seed+1))
	for i := range net.Theta {
		net.Theta[i] = float32(r.NormFloat64() * 0.5)
	}
	return net
}

// Local is a network of local ops on 2 channels of 96 samples (a padded
// stem, a residual block, a concatenation of a conv and a stride-1 max
// pool, a stride-2 conv) ending in the global pool op pool
// ("globalmaxpool" or "globalavgpool") and a linear of 3 logits.
func Local(name, pool string) graph.Spec {
	return graph.Spec{Name: name, InChannels: 2, InLen: 96, Nodes: []graph.Node{
		node("stem", "conv1d", nil, map[string]any{"out": 4, "kernel": 5, "padding": []int64{1, 3}}),
		node("b.conv", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": []int64{1, 1}}),
		node("b.add", "add", []string{"stem", "b.conv"}, nil),
		node("b.relu", "relu", nil, nil),
		node("k5", "conv1d", []string{"b.relu"}, map[string]any{"out": 3, "kernel": 5, "padding": []int64{2, 2}}),
		node("pool", "maxpool1d", []string{"b.relu"}, map[string]any{"kernel": 3, "stride": 1, "padding": 1}),
		node("cat", "concat", []string{"k5", "pool"}, nil),
		node("down", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "stride": 2}),
		node("gap", pool, nil, nil),
		node("fc", "linear", nil, map[string]any{"out": 3}),
	}}
}
