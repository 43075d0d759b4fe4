package graph

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadSpec: no TOML text panics the spec reader (DecodeSpec: the
// text's counts, the TOML library, the op table, Compile), and a spec it
// accepts has consistent sizes: every shape positive and within the
// bounds, a sample's values the input's and every node's output added
// up, the parameters laid out end to end with the sum of their shapes'
// products as NumParams and len(Theta); its canonical form, written back
// as TOML, reads back to the same layout; and a small one runs forward and
// backward without a panic, its probabilities summing to 1.
func FuzzReadSpec(f *testing.F) {
	archs, err := filepath.Glob("../../../recipes/archs/*.toml")
	if err != nil || len(archs) == 0 {
		f.Fatalf("recipes/archs: %v (%d files)", err, len(archs))
	}
	for _, p := range archs {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []Spec{residualConcatSpec(false), residualConcatSpec(true)} {
		f.Add([]byte(specTOML(s)))
	}
	head := "name = \"s\"\nin_channels = 2\nin_len = 16\n"
	tail := "[[nodes]]\nname = \"gap\"\nop = \"globalmaxpool\"\n[[nodes]]\nname = \"fc\"\nop = \"linear\"\nout = 3\n"
	for _, body := range []string{
		"[[nodes]]\nname = \"c\"\nop = \"conv1d\"\nout = 4\nkernel = 3\ndilation = 4611686018427387904\n",
		"[[nodes]]\nname = \"c\"\nop = \"conv1d\"\nout = 4\nkernel = 3\ndilation = 2\nstride = 2\ngroups = 2\npadding = [1, 3]\n",
		"[[nodes]]\nname = \"p\"\nop = \"pad\"\nleft = 1\nright = 2\nvalue = -1.5\n[[nodes]]\nname = \"mp\"\nop = \"maxpool1d\"\nkernel = 3\npadding = 1\n",
		"[[nodes]]\nname = \"ap\"\nop = \"avgpool1d\"\nkernel = 4\nstride = 3\npadding = 2\n[[nodes]]\nname = \"bn\"\nop = \"batchnorm1d\"\n[[nodes]]\nname = \"g\"\nop = \"gelu\"\n",
		"[[nodes]]\nname = \"a\"\nop = \"silu\"\n[[nodes]]\nname = \"b\"\nop = \"add\"\ninputs = [\"a\", \"input\"]\n[[nodes]]\nname = \"cat\"\nop = \"concat\"\ninputs = [\"b\", \"a\", \"input\"]\n",
		"[[nodes]]\nname = \"f\"\nop = \"flatten\"\n[[nodes]]\nname = \"d\"\nop = \"dropout\"\np = 0.25\n[[nodes]]\nname = \"l\"\nop = \"linear\"\nout = 5\nbias = false\n[[nodes]]\nname = \"t\"\nop = \"tanh\"\n[[nodes]]\nname = \"sm\"\nop = \"softmax\"\n",
		"[[nodes]]\nname = \"lr\"\nop = \"leakyrelu\"\nslope = 0.2\n[[nodes]]\nname = \"sg\"\nop = \"sigmoid\"\n",
		"nodes = [{name = \"r\", op = \"relu\"}, {name = \"c\", op = \"conv1d\", out = 2, kernel = 1, padding = 4611686018427387904}]\n",
		"[[nodes]]\nname = \"c\"\nop = \"linear\"\nout = 2147483648\n",
	} {
		f.Add([]byte(head + body + tail))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := DecodeSpec(data, "fuzz.toml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.toml") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		checkSizes(t, spec)
	})
}

// checkSizes checks a spec that DecodeSpec accepted (see FuzzReadSpec).
func checkSizes(t *testing.T, spec Spec) {
	net, err := Compile(spec)
	if err != nil {
		t.Fatalf("DecodeSpec accepted a spec Compile refuses: %v", err)
	}
	in := net.InShape()
	values := in.C * in.T
	if in.C < 1 || in.T < 1 || values > MaxValues {
		t.Fatalf("input %s", in)
	}
	for i := range net.Spec().Nodes {
		s := net.NodeShape(i)
		if s.C < 1 || s.T < 1 || s.C > MaxValues || s.T > MaxValues || s.C*s.T > MaxValues {
			t.Fatalf("node %d: shape %s", i, s)
		}
		values += s.C * s.T
		if values > MaxValues {
			t.Fatalf("up to node %d: %d values, above MaxValues and accepted", i, values)
		}
	}
	if values != net.Values() {
		t.Fatalf("Values() = %d, the shapes add up to %d", net.Values(), values)
	}
	off := 0
	for _, p := range net.Params() {
		l := 1
		for _, d := range p.Shape {
			if d < 1 || d > MaxParams {
				t.Fatalf("%s: shape %v", p.Name, p.Shape)
			}
			l *= d
			if l > MaxParams {
				t.Fatalf("%s: shape %v above MaxParams and accepted", p.Name, p.Shape)
			}
		}
		if p.Len != l || p.Offset != off {
			t.Fatalf("%s: shape %v, len %d, offset %d; want len %d at offset %d", p.Name, p.Shape, p.Len, p.Offset, l, off)
		}
		off += l
	}
	if off != net.NumParams() || len(net.Theta) != off || off > MaxParams {
		t.Fatalf("NumParams %d, len(Theta) %d; the parameters add up to %d", net.NumParams(), len(net.Theta), off)
	}
	if net.Classes() < 2 {
		t.Fatalf("%d classes", net.Classes())
	}
	// The canonical spec, written back as TOML, reads back to the same
	// layout.
	back, err := DecodeSpec([]byte(specTOML(net.Spec())), "canonical.toml")
	if err != nil {
		t.Fatalf("the canonical spec does not read back: %v", err)
	}
	net2, err := Compile(back)
	if err != nil {
		t.Fatal(err)
	}
	if net2.NumParams() != net.NumParams() || net2.Values() != net.Values() || net2.Classes() != net.Classes() {
		t.Fatalf("canonical spec: %d parameters, %d values, %d classes; want %d, %d, %d", net2.NumParams(), net2.Values(), net2.Classes(), net.NumParams(), net.Values(), net.Classes())
	}
	// A small network runs: forward, and a training pass's backward.
	if net.Values() > 1<<15 || net.NumParams() > 1<<15 {
		return
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range net.Params() {
		for j := range p.Len {
			v := float32(rng.NormFloat64() * 0.3)
			if strings.HasSuffix(p.Name, "running_var") {
				v = 1 + float32(rng.Float64())
			}
			net.Theta[p.Offset+j] = v
		}
	}
	const B = 2
	x := make([]float32, B*in.C*in.T)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	probs := make([]float32, B*net.Classes())
	if err := net.Forward(probs, x); err != nil {
		if strings.Contains(err.Error(), "probability") {
			return // values beyond float32 (a pad value of 1e38): reported, not passed on
		}
		t.Fatalf("Forward: %v", err)
	}
	for b := range B {
		s := 0.0
		for _, p := range probs[b*net.Classes() : (b+1)*net.Classes()] {
			s += float64(p)
		}
		if math.Abs(s-1) > 1e-4 {
			t.Fatalf("sample %d: probabilities add up to %g", b, s)
		}
	}
	out, err := net.Run(x, true, rng)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	dOut := make([]float32, len(out))
	for i := range dOut {
		dOut[i] = 1
	}
	net.Backprop(dOut, make([]float32, net.NumParams()), make([]float32, len(x)))
}
