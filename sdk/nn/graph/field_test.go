package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFields: each op's receptive field and pointwise flag, probed on the
// op itself: raising input step u (of one channel for a pointwise op, of
// every channel otherwise) changes exactly the output steps t with
// t*Stride - PadLeft + k*Dilation = u for some k < Kernel (a subset for
// max pooling, whose other windows keep their maximum); ops that are not
// local are those whose one output step reads every input step.
func TestFields(t *testing.T) {
	cases := []struct {
		op    string
		attrs map[string]any
		in    int     // number of inputs
		ins   []Shape // their shapes, if not 2 x 13 each
		pos   bool    // positive inputs (sqrt)
	}{
		{op: "conv1d", attrs: map[string]any{"out": 4, "kernel": 3, "stride": 2, "dilation": 2, "padding": []int64{3, 1}, "groups": 2}, in: 1},
		{op: "conv1d", attrs: map[string]any{"out": 2, "kernel": 4, "padding": []int64{1, 2}}, in: 1},
		{op: "pad", attrs: map[string]any{"left": 2, "right": 3, "value": 1.5}, in: 1},
		{op: "maxpool1d", attrs: map[string]any{"kernel": 3, "stride": 2, "padding": 1}, in: 1},
		{op: "avgpool1d", attrs: map[string]any{"kernel": 4, "stride": 3, "padding": 2}, in: 1},
		{op: "batchnorm1d", attrs: nil, in: 1},
		{op: "relu", attrs: nil, in: 1}, {op: "gelu", attrs: nil, in: 1}, {op: "silu", attrs: nil, in: 1}, {op: "sigmoid", attrs: nil, in: 1}, {op: "tanh", attrs: nil, in: 1},
		{op: "leakyrelu", attrs: map[string]any{"slope": 0.2}, in: 1},
		{op: "dropout", attrs: nil, in: 1}, {op: "softmax", attrs: nil, in: 1}, {op: "add", attrs: nil, in: 2}, {op: "concat", attrs: nil, in: 2},
		{op: "globalavgpool", attrs: nil, in: 1}, {op: "globalmaxpool", attrs: nil, in: 1}, {op: "flatten", attrs: nil, in: 1},
		{op: "softmax", attrs: map[string]any{"axis": 1}, in: 1},
		{op: "transpose", in: 1}, {op: "reshape", attrs: map[string]any{"rows": 1, "cols": 26}, in: 1},
		{op: "dense", attrs: map[string]any{"out": 3}, in: 1}, {op: "layernorm", in: 1},
		{op: "attention", attrs: map[string]any{"heads": 1}, in: 1},
		{op: "matmul", in: 2, ins: []Shape{{2, 13}, {13, 3}}},
		{op: "sub", in: 2}, {op: "mul", in: 2}, {op: "div", in: 2, pos: true},
		{op: "sub", in: 2, ins: []Shape{{2, 13}, {2, 1}}}, {op: "div", in: 2, ins: []Shape{{2, 13}, {1, 13}}, pos: true},
		{op: "affine", attrs: map[string]any{"weight": []int64{1, 13}, "bias": []int64{2, 1}, "scale": 0.5, "shift": 1}, in: 1},
		{op: "pow", attrs: map[string]any{"exponent": 3}, in: 1}, {op: "sqrt", in: 1, pos: true},
		{op: "erf", in: 1}, {op: "gelu_tanh", in: 1},
		{op: "reducemean", attrs: map[string]any{"axis": 0}, in: 1}, {op: "reducemean", attrs: map[string]any{"axis": 1}, in: 1},
	}
	rng := rand.New(rand.NewPCG(9, 9))
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.op] = true
		op, _ := Ops().Lookup(c.op)
		a, err := op.resolve(c.attrs)
		if err != nil {
			t.Fatal(err)
		}
		in := make([]Shape, c.in)
		for i := range in {
			in[i] = Shape{2, 13}
		}
		if c.ins != nil {
			in = c.ins
		}
		out, err := op.Shape(a, in)
		if err != nil {
			t.Fatal(err)
		}
		call := &Call{A: a, In: in, Out: out, B: 1, Y: make([]float32, out.Size())}
		for _, s := range in {
			x := make([]float32, s.Size())
			for j := range x {
				x[j] = float32(rng.NormFloat64())
				if c.pos {
					x[j] = float32(math.Abs(float64(x[j]))) + 0.5
				}
			}
			call.X = append(call.X, x)
		}
		if op.Params != nil {
			for _, p := range op.Params(a, in) {
				v := make([]float32, p.Shape[len(p.Shape)-1]*prod(p.Shape[:len(p.Shape)-1]))
				for j := range v {
					v[j] = 0.5 + rng.Float32() // positive: a valid variance, no zero weight
				}
				call.P = append(call.P, v)
			}
		}
		if op.Indices != nil {
			call.Idx = make([]int32, op.Indices(a, in, out))
		}
		run := func() []float32 {
			op.Forward(call)
			return append([]float32(nil), call.Y...)
		}
		y0 := run()
		f := op.Field(a)
		what := fmt.Sprintf("%s %v", c.op, c.attrs)
		inField := func(s int, u int) bool {
			for k := range f.Kernel {
				if s*f.Stride-f.PadLeft+k*f.Dilation == u {
					return true
				}
			}
			return false
		}
		reads := make([]bool, out.T) // output steps that read some probed step
		for u := range 13 {
			touched := false
			x := call.X[0]
			for ch := range 2 {
				if !op.Pointwise && ch > 0 {
					break
				}
				// A pointwise op: raise channel ch; another: every channel,
				// by different amounts.
				old := append([]float32(nil), x...)
				for c2 := range 2 {
					if c2 == ch || !op.Pointwise {
						x[c2*13+u] += 5 * float32(c2+1)
					}
				}
				y := run()
				copy(x, old)
				for s := range out.T {
					any := false
					for o := range out.C {
						changed := y[o*out.T+s] != y0[o*out.T+s]
						any = any || changed
						if changed && f.Local && (!inField(s, u) || op.Pointwise && o != ch) {
							t.Errorf("%s: input (%d, %d) changes output (%d, %d) outside its field %+v (pointwise %v)", what, ch, u, o, s, f, op.Pointwise)
						}
					}
					if f.Local && inField(s, u) && !any && c.op != "maxpool1d" {
						t.Errorf("%s: input (%d, %d) leaves output step %d of its field %+v unchanged", what, ch, u, s, f)
					}
					reads[s] = reads[s] || any
					touched = touched || any
				}
			}
			if !f.Local && !touched && c.op != "globalmaxpool" {
				t.Errorf("%s: not local, yet input step %d changes no output", what, u)
			}
		}
		if !f.Local && !reads[0] {
			t.Errorf("%s: not local, yet its output reads no input step", what)
		}
		if !f.Local && out.T != 1 && !slices.Contains(tokenKinds, c.op) {
			t.Errorf("%s: not local but gives %s", what, out)
		}
	}
	// linear reads C x 1: not local, by the table; it refuses a sequence.
	lin, _ := Ops().Lookup("linear")
	a, _ := lin.resolve(map[string]any{"out": 2})
	if lin.Field(a).Local {
		t.Error("linear is local")
	}
	if _, err := lin.Shape(a, []Shape{{2, 13}}); err == nil {
		t.Error("linear accepts 2 x 13")
	}
	covered["linear"] = true
	for _, k := range Ops().Kinds() {
		if !covered[k] {
			t.Errorf("op %s has no field case", k)
		}
	}
}

// tokenKinds are the ops not Local whose output has steps: a
// Transformer's, computed in full after the first of them (window.go).
var tokenKinds = []string{"softmax", "transpose", "reshape", "dense", "layernorm", "attention", "matmul", "sub", "mul", "div", "affine", "reducemean"}

func prod(s []int) int {
	p := 1
	for _, d := range s {
		p *= d
	}
	return p
}
