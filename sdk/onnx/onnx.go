package onnx

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/internal/checked"
	"github.com/uaxai/uaxai/sdk/internal/onnxpb"
)

// Limits on what Decode accepts.
const (
	// MinOpset and MaxOpset bound the accepted version of the default
	// operator set.
	MinOpset, MaxOpset = 13, 17
	// MaxFileBytes bounds the size of a model file (protobuf's own limit
	// is 2 GiB).
	MaxFileBytes = 1 << 30
	// MaxElements bounds the elements of all tensors of a model together
	// (initializers, tensor attributes and folded constants).
	MaxElements = 1 << 28
	// MaxFoldElements bounds the elements of the tensors that constant
	// folding computes, together: a folded subgraph computes shapes and
	// pads, a few numbers.
	MaxFoldElements = 1 << 20
	// MaxLen bounds the samples of every value of a converted network
	// (ToSpec): the input's, a padded input's, a layer's output; and so
	// the attributes that count samples: pads, kernel_shape, strides,
	// dilations. Its values have at most MaxElements values (channels x
	// samples).
	MaxLen = 1 << 24
)

// DType is the element type of a Tensor.
type DType int

// The element types a model may hold.
const (
	Float32 DType = iota + 1 // ONNX FLOAT
	Int64                    // ONNX INT64
)

func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Int64:
		return "int64"
	}
	return fmt.Sprintf("DType(%d)", int(d))
}

// Tensor is a constant tensor, row major. Exactly one of Float and Int
// holds its values (the one of DType), len = the product of Shape (1 for
// a scalar, Shape empty).
type Tensor struct {
	DType DType
	Shape []int
	Float []float32
	Int   []int64
}

// Len is the number of elements, the product of Shape; -1 when a
// dimension is negative or the product overflows an int (never for the
// tensors Decode returns, whose sizes it checked).
func (t Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		var ok bool
		if n, ok = checked.Mul(n, d); !ok || d < 0 {
			return -1
		}
	}
	return n
}

// Value is a graph input or output: its name and its shape, -1 for a
// dimension not fixed (a named dim_param such as the batch axis, or one
// without a value). Shape is nil when the model declares no shape.
type Value struct {
	Name  string
	Shape []int
}

// AttrKind is the kind of an attribute's value.
type AttrKind int

// The kinds of attribute values a model may hold.
const (
	AttrFloat AttrKind = iota + 1
	AttrInt
	AttrString
	AttrTensor
	AttrFloats
	AttrInts
	AttrStrings
)

// Attr is a node attribute; the field of its Kind holds the value.
type Attr struct {
	Kind    AttrKind
	Float   float32
	Int     int64
	String  string
	Tensor  Tensor
	Floats  []float32
	Ints    []int64
	Strings []string
}

// Node is an operator of the compute graph. An empty string among Inputs
// is an optional input left out.
type Node struct {
	Name    string
	OpType  string
	Inputs  []string
	Outputs []string
	Attrs   map[string]Attr
}

// Model is a decoded, folded and validated ONNX model.
type Model struct {
	// Name is the name given to Decode (the path for Read), used in errors.
	Name string
	// Opset is the version of the default operator set.
	Opset int
	// Inputs are the graph inputs that are not initializers; Outputs the
	// graph outputs.
	Inputs, Outputs []Value
	// Initializers are the model's initializers and the constants the
	// folding computed that a node or an output uses, by value name.
	Initializers map[string]Tensor
	// Nodes are the nodes left after folding, in topological order: each
	// input of a node is a graph input, an initializer or the output of an
	// earlier node.
	Nodes []Node
}

// Read reads and decodes the ONNX model file at path (see Decode): a
// regular file of at most MaxFileBytes bytes (a FIFO, a device such as
// /dev/zero, a directory or a larger file is refused before it is read).
func Read(path string) (*Model, error) {
	b, err := atomicfile.ReadRegular(path, atomicfile.Limit{Bytes: MaxFileBytes, What: "an ONNX model"})
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	return Decode(b, path)
}

// Decode decodes the serialized ONNX ModelProto b, folds its constant
// subgraphs and validates the rest; name (a file name) is used in errors.
// Whatever b holds, it returns a model or an error naming the node or the
// tensor at fault, never panics (a panic, which would be a bug, is
// recovered into an error naming the node being read) and never folds a
// wrapped integer.
func Decode(b []byte, name string) (m *Model, err error) {
	defer func() {
		if err != nil {
			m = nil
		}
	}()
	at := "" // the node being read, for a panic's error
	defer recovered(&err, func() string {
		if at == "" {
			return "onnx: " + name
		}
		return "onnx: " + name + ": " + at
	})
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("onnx: %s: %d bytes, more than the %d accepted", name, len(b), MaxFileBytes)
	}
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(b, &mp); err != nil {
		return nil, fmt.Errorf("onnx: %s: not an ONNX model (protobuf ModelProto): %w", name, err)
	}
	if m, err = build(&mp, name, &at); err != nil {
		return nil, fmt.Errorf("onnx: %s: %w", name, err)
	}
	return m, nil
}
