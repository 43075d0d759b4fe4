package onnx

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/internal/onnxpb"
)

// graph builds a one-input model (x of shape xShape, FLOAT) of nodes, with
// int64 initializers, whose output is the Pad node's.
func graph(xShape []int64, inits map[string][]int64, nodes ...*onnxpb.NodeProto) *onnxpb.ModelProto {
	dims := make([]*onnxpb.TensorShapeProto_Dimension, len(xShape))
	for i, d := range xShape {
		dims[i] = &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}}
	}
	vi := func(name string) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: proto.Int32(1), Shape: &onnxpb.TensorShapeProto{Dim: dims}}}}}
	}
	g := &onnxpb.GraphProto{Node: nodes, Input: []*onnxpb.ValueInfoProto{vi("x")}, Output: []*onnxpb.ValueInfoProto{vi("y")}}
	for name, v := range inits {
		g.Initializer = append(g.Initializer, i64(name, v))
	}
	slices.SortFunc(g.Initializer, func(a, b *onnxpb.TensorProto) int { return strings.Compare(a.GetName(), b.GetName()) })
	return &onnxpb.ModelProto{IrVersion: proto.Int64(8), Graph: g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}}}
}

// i64 is an int64 tensor: a scalar when v has one value and name ends in
// "_s", a vector otherwise.
func i64(name string, v []int64) *onnxpb.TensorProto {
	t := &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(7), Int64Data: v}
	if !strings.HasSuffix(name, "_s") {
		t.Dims = []int64{int64(len(v))}
	}
	return t
}

func op(typ string, in []string, out string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{Name: proto.String("/" + out + "/" + typ), OpType: proto.String(typ), Input: in, Output: []string{out}, Attribute: attrs}
}

func intAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

// TestFoldChain folds a chain of every folded operator into a Pad's pads
// and checks them against the operators' definitions step by step, on x of
// shape (2, 3, 5):
//
//	s = Shape(x) = [2 3 5]; g = Gather(s, 2) = 5; r = Range(0, g, 2) = [0 2 4]
//	m = Mul(r, [3]) = [0 6 12]; sl = Slice(m, [1], [MaxInt64]) = [6 12]
//	u = Unsqueeze(g, [0]) = [5]; d = Sub(Div(u, [2]), [1]) = [1] (5/2 = 2, truncated)
//	z = ConstantOfShape([3]) = [0 0 0] (float), zi = Cast(z, INT64)
//	c = Concat(zi, d, sl) = [0 0 0 1 6 12]; rv = Slice(Reshape(c, [-1, 2]), [-1], [MinInt64+1], [0], [-1])
//	  = [[6 12] [0 1] [0 0]]; t = Transpose(rv) = [[6 0 0] [12 1 0]]
//	p = Squeeze(Reshape(Identity(t), [1, 6]), [0]) = [6 0 0 12 1 0]
func TestFoldChain(t *testing.T) {
	b, err := proto.Marshal(chain())
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b, "chain.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Nodes) != 1 || m.Nodes[0].OpType != "Pad" {
		t.Fatalf("nodes left %v, want the Pad alone", m.Nodes)
	}
	pads := m.Initializers["p"]
	if want := []int64{6, 0, 0, 12, 1, 0}; !slices.Equal(pads.Int, want) || !slices.Equal(pads.Shape, []int{6}) {
		t.Errorf("pads %v of shape %v, want %v", pads.Int, pads.Shape, want)
	}
	if _, ok := m.Initializers["c"]; ok {
		t.Errorf("an intermediate constant no node uses is kept")
	}
}

