package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// build assembles a safetensors file by hand from a header string and a
// data section, independently of Encode.
func build(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

// f32le returns the little-endian F32 bytes of vs.
func f32le(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func u16le(vs ...uint16) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

func f64le(vs ...float64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// sameBits reports whether a and b hold the same float32 bit patterns.
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	nanPayload := math.Float32frombits(0x7fc01234)
	in := []Tensor{
		{Name: "conv1.weight", Shape: []int{2, 1, 3}, Data: []float32{1, -2, 0.5, float32(math.Inf(1)), float32(math.Inf(-1)), nanPayload}},
		{Name: "scalar", Shape: []int{}, Data: []float32{math.Float32frombits(0x80000000)}}, // -0
		{Name: "empty", Shape: []int{3, 0}, Data: nil},
		{Name: "tiny", DType: "F16", Shape: []int{2}, Data: []float32{math.Float32frombits(1), math.MaxFloat32}}, // DType ignored: written F32
		{Name: `we"ird/<name>&ü`, Shape: []int{1}, Data: []float32{3}},
	}
	meta := map[string]string{"b": "2", "a": `quote " and <html> & ü`, "format": "pt"}
	b, err := Encode(in, meta)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	if n%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", n)
	}
	if !json.Valid(b[8 : 8+n]) {
		t.Errorf("header is not valid JSON: %s", b[8:8+n])
	}
	if got, want := len(b)-8-int(n), 4*(6+1+0+2+1); got != want {
		t.Errorf("data section %d bytes, want %d", got, want)
	}
	b2, err := Encode(in, map[string]string{"format": "pt", "a": `quote " and <html> & ü`, "b": "2"})
	if err != nil || !bytes.Equal(b, b2) {
		t.Errorf("Encode is not deterministic: %v", err)
	}

	f, err := Decode(b, "rt.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != len(in) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(in))
	}
	for i, w := range in {
		g := f.Tensors[i]
		if g.Name != w.Name || g.DType != "F32" || !slices.Equal(g.Shape, w.Shape) || !sameBits(g.Data, w.Data) {
			t.Errorf("tensor %d: got %+v, want %+v as F32", i, g, w)
		}
		if got, ok := f.Get(w.Name); !ok || got.Name != w.Name {
			t.Errorf("Get(%q) = %v, %v", w.Name, got, ok)
		}
	}
	if _, ok := f.Get("nope"); ok {
		t.Error(`Get("nope") found a tensor`)
	}
	if !mapsEqual(f.Meta, meta) {
		t.Errorf("meta %v, want %v", f.Meta, meta)
	}

	// No metadata, no tensors: the smallest file.
	b, err = Encode(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := build("{}      ", nil); !bytes.Equal(b, want) {
		t.Errorf("Encode(nil, nil) = %q, want %q", b, want)
	}
	if f, err := Decode(b, "empty"); err != nil || len(f.Tensors) != 0 || f.Meta == nil || len(f.Meta) != 0 {
		t.Errorf("Decode(empty) = %+v, %v", f, err)
	}
}

// TestEncodeBytes pins the exact byte layout of Encode on a hand-written
// expected file.
func TestEncodeBytes(t *testing.T) {
	b, err := Encode([]Tensor{
		{Name: "w", Shape: []int{2}, Data: []float32{1, -2}},
		{Name: "a", Shape: []int{}, Data: []float32{0.5}},
	}, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	hdr := `{"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[],"data_offsets":[8,12]}}`
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	want := build(hdr, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0, 0, 0x3f})
	if !bytes.Equal(b, want) {
		t.Errorf("Encode:\n got %q\nwant %q", b, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		name string
		ts   []Tensor
		want []string
	}{
		{"length", []Tensor{{Name: "fc.weight", Shape: []int{2, 3}, Data: make([]float32, 5)}}, []string{`"fc.weight"`, "5 values", "= 6"}},
		{"non-float", []Tensor{{Name: "bn.num_batches_tracked", DType: "I64", Shape: []int{}}}, []string{`"bn.num_batches_tracked"`, `"I64"`, "0 values", "= 1"}},
		{"duplicate", []Tensor{{Name: "a", Shape: []int{}, Data: []float32{1}}, {Name: "a", Shape: []int{}, Data: []float32{1}}}, []string{"duplicate", `"a"`}},
		{"reserved", []Tensor{{Name: "__metadata__", Shape: []int{}, Data: []float32{1}}}, []string{"reserved"}},
		{"negative", []Tensor{{Name: "n", Shape: []int{-1}, Data: nil}}, []string{`"n"`, "negative"}},
	}
	for _, c := range cases {
		_, err := Encode(c.ts, nil)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", c.name, err, w)
			}
		}
	}
}

func TestWriteFileReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	ts := []Tensor{{Name: "x", Shape: []int{3}, Data: []float32{1, 2, 3}}}
	if err := os.WriteFile(path, []byte("old content"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, ts, map[string]string{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if x, ok := f.Get("x"); !ok || !sameBits(x.Data, ts[0].Data) || f.Meta["v"] != "1" {
		t.Errorf("ReadFile = %+v", f)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after WriteFile, want 1 (no temp file left)", len(entries))
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", st.Mode(), err)
	}
	// A failed Encode leaves the old file alone.
	if err := WriteFile(path, []Tensor{{Name: "bad", Shape: []int{2}}}, nil); err == nil {
		t.Error("WriteFile of a bad tensor: no error")
	}
	if _, err := ReadFile(path); err != nil {
		t.Errorf("file damaged by a failed WriteFile: %v", err)
	}
	// Read from a stream.
	b, _ := os.ReadFile(path)
	if f, err := Read(bytes.NewReader(b), "stream"); err != nil || len(f.Tensors) != 1 {
		t.Errorf("Read = %+v, %v", f, err)
	}
	if _, err := Read(bytes.NewReader(b[:5]), "stream"); err == nil || !strings.Contains(err.Error(), "stream") {
		t.Errorf("Read of 5 bytes: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.safetensors")); err == nil || !strings.Contains(err.Error(), "missing.safetensors") {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir.safetensors"), ts, nil); err == nil {
		t.Error("WriteFile into a missing directory: no error")
	}
}

// Known half-precision bit patterns and the float32 bit patterns of their
// values, written out by hand.
var f16Known = []struct {
	h    uint16
	want uint32 // float32 bits
	what string
}{
	{0x3c00, 0x3f800000, "1.0"},
	{0xc000, 0xc0000000, "-2.0"},
	{0x7bff, 0x477fe000, "65504 (largest finite)"},
	{0x0001, 0x33800000, "2^-24 (smallest subnormal)"},
	{0x8001, 0xb3800000, "-2^-24"},
	{0x03ff, 0x387fc000, "1023 × 2^-24 (largest subnormal)"},
	{0x0400, 0x38800000, "2^-14 (smallest normal)"},
	{0x3555, 0x3eaaa000, "0.333251953125"},
	{0x0000, 0x00000000, "+0"},
	{0x8000, 0x80000000, "-0"},
	{0x7c00, 0x7f800000, "+Inf"},
	{0xfc00, 0xff800000, "-Inf"},
}

func TestFloat16Known(t *testing.T) {
	for _, c := range f16Known {
		if got := Float16ToFloat32(c.h); math.Float32bits(got) != c.want {
			t.Errorf("F16 %#04x (%s) = %v (%#08x), want %v", c.h, c.what, got, math.Float32bits(got), math.Float32frombits(c.want))
		}
	}
	for _, h := range []uint16{0x7e00, 0x7c01, 0xfe00, 0x7fff} {
		if got := Float16ToFloat32(h); !math.IsNaN(float64(got)) {
			t.Errorf("F16 %#04x = %v, want NaN", h, got)
		}
	}
}

// TestFloat16Exhaustive checks all 65536 half values against the
// definition (-1)^s × 2^(e-15) × (1 + m/1024), or 2^-14 × m/1024 when e = 0,
// evaluated in float64.
func TestFloat16Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		s, e, m := h>>15, int(h>>10)&0x1f, float64(h&0x3ff)
		var want float64
		switch {
		case e == 0x1f && m == 0:
			want = math.Inf(1)
		case e == 0x1f:
			want = math.NaN()
		case e == 0:
			want = math.Ldexp(m/1024, -14)
		default:
			want = math.Ldexp(1+m/1024, e-15)
		}
		if s == 1 {
			want = -want
		}
		got := float64(Float16ToFloat32(h))
		if math.IsNaN(want) != math.IsNaN(got) || (!math.IsNaN(want) && (got != want || math.Signbit(got) != math.Signbit(want))) {
			t.Fatalf("F16 %#04x = %v, want %v", h, got, want)
		}
	}
}

func TestBFloat16(t *testing.T) {
	// bf16 is the top 16 bits of float32: values whose low 16 bits are zero.
	for _, v := range []float32{1, -2, 0.5, 3.140625, -0, float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x00010000), 3.3895314e38} {
		bits := math.Float32bits(v)
		if bits&0xffff != 0 {
			t.Fatalf("test value %v is not a bf16 value", v)
		}
		if got := BFloat16ToFloat32(uint16(bits >> 16)); math.Float32bits(got) != bits {
			t.Errorf("BF16 %#04x = %v, want %v", bits>>16, got, v)
		}
	}
	if got := BFloat16ToFloat32(0x7fc0); !math.IsNaN(float64(got)) {
		t.Errorf("BF16 0x7fc0 = %v, want NaN", got)
	}
}

