package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/uaxai/uaxai/sdk/nn/ops"
)

// This file converts a Transformer's export: values of (batch, tokens,
// features) as the graph's rows x columns, elementwise arithmetic with
// broadcasting, the shape arithmetic of a fixed-shape export folded at
// conversion, and nn.MultiheadAttention's block found and fused.

// regionOps evaluate the nodes of an attention block on numbers (the
// folded operators and the products and softmax of attention).
var regionOps = map[string]func(f *folder, n *node, in []*Tensor) (Tensor, error){
	"MatMul":  (*folder).matmul,
	"Gemm":    (*folder).gemm,
	"Softmax": (*folder).softmax,
}

func regionOp(op string) (func(f *folder, n *node, in []*Tensor) (Tensor, error), bool) {
	if e, ok := foldOps[op]; ok {
		return e, true
	}
	e, ok := regionOps[op]
	return e, ok
}

// asNode is n as the folder's node.
func asNode(n *Node) *node {
	return &node{name: n.Name, op: n.OpType, inputs: n.Inputs, outputs: n.Outputs, attrs: n.Attrs}
}

// batchSize is the export's fixed batch size, or an error saying why the
// shape arithmetic cannot be folded without it.
func (c *converter) batchSize(n *Node) (int, error) {
	b := c.m.Inputs[0].Shape[0]
	if b < 1 {
		return 0, nodeErr(n, "the shape arithmetic of the export needs a fixed batch size; accepted: torch.onnx.export without dynamic_axes on the batch")
	}
	return b, nil
}

// onnxShape is the ONNX shape of value v: (batch, c, t) or (batch, c).
func onnxShape(b int, v sval) []int {
	if v.rank == 2 {
		return []int{b, v.c}
	}
	return []int{b, v.c, v.t}
}

// shapeOf folds Shape of a converted value to a constant.
func (c *converter) shapeOf(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	b, err := c.batchSize(n)
	if err != nil {
		return err
	}
	t, err := c.f.shape(asNode(n), []*Tensor{{DType: Float32, Shape: onnxShape(b, x)}})
	if err != nil {
		return nodeErr(n, "%v", err)
	}
	c.m.Initializers[n.Outputs[0]] = t
	return nil
}

// foldConst evaluates node n when every input is a constant (the shape
// arithmetic of a fixed-shape export, once Shape is folded), and says
// whether it did.
func (c *converter) foldConst(n *Node) (bool, error) {
	eval, ok := foldOps[n.OpType]
	if !ok || len(n.Outputs) != 1 {
		return false, nil
	}
	in := make([]*Tensor, len(n.Inputs))
	for k, nm := range n.Inputs {
		if nm == "" {
			continue
		}
		t, ok := c.m.Initializers[nm]
		if !ok {
			return false, nil
		}
		in[k] = &t
	}
	cnt := inputCount[n.OpType]
	if len(in) < cnt[0] || len(in) > cnt[1] {
		return false, nodeErr(n, "%d inputs; accepted: %d to %d", len(in), cnt[0], cnt[1])
	}
	t, err := eval(c.f, asNode(n), in)
	if err != nil {
		return false, nodeErr(n, "folding the constant: %v", err)
	}
	c.m.Initializers[n.Outputs[0]] = t
	return true, nil
}

// runtimeShapeOp refuses an operator of shape arithmetic whose inputs are
// computed at run time (outside an attention block).
func runtimeShapeOp(c *converter, i int, n *Node) error {
	return nodeErr(n, "%s of a value computed at run time is supported only inside nn.MultiheadAttention's block (and on constants, folded at import)", n.OpType)
}

