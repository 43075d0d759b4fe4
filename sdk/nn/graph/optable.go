package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/uaxai/uaxai/internal/checked"
	"github.com/uaxai/uaxai/sdk/nn/ops"
)

// Shape is the shape of one sample's value: C channels of T steps.
type Shape struct{ C, T int }

func (s Shape) String() string { return fmt.Sprintf("%d x %d", s.C, s.T) }

// Size is C*T.
func (s Shape) Size() int { return s.C * s.T }

// AttrKind is the type of an attribute's value in its canonical form.
type AttrKind int

const (
	// AttrInt is an int64.
	AttrInt AttrKind = iota
	// AttrFloat is a float64 (an integer is accepted and converted).
	AttrFloat
	// AttrBool is a bool.
	AttrBool
	// AttrPair is a []int64 of two values, [left, right]; a single integer
	// p is accepted as [p, p].
	AttrPair
)

// AttrSpec describes one attribute of an op.
type AttrSpec struct {
	Name string
	Kind AttrKind
	// Default is the value of an absent attribute in canonical form; nil
	// with DefaultFrom "" makes the attribute required.
	Default any
	// DefaultFrom names another attribute whose value is the default
	// (pooling's stride defaults to its kernel).
	DefaultFrom string
	// Accepts says in words which values are accepted (for errors).
	Accepts string
	// ok reports whether a canonical value is accepted.
	ok func(v any) bool
}

// Attrs are a node's attributes in canonical form (int64, float64, bool,
// []int64), defaults filled in.
type Attrs map[string]any

// Int returns the integer attribute name.
func (a Attrs) Int(name string) int { return int(a[name].(int64)) }

// Float returns the float attribute name.
func (a Attrs) Float(name string) float64 { return a[name].(float64) }

// Bool returns the bool attribute name.
func (a Attrs) Bool(name string) bool { return a[name].(bool) }

// Pair returns the [left, right] attribute name.
func (a Attrs) Pair(name string) (int, int) {
	p := a[name].([]int64)
	return int(p[0]), int(p[1])
}

// ParamSpec is one parameter tensor of a node: the state_dict name is
// "<node name>.<Suffix>".
type ParamSpec struct {
	Suffix string
	Shape  []int
	// Trainable is false for running statistics (batchnorm's
	// running_mean and running_var), which get no gradient.
	Trainable bool
}

// Field is an op's receptive field in time: output step t reads input
// steps t*Stride - PadLeft + k*Dilation, k < Kernel. Local is false for
// ops whose output reads every input step (linear, global pooling,
// flatten); the other fields are then zero.
type Field struct {
	Local                    bool
	Kernel, Stride, Dilation int
	PadLeft, PadRight        int
}

var identityField = Field{Local: true, Kernel: 1, Stride: 1, Dilation: 1}

// Call holds what an op's Forward or Backward reads and writes, for a
// batch of B samples.
type Call struct {
	A   Attrs
	In  []Shape
	Out Shape
	B   int
	// X are the inputs (B*In[i].Size() values each), Y the output, P the
	// parameters in the order of the op's Params.
	X [][]float32
	Y []float32
	P [][]float32
	// Backward: DY is the gradient of the output; DX[i] (written) the
	// gradient of input i, nil if not wanted; DP[j] (added to) the
	// gradient of parameter j, nil if not wanted (DP itself may be nil).
	DY []float32
	DX [][]float32
	DP [][]float32
	// Idx is the op's scratch of B*Indices values (max pooling's argmax),
	// written by Forward and read by Backward.
	Idx []int32
	// Train is set in a training pass (Net.Run with train): the op's
	// TrainForward and TrainBackward run where it has them, drawing from
	// Rand, and keep what the backward pass needs in State (the op's
	// State(Attrs, In, B) values).
	Train bool
	Rand  *rand.Rand
	State []float32
	// Fused is set when the op also applies the op of the node that
	// reads it: in a training pass Op.Fuses (a ReLU after batchnorm or a
	// convolution), Y then holds that node's values and DY is the
	// gradient with respect to them (the op may overwrite it); in a
	// folded inference pass (Net.FoldEval) Op.EvalFuses.
	Fused bool
	// Workers bounds the goroutines an op may use within the call
	// (Net.Workers; channels).
	Workers int
	// A sparse output gradient (a training pass's Op.SparseBackward):
	// with HotAt set, DY is not formed: the output gradient is zero but
	// at step HotAt[r] of row r = b*Out.C+o, where it is HotDY[r] (a
	// MaxOverTime node's input gradient, handed on); with Steps set, DY
	// of sample b is written at the steps Steps[b] only (increasing, for
	// every channel) and zero elsewhere, a nil list standing for every
	// step. DXSteps (one list a sample, each of capacity In[0].T)
	// receives the steps of DX[0] when the op writes it so.
	HotAt   []int32
	HotDY   []float32
	Steps   [][]int32
	DXSteps [][]int32

	chans []int         // the inputs' channels, for concat
	chw   *channelsWork // channels' stage
}

// channels runs f(c, c0, c1) on ranges of C channels, on up to c.Workers
// goroutines (a stage of the helpers', stage.go: nothing allocated).
func (c *Call) channels(C int, f func(c *Call, c0, c1 int)) {
	w := min(max(c.Workers, 1), C)
	if w == 1 {
		f(c, 0, C)
		return
	}
	if c.chw == nil {
		c.chw = new(channelsWork)
	}
	*c.chw = channelsWork{c: c, f: f, C: C, w: w}
	runStage(&c.chw.st, c.chw, w, w)
	c.chw.c, c.chw.f = nil, nil
}

