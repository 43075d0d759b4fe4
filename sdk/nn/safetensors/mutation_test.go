package safetensors

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

// These tests close gaps that mutation testing (scripts/mutation) found:
// the exact edges of the header-length checks, a zero-byte tensor sharing
// its offset with a nonempty one, and which tensor the errors name.

func wantErr(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one containing %q", what, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not contain %q", what, err, w)
		}
	}
}

// decodeNoPanic is Decode, with a panic turned into a test failure.
func decodeNoPanic(t *testing.T, b []byte) (f *File, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("Decode panicked: %v", r)
		}
	}()
	return Decode(b, "edge")
}

// TestHeaderLengthEdges: MaxHeader itself is an accepted length (the file
// is then refused for being shorter than its header, not for an oversized
// one); a length one byte more than what follows is a truncated file, and
// exactly what follows (no data section) is a valid file; 8 bytes hold a
// length but no header.
func TestHeaderLengthEdges(t *testing.T) {
	atMax := binary.LittleEndian.AppendUint64(nil, MaxHeader)
	atMax = append(atMax, "{}"...)
	_, err := decodeNoPanic(t, atMax)
	wantErr(t, "Decode, header length MaxHeader", err, "larger than the file")
	_, err = Read(bytes.NewReader(atMax), "edge")
	wantErr(t, "Read, header length MaxHeader", err, "larger than the file")

	one := binary.LittleEndian.AppendUint64(nil, 3)
	one = append(one, "{}"...)
	_, err = decodeNoPanic(t, one)
	wantErr(t, "header one byte past the end", err, "header length 3", "only 2 bytes follow")

	f, err := decodeNoPanic(t, build(`{}`, nil))
	if err != nil || len(f.Tensors) != 0 {
		t.Errorf("header {} and no data: %v, %v; want an empty file", f, err)
	}

	_, err = decodeNoPanic(t, build(``, nil))
	wantErr(t, "8 bytes, header length 0", err, "malformed JSON header")
}

// TestZeroByteAtSharedOffset: a zero-byte tensor at the offset where a
// nonempty one begins comes first in file order, whatever the header
// order, and does not overlap it.
func TestZeroByteAtSharedOffset(t *testing.T) {
	for _, hdr := range []string{
		`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"z":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}`,
		`{"z":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`,
	} {
		f, err := decodeNoPanic(t, build(hdr, f32le(1, 2)))
		if err != nil {
			t.Errorf("%s: %v", hdr, err)
			continue
		}
		var names []string
		for _, t := range f.Tensors {
			names = append(names, t.Name)
		}
		if !slices.Equal(names, []string{"z", "a"}) || !slices.Equal(f.Tensors[1].Data, []float32{1, 2}) {
			t.Errorf("%s: order %v, a = %v; want [z a], [1 2]", hdr, names, f.Tensors[1].Data)
		}
	}
}

// TestErrorsNameTheCoveringTensor: errors after the last tensor name the
// tensor that covers the data up to there, never a zero-byte one; a file
// whose only tensor is zero-byte still has a tensor; a span is end-begin.
func TestErrorsNameTheCoveringTensor(t *testing.T) {
	w := func(name, shape, off string) string {
		return `"` + name + `":{"dtype":"F32","shape":` + shape + `,"data_offsets":` + off + `}`
	}
	_, err := decodeNoPanic(t, build(`{`+w("a", "[1]", "[0,4]")+`,`+w("z", "[0]", "[4,4]")+`}`, make([]byte, 6)))
	wantErr(t, "trailing bytes after a zero-byte tensor", err, `2 trailing bytes after tensor "a", which ends at 4`)
	_, err = decodeNoPanic(t, build(`{`+w("z", "[0]", "[0,0]")+`}`, make([]byte, 4)))
	wantErr(t, "trailing bytes after a lone zero-byte tensor", err, `4 trailing bytes after tensor "z", which ends at 0`)
	_, err = decodeNoPanic(t, build(`{`+w("a", "[3]", "[4,12]")+`}`, make([]byte, 12)))
	wantErr(t, "span", err, "data_offsets [4, 12] span 8 bytes", "= 12 bytes")
}

// TestDataAfterHeaderObject: a JSON value after the header object is
// refused as such (only space padding may follow), and a character that is
// no JSON at all as a syntax error after the object.
func TestDataAfterHeaderObject(t *testing.T) {
	_, err := decodeNoPanic(t, build(`{} 1`, nil))
	wantErr(t, "value after the object", err, "data after the JSON object, want only space padding")
	_, err = decodeNoPanic(t, build(`{} x`, nil))
	wantErr(t, "junk after the object", err, "after the JSON object: invalid character")
}