// chain is TestFoldChain's model.
func chain() *onnxpb.ModelProto {
	return graph([]int64{2, 3, 5}, map[string][]int64{
		"two_s": {2}, "zero_s": {0}, "three": {3}, "one": {1}, "max": {math.MaxInt64}, "ax0": {0}, "two": {2},
		"three_sh": {3}, "sh": {-1, 2}, "neg1": {-1}, "minp": {math.MinInt64 + 1}, "sh16": {1, 6},
	},
		op("Shape", []string{"x"}, "s"),
		op("Gather", []string{"s", "two_s"}, "g"),
		op("Range", []string{"zero_s", "g", "two_s"}, "r"),
		op("Mul", []string{"r", "three"}, "m"),
		op("Slice", []string{"m", "one", "max"}, "sl"),
		op("Unsqueeze", []string{"g", "ax0"}, "u"),
		op("Div", []string{"u", "two"}, "h"),
		op("Sub", []string{"h", "one"}, "d"),
		op("ConstantOfShape", []string{"three_sh"}, "z"),
		op("Cast", []string{"z"}, "zi", intAttr("to", 7)),
		op("Concat", []string{"zi", "d", "sl"}, "c", intAttr("axis", 0)),
		op("Reshape", []string{"c", "sh"}, "c2"),
		op("Slice", []string{"c2", "neg1", "minp", "ax0", "neg1"}, "rv"),
		op("Transpose", []string{"rv"}, "tr"),
		op("Identity", []string{"tr"}, "id"),
		op("Reshape", []string{"id", "sh16"}, "p16"),
		op("Squeeze", []string{"p16", "ax0"}, "p"),
		op("Pad", []string{"x", "p"}, "y"),
	)
}

// TestShapeDynamic checks that a Shape of an input with a dynamic axis is
// not folded, and is refused at conversion with the node and what is
// accepted (a fixed batch size).
func TestShapeDynamic(t *testing.T) {
	mp := graph([]int64{2, 3, 5}, map[string][]int64{}, op("Shape", []string{"x"}, "s"), op("Reshape", []string{"x", "s"}, "y"))
	mp.Graph.Input[0].Type.GetTensorType().Shape.Dim[0].Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}
	b, _ := proto.Marshal(mp)
	m, err := Decode(b, "dyn.onnx")
	if err == nil {
		_, _, err = ToSpec(m)
	}
	if err == nil || !strings.Contains(err.Error(), `node "/s/Shape" (Shape)`) || !strings.Contains(err.Error(), "fixed batch size") {
		t.Errorf("a Shape of a dynamic input: %v, want it refused by name, asking for a fixed batch size", err)
	}
}

// FuzzDecode checks that Decode never panics and that what it accepts is
// a valid graph, which ToSpec converts or refuses without panicking. Its seeds are small (the fuzzer minimizes every input
// that finds new code, slowly on the 20-140 kB golden files): the chain of
// every folded operator, a lone Pad, and fcn's model cut to its first
// kilobytes.
func FuzzDecode(f *testing.F) {
	for _, mp := range []*onnxpb.ModelProto{
		chain(),
		graph([]int64{1, 1, 4}, map[string][]int64{"p": {0, 0, 1, 0, 0, 1}}, op("Pad", []string{"x", "p"}, "y")),
	} {
		if b, err := proto.Marshal(mp); err == nil {
			f.Add(b)
		}
	}
	if b, err := os.ReadFile(modelPath(f, "fcn")); err == nil {
		f.Add(b[:4096])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b, "fuzz.onnx")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.onnx") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		if _, _, err := ToSpec(m); err != nil && !strings.Contains(err.Error(), "fuzz.onnx") {
			t.Errorf("ToSpec: error %q does not name the file", err)
		}
		defined := map[string]bool{}
		for _, v := range m.Inputs {
			defined[v.Name] = true
		}
		for nm, tn := range m.Initializers {
			defined[nm] = true
			if tn.Len() != len(tn.Float)+len(tn.Int) {
				t.Errorf("initializer %s: shape %v, %d values", nm, tn.Shape, len(tn.Float)+len(tn.Int))
			}
		}
		for _, n := range m.Nodes {
			if !slices.Contains(SupportedOps(), n.OpType) {
				t.Errorf("node %s: %s accepted", n.Name, n.OpType)
			}
			for _, in := range n.Inputs {
				if in != "" && !defined[in] {
					t.Errorf("node %s: input %s undefined", n.Name, in)
				}
			}
			for _, out := range n.Outputs {
				defined[out] = true
			}
		}
	})
}