// channelsWork is Call.channels' stage: range k of w.
type channelsWork struct {
	st   stage
	c    *Call
	f    func(c *Call, c0, c1 int)
	C, w int
}

func (h *channelsWork) chunk(k int) { h.f(h.c, k*h.C/h.w, (k+1)*h.C/h.w) }

func (c *Call) dp(j int) []float32 {
	if c.DP == nil {
		return nil
	}
	return c.DP[j]
}

// GradForm is the form in which a training pass's backward hands a
// value's gradient on (Call.HotAt, Call.Steps).
type GradForm int

const (
	// DenseGrad: every value written.
	DenseGrad GradForm = iota
	// HotGrad: one value a row, HotDY[r] at step HotAt[r], zero
	// elsewhere, not formed.
	HotGrad
	// StepsGrad: per sample, written at the steps of its list only and
	// zero elsewhere.
	StepsGrad
)

// Op is one op kind: everything the graph knows about it.
type Op struct {
	Kind  string
	Attrs []AttrSpec
	// Inputs is the number of inputs; -2 is "two or more".
	Inputs int
	// Pointwise ops compute each output value from the input values at
	// the same (channel, step).
	Pointwise bool
	// Params lists the parameters for the input shapes (nil: none).
	Params func(a Attrs, in []Shape) []ParamSpec
	// Shape is the output shape, or an error saying what is accepted.
	Shape func(a Attrs, in []Shape) (Shape, error)
	// Field is the receptive field in time.
	Field func(a Attrs) Field
	// Positions, where set, places the output's positions in the input
	// for a node that is not Local but keeps its input's positions in
	// order (Net.LayerPositions): from its inputs' positions (in[i]
	// their shapes) the output's, or an error saying why it has none
	// (dense on the steps of a channel mixes them). nil: a Local op's
	// positions are its receptive field's, and a node that is not Local
	// has none (global pooling, flatten, linear).
	Positions func(a Attrs, in []Shape, pos []Pos) (Pos, error)
	// Cost, where set, is the floating-point work of one sample's output
	// (2 x the multiply-adds of a product, the taps read by a pool), as
	// Net.Cost counts it; nil: the default of stepCost (window.go).
	Cost func(a Attrs, in []Shape, out Shape) float64
	// Indices is the number of int32 scratch values per sample (nil: 0).
	Indices  func(a Attrs, in []Shape, out Shape) int
	Forward  func(c *Call)
	Backward func(c *Call)
	// TrainForward and TrainBackward, where set, replace Forward and
	// Backward in a training pass (batchnorm's batch statistics,
	// dropout's masks); State is the float32 scratch they keep for a
	// batch of B samples (nil: 0).
	TrainForward  func(c *Call)
	TrainBackward func(c *Call)
	State         func(a Attrs, in []Shape, B int) int
	// Fuses names a one-input op kind that a training pass's forward and
	// backward calls (TrainForward and TrainBackward where set, else
	// Forward and Backward) apply after this op's own under Call.Fused:
	// in a training pass a node of that kind that is the only reader of
	// this op's node is folded into it ("relu" after batchnorm or a
	// convolution: one pass over the activations fewer, the same bits).
	Fuses string

	// SparseGrad, where set, says which sparse output gradients the op's
	// SparseBackward takes in a training pass: for the output gradient's
	// form dy, the form in which it writes the gradient of its one input
	// (HotGrad: the values to HotDY in place, HotAt unchanged; StepsGrad:
	// DX[0] at the steps it sets in DXSteps), or false when it does not
	// take dy (the gradient is then formed and TrainBackward or Backward
	// runs). SparseBackward computes what Backward does up to rounding
	// (the sums skip the exact zeros), Fused as for Backward; the
	// samples are independent (it runs on chunks of them).
	SparseGrad     func(a Attrs, in []Shape, dy GradForm) (GradForm, bool)
	SparseBackward func(c *Call)

	// Affine, where set, says that outside a training pass the op is a
	// per-channel affine map of its one input, y[c,t] = s[c] x[c,t] +
	// t[c], and writes s and t (C values each) from its parameters p
	// (batchnorm with its running statistics).
	Affine func(a Attrs, p [][]float32, s, t []float64)
	// Absorb, where set, writes to fp the parameters of a node of this
	// op that computes s[o] y[o,·] + t[o] for each output channel o of
	// this node's output y: fp[0] the weights, fp[1] a bias (also for a
	// node without one; Forward takes a second parameter as the bias).
	// Net.FoldEval folds an Affine node that is the only reader of such a
	// node into it.
	Absorb func(a Attrs, in []Shape, p [][]float32, s, t []float64, fp [][]float32)
	// EvalFuses names a one-input op kind that Forward applies after the
	// op's own when Call.Fused is set outside a training pass (a ReLU
	// after a convolution whose batchnorm was folded into it).
	EvalFuses string

	// MaxOverTime says that the op's output is C x 1, y[c] the first
	// maximum over time of its one input's row c (NaN winning), as
	// ops.GlobalMaxPool computes it: the maximum of a row is that of
	// its parts, so the incremental paths combine an unperturbed
	// input's prefix and suffix maxima with a copy's recomputed steps
	// (maxpool.go), and a network whose output reads its input only
	// through such a node after a stack of Local nodes has the boundary
	// and trunk plans (edges.go, trunk.go). Call.Idx holds the maxima's
	// steps (C values a sample), so that its input's gradient is DY at
	// them and zero elsewhere: a training pass hands it on unformed, as
	// HotGrad, to a producer whose SparseGrad takes it (sparsegrad.go).
	MaxOverTime bool
	// Columns, where set, computes the op outside a training pass on
	// copies of C x 1 inputs laid out as the steps of one C x n value
	// (Call.B = 1, In and Out of n steps, copy j in step j), with the
	// bits Forward gives each copy: the trunk plan's head runs so, a
	// layer's kernel called once for n copies (trunk.go). An op whose
	// step t reads only its inputs' step t, with the same arithmetic at
	// every step, sets it to its Forward.
	Columns func(c *Call)
	// FastColumns, where set, is Columns up to float32 rounding (fused
	// multiply-adds, another order of sums): the trunk plan's head runs
	// so on the copies whose pooled vector is not the unperturbed
	// input's, and Columns on the input's own (trunk.go).
	FastColumns func(c *Call)
	// Taps, where set, computes the op outside a training pass on n
	// output steps given by their taps, for a Local field of stride 1
	// and one input: X[0] is In[0].C*K rows of n values (K the field's
	// Kernel), row c*K+k holding for each step the value of channel c
	// that its tap k reads (input step t - PadLeft + k*Dilation of
	// output step t, the padding written out); Y is Out.C rows of n.
	// In is Shape{C, n} and Out Shape{Out.C, n}. A column's value does
	// not depend on the other columns, and equals Forward's up to
	// float32 rounding. The boundary plan runs so (planes.go).
	Taps func(c *Call)
}

