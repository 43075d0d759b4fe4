package onnx

import (
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/uaxai/uaxai/internal/checked"
	"github.com/uaxai/uaxai/sdk/internal/onnxpb"
)

// tensorInit is an initializer of dtype (1 FLOAT, 7 INT64) and dims with
// values, in the typed field.
func tensorInit(name string, dtype int32, dims []int64, ints []int64, floats []float32) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(dtype), Dims: dims, Int64Data: ints, FloatData: floats}
}

// decodeGraph marshals mp, with extra initializers, and decodes it.
func decodeGraph(t testing.TB, mp *onnxpb.ModelProto, extra ...*onnxpb.TensorProto) (*Model, error) {
	t.Helper()
	mp.Graph.Initializer = append(mp.Graph.Initializer, extra...)
	b, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	return Decode(b, "hostile.onnx")
}

// TestSliceEmptyAxis checks Slice on an axis of size 0 against ONNX's
// definition: with any step, positive or negative, the result is empty
// (the clamped start and end leave no index; a negative step used to
// read element 0 of the empty tensor and panic).
func TestSliceEmptyAxis(t *testing.T) {
	for _, step := range []int64{1, -1, 3, -3, math.MaxInt64, math.MinInt64} {
		for _, se := range [][2]int64{{0, 0}, {-1, math.MinInt64}, {0, math.MaxInt64}, {math.MaxInt64, math.MinInt64}, {math.MinInt64, math.MaxInt64}} {
			mp := graph([]int64{1, 1, 4}, map[string][]int64{"st": {se[0]}, "en": {se[1]}, "ax": {0}, "sp": {step}},
				op("Slice", []string{"e", "st", "en", "ax", "sp"}, "p"),
				op("Pad", []string{"x", "p"}, "y"))
			m, err := decodeGraph(t, mp, tensorInit("e", 7, []int64{0}, nil, nil))
			if err != nil {
				t.Errorf("step %d, start/end %v: %v", step, se, err)
				continue
			}
			if p := m.Initializers["p"]; !slices.Equal(p.Shape, []int{0}) || len(p.Int) != 0 {
				t.Errorf("step %d, start/end %v: shape %v, %d values; want an empty vector", step, se, p.Shape, len(p.Int))
			}
		}
	}
}

// TestSliceHugeSteps checks Slice with steps whose magnitude wraps the
// count's arithmetic (|step| near 2^63) against a direct enumeration of
// ONNX's definition: indices start, start+step, ... while before end.
func TestSliceHugeSteps(t *testing.T) {
	data := []int64{10, 11, 12, 13, 14}
	d := int64(len(data))
	// want enumerates the definition directly, the step walked by
	// comparison (no count formula).
	want := func(s, e, st int64) []int64 {
		if s < 0 {
			s += d
		}
		if e < 0 {
			e += d
		}
		var out []int64
		if st > 0 {
			s, e = max(0, min(s, d)), max(0, min(e, d))
		} else {
			s, e = max(0, min(s, d-1)), max(-1, min(e, d-1))
		}
		for i := s; (st > 0 && i < e) || (st < 0 && i > e); {
			out = append(out, data[i])
			next, ok := checked.Add(int(i), int(st))
			if !ok {
				break
			}
			i = int64(next)
		}
		return out
	}
	for _, st := range []int64{1, 2, -1, -2, math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, math.MinInt64 + 1} {
		for _, se := range [][2]int64{{0, 5}, {4, -6}, {math.MinInt64, math.MaxInt64}, {math.MaxInt64, math.MinInt64}, {-1, math.MinInt64}, {-10, math.MinInt64}, {2, 3}, {0, 0}, {3, 0}, {-2, -1}} {
			mp := graph([]int64{1, 1, 4}, map[string][]int64{"e": data, "st": {se[0]}, "en": {se[1]}, "ax": {0}, "sp": {st}},
				op("Slice", []string{"e", "st", "en", "ax", "sp"}, "p"),
				op("Pad", []string{"x", "p"}, "y"))
			m, err := decodeGraph(t, mp)
			if err != nil {
				t.Errorf("step %d, start/end %v: %v", st, se, err)
				continue
			}
			w := want(se[0], se[1], st)
			if got := m.Initializers["p"].Int; !slices.Equal(got, w) {
				t.Errorf("step %d, start/end %v: %v, want %v", st, se, got, w)
			}
			if st != 1 {
				continue
			}
			// Steps left out are 1.
			m, err = decodeGraph(t, graph([]int64{1, 1, 4}, map[string][]int64{"e": data, "st": {se[0]}, "en": {se[1]}, "ax": {0}},
				op("Slice", []string{"e", "st", "en", "ax"}, "p"), op("Pad", []string{"x", "p"}, "y")))
			if err != nil {
				t.Errorf("no steps, start/end %v: %v", se, err)
			} else if got := m.Initializers["p"].Int; !slices.Equal(got, w) {
				t.Errorf("no steps, start/end %v: %v, want %v", se, got, w)
			}
		}
	}
}