// bcastConst maps a constant t that an ONNX binary op broadcasts against
// value x to the graph's [rows, cols] of a broadcast operand, or says why
// not; scalar reports a constant of one value.
func bcastConst(x sval, t *Tensor) (rc [2]int64, scalar bool, err error) {
	if t.Len() == 1 {
		return [2]int64{1, 1}, true, nil
	}
	dims := slices.Clone(t.Shape)
	r := x.rank
	if len(dims) > r {
		return rc, false, fmt.Errorf("a constant of shape %v against a rank-%d value", t.Shape, r)
	}
	if len(dims) == r {
		if dims[0] != 1 {
			return rc, false, fmt.Errorf("a constant of shape %v has a batch axis of %d; accepted: 1", t.Shape, dims[0])
		}
		dims = dims[1:]
	}
	want := []int{x.c, x.t}[:r-1]
	for len(dims) < len(want) {
		dims = append([]int{1}, dims...)
	}
	for k, d := range dims {
		if d != 1 && d != want[k] {
			return rc, false, fmt.Errorf("a constant of shape %v does not broadcast against (batch, %v)", t.Shape, want)
		}
	}
	if r == 2 {
		return [2]int64{int64(dims[0]), 1}, false, nil
	}
	return [2]int64{int64(dims[0]), int64(dims[1])}, false, nil
}

// operands returns n's two inputs: each a computed value or a constant.
func (c *converter) operands(n *Node) (v [2]*sval, k [2]*Tensor, err error) {
	if len(n.Inputs) != 2 {
		return v, k, nodeErr(n, "%d inputs; accepted: 2", len(n.Inputs))
	}
	for j, nm := range n.Inputs {
		if x, ok := c.vals[nm]; ok {
			v[j] = &x
			continue
		}
		t, ok := c.m.Initializers[nm]
		if !ok || t.DType != Float32 {
			return v, k, nodeErr(n, "input %d (%q) is neither a computed value nor a float32 constant", j, nm)
		}
		k[j] = &t
	}
	if v[0] == nil && v[1] == nil {
		return v, k, nodeErr(n, "both inputs are constants, yet it was not folded")
	}
	return v, k, nil
}

// binary converts Add, Sub, Mul and Div: of two computed values (add of
// one shape, sub, mul and div broadcast), or of a value and a constant
// (affine: a scalar as its scale or shift, a tensor as its broadcast
// weight or bias).
func (c *converter) binary(i int, n *Node) error {
	v, k, err := c.operands(n)
	if err != nil {
		return err
	}
	op := strings.ToLower(n.OpType)
	if v[0] != nil && v[1] != nil {
		a, b := *v[0], *v[1]
		if a.rank != b.rank {
			return nodeErr(n, "its inputs have ranks %d and %d; accepted: one rank", a.rank, b.rank)
		}
		res := sval{rank: a.rank, c: max(a.c, b.c), t: max(a.t, b.t)}
		if op == "add" && (a.c != b.c || a.t != b.t) {
			return nodeErr(n, "its inputs are %d x %d and %d x %d values; accepted: two of one shape", a.c, a.t, b.c, b.t)
		}
		for _, s := range []sval{a, b} {
			if (s.c != 1 && s.c != res.c) || (s.t != 1 && s.t != res.t) {
				return nodeErr(n, "its inputs are %d x %d and %d x %d values, which do not broadcast", a.c, a.t, b.c, b.t)
			}
		}
		return c.emit(n, op, nil, []sval{a, b}, nil, res, "")
	}
	j := 0 // the computed operand
	if v[0] == nil {
		j = 1
	}
	x, t := *v[j], k[1-j]
	rc, scalar, err := bcastConst(x, t)
	if err != nil {
		return nodeErr(n, "%v", err)
	}
	// y = (x weight + bias) scale + shift with the constant k as the
	// weight (Mul, Div: 1/k) or the bias (Add, Sub: -k), and scale -1 for
	// k - x = (x - k) (-1); a scalar is an attribute, not a parameter.
	attrs, params := map[string]any{}, map[string]Tensor{}
	param, flip := "bias", n.OpType == "Sub" && j == 1
	switch {
	case n.OpType == "Div" && j == 1:
		return nodeErr(n, "a constant divided by a computed value is not supported; accepted: a value divided by a constant or by a value")
	case n.OpType == "Mul" || n.OpType == "Div":
		param = "weight"
	}
	vals := slices.Clone(t.Float)
	for q := range vals {
		switch n.OpType {
		case "Sub":
			vals[q] = -vals[q]
		case "Div":
			vals[q] = 1 / vals[q]
		}
	}
	if flip {
		attrs["scale"] = -1.0
	}
	switch {
	case !scalar:
		attrs[param] = []int64{rc[0], rc[1]}
		params[param] = Tensor{DType: Float32, Shape: []int{int(rc[0]), int(rc[1])}, Float: vals}
	case param == "weight":
		attrs["scale"] = f64(vals[0])
	case flip: // k - x = x (-1) + k
		attrs["shift"] = f64(-vals[0])
	default:
		attrs["shift"] = f64(vals[0])
	}
	return c.emit(n, "affine", attrs, []sval{x}, params, x, "")
}

