package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/internal/atomicfile"
)

// MaxHeader is the largest header length accepted, in bytes (100 MB, the
// limit of the reference implementation).
const MaxHeader = 100 << 20

// metadataKey is the reserved header key that holds the string metadata.
const metadataKey = "__metadata__"

// Tensor is one named tensor.
type Tensor struct {
	Name string
	// DType is the dtype in the file ("F32", "F16", "BF16", "F64", "I64",
	// ...). Encode ignores it and writes "F32".
	DType string
	// Shape is the shape, row major; empty for a scalar.
	Shape []int
	// Data holds the values converted to float32, len = product(Shape),
	// for the float dtypes F32, F64, F16 and BF16. It is nil for every
	// other dtype (integers, BOOL, 8-bit floats), whose bytes are not
	// converted: the caller that needs such a tensor as a float errors out.
	Data []float32
	// Float64 holds the values of an F64 tensor exactly (nil for every
	// other dtype). Encode ignores it.
	Float64 []float64
	// Ints holds the values of an integer (I8..I64, U8..U64) or BOOL tensor
	// as int64 (a BOOL element as its byte, which a valid file holds as 0
	// or 1); nil for the float dtypes, and for a U64 tensor
	// holding a value above 2^63-1, which int64 cannot hold. Encode
	// ignores it.
	Ints []int64
}

// IsFloat reports whether the tensor's dtype is one that Decode converts to
// float32 (F32, F64, F16, BF16), i.e. whether Data holds its values.
func (t Tensor) IsFloat() bool {
	switch t.DType {
	case "F32", "F64", "F16", "BF16":
		return true
	}
	return false
}

// Len returns the number of elements, the product of Shape (1 for a scalar).
func (t Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is a decoded safetensors file.
type File struct {
	// Tensors are all tensors of the file, float or not, in file order:
	// sorted by data offset (tensors of zero bytes at the same offset keep
	// their header order).
	Tensors []Tensor
	// Meta is the "__metadata__" table; empty (not nil) if the file has none.
	Meta map[string]string
}

// Get returns the tensor named name.
func (f *File) Get(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// dtypeSize is the size in bytes of one element of every dtype accepted.
var dtypeSize = map[string]int{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2,
	"I64": 8, "I32": 4, "I16": 2, "I8": 1,
	"U64": 8, "U32": 4, "U16": 2, "U8": 1,
	"BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
}

// knownDTypes lists the accepted dtypes for error messages.
const knownDTypes = "F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2, F8_E8M0"

// MaxFileBytes bounds the size of a file ReadFile reads (it holds the
// whole file): a header of MaxHeader bytes and 2^28 elements of 8 bytes
// (2 GiB), the elements sdk/onnx and host/data accept.
const MaxFileBytes = MaxHeader + 8<<28

// fileLimit is ReadFile's bound, for atomicfile.ReadRegular.
var fileLimit = atomicfile.Limit{Bytes: MaxFileBytes, What: "a safetensors file"}

// ReadFile reads and decodes the file at path: a regular file of at most
// MaxFileBytes bytes (a FIFO, a device such as /dev/zero, a directory or
// a larger file is refused before it is read).
func ReadFile(path string) (*File, error) {
	b, err := atomicfile.ReadRegular(path, fileLimit)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return Decode(b, path)
}

// Read reads a whole safetensors stream from r and decodes it; name is the
// file name used in errors. The header length is checked before the rest
// of the stream is read.
func Read(r io.Reader, name string) (*File, error) {
	var head [8]byte
	if n, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("safetensors: %s: file is %d bytes, want at least 8 (the header length)", name, n)
		}
		return nil, fmt.Errorf("safetensors: %s: %w", name, err)
	}
	if n := binary.LittleEndian.Uint64(head[:]); n > MaxHeader {
		return nil, fmt.Errorf("safetensors: %s: header length %d is oversized, want at most %d bytes (100 MB)%s", name, n, MaxHeader, otherFormat(head[:]))
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", name, err)
	}
	b := make([]byte, 0, 8+len(rest))
	b = append(append(b, head[:]...), rest...)
	return Decode(b, name)
}

