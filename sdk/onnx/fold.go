package onnx

import (
	"errors"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/internal/checked"
)

// foldOps are the operators constant folding evaluates when every input
// of the node is a constant (Shape: when its input's shape is fixed),
// with their ONNX semantics at opsets 13 to 17.
var foldOps = map[string]func(f *folder, n *node, in []*Tensor) (Tensor, error){
	"Add":             func(f *folder, n *node, in []*Tensor) (Tensor, error) { return f.arith(n, in, '+') },
	"Cast":            (*folder).cast,
	"Concat":          (*folder).concat,
	"Constant":        (*folder).constant,
	"ConstantOfShape": (*folder).constantOfShape,
	"Div":             func(f *folder, n *node, in []*Tensor) (Tensor, error) { return f.arith(n, in, '/') },
	"Gather":          (*folder).gather,
	"Identity":        func(f *folder, n *node, in []*Tensor) (Tensor, error) { return f.reshaped(in[0], in[0].Shape) },
	"Mul":             func(f *folder, n *node, in []*Tensor) (Tensor, error) { return f.arith(n, in, '*') },
	"Range":           (*folder).rangeOp,
	"Reshape":         (*folder).reshape,
	"Shape":           (*folder).shape,
	"Slice":           (*folder).slice,
	"Squeeze":         (*folder).squeeze,
	"Sub":             func(f *folder, n *node, in []*Tensor) (Tensor, error) { return f.arith(n, in, '-') },
	"Transpose":       (*folder).transpose,
	"Unsqueeze":       (*folder).unsqueeze,
}

// inputCount is the accepted number of inputs of each folded operator
// (min, max), optional trailing inputs included.
var inputCount = map[string][2]int{
	"Add": {2, 2}, "Cast": {1, 1}, "Concat": {1, math.MaxInt32}, "Constant": {0, 0},
	"ConstantOfShape": {1, 1}, "Div": {2, 2}, "Gather": {2, 2}, "Identity": {1, 1},
	"Mul": {2, 2}, "Range": {3, 3}, "Reshape": {2, 2}, "Shape": {1, 1}, "Slice": {3, 5},
	"Squeeze": {1, 2}, "Sub": {2, 2}, "Transpose": {1, 1}, "Unsqueeze": {2, 2},
}

// folder evaluates constant nodes within a budget of elements.
type folder struct {
	b budget
}

// alloc returns a tensor of dtype and shape with zeroed data, after
// reserving its elements.
func (f *folder) alloc(dt DType, shape []int) (Tensor, error) {
	n, err := shapeSize(shape, f.b.max)
	if err != nil {
		return Tensor{}, fmt.Errorf("a result of %w for folded constants", err)
	}
	if err := f.b.take(n); err != nil {
		return Tensor{}, err
	}
	t := Tensor{DType: dt, Shape: append([]int{}, shape...)}
	if dt == Float32 {
		t.Float = make([]float32, n)
	} else {
		t.Int = make([]int64, n)
	}
	return t, nil
}

// gatherFrom returns the tensor of shape whose element i is src's element
// idx(i), the index map computed element by element.
func (f *folder) gatherFrom(src *Tensor, shape []int, idx func(out []int) int) (Tensor, error) {
	t, err := f.alloc(src.DType, shape)
	if err != nil {
		return Tensor{}, err
	}
	forEach(shape, func(i int, out []int) {
		j := idx(out)
		if t.DType == Float32 {
			t.Float[i] = src.Float[j]
		} else {
			t.Int[i] = src.Int[j]
		}
	})
	return t, nil
}

// forEach calls fn for every multi-index of shape in row-major order,
// with its flat index.
func forEach(shape []int, fn func(i int, idx []int)) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	idx := make([]int, len(shape))
	for i := 0; i < n; i++ {
		fn(i, idx)
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
}

// strides are the row-major strides of shape.
func strides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for k := len(shape) - 1; k >= 0; k-- {
		s[k] = acc
		acc *= shape[k]
	}
	return s
}

