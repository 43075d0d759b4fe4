package nn

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// rawFile builds a safetensors file by hand, for dtypes that Encode does
// not write (F16, I64).
func rawFile(t *testing.T, entries []rawTensor) *safetensors.File {
	t.Helper()
	hdr := map[string]any{}
	var body bytes.Buffer
	for _, e := range entries {
		start := body.Len()
		body.Write(e.data)
		hdr[e.name] = map[string]any{"dtype": e.dtype, "shape": e.shape, "data_offsets": []int{start, body.Len()}}
	}
	h, _ := json.Marshal(hdr)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(h)))
	b.Write(h)
	b.Write(body.Bytes())
	f, err := safetensors.Decode(b.Bytes(), "hand.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type rawTensor struct {
	name, dtype string
	shape       []int
	data        []byte
}

// f16 encodes float32 values that are exact in half precision.
func f16(vals []float32) []byte {
	var b bytes.Buffer
	for _, v := range vals {
		bits := math.Float32bits(v)
		sign := uint16(bits>>16) & 0x8000
		exp := int((bits>>23)&0xff) - 127 + 15
		mant := uint16((bits >> 13) & 0x3ff)
		var h uint16
		if v != 0 {
			h = sign | uint16(exp)<<10 | mant
		} else {
			h = sign
		}
		binary.Write(&b, binary.LittleEndian, h)
	}
	return b.Bytes()
}

// TestParamsFromFile: the golden model written again as F16 (its values
// rounded to half precision first) loads to exactly those values, with a
// PyTorch num_batches_tracked I64 tensor ignored; wrong shapes, missing and
// unknown tensors are errors that name the tensor.
func TestParamsFromFile(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	p, err := LoadParams(filepath.Join(dir, "model.safetensors"), PaperArch())
	if err != nil {
		t.Fatal(err)
	}
	lay, _ := NewLayout(PaperArch())
	var entries []rawTensor
	want := make([]float32, len(p.Data))
	for _, ti := range lay.Tensors {
		v := p.Data[ti.Offset : ti.Offset+ti.Size]
		half := make([]float32, len(v))
		for i, x := range v {
			// round to a value exact in float16 (10 mantissa bits, normal range)
			m, e := math.Frexp(float64(x))
			half[i] = float32(math.Ldexp(math.Round(m*2048)/2048, e))
			if math.Abs(float64(half[i])) < 6.2e-5 {
				half[i] = 0
			}
		}
		copy(want[ti.Offset:], half)
		entries = append(entries, rawTensor{ti.Name, "F16", ti.Shape, f16(half)})
	}
	entries = append(entries, rawTensor{"bn1.num_batches_tracked", "I64", []int{}, make([]byte, 8)})
	got, err := ParamsFromFile(PaperArch(), rawFile(t, entries), "hand.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got.Data[i] != want[i] {
			t.Fatalf("element %d: %g, want %g", i, got.Data[i], want[i])
		}
	}
	for _, tc := range []struct {
		name    string
		mutate  func([]rawTensor) []rawTensor
		mention string
	}{
		{"wrong shape", func(e []rawTensor) []rawTensor { e[0].shape = []int{8, 3, 1}; return e }, `"conv1.weight" has shape [8 3 1], want [8 1 3]`},
		{"missing", func(e []rawTensor) []rawTensor { return e[1:] }, `missing parameter "conv1.weight"`},
		{"unknown", func(e []rawTensor) []rawTensor {
			return append(e, rawTensor{"conv9.weight", "F16", []int{1}, f16([]float32{1})})
		}, `"conv9.weight" is not a parameter`},
		{"integer weight", func(e []rawTensor) []rawTensor {
			e[1] = rawTensor{"conv1.bias", "I64", []int{8}, make([]byte, 64)}
			return e
		}, `"conv1.bias" has dtype I64`},
	} {
		e := tc.mutate(append([]rawTensor(nil), entries...))
		_, err := ParamsFromFile(PaperArch(), rawFile(t, e), "hand.safetensors")
		if err == nil || !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), "hand.safetensors") {
			t.Errorf("%s: %v; want an error naming the file and %s", tc.name, err, tc.mention)
		}
	}
}

// TestSaveLoadRoundTrip: SaveParams writes F32 that LoadParams reads back
// bit for bit.
func TestSaveLoadRoundTrip(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	p, err := LoadParams(filepath.Join(dir, "model.safetensors"), PaperArch())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "w.safetensors")
	if err := SaveParams(path, p, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	q, err := LoadParams(path, PaperArch())
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Data {
		if math.Float32bits(p.Data[i]) != math.Float32bits(q.Data[i]) {
			t.Fatalf("element %d differs", i)
		}
	}
}