// otherFormat says what a file whose first 8 bytes are head is, when
// they are another format's start rather than a header length: an ONNX
// model (a protobuf ModelProto: ir_version, field 1, then the producer's
// name, field 2), a torch.save zip, a .npy array; "" otherwise.
func otherFormat(head []byte) string {
	switch {
	case len(head) >= 3 && head[0] == 0x08 && head[1] < 0x80 && head[2] == 0x12:
		return "; the file is an ONNX model, not a state_dict: an ONNX file holds its own weights (give it as --model F.onnx, or [model] onnx, without weights), and an ONNX export folds batchnorm into the convolutions and drops dropout, so its weights do not fit a PyTorch module's state_dict"
	case len(head) >= 4 && string(head[:4]) == "PK\x03\x04":
		return "; the file is a zip, as torch.save writes (accepted here: safetensors; a .pt file goes to a PyTorch model's weights, which read it with torch.load)"
	case len(head) >= 6 && string(head[:6]) == "\x93NUMPY":
		return "; the file is a .npy array, not a state_dict"
	}
	return ""
}

// header is one tensor entry of the JSON header. The pointers tell a
// missing field from a zero one. Unknown fields are ignored, as the
// reference implementation does.
type header struct {
	DType   *string  `json:"dtype"`
	Shape   *[]int   `json:"shape"`
	Offsets *[]int64 `json:"data_offsets"`
}

// entry is a validated tensor entry before its data is converted.
type entry struct {
	name       string
	dtype      string
	shape      []int
	begin, end int
	order      int // position in the header
}