// Table is the set of op kinds, looked up by Kind.
type Table struct {
	ops   map[string]*Op
	kinds []string
}

// Lookup returns the op kind, or false.
func (t *Table) Lookup(kind string) (*Op, bool) {
	op, ok := t.ops[kind]
	return op, ok
}

// Kinds lists the op kinds, sorted.
func (t *Table) Kinds() []string { return append([]string(nil), t.kinds...) }

var defaultTable = newTable(opList())

// Ops returns the op table.
func Ops() *Table { return defaultTable }

func newTable(list []*Op) *Table {
	t := &Table{ops: map[string]*Op{}}
	for _, op := range list {
		if _, dup := t.ops[op.Kind]; dup {
			panic("graph: op kind " + op.Kind + " defined twice")
		}
		t.ops[op.Kind] = op
		t.kinds = append(t.kinds, op.Kind)
	}
	sort.Strings(t.kinds)
	return t
}

// acceptedAttrs lists an op's attributes for error messages.
func (op *Op) acceptedAttrs() string {
	if len(op.Attrs) == 0 {
		return "none"
	}
	var s []string
	for _, a := range op.Attrs {
		d := "required"
		switch {
		case a.Default != nil:
			d = fmt.Sprintf("default %v", a.Default)
		case a.DefaultFrom != "":
			d = "default " + a.DefaultFrom
		}
		s = append(s, fmt.Sprintf("%s (%s; %s)", a.Name, a.Accepts, d))
	}
	return strings.Join(s, ", ")
}

// resolve checks raw attributes against the op's specs and returns them
// in canonical form with defaults filled in.
func (op *Op) resolve(raw map[string]any) (Attrs, error) {
	for name := range raw {
		if op.attr(name) == nil {
			return nil, fmt.Errorf("unknown attribute %q of op %s; accepted: %s", name, op.Kind, op.acceptedAttrs())
		}
	}
	a := Attrs{}
	for _, s := range op.Attrs {
		v, present := raw[s.Name]
		if !present {
			if s.Default != nil {
				a[s.Name] = s.Default
			}
			continue
		}
		c, ok := canonical(s.Kind, v)
		if !ok || (s.ok != nil && !s.ok(c)) {
			return nil, fmt.Errorf("attribute %s of op %s = %v (%T); accepted: %s", s.Name, op.Kind, v, v, s.Accepts)
		}
		a[s.Name] = c
	}
	for _, s := range op.Attrs {
		if _, ok := a[s.Name]; ok {
			continue
		}
		if s.DefaultFrom != "" {
			a[s.Name] = a[s.DefaultFrom]
			continue
		}
		return nil, fmt.Errorf("op %s needs attribute %s (%s)", op.Kind, s.Name, s.Accepts)
	}
	return a, nil
}

func (op *Op) attr(name string) *AttrSpec {
	for i := range op.Attrs {
		if op.Attrs[i].Name == name {
			return &op.Attrs[i]
		}
	}
	return nil
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	}
	return 0, false
}

func canonical(k AttrKind, v any) (any, bool) {
	switch k {
	case AttrInt:
		return asInt(v)
	case AttrFloat:
		switch x := v.(type) {
		case float64:
			return x, !math.IsNaN(x) && !math.IsInf(x, 0)
		case float32:
			return float64(x), !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
		}
		if i, ok := asInt(v); ok {
			return float64(i), true
		}
	case AttrBool:
		b, ok := v.(bool)
		return b, ok
	case AttrPair:
		if i, ok := asInt(v); ok {
			return []int64{i, i}, true
		}
		var p []int64
		switch x := v.(type) {
		case []int64:
			p = append(p, x...)
		case []int:
			for _, e := range x {
				p = append(p, int64(e))
			}
		case []any:
			for _, e := range x {
				i, ok := asInt(e)
				if !ok {
					return nil, false
				}
				p = append(p, i)
			}
		default:
			return nil, false
		}
		return p, len(p) == 2
	}
	return nil, false
}