// unary converts Sqrt, Erf and Pow of a scalar constant exponent.
func (c *converter) unary(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	switch n.OpType {
	case "Pow":
		e, err := c.constant(n, 1, "exponent")
		if err != nil {
			return err
		}
		if e == nil || e.Len() != 1 {
			return nodeErr(n, "its exponent must be a scalar constant")
		}
		return c.emit(n, "pow", map[string]any{"exponent": f64(e.Float[0])}, []sval{x}, nil, x, "")
	case "Erf":
		return c.emit(n, "erf", nil, []sval{x}, nil, x, "")
	}
	return c.emit(n, "sqrt", nil, []sval{x}, nil, x, "")
}

// tokenMean converts ReduceMean over the tokens (axis 1 of a (batch,
// tokens, features) value): reducemean over the rows, then a reshape to
// (batch, features) without keepdims.
func (c *converter) tokenMean(n *Node, x sval, keep bool) error {
	if !keep {
		tmp := n.Outputs[0] + "#rows"
		if err := c.emit(n, "reducemean", map[string]any{"axis": int64(0)}, []sval{x}, nil, sval{rank: 3, c: 1, t: x.t}, tmp); err != nil {
			return err
		}
		return c.emit(n, "reshape", map[string]any{"rows": int64(x.t), "cols": int64(1)}, []sval{c.vals[tmp]}, nil, sval{rank: 2, c: x.t, t: 1}, "")
	}
	return c.emit(n, "reducemean", map[string]any{"axis": int64(0)}, []sval{x}, nil, sval{rank: 3, c: 1, t: x.t}, "")
}

// transpose converts Transpose of a (batch, c, t) value: perm [0, 2, 1]
// swaps its axes; perm [1, 0, 2] begins nn.MultiheadAttention's block
// (batch_first), fused into one attention node.
func (c *converter) transpose(i int, n *Node) error {
	x, err := c.input(n, 0)
	if err != nil {
		return err
	}
	perm, err := intsAttr(n, "perm", nil)
	if err != nil {
		return err
	}
	switch {
	case x.rank == 3 && slices.Equal(perm, []int64{0, 2, 1}):
		return c.emit(n, "transpose", nil, []sval{x}, nil, sval{rank: 3, c: x.t, t: x.c}, "")
	case x.rank == 3 && slices.Equal(perm, []int64{1, 0, 2}):
		return c.attention(i, n, x, false)
	case x.rank == 3 && slices.Equal(perm, []int64{2, 0, 1}):
		// [0, 2, 1] then [1, 0, 2], fused by the exporter: a patch
		// convolution's (features, tokens) straight into attention
		return c.attention(i, n, x, true)
	}
	return nodeErr(n, "perm %v of a rank-%d value is not supported; accepted: [0, 2, 1] (swapping channels and samples, or tokens and features), and [1, 0, 2] or [2, 0, 1] at the start of nn.MultiheadAttention's block (batch_first=True)", perm, x.rank)
}

// maxRegion bounds the nodes of one attention block.
const maxRegion = 256