// TestRangeExact checks an int64 Range against a walk of its definition
// (start, start+delta, ... while before limit) where the values are near
// the ends of int64, where a float64 count loses the last units.
func TestRangeExact(t *testing.T) {
	walk := func(start, limit, delta int64) []int64 {
		out := []int64{}
		for v := start; (delta > 0 && v < limit) || (delta < 0 && v > limit); {
			out = append(out, v)
			next, ok := checked.Add(int(v), int(delta))
			if !ok {
				break
			}
			v = int64(next)
		}
		return out
	}
	for _, c := range [][3]int64{
		{0, 1<<62 + 1, 1 << 62}, {math.MaxInt64 - 2, math.MaxInt64, 1}, {math.MinInt64, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64, math.MinInt64, math.MinInt64}, {math.MinInt64 + 3, math.MinInt64, -1}, {5, 5, 1}, {5, 0, 1}, {0, 7, 3}, {7, 0, -3}, {10, 2, -3}, {-2, -9, -2},
		{0, MaxFoldElements, 1},
	} {
		mp := graph([]int64{1, 1, 4}, map[string][]int64{"a_s": {c[0]}, "b_s": {c[1]}, "d_s": {c[2]}},
			op("Range", []string{"a_s", "b_s", "d_s"}, "p"),
			op("Pad", []string{"x", "p"}, "y"))
		m, err := decodeGraph(t, mp)
		if err != nil {
			t.Errorf("range%v: %v", c, err)
			continue
		}
		if got, want := m.Initializers["p"].Int, walk(c[0], c[1], c[2]); !slices.Equal(got, want) {
			t.Errorf("range%v = %v, want %v", c, got, want)
		}
	}
	// One more than the folding budget is refused.
	if _, err := decodeGraph(t, graph([]int64{1, 1, 4}, map[string][]int64{"a_s": {0}, "b_s": {MaxFoldElements + 1}, "d_s": {1}},
		op("Range", []string{"a_s", "b_s", "d_s"}, "p"), op("Pad", []string{"x", "p"}, "y"))); err == nil || !strings.Contains(err.Error(), `node "/p/Range"`) {
		t.Errorf("a Range of MaxFoldElements+1: %v", err)
	}
	// A float Range, doubled and cast: its values are start + i*delta
	// while before limit, walked here in float32.
	for _, c := range [][3]float32{{0.5, 2, 0.5}, {1, -2, -1}, {0, 0, 1}, {3, 1, 0.5}, {1, 2, 0}} {
		mp := graph([]int64{1, 1, 4}, nil,
			op("Range", []string{"fa", "fb", "fd"}, "f"), op("Mul", []string{"f", "ftwo"}, "f2"), op("Cast", []string{"f2"}, "p", intAttr("to", 7)),
			op("Pad", []string{"x", "p"}, "y"))
		m, err := decodeGraph(t, mp, tensorInit("fa", 1, nil, nil, []float32{c[0]}), tensorInit("fb", 1, nil, nil, []float32{c[1]}),
			tensorInit("fd", 1, nil, nil, []float32{c[2]}), tensorInit("ftwo", 1, []int64{1}, nil, []float32{2}))
		if c[2] == 0 {
			if err == nil || !strings.Contains(err.Error(), "delta must be non-zero") {
				t.Errorf("range%v: %v, want it refused", c, err)
			}
			continue
		}
		want := []int64{}
		for v := c[0]; (c[2] > 0 && v < c[1]) || (c[2] < 0 && v > c[1]); v += c[2] {
			want = append(want, int64(2*v))
		}
		if err != nil {
			t.Errorf("range%v: %v", c, err)
		} else if got := m.Initializers["p"].Int; !slices.Equal(got, want) {
			t.Errorf("2 * range%v = %v, want %v", c, got, want)
		}
	}
}

