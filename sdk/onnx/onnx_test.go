package onnx

import (
	"encoding/json"
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

// peer is what testdata/peers/onnx_ops.py read with the onnx package and
// PyTorch, for one network.
type peer struct {
	Opset  int
	Inputs []struct {
		Name  string
		Shape []int
	}
	Outputs []struct {
		Name  string
		Shape []int
	}
	Initializers map[string][]int
	Nodes        []struct {
		Name   string
		OpType string `json:"op_type"`
	}
	Modules []string
	Pads    map[string][2]int
}

func peers(t *testing.T) map[string]peer {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(golden.Dir(t, "archs"), "onnx_import.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]peer
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// convNets are the golden networks the importer accepts (the LSTM is
// refused).
var convNets = []string{"fcn", "resnet1d", "inceptiontime", "stridednet", "resnet1d-3ph"}

func modelPath(t testing.TB, net string) string {
	return filepath.Join(golden.Dir(t, "archs"), net, "model.onnx")
}

// TestGoldenArchs compares the import of each convolutional golden network
// with what the onnx package and PyTorch say about it.
func TestGoldenArchs(t *testing.T) {
	all := peers(t)
	for _, net := range convNets {
		t.Run(net, func(t *testing.T) {
			want, ok := all[net]
			if !ok {
				t.Fatalf("onnx_import.json has no %s", net)
			}
			m, err := Read(modelPath(t, net))
			if err != nil {
				t.Fatal(err)
			}
			if m.Opset != want.Opset {
				t.Errorf("opset %d, onnx says %d", m.Opset, want.Opset)
			}
			for i, v := range want.Inputs {
				if i >= len(m.Inputs) || m.Inputs[i].Name != v.Name || !slices.Equal(m.Inputs[i].Shape, v.Shape) {
					t.Errorf("inputs %v, onnx says %v", m.Inputs, want.Inputs)
				}
			}
			if len(m.Inputs) != len(want.Inputs) || len(m.Outputs) != len(want.Outputs) ||
				m.Outputs[0].Name != want.Outputs[0].Name || !slices.Equal(m.Outputs[0].Shape, want.Outputs[0].Shape) {
				t.Errorf("inputs %v outputs %v, onnx says %v %v", m.Inputs, m.Outputs, want.Inputs, want.Outputs)
			}
			// The nodes left after folding, in order.
			if len(m.Nodes) != len(want.Nodes) {
				t.Fatalf("%d nodes after folding, the peer's folding leaves %d", len(m.Nodes), len(want.Nodes))
			}
			for i, n := range m.Nodes {
				if n.Name != want.Nodes[i].Name || n.OpType != want.Nodes[i].OpType {
					t.Errorf("node %d is %s (%s), the peer says %s (%s)", i, n.Name, n.OpType, want.Nodes[i].Name, want.Nodes[i].OpType)
				}
			}
			defined := map[string]bool{}
			for _, v := range m.Inputs {
				defined[v.Name] = true
			}
			for nm := range m.Initializers {
				defined[nm] = true
			}
			for _, n := range m.Nodes {
				allConst := true
				for _, in := range n.Inputs {
					if in == "" {
						continue
					}
					if !defined[in] {
						t.Errorf("node %s: input %s not defined before it", n.Name, in)
					}
					_, c := m.Initializers[in]
					allConst = allConst && c
				}
				if allConst {
					t.Errorf("node %s (%s) has only constant inputs: it should have been folded", n.Name, n.OpType)
				}
				if !slices.Contains(SupportedOps(), n.OpType) {
					t.Errorf("node %s: %s is not a supported operator", n.Name, n.OpType)
				}
				for _, out := range n.Outputs {
					defined[out] = true
				}
			}
			for nm, shape := range want.Initializers {
				got, ok := m.Initializers[nm]
				if !ok || !slices.Equal(got.Shape, shape) || got.Len() != len(got.Float)+len(got.Int) {
					t.Errorf("initializer %s: shape %v (%d values), onnx says %v", nm, got.Shape, len(got.Float)+len(got.Int), shape)
				}
			}
			checkStateDict(t, net, m)
			checkModules(t, m, want)
		})
	}
}

// checkStateDict checks that every initializer named like a state_dict
// tensor holds its bits, and that every convolution weight torch renamed
// is the state_dict's convolution with a BatchNorm folded into it:
// W' = W γ/√(var+ε) per output channel, b' = (b - mean) γ/√(var+ε) + β.
func checkStateDict(t *testing.T, net string, m *Model) {
	sd, err := safetensors.ReadFile(filepath.Join(golden.Dir(t, "archs"), net, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for nm, got := range m.Initializers {
		st, ok := sd.Get(nm)
		if !ok {
			continue
		}
		same++
		if !slices.Equal(st.Shape, got.Shape) || len(st.Data) != len(got.Float) {
			t.Errorf("%s: shape %v, the state_dict's %v", nm, got.Shape, st.Shape)
			continue
		}
		for i := range st.Data {
			if math.Float32bits(st.Data[i]) != math.Float32bits(got.Float[i]) {
				t.Errorf("%s[%d] = %g, the state_dict's %g", nm, i, got.Float[i], st.Data[i])
				break
			}
		}
	}
	if same == 0 {
		t.Errorf("no initializer is a state_dict tensor")
	}
	folded := 0
	for _, n := range m.Nodes {
		if n.OpType != "Conv" {
			continue
		}
		if _, ok := sd.Get(n.Inputs[1]); ok {
			continue
		}
		mod := ModulePath(n.Name)
		w, ok := sd.Get(mod + ".weight")
		if !ok {
			t.Errorf("node %s: its weight %s is not in the state_dict, nor is %s.weight", n.Name, n.Inputs[1], mod)
			continue
		}
		b, _ := sd.Get(mod + ".bias")
		if len(n.Inputs) < 3 || !foldedBN(sd, w, b, m.Initializers[n.Inputs[1]].Float, m.Initializers[n.Inputs[2]].Float) {
			t.Errorf("node %s: weight %s is not %s.weight with one of the state_dict's BatchNorms folded in", n.Name, n.Inputs[1], mod)
		}
		folded++
	}
	t.Logf("%d initializers are state_dict tensors bit for bit, %d convolutions have a BatchNorm folded in", same, folded)
}

// foldedBN reports whether got and gotBias are w and b (zero when the
// convolution has no bias) with one of the BatchNorms of sd folded in,
// within float32 rounding.
func foldedBN(sd *safetensors.File, w, b safetensors.Tensor, got, gotBias []float32) bool {
	cout := w.Shape[0]
	per := w.Len() / cout
	for _, rv := range sd.Tensors {
		bn, ok := strings.CutSuffix(rv.Name, ".running_var")
		if !ok || rv.Len() != cout {
			continue
		}
		g, _ := sd.Get(bn + ".weight")
		beta, _ := sd.Get(bn + ".bias")
		mean, _ := sd.Get(bn + ".running_mean")
		match := len(gotBias) == cout
		for c := 0; c < cout && match; c++ {
			bc := 0.0
			if b.Data != nil {
				bc = float64(b.Data[c])
			}
			want := (bc-float64(mean.Data[c]))*float64(g.Data[c])/math.Sqrt(float64(rv.Data[c])+1e-5) + float64(beta.Data[c])
			match = math.Abs(float64(gotBias[c])-want) <= 1e-5*math.Max(1, math.Abs(want))
		}
		for i := 0; i < len(got) && match; i++ {
			c := i / per
			want := float64(w.Data[i]) * float64(g.Data[c]) / math.Sqrt(float64(rv.Data[c])+1e-5)
			match = math.Abs(float64(got[i])-want) <= 1e-5*math.Max(1, math.Abs(want))
		}
		if match {
			return true
		}
	}
	return false
}

// checkModules checks module paths against PyTorch's named_modules, the
// state_dict names of the weights nodes read, and the ConstantPad1d
// paddings against the folded pads.
func checkModules(t *testing.T, m *Model, want peer) {
	for _, n := range m.Nodes {
		p := ModulePath(n.Name)
		if p != "" && !slices.Contains(want.Modules, p) {
			t.Errorf("node %s: module path %q is not among PyTorch's named_modules %v", n.Name, p, want.Modules)
		}
		for _, in := range n.Inputs[1:] {
			if mod, ok := strings.CutSuffix(in, ".weight"); ok && mod != p {
				t.Errorf("node %s reads %s: its module path is %q, not %q", n.Name, in, p, mod)
			}
		}
		if n.OpType != "Pad" {
			continue
		}
		pad, ok := want.Pads[p]
		if !ok {
			continue
		}
		got := m.Initializers[n.Inputs[1]].Int
		if wantPads := []int64{0, 0, int64(pad[0]), 0, 0, int64(pad[1])}; !slices.Equal(got, wantPads) {
			t.Errorf("node %s: folded pads %v, PyTorch's ConstantPad1d%v is %v", n.Name, got, pad, wantPads)
		}
	}
}

// TestModuleOutput checks that a module's output is the output of its last
// node in the peer's node list.
func TestModuleOutput(t *testing.T) {
	all := peers(t)
	for _, c := range []struct{ net, module string }{{"resnet1d", "block3"}, {"inceptiontime", "inc3"}, {"fcn", "conv3"}, {"stridednet", "pool"}} {
		m, err := Read(modelPath(t, c.net))
		if err != nil {
			t.Fatal(err)
		}
		last := ""
		for _, n := range all[c.net].Nodes {
			if strings.HasPrefix(n.Name, "/"+c.module+"/") {
				last = n.Name
			}
		}
		got, err := m.ModuleOutput(c.module)
		if err != nil {
			t.Fatal(err)
		}
		var producer string
		for _, n := range m.Nodes {
			if n.Outputs[0] == got {
				producer = n.Name
			}
		}
		if last == "" || producer != last {
			t.Errorf("%s: ModuleOutput(%q) = %s, made by %q; the module's last node is %q", c.net, c.module, got, producer, last)
		}
	}
	m, err := Read(modelPath(t, "resnet1d"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.ModuleOutput("block3"); got != "/block3/Relu_2_output_0" {
		t.Errorf("resnet1d block3 ends at %s, the Relu after its addition is /block3/Relu_2", got)
	}
	if _, err := m.ModuleOutput("block4"); err == nil || !strings.Contains(err.Error(), `"block4"`) || !strings.Contains(err.Error(), `"block3.short"`) {
		t.Errorf("an unknown module: %v, want an error naming it and the modules there are", err)
	}
}

func TestModulePath(t *testing.T) {
	for name, want := range map[string]string{
		"/block3/Relu_2":             "block3",
		"/inc3/convs.2/Conv":         "inc3.convs.2",
		"/block1/short/short.0/Conv": "block1.short.0",
		"/Relu":                      "",
		"Constant_13":                "",
		"/0/Conv":                    "0",
		"/features/features.3/Relu":  "features.3",
		"/enc/layers.1.2/Conv":       "enc.layers.1.2",
	} {
		if got := ModulePath(name); got != want {
			t.Errorf("ModulePath(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestLSTMRefused(t *testing.T) {
	_, err := Read(modelPath(t, "lstm"))
	if err == nil {
		t.Fatal("the LSTM network was accepted")
	}
	for _, s := range []string{"lstm/model.onnx", `LSTM (node "/lstm/LSTM")`, "supported: Add", "Conv"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

// load reads a golden model's protobuf for a test to alter.
func load(t *testing.T, net string) *onnxpb.ModelProto {
	t.Helper()
	b, err := os.ReadFile(modelPath(t, net))
	if err != nil {
		t.Fatal(err)
	}
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		t.Fatal(err)
	}
	return &mp
}

func encode(t *testing.T, mp *onnxpb.ModelProto) []byte {
	t.Helper()
	b, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBadInputs(t *testing.T) {
	whole, err := os.ReadFile(modelPath(t, "fcn"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		what  string
		b     func() []byte
		wants []string
	}{
		{"truncated file", func() []byte { return whole[:len(whole)/2] }, []string{"bad.onnx", "not an ONNX model"}},
		{"unknown operator", func() []byte {
			mp := load(t, "fcn")
			for _, n := range mp.Graph.Node {
				if n.GetName() == "/conv2/Conv" {
					n.OpType = proto.String("FancyConv")
				}
			}
			return encode(t, mp)
		}, []string{"bad.onnx", `FancyConv (node "/conv2/Conv")`, "supported: Add, AveragePool"}},
		{"short raw data", func() []byte {
			mp := load(t, "fcn")
			for _, tp := range mp.Graph.Initializer {
				if tp.GetName() == "fc.weight" {
					tp.RawData = tp.RawData[:len(tp.RawData)-4]
				}
			}
			return encode(t, mp)
		}, []string{"bad.onnx", `initializer "fc.weight"`, "raw_data holds 1020 bytes", "256 elements of 4 bytes = 1024"}},
		{"opset 12", func() []byte {
			mp := load(t, "fcn")
			mp.OpsetImport[0].Version = proto.Int64(12)
			return encode(t, mp)
		}, []string{"bad.onnx", "opset 12", "opset 13 to 17"}},
		{"external data", func() []byte {
			mp := load(t, "fcn")
			mp.Graph.Initializer[0].DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
			return encode(t, mp)
		}, []string{`initializer "fc.weight"`, "external data"}},
		{"nodes out of order", func() []byte {
			mp := load(t, "fcn")
			nodes := mp.Graph.Node
			i := slices.IndexFunc(nodes, func(n *onnxpb.NodeProto) bool { return n.GetName() == "/Relu" })
			nodes[i], nodes[i-1] = nodes[i-1], nodes[i]
			return encode(t, mp)
		}, []string{`node "/Relu" (Relu)`, `input "/conv1/Conv_output_0" is not defined before`}},
		{"huge ConstantOfShape", func() []byte {
			mp := load(t, "fcn")
			for _, n := range mp.Graph.Node {
				if n.GetName() == "/pad1/Constant" {
					n.Attribute[0].T.RawData = []byte{0, 0, 0, 0, 0, 0, 0, 1} // 1<<56
				}
			}
			return encode(t, mp)
		}, []string{`node "/pad1/ConstantOfShape"`, "outside [0, 1048576]"}},
		{"float64 tensor", func() []byte {
			mp := load(t, "fcn")
			tp := mp.Graph.Initializer[1]
			tp.DataType = proto.Int32(int32(onnxpb.TensorProto_DOUBLE))
			return encode(t, mp)
		}, []string{`initializer "fc.bias"`, "DOUBLE", "accepted: FLOAT (1), INT64 (7)"}},
	}
	for _, c := range cases {
		_, err := Decode(c.b(), "bad.onnx")
		if err == nil {
			t.Errorf("%s: accepted", c.what)
			continue
		}
		for _, s := range c.wants {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not say %q", c.what, err, s)
			}
		}
	}
}

// TestTypedFields checks that tensors in float_data and int64_data read as
// the same tensors in raw_data.
func TestTypedFields(t *testing.T) {
	raw, err := Read(modelPath(t, "fcn"))
	if err != nil {
		t.Fatal(err)
	}
	mp := load(t, "fcn")
	moved := 0
	retype := func(tp *onnxpb.TensorProto) {
		if len(tp.RawData) == 0 {
			return
		}
		t2, err := tensorFrom(tp, tp.GetName(), &budget{left: MaxElements, max: MaxElements})
		if err != nil {
			t.Fatal(err)
		}
		tp.RawData, tp.FloatData, tp.Int64Data = nil, t2.Float, t2.Int
		moved++
	}
	for _, tp := range mp.Graph.Initializer {
		retype(tp)
	}
	for _, n := range mp.Graph.Node {
		for _, a := range n.Attribute {
			if a.T != nil {
				retype(a.T)
			}
		}
	}
	typed, err := Decode(encode(t, mp), "typed.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if moved < len(raw.Initializers) || len(typed.Initializers) != len(raw.Initializers) {
		t.Fatalf("%d tensors moved to typed fields; %d initializers typed, %d raw", moved, len(typed.Initializers), len(raw.Initializers))
	}
	for nm, r := range raw.Initializers {
		g := typed.Initializers[nm]
		if !slices.Equal(g.Shape, r.Shape) || !slices.Equal(g.Int, r.Int) || !slices.EqualFunc(g.Float, r.Float, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Errorf("%s: typed %v, raw %v", nm, g, r)
		}
	}
}
