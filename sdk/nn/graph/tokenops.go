package graph

import (
	"fmt"
	"sync"

	"github.com/uaxai/uaxai/sdk/nn/ops"
)

// The ops of a Transformer. A value is C rows of T values; after a
// transpose of a patch convolution's (features, tokens) output, C are the
// tokens and T the features, PyTorch's (batch, tokens, features) with
// batch_first. None of these ops is Local but the pure pointwise ones: a
// network's windowed recomputation (window.go) computes them in full.

// shapeAttr is an attribute [rows, columns] giving the shape of a
// broadcast operand: each 1 or the input's, [0, 0] for none.
func shapeAttr(name, what string) AttrSpec {
	return AttrSpec{Name: name, Kind: AttrPair, Default: []int64{0, 0}, ok: pairIn0(MaxOut),
		Accepts: fmt.Sprintf("[rows, columns] of the %s, each 1 or the input's (broadcast), or [0, 0] for none", what)}
}

// bcastShape checks that an operand of shape s (rows, columns) broadcasts
// to out, a zero shape meaning none.
func bcastShape(kind, what string, s [2]int, out Shape) error {
	if s == [2]int{0, 0} {
		return nil
	}
	if (s[0] != 1 && s[0] != out.C) || (s[1] != 1 && s[1] != out.T) {
		return fmt.Errorf("%s on input %s: its %s is %d x %d; accepted: rows 1 or %d, columns 1 or %d", kind, out, what, s[0], s[1], out.C, out.T)
	}
	return nil
}

func pairOf(a Attrs, name string) [2]int {
	l, r := a.Pair(name)
	return [2]int{l, r}
}

// affineOf is the affine op's kernel for attributes a on input in.
func affineOf(a Attrs, in Shape) ops.Affine {
	w, b := pairOf(a, "weight"), pairOf(a, "bias")
	return ops.Affine{R: in.C, N: in.T, WR: w[0], WN: w[1], CR: b[0], CN: b[1], S: float32(a.Float("scale")), T: float32(a.Float("shift"))}
}

// affineParams are the affine op's weight and bias, where present.
func affineParams(c *Call) (w, b []float32, dw, db []float32) {
	k := 0
	if pairOf(c.A, "weight") != [2]int{0, 0} {
		w, dw = c.P[k], c.dp(k)
		k++
	}
	if pairOf(c.A, "bias") != [2]int{0, 0} {
		b, db = c.P[k], c.dp(k)
	}
	return w, b, dw, db
}

// joinPositions is the Positions of an elementwise op of broadcast
// inputs: the positions of the inputs that have more than one along
// their time axis, which must agree (an input of one is broadcast).
func joinPositions(kind string) func(Attrs, []Shape, []Pos) (Pos, error) {
	return func(_ Attrs, in []Shape, pos []Pos) (Pos, error) {
		var out Pos
		found := false
		for j, p := range pos {
			if p.Rows != pos[0].Rows {
				return Pos{}, fmt.Errorf("%s of a value of rows of tokens and one of steps", kind)
			}
			n := in[j].T
			if p.Rows {
				n = in[j].C
			}
			switch {
			case n == 1 && len(pos) > 1:
			case !found:
				out, found = p, true
			case p != out:
				return Pos{}, fmt.Errorf("%s of values whose positions lie apart in the input (%+v and %+v)", kind, out.Span, p.Span)
			}
		}
		if !found {
			return pos[0], nil
		}
		return out, nil
	}
}

// binaryOp is an elementwise op of two inputs, broadcast (ops.Binary).
func binaryOp(kind string, op byte) *Op {
	bc := func(c *Call) ops.Broadcast {
		return ops.Broadcast{R: c.Out.C, N: c.Out.T, AR: c.In[0].C, AN: c.In[0].T, BR: c.In[1].C, BN: c.In[1].T, Op: op}
	}
	return &Op{
		Kind: kind, Inputs: 2,
		Shape: func(_ Attrs, in []Shape) (Shape, error) {
			out := Shape{max(in[0].C, in[1].C), max(in[0].T, in[1].T)}
			for _, s := range in {
				if (s.C != 1 && s.C != out.C) || (s.T != 1 && s.T != out.T) {
					return Shape{}, fmt.Errorf("%s of %s and %s: needs shapes that broadcast (each axis equal, or 1 in one of them)", kind, in[0], in[1])
				}
			}
			return out, nil
		},
		Field:     notLocal,
		Positions: joinPositions(kind),
		Cost:      func(_ Attrs, _ []Shape, out Shape) float64 { return float64(out.Size()) },
		Forward:   func(c *Call) { ops.Binary(bc(c), c.Y, c.X[0], c.X[1]) },
		Backward:  func(c *Call) { ops.BinaryBackward(bc(c), c.DX[0], c.DX[1], c.DY, c.X[0], c.X[1]) },
	}
}