// Decode decodes a whole safetensors file held in b; name is the file name
// used in errors. The returned tensors do not alias b.
func Decode(b []byte, name string) (*File, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("safetensors: %s: "+format, append([]any{name}, a...)...)
	}
	if len(b) < 8 {
		return nil, fail("file is %d bytes, want at least 8 (the header length)", len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > MaxHeader {
		return nil, fail("header length %d is oversized, want at most %d bytes (100 MB)%s", n, MaxHeader, otherFormat(b[:8]))
	}
	if n > uint64(len(b)-8) {
		return nil, fail("header length %d is larger than the file: only %d bytes follow the 8-byte length (truncated file?)%s", n, len(b)-8, otherFormat(b[:8]))
	}
	hdr := b[8 : 8+n]
	data := b[8+n:]

	raw, err := parseObject(hdr)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fail("malformed JSON header: unexpected end of the %d-byte header", len(hdr))
	}
	if err != nil {
		return nil, fail("malformed JSON header: %v", err)
	}

	f := &File{Meta: map[string]string{}}
	var entries []entry
	for i, kv := range raw {
		if kv.key == metadataKey {
			if err := decodeMeta(kv.value, f.Meta); err != nil {
				return nil, fail("%s: %v", metadataKey, err)
			}
			continue
		}
		e, err := decodeEntry(kv.key, kv.value, len(data))
		if err != nil {
			return nil, fail("tensor %q: %v", kv.key, err)
		}
		e.order = i
		entries = append(entries, e)
	}

	// File order: by offset; zero-byte tensors first at equal begin.
	slices.SortStableFunc(entries, func(a, b entry) int {
		if a.begin != b.begin {
			return a.begin - b.begin
		}
		return a.end - b.end
	})
	// pos is the end of the data covered so far, last the tensor that
	// covers it (-1 before the first tensor).
	pos, last := 0, -1
	for i, e := range entries {
		switch {
		case e.begin < pos:
			return nil, fail("tensor %q: data_offsets [%d, %d] overlap tensor %q, which ends at %d; want tensors that cover the data section without overlap", e.name, e.begin, e.end, entries[last].name, pos)
		case e.begin > pos && last < 0:
			return nil, fail("tensor %q: data_offsets [%d, %d] leave a hole of %d bytes at the start of the data section; want the first tensor at offset 0", e.name, e.begin, e.end, e.begin)
		case e.begin > pos:
			return nil, fail("tensor %q: data_offsets [%d, %d] leave a hole of %d bytes after tensor %q, which ends at %d; want tensors that cover the data section without holes", e.name, e.begin, e.end, e.begin-pos, entries[last].name, pos)
		}
		if e.end > e.begin || last < 0 {
			pos, last = e.end, i
		}
	}
	if pos != len(data) {
		if last < 0 {
			return nil, fail("the header holds no tensor but the data section holds %d bytes; want none", len(data))
		}
		return nil, fail("%d trailing bytes after tensor %q, which ends at %d; want the data section to end there (it holds %d bytes)", len(data)-pos, entries[last].name, pos, len(data))
	}

	f.Tensors = make([]Tensor, len(entries))
	for i, e := range entries {
		t := Tensor{Name: e.name, DType: e.dtype, Shape: e.shape}
		raw := data[e.begin:e.end]
		t.Data = convert(e.dtype, raw)
		t.Ints = convertInts(e.dtype, raw)
		if e.dtype == "F64" {
			t.Float64 = make([]float64, len(raw)/8)
			for i := range t.Float64 {
				t.Float64[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
			}
		}
		f.Tensors[i] = t
	}
	return f, nil
}

// decodeEntry validates one tensor entry against a data section of
// dataLen bytes.
func decodeEntry(name string, v json.RawMessage, dataLen int) (entry, error) {
	var h header
	if err := json.Unmarshal(v, &h); err != nil {
		return entry{}, fmt.Errorf("want an object {\"dtype\": ..., \"shape\": [...], \"data_offsets\": [begin, end]}: %v", err)
	}
	switch {
	case h.DType == nil:
		return entry{}, errors.New("missing \"dtype\"")
	case h.Shape == nil || *h.Shape == nil:
		return entry{}, errors.New("missing \"shape\" (a list of nonnegative integers, [] for a scalar)")
	case h.Offsets == nil || *h.Offsets == nil:
		return entry{}, errors.New("missing \"data_offsets\" ([begin, end])")
	}
	e := entry{name: name, dtype: *h.DType, shape: *h.Shape}
	size, ok := dtypeSize[e.dtype]
	if !ok {
		return entry{}, fmt.Errorf("unknown dtype %q, want one of %s", e.dtype, knownDTypes)
	}
	// nbytes = size × product(shape), with overflow checks: any product
	// over dataLen cannot fit anyway.
	elems := 1
	for _, d := range e.shape {
		if d < 0 {
			return entry{}, fmt.Errorf("shape %v has a negative dimension", e.shape)
		}
		if d != 0 && elems > math.MaxInt/d {
			return entry{}, fmt.Errorf("shape %v: product overflows", e.shape)
		}
		elems *= d
	}
	if elems > math.MaxInt/size {
		return entry{}, fmt.Errorf("shape %v: size in bytes overflows", e.shape)
	}
	nbytes := elems * size
	off := *h.Offsets
	if len(off) != 2 {
		return entry{}, fmt.Errorf("data_offsets %v has %d values, want 2 ([begin, end])", off, len(off))
	}
	if off[0] < 0 || off[1] < off[0] {
		return entry{}, fmt.Errorf("data_offsets [%d, %d]: want 0 <= begin <= end", off[0], off[1])
	}
	if off[1]-off[0] != int64(nbytes) {
		return entry{}, fmt.Errorf("data_offsets [%d, %d] span %d bytes, want %s = %d bytes for dtype %s and shape %v",
			off[0], off[1], off[1]-off[0], sizeFormula(size, e.shape), nbytes, e.dtype, e.shape)
	}
	if off[1] > int64(dataLen) {
		return entry{}, fmt.Errorf("data_offsets [%d, %d] run past the end of the data section (%d bytes): truncated file", off[0], off[1], dataLen)
	}
	e.begin, e.end = int(off[0]), int(off[1])
	return e, nil
}

// sizeFormula renders "4 × 8 × 1 × 3" for error messages.
func sizeFormula(size int, shape []int) string {
	var sb strings.Builder
	sb.WriteString(strconv.Itoa(size))
	for _, d := range shape {
		sb.WriteString(" × ")
		sb.WriteString(strconv.Itoa(d))
	}
	return sb.String()
}

// decodeMeta decodes the "__metadata__" object, whose values must all be
// strings.
func decodeMeta(v json.RawMessage, dst map[string]string) error {
	if string(bytes.TrimSpace(v)) == "null" {
		return nil
	}
	kvs, err := parseObject(v)
	if err != nil {
		return fmt.Errorf("want an object of strings: %v", err)
	}
	for _, kv := range kvs {
		var s string
		if err := json.Unmarshal(kv.value, &s); err != nil {
			return fmt.Errorf("key %q: value %.40s is not a string", kv.key, kv.value)
		}
		dst[kv.key] = s
	}
	return nil
}

type keyValue struct {
	key   string
	value json.RawMessage
}

// parseObject parses b as exactly one JSON object followed only by
// whitespace, and returns its members in order. Duplicate keys are errors.
func parseObject(b []byte) ([]keyValue, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("want a JSON object, found %v", tok)
	}
	var out []keyValue
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("want a key, found %v", tok)
		}
		if seen[key] {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("key %q: %w", key, err)
		}
		out = append(out, keyValue{key, v})
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return nil, errors.New("data after the JSON object, want only space padding")
		}
		return nil, fmt.Errorf("after the JSON object: %v", err)
	}
	return out, nil
}