// TestFoldRefusals checks that folds whose exact result does not fit
// (int64 arithmetic that overflows, a tensor whose shape is beyond the
// bound though it holds no element) are refused naming the node or the
// initializer and what overflowed, instead of computing a wrapped number.
func TestFoldRefusals(t *testing.T) {
	cases := []struct {
		what  string
		mp    *onnxpb.ModelProto
		extra []*onnxpb.TensorProto
		wants []string
	}{
		{"Add overflows", graph([]int64{1, 1, 4}, map[string][]int64{"a": {math.MaxInt64}, "b": {1}},
			op("Add", []string{"a", "b"}, "p"), op("Pad", []string{"x", "p"}, "y")), nil,
			[]string{`node "/p/Add" (Add)`, "9223372036854775807 + 1 overflows int64"}},
		{"Mul overflows", graph([]int64{1, 1, 4}, map[string][]int64{"a": {1 << 32}, "b": {1 << 32}},
			op("Mul", []string{"a", "b"}, "p"), op("Pad", []string{"x", "p"}, "y")), nil,
			[]string{`node "/p/Mul" (Mul)`, "4294967296 * 4294967296 overflows int64"}},
		{"Sub overflows", graph([]int64{1, 1, 4}, map[string][]int64{"a": {math.MinInt64}, "b": {1}},
			op("Sub", []string{"a", "b"}, "p"), op("Pad", []string{"x", "p"}, "y")), nil,
			[]string{`node "/p/Sub" (Sub)`, "-9223372036854775808 - 1 overflows int64"}},
		{"Reshape with two -1", graph([]int64{1, 1, 4}, map[string][]int64{"d": {1, 2, 3, 4}, "sh": {-1, -1}},
			op("Reshape", []string{"d", "sh"}, "p"), op("Pad", []string{"x", "p"}, "y")), nil,
			[]string{`node "/p/Reshape" (Reshape)`, "more than one -1"}},
		{"Reshape copying a dimension past the rank", graph([]int64{1, 1, 4}, map[string][]int64{"d": {1, 2, 3, 4}, "sh": {4, 0}},
			op("Reshape", []string{"d", "sh"}, "p"), op("Pad", []string{"x", "p"}, "y")), nil,
			[]string{`node "/p/Reshape" (Reshape)`, "copies dimension 1 (a 0) of an input of rank 1"}},
		{"Transpose perm beyond the rank", graph([]int64{1, 1, 4}, map[string][]int64{"d": {1, 2, 3, 4}, "sh": {2, 2}},
			op("Reshape", []string{"d", "sh"}, "r"), op("Transpose", []string{"r"}, "p", intsAttr1("perm", 0, 2)), op("Pad", []string{"x", "p"}, "y")), nil,
			[]string{`node "/p/Transpose" (Transpose)`, "not a permutation of 0..1"}},
		{"Cast without to", graph([]int64{1, 1, 4}, map[string][]int64{"d": {1, 2}},
			op("Cast", []string{"d"}, "p"), op("Pad", []string{"x", "p"}, "y")), nil,
			[]string{`node "/p/Cast" (Cast)`, "cast to data type -1 is not accepted"}},
		{"Cast of 2^63 to int64", graph([]int64{1, 1, 4}, nil, op("Cast", []string{"f"}, "p", intAttr("to", 7)), op("Pad", []string{"x", "p"}, "y")),
			[]*onnxpb.TensorProto{tensorInit("f", 1, []int64{1}, nil, []float32{1 << 63})},
			[]string{`node "/p/Cast" (Cast)`, "cannot be cast to int64"}},
		{"empty tensor of a huge shape", graph([]int64{1, 1, 4}, map[string][]int64{"ax": {0}},
			op("Concat", []string{"e", "e"}, "c", intAttr("axis", 0)), op("Pad", []string{"x", "c"}, "y")),
			[]*onnxpb.TensorProto{tensorInit("e", 7, []int64{0, 1 << 20, 1 << 20}, nil, nil)},
			[]string{`initializer "e"`, "more than the 268435456 elements accepted"}},
	}
	for _, c := range cases {
		_, err := decodeGraph(t, c.mp, c.extra...)
		if err == nil {
			t.Errorf("%s: accepted", c.what)
			continue
		}
		for _, s := range append(c.wants, "hostile.onnx") {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not say %q", c.what, err, s)
			}
		}
	}
}