// TestDecodeDTypes decodes a hand-built file with every float dtype and
// integer tensors such as PyTorch's num_batches_tracked.
func TestDecodeDTypes(t *testing.T) {
	var halves []uint16
	var halfWant []float32
	for _, c := range f16Known {
		halves = append(halves, c.h)
		halfWant = append(halfWant, math.Float32frombits(c.want))
	}
	bf := []float32{1, -2, 65280, float32(math.Inf(1))}
	var bfBits []uint16
	for _, v := range bf {
		bfBits = append(bfBits, uint16(math.Float32bits(v)>>16))
	}
	f64 := []float64{1, -2, 0.1, 1e300, -1e300, 1e-50, math.Ldexp(1, -149)}
	f64Want := []float32{1, -2, 0.1, float32(math.Inf(1)), float32(math.Inf(-1)), 0, math.Float32frombits(1)}

	var data []byte
	var parts []string
	add := func(name, dtype, shape string, b []byte) {
		parts = append(parts, `"`+name+`":{"dtype":"`+dtype+`","shape":`+shape+`,"data_offsets":[`+itoa(len(data))+`,`+itoa(len(data)+len(b))+`]}`)
		data = append(data, b...)
	}
	add("half", "F16", "["+itoa(len(halves))+"]", u16le(halves...))
	add("brain", "BF16", "[2,2]", u16le(bfBits...))
	add("bn1.num_batches_tracked", "I64", "[]", binary.LittleEndian.AppendUint64(nil, 1234))
	add("double", "F64", "[7]", f64le(f64...))
	add("flags", "BOOL", "[3]", []byte{1, 0, 1})
	add("ids", "I32", "[1]", []byte{1, 2, 3, 4})
	add("nan", "F32", "[2]", f32le(float32(math.NaN()), 7))
	hdr := "{" + strings.Join(parts, ",") + `,"__metadata__":{"format":"pt"}}`
	f, err := Decode(build(hdr, data), "dtypes.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	check := func(name, dtype string, want []float32) {
		t.Helper()
		g, ok := f.Get(name)
		if !ok {
			t.Fatalf("tensor %q missing", name)
		}
		if g.DType != dtype {
			t.Errorf("%s: dtype %q, want %q", name, g.DType, dtype)
		}
		if g.IsFloat() != (want != nil) {
			t.Errorf("%s: IsFloat = %v", name, g.IsFloat())
		}
		if want == nil {
			if g.Data != nil {
				t.Errorf("%s: Data = %v, want nil for dtype %s", name, g.Data, dtype)
			}
			return
		}
		if !sameBits(g.Data, want) {
			t.Errorf("%s: Data = %v, want %v", name, g.Data, want)
		}
	}
	check("half", "F16", halfWant)
	check("brain", "BF16", bf)
	check("double", "F64", f64Want)
	check("bn1.num_batches_tracked", "I64", nil)
	check("flags", "BOOL", nil)
	check("ids", "I32", nil)
	g, _ := f.Get("nan")
	if !math.IsNaN(float64(g.Data[0])) || g.Data[1] != 7 {
		t.Errorf("nan: Data = %v, want [NaN 7]", g.Data)
	}
	if g, _ := f.Get("bn1.num_batches_tracked"); len(g.Shape) != 0 || g.Len() != 1 {
		t.Errorf("num_batches_tracked shape %v", g.Shape)
	}
	var names []string
	for _, t := range f.Tensors {
		names = append(names, t.Name)
	}
	if want := []string{"half", "brain", "bn1.num_batches_tracked", "double", "flags", "ids", "nan"}; !slices.Equal(names, want) {
		t.Errorf("file order %v, want %v", names, want)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestDecodeInts: integer and BOOL tensors come back as int64, the signed
// ones sign-extended, the unsigned ones zero-extended, a U64 beyond int64
// as nil; F64 tensors come back exactly in Float64, float32 in Data.
func TestDecodeInts(t *testing.T) {
	var data []byte
	var parts []string
	add := func(name, dtype string, n int, b []byte) {
		parts = append(parts, `"`+name+`":{"dtype":"`+dtype+`","shape":[`+itoa(n)+`],"data_offsets":[`+itoa(len(data))+`,`+itoa(len(data)+len(b))+`]}`)
		data = append(data, b...)
	}
	le := func(size int, vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			for k := range size {
				b = append(b, byte(v>>(8*k)))
			}
		}
		return b
	}
	add("i8", "I8", 3, le(1, 0xff, 0x80, 0x7f))
	add("i16", "I16", 2, le(2, 0xffff, 0x8000))
	add("i32", "I32", 2, le(4, 0xfffffffe, 70000))
	add("i64", "I64", 2, le(8, 1<<63, 15))
	add("u8", "U8", 2, le(1, 255, 0))
	add("u16", "U16", 1, le(2, 65535))
	add("u32", "U32", 1, le(4, 4294967295))
	add("u64", "U64", 1, le(8, math.MaxInt64))
	add("u64big", "U64", 2, le(8, 1, 1<<63))
	add("flags", "BOOL", 3, []byte{1, 0, 1})
	add("double", "F64", 2, f64le(0.1, -1e300))
	f, err := Decode(build("{"+strings.Join(parts, ",")+"}", data), "ints.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]int64{
		"i8": {-1, -128, 127}, "i16": {-1, -32768}, "i32": {-2, 70000},
		"i64": {math.MinInt64, 15}, "u8": {255, 0}, "u16": {65535},
		"u32": {4294967295}, "u64": {math.MaxInt64}, "u64big": nil, "flags": {1, 0, 1},
		"double": nil,
	} {
		g, _ := f.Get(name)
		if !slices.Equal(g.Ints, want) || (g.Ints == nil) != (want == nil) {
			t.Errorf("%s: Ints = %v, want %v", name, g.Ints, want)
		}
		if name != "double" && (g.Data != nil || g.Float64 != nil) {
			t.Errorf("%s: Data %v, Float64 %v, want none for dtype %s", name, g.Data, g.Float64, g.DType)
		}
	}
	g, _ := f.Get("double")
	if !slices.Equal(g.Float64, []float64{0.1, -1e300}) || g.Data[0] != float32(0.1) || !math.IsInf(float64(g.Data[1]), -1) {
		t.Errorf("double: Float64 %v, Data %v, want [0.1 -1e300] exactly and as float32", g.Float64, g.Data)
	}
}

// TestFileOrder: tensors come back sorted by offset, whatever the header
// order.
func TestFileOrder(t *testing.T) {
	hdr := `{"second":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"z":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},"first":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	f, err := Decode(build(hdr, f32le(1, 2)), "order")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, t := range f.Tensors {
		names = append(names, t.Name)
	}
	if !slices.Equal(names, []string{"first", "second", "z"}) {
		t.Errorf("order %v", names)
	}
	if f.Tensors[0].Data[0] != 1 || f.Tensors[1].Data[0] != 2 {
		t.Errorf("data %v %v", f.Tensors[0].Data, f.Tensors[1].Data)
	}
}

func TestDecodeErrors(t *testing.T) {
	const file = "bad.safetensors"
	w := func(name string, shape string, off string) string {
		return `"` + name + `":{"dtype":"F32","shape":` + shape + `,"data_offsets":` + off + `}`
	}
	huge := binary.LittleEndian.AppendUint64(nil, MaxHeader+1)
	huge = append(huge, "{}"...)
	long := binary.LittleEndian.AppendUint64(nil, 1000)
	long = append(long, "{}"...)
	cases := []struct {
		name string
		b    []byte
		want []string
	}{
		{"short", []byte{1, 2, 3}, []string{"3 bytes", "at least 8"}},
		{"oversized", huge, []string{"oversized", "100 MB"}},
		{"header past end", long, []string{"header length 1000", "larger than the file", "2 bytes"}},
		{"not json", build(`{"a":`, nil), []string{"malformed JSON"}},
		{"not object", build(`[1,2]`, nil), []string{"malformed JSON", "object"}},
		{"trailing junk", build(`{} x`, nil), []string{"malformed JSON"}},
		{"duplicate", build(`{`+w("a", "[1]", "[0,4]")+`,`+w("a", "[1]", "[0,4]")+`}`, f32le(1)), []string{"duplicate", `"a"`}},
		{"entry not object", build(`{"conv1.weight":[1]}`, nil), []string{`tensor "conv1.weight"`, "want an object"}},
		{"missing dtype", build(`{"conv1.bias":{"shape":[1],"data_offsets":[0,4]}}`, f32le(1)), []string{`tensor "conv1.bias"`, `missing "dtype"`}},
		{"missing shape", build(`{"conv1.bias":{"dtype":"F32","data_offsets":[0,4]}}`, f32le(1)), []string{`tensor "conv1.bias"`, `missing "shape"`}},
		{"missing offsets", build(`{"conv1.bias":{"dtype":"F32","shape":[1]}}`, f32le(1)), []string{`tensor "conv1.bias"`, `missing "data_offsets"`}},
		{"unknown dtype", build(`{"fc1.weight":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}`, make([]byte, 16)), []string{`tensor "fc1.weight"`, `unknown dtype "F128"`, "F32"}},
		{"negative dim", build(`{`+w("fc1.weight", "[-1,4]", "[0,0]")+`}`, nil), []string{`tensor "fc1.weight"`, "negative"}},
		{"fractional dim", build(`{`+w("fc1.weight", "[1.5]", "[0,4]")+`}`, f32le(1)), []string{`tensor "fc1.weight"`}},
		{"overflowing shape", build(`{`+w("fc1.weight", "[4294967296,4294967296,4294967296]", "[0,4]")+`}`, f32le(1)), []string{`tensor "fc1.weight"`, "overflows"}},
		{"size mismatch", build(`{`+w("conv1.weight", "[8,1,3]", "[0,92]")+`}`, make([]byte, 92)), []string{`tensor "conv1.weight"`, "span 92 bytes", "4 × 8 × 1 × 3 = 96 bytes"}},
		{"three offsets", build(`{`+w("b", "[1]", "[0,4,8]")+`}`, f32le(1)), []string{`tensor "b"`, "want 2"}},
		{"reversed offsets", build(`{`+w("b", "[0]", "[8,4]")+`}`, f32le(1)), []string{`tensor "b"`, "begin <= end"}},
		{"truncated", build(`{`+w("conv1.weight", "[8,1,3]", "[0,96]")+`}`, make([]byte, 50)), []string{`tensor "conv1.weight"`, "past the end", "50 bytes", "truncated"}},
		{"overlap", build(`{`+w("a", "[2]", "[0,8]")+`,`+w("b", "[2]", "[4,12]")+`}`, make([]byte, 12)), []string{`tensor "b"`, `tensor "a"`, "overlap"}},
		{"hole", build(`{`+w("a", "[1]", "[0,4]")+`,`+w("b", "[1]", "[8,12]")+`}`, make([]byte, 12)), []string{`tensor "b"`, `tensor "a"`, "hole of 4 bytes"}},
		{"hole at start", build(`{`+w("a", "[1]", "[4,8]")+`}`, make([]byte, 8)), []string{`tensor "a"`, "hole of 4 bytes", "offset 0"}},
		{"trailing bytes", build(`{`+w("a", "[1]", "[0,4]")+`}`, make([]byte, 7)), []string{`tensor "a"`, "3 trailing bytes"}},
		{"data without tensors", build(`{}`, make([]byte, 4)), []string{"no tensor", "4 bytes"}},
		{"metadata not strings", build(`{"__metadata__":{"epoch":3}}`, nil), []string{"__metadata__", `"epoch"`, "not a string"}},
		{"metadata not object", build(`{"__metadata__":"x"}`, nil), []string{"__metadata__", "object"}},
	}
	for _, c := range cases {
		f, err := Decode(c.b, file)
		if err == nil {
			t.Errorf("%s: no error, decoded %+v", c.name, f)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, file) {
			t.Errorf("%s: error %q does not name the file", c.name, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not contain %q", c.name, msg, w)
			}
		}
		// Read must report the same error.
		if _, err2 := Read(bytes.NewReader(c.b), file); err2 == nil {
			t.Errorf("%s: Read: no error", c.name)
		}
	}
}

// The shapes of model.safetensors, from testdata/golden/paper-1dcnn/README.md
// ("Tensors:" paragraph and the layer table).
var modelShapes = map[string][]int{
	"conv1.weight": {8, 1, 3}, "conv1.bias": {8},
	"conv2.weight": {8, 8, 3}, "conv2.bias": {8},
	"bn1.weight": {8}, "bn1.bias": {8}, "bn1.running_mean": {8}, "bn1.running_var": {8},
	"conv3.weight": {16, 8, 3}, "conv3.bias": {16},
	"conv4.weight": {16, 16, 3}, "conv4.bias": {16},
	"bn2.weight": {16}, "bn2.bias": {16}, "bn2.running_mean": {16}, "bn2.running_var": {16},
	"fc1.weight": {64, 16}, "fc1.bias": {64},
	"bn3.weight": {64}, "bn3.bias": {64}, "bn3.running_mean": {64}, "bn3.running_var": {64},
	"fc2.weight": {16, 64}, "fc2.bias": {16},
}

func TestGoldenModel(t *testing.T) {
	path := golden.File(t, "paper-1dcnn", "model.safetensors")
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Model struct {
			StateDictNames []string `json:"state_dict_names"`
		} `json:"model"`
	}
	mb, err := os.ReadFile(golden.File(t, "paper-1dcnn", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mb, &manifest); err != nil {
		t.Fatal(err)
	}
	want := manifest.Model.StateDictNames
	if len(want) != 24 || len(f.Tensors) != 24 {
		t.Fatalf("%d tensors, manifest lists %d; want 24", len(f.Tensors), len(want))
	}
	for i, tn := range f.Tensors {
		// The file was written in state_dict order, so file (offset)
		// order is the manifest's order.
		if tn.Name != want[i] {
			t.Errorf("tensor %d is %q, manifest says %q", i, tn.Name, want[i])
		}
		if tn.DType != "F32" {
			t.Errorf("%s: dtype %s, want F32", tn.Name, tn.DType)
		}
		if ws, ok := modelShapes[tn.Name]; !ok || !slices.Equal(tn.Shape, ws) {
			t.Errorf("%s: shape %v, README says %v", tn.Name, tn.Shape, ws)
		}
		if len(tn.Data) != tn.Len() {
			t.Errorf("%s: %d values for shape %v", tn.Name, len(tn.Data), tn.Shape)
		}
		for _, v := range tn.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Errorf("%s: non-finite value %v", tn.Name, v)
				break
			}
		}
	}
	if f.Meta["what"] != "model" || f.Meta["seed"] != "11" {
		t.Errorf("metadata %v, want what=model seed=11", f.Meta)
	}
	// The first and last values, read straight from the bytes.
	raw, _ := os.ReadFile(path)
	start := 8 + int(binary.LittleEndian.Uint64(raw))
	first := math.Float32frombits(binary.LittleEndian.Uint32(raw[start:]))
	last := math.Float32frombits(binary.LittleEndian.Uint32(raw[len(raw)-4:]))
	w1, _ := f.Get("conv1.weight")
	b2, _ := f.Get("fc2.bias")
	if w1.Data[0] != first || b2.Data[15] != last {
		t.Errorf("conv1.weight[0] = %v, fc2.bias[15] = %v; bytes say %v, %v", w1.Data[0], b2.Data[15], first, last)
	}
	// BN running variances are positive.
	for _, n := range []string{"bn1.running_var", "bn2.running_var", "bn3.running_var"} {
		v, _ := f.Get(n)
		for _, x := range v.Data {
			if !(x > 0) {
				t.Errorf("%s holds %v", n, x)
			}
		}
	}
}

// TestGoldenAll decodes every safetensors file of the golden sets and
// checks that re-encoding round-trips its values.
func TestGoldenAll(t *testing.T) {
	root := golden.Root(t)
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".safetensors") {
			return err
		}
		n++
		f, err := ReadFile(path)
		if err != nil {
			t.Error(err)
			return nil
		}
		// Encode writes F32: the float tensors round-trip; an integer
		// tensor (PyTorch's I64 num_batches_tracked) must have its
		// values in Ints.
		var floats []Tensor
		for _, tn := range f.Tensors {
			if tn.IsFloat() {
				floats = append(floats, tn)
			} else if len(tn.Ints) != tn.Len() {
				t.Errorf("%s: tensor %q (%s) has %d integer values, want %d", path, tn.Name, tn.DType, len(tn.Ints), tn.Len())
			}
		}
		b, err := Encode(floats, f.Meta)
		if err != nil {
			t.Errorf("%s: re-encode: %v", path, err)
			return nil
		}
		g, err := Decode(b, path+" (re-encoded)")
		if err != nil {
			t.Error(err)
			return nil
		}
		for i := range floats {
			a, b := floats[i], g.Tensors[i]
			if a.Name != b.Name || !slices.Equal(a.Shape, b.Shape) || !sameBits(a.Data, b.Data) {
				t.Errorf("%s: tensor %q does not round-trip", path, a.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no safetensors file under %s", root)
	}
	t.Logf("%d golden safetensors files decoded", n)
}

func FuzzDecode(f *testing.F) {
	ok, _ := Encode([]Tensor{
		{Name: "a", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}},
		{Name: "s", Shape: []int{}, Data: []float32{5}},
	}, map[string]string{"k": "v"})
	f.Add(ok)
	f.Add(build(`{"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[4,6]},"i":{"dtype":"I64","shape":[],"data_offsets":[6,14]}}`, make([]byte, 14)))
	f.Add(build(`{"d":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"z":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}}`, make([]byte, 8)))
	f.Add(build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)))
	f.Add(build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 2)))
	f.Add(build(`{"__metadata__":{"x":"y"}}`, nil))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Decode(b, "fuzz")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		var floats []Tensor
		for _, tn := range file.Tensors {
			for _, d := range tn.Shape {
				if d < 0 {
					t.Fatalf("%q: negative shape %v accepted", tn.Name, tn.Shape)
				}
			}
			if tn.IsFloat() {
				if len(tn.Data) != tn.Len() {
					t.Fatalf("%q: %d values for shape %v", tn.Name, len(tn.Data), tn.Shape)
				}
				floats = append(floats, tn)
			} else if tn.Data != nil {
				t.Fatalf("%q: dtype %s has Data", tn.Name, tn.DType)
			}
			if tn.Ints != nil && len(tn.Ints) != tn.Len() || tn.Float64 != nil && len(tn.Float64) != tn.Len() {
				t.Fatalf("%q: %d ints, %d float64 values for shape %v", tn.Name, len(tn.Ints), len(tn.Float64), tn.Shape)
			}
		}
		// Float tensors round-trip through Encode.
		enc, err := Encode(floats, file.Meta)
		if err != nil {
			// Names are unique and shapes valid: Encode must accept them.
			t.Fatalf("re-encode: %v", err)
		}
		again, err := Decode(enc, "fuzz-reencoded")
		if err != nil {
			t.Fatalf("decode of re-encoded file: %v", err)
		}
		if len(again.Tensors) != len(floats) || !mapsEqual(again.Meta, file.Meta) {
			t.Fatalf("re-encoded file differs: %d tensors, want %d", len(again.Tensors), len(floats))
		}
		for i := range floats {
			if again.Tensors[i].Name != floats[i].Name || !slices.Equal(again.Tensors[i].Shape, floats[i].Shape) || !sameBits(again.Tensors[i].Data, floats[i].Data) {
				t.Fatalf("tensor %q does not round-trip", floats[i].Name)
			}
		}
	})
}

