package onnx

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	nngraph "github.com/uaxai/uaxai/sdk/nn/graph"
)

// ften is a float tensor of shape whose values are 0.1 k + shift for
// flat index k.
func ften(shift float32, shape ...int) *Tensor {
	t := &Tensor{DType: Float32, Shape: shape, Float: make([]float32, shapeLen(shape))}
	for k := range t.Float {
		t.Float[k] = 0.1*float32(k) + shift
	}
	return t
}

func shapeLen(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func newFolder() *folder {
	return &folder{b: budget{left: MaxFoldElements, max: MaxFoldElements, what: "test"}}
}

func closeTo(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i])-float64(want[i])) > 1e-5*math.Max(1, math.Abs(float64(want[i]))) {
			t.Fatalf("%s: value %d = %g, want %g", what, i, got[i], want[i])
		}
	}
}

// TestRegionMatMul: numpy's matmul, the leading axes broadcast (a 2-D
// right operand, a leading 1 against 3), written out; mismatched inner
// sizes, a rank-1 operand and leading axes that do not broadcast are
// refused.
func TestRegionMatMul(t *testing.T) {
	f := newFolder()
	mm := func(a, b *Tensor) (Tensor, error) { return f.matmul(&node{}, []*Tensor{a, b}) }
	want := func(a, b *Tensor, lead, sa, sb []int) []float32 {
		M, K, N := a.Shape[len(a.Shape)-2], a.Shape[len(a.Shape)-1], b.Shape[len(b.Shape)-1]
		var out []float32
		for l := range shapeLen(lead) {
			ia, ib := l*sa[0], l*sb[0]
			for m := range M {
				for n := range N {
					var s float64
					for k := range K {
						s += float64(a.Float[ia*M*K+m*K+k]) * float64(b.Float[ib*K*N+k*N+n])
					}
					out = append(out, float32(s))
				}
			}
		}
		return out
	}
	a, b := ften(-1, 2, 3, 4), ften(0.5, 4, 5)
	got, err := mm(a, b)
	if err != nil || len(got.Shape) != 3 || got.Shape[0] != 2 || got.Shape[1] != 3 || got.Shape[2] != 5 {
		t.Fatalf("(2,3,4) x (4,5): shape %v, %v", got.Shape, err)
	}
	closeTo(t, "(2,3,4) x (4,5)", got.Float, want(a, b, []int{2}, []int{1}, []int{0}))
	a, b = ften(0.3, 1, 2, 3), ften(-0.7, 3, 3, 2)
	got, err = mm(a, b)
	if err != nil || got.Shape[0] != 3 {
		t.Fatalf("(1,2,3) x (3,3,2): shape %v, %v", got.Shape, err)
	}
	closeTo(t, "(1,2,3) x (3,3,2)", got.Float, want(a, b, []int{3}, []int{0}, []int{1}))
	a, b = ften(0.2, 3, 4), ften(-0.3, 4, 2)
	got, err = mm(a, b)
	if err != nil || len(got.Shape) != 2 {
		t.Fatalf("(3,4) x (4,2): shape %v, %v", got.Shape, err)
	}
	closeTo(t, "(3,4) x (4,2)", got.Float, want(a, b, nil, []int{0}, []int{0}))
	a, b = ften(0.1, 2, 1, 2, 3), ften(-0.2, 1, 3, 3, 2) // leading (2, 1) and (1, 3): (2, 3)
	got, err = mm(a, b)
	if err != nil || len(got.Shape) != 4 || got.Shape[0] != 2 || got.Shape[1] != 3 {
		t.Fatalf("(2,1,2,3) x (1,3,3,2): shape %v, %v", got.Shape, err)
	}
	var w4 []float32
	for i := range 2 {
		for j := range 3 {
			ai := &Tensor{Float: a.Float[i*6 : (i+1)*6], Shape: []int{2, 3}}
			bj := &Tensor{Float: b.Float[j*6 : (j+1)*6], Shape: []int{3, 2}}
			w4 = append(w4, want(ai, bj, nil, []int{0}, []int{0})...)
		}
	}
	closeTo(t, "(2,1,2,3) x (1,3,3,2)", got.Float, w4)
	a, b = ften(0.1, 2, 3, 2, 3), ften(-0.2, 3, 2) // leading (2, 3) against none
	got, err = mm(a, b)
	if err != nil || !slices.Equal(got.Shape, []int{2, 3, 2, 2}) {
		t.Fatalf("(2,3,2,3) x (3,2): shape %v, %v", got.Shape, err)
	}
	closeTo(t, "(2,3,2,3) x (3,2)", got.Float, want(a, b, []int{6}, []int{1}, []int{0}))
	for _, c := range [][2]*Tensor{{ften(0, 2, 3), ften(0, 4, 2)}, {ften(0, 3), ften(0, 3, 2)}, {ften(0, 2, 2, 3), ften(0, 3, 3, 2)}} {
		if _, err := mm(c[0], c[1]); err == nil {
			t.Errorf("%v x %v accepted", c[0].Shape, c[1].Shape)
		}
	}
}