// reshaped copies t with a new shape of the same number of elements.
func (f *folder) reshaped(t *Tensor, shape []int) (Tensor, error) {
	out, err := f.alloc(t.DType, shape)
	if err != nil {
		return Tensor{}, err
	}
	if out.Len() != t.Len() {
		return Tensor{}, fmt.Errorf("shape %v holds %d elements, the input %v holds %d", shape, out.Len(), t.Shape, t.Len())
	}
	copy(out.Float, t.Float)
	copy(out.Int, t.Int)
	return out, nil
}

// ints returns the values of an int64 tensor of rank at most 1.
func ints(t *Tensor, what string) ([]int64, error) {
	if t.DType != Int64 || len(t.Shape) > 1 {
		return nil, fmt.Errorf("%s must be an int64 scalar or vector, not %s of shape %v", what, t.DType, t.Shape)
	}
	return t.Int, nil
}

// distinctAxes normalizes axes of a tensor of rank r (axis) and errs on
// one given twice.
func distinctAxes(axes []int64, r int) ([]int, error) {
	out := make([]int, len(axes))
	seen := make([]bool, r)
	for i, a := range axes {
		ax, err := axis(a, r)
		if err != nil {
			return nil, err
		}
		if seen[ax] {
			return nil, fmt.Errorf("axes %v repeat axis %d", axes, ax)
		}
		seen[ax], out[i] = true, ax
	}
	return out, nil
}

// axis normalizes an axis of a tensor of rank r (negative counts from the
// end) or errs.
func axis(a int64, r int) (int, error) {
	if a < -int64(r) || a >= int64(r) {
		return 0, fmt.Errorf("axis %d is outside [%d, %d] for rank %d", a, -r, r-1, r)
	}
	if a < 0 {
		a += int64(r)
	}
	return int(a), nil
}

func attrInt(n *node, name string, def int64) (int64, error) {
	a, ok := n.attrs[name]
	if !ok {
		return def, nil
	}
	if a.Kind != AttrInt {
		return 0, fmt.Errorf("attribute %q must be an int", name)
	}
	return a.Int, nil
}

func (f *folder) constant(n *node, _ []*Tensor) (Tensor, error) {
	if len(n.attrs) != 1 {
		return Tensor{}, errors.New("a Constant has exactly one attribute (value, value_float, value_floats, value_int or value_ints)")
	}
	for name, a := range n.attrs {
		switch {
		case name == "value" && a.Kind == AttrTensor:
			return f.reshaped(&a.Tensor, a.Tensor.Shape)
		case name == "value_float" && a.Kind == AttrFloat:
			return f.reshaped(&Tensor{DType: Float32, Shape: []int{}, Float: []float32{a.Float}}, []int{})
		case name == "value_int" && a.Kind == AttrInt:
			return f.reshaped(&Tensor{DType: Int64, Shape: []int{}, Int: []int64{a.Int}}, []int{})
		case name == "value_floats" && a.Kind == AttrFloats:
			return f.reshaped(&Tensor{DType: Float32, Shape: []int{len(a.Floats)}, Float: a.Floats}, []int{len(a.Floats)})
		case name == "value_ints" && a.Kind == AttrInts:
			return f.reshaped(&Tensor{DType: Int64, Shape: []int{len(a.Ints)}, Int: a.Ints}, []int{len(a.Ints)})
		}
		return Tensor{}, fmt.Errorf("attribute %q is not accepted on a Constant; accepted: value (a tensor), value_float, value_floats, value_int, value_ints", name)
	}
	panic("unreachable")
}

