package onnx

import (
	"math"
	"testing"

	nngraph "github.com/uaxai/uaxai/sdk/nn/graph"
)

// TestElementwiseImport: Add, Sub, Mul and Div of the input and a
// constant (a scalar, a row, a column, a full 2 x 8 tensor, on either
// side), Pow, Sqrt and Erf import so that the network computes them:
// the mean over time of each, written out in float64, equals the
// imported graph's output within 1e-6.
func TestElementwiseImport(t *testing.T) {
	// The builder's constants are 0.1, 0.2, ...: c(i) for flat index i.
	c := func(i int) float64 { return float64(float32(i+1) / 10) }
	cases := []struct {
		what  string
		build func(b *builder) string
		f     func(x float64, ch, s int) float64
	}{
		{"x + full", func(b *builder) string {
			b.node("", "Add", []string{"x", b.f32("k", 1, 2, 8)}, "v")
			return "v"
		}, func(x float64, ch, s int) float64 { return x + c(ch*8+s) }},
		{"scalar + x", func(b *builder) string { b.node("", "Add", []string{b.f32("k"), "x"}, "v"); return "v" },
			func(x float64, _, _ int) float64 { return x + c(0) }},
		{"x - row", func(b *builder) string { b.node("", "Sub", []string{"x", b.f32("k", 8)}, "v"); return "v" },
			func(x float64, _, s int) float64 { return x - c(s) }},
		{"column - x", func(b *builder) string { b.node("", "Sub", []string{b.f32("k", 2, 1), "x"}, "v"); return "v" },
			func(x float64, ch, _ int) float64 { return c(ch) - x }},
		{"scalar - x", func(b *builder) string { b.node("", "Sub", []string{b.f32("k"), "x"}, "v"); return "v" },
			func(x float64, _, _ int) float64 { return c(0) - x }},
		{"x - scalar", func(b *builder) string { b.node("", "Sub", []string{"x", b.f32("k")}, "v"); return "v" },
			func(x float64, _, _ int) float64 { return x - c(0) }},
		{"x * row", func(b *builder) string { b.node("", "Mul", []string{"x", b.f32("k", 1, 1, 8)}, "v"); return "v" },
			func(x float64, _, s int) float64 { return x * c(s) }},
		{"scalar * x", func(b *builder) string { b.node("", "Mul", []string{b.f32("k"), "x"}, "v"); return "v" },
			func(x float64, _, _ int) float64 { return x * c(0) }},
		{"x / column", func(b *builder) string { b.node("", "Div", []string{"x", b.f32("k", 2, 1)}, "v"); return "v" },
			func(x float64, ch, _ int) float64 { return x / c(ch) }},
		{"x / scalar", func(b *builder) string { b.node("", "Div", []string{"x", b.f32("k")}, "v"); return "v" },
			func(x float64, _, _ int) float64 { return x / c(0) }},
		{"x / x", func(b *builder) string { b.node("", "Div", []string{"x", "x"}, "v"); return "v" },
			func(float64, int, int) float64 { return 1 }},
		{"sqrt(x^2 + scalar)", func(b *builder) string {
			b.node("", "Pow", []string{"x", b.f32("two")}, "p")
			b.g.Initializer[len(b.g.Initializer)-1].FloatData[0] = 2
			b.node("", "Add", []string{"p", b.f32("k")}, "a")
			b.node("", "Sqrt", []string{"a"}, "v")
			return "v"
		}, func(x float64, _, _ int) float64 { return math.Sqrt(x*x + c(0)) }},
		{"erf(x)", func(b *builder) string { b.node("", "Erf", []string{"x"}, "v"); return "v" },
			func(x float64, _, _ int) float64 { return math.Erf(x) }},
	}
	x := make([]float32, 16)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.7) + 0.2)
	}
	for _, tc := range cases {
		b := newBuilder()
		v := tc.build(b)
		b.node("", "ReduceMean", []string{v}, "y", intsAttr1("axes", 2), intAttr("keepdims", 0))
		spec, params, err := ToSpec(b.model(t))
		if err != nil {
			t.Errorf("%s: %v", tc.what, err)
			continue
		}
		got := specLogits(t, tc.what, spec, params, x, 2)
		for ch := range 2 {
			want := 0.0
			for s := range 8 {
				want += tc.f(float64(x[ch*8+s]), ch, s) / 8
			}
			if math.Abs(float64(got[ch])-want) > 1e-6 {
				t.Errorf("%s: channel %d's mean %.8g, want %.8g", tc.what, ch, got[ch], want)
			}
		}
	}
}

// specLogits compiles an imported spec with its parameters and returns
// its logits (n of them) for the inputs x; what names the case in a
// failure.
func specLogits(t *testing.T, what string, spec nngraph.Spec, params map[string]Tensor, x []float32, n int) []float32 {
	t.Helper()
	net, err := nngraph.Compile(spec)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, p := range net.Params() {
		copy(net.Theta[p.Offset:p.Offset+p.Len], params[p.Name].Float)
	}
	got := make([]float32, n)
	if err := net.ForwardLogits(got, x); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return got
}
