// Package graph describes a network as a graph of ops (issue 24): the
// form in which an architecture is written in TOML ([model] nodes, or
// recipes/archs/*.toml), imported from ONNX (sdk/onnx), and computed by
// the op table.
//
// A Spec is the contract between those parts. Its nodes are in
// topological order; a node reads the outputs of earlier nodes (or the
// network's input, Input) by name, so residual additions and
// concatenations are nodes with several inputs. Every value is C x T per
// input, channel-major, as everywhere in uaxai; a linear layer or a
// global pool gives C x 1.
//
// Names are PyTorch module paths. A node's parameters are
// "<name>.<suffix>" (name "block1.conv1", tensor "block1.conv1.weight"),
// so a model's state_dict loads by name. A layer P, as Grad-CAM names it,
// is the output of the last node whose name is P or begins with "P."
// (the output of PyTorch's module P): "block3" is the last node of
// block3. Nodes without parameters (activations, add) still have unique
// names under their module ("block1.relu2").
//
// The ops and their attributes (Node.Attrs; defaults in brackets), with
// the parameters' suffixes and shapes for input channels Cin:
//
//	conv1d      out, kernel, stride [1], dilation [1], groups [1],
//	            padding [[0, 0]]: [left, right] zeros, bias [true]
//	            weight (out, Cin/groups, kernel), bias (out)
//	pad         left, right, value [0.0]: constant padding in time
//	maxpool1d   kernel, stride [kernel], padding [0] (-inf padding)
//	avgpool1d   kernel, stride [kernel], padding [0] (zero padding,
//	            counted: PyTorch's count_include_pad = True)
//	globalavgpool, globalmaxpool   over time: C x T -> C x 1
//	batchnorm1d eps [1e-5] (eval: running statistics)
//	            weight, bias, running_mean, running_var (C)
//	linear      out, bias [true]: on C x 1 (after a global pool or
//	            flatten)   weight (out, C), bias (out)
//	flatten     C x T -> (C*T) x 1
//	relu, gelu (exact, erf), silu, sigmoid, tanh
//	leakyrelu   slope [0.01]
//	softmax     over channels
//	dropout     p [0.5]: identity in evaluation; MC dropout's masks
//	add         two inputs of one shape
//	concat      two or more inputs of one length, along channels
//
// The network's output is the output node's C x 1 values: class
// probabilities if its op is softmax, else logits (the softmax is
// applied on top).
package graph

// Input names the network's input among a node's inputs.
const Input = "input"

// Spec is a network: an input of InChannels x InLen samples and its
// nodes.
type Spec struct {
	Name       string `toml:"name" json:"name"`
	InChannels int    `toml:"in_channels" json:"in_channels"`
	InLen      int    `toml:"in_len" json:"in_len"`
	// Output names the output node; "" is the last node.
	Output string `toml:"output,omitempty" json:"output,omitempty"`
	Nodes  []Node `toml:"nodes" json:"nodes"`
}

// Node is one op of a Spec.
type Node struct {
	// Name is unique in the Spec: a module path (see the package doc).
	Name string `toml:"name" json:"name"`
	// Op is an op kind of the table (see the package doc).
	Op string `toml:"op" json:"op"`
	// Inputs name earlier nodes or Input; nil is the previous node's
	// output (Input for the first node).
	Inputs []string `toml:"inputs,omitempty" json:"inputs,omitempty"`
	// Attrs are the op's attributes: int64, float64, bool, string, or
	// []int64 values, as TOML decodes them (int and []int are accepted
	// too). In a TOML file they are written inline in the node's
	// [[nodes]] table (see ReadSpecFile); the op table (Ops) says which
	// each op accepts, and Net.Spec gives them with defaults filled in.
	Attrs map[string]any `toml:"attrs,omitempty" json:"attrs,omitempty"`
}