func intIn(lo, hi int64) func(any) bool {
	return func(v any) bool { return v.(int64) >= lo && v.(int64) <= hi }
}

func pairIn0(hi int64) func(any) bool {
	return func(v any) bool { p := v.([]int64); return p[0] >= 0 && p[1] >= 0 && p[0] <= hi && p[1] <= hi }
}

// intAttr is an integer attribute accepted in lo..hi; accepts names its
// meaning, and the bound (and the constant that sets it) is appended.
func intAttr(name string, lo, hi int64, bound string, def any, accepts string) AttrSpec {
	return AttrSpec{Name: name, Kind: AttrInt, Default: def, ok: intIn(lo, hi),
		Accepts: fmt.Sprintf("an integer %d <= %s <= %d = %s%s", lo, name, hi, bound, accepts)}
}

// extentAttr is a length in time (kernel, stride, dilation, padding):
// an integer lo..MaxExtent.
func extentAttr(name string, lo int64, def any, accepts string) AttrSpec {
	return intAttr(name, lo, MaxExtent, "graph.MaxExtent", def, accepts)
}

func boolAttr(name string, def bool) AttrSpec {
	return AttrSpec{Name: name, Kind: AttrBool, Default: def, Accepts: "true or false"}
}

// bnTrainForward is batchnorm1d's TrainForward of channels c0..c1-1.
func bnTrainForward(c *Call, c0, c1 int) {
	bn := ops.BatchNorm1D{C: c.In[0].C, Eps: c.A.Float("eps")}
	bn.TrainForwardChannels(c0, c1, c.Y, c.State, c.X[0], c.P[0], c.P[1], c.P[2], c.P[3], c.In[0].T, c.A.Float("momentum"), c.Fused)
}

// bnTrainBackward is batchnorm1d's TrainBackward of channels c0..c1-1
// (with Fused, ReLU's mask from its output c.Y).
func bnTrainBackward(c *Call, c0, c1 int) {
	bn := ops.BatchNorm1D{C: c.In[0].C, Eps: c.A.Float("eps")}
	var z []float32
	if c.Fused {
		z = c.Y
	}
	bn.TrainBackwardChannels(c0, c1, c.DX[0], c.dp(0), c.dp(1), c.DY, c.X[0], z, c.P[0], c.State, c.In[0].T)
}

// bnForward is batchnorm1d's Forward (eval mode: running statistics).
func bnForward(c *Call) {
	ops.BatchNorm1D{C: c.In[0].C, Eps: c.A.Float("eps")}.Forward(c.Y, c.X[0], c.P[0], c.P[1], c.P[2], c.P[3], c.In[0].T)
}

func leakyForward(c *Call) { ops.LeakyReLU(c.Y, c.X[0], float32(c.A.Float("slope"))) }

// softmaxForward is softmax over the channels of each step (axis 0) or
// over the steps of each channel (axis 1: a row's last axis).
func softmaxForward(c *Call) {
	if c.A.Int("axis") == 1 {
		ops.Softmax(c.Y, c.X[0], c.In[0].T, 1)
		return
	}
	ops.Softmax(c.Y, c.X[0], c.In[0].C, c.In[0].T)
}

// copyForward is the Forward of an op that passes its input on.
func copyForward(c *Call) { copy(c.Y, c.X[0]) }

// fail is the Shape error of an op whose input does not fit.
func fail(kind string, in []Shape, format string, args ...any) (Shape, error) {
	return Shape{}, fmt.Errorf("%s on input %s: %s", kind, in[0], fmt.Sprintf(format, args...))
}

func conv(a Attrs, in Shape) ops.Conv1D {
	l, r := a.Pair("padding")
	return ops.Conv1D{Cin: in.C, Cout: a.Int("out"), Kernel: a.Int("kernel"), Stride: a.Int("stride"),
		Dilation: a.Int("dilation"), Groups: a.Int("groups"), PadLeft: l, PadRight: r}
}

func pool(a Attrs) (k, s, p int) { return a.Int("kernel"), a.Int("stride"), a.Int("padding") }

func poolAttrs() []AttrSpec {
	stride := extentAttr("stride", 1, nil, "")
	stride.DefaultFrom = "kernel"
	return []AttrSpec{
		extentAttr("kernel", 1, nil, ""),
		stride,
		extentAttr("padding", 0, int64(0), ", and padding <= kernel/2 (the same at both ends)"),
	}
}

func poolField(a Attrs) Field {
	k, s, p := pool(a)
	return Field{Local: true, Kernel: k, Stride: s, Dilation: 1, PadLeft: p, PadRight: p}
}

func notLocal(Attrs) Field { return Field{} }

// poolCost is a pool's Cost: the taps it reads, out.C x kernel a step.
func poolCost(a Attrs, _ []Shape, out Shape) float64 {
	return float64(out.C * a.Int("kernel") * out.T)
}

func sameShape(_ Attrs, in []Shape) (Shape, error) { return in[0], nil }

func vectorIn(kind string, in []Shape) error {
	if in[0].T != 1 {
		_, err := fail(kind, in, "needs one step per channel (C x 1: after a global pool or flatten)")
		return err
	}
	return nil
}

// pointwiseOp is an activation y = f(x) with its derivative's backward.
func pointwiseOp(kind string, f func(dst, x []float32), g func(dx, dy, x []float32)) *Op {
	fwd := func(c *Call) { f(c.Y, c.X[0]) }
	return &Op{
		Kind: kind, Inputs: 1, Pointwise: true, Shape: sameShape, Field: func(Attrs) Field { return identityField },
		Forward: fwd, Columns: fwd,
		Backward: func(c *Call) {
			if c.DX[0] != nil {
				g(c.DX[0], c.DY, c.X[0])
			}
		},
	}
}

