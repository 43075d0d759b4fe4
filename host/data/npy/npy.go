package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/uaxai/uaxai/internal/atomicfile"
)

// Array is one array read from a .npy file. Exactly one of Float, Int and
// Str holds its elements, in C order: Float for a float dtype (float32
// values widened exactly), Int for an integer or bool dtype, Str for a
// unicode string dtype (trailing NULs removed).
type Array struct {
	Shape []int
	Dtype string // as the header gives it, e.g. "<f4"
	Float []float64
	Int   []int64
	Str   []string
}

// Len is the number of elements: the product of Shape (1 for a scalar).
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

// DefaultMaxElements bounds the elements ReadFile accepts: 2^28 (2 GiB as
// float64).
const DefaultMaxElements = 1 << 28

// maxHeader bounds the header NumPy writes for any array (its own limit is
// 10,000 bytes before version 2 falls back; we take a generous 1 MiB).
const maxHeader = 1 << 20

var magic = []byte("\x93NUMPY")

// MaxFileBytes bounds a .npy file ReadFile reads: DefaultMaxElements
// elements of 8 bytes, and the largest header (2 GiB and 1 MiB).
const MaxFileBytes = 8*DefaultMaxElements + 12 + maxHeader

// ReadFile reads the array of the .npy file at path, of at most
// DefaultMaxElements elements. The file must be a regular file of at most
// MaxFileBytes bytes: a FIFO, a device such as /dev/zero, a directory or
// a larger file is refused before it is read.
func ReadFile(path string) (*Array, error) {
	return ReadFileChecked(path, nil)
}

// ReadFileChecked is ReadFile with check, when not nil, called on the
// array's shape once the header is read and before its data is: its error
// (wrapped with the file's name) refuses the file.
func ReadFileChecked(path string, check func(shape []int) error) (*Array, error) {
	f, err := atomicfile.OpenRegular(path, atomicfile.Limit{Bytes: MaxFileBytes, What: "a .npy file"})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadChecked(bufio.NewReader(f), path, DefaultMaxElements, check)
}

// Read reads one .npy array of at most maxElems elements from r; name
// names the source in errors.
func Read(r io.Reader, name string, maxElems int) (*Array, error) {
	return ReadChecked(r, name, maxElems, nil)
}

// ReadChecked is Read with check, when not nil, called on the array's
// shape once the header is read and before its data is.
func ReadChecked(r io.Reader, name string, maxElems int, check func(shape []int) error) (*Array, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...))
	}
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fail("not a .npy file: %v (accepted: NumPy's format, which starts with \\x93NUMPY)", err)
	}
	if !bytes.Equal(pre[:6], magic) {
		return nil, fail("not a .npy file: it starts with %q (accepted: NumPy's format, which starts with \\x93NUMPY)", pre[:6])
	}
	major := pre[6]
	var hlen int
	switch major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fail("header length: %v", err)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fail("header length: %v", err)
		}
		n := binary.LittleEndian.Uint32(b[:])
		if n > maxHeader {
			return nil, fail("a header of %d bytes (accepted: at most %d)", n, maxHeader)
		}
		hlen = int(n)
	default:
		return nil, fail("format version %d.%d (accepted: 1.0, 2.0 and 3.0)", major, pre[7])
	}
	head := make([]byte, hlen)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, fail("the header of %d bytes: %v", hlen, err)
	}
	if major < 3 && !isLatin1(head) || major == 3 && !utf8.Valid(head) {
		return nil, fail("the header is not text")
	}
	descr, fortran, shape, err := parseHeader(string(head))
	if err != nil {
		return nil, fail("header %q: %v", strings.TrimSpace(string(head)), err)
	}
	if fortran {
		return nil, fail("the array is in Fortran order (accepted: C order: np.ascontiguousarray before np.save)")
	}
	elem, err := dtypeOf(descr)
	if err != nil {
		return nil, fail("%v", err)
	}
	n := 1
	for _, d := range shape {
		if d != 0 && n > maxElems/d {
			return nil, fail("shape %v: more than %d elements (accepted: at most %d)", shape, maxElems, maxElems)
		}
		n *= d
	}
	if check != nil {
		if err := check(shape); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	a := &Array{Shape: shape, Dtype: descr}
	// Read what is there (memory grows with the file, not with what its
	// header claims), then check it against the shape.
	want := n * elem.size
	data, err := io.ReadAll(io.LimitReader(r, int64(want)+1))
	if err != nil {
		return nil, fail("data: %v", err)
	}
	if len(data) < want {
		return nil, fail("shape %v of %s needs %d bytes of data, the file has %d", shape, descr, want, len(data))
	}
	if len(data) > want {
		return nil, fail("data past the %d bytes that shape %v of %s holds (accepted: one array a file)", want, shape, descr)
	}
	if err := elem.decode(a, data, n); err != nil {
		return nil, fail("%v", err)
	}
	return a, nil
}

func isLatin1(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\t' {
			return false
		}
	}
	return true
}