// attention finds nn.MultiheadAttention's block that the Transpose n (the
// i-th node, perm [1, 0, 2], of the value x of L tokens of E features;
// with swap, perm [2, 0, 1] of x of E features of L tokens) begins, evaluates it on a random input of the export's batch size,
// and replaces it by one attention node whose heads make it compute the
// same numbers (within 1e-4 of the largest), or says why not.
//
// The block is every later node whose inputs are the block's values or
// constants, up to the first Transpose [1, 0, 2] after its Softmax that
// gives a (batch, L, E) value back; no node outside it may read a value
// inside it but that last one.
func (c *converter) attention(i int, n *Node, x sval, swap bool) error {
	B, err := c.batchSize(n)
	if err != nil {
		return err
	}
	L, E := x.c, x.t
	if swap {
		L, E = E, L
	}
	refuse := func(format string, a ...any) error {
		return nodeErr(n, "the attention block it begins is not nn.MultiheadAttention's self-attention as torch.onnx.export writes it (batch_first=True, no mask, need_weights=False): %s", fmt.Sprintf(format, a...))
	}
	rng := rand.New(rand.NewPCG(uint64(L), uint64(E)))
	in := Tensor{DType: Float32, Shape: []int{B, x.c, x.t}, Float: make([]float32, B*L*E)}
	for q := range in.Float {
		in.Float[q] = float32(rng.NormFloat64())
	}
	tokens := in.Float // the input as (batch, L, E)
	if swap {
		tokens = make([]float32, len(in.Float))
		ops.Transpose(tokens, in.Float, E, L)
	}
	vals := map[string]*Tensor{}
	entry, err := c.f.transpose(asNode(n), []*Tensor{&in})
	if err != nil {
		return nodeErr(n, "%v", err)
	}
	vals[n.Outputs[0]] = &entry
	region := []int{}
	inRegion := map[int]bool{}
	softmax, exit := false, -1
	for k := i + 1; k < len(c.m.Nodes) && exit < 0; k++ {
		nk := &c.m.Nodes[k]
		if c.done[k] {
			continue
		}
		args := make([]*Tensor, len(nk.Inputs))
		reads, ok := false, true
		for q, nm := range nk.Inputs {
			if nm == "" {
				continue
			}
			if t, in := vals[nm]; in {
				args[q], reads = t, true
			} else if t, cst := c.m.Initializers[nm]; cst {
				args[q] = &t
			} else {
				ok = false
			}
		}
		if !ok || !reads {
			continue
		}
		if len(region) == maxRegion {
			return refuse("no end within %d nodes", maxRegion)
		}
		eval, known := regionOp(nk.OpType)
		if !known {
			return refuse("it holds a %s node (%q)", nk.OpType, nk.Name)
		}
		t, err := foldNode(eval, c.f, asNode(nk), args, k)
		if err != nil {
			return refuse("evaluating node %q (%s): %v", nk.Name, nk.OpType, err)
		}
		for _, o := range nk.Outputs[1:] {
			if o != "" && len(c.consumers[o]) > 0 {
				return refuse("node %q (%s) has a second output that is read", nk.Name, nk.OpType)
			}
		}
		vals[nk.Outputs[0]] = &t
		region = append(region, k)
		inRegion[k] = true
		if nk.OpType == "Softmax" {
			softmax = true
		}
		if p, _ := intsAttr(nk, "perm", nil); softmax && nk.OpType == "Transpose" && slices.Equal(p, []int64{1, 0, 2}) && slices.Equal(t.Shape, []int{B, L, E}) {
			exit = k
		}
	}
	if exit < 0 {
		return refuse("no Transpose back to (batch, %d, %d) after a Softmax", L, E)
	}
	out := c.m.Nodes[exit].Outputs[0]
	for _, k := range append([]int{i}, region...) {
		for _, o := range c.m.Nodes[k].Outputs {
			if o == out || o == "" {
				continue
			}
			if o == c.m.Outputs[0].Name {
				return refuse("the model's output %q is inside it", o)
			}
			for _, r := range c.consumers[o] {
				if !inRegion[r] {
					return refuse("node %q (%s) reads its inner value %q", c.m.Nodes[r].Name, c.m.Nodes[r].OpType, o)
				}
			}
		}
	}
	params, err := c.attentionParams(n, region, E)
	if err != nil {
		return refuse("%v", err)
	}
	want := vals[out].Float
	top := 1.0
	for _, v := range want {
		top = max(top, math.Abs(float64(v)))
	}
	got := make([]float32, len(want))
	best, heads := math.Inf(1), 0
	for h := 1; h <= E; h++ {
		if E%h != 0 {
			continue
		}
		a := ops.Attention{L: L, E: E, Heads: h}
		a.Forward(got, tokens, params["in_proj_weight"].Float, params["in_proj_bias"].Float, params["out_proj.weight"].Float, params["out_proj.bias"].Float, nil, make([]float64, a.ScratchLen()))
		worst := 0.0
		for q := range got {
			worst = max(worst, math.Abs(float64(got[q])-float64(want[q])))
		}
		if worst < best {
			best, heads = worst, h
		}
	}
	if !(best <= 1e-4*top) {
		return refuse("evaluated on a random input, it differs from self-attention with any number of heads by %.3g at least (largest value %.3g)", best, top)
	}
	for _, k := range region {
		c.done[k] = true
	}
	if swap {
		tok := n.Outputs[0] + "#tokens"
		if err := c.emit(n, "transpose", nil, []sval{x}, nil, sval{rank: 3, c: L, t: E}, tok); err != nil {
			return err
		}
		x = c.vals[tok]
	}
	return c.emit(n, "attention", map[string]any{"heads": int64(heads)}, []sval{x}, params, sval{rank: 3, c: L, t: E}, out)
}

