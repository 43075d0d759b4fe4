package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/nn"
)

// Float32Bytes encodes v as little-endian IEEE 754 binary32 values.
func Float32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Float32s decodes little-endian binary32 values. Empty input gives nil.
func Float32s(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("float32 array of %d bytes is not a multiple of 4", len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// Float64Bytes encodes v as little-endian IEEE 754 binary64 values.
func Float64Bytes(v []float64) []byte {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

// Float64s decodes little-endian binary64 values. Empty input gives nil.
func Float64s(b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("float64 array of %d bytes is not a multiple of 8", len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v, nil
}

// Float64Rows decodes rows*cols little-endian binary64 values into rows
// slices that share one backing array; each row's capacity is its length.
func Float64Rows(b []byte, rows, cols int) ([][]float64, error) {
	if rows < 0 || cols < 0 || int64(rows)*int64(cols)*8 != int64(len(b)) {
		return nil, fmt.Errorf("%d bytes do not hold %d x %d float64 values", len(b), rows, cols)
	}
	flat, err := Float64s(b)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, rows)
	for i := range out {
		out[i] = flat[i*cols : (i+1)*cols : (i+1)*cols]
	}
	return out, nil
}

// Ints converts a protocol int64 list to ints.
func Ints(v []int64) []int {
	if len(v) == 0 {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// Int64s converts ints to a protocol int64 list.
func Int64s(v []int) []int64 {
	if len(v) == 0 {
		return nil
	}
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// Config encodes a plugin's recipe table as JSON. A nil table encodes to
// nothing.
func Config(c map[string]any) ([]byte, error) {
	if c == nil {
		return nil, nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding config: %w", err)
	}
	return b, nil
}

// DecodeConfig decodes a JSON recipe table. Numbers become float64,
// tables map[string]any and arrays []any; empty input gives nil.
func DecodeConfig(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var c map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&c); err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	if c == nil {
		c = map[string]any{}
	}
	return c, nil
}

// Arch encodes an architecture as JSON.
func Arch(a nn.Arch) ([]byte, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encoding architecture: %w", err)
	}
	return b, nil
}

// DecodeArch decodes a JSON architecture, rejecting unknown fields.
func DecodeArch(b []byte) (nn.Arch, error) {
	var a nn.Arch
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&a); err != nil {
		return nn.Arch{}, fmt.Errorf("decoding architecture: %w", err)
	}
	return a, nil
}

// Params encodes a model draw.
func Params(p nn.Params) (*pb.Params, error) {
	a, err := Arch(p.Arch)
	if err != nil {
		return nil, err
	}
	return &pb.Params{ArchJson: a, Data: Float32Bytes(p.Data)}, nil
}

// LoadParams encodes a draw as the host hands it to an explainer (a
// LoadRequest's model): Params with layers, the output shape of every
// layer or graph node up to the output (nn.Arch.OutputShapes), so that a
// plugin needs no shape rules of its own.
func LoadParams(p nn.Params) (*pb.Params, error) {
	m, err := Params(p)
	if err != nil {
		return nil, err
	}
	shapes, err := p.Arch.OutputShapes()
	if err != nil {
		return nil, fmt.Errorf("the layers' output shapes: %w", err)
	}
	m.Layers = make([]*pb.LayerInfo, len(shapes))
	for i, s := range shapes {
		m.Layers[i] = &pb.LayerInfo{Name: s.Name, Channels: int64(s.C), Length: int64(s.T)}
	}
	return m, nil
}

// DecodeParams decodes a model draw.
func DecodeParams(m *pb.Params) (nn.Params, error) {
	if m == nil {
		return nn.Params{}, fmt.Errorf("missing model parameters")
	}
	a, err := DecodeArch(m.GetArchJson())
	if err != nil {
		return nn.Params{}, err
	}
	d, err := Float32s(m.GetData())
	if err != nil {
		return nn.Params{}, fmt.Errorf("parameters: %w", err)
	}
	return nn.Params{Arch: a, Data: d}, nil
}

// Artifact encodes a fitted posterior: its architecture, named float32
// tensors and string metadata.
func Artifact(arch nn.Arch, tensors map[string][]float32, meta map[string]string) (*pb.Artifact, error) {
	a, err := Arch(arch)
	if err != nil {
		return nil, err
	}
	out := &pb.Artifact{ArchJson: a, Meta: meta}
	if tensors != nil {
		out.Tensors = make(map[string][]byte, len(tensors))
		for k, v := range tensors {
			out.Tensors[k] = Float32Bytes(v)
		}
	}
	return out, nil
}

// DecodeArtifact decodes what Artifact encodes. An empty tensor decodes
// as an empty, not a nil, slice.
func DecodeArtifact(a *pb.Artifact) (nn.Arch, map[string][]float32, map[string]string, error) {
	if a == nil {
		return nn.Arch{}, nil, nil, fmt.Errorf("missing artifact")
	}
	arch, err := DecodeArch(a.GetArchJson())
	if err != nil {
		return nn.Arch{}, nil, nil, fmt.Errorf("artifact: %w", err)
	}
	var tensors map[string][]float32
	if len(a.GetTensors()) > 0 {
		tensors = make(map[string][]float32, len(a.GetTensors()))
		for k, v := range a.GetTensors() {
			t, err := Float32s(v)
			if err != nil {
				return nn.Arch{}, nil, nil, fmt.Errorf("artifact tensor %q: %w", k, err)
			}
			if t == nil {
				t = []float32{}
			}
			tensors[k] = t
		}
	}
	return arch, tensors, a.GetMeta(), nil
}