// absorbAffine is Op.Absorb of an op whose weights p[0] hold one
// contiguous row per output channel (conv1d's (out, in/groups, kernel),
// linear's (out, in)) and whose bias, if any, is p[1]:
//
//	fp[0][o,·] = s[o] p[0][o,·],  fp[1][o] = s[o] p[1][o] + t[o]
//
// in float64, rounded once to float32 (p[1] = 0 without a bias).
func absorbAffine(_ Attrs, _ []Shape, p [][]float32, s, t []float64, fp [][]float32) {
	row := len(p[0]) / len(s)
	for o, so := range s {
		for k, v := range p[0][o*row : (o+1)*row] {
			fp[0][o*row+k] = float32(float64(v) * so)
		}
		b := 0.0
		if len(p) > 1 {
			b = float64(p[1][o])
		}
		fp[1][o] = float32(b*so + t[o])
	}
}

// reluOp is pointwiseOp's relu with a sparse backward: the mask applied
// to a sparse gradient at its values only, the form kept.
func reluOp() *Op {
	op := pointwiseOp("relu", ops.ReLU, ops.ReLUBackward)
	op.SparseGrad = func(_ Attrs, _ []Shape, dy GradForm) (GradForm, bool) { return dy, true }
	op.SparseBackward = func(c *Call) {
		if c.DX[0] == nil {
			return
		}
		if c.HotAt != nil {
			ops.ReLUBackwardHot(c.HotDY, c.HotAt, c.X[0], c.In[0].T)
			return
		}
		ops.ReLUBackwardSteps(c.DX[0], c.DY, c.X[0], c.In[0].C, c.In[0].T, c.Steps)
		for b, s := range c.Steps {
			if s == nil {
				c.DXSteps[b] = nil
				continue
			}
			c.DXSteps[b] = append(c.DXSteps[b][:0], s...)
		}
	}
	return op
}

// convSparseBackward is conv1d's SparseBackward: ReLU's mask first when
// fused, then ops.Conv1D.BackwardHot or BackwardSteps.
func convSparseBackward(c *Call) {
	var db []float32
	if len(c.P) > 1 {
		db = c.dp(1)
	}
	cv, L := conv(c.A, c.In[0]), c.Out.T
	if c.HotAt != nil {
		if c.Fused {
			ops.ReLUBackwardHot(c.HotDY, c.HotAt, c.Y, L)
		}
		cv.BackwardHot(c.DX[0], c.dp(0), db, c.HotDY, c.HotAt, c.X[0], c.P[0], c.In[0].T, c.DXSteps)
		return
	}
	var relu []float32
	if c.Fused {
		relu = c.Y // the mask applied as the columns are gathered
	}
	cv.BackwardSteps(c.DX[0], c.dp(0), db, c.DY, relu, c.Steps, c.X[0], c.P[0], c.In[0].T, c.DXSteps)
}