// attentionParams finds the in- and out-projections of an attention
// block: the MatMul of the block's input by a constant (E, 3E) and the
// Add of a constant (3E) to it; a Gemm by a constant (E, E) with transB
// and a constant bias (E), or a MatMul by a constant (E, E) and an Add
// of a constant (E), last in the block.
func (c *converter) attentionParams(n *Node, region []int, E int) (map[string]Tensor, error) {
	p := map[string]Tensor{}
	cst := func(nm string, shape ...int) *Tensor {
		t, ok := c.m.Initializers[nm]
		if !ok || t.DType != Float32 || !slices.Equal(t.Shape, shape) {
			return nil
		}
		return &t
	}
	biasOf := func(v string, size int) *Tensor {
		for _, k := range region {
			a := &c.m.Nodes[k]
			if a.OpType != "Add" || len(a.Inputs) != 2 {
				continue
			}
			for q, nm := range a.Inputs {
				if nm == v {
					if b := cst(a.Inputs[1-q], size); b != nil {
						return b
					}
				}
			}
		}
		return nil
	}
	for _, k := range region {
		m := &c.m.Nodes[k]
		switch {
		case m.OpType == "MatMul" && m.Inputs[0] == n.Outputs[0]:
			w := cst(m.Inputs[1], E, 3*E)
			b := biasOf(m.Outputs[0], 3*E)
			if w == nil || b == nil {
				return nil, fmt.Errorf("its in-projection (node %q) is not a MatMul by a constant (%d, %d) plus a constant (%d)", m.Name, E, 3*E, 3*E)
			}
			p["in_proj_weight"], p["in_proj_bias"] = transposed(w), *b
		case m.OpType == "Gemm" && len(m.Inputs) == 3:
			w, b := cst(m.Inputs[1], E, E), cst(m.Inputs[2], E)
			if tb, _ := intAttr1(m, "transB", 0); w != nil && b != nil && tb == 1 {
				p["out_proj.weight"], p["out_proj.bias"] = *w, *b
			}
		case m.OpType == "MatMul":
			if w, b := cst(m.Inputs[1], E, E), biasOf(m.Outputs[0], E); w != nil && b != nil {
				p["out_proj.weight"], p["out_proj.bias"] = transposed(w), *b
			}
		}
	}
	if _, ok := p["in_proj_weight"]; !ok {
		return nil, fmt.Errorf("no in-projection: a MatMul of its input by a constant (%d, %d)", E, 3*E)
	}
	if _, ok := p["out_proj.weight"]; !ok {
		return nil, fmt.Errorf("no out-projection: a Gemm or MatMul by a constant (%d, %d) with a bias", E, E)
	}
	return p, nil
}

// transposed is the float32 matrix t (r, q) transposed: (q, r), PyTorch's
// layout of a weight an export multiplies by on the right.
func transposed(t *Tensor) Tensor {
	r, q := t.Shape[0], t.Shape[1]
	o := Tensor{DType: Float32, Shape: []int{q, r}, Float: make([]float32, r*q)}
	ops.Transpose(o.Float, t.Float, r, q)
	return o
}