// foldSeeds are small models exercising every folded operator (each
// feeding a Pad's pads, the graph's output), with the edge cases that
// broke folding: a Slice backwards over an empty axis, steps and Range
// bounds near 2^63, integer overflow, broadcasting, a zero-sized tensor.
func foldSeeds() []*onnxpb.ModelProto {
	pad := func(in string) *onnxpb.NodeProto { return op("Pad", []string{"x", in}, "y") }
	x := []int64{1, 2, 4}
	f32 := func(name string, dims []int64, v ...float32) *onnxpb.TensorProto {
		return tensorInit(name, 1, dims, nil, v)
	}
	withInits := func(mp *onnxpb.ModelProto, ts ...*onnxpb.TensorProto) *onnxpb.ModelProto {
		mp.Graph.Initializer = append(mp.Graph.Initializer, ts...)
		return mp
	}
	tensorAttr := func(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t}
	}
	seeds := []*onnxpb.ModelProto{chain()}
	for _, a := range []string{"Add", "Sub", "Mul", "Div"} {
		seeds = append(seeds,
			graph(x, map[string][]int64{"a": {3, -7, 9, 1 << 40, 5, 6}, "b_s": {2}}, op(a, []string{"a", "b_s"}, "p"), pad("p")),
			graph(x, map[string][]int64{"a": {math.MaxInt64}, "b": {2}}, op(a, []string{"a", "b"}, "p"), pad("p")),
			withInits(graph(x, map[string][]int64{"sh": {6}}, op(a, []string{"fa", "fb"}, "f"), op("Cast", []string{"f"}, "c", intAttr("to", 7)), op("Reshape", []string{"c", "sh"}, "p"), pad("p")),
				f32("fa", []int64{2, 3}, 1, 2, 3, 4, 5, 6), f32("fb", []int64{3}, 2, 2, 2)),
		)
	}
	seeds = append(seeds,
		graph(x, map[string][]int64{"c": {0, 0, 1, 0, 0, 1}}, op("Cast", []string{"c"}, "f", intAttr("to", 1)), op("Cast", []string{"f"}, "p", intAttr("to", 7)), pad("p")),
		graph(x, map[string][]int64{"a": {0, 0}, "b": {1, 0}, "c": {0, 1}}, op("Concat", []string{"a", "b", "c"}, "p", intAttr("axis", -1)), pad("p")),
		graph(x, nil, op("Constant", nil, "p", intsAttr1("value_ints", 0, 0, 1, 0, 0, 2)), pad("p")),
		graph(x, nil, op("Constant", nil, "p", tensorAttr("value", i64("", []int64{0, 0, 1, 0, 0, 2}))), pad("p")),
		graph(x, map[string][]int64{"s": {6}}, op("ConstantOfShape", []string{"s"}, "p", tensorAttr("value", i64("", []int64{1}))), pad("p")),
		graph(x, map[string][]int64{"d": {0, 1, 2, 3, 4, 5}, "i": {-1, 0, 2, 2, 5, -6}}, op("Gather", []string{"d", "i"}, "p"), pad("p")),
		graph(x, map[string][]int64{"d": {0, 1, 2, 3, 4, 5}, "sh": {2, 3}, "i": {1, 0}, "s1": {4}}, op("Reshape", []string{"d", "sh"}, "r"), op("Gather", []string{"r", "i"}, "g", intAttr("axis", 1)), op("Reshape", []string{"g", "s1"}, "p"), pad("p")),
		graph(x, map[string][]int64{"p": {0, 0, 1, 0, 0, 1}}, op("Identity", []string{"p"}, "q"), pad("q")),
		graph(x, map[string][]int64{"a_s": {0}, "b_s": {12}, "d_s": {2}}, op("Range", []string{"a_s", "b_s", "d_s"}, "p"), pad("p")),
		graph(x, map[string][]int64{"a_s": {math.MinInt64}, "b_s": {math.MaxInt64}, "d_s": {math.MaxInt64}}, op("Range", []string{"a_s", "b_s", "d_s"}, "p"), pad("p")),
		withInits(graph(x, nil, op("Range", []string{"fa", "fb", "fd"}, "f"), op("Cast", []string{"f"}, "p", intAttr("to", 7)), pad("p")),
			f32("fa", nil, 0), f32("fb", nil, 3), f32("fd", nil, 0.5)),
		graph(x, map[string][]int64{"d": {0, 0, 1, 0, 0, 1}, "sh": {0, -1}, "s2": {2, 3}}, op("Reshape", []string{"d", "s2"}, "r"), op("Reshape", []string{"r", "sh"}, "p"), pad("p")),
		graph(x, map[string][]int64{"z": {0, 0, 0}, "s0": {2}, "e0": {-2}}, op("Shape", []string{"x"}, "s", intAttr("start", -2), intAttr("end", 100)), op("Concat", []string{"z", "s", "z"}, "p0", intAttr("axis", 0)),
			op("Slice", []string{"p0", "s0", "e0"}, "p"), pad("p")),
		graph(x, map[string][]int64{"d": {0, 1, 2, 3, 4, 5, 6, 7}, "s": {7}, "e": {math.MinInt64}, "a": {0}, "st": {-1}}, op("Slice", []string{"d", "s", "e", "a", "st"}, "p"), pad("p")),
		graph(x, map[string][]int64{"s": {0}, "e": {-1}, "a": {0}, "st": {-1}}, op("Slice", []string{"d0", "s", "e", "a", "st"}, "p"), pad("p")),
		graph(x, map[string][]int64{"d": {0, 1, 2, 3, 4, 5}, "s": {math.MinInt64}, "e": {math.MaxInt64}, "st": {math.MaxInt64}}, op("Slice", []string{"d", "s", "e", "", "st"}, "p"), pad("p")),
		graph(x, map[string][]int64{"d": {0, 0, 1, 0, 0, 1}, "u": {0, 2}, "q": {0}}, op("Unsqueeze", []string{"d", "u"}, "v"), op("Squeeze", []string{"v", "q"}, "w"), op("Squeeze", []string{"w"}, "p"), pad("p")),
		graph(x, map[string][]int64{"d": {0, 1, 2, 3, 4, 5}, "sh": {1, 2, 3}, "s1": {6}}, op("Reshape", []string{"d", "sh"}, "r"),
			op("Transpose", []string{"r"}, "t", intsAttr1("perm", 2, 0, 1)), op("Reshape", []string{"t", "s1"}, "p"), pad("p")),
	)
	// The Slice over an empty axis reads d0, an empty vector.
	for _, mp := range seeds {
		mp.Graph.Initializer = append(mp.Graph.Initializer, tensorInit("d0", 7, []int64{0}, nil, nil))
	}
	return seeds
}

