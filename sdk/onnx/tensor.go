package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/internal/checked"
	"github.com/uaxai/uaxai/sdk/internal/onnxpb"
)

// budget counts the elements allocated for tensors against a limit.
type budget struct {
	left int
	max  int
	what string
}

// take reserves n elements or says why it cannot.
func (b *budget) take(n int) error {
	if n < 0 || n > b.left {
		return fmt.Errorf("the %s would exceed %d elements in all", b.what, b.max)
	}
	b.left -= n
	return nil
}

// numel is the product of dims, or an error if a dim is negative or the
// shape is larger than limit (see shapeSize).
func numel(dims []int64, limit int) (int, error) {
	shape := make([]int, len(dims))
	for i, d := range dims {
		if d < 0 || d > int64(limit) {
			return 0, fmt.Errorf("dims %v: dimension %d is outside [0, %d]", dims, d, limit)
		}
		shape[i] = int(d)
	}
	return shapeSize(shape, limit)
}

// shapeSize is the number of elements of a tensor of shape, or an error
// if a dimension is negative or the product of its non-zero dimensions
// exceeds limit. A tensor with no elements is held to the same bound as
// if its zero dimensions were 1, so that for every tensor the importer
// holds the strides, offsets and loop counts computed from its shape
// cannot overflow (a shape [0, 2^62, 2^62] is refused, not wrapped).
func shapeSize(shape []int, limit int) (int, error) {
	n, span := 1, 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v: a negative dimension", shape)
		}
		var ok bool
		if span, ok = checked.Mul(span, max(d, 1)); !ok || span > limit {
			return 0, fmt.Errorf("shape %v: more than the %d elements accepted", shape, limit)
		}
		n *= d // at most span: no overflow
	}
	return n, nil
}

// tensorFrom converts a TensorProto (what names it in errors: "initializer
// \"w\"", "attribute value of node ..."), reserving its elements in b.
func tensorFrom(tp *onnxpb.TensorProto, what string, b *budget) (Tensor, error) {
	if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL || len(tp.GetExternalData()) > 0 {
		return Tensor{}, fmt.Errorf("%s: its data is stored outside the model file (external data), which is not accepted: save the model with its tensors inside (onnx.save(model, path, save_as_external_data=False))", what)
	}
	if tp.GetSegment() != nil {
		return Tensor{}, fmt.Errorf("%s: a segment of a tensor is not accepted, only whole tensors", what)
	}
	n, err := numel(tp.GetDims(), b.max)
	if err != nil {
		return Tensor{}, fmt.Errorf("%s: %w", what, err)
	}
	shape := make([]int, len(tp.GetDims()))
	for i, d := range tp.GetDims() {
		shape[i] = int(d)
	}
	raw := tp.GetRawData()
	t := Tensor{Shape: shape}
	switch onnxpb.TensorProto_DataType(tp.GetDataType()) {
	case onnxpb.TensorProto_FLOAT:
		t.DType = Float32
		typed := tp.GetFloatData()
		if err := checkLen(what, n, 4, len(raw), len(typed), "float_data"); err != nil {
			return Tensor{}, err
		}
		if err := b.take(n); err != nil {
			return Tensor{}, fmt.Errorf("%s: %w", what, err)
		}
		t.Float = make([]float32, n)
		if len(raw) > 0 {
			for i := range t.Float {
				t.Float[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		} else {
			copy(t.Float, typed)
		}
	case onnxpb.TensorProto_INT64:
		t.DType = Int64
		typed := tp.GetInt64Data()
		if err := checkLen(what, n, 8, len(raw), len(typed), "int64_data"); err != nil {
			return Tensor{}, err
		}
		if err := b.take(n); err != nil {
			return Tensor{}, fmt.Errorf("%s: %w", what, err)
		}
		t.Int = make([]int64, n)
		if len(raw) > 0 {
			for i := range t.Int {
				t.Int[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
			}
		} else {
			copy(t.Int, typed)
		}
	default:
		return Tensor{}, fmt.Errorf("%s: data type %s (%d) is not accepted; accepted: FLOAT (1), INT64 (7)",
			what, onnxpb.TensorProto_DataType(tp.GetDataType()), tp.GetDataType())
	}
	return t, nil
}

// checkLen checks that a tensor of n elements of size bytes each holds
// exactly its data, in raw_data (rawLen bytes) or in its typed field
// (typedLen values).
func checkLen(what string, n, size, rawLen, typedLen int, field string) error {
	switch {
	case rawLen > 0 && typedLen > 0:
		return fmt.Errorf("%s: data in both raw_data and %s; a tensor holds it in one", what, field)
	case rawLen > 0 && rawLen != n*size:
		return fmt.Errorf("%s: raw_data holds %d bytes, its dims say %d elements of %d bytes = %d", what, rawLen, n, size, n*size)
	case rawLen == 0 && typedLen != n:
		return fmt.Errorf("%s: %s holds %d values (raw_data is empty), its dims say %d", what, field, typedLen, n)
	}
	return nil
}