// TestPanicNet checks the last-resort net: a fold or a conversion that
// panics (here on purpose, reading past a slice) returns an error naming
// the node, and Decode and ToSpec go on returning errors, not panics.
func TestPanicNet(t *testing.T) {
	n := &node{name: "/blk/Slice", op: "Slice"}
	_, err := foldNode(func(*folder, *node, []*Tensor) (Tensor, error) {
		var s []int64
		return Tensor{Int: s[:1]}, nil
	}, &folder{}, n, nil, 3)
	if err == nil || !strings.Contains(err.Error(), `node "/blk/Slice" (Slice)`) || !strings.Contains(err.Error(), "internal error") {
		t.Errorf("a panicking fold: %v, want an error naming the node", err)
	}
	c := &converter{}
	err = c.handle(func(*converter, int, *Node) error {
		var m map[string]int
		m["x"]++
		return nil
	}, 0, &Node{Name: "/blk/Conv", OpType: "Conv"})
	if err == nil || !strings.Contains(err.Error(), `node "/blk/Conv" (Conv)`) || !strings.Contains(err.Error(), "internal error") {
		t.Errorf("a panicking conversion: %v, want an error naming the node", err)
	}
	if _, _, err := ToSpec(nil); err == nil {
		t.Error("ToSpec(nil) accepted")
	}
}

// TestTensorLen checks Len against the product in math/big: -1 when a
// dimension is negative or the product does not fit an int.
func TestTensorLen(t *testing.T) {
	for _, shape := range [][]int{{}, {2, 3}, {0, 1 << 62, 4}, {1 << 32, 1 << 32}, {1 << 31, 1 << 31, 2}, {1 << 31, 1 << 31}, {-1, 2}, {3, math.MaxInt64}} {
		want := big.NewInt(1)
		neg := false
		for _, d := range shape {
			want.Mul(want, big.NewInt(int64(d)))
			neg = neg || d < 0
		}
		w := int64(-1)
		if !neg && want.IsInt64() {
			w = want.Int64()
		}
		if got := (Tensor{Shape: shape}).Len(); int64(got) != w {
			t.Errorf("Len of %v = %d, want %d", shape, got, w)
		}
	}
}

