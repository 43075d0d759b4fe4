package graph

import (
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func small(nodes ...Node) Spec {
	return Spec{Name: "bad", InChannels: 2, InLen: 16, Nodes: nodes}
}

var (
	gap = Node{Name: "gap", Op: "globalavgpool"}
	fc  = Node{Name: "fc", Op: "linear", Attrs: map[string]any{"out": 3}}
)

// TestCompileErrors: a bad spec is refused with an error naming the node
// and what is accepted.
func TestCompileErrors(t *testing.T) {
	conv := func(name string, attrs map[string]any) Node { return Node{Name: name, Op: "conv1d", Attrs: attrs} }
	cases := []struct {
		name string
		spec Spec
		want []string
	}{
		{"unknown op", small(Node{Name: "x", Op: "conv2d"}, gap, fc), []string{`node 0 "x"`, `unknown op "conv2d"`, "conv1d", "maxpool1d", "concat"}},
		{"unknown attribute", small(conv("c1", map[string]any{"out": 4, "kernel": 3, "pading": 1}), gap, fc),
			[]string{`node 0 "c1"`, `unknown attribute "pading"`, "padding ([left, right]", "dilation", "groups", "bias"}},
		{"missing attribute", small(conv("c1", map[string]any{"out": 4}), gap, fc), []string{`"c1"`, "needs attribute kernel"}},
		{"attribute type", small(conv("c1", map[string]any{"out": 4, "kernel": "3"}), gap, fc), []string{`"c1"`, "kernel", "an integer 1 <= kernel <= " + strconv.Itoa(MaxExtent) + " = graph.MaxExtent"}},
		{"attribute range", small(conv("c1", map[string]any{"out": 4, "kernel": 3, "padding": []int64{1, -1}}), gap, fc), []string{`"c1"`, "padding", "integers 0 <= padding <= " + strconv.Itoa(MaxExtent)}},
		{"dropout p", small(gap, Node{Name: "d", Op: "dropout", Attrs: map[string]any{"p": 1.0}}, fc), []string{`"d"`, "0 <= p < 1"}},
		{"groups", small(conv("c1", map[string]any{"out": 3, "kernel": 3, "groups": 2}), gap, fc), []string{`"c1"`, "groups 2 does not divide"}},
		{"kernel too long", small(conv("c1", map[string]any{"out": 4, "kernel": 20}), gap, fc), []string{`node 0 "c1"`, "shorter than the dilated kernel"}},
		{"duplicate", small(gap, Node{Name: "gap", Op: "relu"}, fc), []string{`node 1 "gap"`, "unique"}},
		{"reserved", small(Node{Name: "input", Op: "relu"}, gap, fc), []string{`node 0 "input"`, "reserved"}},
		{"path", small(Node{Name: "block1..relu", Op: "relu"}, gap, fc), []string{"empty part", "module path"}},
		{"path char", small(Node{Name: "block1/relu", Op: "relu"}, gap, fc), []string{`'/'`}},
		{"later input", small(Node{Name: "r", Op: "relu", Inputs: []string{"gap"}}, gap, fc), []string{`node 0 "r"`, `input "gap" is node 1`, "topological"}},
		{"undefined input", small(Node{Name: "r", Op: "relu", Inputs: []string{"nope"}}, gap, fc), []string{`"r"`, `"nope"`}},
		{"add arity", small(Node{Name: "a", Op: "add"}, gap, fc), []string{`"a"`, "takes 2 input(s), has 1"}},
		{"concat arity", small(Node{Name: "c", Op: "concat"}, gap, fc), []string{`"c"`, "two or more"}},
		{"add shapes", small(Node{Name: "p", Op: "pad", Attrs: map[string]any{"left": 1, "right": 0}}, Node{Name: "a", Op: "add", Inputs: []string{"input", "p"}}, gap, fc),
			[]string{`node 1 "a"`, "2 x 16 and 2 x 17", "one shape"}},
		{"concat lengths", small(Node{Name: "p", Op: "pad", Attrs: map[string]any{"left": 1, "right": 0}}, Node{Name: "c", Op: "concat", Inputs: []string{"input", "p"}}, gap, fc),
			[]string{`"c"`, "one length"}},
		{"linear on a sequence", small(fc), []string{`node 0 "fc"`, "C x 1", "global pool"}},
		{"pool padding", small(Node{Name: "mp", Op: "maxpool1d", Attrs: map[string]any{"kernel": 2, "padding": 2}}, gap, fc), []string{`"mp"`, "kernel/2"}},
		{"output not a vector", small(Node{Name: "r", Op: "relu"}), []string{`output node "r" gives 2 x 16`}},
		{"output unknown", Spec{Name: "bad", InChannels: 2, InLen: 16, Output: "nope", Nodes: []Node{gap, fc}}, []string{`output "nope"`}},
		{"no nodes", small(), []string{"no nodes"}},
		{"no input", Spec{Name: "bad", Nodes: []Node{gap, fc}}, []string{"in_channels 0", ">= 1"}},
	}
	for _, c := range cases {
		_, err := Compile(c.spec)
		wantErr(t, c.name, err, c.want)
	}
}

// TestCanonicalSpec: Compile fills in inputs and defaults in canonical
// types, and the canonical spec compiles to the same parameters.
func TestCanonicalSpec(t *testing.T) {
	net, err := Compile(small(
		Node{Name: "c", Op: "conv1d", Attrs: map[string]any{"out": 4, "kernel": 3, "padding": 1}},
		Node{Name: "mp", Op: "maxpool1d", Attrs: map[string]any{"kernel": 2}}, gap, fc))
	if err != nil {
		t.Fatal(err)
	}
	s := net.Spec()
	c := s.Nodes[0]
	if c.Inputs[0] != Input || s.Nodes[1].Inputs[0] != "c" || s.Output != "fc" {
		t.Errorf("inputs %v %v, output %q", c.Inputs, s.Nodes[1].Inputs, s.Output)
	}
	if p := c.Attrs["padding"].([]int64); p[0] != 1 || p[1] != 1 || c.Attrs["stride"] != int64(1) || c.Attrs["bias"] != true {
		t.Errorf("conv attrs %v", c.Attrs)
	}
	if s.Nodes[1].Attrs["stride"] != int64(2) {
		t.Errorf("maxpool stride %v, want its kernel 2", s.Nodes[1].Attrs["stride"])
	}
	again, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Params(), again.Params()
	if len(a) != len(b) || net.NumParams() != again.NumParams() || 4*2*3+4+3*4+3 != net.NumParams() {
		t.Errorf("params %v vs %v (%d)", a, b, net.NumParams())
	}
}

// TestStateDictErrors: missing, unexpected and mis-shaped tensors are all
// listed; num_batches_tracked is ignored; nothing is loaded on error.
func TestStateDictErrors(t *testing.T) {
	net, err := Compile(small(Node{Name: "bn", Op: "batchnorm1d"}, gap, fc))
	if err != nil {
		t.Fatal(err)
	}
	sd := map[string]Tensor{
		"bn.weight":              {[]int{2}, []float32{1, 2}},
		"bn.bias":                {[]int{3}, []float32{1, 2, 3}},
		"bn.running_mean":        {[]int{2}, []float32{0, 0}},
		"bn.num_batches_tracked": {nil, nil},
		"fc.weight":              {[]int{3, 2}, make([]float32, 6)},
		"fc.bias":                {[]int{3}, make([]float32, 3)},
		"head.weight":            {[]int{1}, []float32{1}},
	}
	err = net.LoadStateDict(sd)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{"missing: bn.running_var [2]", "unexpected: head.weight", "wrong shape: bn.bias is [3] (3 values), want [2]"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "num_batches_tracked") {
		t.Errorf("error %q names num_batches_tracked", err)
	}
	for _, v := range net.Theta {
		if v != 0 {
			t.Fatal("a failed load wrote parameters")
		}
	}
	sd["bn.bias"] = Tensor{[]int{2}, []float32{3, 4}}
	sd["bn.running_var"] = Tensor{[]int{2}, []float32{1, 1}}
	delete(sd, "head.weight")
	// One fault at a time, and one missing beside one unexpected: each
	// error names exactly its own kinds.
	for _, c := range []struct {
		edit func(map[string]Tensor)
		want string
	}{
		{func(m map[string]Tensor) { m["extra"] = Tensor{[]int{1}, []float32{0}} }, "unexpected: extra"},
		{func(m map[string]Tensor) { delete(m, "fc.bias") }, "missing: fc.bias [3]"},
		{func(m map[string]Tensor) { m["fc.bias"] = Tensor{[]int{2}, []float32{0, 0}} }, "wrong shape: fc.bias is [2] (2 values), want [3]"},
		{func(m map[string]Tensor) { delete(m, "fc.bias"); m["extra"] = Tensor{[]int{1}, []float32{0}} }, "missing: fc.bias [3]; unexpected: extra"},
	} {
		m := maps.Clone(sd)
		c.edit(m)
		err := net.LoadStateDict(m)
		if want := `graph "bad": state_dict does not fit: ` + c.want; err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	if err := net.LoadStateDict(sd); err != nil {
		t.Fatal(err)
	}
	for _, p := range net.Params() {
		for j, v := range sd[p.Name].Data {
			if net.Theta[p.Offset+j] != v {
				t.Errorf("%s[%d] = %g, want %g", p.Name, j, net.Theta[p.Offset+j], v)
			}
		}
	}
}

// TestTOMLErrors: errors of a TOML spec name the file, the line of the
// node's table and what is accepted.
func TestTOMLErrors(t *testing.T) {
	head := "name = \"t\"\nin_channels = 1\nin_len = 16\n"
	gapFC := "\n[[nodes]]\nname = \"gap\"\nop = \"globalavgpool\"\n\n[[nodes]]\nname = \"fc\"\nop = \"linear\"\nout = 3\n"
	cases := []struct {
		name, text string
		want       []string
	}{
		{"unknown attribute", head + "\n[[nodes]]\nname = \"c\"\nop = \"conv1d\"\nout = 2\nkernal = 3\n" + gapFC,
			[]string{"t.toml:5:", `"c"`, `unknown attribute "kernal"`, "kernel (an integer 1 <= kernel <= " + strconv.Itoa(MaxExtent) + " = graph.MaxExtent; required)"}},
		{"shape", head + "\n[[nodes]]\nname = \"c\"\nop = \"conv1d\"\nout = 2\nkernel = 3\n" + gapFC + "\n[[nodes]]\nname = \"fc2\"\nop = \"linear\"\nout = 2\ninputs = [\"c\"]\n",
			[]string{"t.toml:20:", `[[nodes]] 3 "fc2"`, "C x 1"}},
		{"top key", "nmae = \"t\"\n" + head + gapFC, []string{"t.toml", `unknown key "nmae"`, "in_channels"}},
		{"no op", head + "\n[[nodes]]\nname = \"c\"\n" + gapFC, []string{"t.toml:5:", "no op"}},
		{"inputs type", head + "\n[[nodes]]\nname = \"c\"\nop = \"relu\"\ninputs = \"input\"\n" + gapFC, []string{"t.toml:5:", "list of node names"}},
		{"syntax", head + "\n[[nodes]]\nname = \"c\n", []string{"t.toml", "line 6"}},
	}
	dir := t.TempDir()
	for _, c := range cases {
		path := filepath.Join(dir, "t.toml")
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadSpecFile(path)
		wantErr(t, c.name, err, c.want)
	}
}

// TestRunErrors: a batch of the wrong length and a target out of range
// are errors; a non-finite parameter gives an error, not NaN.
func TestRunErrors(t *testing.T) {
	net := randomNet(t, residualConcatSpec(false), 3)
	x := make([]float32, 2*net.InShape().Size())
	if err := net.Forward(make([]float32, 2*net.Classes()), x[:len(x)-1]); err == nil || !strings.Contains(err.Error(), "multiple of 48") {
		t.Errorf("short input: %v", err)
	}
	if err := net.Grad(x, GradRequest{Targets: []int{0, 5}}); err == nil || !strings.Contains(err.Error(), "0 <= target < 5") {
		t.Errorf("target 5: %v", err)
	}
	if err := net.Grad(x, GradRequest{Targets: []int{0}}); err == nil || !strings.Contains(err.Error(), "1 targets for 2 samples") {
		t.Errorf("one target: %v", err)
	}
	net.Theta[0] = float32(nanValue())
	if err := net.Forward(make([]float32, 2*net.Classes()), x); err == nil || !strings.Contains(err.Error(), "probability NaN") {
		t.Errorf("NaN weight: %v", err)
	}
}

func nanValue() float64 { var z float64; return z / z }

// wantErr checks that err is an error holding every fragment of want.
func wantErr(t *testing.T, name string, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted", name)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q lacks %q", name, err, w)
		}
	}
}
