package onnx

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// TestLayerNormFusion: LayerNorm over the last axis written out as
// torch exports it (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt,
// Div, and with elementwise_affine Mul and Add by E-vectors) imports as
// one layernorm node named after its module, whose parameters are the
// module's weight and bias (ones and zeros without the affine), its axis
// given as -1 or as 2, its eps 0.1 or 0; the
// network computes the layer norm of each channel's 8 steps written out
// here in float64. The same operators with an exponent of 4, or with the
// centred value read by a third node, are not LayerNorm: they import
// operator by operator and compute what they say.
func TestLayerNormFusion(t *testing.T) {
	c := func(i int) float64 { return float64(float32(i+1) / 10) } // a builder constant's value i
	build := func(b *builder, exp float32, affine, extra bool, axis int64, eps0 bool) string {
		b.node("ln", "ReduceMean", []string{"x"}, "m", intsAttr1("axes", axis))
		b.node("ln", "Sub", []string{"x", "m"}, "d")
		b.node("ln", "Pow", []string{"d", b.f32("two")}, "p")
		b.g.Initializer[len(b.g.Initializer)-1].FloatData[0] = exp
		b.node("ln", "ReduceMean", []string{"p"}, "v", intsAttr1("axes", axis))
		b.node("ln", "Add", []string{"v", b.f32("eps")}, "a")
		if eps0 {
			b.g.Initializer[len(b.g.Initializer)-1].FloatData[0] = 0
		}
		b.node("ln", "Sqrt", []string{"a"}, "s")
		b.node("ln", "Div", []string{"d", "s"}, "z")
		out := "z"
		if affine {
			b.node("ln", "Mul", []string{"z", b.f32("ln.weight", 8)}, "w")
			b.node("ln", "Add", []string{"w", b.f32("ln.bias", 8)}, "lny")
			out = "lny"
		}
		if extra {
			b.node("", "Add", []string{out, "d"}, "e")
			out = "e"
		}
		return out
	}
	x := make([]float32, 16)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.7) + 0.2*float64(i%3))
	}
	for _, tc := range []struct {
		what                 string
		exp                  float32
		affine, extra, fused bool
		axis                 int64
		eps0                 bool
	}{
		{"affine", 2, true, false, true, -1, false},
		{"no affine", 2, false, false, true, -1, false},
		{"axes [2]", 2, true, false, true, 2, false},
		{"eps 0", 2, false, false, true, -1, true},
		{"exponent 4", 4, true, false, false, -1, false},
		{"centred value read thrice", 2, false, true, false, -1, false},
	} {
		b := newBuilder()
		v := build(b, tc.exp, tc.affine, tc.extra, tc.axis, tc.eps0)
		b.node("", "ReduceMean", []string{v}, "y", intsAttr1("axes", 2), intAttr("keepdims", 0))
		spec, params, err := ToSpec(b.model(t))
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		var ln []string
		for _, n := range spec.Nodes {
			if n.Op == "layernorm" {
				ln = append(ln, n.Name)
			}
		}
		if tc.fused != (len(ln) == 1 && ln[0] == "ln") || !tc.fused && len(ln) != 0 {
			t.Errorf("%s: layernorm nodes %q; fused %v", tc.what, ln, tc.fused)
		}
		if tc.fused {
			w, bias := params["ln.weight"].Float, params["ln.bias"].Float
			if len(params) != 2 || len(w) != 8 || len(bias) != 8 {
				t.Fatalf("%s: parameters %v", tc.what, params)
			}
			for i := range 8 {
				if ww, wb := map[bool]float64{true: c(i), false: 1}[tc.affine], map[bool]float64{true: c(i), false: 0}[tc.affine]; float64(w[i]) != ww || float64(bias[i]) != wb {
					t.Errorf("%s: weight[%d], bias[%d] = %v, %v; want %v, %v", tc.what, i, i, w[i], bias[i], ww, wb)
				}
			}
		}
		got := specLogits(t, tc.what, spec, params, x, 2)
		eps := c(0)
		if tc.eps0 {
			eps = 0
		}
		for ch := range 2 {
			row := x[ch*8 : (ch+1)*8]
			var m, v float64
			for _, u := range row {
				m += float64(u) / 8
			}
			for _, u := range row {
				v += math.Pow(float64(u)-m, float64(tc.exp)) / 8
			}
			want := 0.0
			for s, u := range row {
				d := float64(u) - m
				z := d / math.Sqrt(v+eps)
				if tc.affine {
					z = z*c(s) + c(s)
				}
				if tc.extra {
					z += d
				}
				want += z / 8
			}
			if math.Abs(float64(got[ch])-want) > 1e-6 {
				t.Errorf("%s: channel %d's mean %.8g, want %.8g", tc.what, ch, got[ch], want)
			}
		}
	}
}

// TestTransformerImportNames: the golden Transformer's ONNX export
// imports with its five LayerNorms fused, so that its parameters are
// PyTorch's state_dict itself: the same names and the same bits as
// model.safetensors, tensor for tensor.
func TestTransformerImportNames(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "golden", "transformer")
	spec, params, err := LoadSpec(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	ln := 0
	for _, n := range spec.Nodes {
		if n.Op == "layernorm" {
			ln++
		}
	}
	if ln != 5 {
		t.Errorf("%d layernorm nodes; want 5 (two a layer, and the head's)", ln)
	}
	sd, err := safetensors.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.Tensors) != len(params) {
		t.Errorf("%d parameters imported, the state_dict has %d", len(params), len(sd.Tensors))
	}
	for _, want := range sd.Tensors {
		got, ok := params[want.Name]
		if !ok {
			t.Errorf("no parameter %s", want.Name)
			continue
		}
		if !slices.Equal(got.Float, want.Data) {
			t.Errorf("%s differs from the state_dict's", want.Name)
		}
	}
}