func (f *folder) constantOfShape(n *node, in []*Tensor) (Tensor, error) {
	dims, err := ints(in[0], "the shape input")
	if err != nil {
		return Tensor{}, err
	}
	if len(in[0].Shape) != 1 {
		return Tensor{}, fmt.Errorf("the shape input must be a vector, not of shape %v", in[0].Shape)
	}
	shape := make([]int, len(dims))
	for i, d := range dims {
		if d < 0 || d > int64(f.b.max) {
			return Tensor{}, fmt.Errorf("shape %v: dimension %d is outside [0, %d]", dims, d, f.b.max)
		}
		shape[i] = int(d)
	}
	val := Tensor{DType: Float32, Float: []float32{0}}
	if a, ok := n.attrs["value"]; ok {
		if a.Kind != AttrTensor || a.Tensor.Len() != 1 {
			return Tensor{}, errors.New("attribute value must be a tensor of one element")
		}
		val = a.Tensor
	}
	out, err := f.alloc(val.DType, shape)
	if err != nil {
		return Tensor{}, err
	}
	for i := range out.Float {
		out.Float[i] = val.Float[0]
	}
	for i := range out.Int {
		out.Int[i] = val.Int[0]
	}
	return out, nil
}

// shape folds Shape: in[0] is a tensor standing for the input's shape
// (only its Shape is read).
func (f *folder) shape(n *node, in []*Tensor) (Tensor, error) {
	r := int64(len(in[0].Shape))
	start, err := attrInt(n, "start", 0)
	if err != nil {
		return Tensor{}, err
	}
	end, err := attrInt(n, "end", r)
	if err != nil {
		return Tensor{}, err
	}
	clamp := func(v int64) int64 {
		if v < 0 {
			v += r
		}
		return max(0, min(v, r))
	}
	start, end = clamp(start), clamp(end)
	out, err := f.alloc(Int64, []int{int(max(0, end-start))})
	if err != nil {
		return Tensor{}, err
	}
	for i := range out.Int {
		out.Int[i] = int64(in[0].Shape[int(start)+i])
	}
	return out, nil
}

func (f *folder) gather(n *node, in []*Tensor) (Tensor, error) {
	data, idx := in[0], in[1]
	if len(data.Shape) == 0 {
		return Tensor{}, errors.New("the data input must have rank 1 or more")
	}
	if idx.DType != Int64 {
		return Tensor{}, fmt.Errorf("the indices must be int64, not %s", idx.DType)
	}
	a, err := attrInt(n, "axis", 0)
	if err != nil {
		return Tensor{}, err
	}
	ax, err := axis(a, len(data.Shape))
	if err != nil {
		return Tensor{}, err
	}
	s := data.Shape[ax]
	for _, v := range idx.Int {
		if v < -int64(s) || v >= int64(s) {
			return Tensor{}, fmt.Errorf("index %d is outside [%d, %d] on axis %d of size %d", v, -s, s-1, ax, s)
		}
	}
	shape := append(append(append([]int{}, data.Shape[:ax]...), idx.Shape...), data.Shape[ax+1:]...)
	ds, is := strides(data.Shape), strides(idx.Shape)
	q := len(idx.Shape)
	return f.gatherFrom(data, shape, func(o []int) int {
		j := 0
		for k := 0; k < ax; k++ {
			j += o[k] * ds[k]
		}
		ii := 0
		for k := 0; k < q; k++ {
			ii += o[ax+k] * is[k]
		}
		v := int(idx.Int[ii])
		if v < 0 {
			v += s
		}
		j += v * ds[ax]
		for k := ax + 1; k < len(data.Shape); k++ {
			j += o[k+q-1] * ds[k]
		}
		return j
	})
}

func (f *folder) unsqueeze(_ *node, in []*Tensor) (Tensor, error) {
	axes, err := ints(in[1], "the axes input")
	if err != nil {
		return Tensor{}, err
	}
	r := len(in[0].Shape) + len(axes)
	axs, err := distinctAxes(axes, r)
	if err != nil {
		return Tensor{}, err
	}
	ones := make([]bool, r)
	for _, ax := range axs {
		ones[ax] = true
	}
	shape := make([]int, 0, r)
	k := 0
	for _, one := range ones {
		if one {
			shape = append(shape, 1)
		} else {
			shape = append(shape, in[0].Shape[k])
			k++
		}
	}
	return f.reshaped(in[0], shape)
}