// TestRegionGemm: alpha A' B' + beta C with either operand transposed and
// C a scalar, a row, a column or a full matrix, written out; a C that
// does not broadcast and mismatched inner sizes are refused.
func TestRegionGemm(t *testing.T) {
	f := newFolder()
	A, B := ften(-0.4, 3, 2), ften(0.2, 4, 3) // used as Aᵀ (2, 3) and Bᵀ (3, 4)
	attrs := map[string]Attr{"transA": {Kind: AttrInt, Int: 1}, "transB": {Kind: AttrInt, Int: 1},
		"alpha": {Kind: AttrFloat, Float: 0.5}, "beta": {Kind: AttrFloat, Float: -2}}
	for _, C := range []*Tensor{ften(1.5), ften(0, 4), ften(0, 2, 1), ften(0, 2, 4)} {
		got, err := f.gemm(&node{attrs: attrs}, []*Tensor{A, B, C})
		if err != nil {
			t.Fatalf("C %v: %v", C.Shape, err)
		}
		var want []float32
		for m := range 2 {
			for n := range 4 {
				var s float64
				for k := range 3 {
					s += float64(A.Float[k*2+m]) * float64(B.Float[n*3+k])
				}
				var c float32
				switch len(C.Shape) {
				case 0:
					c = C.Float[0]
				case 1:
					c = C.Float[n]
				default:
					c = C.Float[min(m, C.Shape[0]-1)*C.Shape[1]+min(n, C.Shape[1]-1)]
				}
				want = append(want, float32(0.5*s-2*float64(c)))
			}
		}
		closeTo(t, "gemm with C "+shapeString(C.Shape), got.Float, want)
	}
	plain, err := f.gemm(&node{}, []*Tensor{ften(0, 2, 3), ften(1, 3, 2)})
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "gemm without attributes or C", plain.Float, []float32{
		0*1 + 0.1*1.2 + 0.2*1.4, 0*1.1 + 0.1*1.3 + 0.2*1.5,
		0.3*1 + 0.4*1.2 + 0.5*1.4, 0.3*1.1 + 0.4*1.3 + 0.5*1.5})
	if _, err := f.gemm(&node{attrs: attrs}, []*Tensor{A, B, ften(0, 3, 4)}); err == nil {
		t.Error("a C of (3, 4) for a (2, 4) product accepted")
	}
	if _, err := f.gemm(&node{}, []*Tensor{A, B}); err == nil {
		t.Error("(3, 2) x (4, 3) accepted")
	}
}

func shapeString(s []int) string {
	if len(s) == 0 {
		return "scalar"
	}
	out := ""
	for i, d := range s {
		if i > 0 {
			out += "x"
		}
		out += string(rune('0' + d))
	}
	return out
}