// TestFoldEdges checks folds at the edges of what they accept, against
// the operators' definitions on small tensors: an axis or an index at
// -size and size-1 is accepted and one past either end refused; the
// Constant forms; ConstantOfShape's dimensions from 0 to
// MaxFoldElements.
func TestFoldEdges(t *testing.T) {
	data := []int64{0, 1, 2, 3, 4, 5} // of shape (2, 3)
	floatAttr := func(name string, v float32) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
	}
	floatsAttr := func(name string, v ...float32) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: v}
	}
	gather := func(axis int64, idx ...int64) *onnxpb.ModelProto {
		return graph([]int64{1, 1, 4}, map[string][]int64{"d": data, "sh": {2, 3}, "i": idx, "fl": {-1}},
			op("Reshape", []string{"d", "sh"}, "d2"), op("Gather", []string{"d2", "i"}, "g", intAttr("axis", axis)),
			op("Reshape", []string{"g", "fl"}, "p"), op("Pad", []string{"x", "p"}, "y"))
	}
	cases := []struct {
		what string
		mp   *onnxpb.ModelProto
		want []int64 // nil: refused
	}{
		// Gather on axis 1 of [[0 1 2] [3 4 5]] takes columns; axis 0 rows.
		{"Gather axis 1", gather(1, 2, -3), []int64{2, 0, 5, 3}},
		{"Gather axis -1", gather(-1, 0, -1), []int64{0, 2, 3, 5}},
		{"Gather axis -2", gather(-2, 1), []int64{3, 4, 5}},
		{"Gather axis 2", gather(2, 0), nil},
		{"Gather axis -3", gather(-3, 0), nil},
		{"Gather index 3 of 3", gather(1, 3), nil},
		{"Gather index -4 of 3", gather(1, -4), nil},
		{"Gather index -2 of 2", gather(0, -2), []int64{0, 1, 2}},
		{"Gather index 2 of 2", gather(0, 2), nil},
		{"Constant value_int", graph([]int64{1, 1, 4}, nil, op("Constant", nil, "p", intAttr("value_int", -7)), op("Pad", []string{"x", "p"}, "y")), []int64{-7}},
		{"Constant value_float, cast", graph([]int64{1, 1, 4}, nil, op("Constant", nil, "f", floatAttr("value_float", -2.5)),
			op("Cast", []string{"f"}, "p", intAttr("to", 7)), op("Pad", []string{"x", "p"}, "y")), []int64{-2}},
		{"Constant value_floats, cast", graph([]int64{1, 1, 4}, nil, op("Constant", nil, "f", floatsAttr("value_floats", 1.5, 3)),
			op("Cast", []string{"f"}, "p", intAttr("to", 7)), op("Pad", []string{"x", "p"}, "y")), []int64{1, 3}},
		{"Constant value_int given as a float", graph([]int64{1, 1, 4}, nil, op("Constant", nil, "p", floatAttr("value_int", 1)), op("Pad", []string{"x", "p"}, "y")), nil},
		{"ConstantOfShape 0", graph([]int64{1, 1, 4}, map[string][]int64{"s": {0}}, op("ConstantOfShape", []string{"s"}, "f"),
			op("Cast", []string{"f"}, "p", intAttr("to", 7)), op("Pad", []string{"x", "p"}, "y")), []int64{}},
		{"ConstantOfShape -1", graph([]int64{1, 1, 4}, map[string][]int64{"s": {-1}}, op("ConstantOfShape", []string{"s"}, "p"), op("Pad", []string{"x", "p"}, "y")), nil},
		{"ConstantOfShape beyond MaxFoldElements", graph([]int64{1, 1, 4}, map[string][]int64{"s": {MaxFoldElements + 1}}, op("ConstantOfShape", []string{"s"}, "p"), op("Pad", []string{"x", "p"}, "y")), nil},
	}
	for _, c := range cases {
		m, err := decodeGraph(t, c.mp)
		switch {
		case c.want == nil && err == nil:
			t.Errorf("%s: accepted, %v", c.what, m.Initializers["p"].Int)
		case c.want == nil:
			if !strings.Contains(err.Error(), "hostile.onnx") || !strings.Contains(err.Error(), "node \"/") || strings.Contains(err.Error(), "internal error") {
				t.Errorf("%s: error %q does not name the file and the node", c.what, err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.what, err)
		case !slices.Equal(m.Initializers["p"].Int, c.want):
			t.Errorf("%s: %v, want %v", c.what, m.Initializers["p"].Int, c.want)
		}
	}
	// ConstantOfShape at the bound: MaxFoldElements zeros.
	m, err := decodeGraph(t, graph([]int64{1, 1, 4}, map[string][]int64{"s": {MaxFoldElements}}, op("ConstantOfShape", []string{"s"}, "p"), op("Pad", []string{"x", "p"}, "y")))
	if err != nil || len(m.Initializers["p"].Float) != MaxFoldElements {
		t.Errorf("ConstantOfShape of MaxFoldElements: %v", err)
	}
}

