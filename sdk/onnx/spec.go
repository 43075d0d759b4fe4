package onnx

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/internal/checked"
	nngraph "github.com/uaxai/uaxai/sdk/nn/graph"
)

// LoadSpec reads the ONNX model at path and converts it (Read, then
// ToSpec).
func LoadSpec(path string) (nngraph.Spec, map[string]Tensor, error) {
	m, err := Read(path)
	if err != nil {
		return nngraph.Spec{}, nil, err
	}
	return ToSpec(m)
}

// LoadNet reads the ONNX model at path and compiles it with its weights:
// LoadSpec, nngraph.Compile, then the parameters as its state_dict.
func LoadNet(path string) (*nngraph.Net, error) {
	spec, params, err := LoadSpec(path)
	if err != nil {
		return nil, err
	}
	net, err := nngraph.Compile(spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sd := make(map[string]nngraph.Tensor, len(params))
	for k, p := range params {
		sd[k] = nngraph.Tensor{Shape: p.Shape, Data: p.Float}
	}
	if err := net.LoadStateDict(sd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return net, nil
}

// ToSpec converts a model into a nngraph.Spec and its parameters, named
// "<node>.<suffix>" (weight, bias, running_mean, running_var) as the
// graph package's doc says. The parameters are copies: they share no
// storage with m.
//
// The model has one input of shape (batch, C, T), C and T fixed, and one
// output. Its operators map onto the graph's ops:
//
//	Conv                 conv1d (auto_pad NOTSET, 1-d kernels; weight and
//	                     optional bias are initializers; a BatchNorm torch
//	                     folded into the convolution is simply its weights)
//	Pad                  constant mode, on the time axis only: dropped when
//	                     its pads are 0; merged into the padding of the
//	                     Conv, or of the AveragePool (equal left and
//	                     right), that alone reads it when its value is 0;
//	                     else pad
//	MaxPool, AveragePool maxpool1d, avgpool1d (ceil_mode 0, symmetric
//	                     pads, no dilation; an AveragePool with pads
//	                     counts them: count_include_pad 1)
//	GlobalAveragePool, ReduceMean over time (axes [2] or [-1])
//	                     globalavgpool; GlobalMaxPool, ReduceMax: globalmaxpool
//	BatchNormalization   batchnorm1d (eval: training_mode 0)
//	Gemm                 linear (transA 0, transB 1, alpha = beta = 1)
//	MatMul [+ Add]       linear, the Add of a constant vector its bias
//	Flatten, Reshape, Squeeze, Unsqueeze
//	                     nothing on a C x 1 value (which is already flat),
//	                     flatten for Flatten(axis 1) or Reshape(B, C*T) of
//	                     a C x T value
//	Relu, Sigmoid, Tanh  relu, sigmoid, tanh; LeakyRelu: leakyrelu
//	Softmax              softmax, axis 1 or -1 of a (batch, classes) value
//	Div, Erf, Add, Mul, Mul  gelu, the pattern x * (erf(x / √2) + 1) * 0.5
//	                     torch writes for F.gelu (constants checked)
//	Sigmoid, Mul         silu, x * sigmoid(x) (F.silu)
//	ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div [, Mul, Add]
//	                     layernorm, nn.LayerNorm over the last axis as
//	                     torch writes it (exponent 2, scalar eps; named
//	                     after its module, whose weight and bias become
//	                     its parameters: converter.layerNorm)
//	Add                  add, of two computed values
//	Concat               concat, along channels
//	Dropout              dropout (p = its ratio; identity in evaluation)
//	Identity             nothing
//
// Anything else (an operator, an attribute or a value outside this, a
// Div, Mul, Sub or Erf outside the patterns, a Transpose) is refused with
// the file, the node's name and operator, and what is accepted.
//
// Names: a node of the graph is named after the PyTorch module its ONNX
// node belongs to (ModulePath). The only node of a module is named by the
// module's path ("block1.conv1", "fc", "block3.short"), so a Conv1d's or
// a BatchNorm1d's parameters have their state_dict names. The nodes of a
// module that has several (functional calls in its forward, and the
// nodes of the root module "") are named "<module>.<op>" ("<op>" in the
// root), the second of an op "<module>.<op>_2", then _3 and so on,
// skipping names that are module paths. A node merged into another (a
// Pad, the parts of a GELU) gives its module no node of its own. A layer
// P then resolves as the graph package says, to the last node named P or
// "P.…", which computes what Model.ModuleOutput(P) names.
//
// The Spec's output is the node computing the model's output: the softmax
// when the export ends with one (class probabilities).
//
// Sizes: the input and every value computed have at most MaxLen samples
// and MaxElements values (channels x samples); pads, kernel_shape,
// strides and dilations beyond MaxLen, and a padded input or a kernel's
// span beyond that, are refused naming the node and the attribute. The
// shape arithmetic is checked (internal/checked), so no length wraps.
func ToSpec(m *Model) (spec nngraph.Spec, params map[string]Tensor, err error) {
	defer func() {
		if err != nil {
			spec, params = nngraph.Spec{}, nil
		}
	}()
	if m == nil {
		return nngraph.Spec{}, nil, errors.New("onnx: ToSpec of a nil model")
	}
	defer recovered(&err, func() string { return "onnx: " + m.Name })
	c, err := convert(m)
	if err != nil {
		return nngraph.Spec{}, nil, fmt.Errorf("onnx: %s: %w", m.Name, err)
	}
	return c.spec, c.params, nil
}

// value is an ONNX value during conversion: the emitted node that
// computes it (-1: the graph input), its rank (3: batch, C, T; 2: batch,
// C) and its sizes (t = 1 at rank 2).
type sval struct {
	node, rank, c, t int
}

// emitted is a node of the Spec before it is named.
type emitted struct {
	module, op string
	attrs      map[string]any
	ins        []int // emitted nodes, -1 the graph input
	params     map[string]Tensor
	onnx       string // the ONNX value it computes
}

type converter struct {
	m         *Model
	vals      map[string]sval
	consumers map[string][]int
	done      []bool
	padFor    map[int][2]int64 // a Pad merged into node i's padding
	out       []emitted
	spec      nngraph.Spec
	params    map[string]Tensor
	onnxOf    []string // per Spec node, the ONNX value it computes
	probes    int      // names name() tried, for the test of its linearity
	f         *folder  // the shape arithmetic folded at conversion, attention blocks evaluated
}

// nodeErr is an error about node n.
func nodeErr(n *Node, format string, a ...any) error {
	return fmt.Errorf("node %q (%s): %s", n.Name, n.OpType, fmt.Sprintf(format, a...))
}

func convert(m *Model) (*converter, error) {
	c := &converter{m: m, vals: map[string]sval{}, consumers: map[string][]int{}, done: make([]bool, len(m.Nodes)), padFor: map[int][2]int64{},
		f: &folder{b: budget{left: MaxFoldElements, max: MaxFoldElements, what: "values computed at conversion"}}}
	if len(m.Inputs) != 1 || len(m.Outputs) != 1 {
		return nil, fmt.Errorf("%d inputs and %d outputs; accepted: one input (batch, channels, samples) and one output", len(m.Inputs), len(m.Outputs))
	}
	in := m.Inputs[0]
	if len(in.Shape) != 3 || in.Shape[1] < 1 || in.Shape[2] < 1 {
		return nil, fmt.Errorf("input %q has shape %v; accepted: (batch, channels, samples) with channels and samples fixed", in.Name, in.Shape)
	}
	if err := checkSize(nil, fmt.Sprintf("input %q", in.Name), in.Shape[1], in.Shape[2]); err != nil {
		return nil, err
	}
	c.vals[in.Name] = sval{node: -1, rank: 3, c: in.Shape[1], t: in.Shape[2]}
	for i, n := range m.Nodes {
		for _, v := range n.Inputs {
			c.consumers[v] = append(c.consumers[v], i)
		}
	}
	for i := range m.Nodes {
		if c.done[i] {
			continue
		}
		n := &m.Nodes[i]
		if folded, err := c.foldConst(n); err != nil {
			return nil, err
		} else if folded {
			continue
		}
		h, ok := handlers[n.OpType]
		if !ok {
			return nil, nodeErr(n, "operator not supported; supported: %s", strings.Join(SupportedOps(), ", "))
		}
		allowed := attrSets[n.OpType]
		for nm := range n.Attrs {
			if !slices.Contains(allowed, nm) {
				return nil, nodeErr(n, "attribute %q is not supported; accepted attributes of %s: %s", nm, n.OpType, orNone(allowed))
			}
		}
		if err := c.handle(h, i, n); err != nil {
			return nil, err
		}
	}
	outV, ok := c.vals[m.Outputs[0].Name]
	if !ok || outV.node < 0 {
		return nil, fmt.Errorf("output %q is not computed by a node", m.Outputs[0].Name)
	}
	if outV.rank != 2 && outV.t != 1 {
		return nil, fmt.Errorf("output %q has %d channels x %d samples; accepted: a C x 1 value (after a global pool or a linear layer)", m.Outputs[0].Name, outV.c, outV.t)
	}
	c.name(in, outV.node)
	return c, nil
}

// handle converts node n (the i-th) with h; a panic, a bug of a
// conversion that its checks missed, becomes an error naming the node.
func (c *converter) handle(h func(c *converter, i int, n *Node) error, i int, n *Node) (err error) {
	defer recovered(&err, func() string { return fmt.Sprintf("node %q (%s)", n.Name, n.OpType) })
	return h(c, i, n)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// attrSets are the attributes each operator may carry.
var attrSets = map[string][]string{
	"Conv":               {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
	"Pad":                {"mode"},
	"MaxPool":            {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"},
	"AveragePool":        {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"},
	"ReduceMean":         {"axes", "keepdims"},
	"ReduceMax":          {"axes", "keepdims"},
	"BatchNormalization": {"epsilon", "momentum", "training_mode"},
	"Gemm":               {"alpha", "beta", "transA", "transB"},
	"Flatten":            {"axis"},
	"Reshape":            {"allowzero"},
	"LeakyRelu":          {"alpha"},
	"Softmax":            {"axis"},
	"Concat":             {"axis"},
	"Dropout":            {"seed"},
	"Transpose":          {"perm"},
	"Gather":             {"axis"},
	"Cast":               {"to"},
	"Shape":              {"start", "end"},
}

// handlers convert each operator of SupportedOps.
var handlers = map[string]func(c *converter, i int, n *Node) error{
	"Add":                (*converter).binary,
	"AveragePool":        (*converter).pool,
	"BatchNormalization": (*converter).batchnorm,
	"Cast":               runtimeShapeOp,
	"Concat":             (*converter).concat,
	"Conv":               (*converter).conv,
	"Div":                (*converter).div,
	"Dropout":            (*converter).dropout,
	"Erf":                (*converter).unary,
	"Flatten":            (*converter).reshape,
	"Gather":             runtimeShapeOp,
	"Gemm":               (*converter).gemm,
	"GlobalAveragePool":  (*converter).global,
	"GlobalMaxPool":      (*converter).global,
	"Identity":           (*converter).identity,
	"LeakyRelu":          (*converter).activation,
	"MatMul":             (*converter).matmul,
	"MaxPool":            (*converter).pool,
	"Mul":                (*converter).binary,
	"Pad":                (*converter).pad,
	"Pow":                (*converter).unary,
	"ReduceMax":          (*converter).global,
	"ReduceMean":         (*converter).global,
	"Relu":               (*converter).activation,
	"Reshape":            (*converter).reshape,
	"Shape":              (*converter).shapeOf,
	"Sigmoid":            (*converter).sigmoid,
	"Slice":              runtimeShapeOp,
	"Softmax":            (*converter).softmax,
	"Sqrt":               (*converter).unary,
	"Squeeze":            (*converter).reshape,
	"Sub":                (*converter).binary,
	"Tanh":               (*converter).activation,
	"Transpose":          (*converter).transpose,
	"Unsqueeze":          (*converter).reshape,
}

// input returns the computed value of input k of n.
func (c *converter) input(n *Node, k int) (sval, error) {
	if k >= len(n.Inputs) || n.Inputs[k] == "" {
		return sval{}, nodeErr(n, "input %d is missing", k)
	}
	v, ok := c.vals[n.Inputs[k]]
	if !ok {
		if _, isConst := c.m.Initializers[n.Inputs[k]]; isConst {
			return sval{}, nodeErr(n, "input %d (%q) is a constant; accepted: a value computed from the network's input", k, n.Inputs[k])
		}
		return sval{}, nodeErr(n, "input %d (%q) is not a value the conversion knows", k, n.Inputs[k])
	}
	return v, nil
}

// constant returns input k of n as a float32 constant, or nil when the
// optional input is absent.
func (c *converter) constant(n *Node, k int, what string) (*Tensor, error) {
	if k >= len(n.Inputs) || n.Inputs[k] == "" {
		return nil, nil
	}
	t, ok := c.m.Initializers[n.Inputs[k]]
	if !ok {
		return nil, nodeErr(n, "its %s (input %d, %q) is computed at run time; accepted: a constant (initializer)", what, k, n.Inputs[k])
	}
	if t.DType != Float32 {
		return nil, nodeErr(n, "its %s (input %d, %q) is %s; accepted: float32", what, k, n.Inputs[k], t.DType)
	}
	return &t, nil
}

// emit adds a node computing n's first output (as out, if not empty),
// a value res of at most MaxLen samples and MaxElements values, or says
// why not.
func (c *converter) emit(n *Node, op string, attrs map[string]any, ins []sval, params map[string]Tensor, res sval, out string) error {
	if err := checkSize(n, "its output", res.c, res.t); err != nil {
		return err
	}
	e := emitted{module: ModulePath(n.Name), op: op, attrs: attrs, params: params}
	for _, v := range ins {
		e.ins = append(e.ins, v.node)
	}
	if out == "" {
		out = n.Outputs[0]
	}
	e.onnx = out
	res.node = len(c.out)
	c.out = append(c.out, e)
	c.vals[out] = res
	return nil
}

// checkSize refuses a value (what, of node n; n nil for the graph
// input) of ch channels x t samples beyond MaxLen samples or MaxElements
// values.
func checkSize(n *Node, what string, ch, t int) error {
	size, ok := checked.Mul(ch, t)
	var why string
	switch {
	case t > MaxLen:
		why = fmt.Sprintf("%s has %d samples, more than the %d accepted (onnx.MaxLen)", what, t, MaxLen)
	case !ok || size > MaxElements:
		why = fmt.Sprintf("%s has %d channels x %d samples, more than the %d values accepted (onnx.MaxElements)", what, ch, t, MaxElements)
	default:
		return nil
	}
	if n == nil {
		return errors.New(why)
	}
	return nodeErr(n, "%s", why)
}

// scalarInit is the value of the float32 scalar initializer name.
func (c *converter) scalarInit(name string) (float32, bool) {
	t, ok := c.m.Initializers[name]
	if !ok || t.DType != Float32 || t.Len() != 1 {
		return 0, false
	}
	return t.Float[0], true
}

// otherInput is the input of a two-input node b that is not v ("" when
// b has not two inputs or v is neither).
func otherInput(b *Node, v string) string {
	switch {
	case len(b.Inputs) != 2:
		return ""
	case b.Inputs[0] == v:
		return b.Inputs[1]
	case b.Inputs[1] == v:
		return b.Inputs[0]
	}
	return ""
}

// alias makes n's first output the value v (a node converted to nothing).
func (c *converter) alias(n *Node, v sval) { c.vals[n.Outputs[0]] = v }

// soleConsumer returns the index of the only node reading value name,
// or -1 when it has several readers or is the model's output.
func (c *converter) soleConsumer(name string) int {
	if name == c.m.Outputs[0].Name {
		return -1
	}
	cs := c.consumers[name]
	if len(cs) != 1 {
		return -1
	}
	return cs[0]
}

// attribute readers: the default when absent, an error on another kind.

func intsAttr(n *Node, name string, def []int64) ([]int64, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return def, nil
	}
	if a.Kind != AttrInts {
		return nil, nodeErr(n, "attribute %q must be a list of ints", name)
	}
	return a.Ints, nil
}

func intAttr1(n *Node, name string, def int64) (int64, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return def, nil
	}
	if a.Kind != AttrInt {
		return 0, nodeErr(n, "attribute %q must be an int", name)
	}
	return a.Int, nil
}

func floatAttr(n *Node, name string, def float32) (float32, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return def, nil
	}
	if a.Kind != AttrFloat {
		return 0, nodeErr(n, "attribute %q must be a float", name)
	}
	return a.Float, nil
}

func stringAttr(n *Node, name, def string) (string, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return def, nil
	}
	if a.Kind != AttrString {
		return "", nodeErr(n, "attribute %q must be a string", name)
	}
	return a.String, nil
}

// f64 is the shortest decimal reading of a float32 as a float64 (1e-05,
// not 9.999999747378752e-06).
func f64(f float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return v
}

// one checks that a 1-d attribute list (a count of samples) has one
// element, from lo to MaxLen, and returns it.
func one(n *Node, name string, v []int64, lo int64) (int64, error) {
	if len(v) != 1 || v[0] < lo || v[0] > MaxLen {
		return 0, nodeErr(n, "attribute %q = %v; accepted: one value (1-d) from %d to %d (onnx.MaxLen)", name, v, lo, MaxLen)
	}
	return v[0], nil
}

func clone(t *Tensor, shape []int) Tensor {
	return Tensor{DType: Float32, Shape: shape, Float: slices.Clone(t.Float)}
}

func (c *converter) conv(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	if x.rank != 3 {
		return nodeErr(n, "its input is a (batch, %d) value; accepted: (batch, channels, samples)", x.c)
	}
	if ap, err := stringAttr(n, "auto_pad", "NOTSET"); err != nil {
		return err
	} else if ap != "NOTSET" {
		return nodeErr(n, "attribute \"auto_pad\" = %q is not supported; accepted: NOTSET (explicit pads, as torch writes them)", ap)
	}
	w, err := c.constant(n, 1, "weight")
	if err != nil {
		return err
	}
	if w == nil || len(w.Shape) != 3 {
		return nodeErr(n, "its weight must be a constant of shape (out, in/groups, kernel): 1-d convolutions only")
	}
	out, cpg, k := w.Shape[0], w.Shape[1], w.Shape[2]
	ks, err := intsAttr(n, "kernel_shape", []int64{int64(k)})
	if err != nil {
		return err
	}
	if len(ks) != 1 || ks[0] != int64(k) {
		return nodeErr(n, "attribute \"kernel_shape\" = %v, its weight has shape %v; accepted: [%d]", ks, w.Shape, k)
	}
	sv, err := intsAttr(n, "strides", []int64{1})
	if err != nil {
		return err
	}
	stride, err := one(n, "strides", sv, 1)
	if err != nil {
		return err
	}
	dv, err := intsAttr(n, "dilations", []int64{1})
	if err != nil {
		return err
	}
	dil, err := one(n, "dilations", dv, 1)
	if err != nil {
		return err
	}
	groups, err := intAttr1(n, "group", 1)
	if err != nil {
		return err
	}
	if groups < 1 || x.c%int(groups) != 0 || out%int(groups) != 0 || x.c/int(groups) != cpg {
		return nodeErr(n, "attribute \"group\" = %d with %d input channels and a weight of shape %v; accepted: groups dividing both channel counts, weight (out, in/groups, kernel)", groups, x.c, w.Shape)
	}
	pads, err := intsAttr(n, "pads", []int64{0, 0})
	if err != nil {
		return err
	}
	if len(pads) != 2 || pads[0] < 0 || pads[1] < 0 || pads[0] > MaxLen || pads[1] > MaxLen {
		return nodeErr(n, "attribute \"pads\" = %v; accepted: [begin, end], each from 0 to %d (onnx.MaxLen)", pads, MaxLen)
	}
	pl, pr := int(pads[0]), int(pads[1])
	if p, ok := c.padFor[i]; ok {
		pl, pr = pl+int(p[0]), pr+int(p[1]) // each at most 2 MaxLen
	}
	padded, err := paddedLen(n, `attribute "pads"`, x.t, pl, pr)
	if err != nil {
		return err
	}
	if k > MaxLen {
		return nodeErr(n, "its kernel has %d taps, more than the %d accepted (onnx.MaxLen)", k, MaxLen)
	}
	// k and dil are at most MaxLen (2^24): the span cannot overflow.
	span := int(dil)*(k-1) + 1
	if padded < span {
		return nodeErr(n, "attribute \"dilations\" = %v: its kernel of %d taps spans %d samples, more than the %d of its padded input; accepted: a span dilations*(kernel-1)+1 of at most %d", dv, k, span, padded, padded)
	}
	tout := (padded-span)/int(stride) + 1
	params := map[string]Tensor{"weight": clone(w, slices.Clone(w.Shape))}
	b, err := c.constant(n, 2, "bias")
	if err != nil {
		return err
	}
	if b != nil {
		if b.Len() != out {
			return nodeErr(n, "its bias has shape %v; accepted: (%d)", b.Shape, out)
		}
		params["bias"] = clone(b, []int{out})
	}
	attrs := map[string]any{"out": int64(out), "kernel": int64(k), "stride": stride, "dilation": dil, "groups": groups,
		"padding": []int64{int64(pl), int64(pr)}, "bias": b != nil}
	return c.emit(n, "conv1d", attrs, []sval{x}, params, sval{rank: 3, c: out, t: tout}, "")
}

// paddedLen is t + left + right, the length of a padded input, refused
// (naming what of n gave the padding) beyond MaxLen samples.
func paddedLen(n *Node, what string, t, left, right int) (int, error) {
	padded, ok := checked.Sum(t, left, right)
	if !ok || padded > MaxLen {
		return 0, nodeErr(n, "%s: a padding of %d + %d samples around its input of %d gives more than the %d samples accepted (onnx.MaxLen)", what, left, right, t, MaxLen)
	}
	return padded, nil
}

// padAmounts returns the left and right padding in time and the value of
// a Pad node on x, refusing other axes and modes.
func (c *converter) padAmounts(n *Node, x sval) (int64, int64, float32, error) {
	mode, err := stringAttr(n, "mode", "constant")
	if err != nil {
		return 0, 0, 0, err
	}
	if mode != "constant" {
		return 0, 0, 0, nodeErr(n, "attribute \"mode\" = %q is not supported; accepted: constant", mode)
	}
	if len(n.Inputs) < 2 {
		return 0, 0, 0, nodeErr(n, "no pads input; accepted: Pad(data, pads[, constant_value])")
	}
	pt, ok := c.m.Initializers[n.Inputs[1]]
	if !ok || pt.DType != Int64 {
		return 0, 0, 0, nodeErr(n, "its pads must be an int64 constant")
	}
	p := pt.Int
	if len(p) != 2*x.rank || x.rank != 3 {
		return 0, 0, 0, nodeErr(n, "pads %v on a rank-%d value; accepted: 6 pads (batch, channels, time) x (begin, end)", p, x.rank)
	}
	if p[0] != 0 || p[1] != 0 || p[3] != 0 || p[4] != 0 || p[2] < 0 || p[5] < 0 {
		return 0, 0, 0, nodeErr(n, "pads %v; accepted: padding on the time axis only ([0, 0, left, 0, 0, right], non-negative)", p)
	}
	if p[2] > MaxLen || p[5] > MaxLen {
		return 0, 0, 0, nodeErr(n, "pads %v; accepted: a left and a right padding of at most %d samples each (onnx.MaxLen)", p, MaxLen)
	}
	var val float32
	if len(n.Inputs) > 2 && n.Inputs[2] != "" {
		vt, ok := c.m.Initializers[n.Inputs[2]]
		if !ok || vt.DType != Float32 || vt.Len() != 1 {
			return 0, 0, 0, nodeErr(n, "its constant_value must be a float32 scalar constant")
		}
		val = vt.Float[0]
	}
	if math.IsNaN(float64(val)) || math.IsInf(float64(val), 0) {
		return 0, 0, 0, nodeErr(n, "its constant_value is %g; accepted: a finite number", val)
	}
	return p[2], p[5], val, nil
}

func (c *converter) pad(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	l, r, val, err := c.padAmounts(n, x)
	if err != nil {
		return err
	}
	if l == 0 && r == 0 {
		c.alias(n, x)
		return nil
	}
	if k := c.soleConsumer(n.Outputs[0]); k >= 0 && val == 0 && c.m.Nodes[k].Inputs[0] == n.Outputs[0] {
		switch cn := &c.m.Nodes[k]; {
		case cn.OpType == "Conv",
			cn.OpType == "AveragePool" && l == r:
			c.padFor[k] = [2]int64{l, r}
			c.alias(n, x)
			return nil
		}
	}
	t, err := paddedLen(n, "its pads (input 1)", x.t, int(l), int(r))
	if err != nil {
		return err
	}
	return c.emit(n, "pad", map[string]any{"left": l, "right": r, "value": f64(val)}, []sval{x}, nil, sval{rank: 3, c: x.c, t: t}, "")
}

func (c *converter) pool(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	if x.rank != 3 {
		return nodeErr(n, "its input is a (batch, %d) value; accepted: (batch, channels, samples)", x.c)
	}
	if len(n.Outputs) > 1 && n.Outputs[1] != "" {
		return nodeErr(n, "its Indices output is not supported; accepted: one output")
	}
	if ap, err := stringAttr(n, "auto_pad", "NOTSET"); err != nil {
		return err
	} else if ap != "NOTSET" {
		return nodeErr(n, "attribute \"auto_pad\" = %q is not supported; accepted: NOTSET (explicit pads, as torch writes them)", ap)
	}
	if cm, err := intAttr1(n, "ceil_mode", 0); err != nil {
		return err
	} else if cm != 0 {
		return nodeErr(n, "attribute \"ceil_mode\" = %d is not supported; accepted: 0 (floor, PyTorch's default)", cm)
	}
	ks, err := intsAttr(n, "kernel_shape", nil)
	if err != nil {
		return err
	}
	k, err := one(n, "kernel_shape", ks, 1)
	if err != nil {
		return err
	}
	sv, err := intsAttr(n, "strides", []int64{1})
	if err != nil {
		return err
	}
	stride, err := one(n, "strides", sv, 1)
	if err != nil {
		return err
	}
	if dv, err := intsAttr(n, "dilations", []int64{1}); err != nil {
		return err
	} else if len(dv) != 1 || dv[0] != 1 {
		return nodeErr(n, "attribute \"dilations\" = %v is not supported; accepted: [1]", dv)
	}
	pads, err := intsAttr(n, "pads", []int64{0, 0})
	if err != nil {
		return err
	}
	if len(pads) != 2 || pads[0] != pads[1] || pads[0] < 0 || pads[0] > MaxLen {
		return nodeErr(n, "attribute \"pads\" = %v is not supported; accepted: [p, p], equal padding on both sides, p from 0 to %d (onnx.MaxLen)", pads, MaxLen)
	}
	p := pads[0]
	op := "maxpool1d"
	if n.OpType == "AveragePool" {
		op = "avgpool1d"
		if cip, err := intAttr1(n, "count_include_pad", 0); err != nil {
			return err
		} else if cip != 1 && p != 0 {
			return nodeErr(n, "attribute \"count_include_pad\" = %d with pads %v is not supported; accepted: 1 (the padding is averaged in, PyTorch's default)", cip, pads)
		}
		if m, ok := c.padFor[i]; ok {
			p += m[0]
		}
	}
	// p is at most 2 MaxLen (a merged Pad's included), k at most MaxLen.
	if 2*p > k {
		return nodeErr(n, "pads %d and kernel %d: PyTorch requires padding at most half the kernel", p, k)
	}
	padded, err := paddedLen(n, `attribute "pads"`, x.t, int(p), int(p))
	if err != nil {
		return err
	}
	if padded < int(k) {
		return nodeErr(n, "attribute \"kernel_shape\" = %v: its kernel %d is longer than its padded input (%d samples); accepted: at most %d", ks, k, padded, padded)
	}
	tout := (padded-int(k))/int(stride) + 1
	return c.emit(n, op, map[string]any{"kernel": k, "stride": stride, "padding": p}, []sval{x}, nil, sval{rank: 3, c: x.c, t: tout}, "")
}

// global converts GlobalAveragePool, GlobalMaxPool and ReduceMean and
// ReduceMax over time.
func (c *converter) global(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	if n.OpType == "ReduceMean" {
		if ok, err := c.layerNorm(n, x); ok || err != nil {
			return err
		}
	}
	if x.rank == 2 && n.OpType == "ReduceMean" {
		// the mean of a (batch, features) value's features, kept as (batch, 1)
		axes, err := intsAttr(n, "axes", nil)
		if err != nil {
			return err
		}
		keep, err := intAttr1(n, "keepdims", 1)
		if err != nil {
			return err
		}
		if len(n.Inputs) > 1 || keep != 1 || len(axes) != 1 || (axes[0] != 1 && axes[0] != -1) {
			return nodeErr(n, "axes %v, keepdims %d of a (batch, %d) value are not supported; accepted: axes [1] or [-1] with keepdims 1", axes, keep, x.c)
		}
		return c.emit(n, "reducemean", map[string]any{"axis": int64(0)}, []sval{x}, nil, sval{rank: 2, c: 1, t: 1}, "")
	}
	if x.rank != 3 {
		return nodeErr(n, "its input is a (batch, %d) value; accepted: (batch, channels, samples)", x.c)
	}
	op := "globalavgpool"
	if n.OpType == "GlobalMaxPool" || n.OpType == "ReduceMax" {
		op = "globalmaxpool"
	}
	res := sval{rank: 3, c: x.c, t: 1}
	if strings.HasPrefix(n.OpType, "Reduce") {
		if len(n.Inputs) > 1 {
			return nodeErr(n, "axes as an input (opset 18) are not supported; accepted: the attribute axes = [2] or [-1]")
		}
		axes, err := intsAttr(n, "axes", nil)
		if err != nil {
			return err
		}
		keep, err := intAttr1(n, "keepdims", 1)
		if err != nil {
			return err
		}
		if n.OpType == "ReduceMean" && len(axes) == 1 && (axes[0] == 1 || axes[0] == -2) {
			return c.tokenMean(n, x, keep != 0)
		}
		if len(axes) != 1 || (axes[0] != 2 && axes[0] != -1) {
			return nodeErr(n, "attribute \"axes\" = %v is not supported; accepted: [2] or [-1] (over time, or a row's features), and for ReduceMean [1] or [-2] (over the channels, or the tokens)", axes)
		}
		if keep == 0 {
			res.rank = 2
		}
	}
	return c.emit(n, op, nil, []sval{x}, nil, res, "")
}

func (c *converter) batchnorm(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	if tm, err := intAttr1(n, "training_mode", 0); err != nil {
		return err
	} else if tm != 0 {
		return nodeErr(n, "attribute \"training_mode\" = %d is not supported; accepted: 0 (evaluation, running statistics)", tm)
	}
	if len(n.Outputs) > 1 {
		return nodeErr(n, "%d outputs; accepted: one (evaluation)", len(n.Outputs))
	}
	eps, err := floatAttr(n, "epsilon", 1e-5)
	if err != nil {
		return err
	}
	params := map[string]Tensor{}
	for k, suffix := range []string{"weight", "bias", "running_mean", "running_var"} {
		t, err := c.constant(n, k+1, suffix)
		if err != nil {
			return err
		}
		if t == nil || t.Len() != x.c {
			return nodeErr(n, "its %s must be a constant of %d values, one per channel", suffix, x.c)
		}
		params[suffix] = clone(t, []int{x.c})
	}
	return c.emit(n, "batchnorm1d", map[string]any{"eps": f64(eps)}, []sval{x}, params, sval{rank: x.rank, c: x.c, t: x.t}, "")
}

// flat checks that x is a C x 1 value for a linear layer.
func flat(n *Node, x sval) error {
	if x.rank == 3 && x.t != 1 {
		return nodeErr(n, "its input has %d channels x %d samples; accepted: a (batch, C) value (after a global pool or a flatten)", x.c, x.t)
	}
	return nil
}

func (c *converter) gemm(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	if err := flat(n, x); err != nil {
		return err
	}
	for _, a := range []struct {
		name string
		want int64
	}{{"transA", 0}, {"transB", 1}} {
		v, err := intAttr1(n, a.name, 0)
		if err != nil {
			return err
		}
		if v != a.want {
			return nodeErr(n, "attribute %q = %d is not supported; accepted: %d (torch's nn.Linear: y = x Wᵀ + b)", a.name, v, a.want)
		}
	}
	for _, a := range []string{"alpha", "beta"} {
		v, err := floatAttr(n, a, 1)
		if err != nil {
			return err
		}
		if v != 1 {
			return nodeErr(n, "attribute %q = %g is not supported; accepted: 1", a, v)
		}
	}
	w, err := c.constant(n, 1, "weight")
	if err != nil {
		return err
	}
	if w == nil || len(w.Shape) != 2 || w.Shape[1] != x.c {
		return nodeErr(n, "its weight must be a constant of shape (out, %d)", x.c)
	}
	out := w.Shape[0]
	params := map[string]Tensor{"weight": clone(w, slices.Clone(w.Shape))}
	b, err := c.constant(n, 2, "bias")
	if err != nil {
		return err
	}
	if b != nil {
		if b.Len() != out || (len(b.Shape) == 2 && b.Shape[0] != 1) || len(b.Shape) > 2 {
			return nodeErr(n, "its bias has shape %v; accepted: (%d) or (1, %d)", b.Shape, out, out)
		}
		params["bias"] = clone(b, []int{out})
	}
	return c.emit(n, "linear", map[string]any{"out": int64(out), "bias": b != nil}, []sval{x}, params, sval{rank: 2, c: out, t: 1}, "")
}

// matmul converts MatMul(x, W) and, when an Add of a constant vector
// alone reads it, its bias.
func (c *converter) matmul(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	if len(n.Inputs) == 2 && x.rank == 3 {
		if y, ok := c.vals[n.Inputs[1]]; ok { // a product of two computed values
			if y.rank != 3 || y.c != x.t {
				return nodeErr(n, "a product of (batch, %d, %d) and a rank-%d (batch, %d, %d) value; accepted: (batch, M, K) and (batch, K, N)", x.c, x.t, y.rank, y.c, y.t)
			}
			return c.emit(n, "matmul", nil, []sval{x, y}, nil, sval{rank: 3, c: x.c, t: y.t}, "")
		}
	}
	in := x.c // the features the product reads: of a vector, or of each row
	op, res := "linear", func(out int) sval { return sval{rank: 2, c: out, t: 1} }
	if x.rank == 3 && x.t != 1 {
		in, op = x.t, "dense"
		res = func(out int) sval { return sval{rank: 3, c: x.c, t: out} }
	} else if err := flat(n, x); err != nil {
		return err
	}
	w, err := c.constant(n, 1, "weight")
	if err != nil {
		return err
	}
	if w == nil || len(w.Shape) != 2 || w.Shape[0] != in {
		return nodeErr(n, "its second input must be a constant of shape (%d, out)", in)
	}
	out := w.Shape[1]
	wt := transposed(w)
	params := map[string]Tensor{"weight": wt}
	resName := n.Outputs[0]
	if k := c.soleConsumer(n.Outputs[0]); k >= 0 && c.m.Nodes[k].OpType == "Add" {
		an := &c.m.Nodes[k]
		other := an.Inputs[1]
		if other == n.Outputs[0] {
			other = an.Inputs[0]
		}
		if b, ok := c.m.Initializers[other]; ok && b.DType == Float32 && b.Len() == out && len(b.Shape) <= 2 {
			params["bias"] = clone(&b, []int{out})
			c.done[k] = true
			resName = an.Outputs[0]
		}
	}
	_, hasBias := params["bias"]
	return c.emit(n, op, map[string]any{"out": int64(out), "bias": hasBias}, []sval{x}, params, res(out), resName)
}

// reshape converts Flatten, Reshape, Squeeze and Unsqueeze: nothing on
// a C x 1 value, flatten on a C x T value made (batch, C*T).
func (c *converter) reshape(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	var shape []int64 // the result's shape, batch as -1
	switch n.OpType {
	case "Flatten":
		ax, err := intAttr1(n, "axis", 1)
		if err != nil {
			return err
		}
		if ax != 1 {
			return nodeErr(n, "attribute \"axis\" = %d is not supported; accepted: 1 (batch, features)", ax)
		}
		shape = []int64{-1, int64(x.c * x.t)}
	case "Reshape":
		if len(n.Inputs) != 2 {
			return nodeErr(n, "%d inputs; accepted: Reshape(data, shape)", len(n.Inputs))
		}
		st, ok := c.m.Initializers[n.Inputs[1]]
		if !ok || st.DType != Int64 || len(st.Int) == 0 {
			return nodeErr(n, "its shape must be a non-empty int64 constant")
		}
		shape = slices.Clone(st.Int)
		if len(shape) > 0 && (shape[0] == 0 || shape[0] == -1 || shape[0] == int64(c.m.Inputs[0].Shape[0])) {
			shape[0] = -1
		}
		known := 1
		infer := -1
		for k, d := range shape[1:] {
			if d == -1 && infer < 0 {
				infer = k + 1
				continue
			}
			if d == 0 && k+1 < x.rank {
				d = int64([]int{0, x.c, x.t}[k+1])
				shape[k+1] = d
			}
			var ok bool
			if known, ok = checked.Mul(known, int(d)); !ok {
				return nodeErr(n, "its shape %v: the product of its dimensions overflows; accepted: (batch, %d) (flatten), or (batch, C, 1) <-> (batch, C)", st.Int, x.c*x.t)
			}
		}
		if infer > 0 && known > 0 {
			shape[infer] = int64(x.c * x.t / known) // x.c*x.t is at most MaxElements
		}
	case "Squeeze", "Unsqueeze":
		var axes []int64
		if len(n.Inputs) > 1 && n.Inputs[1] != "" {
			at, ok := c.m.Initializers[n.Inputs[1]]
			if !ok || at.DType != Int64 {
				return nodeErr(n, "its axes must be an int64 constant")
			}
			axes = at.Int
		}
		switch {
		case n.OpType == "Squeeze" && x.rank == 3 && x.t == 1 && (slices.Equal(axes, []int64{2}) || slices.Equal(axes, []int64{-1})):
			shape = []int64{-1, int64(x.c)}
		case n.OpType == "Unsqueeze" && x.rank == 2 && (slices.Equal(axes, []int64{2}) || slices.Equal(axes, []int64{-1})):
			shape = []int64{-1, int64(x.c), 1}
		default:
			return nodeErr(n, "axes %v on a (batch, %d, %d) value is not supported; accepted: the time axis (2 or -1) of a C x 1 value", axes, x.c, x.t)
		}
	}
	switch {
	case slices.Equal(shape, []int64{-1, int64(x.c * x.t)}) && x.t == 1:
		c.alias(n, sval{node: x.node, rank: 2, c: x.c, t: 1})
	case slices.Equal(shape, []int64{-1, int64(x.c), 1}) && x.t == 1:
		c.alias(n, sval{node: x.node, rank: 3, c: x.c, t: 1})
	case slices.Equal(shape, []int64{-1, int64(x.c * x.t)}):
		return c.emit(n, "flatten", nil, []sval{x}, nil, sval{rank: 2, c: x.c * x.t, t: 1}, "")
	default:
		return nodeErr(n, "shape %v of a (batch, %d, %d) value is not supported; accepted: (batch, %d) (flatten), or (batch, C, 1) <-> (batch, C)", shape, x.c, x.t, x.c*x.t)
	}
	return nil
}

func (c *converter) activation(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	op := strings.ToLower(n.OpType)
	var attrs map[string]any
	if n.OpType == "LeakyRelu" {
		a, err := floatAttr(n, "alpha", 0.01)
		if err != nil {
			return err
		}
		attrs = map[string]any{"slope": f64(a)}
	}
	return c.emit(n, op, attrs, []sval{x}, nil, x, "")
}

// sigmoid converts Sigmoid, or SiLU: Mul(x, Sigmoid(x)) when that Mul
// alone reads the sigmoid.
func (c *converter) sigmoid(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	if k := c.soleConsumer(n.Outputs[0]); k >= 0 {
		mn := &c.m.Nodes[k]
		if mn.OpType == "Mul" && len(mn.Inputs) == 2 && len(mn.Attrs) == 0 &&
			((mn.Inputs[0] == n.Inputs[0] && mn.Inputs[1] == n.Outputs[0]) || (mn.Inputs[1] == n.Inputs[0] && mn.Inputs[0] == n.Outputs[0])) {
			c.done[k] = true
			return c.emit(n, "silu", nil, []sval{x}, nil, x, mn.Outputs[0])
		}
	}
	return c.emit(n, "sigmoid", nil, []sval{x}, nil, x, "")
}

func (c *converter) softmax(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	ax, err := intAttr1(n, "axis", -1)
	if err != nil {
		return err
	}
	switch {
	case x.rank == 3 && (ax == 2 || ax == -1):
		return c.emit(n, "softmax", map[string]any{"axis": int64(1)}, []sval{x}, nil, x, "")
	case x.rank == 3 && (ax == 1 || ax == -2):
		return c.emit(n, "softmax", nil, []sval{x}, nil, x, "")
	case x.rank != 2 || (ax != 1 && ax != -1):
		return nodeErr(n, "axis %d on a rank-%d value is not supported; accepted: axis 1 or -1 of a (batch, classes) value, any axis but the batch of a (batch, C, T) value", ax, x.rank)
	}
	return c.emit(n, "softmax", nil, []sval{x}, nil, x, "")
}

// div converts GELU as torch 1.13 writes F.gelu (approximate "none"):
//
//	d = Div(x, √2); e = Erf(d); a = Add(e, 1); m = Mul(x, a); y = Mul(m, 0.5)
//
// each intermediate read by the next step alone, the constants scalars
// (√2 within float32 rounding); the operands of Add and Mul in either
// order.
func (c *converter) div(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return c.binary(i, n)
	}
	// Not GELU's pattern: a division of its own.
	refuse := func(string) error { return c.binary(i, n) }
	scalar := func(name string, want, tol float64) bool {
		v, ok := c.scalarInit(name)
		return ok && math.Abs(float64(v)-want) <= tol
	}
	// next returns the sole reader of value v if it is of op type op.
	var found []int
	next := func(v, op string) *Node {
		k := c.soleConsumer(v)
		if v == "" || k < 0 || c.m.Nodes[k].OpType != op || len(c.m.Nodes[k].Attrs) != 0 {
			return nil
		}
		found = append(found, k)
		return &c.m.Nodes[k]
	}
	if len(n.Inputs) != 2 || !scalar(n.Inputs[1], math.Sqrt2, 1e-6) {
		return refuse("its divisor is not the constant √2")
	}
	erf := next(n.Outputs[0], "Erf")
	if erf == nil {
		return refuse("no Erf alone reads its result")
	}
	add := next(erf.Outputs[0], "Add")
	if add == nil || !scalar(otherInput(add, erf.Outputs[0]), 1, 0) {
		return refuse("no Add of 1 alone reads the Erf")
	}
	mul := next(add.Outputs[0], "Mul")
	if mul == nil || otherInput(mul, add.Outputs[0]) != n.Inputs[0] {
		return refuse("no Mul by x alone reads erf(x/√2) + 1")
	}
	half := next(mul.Outputs[0], "Mul")
	if half == nil || !scalar(otherInput(half, mul.Outputs[0]), 0.5, 0) {
		return refuse("no Mul by 0.5 alone reads x * (erf(x/√2) + 1)")
	}
	for _, k := range found {
		c.done[k] = true
	}
	return c.emit(n, "gelu", nil, []sval{x}, nil, x, half.Outputs[0])
}

func (c *converter) add(i int, n *Node) error {
	if len(n.Inputs) != 2 {
		return nodeErr(n, "%d inputs; accepted: 2", len(n.Inputs))
	}
	a, err := c.input(n, 0)
	if err != nil {
		return nodeErr(n, "an Add is supported of two computed values (a residual connection), or as a MatMul's bias: %v", err)
	}
	b, err := c.input(n, 1)
	if err != nil {
		return nodeErr(n, "an Add is supported of two computed values (a residual connection), or as a MatMul's bias: %v", err)
	}
	if a.c != b.c || a.t != b.t {
		return nodeErr(n, "its inputs are %d x %d and %d x %d values; accepted: two of one shape", a.c, a.t, b.c, b.t)
	}
	return c.emit(n, "add", nil, []sval{a, b}, nil, sval{rank: max(a.rank, b.rank), c: a.c, t: a.t}, "")
}

func (c *converter) concat(i int, n *Node) error {
	ax, err := intAttr1(n, "axis", 0)
	if err != nil {
		return err
	}
	var ins []sval
	res := sval{}
	for k := range n.Inputs {
		v, err := c.input(n, k)
		if err != nil {
			return err
		}
		if k == 0 {
			res = sval{rank: v.rank, t: v.t}
		}
		if v.rank != res.rank || v.t != res.t {
			return nodeErr(n, "input %d has %d samples (rank %d), input 0 %d (rank %d); accepted: inputs of one length", k, v.t, v.rank, res.t, res.rank)
		}
		var ok bool
		if res.c, ok = checked.Add(res.c, v.c); !ok {
			return nodeErr(n, "its inputs' channels overflow")
		}
		ins = append(ins, v)
	}
	if len(ins) == 0 || (ax != 1 && ax != 1-int64(res.rank)) {
		return nodeErr(n, "attribute \"axis\" = %d is not supported; accepted: 1 (channels) or %d", ax, 1-res.rank)
	}
	return c.emit(n, "concat", nil, ins, nil, res, "")
}

func (c *converter) dropout(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	if len(n.Outputs) > 1 && n.Outputs[1] != "" {
		return nodeErr(n, "its mask output is not supported; accepted: one output")
	}
	p := float32(0.5)
	if len(n.Inputs) > 1 && n.Inputs[1] != "" {
		r, err := c.constant(n, 1, "ratio")
		if err != nil {
			return err
		}
		if r.Len() != 1 || !(r.Float[0] >= 0 && r.Float[0] < 1) {
			return nodeErr(n, "its ratio must be a scalar in [0, 1)")
		}
		p = r.Float[0]
	}
	if len(n.Inputs) > 2 && n.Inputs[2] != "" {
		tm, ok := c.m.Initializers[n.Inputs[2]]
		if !ok || tm.Len() != 1 || (tm.DType == Int64 && tm.Int[0] != 0) || (tm.DType == Float32 && tm.Float[0] != 0) {
			return nodeErr(n, "its training_mode must be a constant false; accepted: an evaluation export")
		}
	}
	return c.emit(n, "dropout", map[string]any{"p": f64(p)}, []sval{x}, nil, x, "")
}

func (c *converter) identity(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	c.alias(n, x)
	return nil
}

// name names the emitted nodes (see ToSpec), fills the Spec and the
// parameters, and drops nodes the output does not depend on.
func (c *converter) name(in Value, output int) {
	// Keep the nodes the output depends on.
	live := make([]bool, len(c.out))
	live[output] = true
	for k := output; k >= 0; k-- {
		if live[k] {
			for _, j := range c.out[k].ins {
				if j >= 0 {
					live[j] = true
				}
			}
		}
	}
	count := map[string]int{}
	// A name that is a module path, or a prefix of one at a dot, is
	// reserved: the module paths sorted, those that nm+"." prefixes
	// follow the first at or after nm+".".
	modules := c.m.Modules()
	reserved := func(nm string) bool {
		i := sort.SearchStrings(modules, nm)
		if i < len(modules) && modules[i] == nm {
			return true
		}
		i = sort.SearchStrings(modules, nm+".")
		return i < len(modules) && strings.HasPrefix(modules[i], nm+".")
	}
	for k, e := range c.out {
		if live[k] {
			count[e.module]++
		}
	}
	names := make([]string, len(c.out))
	used := map[string]bool{}
	// next is, per base name <module>.<op>, the suffix its next probe
	// starts from: a name once found used or reserved stays so, so each
	// suffix is probed at most once per base and naming is linear in the
	// nodes (probing from _2 for every node was quadratic).
	next := map[string]int{}
	for k, e := range c.out {
		if !live[k] {
			continue
		}
		if e.module != "" && count[e.module] == 1 {
			names[k] = e.module
		} else {
			base := e.op
			if e.module != "" {
				base = e.module + "." + e.op
			}
			nm, j := base, next[base]
			if j > 0 {
				nm = base + "_" + strconv.Itoa(j)
			}
			for c.probes++; used[nm] || reserved(nm); c.probes++ {
				j = max(j+1, 2)
				nm = base + "_" + strconv.Itoa(j)
			}
			next[base] = j
			names[k] = nm
		}
		used[names[k]] = true
	}
	c.spec = nngraph.Spec{Name: c.m.Name, InChannels: in.Shape[1], InLen: in.Shape[2], Output: names[output]}
	c.params = map[string]Tensor{}
	prev := -1
	for k, e := range c.out {
		if !live[k] {
			continue
		}
		nd := nngraph.Node{Name: names[k], Op: e.op, Attrs: e.attrs}
		if len(e.ins) != 1 || e.ins[0] != prev {
			for _, j := range e.ins {
				if j < 0 {
					nd.Inputs = append(nd.Inputs, nngraph.Input)
				} else {
					nd.Inputs = append(nd.Inputs, names[j])
				}
			}
		}
		for s, t := range e.params {
			c.params[names[k]+"."+s] = t
		}
		c.spec.Nodes = append(c.spec.Nodes, nd)
		c.onnxOf = append(c.onnxOf, e.onnx)
		prev = k
	}
}
