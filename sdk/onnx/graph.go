package onnx

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/uaxai/uaxai/sdk/internal/onnxpb"
)

// computeOps are the operators a model may hold after folding: those the
// op table of sdk/nn maps (convolution, padding, pooling, batch norm,
// linear layers, activations, residual additions, concatenation, means
// over time, flattening).
var computeOps = []string{
	"Add", "AveragePool", "BatchNormalization", "Cast", "Concat", "Conv", "Div", "Dropout",
	"Erf", "Flatten", "Gather", "Gemm", "GlobalAveragePool", "GlobalMaxPool", "Identity",
	"LeakyRelu", "MatMul", "MaxPool", "Mul", "Pad", "Pow", "ReduceMax", "ReduceMean", "Relu",
	"Reshape", "Shape", "Sigmoid", "Slice", "Softmax", "Sqrt", "Squeeze", "Sub", "Tanh", "Transpose", "Unsqueeze",
}

// SupportedOps returns, sorted, the operators a model may hold once its
// constant subgraphs are folded.
func SupportedOps() []string { return slices.Clone(computeOps) }

// FoldedOps returns, sorted, the operators folded at import when all their
// inputs are constants.
func FoldedOps() []string {
	ops := make([]string, 0, len(foldOps))
	for op := range foldOps {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
}

// node is a node during import.
type node struct {
	name, op string
	inputs   []string
	outputs  []string
	attrs    map[string]Attr
}

// label names a node in errors: its name and operator, or its index when
// it has no name.
func (n *node) label(i int) string {
	if n.name == "" {
		return fmt.Sprintf("node #%d (%s, unnamed)", i, n.op)
	}
	return fmt.Sprintf("node %q (%s)", n.name, n.op)
}

// build converts and folds mp (see Decode); *at names the node it is
// reading, for the error of a panic.
func build(mp *onnxpb.ModelProto, name string, at *string) (*Model, error) {
	m := &Model{Name: name, Initializers: map[string]Tensor{}}
	opset := int64(-1)
	for _, o := range mp.GetOpsetImport() {
		if d := o.GetDomain(); d == "" || d == "ai.onnx" {
			opset = o.GetVersion()
		}
	}
	if opset < 0 {
		return nil, errors.New("no opset_import of the default operator set (domain \"\"); accepted: opset 13 to 17")
	}
	if opset < MinOpset || opset > MaxOpset {
		return nil, fmt.Errorf("opset %d is not supported; supported: opset %d to %d (torch.onnx.export(..., opset_version=%d))", opset, MinOpset, MaxOpset, MinOpset)
	}
	m.Opset = int(opset)
	g := mp.GetGraph()
	if g == nil {
		return nil, errors.New("the model has no graph")
	}
	if len(mp.GetFunctions()) > 0 {
		return nil, fmt.Errorf("the model defines %d local functions, which are not accepted (export without export_modules_as_functions)", len(mp.GetFunctions()))
	}
	files := &budget{left: MaxElements, max: MaxElements, what: "tensors of the model"}
	defined := map[string]bool{}
	for i, tp := range g.GetInitializer() {
		nm := tp.GetName()
		if nm == "" {
			return nil, fmt.Errorf("initializer #%d has no name", i)
		}
		if defined[nm] {
			return nil, fmt.Errorf("initializer %q is defined twice", nm)
		}
		t, err := tensorFrom(tp, fmt.Sprintf("initializer %q", nm), files)
		if err != nil {
			return nil, err
		}
		m.Initializers[nm] = t
		defined[nm] = true
	}
	if len(g.GetSparseInitializer()) > 0 {
		return nil, errors.New("sparse initializers are not accepted")
	}
	static := map[string][]int{}
	for _, vi := range g.GetInput() {
		if defined[vi.GetName()] {
			continue // an initializer listed as an input (IR version < 4)
		}
		v, err := value(vi, "input")
		if err != nil {
			return nil, err
		}
		m.Inputs = append(m.Inputs, v)
		defined[v.Name] = true
		if v.Shape != nil && !slices.Contains(v.Shape, -1) {
			static[v.Name] = v.Shape
		}
	}
	nodes := make([]*node, len(g.GetNode()))
	for i, np := range g.GetNode() {
		n := &node{name: np.GetName(), op: np.GetOpType(), inputs: np.GetInput(), outputs: np.GetOutput()}
		*at = n.label(i)
		if d := np.GetDomain(); d != "" && d != "ai.onnx" {
			return nil, fmt.Errorf("%s: operator domain %q is not accepted; accepted: the default domain (\"\" or ai.onnx)", n.label(i), d)
		}
		attrs, err := attributes(np.GetAttribute(), n.label(i), files)
		if err != nil {
			return nil, err
		}
		n.attrs = attrs
		for _, in := range n.inputs {
			if in != "" && !defined[in] {
				return nil, fmt.Errorf("%s: input %q is not defined before the node: not a graph input, an initializer or the output of an earlier node (nodes must be in topological order)", n.label(i), in)
			}
		}
		if len(n.outputs) == 0 {
			return nil, fmt.Errorf("%s has no output", n.label(i))
		}
		for _, out := range n.outputs {
			if out == "" {
				continue
			}
			if defined[out] {
				return nil, fmt.Errorf("%s: output %q is already defined (a value has one producer)", n.label(i), out)
			}
			defined[out] = true
		}
		nodes[i] = n
	}
	*at = ""
	for _, vi := range g.GetOutput() {
		v, err := value(vi, "output")
		if err != nil {
			return nil, err
		}
		if !defined[v.Name] {
			return nil, fmt.Errorf("output %q is not produced by any node, input or initializer", v.Name)
		}
		m.Outputs = append(m.Outputs, v)
	}
	if len(m.Outputs) == 0 {
		return nil, errors.New("the graph has no output")
	}
	kept, consts, err := fold(nodes, m.Initializers, static)
	if err != nil {
		return nil, err
	}
	if err := supported(kept, consts); err != nil {
		return nil, err
	}
	used := func(nm string) {
		if t, ok := consts[nm]; ok {
			m.Initializers[nm] = t
		}
	}
	for _, n := range kept {
		for _, in := range n.inputs {
			used(in)
		}
		m.Nodes = append(m.Nodes, Node{Name: n.name, OpType: n.op, Inputs: n.inputs, Outputs: n.outputs, Attrs: n.attrs})
	}
	for _, v := range m.Outputs {
		used(v.Name)
	}
	return m, nil
}

// value converts a graph input or output.
func value(vi *onnxpb.ValueInfoProto, what string) (Value, error) {
	v := Value{Name: vi.GetName()}
	if v.Name == "" {
		return Value{}, fmt.Errorf("a graph %s has no name", what)
	}
	tt := vi.GetType().GetTensorType()
	if vi.GetType() != nil && tt == nil {
		return Value{}, fmt.Errorf("graph %s %q is not a tensor (sequences, maps and optionals are not accepted)", what, v.Name)
	}
	if et := tt.GetElemType(); et != 0 && et != int32(onnxpb.TensorProto_FLOAT) {
		return Value{}, fmt.Errorf("graph %s %q has element type %s (%d); accepted: FLOAT (1)", what, v.Name, onnxpb.TensorProto_DataType(et), et)
	}
	if sh := tt.GetShape(); sh != nil {
		v.Shape = make([]int, len(sh.GetDim()))
		for k, d := range sh.GetDim() {
			v.Shape[k] = -1
			if _, ok := d.GetValue().(*onnxpb.TensorShapeProto_Dimension_DimValue); ok {
				if d.GetDimValue() < 0 {
					return Value{}, fmt.Errorf("graph %s %q: dimension %d is %d", what, v.Name, k, d.GetDimValue())
				}
				v.Shape[k] = int(d.GetDimValue())
			}
		}
	}
	return v, nil
}

// attributes converts the attributes of the node labelled who.
func attributes(aps []*onnxpb.AttributeProto, who string, b *budget) (map[string]Attr, error) {
	attrs := make(map[string]Attr, len(aps))
	for _, ap := range aps {
		nm := ap.GetName()
		if _, ok := attrs[nm]; ok {
			return nil, fmt.Errorf("%s: attribute %q appears twice", who, nm)
		}
		var a Attr
		switch ap.GetType() {
		case onnxpb.AttributeProto_FLOAT:
			a = Attr{Kind: AttrFloat, Float: ap.GetF()}
		case onnxpb.AttributeProto_INT:
			a = Attr{Kind: AttrInt, Int: ap.GetI()}
		case onnxpb.AttributeProto_STRING:
			a = Attr{Kind: AttrString, String: string(ap.GetS())}
		case onnxpb.AttributeProto_FLOATS:
			a = Attr{Kind: AttrFloats, Floats: ap.GetFloats()}
		case onnxpb.AttributeProto_INTS:
			a = Attr{Kind: AttrInts, Ints: ap.GetInts()}
		case onnxpb.AttributeProto_STRINGS:
			a = Attr{Kind: AttrStrings}
			for _, s := range ap.GetStrings() {
				a.Strings = append(a.Strings, string(s))
			}
		case onnxpb.AttributeProto_TENSOR:
			t, err := tensorFrom(ap.GetT(), fmt.Sprintf("%s: attribute %q", who, nm), b)
			if err != nil {
				return nil, err
			}
			a = Attr{Kind: AttrTensor, Tensor: t}
		default:
			return nil, fmt.Errorf("%s: attribute %q of type %s is not accepted; accepted: FLOAT, INT, STRING, TENSOR, FLOATS, INTS, STRINGS (no subgraphs, sparse tensors or types)", who, nm, ap.GetType())
		}
		attrs[nm] = a
	}
	return attrs, nil
}

// fold evaluates, in order, every node of foldOps whose inputs are all
// constants (for Shape: whose input has a fixed shape), and returns the
// nodes left and the constants by value name (the initializers and the
// folded values).
func fold(nodes []*node, inits map[string]Tensor, static map[string][]int) ([]*node, map[string]Tensor, error) {
	consts := make(map[string]Tensor, len(inits))
	for nm, t := range inits {
		consts[nm] = t
	}
	f := &folder{b: budget{left: MaxFoldElements, max: MaxFoldElements, what: "constants computed by folding"}}
	var kept []*node
	for i, n := range nodes {
		eval, ok := foldOps[n.op]
		in := make([]*Tensor, len(n.inputs))
		for k, nm := range n.inputs {
			if !ok {
				break
			}
			if nm == "" {
				continue
			}
			if t, c := consts[nm]; c {
				in[k] = &t
			} else if sh, s := static[nm]; s && n.op == "Shape" {
				in[k] = &Tensor{DType: Float32, Shape: sh}
			} else {
				ok = false
			}
		}
		if !ok {
			kept = append(kept, n)
			continue
		}
		cnt := inputCount[n.op]
		if len(in) < cnt[0] || len(in) > cnt[1] || len(n.outputs) != 1 {
			return nil, nil, fmt.Errorf("%s: %d inputs and %d outputs; accepted: %d to %d inputs and 1 output", n.label(i), len(in), len(n.outputs), cnt[0], min(cnt[1], 1<<10))
		}
		for k := 0; k < cnt[0]; k++ {
			if in[k] == nil {
				return nil, nil, fmt.Errorf("%s: input %d is required", n.label(i), k)
			}
		}
		t, err := foldNode(eval, f, n, in, i)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: folding the constant: %w", n.label(i), err)
		}
		consts[n.outputs[0]] = t
	}
	return kept, consts, nil
}

