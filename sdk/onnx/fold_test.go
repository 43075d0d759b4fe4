package onnx

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

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
// not folded, and is refused with the node and what is supported.
func TestShapeDynamic(t *testing.T) {
	mp := graph([]int64{2, 3, 5}, map[string][]int64{}, op("Shape", []string{"x"}, "s"), op("Reshape", []string{"x", "s"}, "y"))
	mp.Graph.Input[0].Type.GetTensorType().Shape.Dim[0].Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}
	b, _ := proto.Marshal(mp)
	_, err := Decode(b, "dyn.onnx")
	if err == nil || !strings.Contains(err.Error(), `Shape (node "/s/Shape")`) {
		t.Errorf("a Shape of a dynamic input: %v, want it refused by name", err)
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