func BenchmarkDecodeGoldenModel(b *testing.B) {
	path := golden.File(b, "paper-1dcnn", "model.safetensors")
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Decode(raw, path); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOtherFormatsNamed: an ONNX model, a torch.save zip or a .npy array
// given as a safetensors file is refused saying what it is and what to
// do, by Decode and by Read.
func TestOtherFormatsNamed(t *testing.T) {
	for _, c := range []struct {
		head []byte
		want string
	}{
		{append([]byte{0x08, 0x07, 0x12, 0x07}, "pytorch"...), "is an ONNX model"},
		{[]byte("PK\x03\x04\x00\x00\x00\x00\x00"), "is a zip, as torch.save writes"},
		{[]byte("\x93NUMPY\x01\x00v\x00"), "is a .npy array"},
	} {
		b := append(append([]byte(nil), c.head...), make([]byte, 64)...)
		_, err := Decode(b, "w.bin")
		_, rerr := Read(bytes.NewReader(b), "w.bin")
		for _, e := range []error{err, rerr} {
			if e == nil || !strings.Contains(e.Error(), c.want) || !strings.Contains(e.Error(), "w.bin") {
				t.Errorf("%q: %v; want an error naming the file and saying it %s", c.head, e, c.want)
			}
		}
	}
	// a plain oversized length says no more
	b := append(bytes.Repeat([]byte{0xff}, 8), make([]byte, 16)...)
	if _, err := Decode(b, "w.bin"); err == nil || strings.Contains(err.Error(), "; the file is") {
		t.Errorf("an oversized header length: %v", err)
	}
}