// FuzzFold checks that Decode and ToSpec never panic, nor hide a panic
// in their last-resort net (an "internal error" is a bug found), and
// that every error they return says something. Its seeds are the golden
// exports and foldSeeds' graphs; a crasher it finds is kept in
// testdata/fuzz/FuzzFold as a seed.
func FuzzFold(f *testing.F) {
	for _, mp := range foldSeeds() {
		b, err := proto.Marshal(mp)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	golden, _ := filepath.Glob(filepath.Join(golden.Dir(f, "archs"), "*", "model.onnx"))
	if len(golden) == 0 {
		f.Fatal("no golden ONNX exports")
	}
	for _, p := range golden {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for i := range FoldedOps() {
		f.Add([]byte{byte(i), 3, 0x21, 2, 5, 7, 1, 0x10, 1, 2, 0x93, 1, 3, 9, 0xff, 4, 1, 2})
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := foldProgram(b); err != nil && (err.Error() == "" || strings.Contains(err.Error(), "internal error of the ONNX importer")) {
			t.Errorf("fold program %x: %q", b, err)
		}
		check := func(what string, err error) {
			if err == nil {
				return
			}
			if msg := err.Error(); strings.TrimSpace(msg) == "" || strings.HasSuffix(strings.TrimSpace(msg), ":") {
				t.Errorf("%s: an empty error %q", what, msg)
			} else if strings.Contains(msg, "internal error of the ONNX importer") {
				t.Errorf("%s: a panic caught by the net: %v", what, err)
			}
		}
		m, err := Decode(b, "fuzz.onnx")
		check("Decode", err)
		if err != nil {
			return
		}
		_, _, err = ToSpec(m)
		check("ToSpec", err)
	})
}

// fuzzInts are the int64 values a fold program draws from: small
// numbers and the ends of int64, where index arithmetic wraps.
var fuzzInts = []int64{0, 1, -1, 2, -2, 3, 5, -6, 1 << 20, 1 << 32, 1 << 62, -(1 << 62), math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1}

// foldProgram reads b as one folded node on constant inputs and folds it,
// so that every fuzzed input reaches a fold (a mutated protobuf mostly
// does not decode): b[0] picks the operator of FoldedOps, b[1] the number
// of inputs and attributes; each input is a dtype and rank byte, its
// dims (0 to 3) and its values (bytes indexing fuzzInts); then
// attributes (axis, to, start, end, allowzero, perm, value). It returns
// fold's error, after checking the result's length against its shape.
func foldProgram(b []byte) error {
	next := func() int {
		if len(b) == 0 {
			return 0
		}
		v := int(b[0])
		b = b[1:]
		return v
	}
	ops := FoldedOps()
	n := &node{name: "fz", op: ops[next()%len(ops)], outputs: []string{"o"}, attrs: map[string]Attr{}}
	counts := next()
	inits := map[string]Tensor{}
	static := map[string][]int{}
	tensor := func() Tensor {
		kind := next()
		shape := make([]int, kind%4)
		size := 1
		for k := range shape {
			shape[k] = next() % 4
			size *= shape[k]
		}
		t := Tensor{DType: Int64, Shape: shape, Int: make([]int64, size)}
		for i := range t.Int {
			t.Int[i] = fuzzInts[next()%len(fuzzInts)]
		}
		if kind&0x10 != 0 {
			t = Tensor{DType: Float32, Shape: shape, Float: make([]float32, size)}
			for i := range t.Float {
				t.Float[i] = float32(fuzzInts[next()%len(fuzzInts)]) / 2
			}
		}
		return t
	}
	for k := 0; k < counts%6; k++ {
		nm := fmt.Sprintf("i%d", k)
		if next()%8 == 0 {
			nm = "" // an optional input left out
		} else {
			inits[nm] = tensor()
			static[nm] = inits[nm].Shape
		}
		n.inputs = append(n.inputs, nm)
	}
	if n.op == "Shape" && len(n.inputs) > 0 && next()%2 == 0 {
		delete(inits, n.inputs[0]) // a graph input of static shape
	}
	for k := 0; k < counts/6%8; k++ {
		switch name := []string{"axis", "to", "start", "end", "allowzero", "perm", "value", "value_ints"}[next()%8]; name {
		case "perm", "value_ints":
			a := Attr{Kind: AttrInts}
			for j := next() % 4; j > 0; j-- {
				a.Ints = append(a.Ints, fuzzInts[next()%len(fuzzInts)])
			}
			n.attrs[name] = a
		case "value":
			n.attrs[name] = Attr{Kind: AttrTensor, Tensor: tensor()}
		default:
			n.attrs[name] = Attr{Kind: AttrInt, Int: fuzzInts[next()%len(fuzzInts)]}
		}
	}
	_, consts, err := fold([]*node{n}, inits, static)
	if err != nil {
		return err
	}
	if o, ok := consts["o"]; ok && o.Len() != len(o.Float)+len(o.Int) {
		return fmt.Errorf("%s: internal error of the ONNX importer: a result of shape %v holds %d values", n.op, o.Shape, len(o.Float)+len(o.Int))
	}
	return nil
}
