package onnx

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk/internal/onnxpb"
)

// TestHugeAttributes checks that attributes counting samples beyond any
// input (dilations = [2^62], whose span dilations*(k-1)+1 wrapped to 1;
// pads of 2^62, whose padded length wrapped negative) are refused naming
// the file, the node, the attribute and the bound accepted, and that no
// wrapped (negative) length is printed.
func TestHugeAttributes(t *testing.T) {
	tail := func(b *builder, in string) {
		b.node("", "ReduceMean", []string{in}, "m", intsAttr1("axes", 2), intAttr("keepdims", 0))
		b.node("", "Softmax", []string{"m"}, "y", intAttr("axis", 1))
	}
	bound := strconv.Itoa(MaxLen)
	cases := []refusal{
		{"Conv dilations 2^62", func(b *builder) {
			b.node("conv", "Conv", []string{"x", b.f32("w", 3, 2, 5)}, "c", intsAttr1("dilations", 1<<62))
			tail(b, "c")
		}, []string{`node "/conv/Conv" (Conv)`, `"dilations"`, bound}},
		{"Conv dilations at the bound", func(b *builder) {
			b.node("conv", "Conv", []string{"x", b.f32("w", 3, 2, 5)}, "c", intsAttr1("dilations", MaxLen))
			tail(b, "c")
		}, []string{`node "/conv/Conv" (Conv)`, `"dilations"`, "spans 67108865 samples", "at most 8"}},
		{"Conv dilations beyond the input", func(b *builder) {
			b.node("conv", "Conv", []string{"x", b.f32("w", 3, 2, 5)}, "c", intsAttr1("dilations", 3))
			tail(b, "c")
		}, []string{`node "/conv/Conv" (Conv)`, `"dilations" = [3]`, "spans 13 samples", "at most 8"}},
		{"Conv pads 2^62", func(b *builder) {
			b.node("conv", "Conv", []string{"x", b.f32("w", 3, 2, 3)}, "c", intsAttr1("pads", 1<<62, 1<<62))
			tail(b, "c")
		}, []string{`node "/conv/Conv" (Conv)`, `"pads"`, bound}},
		{"Conv pads each within the bound, together beyond", func(b *builder) {
			b.node("conv", "Conv", []string{"x", b.f32("w", 3, 2, 3)}, "c", intsAttr1("pads", MaxLen, MaxLen))
			tail(b, "c")
		}, []string{`node "/conv/Conv" (Conv)`, `"pads"`, bound}},
		{"Conv strides 2^62", func(b *builder) {
			b.node("conv", "Conv", []string{"x", b.f32("w", 3, 2, 3)}, "c", intsAttr1("strides", 1<<62))
			tail(b, "c")
		}, []string{`node "/conv/Conv" (Conv)`, `"strides"`, bound}},
		{"zero Pad merged into a Conv, beyond the bound together", func(b *builder) {
			b.node("conv", "Pad", []string{"x", b.i64("pads", 0, 0, MaxLen, 0, 0, 0)}, "p")
			b.node("conv", "Conv", []string{"p", b.f32("w", 3, 2, 3)}, "c", intsAttr1("pads", 1, 0))
			tail(b, "c")
		}, []string{`node "/conv/Conv" (Conv)`, `"pads"`, bound}},
		{"Pad 2^62", func(b *builder) {
			b.node("pad", "Pad", []string{"x", b.i64("pads", 0, 0, 1<<62, 0, 0, 1<<62), b.f32("v")}, "p")
			tail(b, "p")
		}, []string{`node "/pad/Pad" (Pad)`, "pads", bound}},
		{"Pad within the bound each, beyond together", func(b *builder) {
			b.node("pad", "Pad", []string{"x", b.i64("pads", 0, 0, MaxLen, 0, 0, MaxLen), b.f32("v")}, "p")
			tail(b, "p")
		}, []string{`node "/pad/Pad" (Pad)`, "its pads", bound}},
		{"MaxPool kernel 2^63-1, pads 2^62", func(b *builder) {
			b.node("pool", "MaxPool", []string{"x"}, "p", intsAttr1("kernel_shape", math.MaxInt64), intsAttr1("pads", 1<<62, 1<<62))
			tail(b, "p")
		}, []string{`node "/pool/MaxPool" (MaxPool)`, `"kernel_shape"`, bound}},
		{"MaxPool pads 2^62", func(b *builder) {
			b.node("pool", "MaxPool", []string{"x"}, "p", intsAttr1("kernel_shape", 2), intsAttr1("pads", 1<<62, 1<<62))
			tail(b, "p")
		}, []string{`node "/pool/MaxPool" (MaxPool)`, `"pads"`, bound}},
		{"AveragePool strides 2^62", func(b *builder) {
			b.node("pool", "AveragePool", []string{"x"}, "p", intsAttr1("kernel_shape", 2), intsAttr1("strides", 1<<62))
			tail(b, "p")
		}, []string{`node "/pool/AveragePool" (AveragePool)`, `"strides"`, bound}},
	}
	for _, c := range cases {
		err := c.check(t)
		if err == nil {
			continue
		}
		if strings.Contains(err.Error(), "-") && regexp.MustCompile(`-[0-9]{3,}`).MatchString(err.Error()) {
			t.Errorf("%s: error %q prints a negative length", c.what, err)
		}
	}
}

// TestHugeInput checks that an input of more samples than MaxLen, or of
// more values than MaxElements, is refused naming the input and the bound.
func TestHugeInput(t *testing.T) {
	for _, dims := range [][2]int64{{2, MaxLen + 1}, {1 << 40, 1 << 40}, {1 << 20, 1 << 20}} {
		b := newBuilder()
		b.g.Input[0].Type.GetTensorType().Shape.Dim[1].Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: dims[0]}
		b.g.Input[0].Type.GetTensorType().Shape.Dim[2].Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: dims[1]}
		b.node("", "ReduceMean", []string{"x"}, "m", intsAttr1("axes", 2), intAttr("keepdims", 0))
		b.node("", "Softmax", []string{"m"}, "y", intAttr("axis", 1))
		_, _, err := ToSpec(b.model(t))
		if err == nil || !strings.Contains(err.Error(), `input "x"`) || !strings.Contains(err.Error(), "accepted (onnx.Max") {
			t.Errorf("input %v: %v, want it refused naming the input and the bound", dims, err)
		}
	}
}