// convert converts little-endian raw data of a float dtype to float32; it
// returns nil for the other dtypes. F64 values are rounded to the nearest
// float32 (overflowing to ±Inf); F16 and BF16 convert exactly.
func convert(dtype string, raw []byte) []float32 {
	var out []float32
	switch dtype {
	case "F32":
		out = make([]float32, len(raw)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case "F64":
		out = make([]float32, len(raw)/8)
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:])))
		}
	case "F16":
		out = make([]float32, len(raw)/2)
		for i := range out {
			out[i] = Float16ToFloat32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	case "BF16":
		out = make([]float32, len(raw)/2)
		for i := range out {
			out[i] = BFloat16ToFloat32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	}
	return out
}

// convertInts converts little-endian raw data of an integer or BOOL dtype
// to int64 (sign-extending the signed ones); it returns nil for the other
// dtypes and for U64 data holding a value above math.MaxInt64.
func convertInts(dtype string, raw []byte) []int64 {
	var size int
	signed := dtype[0] == 'I'
	switch dtype {
	case "I64", "U64":
		size = 8
	case "I32", "U32":
		size = 4
	case "I16", "U16":
		size = 2
	case "I8", "U8", "BOOL":
		size = 1
	default:
		return nil
	}
	out := make([]int64, len(raw)/size)
	for i := range out {
		var u uint64
		switch size {
		case 8:
			u = binary.LittleEndian.Uint64(raw[8*i:])
		case 4:
			u = uint64(binary.LittleEndian.Uint32(raw[4*i:]))
		case 2:
			u = uint64(binary.LittleEndian.Uint16(raw[2*i:]))
		default:
			u = uint64(raw[i])
		}
		switch {
		case signed && size < 8:
			shift := 64 - 8*size
			out[i] = int64(u<<shift) >> shift
		case !signed && size == 8 && u > math.MaxInt64:
			return nil
		default:
			out[i] = int64(u)
		}
	}
	return out
}

// Float16ToFloat32 converts an IEEE 754 binary16 value (1 sign, 5 exponent,
// 10 mantissa bits) to float32, exactly: every half value, subnormals
// included, is a float32. Infinities stay infinite and NaNs stay NaN with
// their payload shifted into the top mantissa bits.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0 && mant == 0: // ±0
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: mant × 2^-24, exact in float32
		v := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(v))
	case exp == 0x1f: // ±Inf, NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	default: // normal: rebias the exponent from 15 to 127
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	}
}