// parseHeader reads NumPy's header, a Python dict literal:
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
func parseHeader(h string) (descr string, fortran bool, shape []int, err error) {
	s := strings.TrimSpace(h)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return "", false, nil, errors.New("not a dict (accepted: NumPy's {'descr': ..., 'fortran_order': ..., 'shape': (...)})")
	}
	s = s[1 : len(s)-1]
	seen := map[string]bool{}
	for {
		s = strings.TrimSpace(s)
		if s == "" {
			break
		}
		key, rest, ok := quoted(s)
		if !ok {
			return "", false, nil, fmt.Errorf("a key at %q is not a quoted string", clip(s))
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, ":") {
			return "", false, nil, fmt.Errorf("no ':' after key %q", key)
		}
		rest = strings.TrimSpace(rest[1:])
		if seen[key] {
			return "", false, nil, fmt.Errorf("key %q twice", key)
		}
		seen[key] = true
		switch key {
		case "descr":
			v, r, ok := quoted(rest)
			if !ok {
				return "", false, nil, errors.New("descr is not a string (accepted: a simple dtype such as '<f4'; structured dtypes are not read)")
			}
			descr, rest = v, r
		case "fortran_order":
			switch {
			case strings.HasPrefix(rest, "False"):
				fortran, rest = false, rest[5:]
			case strings.HasPrefix(rest, "True"):
				fortran, rest = true, rest[4:]
			default:
				return "", false, nil, fmt.Errorf("fortran_order at %q (accepted: True or False)", clip(rest))
			}
		case "shape":
			end := strings.IndexByte(rest, ')')
			if !strings.HasPrefix(rest, "(") || end < 0 {
				return "", false, nil, fmt.Errorf("shape at %q is not a tuple", clip(rest))
			}
			if shape, err = parseShape(rest[1:end]); err != nil {
				return "", false, nil, err
			}
			rest = rest[end+1:]
		default:
			return "", false, nil, fmt.Errorf("unknown key %q (accepted: descr, fortran_order, shape)", key)
		}
		s = strings.TrimSpace(rest)
		if strings.HasPrefix(s, ",") {
			s = s[1:]
		} else if s != "" {
			return "", false, nil, fmt.Errorf("%q after key %q", clip(s), key)
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return "", false, nil, fmt.Errorf("no key %q", k)
		}
	}
	return descr, fortran, shape, nil
}

// quoted reads a Python string literal in single or double quotes (no
// escapes, as NumPy writes them) at the start of s.
func quoted(s string) (v, rest string, ok bool) {
	if s == "" || (s[0] != '\'' && s[0] != '"') {
		return "", s, false
	}
	end := strings.IndexByte(s[1:], s[0])
	if end < 0 {
		return "", s, false
	}
	return s[1 : 1+end], s[2+end:], true
}

func parseShape(s string) ([]int, error) {
	shape := []int{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := strconv.Atoi(strings.TrimSuffix(f, "L"))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("shape dimension %q (accepted: integers >= 0)", f)
		}
		shape = append(shape, d)
	}
	return shape, nil
}

func clip(s string) string {
	if len(s) > 24 {
		return s[:24] + "..."
	}
	return s
}

// element is how one dtype's elements are stored.
type element struct {
	size   int
	decode func(a *Array, data []byte, n int) error
}

// dtypeOf reads a simple dtype: its byte order ('<', '>', '|' or '=',
// read as little-endian), kind (f, i, u, b, U) and size.
func dtypeOf(descr string) (element, error) {
	bad := fmt.Errorf("dtype %q (accepted: float32 or float64 ('<f4', '<f8'), integers ('<i1'..'<i8', '<u1'..'<u8'), bool ('|b1') or unicode strings ('<U<n>'), either byte order)", descr)
	if len(descr) < 3 {
		return element{}, bad
	}
	var order binary.ByteOrder = binary.LittleEndian
	switch descr[0] {
	case '<', '|', '=':
	case '>':
		order = binary.BigEndian
	default:
		return element{}, bad
	}
	size, err := strconv.Atoi(descr[2:])
	if err != nil || size < 1 {
		return element{}, bad
	}
	kind := descr[1]
	if kind == 'f' && (size == 4 || size == 8) {
		return element{size, func(a *Array, d []byte, n int) error {
			a.Float = make([]float64, n)
			for i := range a.Float {
				if size == 4 {
					a.Float[i] = float64(math.Float32frombits(order.Uint32(d[4*i:])))
				} else {
					a.Float[i] = math.Float64frombits(order.Uint64(d[8*i:]))
				}
			}
			return nil
		}}, nil
	}
	if (kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8) {
		signed := kind == 'i'
		return element{size, func(a *Array, d []byte, n int) error {
			a.Int = make([]int64, n)
			for i := range a.Int {
				var u uint64
				switch size {
				case 1:
					u = uint64(d[i])
				case 2:
					u = uint64(order.Uint16(d[2*i:]))
				case 4:
					u = uint64(order.Uint32(d[4*i:]))
				default:
					u = order.Uint64(d[8*i:])
				}
				v := int64(u)
				if signed && size < 8 {
					shift := 64 - 8*size
					v = int64(u<<shift) >> shift
				}
				if !signed && size == 8 && u > math.MaxInt64 {
					return fmt.Errorf("element %d is %d, beyond int64 (accepted: labels and counts below 2^63)", i, u)
				}
				a.Int[i] = v
			}
			return nil
		}}, nil
	}
	if kind == 'b' && size == 1 {
		return element{1, func(a *Array, d []byte, n int) error {
			a.Int = make([]int64, n)
			for i := range a.Int {
				if d[i] > 1 {
					return fmt.Errorf("bool element %d is %d (accepted: 0 or 1)", i, d[i])
				}
				a.Int[i] = int64(d[i])
			}
			return nil
		}}, nil
	}
	if kind == 'U' && size <= 1<<16 {
		return element{4 * size, func(a *Array, d []byte, n int) error {
			a.Str = make([]string, n)
			var sb strings.Builder
			for i := range a.Str {
				sb.Reset()
				for k := range size {
					r := rune(order.Uint32(d[4*(i*size+k):]))
					if r == 0 {
						break
					}
					if !utf8.ValidRune(r) {
						return fmt.Errorf("string element %d holds code point %#x (accepted: Unicode text)", i, r)
					}
					sb.WriteRune(r)
				}
				a.Str[i] = sb.String()
			}
			return nil
		}}, nil
	}
	return element{}, bad
}

