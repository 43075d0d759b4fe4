package graph

import (
	"fmt"
	"sort"
	"strings"

	"github.com/uaxai/uaxai/internal/checked"
)

// Param is one parameter tensor in the flat parameter vector.
type Param struct {
	// Name is the PyTorch state_dict name, "<node>.<suffix>".
	Name      string
	Shape     []int
	Offset    int
	Len       int
	Trainable bool
}

// NodeError is an error of one node of a Spec.
type NodeError struct {
	Graph string
	Index int
	Name  string
	Err   error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("graph %q: node %d %q: %v", e.Graph, e.Index, e.Name, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

func nodeErr(spec Spec, i int, err error) error {
	return &NodeError{Graph: spec.Name, Index: i, Name: spec.Nodes[i].Name, Err: err}
}

// node is a compiled node.
type node struct {
	name   string
	op     *Op
	attrs  Attrs
	inputs []int // value ids: 0 is the network's input, i+1 node i
	in     []Shape
	out    Shape
	params []int // indices into Net.params
	idx    int   // int32 scratch per sample
}

// Net is a compiled Spec: validated, shapes known, parameters laid out and
// activation buffers planned. A Net holds its buffers: it is not safe for
// concurrent use.
type Net struct {
	spec   Spec
	nodes  []node
	params []Param
	nparam int
	values int // a sample's values: the input's and every node's output
	output int // node index of the output
	// shapes[v] is value v's shape (v = 0 the input, i+1 node i).
	shapes []Shape
	// readers[v] lists the nodes reading value v (once per node).
	readers [][]int
	// Theta is the flat parameter vector, laid out as Params says.
	Theta []float32
	// Workers is the number of goroutines a node's call may use (its
	// sample chunks, chunks.go); 0 or 1: one. Results do not depend on it.
	Workers int

	// The forward plan of inference: value v lives in slot fwdSlot[v]
	// (-1: the input, not a buffer); slot sizes per sample.
	fwdSlot []int
	fwdSize []int
	// The backward plan: gradient of value v in slot bwdSlot[v].
	bwdSlot []int
	bwdSize []int

	// anc[i]: node i is an ancestor of the output (or the output).
	anc []bool
	// learns[v]: a training pass needs value v's gradient, for a
	// trainable parameter of v's node or of a node v is computed from
	// (false for the input, value 0).
	learns []bool
	// In a training pass node j applies node fuse[j]'s op as well
	// (Op.Fuses; -1: none), and a node with folded set is skipped.
	fuse   []int
	folded []bool

	// The folded inference pass (evalfold.go): node j's group, the nodes
	// a group absorbs (not run), the pass's buffer plan, and the folded
	// parameters of each absorbing node, used while evalOn.
	egroup         []evalGroup
	eskip          []bool
	evSlot, evSize []int
	evP            [][][]float32
	evalOn         bool

	unplanned  bool // tests: every value its own buffer in inference too
	denseGrads bool // tests: a training pass forms every gradient (no sparsegrad.go)
	// backwardHook, for tests, sees each node's Call after its Backward
	// (in a training pass: as planned, before its run, samples.go).
	backwardHook func(i int, c *Call)
	ws           *workspace
	win          *winWS     // the incremental path's (window.go)
	chain        *chainWS   // the chains' (chain.go)
	trunkOnce    bool       // tplan was looked for (trunk.go)
	tplan        *trunkPlan // nil: no trunk and head split
	last         lastRun    // the last Run, for Backprop
}

// Compile validates spec and builds its Net: node names unique module
// paths, inputs defined earlier, attributes known and accepted by the op
// table, every node's output shape defined; the output node gives C x 1.
// Errors name the node and say what is accepted.
func Compile(spec Spec) (*Net, error) {
	return compile(spec, Ops())
}

func compile(spec Spec, table *Table) (*Net, error) {
	if spec.InChannels < 1 || spec.InLen < 1 {
		return nil, fmt.Errorf("graph %q: in_channels %d, in_len %d; need both >= 1", spec.Name, spec.InChannels, spec.InLen)
	}
	if len(spec.Nodes) == 0 {
		return nil, fmt.Errorf("graph %q: no nodes", spec.Name)
	}
	if len(spec.Nodes) > MaxNodes {
		return nil, fmt.Errorf("graph %q: %d nodes, above the bound of %d (graph.MaxNodes)", spec.Name, len(spec.Nodes), MaxNodes)
	}
	// Every count is checked before anything it sizes is allocated:
	// values holds the input's and the nodes' values a sample so far.
	values, err := size(Shape{spec.InChannels, spec.InLen}, "the input (in_channels x in_len)")
	if err != nil {
		return nil, fmt.Errorf("graph %q: %w", spec.Name, err)
	}
	n := &Net{spec: spec, shapes: []Shape{{spec.InChannels, spec.InLen}}}
	ids := map[string]int{Input: 0}
	later := map[string]int{}
	for i, nd := range spec.Nodes {
		if _, ok := later[nd.Name]; !ok {
			later[nd.Name] = i
		}
	}
	canon := spec
	canon.Nodes = make([]Node, len(spec.Nodes))
	for i, nd := range spec.Nodes {
		if err := checkPath(nd.Name); err != nil {
			return nil, nodeErr(spec, i, fmt.Errorf("name %v", err))
		}
		if _, dup := ids[nd.Name]; dup {
			if nd.Name == Input {
				return nil, nodeErr(spec, i, fmt.Errorf("the name %q is reserved for the network's input", Input))
			}
			return nil, nodeErr(spec, i, fmt.Errorf("name used by an earlier node; names must be unique"))
		}
		op, ok := table.Lookup(nd.Op)
		if !ok {
			return nil, nodeErr(spec, i, fmt.Errorf("unknown op %q; accepted: %s", nd.Op, strings.Join(table.Kinds(), ", ")))
		}
		inputs := nd.Inputs
		if inputs == nil {
			inputs = []string{Input}
			if i > 0 {
				inputs = []string{spec.Nodes[i-1].Name}
			}
		}
		switch {
		case len(inputs) > MaxInputs:
			return nil, nodeErr(spec, i, fmt.Errorf("inputs: %d, above the bound of %d (graph.MaxInputs)", len(inputs), MaxInputs))
		case op.Inputs >= 0 && len(inputs) != op.Inputs:
			return nil, nodeErr(spec, i, fmt.Errorf("op %s takes %d input(s), has %d (%s)", op.Kind, op.Inputs, len(inputs), strings.Join(inputs, ", ")))
		case op.Inputs == -2 && len(inputs) < 2:
			return nil, nodeErr(spec, i, fmt.Errorf("op %s takes two or more inputs, has %d", op.Kind, len(inputs)))
		}
		cn := node{name: nd.Name, op: op}
		for _, in := range inputs {
			v, ok := ids[in]
			if !ok {
				if j, ok := later[in]; ok {
					return nil, nodeErr(spec, i, fmt.Errorf("input %q is node %d, not an earlier node; nodes must be in topological order", in, j))
				}
				return nil, nodeErr(spec, i, fmt.Errorf("input %q is neither %q nor an earlier node", in, Input))
			}
			cn.inputs = append(cn.inputs, v)
			cn.in = append(cn.in, n.shapes[v])
		}
		attrs, err := op.resolve(nd.Attrs)
		if err != nil {
			return nil, nodeErr(spec, i, err)
		}
		cn.attrs = attrs
		out, err := op.Shape(attrs, cn.in)
		if err != nil {
			return nil, nodeErr(spec, i, err)
		}
		cn.out = out
		sz, err := size(out, "its output ("+op.Kind+" on "+joinShapes(cn.in)+")")
		if err != nil {
			return nil, nodeErr(spec, i, err)
		}
		if values, ok = checked.Add(values, sz); !ok || values > MaxValues {
			return nil, nodeErr(spec, i, fmt.Errorf("a sample's values (the input's and every node's output up to this one) are above the bound of %d (graph.MaxValues, %d MiB as float32); its output is %s", MaxValues, MaxValues*4>>20, out))
		}
		if op.Indices != nil {
			cn.idx = op.Indices(attrs, cn.in, out)
		}
		if op.Params != nil {
			for _, p := range op.Params(attrs, cn.in) {
				name := nd.Name + "." + p.Suffix
				l, err := paramLen(name, p.Shape)
				if err != nil {
					return nil, nodeErr(spec, i, err)
				}
				total, ok := checked.Add(n.nparam, l)
				if !ok || total > MaxParams {
					return nil, nodeErr(spec, i, fmt.Errorf("the network has %d parameters up to %s of shape %v, above the bound of %d (graph.MaxParams, %d MiB as float32); make the layers narrower", n.nparam+l, name, p.Shape, MaxParams, MaxParams*4>>20))
				}
				cn.params = append(cn.params, len(n.params))
				n.params = append(n.params, Param{Name: name, Shape: p.Shape, Offset: n.nparam, Len: l, Trainable: p.Trainable})
				n.nparam = total
			}
		}
		ids[nd.Name] = i + 1
		n.shapes = append(n.shapes, out)
		n.nodes = append(n.nodes, cn)
		canon.Nodes[i] = Node{Name: nd.Name, Op: nd.Op, Inputs: inputs, Attrs: map[string]any(attrs)}
	}
	n.output = len(n.nodes) - 1
	if spec.Output != "" {
		v, ok := ids[spec.Output]
		if !ok || v == 0 {
			return nil, fmt.Errorf("graph %q: output %q is not a node", spec.Name, spec.Output)
		}
		n.output = v - 1
	}
	if o := n.nodes[n.output]; o.out.T != 1 || o.out.C < 2 {
		return nil, fmt.Errorf("graph %q: output node %q gives %s; need K x 1 with K >= 2 classes (end with a global pool and a linear layer)", spec.Name, o.name, o.out)
	}
	canon.Output = n.nodes[n.output].name
	n.spec = canon
	n.readers = make([][]int, len(n.shapes))
	for i, nd := range n.nodes {
		for j, v := range nd.inputs {
			if !contains(nd.inputs[:j], v) {
				n.readers[v] = append(n.readers[v], i)
			}
		}
	}
	// nparam <= MaxParams and values <= MaxValues: counted above.
	n.values = values
	n.Theta = make([]float32, n.nparam)
	n.planFusion()
	n.plan()
	n.planEval()
	return n, nil
}

// planFusion folds into node j, for training passes, the node i that is
// the only reader of j's value when i's op is the kind j's op fuses
// (Op.Fuses; only a training pass folds):
// j then writes i's value and takes i's gradient.
func (n *Net) planFusion() {
	n.fuse, n.folded = make([]int, len(n.nodes)), make([]bool, len(n.nodes))
	for j, nd := range n.nodes {
		n.fuse[j] = -1
		if r := n.readers[j+1]; nd.op.Fuses != "" && j != n.output && len(r) == 1 {
			if i := r[0]; n.nodes[i].op.Kind == nd.op.Fuses && len(n.nodes[i].inputs) == 1 {
				n.fuse[j], n.folded[i] = i, true
			}
		}
	}
}

// joinShapes lists input shapes for errors.
func joinShapes(in []Shape) string {
	s := make([]string, len(in))
	for i, x := range in {
		s[i] = x.String()
	}
	return strings.Join(s, ", ")
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// checkPath accepts a PyTorch module path: dot-separated non-empty parts
// of letters, digits and '_'.
func checkPath(name string) error {
	if name == "" {
		return fmt.Errorf("is empty; need a module path such as \"block1.conv1\"")
	}
	for _, part := range strings.Split(name, ".") {
		if part == "" {
			return fmt.Errorf("%q has an empty part; need a module path such as \"block1.conv1\"", name)
		}
		for _, r := range part {
			if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return fmt.Errorf("%q has the character %q; need letters, digits, '_' and '.'", name, r)
			}
		}
	}
	return nil
}

// Spec returns the canonical spec: inputs explicit, attributes with
// defaults filled in, in canonical types, the output named.
func (n *Net) Spec() Spec { return n.spec }

// Params lists the parameter tensors in the order of Theta.
func (n *Net) Params() []Param { return append([]Param(nil), n.params...) }

// NumParams is len(Theta).
func (n *Net) NumParams() int { return n.nparam }

// Values is the number of a sample's values, the input's and every
// node's output added up: at most MaxValues. A batch's buffers hold at
// most B times this (and Peak's planned share of it).
func (n *Net) Values() int { return n.values }

// Classes is the number of outputs K.
func (n *Net) Classes() int { return n.nodes[n.output].out.C }

// InShape is the input's shape.
func (n *Net) InShape() Shape { return n.shapes[0] }

// Field returns node i's receptive field and whether its op is pointwise.
func (n *Net) Field(i int) (Field, bool) {
	nd := n.nodes[i]
	return nd.op.Field(nd.attrs), nd.op.Pointwise
}

// NodeShape is the output shape of node i (0 <= i < len(Spec().Nodes)).
func (n *Net) NodeShape(i int) Shape { return n.nodes[i].out }

// Layer is a node's output named by a module path.
type Layer struct {
	Path  string
	Node  int
	Name  string
	Shape Shape
}

// Layer returns the output of module path: the last node whose name is
// path or begins with path + ".".
func (n *Net) Layer(path string) (Layer, error) {
	for i := len(n.nodes) - 1; i >= 0; i-- {
		nm := n.nodes[i].name
		if nm == path || strings.HasPrefix(nm, path+".") {
			return Layer{Path: path, Node: i, Name: nm, Shape: n.nodes[i].out}, nil
		}
	}
	var mods []string
	seen := map[string]bool{}
	for _, nd := range n.nodes {
		m := strings.SplitN(nd.name, ".", 2)[0]
		if !seen[m] {
			seen[m] = true
			mods = append(mods, m)
		}
	}
	return Layer{}, fmt.Errorf("graph %q: no layer %q; top-level modules: %s", n.spec.Name, path, strings.Join(mods, ", "))
}

// plan assigns buffers. Inference: node i's output lives from step i to
// its last reader (the output to the end). Backward (steps s = output-i
// for node i, in reverse): the gradient of value v is first written by
// its last reader's backward and last read by its producer's backward.
func (n *Net) plan() {
	nv := len(n.shapes)
	sizes, start, end := n.lifetimes()
	n.fwdSlot, n.fwdSize = planSlots(sizes, start, end, n.unplanned)

	// Backward over the output's ancestors, nodes output..0; the step of
	// node i is output-i.
	n.anc = make([]bool, len(n.nodes))
	n.anc[n.output] = true
	for i := n.output; i >= 0; i-- {
		if n.anc[i] {
			for _, v := range n.nodes[i].inputs {
				if v > 0 {
					n.anc[v-1] = true
				}
			}
		}
	}
	n.learns = make([]bool, nv)
	for i, nd := range n.nodes {
		for _, p := range nd.params {
			n.learns[i+1] = n.learns[i+1] || n.params[p].Trainable
		}
		for _, v := range nd.inputs {
			n.learns[i+1] = n.learns[i+1] || n.learns[v]
		}
	}
	bs, be := make([]int, nv), make([]int, nv)
	for v := range nv {
		bs[v], be[v] = -1, -2 // no gradient
		last := -1
		for _, r := range n.readers[v] {
			if n.anc[r] {
				last = max(last, r)
			}
		}
		if v == n.output+1 {
			bs[v], be[v] = -1, 0
		} else if last >= 0 && v > 0 {
			bs[v], be[v] = n.output-last, n.output-(v-1)
		}
	}
	for j, i := range n.fuse {
		if i >= 0 && n.anc[i] { // a training pass reads i's gradient at node j's step
			be[i+1] = max(be[i+1], n.output-j)
		}
	}
	bs[0], be[0] = -1, -2 // the input's gradient has its own buffer
	n.bwdSlot, n.bwdSize = planSlots(sizes, bs, be, false)
}

// lifetimes gives each value's size per sample and the steps of
// inference from which to which it lives: node i's output from step i to
// its last reader (the output to the end; the input, the caller's slice,
// not at all).
func (n *Net) lifetimes() (sizes, start, end []int) {
	nv := len(n.shapes)
	sizes, start, end = make([]int, nv), make([]int, nv), make([]int, nv)
	for v, s := range n.shapes {
		sizes[v] = s.Size()
		start[v], end[v] = v-1, v-1
		for _, r := range n.readers[v] {
			end[v] = max(end[v], r)
		}
	}
	end[n.output+1] = len(n.nodes)
	start[0], end[0] = 0, -1
	return sizes, start, end
}

// planSlots assigns value v (live from start[v] to end[v] inclusive;
// end < start: no buffer, slot -1) to a slot so that two values share a
// slot only if one's end is before the other's start. Slots grow to their
// largest value; a free slot that is large enough is preferred.
func planSlots(size, start, end []int, separate bool) (slot, slotSize []int) {
	slot = make([]int, len(size))
	order := make([]int, 0, len(size))
	for v := range size {
		slot[v] = -1
		if end[v] >= start[v] {
			order = append(order, v)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return start[order[a]] < start[order[b]] })
	var busyUntil []int // per slot: the end of its current value
	for _, v := range order {
		best := -1
		if !separate {
			for s := range slotSize {
				if busyUntil[s] >= start[v] {
					continue
				}
				if best < 0 || better(slotSize[s], slotSize[best], size[v]) {
					best = s
				}
			}
		}
		if best < 0 {
			best = len(slotSize)
			slotSize = append(slotSize, 0)
			busyUntil = append(busyUntil, 0)
		}
		slot[v] = best
		slotSize[best] = max(slotSize[best], size[v])
		busyUntil[best] = end[v]
	}
	return slot, slotSize
}

// better reports whether a slot of size a suits a value of size need
// better than one of size b: the smallest that fits, else the largest.
func better(a, b, need int) bool {
	switch {
	case a >= need && b >= need:
		return a < b
	case a >= need:
		return true
	case b >= need:
		return false
	}
	return a > b
}

// Peak is the number of float32 values per sample that the inference plan
// holds (the sum of its buffers), and the sum of every node's output (what
// one buffer per value would hold).
func (n *Net) Peak() (planned, unplanned int) {
	for _, s := range n.fwdSize {
		planned += s
	}
	for _, s := range n.shapes[1:] {
		unplanned += s.Size()
	}
	return planned, unplanned
}