func (f *folder) squeeze(_ *node, in []*Tensor) (Tensor, error) {
	r := len(in[0].Shape)
	drop := make([]bool, r)
	if len(in) > 1 && in[1] != nil {
		axes, err := ints(in[1], "the axes input")
		if err != nil {
			return Tensor{}, err
		}
		for _, a := range axes {
			ax, err := axis(a, r)
			if err != nil {
				return Tensor{}, err
			}
			if in[0].Shape[ax] != 1 {
				return Tensor{}, fmt.Errorf("axis %d has size %d, not 1", ax, in[0].Shape[ax])
			}
			drop[ax] = true
		}
	} else {
		for k, d := range in[0].Shape {
			drop[k] = d == 1
		}
	}
	shape := []int{}
	for k, d := range in[0].Shape {
		if !drop[k] {
			shape = append(shape, d)
		}
	}
	return f.reshaped(in[0], shape)
}

func (f *folder) concat(n *node, in []*Tensor) (Tensor, error) {
	if _, ok := n.attrs["axis"]; !ok {
		return Tensor{}, errors.New("attribute axis is required")
	}
	a, err := attrInt(n, "axis", 0)
	if err != nil {
		return Tensor{}, err
	}
	first := in[0]
	r := len(first.Shape)
	if r == 0 {
		return Tensor{}, errors.New("scalars cannot be concatenated")
	}
	ax, err := axis(a, r)
	if err != nil {
		return Tensor{}, err
	}
	shape := append([]int{}, first.Shape...)
	shape[ax] = 0
	for i, t := range in {
		if t == nil {
			return Tensor{}, fmt.Errorf("input %d is empty", i)
		}
		if t.DType != first.DType || len(t.Shape) != r {
			return Tensor{}, fmt.Errorf("input %d is %s of shape %v, input 0 %s of shape %v", i, t.DType, t.Shape, first.DType, first.Shape)
		}
		for k := range t.Shape {
			if k != ax && t.Shape[k] != first.Shape[k] {
				return Tensor{}, fmt.Errorf("input %d has shape %v, input 0 %v: they differ off axis %d", i, t.Shape, first.Shape, ax)
			}
		}
		var ok bool
		if shape[ax], ok = checked.Add(shape[ax], t.Shape[ax]); !ok {
			return Tensor{}, fmt.Errorf("the inputs' sizes on axis %d overflow", ax)
		}
	}
	out, err := f.alloc(first.DType, shape)
	if err != nil {
		return Tensor{}, err
	}
	if out.Len() == 0 {
		return out, nil
	}
	outer := 1
	for _, d := range shape[:ax] {
		outer *= d
	}
	inner := 1
	for _, d := range shape[ax+1:] {
		inner *= d
	}
	pos := 0
	for o := 0; o < outer; o++ {
		for _, t := range in {
			m := t.Shape[ax] * inner
			if out.DType == Float32 {
				copy(out.Float[pos:pos+m], t.Float[o*m:(o+1)*m])
			} else {
				copy(out.Int[pos:pos+m], t.Int[o*m:(o+1)*m])
			}
			pos += m
		}
	}
	return out, nil
}