// growthDigits is NumPy's GROWTH_AXIS_MAX_DIGITS: the header keeps room
// for the first dimension to grow to 21 digits in place.
const growthDigits = 21

// WriteHeader writes the header of a version 1.0 .npy file of an array of
// dtype descr (such as '<f4', '<i8', '|b1') and shape, in C order, byte
// for byte as np.save (NumPy 1.24 to 2.x) writes it:
//
//	\x93NUMPY \x01 \x00 <uint16 length> {'descr': ..., 'fortran_order': False, 'shape': (...), }
//
// followed by 21 - len(str(shape[0])) spaces (none for a scalar), then
// spaces up to the next multiple of 64 bytes (a whole 64 when already on
// one) less one, then a newline. The product(shape) elements, C order,
// must follow.
func WriteHeader(w io.Writer, descr string, shape []int) error {
	dims := make([]string, len(shape))
	for i, d := range shape {
		if d < 0 {
			panic("npy: negative dimension")
		}
		dims[i] = strconv.Itoa(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, tuple)
	if len(shape) > 0 {
		h += strings.Repeat(" ", max(growthDigits-len(dims[0]), 0))
	}
	pad := 64 - (len(magic)+2+2+len(h)+1)%64
	h += strings.Repeat(" ", pad) + "\n"
	if len(h) > math.MaxUint16 {
		return fmt.Errorf("npy: a header of %d bytes does not fit version 1.0", len(h))
	}
	b := make([]byte, 0, len(magic)+4+len(h))
	b = append(append(b, magic...), 1, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	b = append(b, h...)
	_, err := w.Write(b)
	return err
}

// count returns product(shape) and panics unless it is n.
func count(shape []int, n int) {
	p := 1
	for _, d := range shape {
		if d < 0 {
			panic("npy: negative dimension")
		}
		p *= d
	}
	if p != n {
		panic(fmt.Sprintf("npy: shape %v holds %d values, got %d", shape, p, n))
	}
}

// WriteFloat32 writes x, of the given shape, as a version 1.0 .npy array
// of dtype '<f4' in C order, as np.save writes it: what np.load reads as
// float32. It panics if product(shape) is not len(x).
func WriteFloat32(w io.Writer, shape []int, x []float32) error {
	count(shape, len(x))
	if err := WriteHeader(w, "<f4", shape); err != nil {
		return err
	}
	buf := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	_, err := w.Write(buf)
	return err
}

// WriteInt64 writes x, of the given shape, as a version 1.0 .npy array of
// dtype '<i8' in C order, as np.save writes it. It panics if
// product(shape) is not len(x).
func WriteInt64(w io.Writer, shape []int, x []int64) error {
	count(shape, len(x))
	if err := WriteHeader(w, "<i8", shape); err != nil {
		return err
	}
	buf := make([]byte, 8*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(v))
	}
	_, err := w.Write(buf)
	return err
}

// WriteBool writes x, of the given shape, as a version 1.0 .npy array of
// dtype '|b1' (one byte 0 or 1 an element) in C order, as np.save writes
// it. It panics if product(shape) is not len(x).
func WriteBool(w io.Writer, shape []int, x []bool) error {
	count(shape, len(x))
	if err := WriteHeader(w, "|b1", shape); err != nil {
		return err
	}
	buf := make([]byte, len(x))
	for i, v := range x {
		if v {
			buf[i] = 1
		}
	}
	_, err := w.Write(buf)
	return err
}