// matmul evaluates MatMul of two float tensors of rank 2 or more, the
// leading axes broadcast (numpy's matmul), the sums in float64.
func (f *folder) matmul(_ *node, in []*Tensor) (Tensor, error) {
	a, b := in[0], in[1]
	if a.DType != Float32 || b.DType != Float32 || len(a.Shape) < 2 || len(b.Shape) < 2 {
		return Tensor{}, fmt.Errorf("MatMul of %s %v and %s %v: needs float tensors of rank 2 or more", a.DType, a.Shape, b.DType, b.Shape)
	}
	ra, rb := len(a.Shape), len(b.Shape)
	M, K, K2, N := a.Shape[ra-2], a.Shape[ra-1], b.Shape[rb-2], b.Shape[rb-1]
	if K != K2 {
		return Tensor{}, fmt.Errorf("MatMul of %v and %v: inner sizes %d and %d", a.Shape, b.Shape, K, K2)
	}
	r := max(ra, rb)
	lead := make([]int, r-2)
	for k := range lead {
		da, db := dimFromEnd(a.Shape, r-1-k), dimFromEnd(b.Shape, r-1-k)
		switch {
		case da == db || db == 1:
			lead[k] = da
		case da == 1:
			lead[k] = db
		default:
			return Tensor{}, fmt.Errorf("MatMul of %v and %v: the leading axes do not broadcast", a.Shape, b.Shape)
		}
	}
	out, err := f.alloc(Float32, append(slices.Clone(lead), M, N))
	if err != nil {
		return Tensor{}, err
	}
	sa, sb := bcast(a.Shape[:ra-2], r-2), bcast(b.Shape[:rb-2], r-2)
	var bi int
	forEach(lead, func(_ int, o []int) {
		ja, jb := 0, 0
		for k := range o {
			ja += o[k] * sa[k]
			jb += o[k] * sb[k]
		}
		ja, jb = ja*M*K, jb*K*N
		for m := range M {
			for nn := range N {
				var s float64
				for k := range K {
					s += float64(a.Float[ja+m*K+k]) * float64(b.Float[jb+k*N+nn])
				}
				out.Float[bi*M*N+m*N+nn] = float32(s)
			}
		}
		bi++
	})
	return out, nil
}

// gemm evaluates Gemm: alpha A' B' + beta C, A' and B' transposed where
// transA and transB say, C broadcast.
func (f *folder) gemm(n *node, in []*Tensor) (Tensor, error) {
	if len(in) < 2 || in[0].DType != Float32 || in[1].DType != Float32 || len(in[0].Shape) != 2 || len(in[1].Shape) != 2 {
		return Tensor{}, fmt.Errorf("Gemm needs two float matrices")
	}
	ta, err := attrInt(n, "transA", 0)
	if err != nil {
		return Tensor{}, err
	}
	tb, err := attrInt(n, "transB", 0)
	if err != nil {
		return Tensor{}, err
	}
	alpha, beta := 1.0, 1.0
	if a, ok := n.attrs["alpha"]; ok {
		alpha = float64(a.Float)
	}
	if a, ok := n.attrs["beta"]; ok {
		beta = float64(a.Float)
	}
	A, B := in[0], in[1]
	M, K := A.Shape[0], A.Shape[1]
	if ta == 1 {
		M, K = K, M
	}
	K2, N := B.Shape[0], B.Shape[1]
	if tb == 1 {
		K2, N = N, K2
	}
	if K != K2 {
		return Tensor{}, fmt.Errorf("Gemm of %v and %v: inner sizes %d and %d", A.Shape, B.Shape, K, K2)
	}
	out, err := f.alloc(Float32, []int{M, N})
	if err != nil {
		return Tensor{}, err
	}
	ai := func(m, k int) float32 {
		if ta == 1 {
			return A.Float[k*M+m]
		}
		return A.Float[m*K+k]
	}
	bi := func(k, nn int) float32 {
		if tb == 1 {
			return B.Float[nn*K+k]
		}
		return B.Float[k*N+nn]
	}
	var C *Tensor
	var cs []int // C's strides broadcast to (M, N)
	if len(in) > 2 && in[2] != nil {
		C = in[2]
		if len(C.Shape) > 2 || (dimFromEnd(C.Shape, 0) != 1 && dimFromEnd(C.Shape, 0) != N) || (dimFromEnd(C.Shape, 1) != 1 && dimFromEnd(C.Shape, 1) != M) {
			return Tensor{}, fmt.Errorf("Gemm's C of shape %v does not broadcast to (%d, %d)", C.Shape, M, N)
		}
		cs = bcast(C.Shape, 2)
	}
	for m := range M {
		for nn := range N {
			var s float64
			for k := range K {
				s += float64(ai(m, k)) * float64(bi(k, nn))
			}
			s *= alpha
			if C != nil {
				s += beta * float64(C.Float[m*cs[0]+nn*cs[1]])
			}
			out.Float[m*N+nn] = float32(s)
		}
	}
	return out, nil
}

