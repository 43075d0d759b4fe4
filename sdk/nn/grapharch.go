package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// GraphArch returns the architecture of the graph network spec, on an
// input of spec.InChannels x spec.InLen. A spec that compiles is kept in
// its canonical form (graph.Net.Spec: attributes as int64, float64,
// bool or []int64, defaults filled in), so that equal networks have
// equal Archs whatever types their attributes were written with; one
// that does not is kept as it is, for Validate to report.
func GraphArch(spec graph.Spec) Arch {
	s := spec
	if net, err := graph.Compile(spec); err == nil {
		s = net.Spec()
	}
	return Arch{Name: spec.Name, InChannels: spec.InChannels, InLen: spec.InLen, Graph: &s}
}

// Open returns the Model of p (NewModel).
func Open(p Params) (Model, error) { return NewModel(p) }

// NewModel compiles p's network with its parameters, which must be
// finite: a GraphModel, for a graph architecture and a list of layers
// alike.
func NewModel(p Params) (*GraphModel, error) {
	net, err := p.Arch.compileGraph()
	if err != nil {
		return nil, err
	}
	if len(p.Data) != net.NumParams() {
		return nil, fmt.Errorf("arch %q: %d parameters, the graph has %d", p.Arch.Name, len(p.Data), net.NumParams())
	}
	for _, t := range net.Params() {
		for j, v := range p.Data[t.Offset : t.Offset+t.Len] {
			if v-v != 0 { // NaN or ±Inf
				return nil, fmt.Errorf("arch %q: tensor %s element %d is %v (want a finite number)", p.Arch.Name, t.Name, j, v)
			}
		}
	}
	copy(net.Theta, p.Data)
	m := NewGraphModel(net)
	m.arch = p.Arch
	return m, nil
}

// graphTrainNet is the Pass of a graph: a compiled graph whose Theta is
// the vector p of each call.
type graphTrainNet struct {
	net   *graph.Net
	lay   *Layout
	probs bool      // the output node is a softmax: its values are probabilities
	out   []float32 // probs: the last Forward's probabilities (the Net's buffer)
	z, dz []float32 // probs: log-probabilities (the logits), and d L / d probs
}

