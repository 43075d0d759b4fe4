package npy

import (
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/memtest"
)

// The files of testdata/ were written by NumPy (testdata/make.py); each is
// read back to the values make.py gave it.
func TestReadsNumPysFiles(t *testing.T) {
	f32 := make([]float64, 6)
	for i := range f32 {
		f32[i] = float64(i) / 4
	}
	f64 := make([]float64, 24)
	for i := range f64 {
		f64[i] = (float64(i) - 5) * 0.125
	}
	for _, c := range []struct {
		file  string
		shape []int
		float []float64
		ints  []int64
		strs  []string
	}{
		{"f32.npy", []int{2, 3}, f32, nil, nil},
		{"f64_3d.npy", []int{2, 3, 4}, f64, nil, nil},
		{"i64.npy", []int{4}, nil, []int64{3, 0, 15, 7}, nil},
		{"u8.npy", []int{3}, nil, []int64{1, 2, 255}, nil},
		{"i32be.npy", []int{3}, nil, []int64{-2, 1, 70000}, nil},
		{"bool.npy", []int{2}, nil, []int64{1, 0}, nil},
		{"names.npy", []int{3}, nil, nil, []string{"sag", "swell", "normal"}},
		{"scalar.npy", []int{}, []float64{2.5}, nil, nil},
		{"empty.npy", []int{0, 3}, []float64{}, nil, nil},
		{"v2.npy", []int{2}, []float64{1.5, -2}, nil, nil},
	} {
		a, err := ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if !slices.Equal(a.Shape, c.shape) || a.Len() != max(len(c.float), len(c.ints), len(c.strs)) {
			t.Errorf("%s: shape %v (%d elements), want %v", c.file, a.Shape, a.Len(), c.shape)
		}
		if !slices.Equal(a.Float, c.float) || !slices.Equal(a.Int, c.ints) || !slices.Equal(a.Str, c.strs) {
			t.Errorf("%s: %v %v %q; want %v %v %q", c.file, a.Float, a.Int, a.Str, c.float, c.ints, c.strs)
		}
	}
	_, err := ReadFile(filepath.Join("testdata", "fortran.npy"))
	if err == nil || !strings.Contains(err.Error(), "Fortran order") || !strings.Contains(err.Error(), "fortran.npy") {
		t.Errorf("a Fortran-order array: %v", err)
	}
}

// TestWriteFloat32 writes what NumPy writes: the bytes of f32.npy for
// its array, and any array reads back whole.
func TestWriteFloat32(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "f32.npy"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteFloat32(&b, []int{2, 3}, []float32{0, 0.25, 0.5, 0.75, 1, 1.25}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("WriteFloat32 wrote\n%q\nNumPy wrote\n%q", b.Bytes(), want)
	}
	for _, shape := range [][]int{{5}, {2, 3, 4}, {0, 7}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i)*0.5 - 3
		}
		b.Reset()
		if err := WriteFloat32(&b, shape, x); err != nil {
			t.Fatal(err)
		}
		if (len(b.Bytes())-4*n)%64 != 0 {
			t.Errorf("shape %v: the data starts at %d, not a multiple of 64", shape, len(b.Bytes())-4*n)
		}
		a, err := Read(bytes.NewReader(b.Bytes()), "w", 1<<20)
		if err != nil || !slices.Equal(a.Shape, shape) || len(a.Float) != n {
			t.Fatalf("shape %v: read back %v, %v", shape, a, err)
		}
		for i, v := range a.Float {
			if v != float64(x[i]) {
				t.Fatalf("shape %v: element %d is %v, wrote %v", shape, i, v, x[i])
			}
		}
	}
}

// header builds a version 1.0 file of header h and data d.
func header(h string, d []byte) []byte {
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	return append(append(b, h...), d...)
}