func (f *folder) slice(_ *node, in []*Tensor) (Tensor, error) {
	data := in[0]
	r := len(data.Shape)
	starts, err := ints(in[1], "the starts input")
	if err != nil {
		return Tensor{}, err
	}
	ends, err := ints(in[2], "the ends input")
	if err != nil {
		return Tensor{}, err
	}
	if len(ends) != len(starts) {
		return Tensor{}, fmt.Errorf("%d starts but %d ends", len(starts), len(ends))
	}
	axes := make([]int64, len(starts))
	for i := range axes {
		axes[i] = int64(i)
	}
	if len(in) > 3 && in[3] != nil {
		if axes, err = ints(in[3], "the axes input"); err != nil {
			return Tensor{}, err
		}
	}
	steps := make([]int64, len(starts))
	for i := range steps {
		steps[i] = 1
	}
	if len(in) > 4 && in[4] != nil {
		if steps, err = ints(in[4], "the steps input"); err != nil {
			return Tensor{}, err
		}
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		return Tensor{}, fmt.Errorf("%d starts, %d axes and %d steps: they must be as many", len(starts), len(axes), len(steps))
	}
	begin := make([]int, r)
	step := make([]int, r)
	shape := append([]int{}, data.Shape...)
	for k := range step {
		step[k] = 1
	}
	axs, err := distinctAxes(axes, r)
	if err != nil {
		return Tensor{}, err
	}
	for i, ax := range axs {
		d := int64(data.Shape[ax])
		st, s, e := steps[i], starts[i], ends[i]
		if st == 0 {
			return Tensor{}, errors.New("a step is 0")
		}
		if s < 0 {
			s += d
		}
		if e < 0 {
			e += d
		}
		// The count is 1 + (the distance to the last index before end)
		// / |step|: the distance is less than d, and |step| is taken as
		// an unsigned number (|MinInt64| = 2^63), so nothing overflows.
		var cnt int64
		if st > 0 {
			s, e = max(0, min(s, d)), max(0, min(e, d))
			if e > s {
				cnt = int64(uint64(e-s-1)/uint64(st)) + 1
			}
		} else if d > 0 { // an empty axis has nothing to slice backwards
			s, e = max(0, min(s, d-1)), max(-1, min(e, d-1))
			if s > e {
				cnt = int64(uint64(s-e-1)/(-uint64(st))) + 1
			}
		}
		begin[ax], step[ax], shape[ax] = int(s), int(st), int(cnt)
	}
	ds := strides(data.Shape)
	return f.gatherFrom(data, shape, func(o []int) int {
		j := 0
		for k := range o {
			j += (begin[k] + o[k]*step[k]) * ds[k]
		}
		return j
	})
}

func (f *folder) reshape(n *node, in []*Tensor) (Tensor, error) {
	dims, err := ints(in[1], "the shape input")
	if err != nil {
		return Tensor{}, err
	}
	allowZero, err := attrInt(n, "allowzero", 0)
	if err != nil {
		return Tensor{}, err
	}
	total := in[0].Len()
	shape := make([]int, len(dims))
	infer, known := -1, 1
	for i, d := range dims {
		switch {
		case d == -1:
			if infer >= 0 {
				return Tensor{}, fmt.Errorf("shape %v has more than one -1", dims)
			}
			infer = i
			continue
		case d == 0 && allowZero == 0:
			if i >= len(in[0].Shape) {
				return Tensor{}, fmt.Errorf("shape %v copies dimension %d (a 0) of an input of rank %d", dims, i, len(in[0].Shape))
			}
			shape[i] = in[0].Shape[i]
		case d < 0 || d > int64(f.b.max):
			return Tensor{}, fmt.Errorf("shape %v: dimension %d is outside [-1, %d]", dims, d, f.b.max)
		default:
			shape[i] = int(d)
		}
		var ok bool
		if known, ok = checked.Mul(known, shape[i]); !ok || known > max(total, f.b.max) {
			return Tensor{}, fmt.Errorf("shape %v holds more than the input's %d elements", dims, total)
		}
	}
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			return Tensor{}, fmt.Errorf("shape %v cannot hold the input's %d elements", dims, total)
		}
		shape[infer] = total / known
	}
	return f.reshaped(in[0], shape)
}

