package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

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
// product exceeds limit (checked before it can overflow).
func numel(dims []int64, limit int) (int, error) {
	n := 1
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("dims %v: a negative dimension", dims)
		}
		if d > 0 && int64(n) > int64(limit)/d {
			return 0, fmt.Errorf("dims %v: more than %d elements", dims, limit)
		}
		n *= int(d)
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