// TestReadRefuses: each malformed file is an error naming the source and
// what would have been accepted; a header that claims more than the file
// holds is refused without allocating what it claims.
func TestReadRefuses(t *testing.T) {
	ok := "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
	two := make([]byte, 8)
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"not npy", []byte("PK\x03\x04abcdefgh"), "not a .npy file"},
		{"short", []byte("\x93NU"), "not a .npy file"},
		{"version", append([]byte("\x93NUMPY\x04\x00"), 0, 0), "format version 4.0 (accepted: 1.0, 2.0 and 3.0)"},
		{"huge v2 header", append([]byte("\x93NUMPY\x02\x00"), 0xff, 0xff, 0xff, 0x7f), "a header of 2147483647 bytes"},
		{"header cut", []byte("\x93NUMPY\x01\x00\x50\x00{'descr'"), "the header of 80 bytes"},
		{"not a dict", header("['descr', '<f4']", two), "not a dict"},
		{"no shape", header("{'descr': '<f4', 'fortran_order': False, }", two), `no key "shape"`},
		{"twice", header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", two), `key "descr" twice`},
		{"unknown key", header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", two), `unknown key "x"`},
		{"structured", header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", two), "structured dtypes are not read"},
		{"float16", header("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", two), `dtype "<f2"`},
		{"complex", header("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", two), `dtype "<c8"`},
		{"object", header("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", two), `dtype "|O"`},
		{"negative dim", header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", two), `shape dimension "-2"`},
		{"fortran word", header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", two), "accepted: True or False"},
		{"data short", header(ok, two[:7]), "needs 8 bytes of data, the file has 7"},
		{"data long", header(ok, append(two, 0)), "data past the 8 bytes"},
		{"overflow", header("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", nil), "more than 1048576 elements"},
		{"bound", header("{'descr': '<f4', 'fortran_order': False, 'shape': (1048577,), }", nil), "shape [1048577]: more than 1048576 elements (accepted: at most 1048576)"},
		{"claims more", header("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000,), }", two), "needs 8000000 bytes of data, the file has 8"},
		{"bool 2", header("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", []byte{1, 2}), "bool element 1 is 2"},
		{"u8 big", header("{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", []byte{0, 0, 0, 0, 0, 0, 0, 0x80}), "beyond int64"},
		{"bad rune", header("{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }", []byte{0, 0xd8, 0, 0}), "code point 0xd800"},
	} {
		_, err := Read(bytes.NewReader(c.b), "x.npy", 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "x.npy: ") {
			t.Errorf("%s: %v; want an error naming x.npy and %q", c.name, err, c.want)
		}
	}
	// A 100-byte file that claims 2^27 float64s (1 GiB) allocates what it
	// holds, not what it claims.
	claim := header("{'descr': '<f8', 'fortran_order': False, 'shape': (134217728,), }", two)
	var err error
	if n := memtest.Allocated(func() { _, err = Read(bytes.NewReader(claim), "x.npy", 1<<28) }); err == nil || n > 1<<20 {
		t.Errorf("a file claiming 1 GiB: %v, %d bytes allocated (want an error, and under 1 MiB)", err, n)
	}
}

// FuzzRead: no bytes make Read panic, and an array it returns has as
// many elements as its shape says, in one of its slices.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"f32.npy", "f64_3d.npy", "i64.npy", "names.npy", "v2.npy", "fortran.npy", "bool.npy", "i32be.npy"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Read(bytes.NewReader(b), "fuzz.npy", 1<<16)
		if err != nil {
			return
		}
		if n := len(a.Float) + len(a.Int) + len(a.Str); n != a.Len() {
			t.Fatalf("shape %v (%d elements) but %d values", a.Shape, a.Len(), n)
		}
	})
}

// le and be are the bytes of v, little- and big-endian, in size bytes.
func le(v uint64, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}

func be(v uint64, size int) []byte {
	b := le(v, size)
	slices.Reverse(b)
	return b
}