// attnScratch holds the float64 scratch of attention calls.
var attnScratch sync.Pool

func attention(a Attrs, in Shape) ops.Attention {
	return ops.Attention{L: in.C, E: in.T, Heads: a.Int("heads")}
}

func attnCall(c *Call, f func(at ops.Attention, s []float64)) {
	at := attention(c.A, c.In[0])
	n := at.ScratchLen()
	p, _ := attnScratch.Get().(*[]float64)
	if p == nil || len(*p) < n {
		s := make([]float64, n)
		p = &s
	}
	f(at, *p)
	attnScratch.Put(p)
}

func attnForward(c *Call, drop []float32) {
	attnCall(c, func(at ops.Attention, s []float64) {
		at.Forward(c.Y, c.X[0], c.P[0], c.P[1], c.P[2], c.P[3], drop, s)
	})
}

func attnBackward(c *Call, drop []float32) {
	attnCall(c, func(at ops.Attention, s []float64) {
		at.Backward(c.DX[0], c.dp(0), c.dp(1), c.dp(2), c.dp(3), c.DY, c.X[0], c.P[0], c.P[1], c.P[2], c.P[3], drop, s)
	})
}

func tokenOps() []*Op {
	return []*Op{
		{
			Kind: "transpose", Inputs: 1,
			Shape: func(_ Attrs, in []Shape) (Shape, error) { return Shape{in[0].T, in[0].C}, nil },
			Field: notLocal,
			Positions: func(_ Attrs, _ []Shape, pos []Pos) (Pos, error) {
				p := pos[0]
				p.Rows = !p.Rows // the steps become rows of tokens, and back
				return p, nil
			},
			Forward: func(c *Call) { ops.Transpose(c.Y, c.X[0], c.In[0].C, c.In[0].T) },
			Backward: func(c *Call) {
				if c.DX[0] != nil {
					ops.Transpose(c.DX[0], c.DY, c.Out.C, c.Out.T)
				}
			},
		},
		{
			Kind: "reshape", Inputs: 1,
			Attrs: []AttrSpec{
				intAttr("rows", 1, MaxOut, "graph.MaxOut", nil, ", the output's rows (channels)"),
				intAttr("cols", 1, MaxExtent, "graph.MaxExtent", nil, ", the output's columns (steps)"),
			},
			Shape: func(a Attrs, in []Shape) (Shape, error) {
				out := Shape{a.Int("rows"), a.Int("cols")}
				if out.Size() != in[0].Size() {
					return fail("reshape", in, "to %s: needs as many values (%d)", out, in[0].Size())
				}
				return out, nil
			},
			Field: notLocal,
			Positions: func(a Attrs, in []Shape, pos []Pos) (Pos, error) {
				if (Shape{a.Int("rows"), a.Int("cols")}) != in[0] {
					return Pos{}, fmt.Errorf("reshape of %s to %d x %d regroups its input's values", in[0], a.Int("rows"), a.Int("cols"))
				}
				return pos[0], nil
			},
			Forward:  copyForward,
			Backward: func(c *Call) { copy(c.DX[0], c.DY) },
		},
		{
			Kind:   "dense",
			Attrs:  []AttrSpec{intAttr("out", 1, MaxOut, "graph.MaxOut", nil, ", output features"), boolAttr("bias", true)},
			Inputs: 1,
			Params: func(a Attrs, in []Shape) []ParamSpec {
				p := []ParamSpec{{"weight", []int{a.Int("out"), in[0].T}, true}}
				if a.Bool("bias") {
					p = append(p, ParamSpec{"bias", []int{a.Int("out")}, true})
				}
				return p
			},
			Shape:     func(a Attrs, in []Shape) (Shape, error) { return Shape{in[0].C, a.Int("out")}, nil },
			Field:     notLocal,
			Positions: keepPositions("dense"),
			Cost: func(a Attrs, in []Shape, _ Shape) float64 {
				return 2 * float64(in[0].C*in[0].T*a.Int("out"))
			},
			Forward: func(c *Call) {
				var b []float32
				if len(c.P) > 1 {
					b = c.P[1]
				}
				ops.Linear{In: c.In[0].T, Out: c.Out.T}.Forward(c.Y, c.X[0], c.P[0], b)
			},
			Backward: func(c *Call) {
				var db []float32
				if len(c.P) > 1 {
					db = c.dp(1)
				}
				ops.Linear{In: c.In[0].T, Out: c.Out.T}.Backward(c.DX[0], c.dp(0), db, c.DY, c.X[0], c.P[0])
			},
		},
		{
			Kind: "layernorm",
			Attrs: []AttrSpec{{Name: "eps", Kind: AttrFloat, Default: 1e-5, Accepts: "a finite number >= 0",
				ok: func(v any) bool { return v.(float64) >= 0 }}},
			Inputs: 1,
			Params: func(_ Attrs, in []Shape) []ParamSpec {
				return []ParamSpec{{"weight", []int{in[0].T}, true}, {"bias", []int{in[0].T}, true}}
			},
			Shape:     sameShape,
			Field:     notLocal,
			Positions: samePositions,
			Cost:      func(_ Attrs, in []Shape, _ Shape) float64 { return 8 * float64(in[0].Size()) },
			Forward: func(c *Call) {
				ops.LayerNorm{N: c.In[0].T, Eps: c.A.Float("eps")}.Forward(c.Y, c.X[0], c.P[0], c.P[1])
			},
			Backward: func(c *Call) {
				ops.LayerNorm{N: c.In[0].T, Eps: c.A.Float("eps")}.Backward(c.DX[0], c.dp(0), c.dp(1), c.DY, c.X[0], c.P[0])
			},
		},
		{
			Kind: "attention",
			Attrs: []AttrSpec{
				intAttr("heads", 1, MaxOut, "graph.MaxOut", nil, ", dividing the features (columns)"),
				{Name: "dropout", Kind: AttrFloat, Default: 0.0, Accepts: "a number 0 <= p < 1 (on the attention weights, in training passes)",
					ok: func(v any) bool { return v.(float64) >= 0 && v.(float64) < 1 }},
			},
			Inputs: 1,
			Params: func(_ Attrs, in []Shape) []ParamSpec {
				E := in[0].T
				return []ParamSpec{{"in_proj_weight", []int{3 * E, E}, true}, {"in_proj_bias", []int{3 * E}, true},
					{"out_proj.weight", []int{E, E}, true}, {"out_proj.bias", []int{E}, true}}
			},
			Shape: func(a Attrs, in []Shape) (Shape, error) {
				if err := attention(a, in[0]).Check(); err != nil {
					return fail("attention", in, "%v", err)
				}
				return in[0], nil
			},
			Field:     notLocal,
			Positions: keepPositions("attention"),
			Cost: func(a Attrs, in []Shape, _ Shape) float64 {
				L, E := float64(in[0].C), float64(in[0].T)
				return 2*(4*L*E*E) + 2*(2*L*L*E)
			},
			Forward:  func(c *Call) { attnForward(c, nil) },
			Backward: func(c *Call) { attnBackward(c, nil) },
			State: func(a Attrs, in []Shape, B int) int {
				if a.Float("dropout") == 0 {
					return 0
				}
				return B * a.Int("heads") * in[0].C * in[0].C
			},
			TrainForward: func(c *Call) {
				var drop []float32
				if p := c.A.Float("dropout"); p > 0 {
					drop = c.State
					ops.DropoutMask(drop, p, c.Rand)
				}
				attnForward(c, drop)
			},
			TrainBackward: func(c *Call) {
				var drop []float32
				if c.A.Float("dropout") > 0 {
					drop = c.State
				}
				attnBackward(c, drop)
			},
		},
		{
			Kind: "matmul", Inputs: 2,
			Shape: func(_ Attrs, in []Shape) (Shape, error) {
				if in[0].T != in[1].C {
					return Shape{}, fmt.Errorf("matmul of %s and %s: needs the first's columns equal to the second's rows", in[0], in[1])
				}
				return Shape{in[0].C, in[1].T}, nil
			},
			Field: notLocal,
			Cost: func(_ Attrs, in []Shape, _ Shape) float64 {
				return 2 * float64(in[0].C*in[0].T*in[1].T)
			},
			Forward: func(c *Call) {
				ops.MatMul{M: c.In[0].C, K: c.In[0].T, N: c.In[1].T}.Forward(c.Y, c.X[0], c.X[1])
			},
			Backward: func(c *Call) {
				ops.MatMul{M: c.In[0].C, K: c.In[0].T, N: c.In[1].T}.Backward(c.DX[0], c.DX[1], c.DY, c.X[0], c.X[1])
			},
		},
		binaryOp("sub", '-'),
		binaryOp("mul", '*'),
		binaryOp("div", '/'),
		{
			Kind: "affine",
			Attrs: []AttrSpec{
				shapeAttr("weight", "multiplier"),
				shapeAttr("bias", "addend"),
				{Name: "scale", Kind: AttrFloat, Default: 1.0, Accepts: "a finite number"},
				{Name: "shift", Kind: AttrFloat, Default: 0.0, Accepts: "a finite number"},
			},
			Inputs: 1,
			Params: func(a Attrs, _ []Shape) []ParamSpec {
				var p []ParamSpec
				if w := pairOf(a, "weight"); w != [2]int{0, 0} {
					p = append(p, ParamSpec{"weight", []int{w[0], w[1]}, true})
				}
				if b := pairOf(a, "bias"); b != [2]int{0, 0} {
					p = append(p, ParamSpec{"bias", []int{b[0], b[1]}, true})
				}
				return p
			},
			Shape: func(a Attrs, in []Shape) (Shape, error) {
				for _, k := range []string{"weight", "bias"} {
					if err := bcastShape("affine", k, pairOf(a, k), in[0]); err != nil {
						return Shape{}, err
					}
				}
				return in[0], nil
			},
			Field:     notLocal,
			Positions: samePositions,
			Cost:      func(_ Attrs, in []Shape, _ Shape) float64 { return 2 * float64(in[0].Size()) },
			Forward: func(c *Call) {
				w, b, _, _ := affineParams(c)
				affineOf(c.A, c.In[0]).Forward(c.Y, c.X[0], w, b)
			},
			Backward: func(c *Call) {
				w, _, dw, db := affineParams(c)
				affineOf(c.A, c.In[0]).Backward(c.DX[0], dw, db, c.DY, c.X[0], w)
			},
		},
		{
			Kind: "pow", Inputs: 1, Pointwise: true,
			Attrs:   []AttrSpec{{Name: "exponent", Kind: AttrFloat, Accepts: "a finite number"}},
			Shape:   sameShape,
			Field:   func(Attrs) Field { return identityField },
			Forward: func(c *Call) { ops.Pow(c.Y, c.X[0], c.A.Float("exponent")) },
			Backward: func(c *Call) {
				if c.DX[0] != nil {
					ops.PowBackward(c.DX[0], c.DY, c.X[0], c.A.Float("exponent"))
				}
			},
		},
		pointwiseOp("sqrt", ops.Sqrt, ops.SqrtBackward),
		pointwiseOp("erf", ops.Erf, ops.ErfBackward),
		pointwiseOp("gelu_tanh", ops.GELUTanh, ops.GELUTanhBackward),
		{
			Kind: "reducemean", Inputs: 1,
			Attrs: []AttrSpec{intAttr("axis", 0, 1, "1", nil, " (0: the mean of the rows, 1 x columns; 1: of each row, rows x 1)")},
			Shape: func(a Attrs, in []Shape) (Shape, error) {
				if a.Int("axis") == 0 {
					return Shape{1, in[0].T}, nil
				}
				return Shape{in[0].C, 1}, nil
			},
			Field: notLocal,
			Positions: func(a Attrs, _ []Shape, pos []Pos) (Pos, error) {
				if (a.Int("axis") == 0) == pos[0].Rows {
					return Pos{}, fmt.Errorf("reducemean over axis %d averages its input's positions", a.Int("axis"))
				}
				return pos[0], nil
			},
			Forward: func(c *Call) {
				if c.A.Int("axis") == 0 {
					ops.MeanRows(c.Y, c.X[0], c.In[0].C, c.In[0].T)
					return
				}
				ops.GlobalAvgPool(c.Y, c.X[0], c.In[0].T)
			},
			Backward: func(c *Call) {
				if c.DX[0] == nil {
					return
				}
				if c.A.Int("axis") == 0 {
					ops.MeanRowsBackward(c.DX[0], c.DY, c.In[0].C, c.In[0].T)
					return
				}
				ops.GlobalAvgPoolBackward(c.DX[0], c.DY, c.In[0].T)
			},
		},
	}
}
