package nn

import (
	"fmt"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// TensorInfo places one named tensor in the flat parameter vector.
type TensorInfo struct {
	Name      string // PyTorch state_dict name, e.g. "conv1.weight"
	Shape     []int
	Offset    int  // first element in the flat vector
	Size      int  // product of Shape
	Trainable bool // false for batchnorm running statistics (buffers)
}

// Layout is the order and placement of every tensor of an architecture in
// one flat float32 vector. The order is PyTorch's state_dict order: per
// node (layer), weight and bias, then for batchnorm running_mean and
// running_var (graph.Net.Params).
type Layout struct {
	Tensors []TensorInfo
	Size    int
	index   map[string]int
}

// NewLayout builds the layout of an architecture: its graph's parameters
// in node order (graph.Net.Params), named "<node>.<suffix>" (for Layers,
// "<layer name>.<suffix>").
func NewLayout(a Arch) (*Layout, error) {
	net, err := a.compileGraph()
	if err != nil {
		return nil, err
	}
	return netLayout(net), nil
}

// netLayout is the layout of a compiled graph's Theta.
func netLayout(net *graph.Net) *Layout {
	l := &Layout{index: map[string]int{}}
	for _, p := range net.Params() {
		l.index[p.Name] = len(l.Tensors)
		l.Tensors = append(l.Tensors, TensorInfo{Name: p.Name, Shape: p.Shape, Offset: p.Offset, Size: p.Len, Trainable: p.Trainable})
		l.Size += p.Len
	}
	return l
}

// Lookup returns the tensor called name.
func (l *Layout) Lookup(name string) (TensorInfo, bool) {
	i, ok := l.index[name]
	if !ok {
		return TensorInfo{}, false
	}
	return l.Tensors[i], true
}

// View returns the slice of p that holds tensor name. It panics if the
// name is unknown or p is not of the layout's size: both are programmer
// errors.
func (l *Layout) View(p []float32, name string) []float32 {
	if len(p) != l.Size {
		panic(fmt.Sprintf("nn: parameter vector of length %d, layout needs %d", len(p), l.Size))
	}
	t, ok := l.Lookup(name)
	if !ok {
		panic(fmt.Sprintf("nn: no tensor %q in layout", name))
	}
	return p[t.Offset : t.Offset+t.Size : t.Offset+t.Size]
}

// TrainableMask returns a vector of the layout's size that is 1 on
// trainable entries and 0 on buffers.
func (l *Layout) TrainableMask() []bool {
	m := make([]bool, l.Size)
	for _, t := range l.Tensors {
		if t.Trainable {
			for i := t.Offset; i < t.Offset+t.Size; i++ {
				m[i] = true
			}
		}
	}
	return m
}

// Params is one parameter draw: an architecture and its flat vector.
type Params struct {
	Arch Arch
	Data []float32
}