// softmax evaluates Softmax over one axis (opset 13), in float64.
func (f *folder) softmax(n *node, in []*Tensor) (Tensor, error) {
	x := in[0]
	if x.DType != Float32 || len(x.Shape) == 0 {
		return Tensor{}, fmt.Errorf("Softmax needs a float tensor")
	}
	a, err := attrInt(n, "axis", -1)
	if err != nil {
		return Tensor{}, err
	}
	ax, err := axis(a, len(x.Shape))
	if err != nil {
		return Tensor{}, err
	}
	out, err := f.alloc(Float32, x.Shape)
	if err != nil {
		return Tensor{}, err
	}
	d := x.Shape[ax]
	inner := strides(x.Shape)[ax]
	outer := x.Len() / (d * inner)
	for o := range outer {
		for q := range inner {
			base := o*d*inner + q
			m := math.Inf(-1)
			for k := range d {
				m = max(m, float64(x.Float[base+k*inner]))
			}
			var s float64
			for k := range d {
				s += math.Exp(float64(x.Float[base+k*inner]) - m)
			}
			for k := range d {
				out.Float[base+k*inner] = float32(math.Exp(float64(x.Float[base+k*inner])-m) / s)
			}
		}
	}
	return out, nil
}

// layerNorm converts nn.LayerNorm over a value's last axis as torch 1.13
// exports it, starting at its first ReduceMean n (axes [-1], keepdims 1)
// of x:
//
//	m = ReduceMean(x); d = Sub(x, m); v = ReduceMean(Pow(d, 2))
//	z = Div(d, Sqrt(Add(v, eps))); y = Add(Mul(z, weight), bias)
//
// the Mul and Add by the affine parameters (E values each) only with
// elementwise_affine, eps and the exponent scalar constants, each value
// read by the next step alone but d (by Pow and Div). It emits one
// layernorm node named after the module, whose parameters are then
// PyTorch's (norm1.weight, norm1.bias), and reports false, having
// emitted nothing, when the nodes are not this pattern (they are then
// converted one by one). A (batch, E) value is normalised as a row: a
// reshape to 1 x E before and back after.
func (c *converter) layerNorm(n *Node, x sval) (bool, error) {
	E := x.t
	if x.rank == 2 {
		E = x.c
	}
	var found []int
	next := func(v, op string) *Node {
		k := c.soleConsumer(v)
		if v == "" || k < 0 || c.m.Nodes[k].OpType != op {
			return nil
		}
		found = append(found, k)
		return &c.m.Nodes[k]
	}
	lastAxis := func(r *Node) bool {
		axes, err := intsAttr(r, "axes", nil)
		keep, err2 := intAttr1(r, "keepdims", 1)
		return err == nil && err2 == nil && keep == 1 && len(r.Inputs) == 1 && len(axes) == 1 && (axes[0] == -1 || int(axes[0]) == x.rank-1)
	}
	vector := func(name string) (Tensor, bool) {
		t, ok := c.m.Initializers[name]
		return t, ok && t.DType == Float32 && t.Len() == E && len(t.Shape) == 1
	}
	if !lastAxis(n) {
		return false, nil
	}
	sub := next(n.Outputs[0], "Sub")
	if sub == nil || len(sub.Inputs) != 2 || sub.Inputs[0] != n.Inputs[0] || sub.Inputs[1] != n.Outputs[0] {
		return false, nil
	}
	d := sub.Outputs[0]
	readers := c.consumers[d]
	if len(readers) != 2 || d == c.m.Outputs[0].Name {
		return false, nil
	}
	var pow, div *Node
	for _, k := range readers {
		switch r := &c.m.Nodes[k]; r.OpType {
		case "Pow":
			pow = r
		case "Div":
			div = r
		}
		found = append(found, k)
	}
	if pow == nil || div == nil || len(pow.Inputs) != 2 || pow.Inputs[0] != d || len(div.Inputs) != 2 || div.Inputs[0] != d {
		return false, nil
	}
	if e, ok := c.scalarInit(pow.Inputs[1]); !ok || e != 2 {
		return false, nil
	}
	mean2 := next(pow.Outputs[0], "ReduceMean")
	if mean2 == nil || !lastAxis(mean2) {
		return false, nil
	}
	add := next(mean2.Outputs[0], "Add")
	if add == nil {
		return false, nil
	}
	eps, ok := c.scalarInit(otherInput(add, mean2.Outputs[0]))
	if !ok || eps < 0 {
		return false, nil
	}
	sqrt := next(add.Outputs[0], "Sqrt")
	if sqrt == nil || c.soleConsumer(sqrt.Outputs[0]) < 0 || &c.m.Nodes[c.soleConsumer(sqrt.Outputs[0])] != div || div.Inputs[1] != sqrt.Outputs[0] {
		return false, nil
	}
	out := div.Outputs[0]
	params := map[string]Tensor{}
	if mul := next(out, "Mul"); mul != nil {
		w, okw := vector(otherInput(mul, out))
		bias := next(mul.Outputs[0], "Add")
		if !okw || bias == nil {
			return false, nil
		}
		b, okb := vector(otherInput(bias, mul.Outputs[0]))
		if !okb {
			return false, nil
		}
		params["weight"] = Tensor{DType: Float32, Shape: []int{E}, Float: slices.Clone(w.Float)}
		params["bias"] = Tensor{DType: Float32, Shape: []int{E}, Float: slices.Clone(b.Float)}
		out = bias.Outputs[0]
	} else {
		one := make([]float32, E)
		for i := range one {
			one[i] = 1
		}
		params["weight"] = Tensor{DType: Float32, Shape: []int{E}, Float: one}
		params["bias"] = Tensor{DType: Float32, Shape: []int{E}, Float: make([]float32, E)}
	}
	for _, k := range found {
		c.done[k] = true
	}
	attrs := map[string]any{"eps": f64(eps)}
	if x.rank == 3 {
		return true, c.emit(n, "layernorm", attrs, []sval{x}, params, x, out)
	}
	// a (batch, E) value is E x 1: normalised as one row of E
	row := sval{rank: 3, c: 1, t: E}
	if err := c.emitAnon(n, "reshape", map[string]any{"rows": int64(1), "cols": int64(E)}, x, row, n.Outputs[0]+"#row"); err != nil {
		return true, err
	}
	row = c.vals[n.Outputs[0]+"#row"]
	if err := c.emit(n, "layernorm", attrs, []sval{row}, params, row, n.Outputs[0]+"#norm"); err != nil {
		return true, err
	}
	return true, c.emitAnon(n, "reshape", map[string]any{"rows": int64(E), "cols": int64(1)}, c.vals[n.Outputs[0]+"#norm"], x, out)
}

// emitAnon emits a node of no module (named after its op), computing
// res from v into the value out.
func (c *converter) emitAnon(n *Node, op string, attrs map[string]any, v, res sval, out string) error {
	if err := c.emit(n, op, attrs, []sval{v}, nil, res, out); err != nil {
		return err
	}
	c.out[len(c.out)-1].module = ""
	return nil
}
