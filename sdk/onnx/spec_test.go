package onnx

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/internal/onnxpb"
	nngraph "github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// specPeer is what testdata/peers/onnx_ops.py read from PyTorch: each
// module's hyper-parameters and the forward's graph ops by torch.fx.
type specPeer struct {
	TorchModules map[string]map[string]any `json:"torch_modules"`
	FX           []map[string]any          `json:"fx"`
	Pads         map[string][2]int
}

func specPeers(t *testing.T) map[string]specPeer {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(golden.Dir(t, "archs"), "onnx_import.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]specPeer
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// canon is v's JSON, so that Go's int64 and []int64 compare with the
// peer's JSON numbers.
func canon(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSpecGolden converts each convolutional golden network and compares
// the Spec with PyTorch's reading of the module: the ops in order and
// their attributes (torch.fx), names = module paths for module calls,
// the convolutions' hyper-parameters against their Conv1d modules.
func TestSpecGolden(t *testing.T) {
	all := specPeers(t)
	for _, net := range convNets {
		t.Run(net, func(t *testing.T) {
			want := all[net]
			s, params, err := LoadSpec(modelPath(t, net))
			if err != nil {
				t.Fatal(err)
			}
			if len(want.FX) == 0 {
				t.Fatal("the peer has no fx reading")
			}
			if len(s.Nodes) != len(want.FX) {
				t.Errorf("%d nodes, PyTorch's forward has %d graph ops", len(s.Nodes), len(want.FX))
			}
			for i := 0; i < min(len(s.Nodes), len(want.FX)); i++ {
				n, w := s.Nodes[i], want.FX[i]
				if n.Op != w["op"] {
					t.Errorf("node %d %s is %s, PyTorch's op %d is %v (%v)", i, n.Name, n.Op, i, w["op"], w["module"])
					continue
				}
				if mod := w["module"].(string); mod != "" && n.Name != mod {
					t.Errorf("node %d is named %s, its module is %s", i, n.Name, mod)
				}
				keys := []string{}
				for k := range w {
					if k != "op" && k != "module" && k != "fused_bn" {
						keys = append(keys, k)
						if canon(t, n.Attrs[k]) != canon(t, w[k]) {
							t.Errorf("node %s: %s = %s, PyTorch's %s", n.Name, k, canon(t, n.Attrs[k]), canon(t, w[k]))
						}
					}
				}
				got := []string{}
				for k := range n.Attrs {
					got = append(got, k)
				}
				sort.Strings(keys)
				sort.Strings(got)
				if !slices.Equal(got, keys) {
					t.Errorf("node %s: attributes %v, PyTorch's reading has %v", n.Name, got, keys)
				}
			}
			if last := s.Nodes[len(s.Nodes)-1]; s.Output != last.Name || last.Op != "softmax" {
				t.Errorf("output %q, last node %s (%s): the forward returns the softmax", s.Output, last.Name, last.Op)
			}
			checkConvModules(t, s.Nodes, want)
			checkParams(t, net, s.Nodes, params, want)
		})
	}
}

// checkConvModules checks every conv1d against the Conv1d module of its
// name: kernel, stride, dilation, groups, out and padding (the module's,
// plus a ConstantPad1d of the same parent module merged in).
func checkConvModules(t *testing.T, nodes []nngraph.Node, want specPeer) {
	for _, n := range nodes {
		if n.Op != "conv1d" {
			continue
		}
		h, ok := want.TorchModules[n.Name]
		if !ok || h["type"] != "Conv1d" {
			t.Errorf("conv1d %s: no Conv1d module of that path (%v)", n.Name, h)
			continue
		}
		for _, k := range []string{"kernel", "stride", "dilation", "groups", "out"} {
			if canon(t, n.Attrs[k]) != canon(t, h[k]) {
				t.Errorf("conv1d %s: %s = %v, the Conv1d's %v", n.Name, k, n.Attrs[k], h[k])
			}
		}
		mp := h["padding"].([]any)
		extra := [2]int64{n.Attrs["padding"].([]int64)[0] - int64(mp[0].(float64)), n.Attrs["padding"].([]int64)[1] - int64(mp[1].(float64))}
		if extra == [2]int64{} {
			continue
		}
		parent := ""
		if k := strings.LastIndex(n.Name, "."); k >= 0 {
			parent = n.Name[:k+1]
		}
		found := false
		for p, pad := range want.Pads {
			found = found || (strings.HasPrefix(p, parent) && !strings.Contains(p[len(parent):], ".") && int64(pad[0]) == extra[0] && int64(pad[1]) == extra[1])
		}
		if !found {
			t.Errorf("conv1d %s: padding %v, its Conv1d's %v plus no ConstantPad1d of its parent module", n.Name, n.Attrs["padding"], mp)
		}
	}
}

// checkParams checks every parameter against the state_dict: bit for bit
// where the module's own tensor is used, and for a convolution PyTorch's
// reading says a BatchNorm follows, W γ/√(var+ε) and (b - mean) γ/√(var+ε)
// + β within 1e-5 (relative, 1 at least).
func checkParams(t *testing.T, net string, nodes []nngraph.Node, params map[string]Tensor, want specPeer) {
	sd, err := safetensors.ReadFile(filepath.Join(golden.Dir(t, "archs"), net, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	fused := map[string]string{}
	for _, w := range want.FX {
		if bn, ok := w["fused_bn"].(string); ok {
			fused[w["module"].(string)] = bn
		}
	}
	checked, folded := 0, 0
	for nm, p := range params {
		mod := nm[:strings.LastIndex(nm, ".")]
		suffix := nm[len(mod)+1:]
		if bn, ok := fused[mod]; ok {
			g, _ := sd.Get(bn + ".weight")
			beta, _ := sd.Get(bn + ".bias")
			mean, _ := sd.Get(bn + ".running_mean")
			rv, _ := sd.Get(bn + ".running_var")
			w, _ := sd.Get(mod + ".weight")
			b, hasB := sd.Get(mod + ".bias")
			per := w.Len() / w.Shape[0]
			for i, got := range p.Float {
				var want float64
				if suffix == "weight" {
					c := i / per
					want = float64(w.Data[i]) * float64(g.Data[c]) / math.Sqrt(float64(rv.Data[c])+1e-5)
				} else {
					bc := 0.0
					if hasB {
						bc = float64(b.Data[i])
					}
					want = (bc-float64(mean.Data[i]))*float64(g.Data[i])/math.Sqrt(float64(rv.Data[i])+1e-5) + float64(beta.Data[i])
				}
				if math.Abs(float64(got)-want) > 1e-5*math.Max(1, math.Abs(want)) {
					t.Errorf("%s[%d] = %g, the state_dict's %s with %s folded in gives %g", nm, i, got, mod, bn, want)
					break
				}
			}
			folded++
			continue
		}
		st, ok := sd.Get(nm)
		if !ok || !slices.Equal(st.Shape, p.Shape) {
			t.Errorf("parameter %s (shape %v) is not a state_dict tensor of its shape", nm, p.Shape)
			continue
		}
		for i := range st.Data {
			if math.Float32bits(st.Data[i]) != math.Float32bits(p.Float[i]) {
				t.Errorf("%s[%d] = %g, the state_dict's %g", nm, i, p.Float[i], st.Data[i])
				break
			}
		}
		checked++
	}
	if checked == 0 {
		t.Error("no parameter compared bit for bit")
	}
	for _, n := range nodes {
		if n.Op == "conv1d" {
			if _, ok := params[n.Name+".weight"]; !ok {
				t.Errorf("conv1d %s has no weight", n.Name)
			}
		}
	}
	t.Logf("%d parameters equal the state_dict bit for bit, %d have a BatchNorm folded in", checked, folded)
}

// TestSpecLayers checks that every module P with nodes (and every module
// containing one) resolves, by the graph package's rule (the last node
// named P or "P.…"), to the node computing Model.ModuleOutput(P); only
// ConstantPad1d modules, merged into the convolution after them, have no
// node.
func TestSpecLayers(t *testing.T) {
	all := specPeers(t)
	for _, net := range convNets {
		m, err := Read(modelPath(t, net))
		if err != nil {
			t.Fatal(err)
		}
		c, err := convert(m)
		if err != nil {
			t.Fatal(err)
		}
		mods := map[string]bool{}
		for _, p := range m.Modules() {
			for ; ; p = p[:strings.LastIndex(p, ".")] {
				mods[p] = true
				if !strings.Contains(p, ".") {
					break
				}
			}
		}
		mods[""] = true
		for p := range mods {
			want, err := m.ModuleOutput(p)
			if err != nil {
				t.Fatal(err)
			}
			last := -1
			for i, n := range c.spec.Nodes {
				if p == "" || n.Name == p || strings.HasPrefix(n.Name, p+".") {
					last = i
				}
			}
			if last < 0 {
				if h := all[net].TorchModules[p]; h["type"] != "ConstantPad1d" {
					t.Errorf("%s: module %q (%v) has no node", net, p, h["type"])
				}
				continue
			}
			if c.onnxOf[last] != want {
				t.Errorf("%s: layer %q resolves to %s, computing %s; ModuleOutput is %s", net, p, c.spec.Nodes[last].Name, c.onnxOf[last], want)
			}
		}
	}
}

// TestStridedPatterns checks that stridednet's GELU and SiLU subgraphs
// become one node each: no Erf, Div or Mul is left, and no sigmoid.
func TestStridedPatterns(t *testing.T) {
	s, _, err := LoadSpec(modelPath(t, "stridednet"))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, n := range s.Nodes {
		count[n.Op]++
	}
	if count["gelu"] != 1 || count["silu"] != 1 || count["sigmoid"] != 0 {
		t.Errorf("ops %v: want one gelu, one silu and no sigmoid", count)
	}
	m, _ := Read(modelPath(t, "stridednet"))
	ops := map[string]int{}
	for _, n := range m.Nodes {
		ops[n.OpType]++
	}
	if ops["Erf"] != 1 || ops["Sigmoid"] != 1 {
		t.Errorf("the export has %d Erf and %d Sigmoid nodes, the test expects one of each", ops["Erf"], ops["Sigmoid"])
	}
}

// TestHandlersCoverSupportedOps keeps ToSpec and SupportedOps consistent:
// every operator the reader lets through has a conversion (or a refusal
// saying where it is accepted), and no other.
func TestHandlersCoverSupportedOps(t *testing.T) {
	var keys []string
	for k := range handlers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !slices.Equal(keys, SupportedOps()) {
		t.Errorf("handlers %v, SupportedOps %v", keys, SupportedOps())
	}
}

// builder makes a small model of input x (1, 2, 8) with float
// initializers, whose output is y.
type builder struct {
	g *onnxpb.GraphProto
}

func newBuilder() *builder {
	vi := func(name string, dims ...int64) *onnxpb.ValueInfoProto {
		ds := make([]*onnxpb.TensorShapeProto_Dimension, len(dims))
		for i, d := range dims {
			ds[i] = &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}}
		}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: proto.Int32(1), Shape: &onnxpb.TensorShapeProto{Dim: ds}}}}}
	}
	return &builder{g: &onnxpb.GraphProto{Input: []*onnxpb.ValueInfoProto{vi("x", 1, 2, 8)}, Output: []*onnxpb.ValueInfoProto{{Name: proto.String("y")}}}}
}