// TestFoldShapes checks the shapes and values of the folds that move
// axes, against their definitions on a (2, 3) tensor [[0 1 2] [3 4 5]]:
// Unsqueeze inserts ones, Squeeze drops the named ones or all, Concat
// joins along an axis (row by row off axis 0), Gather with 2-d indices
// nests the picked rows; shapes that do not fit are refused.
func TestFoldShapes(t *testing.T) {
	inits := map[string][]int64{"d": {0, 1, 2, 3, 4, 5}, "sh": {2, 3}, "e": {10, 11}, "sh21": {2, 1}, "sh13": {1, 3}, "sh31": {3, 1},
		"sh22": {2, 2}, "i": {1, 0, 0, 1}, "ax1": {1}, "axm1": {-1}, "ax0": {0}, "sh161": {1, 6, 1}}
	mk := func(nodes ...*onnxpb.NodeProto) *onnxpb.ModelProto {
		nodes = append([]*onnxpb.NodeProto{op("Reshape", []string{"d", "sh"}, "d2")}, nodes...)
		return graph([]int64{1, 1, 4}, inits, append(nodes, op("Pad", []string{"x", "p"}, "y"))...)
	}
	cases := []struct {
		what  string
		mp    *onnxpb.ModelProto
		shape []int // nil: refused
		want  []int64
	}{
		{"Unsqueeze axis 1", mk(op("Unsqueeze", []string{"d2", "ax1"}, "p")), []int{2, 1, 3}, []int64{0, 1, 2, 3, 4, 5}},
		{"Unsqueeze axis -1", mk(op("Unsqueeze", []string{"d2", "axm1"}, "p")), []int{2, 3, 1}, []int64{0, 1, 2, 3, 4, 5}},
		{"Squeeze axis 0", mk(op("Reshape", []string{"d", "sh161"}, "r"), op("Squeeze", []string{"r", "ax0"}, "p")), []int{6, 1}, []int64{0, 1, 2, 3, 4, 5}},
		{"Squeeze all", mk(op("Reshape", []string{"d", "sh161"}, "r"), op("Squeeze", []string{"r"}, "p")), []int{6}, []int64{0, 1, 2, 3, 4, 5}},
		{"Squeeze an axis of 6", mk(op("Reshape", []string{"d", "sh161"}, "r"), op("Squeeze", []string{"r", "ax1"}, "p")), nil, nil},
		{"Concat axis 1", mk(op("Reshape", []string{"e", "sh21"}, "e2"), op("Concat", []string{"d2", "e2"}, "p", intAttr("axis", 1))), []int{2, 4}, []int64{0, 1, 2, 10, 3, 4, 5, 11}},
		{"Concat axis 0", mk(op("Reshape", []string{"e", "sh21"}, "e2"), op("Concat", []string{"d2", "d2"}, "p", intAttr("axis", 0))), []int{4, 3}, []int64{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}},
		{"Concat of ranks 2 and 1", mk(op("Concat", []string{"d2", "d2", "e"}, "p", intAttr("axis", 1))), nil, nil},
		{"Concat of 3 x 1 to 2 x 3", mk(op("ConstantOfShape", []string{"sh31"}, "z"), op("Cast", []string{"z"}, "zi", intAttr("to", 7)),
			op("Concat", []string{"d2", "zi"}, "p", intAttr("axis", 1))), nil, nil},
		{"Gather 2-d indices", mk(op("Reshape", []string{"i", "sh22"}, "i2"), op("Gather", []string{"d2", "i2"}, "p")), []int{2, 2, 3},
			[]int64{3, 4, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5}},
	}
	for _, c := range cases {
		m, err := decodeGraph(t, c.mp)
		switch {
		case c.shape == nil && err == nil:
			t.Errorf("%s: accepted, shape %v", c.what, m.Initializers["p"].Shape)
		case c.shape == nil:
			if !strings.Contains(err.Error(), `node "/p/`) || strings.Contains(err.Error(), "internal error") {
				t.Errorf("%s: error %q does not name the node", c.what, err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.what, err)
		case !slices.Equal(m.Initializers["p"].Shape, c.shape) || !slices.Equal(m.Initializers["p"].Int, c.want):
			t.Errorf("%s: shape %v %v, want %v %v", c.what, m.Initializers["p"].Shape, m.Initializers["p"].Int, c.shape, c.want)
		}
	}
	// A Reshape to exactly the budget is accepted, and two initializers of
	// half the budget each concatenate to exactly the budget.
	m, err := decodeGraph(t, graph([]int64{1, 1, 4}, map[string][]int64{"a": make([]int64, MaxFoldElements), "sh": {MaxFoldElements, 1}},
		op("Reshape", []string{"a", "sh"}, "p"), op("Pad", []string{"x", "p"}, "y")))
	if err != nil || !slices.Equal(m.Initializers["p"].Shape, []int{MaxFoldElements, 1}) {
		t.Errorf("a Reshape to MaxFoldElements: %v", err)
	}
	half := make([]int64, MaxFoldElements/2)
	m, err = decodeGraph(t, graph([]int64{1, 1, 4}, map[string][]int64{"a": half, "b": half}, op("Concat", []string{"a", "b"}, "p", intAttr("axis", 0)), op("Pad", []string{"x", "p"}, "y")))
	if err != nil || len(m.Initializers["p"].Int) != MaxFoldElements {
		t.Errorf("a Concat of MaxFoldElements: %v", err)
	}
}
