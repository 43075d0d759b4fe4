package nn

import "fmt"

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
// layer, weight and bias, then for batchnorm running_mean and running_var
// (a graph's: its nodes' parameters in node order, graph.Net.Params).
type Layout struct {
	Tensors []TensorInfo
	Size    int
	index   map[string]int
}

// NewLayout builds the layout of an architecture.
func NewLayout(a Arch) (*Layout, error) {
	if a.Graph != nil {
		return graphLayout(a)
	}
	shapes, err := a.Shapes()
	if err != nil {
		return nil, err
	}
	l := &Layout{index: map[string]int{}}
	add := func(name string, train bool, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		l.index[name] = len(l.Tensors)
		l.Tensors = append(l.Tensors, TensorInfo{Name: name, Shape: shape, Offset: l.Size, Size: n, Trainable: train})
		l.Size += n
	}
	in := Shape{a.InChannels, a.InLen}
	for i, ly := range a.Layers {
		for _, t := range LayerParams(ly, in) {
			add(ly.Name+"."+t.Suffix, t.Trainable, t.Shape...)
		}
		in = shapes[i]
	}
	return l, nil
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