func newGraphTrainNet(a Arch, workers int) (*graphTrainNet, error) {
	net, err := a.compileGraph()
	if err != nil {
		return nil, err
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	net.Workers = workers
	s := net.Spec()
	i, err := s.OutputIndex()
	if err != nil {
		return nil, err
	}
	return &graphTrainNet{net: net, lay: netLayout(net), probs: s.Nodes[i].Op == "softmax"}, nil
}

func (t *graphTrainNet) InputLen() int   { return t.net.InShape().Size() }
func (t *graphTrainNet) Classes() int    { return t.net.Classes() }
func (t *graphTrainNet) Layout() *Layout { return t.lay }

// Forward runs the graph (graph.Net.Run; in training mode with rnd nil,
// dropout draws from a source of seed 0); an output softmax's
// probabilities p become the logits log p, whose softmax is p.
func (t *graphTrainNet) Forward(p, x []float32, train bool, rnd *rand.Rand) []float32 {
	t.net.Theta = p
	if train && rnd == nil {
		rnd = rand.New(rand.NewPCG(0, 0)) // a network without dropout draws nothing
	}
	out, err := t.net.Run(x, train, rnd)
	if err != nil {
		panic(err) // Train checked the data's shape
	}
	if !t.probs {
		return out
	}
	t.out = out
	t.z = grow(t.z, len(out))
	for i, v := range out {
		t.z[i] = float32(math.Log(float64(max(v, math.SmallestNonzeroFloat32))))
	}
	return t.z
}

// Backward backpropagates dz through the graph (graph.Net.Backprop); for
// an output softmax, d L / d p = dz / p (through z = log p).
func (t *graphTrainNet) Backward(p, dz, grad []float32) {
	t.net.Theta = p
	if t.probs {
		t.dz = grow(t.dz, len(dz))
		for i, d := range dz {
			t.dz[i] = d / max(t.out[i], math.SmallestNonzeroFloat32)
		}
		dz = t.dz
	}
	t.net.Backprop(dz, grad, nil)
}

// foldGraphDropout is FoldDropout of a graph architecture: each dropout
// node's mask scales the weight columns of its one reader, a linear or
// conv1d (groups 1) node, w'[o,i,k] = w[o,i,k] m_i / (1 - p), and the
// reader reads the dropout's input instead.
func foldGraphDropout(a Arch, p []float32, masks [][]bool) (Arch, []float32, error) {
	net, err := a.compileGraph()
	if err != nil {
		return Arch{}, nil, err
	}
	if len(p) != net.NumParams() {
		return Arch{}, nil, fmt.Errorf("arch %q: parameter vector has %d values, want %d", a.Name, len(p), net.NumParams())
	}
	lay := netLayout(net)
	spec := net.Spec() // canonical: attributes with defaults
	q := append([]float32(nil), p...)
	var keep []graph.Node
	redirect := map[int]string{} // reader index -> the dropout's source
	j := 0
	for i, nd := range spec.Nodes {
		if nd.Op != "dropout" {
			continue
		}
		where := fmt.Sprintf("arch %q: dropout node %q", a.Name, nd.Name)
		if j >= len(masks) {
			return Arch{}, nil, fmt.Errorf("%s: %d dropout masks given, it is dropout number %d", where, len(masks), j+1)
		}
		m := masks[j]
		j++
		var readers []int
		for k := i + 1; k < len(spec.Nodes); k++ {
			for x := range max(1, len(spec.Nodes[k].Inputs)) {
				if r, err := spec.InputIndex(k, x); err == nil && r == i {
					readers = append(readers, k)
				}
			}
		}
		if len(readers) != 1 || spec.Output == nd.Name { // the canonical spec names its output
			return Arch{}, nil, fmt.Errorf("%s: read by %d nodes; to be folded it must be read by one linear or conv1d node, and not be the output", where, len(readers))
		}
		r := spec.Nodes[readers[0]]
		K := 1
		switch {
		case r.Op == "linear":
		case r.Op == "conv1d" && r.Attrs["groups"].(int64) == 1:
			K = int(r.Attrs["kernel"].(int64))
		default:
			return Arch{}, nil, fmt.Errorf("%s: read by %s node %q; to be folded it must be read by a linear or conv1d (groups 1) node", where, r.Op, r.Name)
		}
		C := net.NodeShape(i).C
		if len(m) != C {
			return Arch{}, nil, fmt.Errorf("%s needs a mask of %d units, got %d", where, C, len(m))
		}
		w := lay.View(q, r.Name+".weight")
		scale := float32(1 / (1 - nd.Attrs["p"].(float64)))
		for o := range len(w) / (C * K) {
			for c := range C {
				row := w[(o*C+c)*K : (o*C+c+1)*K]
				for t := range row {
					if m[c] {
						row[t] *= scale
					} else {
						row[t] = 0
					}
				}
			}
		}
		redirect[readers[0]] = nd.Inputs[0] // the canonical spec's inputs are explicit, a dropout's one
	}
	if j != len(masks) {
		return Arch{}, nil, fmt.Errorf("arch %q: %d dropout masks given for %d dropout nodes", a.Name, len(masks), j)
	}
	for i, nd := range spec.Nodes {
		if nd.Op == "dropout" {
			continue
		}
		if src, ok := redirect[i]; ok { // (a node reading its previous node, a dropout, is that dropout's reader)
			nd.Inputs = []string{src}
		}
		keep = append(keep, nd)
	}
	spec.Nodes = keep
	out := a
	out.Graph, out.Layers = &spec, nil
	return out, q, nil
}