// BFloat16ToFloat32 converts a bfloat16 value, the top 16 bits of a
// float32, to float32, exactly.
func BFloat16ToFloat32(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}

// Encode encodes tensors as a safetensors file, every tensor as F32 (DType
// is ignored), in the given order, after the metadata. The bytes are a
// function of the arguments only: the header is
//
//	{"__metadata__":{keys sorted},"name":{"dtype":"F32","shape":[...],"data_offsets":[b,e]},...}
//
// (no "__metadata__" when meta is empty), padded with spaces to a multiple
// of 8 bytes, so that the data section starts 8-byte aligned. Every tensor
// must have len(Data) = product(Shape), a nonnegative shape and a unique
// name other than "__metadata__".
func Encode(tensors []Tensor, meta map[string]string) ([]byte, error) {
	var hb bytes.Buffer
	hb.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			hb.WriteByte(',')
		}
		first = false
	}
	if len(meta) > 0 {
		sep()
		writeJSONString(&hb, metadataKey)
		hb.WriteString(":{")
		keys := make([]string, 0, len(meta))
		for k := range meta {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				hb.WriteByte(',')
			}
			writeJSONString(&hb, k)
			hb.WriteByte(':')
			writeJSONString(&hb, meta[k])
		}
		hb.WriteByte('}')
	}
	seen := make(map[string]bool, len(tensors))
	off := 0
	for _, t := range tensors {
		if t.Name == metadataKey {
			return nil, fmt.Errorf("safetensors: encode: tensor name %q is reserved", metadataKey)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("safetensors: encode: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		n := 1
		for _, d := range t.Shape {
			if d < 0 {
				return nil, fmt.Errorf("safetensors: encode: tensor %q: shape %v has a negative dimension", t.Name, t.Shape)
			}
			if d != 0 && n > math.MaxInt/4/d {
				return nil, fmt.Errorf("safetensors: encode: tensor %q: shape %v is too large", t.Name, t.Shape)
			}
			n *= d
		}
		if len(t.Data) != n {
			return nil, fmt.Errorf("safetensors: encode: tensor %q (dtype %q): %d values, want product of shape %v = %d", t.Name, t.DType, len(t.Data), t.Shape, n)
		}
		sep()
		writeJSONString(&hb, t.Name)
		hb.WriteString(`:{"dtype":"F32","shape":[`)
		for i, d := range t.Shape {
			if i > 0 {
				hb.WriteByte(',')
			}
			hb.WriteString(strconv.Itoa(d))
		}
		hb.WriteString(`],"data_offsets":[`)
		hb.WriteString(strconv.Itoa(off))
		hb.WriteByte(',')
		off += 4 * n
		hb.WriteString(strconv.Itoa(off))
		hb.WriteString("]}")
	}
	hb.WriteByte('}')
	for hb.Len()%8 != 0 {
		hb.WriteByte(' ')
	}
	if hb.Len() > MaxHeader {
		return nil, fmt.Errorf("safetensors: encode: header of %d bytes is over the %d-byte limit", hb.Len(), MaxHeader)
	}

	out := make([]byte, 8, 8+hb.Len()+off)
	binary.LittleEndian.PutUint64(out, uint64(hb.Len()))
	out = append(out, hb.Bytes()...)
	for _, t := range tensors {
		for _, v := range t.Data {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out, nil
}

// writeJSONString writes s as a JSON string, without HTML escaping.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes (invalid UTF-8 becomes U+FFFD)
	b.Truncate(b.Len() - 1) // Encode appends '\n'
}

// WriteFile encodes tensors (see Encode) and writes them to path
// atomically: to a temporary file in the same directory, synced, then
// renamed over path, so that a reader never sees a partial file. The file
// gets mode 0644.
func WriteFile(path string, tensors []Tensor, meta map[string]string) error {
	b, err := Encode(tensors, meta)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b); err != nil {
		return fmt.Errorf("safetensors: write %s: %w", path, err)
	}
	return nil
}