func (f *folder) transpose(n *node, in []*Tensor) (Tensor, error) {
	r := len(in[0].Shape)
	perm := make([]int, r)
	for k := range perm {
		perm[k] = r - 1 - k
	}
	if a, ok := n.attrs["perm"]; ok {
		if a.Kind != AttrInts || len(a.Ints) != r {
			return Tensor{}, fmt.Errorf("attribute perm must be %d ints, a permutation of the axes", r)
		}
		seen := make([]bool, r)
		for k, p := range a.Ints {
			if p < 0 || p >= int64(r) || seen[p] {
				return Tensor{}, fmt.Errorf("attribute perm %v is not a permutation of 0..%d", a.Ints, r-1)
			}
			seen[p] = true
			perm[k] = int(p)
		}
	}
	shape := make([]int, r)
	for k, p := range perm {
		shape[k] = in[0].Shape[p]
	}
	ds := strides(in[0].Shape)
	return f.gatherFrom(in[0], shape, func(o []int) int {
		j := 0
		for k, p := range perm {
			j += o[k] * ds[p]
		}
		return j
	})
}

func (f *folder) cast(n *node, in []*Tensor) (Tensor, error) {
	to, err := attrInt(n, "to", -1)
	if err != nil {
		return Tensor{}, err
	}
	var dt DType
	switch to {
	case 1:
		dt = Float32
	case 7:
		dt = Int64
	default:
		return Tensor{}, fmt.Errorf("cast to data type %d is not accepted; accepted: 1 (FLOAT), 7 (INT64)", to)
	}
	out, err := f.alloc(dt, in[0].Shape)
	if err != nil {
		return Tensor{}, err
	}
	src := in[0]
	switch {
	case src.DType == dt:
		copy(out.Float, src.Float)
		copy(out.Int, src.Int)
	case dt == Float32:
		for i, v := range src.Int {
			out.Float[i] = float32(v)
		}
	default:
		for i, v := range src.Float {
			if math.IsNaN(float64(v)) || math.Abs(float64(v)) >= 1<<63 {
				return Tensor{}, fmt.Errorf("float %g cannot be cast to int64", v)
			}
			out.Int[i] = int64(v)
		}
	}
	return out, nil
}

func (f *folder) rangeOp(_ *node, in []*Tensor) (Tensor, error) {
	dt := in[0].DType
	for i, t := range in {
		if len(t.Shape) != 0 || t.DType != dt {
			return Tensor{}, fmt.Errorf("input %d must be a scalar of the type of input 0 (%s), not %s of shape %v", i, dt, t.DType, t.Shape)
		}
	}
	if dt == Int64 {
		return f.rangeInt(in[0].Int[0], in[1].Int[0], in[2].Int[0])
	}
	start, limit, delta := float64(in[0].Float[0]), float64(in[1].Float[0]), float64(in[2].Float[0])
	if delta == 0 || math.IsNaN(start+limit+delta) || math.IsInf(start+limit+delta, 0) {
		return Tensor{}, fmt.Errorf("range(%g, %g, %g): delta must be non-zero and all finite", start, limit, delta)
	}
	cnt := math.Max(math.Ceil((limit-start)/delta), 0)
	if cnt > float64(f.b.left) {
		return Tensor{}, fmt.Errorf("range(%g, %g, %g): %g elements, more than the %d left for folded constants", start, limit, delta, cnt, f.b.left)
	}
	out, err := f.alloc(dt, []int{int(cnt)})
	if err != nil {
		return Tensor{}, err
	}
	for i := range out.Float {
		out.Float[i] = in[0].Float[0] + float32(i)*in[2].Float[0]
	}
	return out, nil
}

