package onnx

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/internal/onnxpb"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// transformerProto is testdata/golden/transformer's model.onnx, decoded
// for editing.
func transformerProto(t *testing.T) *onnxpb.ModelProto {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(golden.Dir(t, "transformer"), "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	mp := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(b, mp); err != nil {
		t.Fatal(err)
	}
	return mp
}

func toSpec(t *testing.T, mp *onnxpb.ModelProto) (specNodes map[string]string, params map[string]Tensor, heads []int64, err error) {
	t.Helper()
	raw, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(raw, "transformer.onnx")
	if err != nil {
		return nil, nil, nil, err
	}
	spec, params, err := ToSpec(m)
	if err != nil {
		return nil, nil, nil, err
	}
	specNodes = map[string]string{}
	for _, nd := range spec.Nodes {
		specNodes[nd.Name] = nd.Op
		if nd.Op == "attention" {
			heads = append(heads, nd.Attrs["heads"].(int64))
		}
	}
	return specNodes, params, heads, nil
}

// TestTransformerImport: the golden TransformerEncoder's export gives one
// attention node a layer, named after its module, with its 2 heads, and
// the projections, the feed-forward layers and the patch convolution
// hold the state_dict's tensors (model.safetensors, which the export
// does not read) bit for bit, the right way round.
func TestTransformerImport(t *testing.T) {
	nodes, params, heads, err := toSpec(t, transformerProto(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(heads, []int64{2, 2}) || nodes["enc.layers.0.self_attn"] != "attention" || nodes["enc.layers.1.self_attn"] != "attention" {
		t.Errorf("attention nodes: heads %v, layer 0 %q, layer 1 %q; want two of 2 heads named after their modules", heads, nodes["enc.layers.0.self_attn"], nodes["enc.layers.1.self_attn"])
	}
	sd, err := safetensors.ReadFile(filepath.Join(golden.Dir(t, "transformer"), "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, nm := range []string{"patch.weight", "head.weight",
		"enc.layers.0.self_attn.in_proj_weight", "enc.layers.0.self_attn.in_proj_bias", "enc.layers.0.self_attn.out_proj.weight", "enc.layers.0.self_attn.out_proj.bias",
		"enc.layers.1.self_attn.in_proj_weight", "enc.layers.1.linear1.weight", "enc.layers.1.linear1.bias", "enc.layers.1.linear2.weight"} {
		want, ok := sd.Get(nm)
		got, ok2 := params[nm]
		if !ok || !ok2 {
			t.Errorf("%s: in the state_dict %v, in the import %v", nm, ok, ok2)
			continue
		}
		if len(got.Float) != len(want.Data) || !slices.Equal(got.Float, want.Data) {
			t.Errorf("%s: the import's %d values are not the state_dict's %d", nm, len(got.Float), len(want.Data))
		}
	}
}

// TestTransformerImportRefusals: an attention block that is not
// nn.MultiheadAttention's self-attention is refused naming its first
// node and why: its softmax over the wrong axis (no number of heads
// reproduces it), a value inside it read from outside (need_weights), a
// node it would hold that is not attention's (a ReduceMean), and
// a dynamic batch (its shape arithmetic cannot be folded).
func TestTransformerImportRefusals(t *testing.T) {
	first := `node "/enc/layers.0/self_attn/Transpose" (Transpose)`
	cases := []struct {
		what string
		edit func(mp *onnxpb.ModelProto)
		want []string
	}{
		{"softmax over the queries", func(mp *onnxpb.ModelProto) {
			for _, n := range mp.Graph.Node {
				if n.GetOpType() == "Softmax" {
					n.Attribute[0].I = proto.Int64(1)
					return
				}
			}
		}, []string{first, "differs from self-attention with any number of heads"}},
		{"an inner value read", func(mp *onnxpb.ModelProto) {
			for i, n := range mp.Graph.Node {
				if n.GetOpType() == "Softmax" {
					// a node that reads the attention weights and a value
					// from outside the block (need_weights' average)
					mp.Graph.Node = slices.Insert(mp.Graph.Node, i+1, &onnxpb.NodeProto{Name: proto.String("/peek/Add"), OpType: proto.String("Add"),
						Input: []string{n.Output[0], "x"}, Output: []string{"peek"}})
					return
				}
			}
		}, []string{first, `node "/peek/Add" (Add) reads its inner value`}},
		{"a foreign node inside", func(mp *onnxpb.ModelProto) {
			for i, n := range mp.Graph.Node {
				if n.GetOpType() == "Softmax" {
					mp.Graph.Node = slices.Insert(mp.Graph.Node, i+1, &onnxpb.NodeProto{Name: proto.String("/peek/ReduceMean"), OpType: proto.String("ReduceMean"),
						Input: []string{n.Output[0]}, Output: []string{"peek"}, Attribute: []*onnxpb.AttributeProto{intsAttr1("axes", 0, 1, 2), intAttr("keepdims", 0)}})
					return
				}
			}
		}, []string{first, `it holds a ReduceMean node ("/peek/ReduceMean")`}},
		{"a dynamic batch", func(mp *onnxpb.ModelProto) {
			mp.Graph.Input[0].Type.GetTensorType().Shape.Dim[0].Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}
		}, []string{"fixed batch size"}},
	}
	for _, c := range cases {
		mp := transformerProto(t)
		c.edit(mp)
		_, _, _, err := toSpec(t, mp)
		if err == nil {
			t.Errorf("%s: accepted", c.what)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", c.what, err, w)
			}
		}
	}
}

// TestOutProjMatMulAdd: an attention block whose out-projection is
// written as a MatMul by the transposed weight and an Add of the bias
// (as torch exports F.linear of a 3-D value) instead of one Gemm imports
// the same: the out-projection is the state_dict's bit for bit, and the
// network gives PyTorch's logits (the softmax's input) within 1e-5.
func TestOutProjMatMulAdd(t *testing.T) {
	mp := transformerProto(t)
	init := map[string]*onnxpb.TensorProto{}
	for _, in := range mp.Graph.Initializer {
		init[in.GetName()] = in
	}
	var nodes []*onnxpb.NodeProto
	rewritten := 0
	for _, n := range mp.Graph.Node {
		if n.GetOpType() != "Gemm" || !strings.Contains(n.GetName(), "self_attn") {
			nodes = append(nodes, n)
			continue
		}
		w := init[n.Input[1]]
		if w == nil || len(w.Dims) != 2 {
			t.Fatalf("%s: its weight %q is not a 2-d initializer", n.GetName(), n.Input[1])
		}
		r, q := int(w.Dims[0]), int(w.Dims[1])
		vals := w.FloatData
		if len(vals) == 0 {
			vals = make([]float32, r*q)
			for i := range vals {
				vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(w.RawData[4*i:]))
			}
		}
		wt := make([]float32, r*q)
		for i := range r {
			for j := range q {
				wt[j*r+i] = vals[i*q+j]
			}
		}
		name := n.Input[1] + ".t"
		mp.Graph.Initializer = append(mp.Graph.Initializer, &onnxpb.TensorProto{Name: proto.String(name), Dims: []int64{int64(q), int64(r)},
			DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), FloatData: wt})
		mm := n.GetName() + "/MatMul"
		nodes = append(nodes,
			&onnxpb.NodeProto{Name: proto.String(strings.Replace(n.GetName(), "Gemm", "MatMul_out", 1)), OpType: proto.String("MatMul"), Input: []string{n.Input[0], name}, Output: []string{mm}},
			&onnxpb.NodeProto{Name: proto.String(strings.Replace(n.GetName(), "Gemm", "Add_out", 1)), OpType: proto.String("Add"), Input: []string{mm, n.Input[2]}, Output: n.Output})
		rewritten++
	}
	mp.Graph.Node = nodes
	if rewritten != 2 {
		t.Fatalf("%d out-projections rewritten; want one a layer", rewritten)
	}
	_, params, heads, err := toSpec(t, mp)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(heads, []int64{2, 2}) {
		t.Errorf("heads %v; want [2 2]", heads)
	}
	sd, err := safetensors.ReadFile(filepath.Join(golden.Dir(t, "transformer"), "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, nm := range []string{"enc.layers.0.self_attn.out_proj.weight", "enc.layers.0.self_attn.out_proj.bias", "enc.layers.1.self_attn.out_proj.weight", "enc.layers.1.self_attn.out_proj.bias"} {
		want, _ := sd.Get(nm)
		if got := params[nm]; !slices.Equal(got.Float, want.Data) {
			t.Errorf("%s: the import's values are not the state_dict's", nm)
		}
	}
	raw, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(raw, "matmul-add.onnx")
	if err != nil {
		t.Fatal(err)
	}
	spec, ps, err := ToSpec(m)
	if err != nil {
		t.Fatal(err)
	}
	x := golden.Flat(golden.CSV32(t, filepath.Join(golden.Dir(t, "transformer"), "waveforms.csv")))
	want := golden.CSV32(t, filepath.Join(golden.Dir(t, "transformer"), "logits.csv"))
	got := specLogits(t, "MatMul and Add", spec, ps, x, len(want)*len(want[0]))
	for i, row := range want {
		for j, v := range row {
			if d := math.Abs(float64(got[i*len(row)+j] - v)); d > 1e-5 {
				t.Fatalf("record %d class %d: %v, PyTorch %v", i, j, got[i*len(row)+j], v)
			}
		}
	}
}