func opList() []*Op {
	return append([]*Op{
		{
			Kind: "conv1d",
			Attrs: []AttrSpec{
				intAttr("out", 1, MaxOut, "graph.MaxOut", nil, ", output channels"),
				extentAttr("kernel", 1, nil, ""),
				extentAttr("stride", 1, int64(1), ""),
				extentAttr("dilation", 1, int64(1), ""),
				intAttr("groups", 1, MaxOut, "graph.MaxOut", int64(1), ", dividing the input and output channels"),
				{Name: "padding", Kind: AttrPair, Default: []int64{0, 0}, ok: pairIn0(MaxExtent),
					Accepts: fmt.Sprintf("[left, right] zeros, integers 0 <= padding <= %d = graph.MaxExtent (or one integer for both)", MaxExtent)},
				boolAttr("bias", true),
			},
			Inputs: 1,
			Params: func(a Attrs, in []Shape) []ParamSpec {
				c := conv(a, in[0])
				p := []ParamSpec{{"weight", []int{c.Cout, c.Cin / c.Groups, c.Kernel}, true}}
				if a.Bool("bias") {
					p = append(p, ParamSpec{"bias", []int{c.Cout}, true})
				}
				return p
			},
			Shape: func(a Attrs, in []Shape) (Shape, error) {
				c := conv(a, in[0])
				L, err := c.OutLen(in[0].T)
				if err != nil {
					return fail("conv1d", in, "%v", err)
				}
				return Shape{c.Cout, L}, nil
			},
			Field: func(a Attrs) Field {
				l, r := a.Pair("padding")
				return Field{Local: true, Kernel: a.Int("kernel"), Stride: a.Int("stride"), Dilation: a.Int("dilation"), PadLeft: l, PadRight: r}
			},
			// 2 x Cout x Cin/groups x kernel multiply-adds a step.
			Cost: func(a Attrs, in []Shape, out Shape) float64 {
				return 2 * float64(out.C*in[0].C/a.Int("groups")*a.Int("kernel")*out.T)
			},
			Forward: func(c *Call) {
				var b []float32
				if len(c.P) > 1 {
					b = c.P[1]
				}
				if c.Fused {
					conv(c.A, c.In[0]).ForwardReLU(c.Y, c.X[0], c.P[0], b, c.In[0].T)
					return
				}
				conv(c.A, c.In[0]).Forward(c.Y, c.X[0], c.P[0], b, c.In[0].T)
			},
			Taps: func(c *Call) {
				var b []float32
				if len(c.P) > 1 {
					b = c.P[1]
				}
				conv(c.A, c.In[0]).ForwardTaps(c.Y, c.X[0], c.P[0], b, c.In[0].T)
			},
			Absorb:    absorbAffine,
			EvalFuses: "relu",
			Fuses:     "relu",
			// A direct convolution takes a hot or steps gradient and
			// writes steps (ops.Conv1D.BackwardHot, BackwardSteps).
			SparseGrad: func(a Attrs, in []Shape, dy GradForm) (GradForm, bool) {
				return StepsGrad, dy != DenseGrad && conv(a, in[0]).SparseBackward()
			},
			SparseBackward: convSparseBackward,
			Backward: func(c *Call) {
				var db []float32
				if len(c.P) > 1 {
					db = c.dp(1)
				}
				if c.Fused {
					// DY is the ReLU's output gradient, read by this
					// call only: masked in place (ReLU's Backward).
					ops.ReLUBackward(c.DY, c.DY, c.Y)
				}
				if c.Train {
					// a training pass hands sparse gradients on in their
					// own forms (SparseGrad): DY is formed dense
					conv(c.A, c.In[0]).BackwardDense(c.DX[0], c.dp(0), db, c.DY, c.X[0], c.P[0], c.In[0].T)
					return
				}
				conv(c.A, c.In[0]).Backward(c.DX[0], c.dp(0), db, c.DY, c.X[0], c.P[0], c.In[0].T)
			},
		},
		{
			Kind: "pad",
			Attrs: []AttrSpec{
				extentAttr("left", 0, nil, ""),
				extentAttr("right", 0, nil, ""),
				{Name: "value", Kind: AttrFloat, Default: 0.0, Accepts: "a finite number"},
			},
			Inputs: 1,
			Shape: func(a Attrs, in []Shape) (Shape, error) {
				L, err := ops.PadOutLen(in[0].T, a.Int("left"), a.Int("right"))
				if err != nil {
					return fail("pad", in, "%v", err)
				}
				return Shape{in[0].C, L}, nil
			},
			Field: func(a Attrs) Field {
				return Field{Local: true, Kernel: 1, Stride: 1, Dilation: 1, PadLeft: a.Int("left"), PadRight: a.Int("right")}
			},
			Forward: func(c *Call) {
				ops.Pad{Left: c.A.Int("left"), Right: c.A.Int("right"), Value: float32(c.A.Float("value"))}.Forward(c.Y, c.X[0], c.In[0].T)
			},
			Backward: func(c *Call) {
				if c.DX[0] != nil {
					ops.Pad{Left: c.A.Int("left"), Right: c.A.Int("right")}.Backward(c.DX[0], c.DY, c.In[0].T)
				}
			},
		},
		{
			Kind: "maxpool1d", Attrs: poolAttrs(), Inputs: 1,
			Shape: func(a Attrs, in []Shape) (Shape, error) {
				k, s, p := pool(a)
				L, err := ops.PoolOutLen(in[0].T, k, s, p)
				if err != nil {
					return fail("maxpool1d", in, "%v", err)
				}
				return Shape{in[0].C, L}, nil
			},
			Field:   poolField,
			Cost:    poolCost,
			Indices: func(_ Attrs, _ []Shape, out Shape) int { return out.Size() },
			Forward: func(c *Call) {
				k, s, p := pool(c.A)
				ops.MaxPool1D{Kernel: k, Stride: s, Pad: p}.Forward(c.Y, c.Idx, c.X[0], c.In[0].T)
			},
			Taps: func(c *Call) {
				k, s, p := pool(c.A)
				ops.MaxPool1D{Kernel: k, Stride: s, Pad: p}.ForwardTaps(c.Y, c.X[0], c.In[0].C, c.In[0].T)
			},
			Backward: func(c *Call) {
				if c.DX[0] != nil {
					k, s, p := pool(c.A)
					ops.MaxPool1D{Kernel: k, Stride: s, Pad: p}.Backward(c.DX[0], c.DY, c.Idx, c.In[0].T)
				}
			},
		},
		{
			Kind: "avgpool1d", Attrs: poolAttrs(), Inputs: 1,
			Shape: func(a Attrs, in []Shape) (Shape, error) {
				k, s, p := pool(a)
				L, err := ops.PoolOutLen(in[0].T, k, s, p)
				if err != nil {
					return fail("avgpool1d", in, "%v", err)
				}
				return Shape{in[0].C, L}, nil
			},
			Field: poolField,
			Cost:  poolCost,
			Forward: func(c *Call) {
				k, s, p := pool(c.A)
				ops.AvgPool1D{Kernel: k, Stride: s, Pad: p}.Forward(c.Y, c.X[0], c.In[0].T)
			},
			Backward: func(c *Call) {
				if c.DX[0] != nil {
					k, s, p := pool(c.A)
					ops.AvgPool1D{Kernel: k, Stride: s, Pad: p}.Backward(c.DX[0], c.DY, c.In[0].T)
				}
			},
		},
		{
			Kind: "globalavgpool", Inputs: 1,
			Shape:   func(_ Attrs, in []Shape) (Shape, error) { return Shape{in[0].C, 1}, nil },
			Field:   notLocal,
			Forward: func(c *Call) { ops.GlobalAvgPool(c.Y, c.X[0], c.In[0].T) },
			Backward: func(c *Call) {
				if c.DX[0] != nil {
					ops.GlobalAvgPoolBackward(c.DX[0], c.DY, c.In[0].T)
				}
			},
		},
		{
			Kind: "globalmaxpool", Inputs: 1, MaxOverTime: true,
			Shape:   func(_ Attrs, in []Shape) (Shape, error) { return Shape{in[0].C, 1}, nil },
			Field:   notLocal,
			Indices: func(_ Attrs, in []Shape, _ Shape) int { return in[0].C },
			Forward: func(c *Call) { ops.GlobalMaxPool(c.Y, c.Idx, c.X[0], c.In[0].T) },
			Backward: func(c *Call) {
				if c.DX[0] != nil {
					ops.GlobalMaxPoolBackward(c.DX[0], c.DY, c.Idx, c.In[0].T)
				}
			},
		},
		{
			Kind: "batchnorm1d",
			Attrs: []AttrSpec{{Name: "eps", Kind: AttrFloat, Default: 1e-5, Accepts: "a finite number >= 0",
				ok: func(v any) bool { return v.(float64) >= 0 }},
				{Name: "momentum", Kind: AttrFloat, Default: 0.1, Accepts: "a number in [0, 1] (the running statistics' update in training)",
					ok: func(v any) bool { return v.(float64) >= 0 && v.(float64) <= 1 }}},
			Inputs: 1,
			Params: func(_ Attrs, in []Shape) []ParamSpec {
				c := []int{in[0].C}
				return []ParamSpec{{"weight", c, true}, {"bias", c, true}, {"running_mean", c, false}, {"running_var", c, false}}
			},
			Shape:   sameShape,
			Field:   func(Attrs) Field { return identityField },
			Forward: bnForward,
			Columns: bnForward,
			Backward: func(c *Call) {
				ops.BatchNorm1D{C: c.In[0].C, Eps: c.A.Float("eps")}.Backward(c.DX[0], c.dp(0), c.dp(1), c.DY, c.X[0], c.P[0], c.P[2], c.P[3], c.In[0].T)
			},
			// State: the batch mean and 1/sqrt(var + eps) per channel
			// (the backward pass recomputes xh from the input).
			State: func(_ Attrs, in []Shape, B int) int { return ops.BatchNorm1D{C: in[0].C}.StatsLen() },
			// Channels are independent: their ranges run on the call's
			// workers (the same bytes for any number).
			TrainForward:  func(c *Call) { c.channels(c.In[0].C, bnTrainForward) },
			TrainBackward: func(c *Call) { c.channels(c.In[0].C, bnTrainBackward) },
			Fuses:         "relu",
			// Eval mode: s = weight / sqrt(running_var + eps), t = bias -
			// running_mean s.
			Affine: func(a Attrs, p [][]float32, s, t []float64) {
				eps := a.Float("eps")
				for c := range s {
					s[c] = float64(p[0][c]) / math.Sqrt(float64(p[3][c])+eps)
					t[c] = float64(p[1][c]) - float64(p[2][c])*s[c]
				}
			},
		},
		{
			Kind:   "linear",
			Attrs:  []AttrSpec{intAttr("out", 1, MaxOut, "graph.MaxOut", nil, ", output features"), boolAttr("bias", true)},
			Inputs: 1,
			Params: func(a Attrs, in []Shape) []ParamSpec {
				p := []ParamSpec{{"weight", []int{a.Int("out"), in[0].C}, true}}
				if a.Bool("bias") {
					p = append(p, ParamSpec{"bias", []int{a.Int("out")}, true})
				}
				return p
			},
			Shape: func(a Attrs, in []Shape) (Shape, error) {
				if err := vectorIn("linear", in); err != nil {
					return Shape{}, err
				}
				return Shape{a.Int("out"), 1}, nil
			},
			Field: notLocal,
			Cost:  func(_ Attrs, in []Shape, out Shape) float64 { return 2 * float64(out.C*in[0].C) },
			Forward: func(c *Call) {
				var b []float32
				if len(c.P) > 1 {
					b = c.P[1]
				}
				ops.Linear{In: c.In[0].C, Out: c.Out.C}.Forward(c.Y, c.X[0], c.P[0], b)
			},
			Columns: func(c *Call) {
				var b []float32
				if len(c.P) > 1 {
					b = c.P[1]
				}
				ops.Linear{In: c.In[0].C, Out: c.Out.C}.ForwardColumns(c.Y, c.X[0], c.P[0], b, c.Out.T)
			},
			FastColumns: func(c *Call) {
				var b []float32
				if len(c.P) > 1 {
					b = c.P[1]
				}
				ops.Linear{In: c.In[0].C, Out: c.Out.C}.ForwardColumnsFMA(c.Y, c.X[0], c.P[0], b, c.Out.T)
			},
			TrainForward: func(c *Call) {
				var b []float32
				if len(c.P) > 1 {
					b = c.P[1]
				}
				ops.Linear{In: c.In[0].C, Out: c.Out.C}.ForwardDot(c.Y, c.X[0], c.P[0], b)
			},
			Backward: func(c *Call) {
				var db []float32
				if len(c.P) > 1 {
					db = c.dp(1)
				}
				ops.Linear{In: c.In[0].C, Out: c.Out.C}.Backward(c.DX[0], c.dp(0), db, c.DY, c.X[0], c.P[0])
			},
			Absorb: absorbAffine,
		},
		{
			Kind: "flatten", Inputs: 1,
			Shape: func(_ Attrs, in []Shape) (Shape, error) {
				c, ok := checked.Mul(in[0].C, in[0].T)
				if !ok {
					return fail("flatten", in, "C x T overflows")
				}
				return Shape{c, 1}, nil
			},
			Field:   notLocal,
			Forward: copyForward,
			Columns: copyForward, // C x 1 copies: flatten is the identity
			Backward: func(c *Call) {
				if c.DX[0] != nil {
					copy(c.DX[0], c.DY)
				}
			},
		},
		reluOp(),
		pointwiseOp("gelu", ops.GELU, ops.GELUBackward),
		pointwiseOp("silu", ops.SiLU, ops.SiLUBackward),
		pointwiseOp("sigmoid", ops.Sigmoid, ops.SigmoidBackward),
		pointwiseOp("tanh", ops.Tanh, ops.TanhBackward),
		{
			Kind:      "leakyrelu",
			Attrs:     []AttrSpec{{Name: "slope", Kind: AttrFloat, Default: 0.01, Accepts: "a finite number"}},
			Inputs:    1,
			Pointwise: true,
			Shape:     sameShape,
			Field:     func(Attrs) Field { return identityField },
			Forward:   leakyForward,
			Columns:   leakyForward,
			Backward: func(c *Call) {
				if c.DX[0] != nil {
					ops.LeakyReLUBackward(c.DX[0], c.DY, c.X[0], float32(c.A.Float("slope")))
				}
			},
		},
		{
			Kind: "softmax", Inputs: 1,
			Attrs: []AttrSpec{intAttr("axis", 0, 1, "1", int64(0), " (0: over the channels of each step; 1: over the steps of each channel)")},
			Shape: sameShape,
			Field: func(a Attrs) Field {
				if a.Int("axis") == 1 {
					return Field{}
				}
				return identityField
			},
			Positions: samePositions,
			Forward:   softmaxForward,
			Columns:   softmaxForward, // over the channels of each step (C x 1 copies: axis 1 is one step)
			Backward: func(c *Call) {
				if c.DX[0] == nil {
					return
				}
				if c.A.Int("axis") == 1 {
					ops.SoftmaxBackward(c.DX[0], c.DY, c.Y, c.In[0].T, 1)
					return
				}
				ops.SoftmaxBackward(c.DX[0], c.DY, c.Y, c.In[0].C, c.In[0].T)
			},
		},
		{
			Kind: "dropout",
			Attrs: []AttrSpec{{Name: "p", Kind: AttrFloat, Default: 0.5, Accepts: "a number 0 <= p < 1",
				ok: func(v any) bool { return v.(float64) >= 0 && v.(float64) < 1 }}},
			Inputs:    1,
			Pointwise: true,
			Shape:     sameShape,
			Field:     func(Attrs) Field { return identityField },
			Forward:   copyForward,
			Columns:   copyForward,
			Backward: func(c *Call) {
				if c.DX[0] != nil {
					copy(c.DX[0], c.DY)
				}
			},
			State: func(_ Attrs, in []Shape, B int) int { return B * in[0].Size() },
			TrainForward: func(c *Call) {
				ops.DropoutMask(c.State, c.A.Float("p"), c.Rand)
				ops.Mul(c.Y, c.X[0], c.State)
			},
			TrainBackward: func(c *Call) {
				if c.DX[0] != nil {
					ops.Mul(c.DX[0], c.DY, c.State)
				}
			},
		},
		{
			Kind: "add", Inputs: 2, Pointwise: true,
			Shape: func(_ Attrs, in []Shape) (Shape, error) {
				if in[0] != in[1] {
					return Shape{}, fmt.Errorf("add of %s and %s: needs two inputs of one shape", in[0], in[1])
				}
				return in[0], nil
			},
			Field: func(Attrs) Field { return identityField },
			Forward: func(c *Call) {
				if !c.Fused {
					ops.Add(c.Y, c.X[0], c.X[1])
					return
				}
				n := c.Out.Size() // a ReLU after it: each sample rectified while in cache
				for b := range c.B {
					y := c.Y[b*n : (b+1)*n]
					ops.Add(y, c.X[0][b*n:(b+1)*n], c.X[1][b*n:(b+1)*n])
					ops.ReLU(y, y)
				}
			},
			Columns:   func(c *Call) { ops.Add(c.Y, c.X[0], c.X[1]) },
			Backward:  func(c *Call) { ops.AddBackward(c.DX[0], c.DX[1], c.DY) },
			EvalFuses: "relu",
		},
		{
			Kind: "concat", Inputs: -2,
			Shape: func(_ Attrs, in []Shape) (Shape, error) {
				out := Shape{0, in[0].T}
				for _, s := range in {
					if s.T != out.T {
						return Shape{}, fmt.Errorf("concat of lengths %v: needs inputs of one length", in)
					}
					var ok bool
					if out.C, ok = checked.Add(out.C, s.C); !ok {
						return Shape{}, fmt.Errorf("concat of %v: the channels overflow", in)
					}
				}
				return out, nil
			},
			Field:   func(Attrs) Field { return identityField },
			Forward: func(c *Call) { ops.Concat(c.Y, c.X, chans(c), c.Out.T) },
			Columns: func(c *Call) { ops.Concat(c.Y, c.X, chans(c), c.Out.T) }, // the channels of each step
			Backward: func(c *Call) {
				ops.ConcatBackward(c.DX, c.DY, chans(c), c.Out.T)
			},
		},
	}, tokenOps()...)
}

// chans returns the input channels of a concat.
func chans(c *Call) []int {
	if len(c.chans) != len(c.In) {
		c.chans = make([]int, len(c.In))
		for i, s := range c.In {
			c.chans[i] = s.C
		}
	}
	return c.chans
}