// TestRegionSoftmax: over each axis of a (2, 3, 4) tensor, exp(x) / sum
// exp(x) along that axis, written out; finite for values beyond exp's
// range.
func TestRegionSoftmax(t *testing.T) {
	f := newFolder()
	x := ften(-0.6, 2, 3, 4)
	st := strides(x.Shape)
	for ax := range 3 {
		got, err := f.softmax(&node{attrs: map[string]Attr{"axis": {Kind: AttrInt, Int: int64(ax - 3)}}}, []*Tensor{x})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(x.Float))
		forEach(x.Shape, func(i int, idx []int) {
			var s float64
			for k := range x.Shape[ax] {
				s += math.Exp(float64(x.Float[i+(k-idx[ax])*st[ax]]))
			}
			want[i] = float32(math.Exp(float64(x.Float[i])) / s)
		})
		closeTo(t, "softmax over axis "+shapeString([]int{ax}), got.Float, want)
	}
	big, err := f.softmax(&node{}, []*Tensor{ften(1000, 3)})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range big.Float {
		if math.IsNaN(float64(v)) || v <= 0 {
			t.Errorf("softmax of values near 1000: %v", big.Float)
		}
	}
}

// TestShapeOfVector: Shape of a (batch, C) value folds to [batch, C],
// the shape arithmetic on it (a Gather) folds after it, and a Reshape to
// it is the identity.
func TestShapeOfVector(t *testing.T) {
	b := newBuilder()
	b.node("", "ReduceMean", []string{"x"}, "m", intsAttr1("axes", 2), intAttr("keepdims", 0))
	b.node("", "Shape", []string{"m"}, "s")
	b.node("", "Gather", []string{"s", b.i64("both", 0, 1)}, "g", intAttr("axis", 0))
	b.node("", "Reshape", []string{"m", "g"}, "y")
	m := b.model(t)
	spec, _, err := ToSpec(m)
	if err != nil {
		t.Fatal(err)
	}
	if s := m.Initializers["s"]; !slices.Equal(s.Int, []int64{1, 2}) || !slices.Equal(m.Initializers["g"].Int, []int64{1, 2}) {
		t.Errorf("Shape folded to %v, its Gather to %v; want [1 2] (batch 1, 2 channels)", s.Int, m.Initializers["g"].Int)
	}
	if len(spec.Nodes) != 1 || spec.Nodes[0].Op != "globalavgpool" {
		t.Errorf("nodes %+v; want the mean alone (the Reshape to its own shape is nothing)", spec.Nodes)
	}
}

// TestOneHeadAttention: an nn.MultiheadAttention of one head, whose inner
// values have the shape of its input (so only the Softmax before it tells
// the block's end from its inner Transposes), imports as one attention
// node of one head and gives PyTorch's probabilities within 1e-5.
func TestOneHeadAttention(t *testing.T) {
	dir := golden.Dir(t, "transformer")
	spec, params, err := LoadSpec(filepath.Join(dir, "attention1.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	heads := 0
	for _, nd := range spec.Nodes {
		if nd.Op == "attention" {
			heads = int(nd.Attrs["heads"].(int64))
		}
	}
	if heads != 1 {
		t.Errorf("the attention node has %d heads, want 1", heads)
	}
	net, err := nngraph.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range net.Params() {
		copy(net.Theta[p.Offset:p.Offset+p.Len], params[p.Name].Float)
	}
	x := golden.Flat(golden.CSV32(t, filepath.Join(dir, "attention1_x.csv")))
	got := make([]float32, 2*3)
	if err := net.Forward(got, x); err != nil {
		t.Fatal(err)
	}
	var want []float32
	for _, r := range golden.CSV32(t, filepath.Join(dir, "attention1_probs.csv")) {
		want = append(want, r...)
	}
	closeTo(t, "probabilities", got, want)
}
