package graph

import (
	"fmt"
	"math/rand/v2"
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
		in    int // number of inputs
	}{
		{"conv1d", map[string]any{"out": 4, "kernel": 3, "stride": 2, "dilation": 2, "padding": []int64{3, 1}, "groups": 2}, 1},
		{"conv1d", map[string]any{"out": 2, "kernel": 4, "padding": []int64{1, 2}}, 1},
		{"pad", map[string]any{"left": 2, "right": 3, "value": 1.5}, 1},
		{"maxpool1d", map[string]any{"kernel": 3, "stride": 2, "padding": 1}, 1},
		{"avgpool1d", map[string]any{"kernel": 4, "stride": 3, "padding": 2}, 1},
		{"batchnorm1d", nil, 1},
		{"relu", nil, 1}, {"gelu", nil, 1}, {"silu", nil, 1}, {"sigmoid", nil, 1}, {"tanh", nil, 1},
		{"leakyrelu", map[string]any{"slope": 0.2}, 1},
		{"dropout", nil, 1}, {"softmax", nil, 1}, {"add", nil, 2}, {"concat", nil, 2},
		{"globalavgpool", nil, 1}, {"globalmaxpool", nil, 1}, {"flatten", nil, 1},
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
		out, err := op.Shape(a, in)
		if err != nil {
			t.Fatal(err)
		}
		call := &Call{A: a, In: in, Out: out, B: 1, Y: make([]float32, out.Size())}
		for range in {
			x := make([]float32, 2*13)
			for j := range x {
				x[j] = float32(rng.NormFloat64())
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
		if !f.Local && out.T != 1 {
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

func prod(s []int) int {
	p := 1
	for _, d := range s {
		p *= d
	}
	return p
}