// foldNode evaluates node n (the i-th) with eval; a panic, a bug of a
// fold that its checks missed, becomes an error naming the node.
func foldNode(eval func(*folder, *node, []*Tensor) (Tensor, error), f *folder, n *node, in []*Tensor, i int) (t Tensor, err error) {
	defer recovered(&err, func() string { return n.label(i) })
	return eval(f, n, in)
}

// recovered is the last-resort net of the importer's entry points
// (Decode, ToSpec, each fold and each conversion of a node): deferred,
// it turns a panic into *err, naming where (a node) it happened. Bad
// input is refused by the checks before it; a panic caught here is a
// bug of the importer, reported as an error instead of killing the
// host.
func recovered(err *error, where func() string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: internal error of the ONNX importer (a bug; please report it with the model): %v", where(), r)
	}
}

// supported checks that the nodes left use the operators of computeOps
// only, and that a Pad's pads are constants.
func supported(kept []*node, consts map[string]Tensor) error {
	var bad []string
	seen := map[string]bool{}
	for i, n := range kept {
		if !slices.Contains(computeOps, n.op) {
			if !seen[n.op] {
				seen[n.op] = true
				bad = append(bad, fmt.Sprintf("%s (node %q)", n.op, n.name))
			}
			continue
		}
		if n.op == "Pad" {
			for k := 1; k < len(n.inputs) && k < 3; k++ {
				if _, ok := consts[n.inputs[k]]; n.inputs[k] != "" && !ok {
					return fmt.Errorf("%s: its pads and constant value must be constants, but input %q is computed at run time", n.label(i), n.inputs[k])
				}
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("operators not supported: %s; supported: %s (and, when all their inputs are constants, %s, folded at import)",
			strings.Join(bad, ", "), strings.Join(computeOps, ", "), strings.Join(FoldedOps(), ", "))
	}
	return nil
}