// TestDtypes: every integer width and both byte orders, sign extension,
// the largest uint64 that fits, big-endian floats, strings of two
// characters, a header in double quotes with a tab, and version 3.0's
// UTF-8 header; a header with a control character is refused.
func TestDtypes(t *testing.T) {
	h := func(descr string, n int) string {
		return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + strconv.Itoa(n) + ",), }"
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, c := range []struct {
		name  string
		b     []byte
		ints  []int64
		float []float64
		strs  []string
	}{
		{"i1", header(h("|i1", 1), []byte{0xff}), []int64{-1}, nil, nil},
		{"i2", header(h("<i2", 1), le(uint64(0x10000-300), 2)), []int64{-300}, nil, nil},
		{"i2 big-endian", header(h(">i2", 1), be(uint64(0x10000-300), 2)), []int64{-300}, nil, nil},
		{"u2", header(h("<u2", 1), le(65535, 2)), []int64{65535}, nil, nil},
		{"u4", header(h("<u4", 1), le(4294967295, 4)), []int64{4294967295}, nil, nil},
		{"i4 negative", header(h("<i4", 1), le(uint64(1<<32-7), 4)), []int64{-7}, nil, nil},
		{"i8 negative", header(h("<i8", 1), le(uint64(1<<64-1-4), 8)), []int64{-5}, nil, nil},
		{"u8 largest", header(h("<u8", 1), le(1<<63-1, 8)), []int64{1<<63 - 1}, nil, nil},
		{"f8 big-endian", header(h(">f8", 1), be(0x3ff8000000000000, 8)), nil, []float64{1.5}, nil},
		{"f4 big-endian", header(h(">f4", 1), be(0xc0000000, 4)), nil, []float64{-2}, nil},
		{"U2", header(h("<U2", 2), cat(le('a', 4), le('b', 4), le(0x00e9, 4), le(0, 4))), nil, nil, []string{"ab", "é"}},
		{"double quotes and a tab", header("{\"descr\":\t\"<i1\", \"fortran_order\": False, \"shape\": (1,)}", []byte{4}), []int64{4}, nil, nil},
		{"v3 UTF-8 header", append(append([]byte("\x93NUMPY\x03\x00"), le(uint64(len(h("<U1", 1))+3), 4)...), append([]byte(h("<U1", 1)+"  \n"), le(0x263a, 4)...)...), nil, nil, []string{"☺"}},
	} {
		a, err := Read(bytes.NewReader(c.b), c.name, 1<<10)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !slices.Equal(a.Int, c.ints) || !slices.Equal(a.Float, c.float) || !slices.Equal(a.Str, c.strs) {
			t.Errorf("%s: %v %v %q; want %v %v %q", c.name, a.Int, a.Float, a.Str, c.ints, c.float, c.strs)
		}
	}
	for _, c := range []struct{ name, hdr, want string }{
		{"control", "{'descr': '<i1',\x01 'fortran_order': False, 'shape': (1,), }", "not text"},
		{"no tuple", "{'descr': '<i1', 'fortran_order': False, 'shape': 1, }", "is not a tuple"},
		{"unclosed tuple", "{'descr': '<i1', 'fortran_order': False, 'shape': (1, }", "is not a tuple"},
		{"unterminated", "{'descr}", "is not a quoted string"},
		{"no colon", "{'descr' '<i1', 'fortran_order': False, 'shape': (1,), }", "no ':' after key \"descr\""},
		{"junk", "{'descr': '<i1' 'fortran_order': False, 'shape': (1,), }", "after key \"descr\""},
	} {
		_, err := Read(bytes.NewReader(header(c.hdr, []byte{1})), "x.npy", 1<<10)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
	// Version 3.0 takes a UTF-8 header; version 1.0 a control-free one.
	bad := append(append([]byte("\x93NUMPY\x03\x00"), le(4, 4)...), '{', 0xff, 0xfe, '}')
	if _, err := Read(bytes.NewReader(bad), "x.npy", 1<<10); err == nil || !strings.Contains(err.Error(), "not text") {
		t.Errorf("a v3 header that is not UTF-8: %v", err)
	}
}

// TestWriteHeaderAsNumPy: WriteHeader writes the bytes np.save wrote for
// every dtype and shape of testdata/headers.txt (make.py), among them
// headers that end exactly on a 64-byte boundary and first dimensions of
// 1 to 19 digits; and WriteInt64 and WriteBool write NumPy's whole files.
func TestWriteHeaderAsNumPy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "headers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 100 {
		t.Fatalf("headers.txt has %d lines", len(lines))
	}
	for _, line := range lines {
		f := strings.Split(line, " ")
		if len(f) != 3 {
			t.Fatalf("line %q: want descr, shape, hex", line)
		}
		shape := []int{}
		for d := range strings.SplitSeq(f[1], ",") {
			if d == "" {
				continue
			}
			n, err := strconv.Atoi(d)
			if err != nil {
				t.Fatal(err)
			}
			shape = append(shape, n)
		}
		want, err := hex.DecodeString(f[2])
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := WriteHeader(&got, f[0], shape); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s %v: wrote\n%q\nNumPy wrote\n%q", f[0], shape, got.Bytes(), want)
		}
	}
	for _, c := range []struct {
		file  string
		write func(w io.Writer) error
	}{
		{"i64.npy", func(w io.Writer) error { return WriteInt64(w, []int{4}, []int64{3, 0, 15, 7}) }},
		{"bool.npy", func(w io.Writer) error { return WriteBool(w, []int{2}, []bool{true, false}) }},
	} {
		want, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := c.write(&got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: wrote\n%q\nNumPy wrote\n%q", c.file, got.Bytes(), want)
		}
	}
}