// f32 adds a float initializer of shape dims whose values are 0.1, 0.2, …
func (b *builder) f32(name string, dims ...int64) string {
	n := 1
	for _, d := range dims {
		n *= int(d)
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i+1) / 10
	}
	b.g.Initializer = append(b.g.Initializer, &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(1), Dims: dims, FloatData: v})
	return name
}

func (b *builder) i64(name string, v ...int64) string {
	b.g.Initializer = append(b.g.Initializer, i64(name, v))
	return name
}

// node adds a node named "/<module>/<op>" (module may be empty).
func (b *builder) node(module, typ string, in []string, out string, attrs ...*onnxpb.AttributeProto) {
	name := "/" + typ
	if module != "" {
		name = "/" + module + "/" + typ
	}
	b.g.Node = append(b.g.Node, &onnxpb.NodeProto{Name: proto.String(name), OpType: proto.String(typ), Input: in, Output: []string{out}, Attribute: attrs})
}

func (b *builder) model(t *testing.T) *Model {
	t.Helper()
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), Graph: b.g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}}}
	raw, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(raw, "hand.onnx")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func strAttr(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

func intsAttr1(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

// TestSpecRefusals checks that what the graph cannot compute is refused
// with the file, the node, the attribute and what is accepted.
func TestSpecRefusals(t *testing.T) {
	// mean over time then softmax: the tail each model below ends in.
	tail := func(b *builder, in string) {
		b.node("", "ReduceMean", []string{in}, "m", intsAttr1("axes", 2), intAttr("keepdims", 0))
		b.node("", "Softmax", []string{"m"}, "y", intAttr("axis", 1))
	}
	cases := []refusal{
		{"Conv auto_pad SAME_UPPER", func(b *builder) {
			b.node("conv", "Conv", []string{"x", b.f32("w", 3, 2, 3)}, "c", strAttr("auto_pad", "SAME_UPPER"), intsAttr1("kernel_shape", 3))
			tail(b, "c")
		}, []string{`node "/conv/Conv" (Conv)`, `"auto_pad" = "SAME_UPPER"`, "accepted: NOTSET"}},
		{"Gemm transB 0", func(b *builder) {
			b.node("", "ReduceMean", []string{"x"}, "m", intsAttr1("axes", 2), intAttr("keepdims", 0))
			b.node("fc", "Gemm", []string{"m", b.f32("w", 2, 4)}, "y", intAttr("transB", 0))
		}, []string{`node "/fc/Gemm" (Gemm)`, `"transB" = 0`, "accepted: 1"}},
		{"MaxPool ceil_mode 1", func(b *builder) {
			b.node("pool", "MaxPool", []string{"x"}, "p", intsAttr1("kernel_shape", 3), intAttr("ceil_mode", 1))
			tail(b, "p")
		}, []string{`node "/pool/MaxPool" (MaxPool)`, `"ceil_mode" = 1`, "accepted: 0"}},
		{"Pad reflect", func(b *builder) {
			b.node("pad", "Pad", []string{"x", b.i64("pads", 0, 0, 1, 0, 0, 1)}, "p", strAttr("mode", "reflect"))
			tail(b, "p")
		}, []string{`node "/pad/Pad" (Pad)`, `"mode" = "reflect"`, "accepted: constant"}},
		{"Pad on channels", func(b *builder) {
			b.node("pad", "Pad", []string{"x", b.i64("pads", 0, 1, 0, 0, 0, 0)}, "p")
			tail(b, "p")
		}, []string{`node "/pad/Pad" (Pad)`, "pads [0 1 0 0 0 0]", "time axis only"}},
		{"a constant divided by a value", func(b *builder) {
			b.g.Initializer = append(b.g.Initializer,
				&onnxpb.TensorProto{Name: proto.String("s2"), DataType: proto.Int32(1), FloatData: []float32{1.5}})
			b.node("", "Div", []string{"s2", "x"}, "d")
			tail(b, "d")
		}, []string{`node "/Div" (Div)`, "a constant divided by a computed value is not supported"}},
		{"an attention block without its end", func(b *builder) {
			b.node("", "Transpose", []string{"x"}, "tr", intsAttr1("perm", 1, 0, 2))
			b.node("", "Add", []string{"tr", "x"}, "back") // reads a value from outside: not in the block
			tail(b, "back")
		}, []string{`node "/Transpose" (Transpose)`, "nn.MultiheadAttention's self-attention", "no Transpose back to (batch, 2, 8) after a Softmax"}},
		{"unknown attribute", func(b *builder) {
			b.node("", "Relu", []string{"x"}, "r", intAttr("fancy", 1))
			tail(b, "r")
		}, []string{`node "/Relu" (Relu)`, `attribute "fancy"`, "accepted attributes of Relu: none"}},
		{"Transpose", func(b *builder) {
			b.node("", "Transpose", []string{"x"}, "tr", intsAttr1("perm", 1, 2, 0))
			tail(b, "tr")
		}, []string{`node "/Transpose" (Transpose)`, "perm [1 2 0] of a rank-3 value is not supported", "[0, 2, 1]"}},
	}
	for _, c := range cases {
		c.check(t)
	}
}

// refusal is a model ToSpec must refuse: build makes it, and the error
// must say each of wants and the model's name.
type refusal struct {
	what  string
	build func(b *builder)
	wants []string
}

// check converts the model and returns ToSpec's error, having reported
// an acceptance or an error that lacks one of wants.
func (c refusal) check(t *testing.T) error {
	t.Helper()
	b := newBuilder()
	c.build(b)
	_, _, err := ToSpec(b.model(t))
	if err == nil {
		t.Errorf("%s: accepted", c.what)
		return nil
	}
	for _, s := range append(c.wants, "hand.onnx") {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q does not say %q", c.what, err, s)
		}
	}
	return err
}

// TestSpecForms checks conversions the goldens do not hold against their
// definitions: MatMul(x, W) + b is linear with weight Wᵀ and bias b (as
// Gemm(x, Wᵀ, b, transB=1)); Flatten of a C x 1 value is nothing; a zero
// Pad before an AveragePool becomes its padding, a non-zero one a pad
// node; a pad before a MaxPool stays (its padding is -∞, not 0);
// LeakyRelu keeps its slope; Dropout keeps its ratio; Identity is
// nothing; the nodes of one module are named <module>.<op>, _2, ….
func TestSpecForms(t *testing.T) {
	b := newBuilder()
	b.node("p1", "Pad", []string{"x", b.i64("pz", 0, 0, 1, 0, 0, 1)}, "p1")
	b.node("ap", "AveragePool", []string{"p1"}, "a", intsAttr1("kernel_shape", 2), intsAttr1("strides", 2))
	b.node("blk", "Pad", []string{"a", b.i64("pm", 0, 0, 1, 0, 0, 1), b.f32("v")}, "p2")
	b.node("blk", "MaxPool", []string{"p2"}, "mp", intsAttr1("kernel_shape", 2), intsAttr1("strides", 1))
	b.node("blk", "LeakyRelu", []string{"mp"}, "lr", &onnxpb.AttributeProto{Name: proto.String("alpha"), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(0.2)})
	b.node("blk", "Relu", []string{"lr"}, "r1")
	b.node("blk", "Relu", []string{"r1"}, "r2")
	b.node("", "GlobalAveragePool", []string{"r2"}, "gap")
	b.node("", "Flatten", []string{"gap"}, "fl")
	b.node("", "Identity", []string{"fl"}, "id")
	b.node("", "Dropout", []string{"id", b.f32("ratio")}, "dr")
	b.node("fc", "MatMul", []string{"dr", b.f32("W", 2, 3)}, "mm")
	b.node("fc", "Add", []string{"mm", b.f32("bias", 3)}, "y")
	m := b.model(t)
	s, params, err := ToSpec(m)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range s.Nodes {
		got = append(got, n.Name+":"+n.Op+canon(t, n.Attrs))
	}
	want := []string{
		`ap:avgpool1d{"kernel":2,"padding":1,"stride":2}`,
		`blk.pad:pad{"left":1,"right":1,"value":0.1}`,
		`blk.maxpool1d:maxpool1d{"kernel":2,"padding":0,"stride":1}`,
		`blk.leakyrelu:leakyrelu{"slope":0.2}`,
		`blk.relu:relu{}`, `blk.relu_2:relu{}`,
		`globalavgpool:globalavgpool{}`,
		`dropout:dropout{"p":0.1}`,
		`fc:linear{"bias":true,"out":3}`,
	}
	if strings.ReplaceAll(strings.Join(got, " "), "null", "{}") != strings.Join(want, " ") {
		t.Errorf("nodes\n%v\nwant\n%v", got, want)
	}
	W, bias := m.Initializers["W"], m.Initializers["bias"]
	w := params["fc.weight"]
	if !slices.Equal(w.Shape, []int{3, 2}) || !slices.Equal(params["fc.bias"].Float, bias.Float) {
		t.Fatalf("fc.weight shape %v, fc.bias %v", w.Shape, params["fc.bias"].Float)
	}
	for o := 0; o < 3; o++ {
		for c := 0; c < 2; c++ {
			if w.Float[o*2+c] != W.Float[c*3+o] {
				t.Errorf("fc.weight[%d][%d] = %g, Wᵀ's %g", o, c, w.Float[o*2+c], W.Float[c*3+o])
			}
		}
	}
	if s.Output != "fc" || s.InChannels != 2 || s.InLen != 8 {
		t.Errorf("output %q, input %d x %d", s.Output, s.InChannels, s.InLen)
	}
}