// rangeInt folds an int64 Range exactly: the count is 1 + (the distance
// from start to the last value before limit) / |delta|, in unsigned
// arithmetic (the distance between two int64s and |MinInt64| fit a
// uint64), and every value start + i*delta lies between start and limit,
// so its two's complement computation is exact.
func (f *folder) rangeInt(start, limit, delta int64) (Tensor, error) {
	if delta == 0 {
		return Tensor{}, fmt.Errorf("range(%d, %d, %d): delta must be non-zero", start, limit, delta)
	}
	var cnt uint64
	switch {
	case delta > 0 && limit > start:
		cnt = (uint64(limit)-uint64(start)-1)/uint64(delta) + 1
	case delta < 0 && start > limit:
		cnt = (uint64(start)-uint64(limit)-1)/(-uint64(delta)) + 1
	}
	if cnt > uint64(f.b.left) {
		return Tensor{}, fmt.Errorf("range(%d, %d, %d): %d elements, more than the %d left for folded constants", start, limit, delta, cnt, f.b.left)
	}
	out, err := f.alloc(Int64, []int{int(cnt)})
	if err != nil {
		return Tensor{}, err
	}
	for i := range out.Int {
		out.Int[i] = start + int64(i)*delta
	}
	return out, nil
}

// arith folds Add, Sub, Mul and Div with numpy's broadcasting; integer
// division truncates toward zero, as onnxruntime's. An integer result
// that overflows int64 is an error, not a wrapped number (these compute
// shapes and pads).
func (f *folder) arith(_ *node, in []*Tensor, op byte) (Tensor, error) {
	a, b := in[0], in[1]
	if a.DType != b.DType {
		return Tensor{}, fmt.Errorf("the inputs are %s and %s: they must have one type", a.DType, b.DType)
	}
	r := max(len(a.Shape), len(b.Shape))
	shape := make([]int, r)
	for k := 0; k < r; k++ {
		da, db := dimFromEnd(a.Shape, r-1-k), dimFromEnd(b.Shape, r-1-k)
		switch {
		case da == db || db == 1:
			shape[k] = da
		case da == 1:
			shape[k] = db
		default:
			return Tensor{}, fmt.Errorf("shapes %v and %v do not broadcast", a.Shape, b.Shape)
		}
	}
	out, err := f.alloc(a.DType, shape)
	if err != nil {
		return Tensor{}, err
	}
	ia, ib := bcast(a.Shape, r), bcast(b.Shape, r)
	var ferr error
	forEach(shape, func(i int, o []int) {
		ja, jb := 0, 0
		for k := range o {
			ja += o[k] * ia[k]
			jb += o[k] * ib[k]
		}
		if out.DType == Float32 {
			x, y := a.Float[ja], b.Float[jb]
			switch op {
			case '+':
				out.Float[i] = x + y
			case '-':
				out.Float[i] = x - y
			case '*':
				out.Float[i] = x * y
			default:
				out.Float[i] = x / y
			}
			return
		}
		x, y := a.Int[ja], b.Int[jb]
		var v int
		ok := true
		switch op {
		case '+':
			v, ok = checked.Add(int(x), int(y))
		case '-':
			v, ok = checked.Sub(int(x), int(y))
		case '*':
			v, ok = checked.Mul(int(x), int(y))
		default:
			if y == 0 {
				ferr = fmt.Errorf("%d / 0: integer division by zero", x)
				return
			}
			if x == math.MinInt64 && y == -1 {
				ferr = fmt.Errorf("%d / -1 overflows int64", x)
				return
			}
			v = int(x / y)
		}
		if !ok && ferr == nil {
			ferr = fmt.Errorf("%d %c %d overflows int64", x, op, y)
		}
		out.Int[i] = int64(v)
	})
	if ferr != nil {
		return Tensor{}, ferr
	}
	return out, nil
}

// dimFromEnd is shape's dimension k places from the end, 1 past its rank.
func dimFromEnd(shape []int, k int) int {
	if k >= len(shape) {
		return 1
	}
	return shape[len(shape)-1-k]
}

// bcast are the strides of shape broadcast to rank r: 0 on the leading
// axes it lacks and on its axes of size 1.
func bcast(shape []int, r int) []int {
	s := strides(shape)
	out := make([]int, r)
	off := r - len(shape)
	for k := range shape {
		if shape[k] != 1 {
			out[off+k] = s[k]
		}
	}
	return out
}
