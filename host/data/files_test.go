package data

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data/npy"
	"github.com/uaxai/uaxai/internal/testdep"
)

// fakeGen is a Generator of c channels and three classes: channel k of a
// record of class j is the one-phase record of class (j + 4k) mod 16,
// drawn from the record's stream in turn.
type fakeGen struct{ c int }

func (g fakeGen) Name() string    { return fmt.Sprintf("fake%d", g.c) }
func (fakeGen) Classes() []string { return []string{"one", "two", "three"} }
func (g fakeGen) Channels() int   { return g.c }
func (g fakeGen) Generate(cfg Config, class int, r *rand.Rand) Record {
	out := Record{Label: class, Params: map[string]float64{}}
	for k := range g.c {
		p := Generate(cfg, (class+4*k)%NumClasses, r)
		out.X = append(out.X, p.X...)
		out.D = append(out.D, p.D...)
		out.Event = append(out.Event, p.Event...)
		out.SNRdB = p.SNRdB
		for key, v := range p.Params {
			out.Params[fmt.Sprintf("%s_%d", key, k)] = v
		}
	}
	return out
}

// fakeSplit is a small split of fakeGen{c}: two records a class.
func fakeSplit(t testing.TB, c int) Split {
	t.Helper()
	s, err := MakeSplitOf(t.Context(), fakeGen{c}, DefaultConfig(), 3, "fake", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// asNPY is s as the NPY layout holds it: X and D rounded to float32, the
// mask a record's own or |D| > eps, computed here sample by sample.
func asNPY(s Split, eps float64) Split {
	out := s
	out.Records = make([]Record, len(s.Records))
	for i, r := range s.Records {
		r.X = round32(r.X)
		if r.Mask == nil && r.D != nil {
			r.Mask = make([]bool, len(r.D))
			for j, d := range r.D {
				r.Mask[j] = d > eps || d < -eps
			}
		}
		r.D = round32(r.D)
		out.Records[i] = r
	}
	return out
}

func round32(x []float64) []float64 {
	if x == nil {
		return nil
	}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(float32(v))
	}
	return y
}

// sameMeta checks a split's channels and classes.
func sameMeta(t *testing.T, what string, got Split, c int, classes []string) {
	t.Helper()
	if got.Channels != c || !slices.Equal(got.Classes, classes) {
		t.Errorf("%s: channels %d, classes %q; want %d, %q", what, got.Channels, got.Classes, c, classes)
	}
}

// TestNPYDirRoundTrip: WriteNPYDir then ReadDir gives the split back, as
// float32, with the amplitude masks |D| > eps of the paper, for one
// channel (PQD) and three (fakeGen); a record's own Mask is written as it
// is; the layout is found from the files.
func TestNPYDirRoundTrip(t *testing.T) {
	for _, s := range []Split{testSplit(t), fakeSplit(t, 3)} {
		dir := filepath.Join(t.TempDir(), "n")
		const eps = 0.05
		s.Records[1].Mask = make([]bool, len(s.Records[1].X))
		s.Records[1].Mask[7] = true
		if err := WriteNPYDir(dir, s, eps); err != nil {
			t.Fatal(err)
		}
		got, err := ReadDir(dir, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := asNPY(s, eps)
		sameSplit(t, "npy round trip", want, got)
		sameMeta(t, "npy round trip", got, s.C(), s.ClassList())
		if got.Name != "n" {
			t.Errorf("name %q, want the directory's", got.Name)
		}
		if n := slices.Index(got.Records[1].Mask, true); n != 7 || slices.Contains(got.Records[1].Mask[8:], true) {
			t.Errorf("record 1's own mask came back as %v", got.Records[1].Mask[:10])
		}
		// A split without D loses masks.npy and disturbance.npy of an
		// earlier write.
		for i := range s.Records {
			s.Records[i].D, s.Records[i].Mask = nil, nil
		}
		if err := WriteNPYDir(dir, s, eps); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{MasksNPY, DisturbanceNPY} {
			if exists(filepath.Join(dir, f)) {
				t.Errorf("%s left from the earlier write", f)
			}
		}
		if got, err = ReadDir(dir, ReadOptions{Format: FormatNPY}); err != nil || got.Records[0].Mask != nil || got.Records[0].D != nil {
			t.Errorf("without D: %v, mask %v", err, got.Records[0].Mask != nil)
		}
	}
}

// TestNPYDirAsNumPy: NumPy loads every file WriteNPYDir writes with the
// dtype and shape documented, and np.save of what it loaded gives the
// same bytes.
func TestNPYDirAsNumPy(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import numpy").Run() != nil {
		testdep.Skip(t, testdep.Python, "no NumPy at "+py+" (apt-get install python3-numpy)")
	}
	s := fakeSplit(t, 3)
	dir := t.TempDir()
	if err := WriteNPYDir(dir, s, DefaultMaskEps); err != nil {
		t.Fatal(err)
	}
	script := `
import io, sys, numpy as np
for f in sys.argv[1:]:
    a = np.load(f)
    b = io.BytesIO(); np.save(b, a)
    same = b.getvalue() == open(f, 'rb').read()
    print(f.split('/')[-1], a.dtype.str, ','.join(map(str, a.shape)), same, float(np.asarray(a, dtype=np.float64).sum()))
`
	files := []string{WaveformsNPY, LabelsNPY, MasksNPY, DisturbanceNPY, EventNPY}
	args := []string{"-c", script}
	for _, f := range files {
		args = append(args, filepath.Join(dir, f))
	}
	out, err := exec.Command(py, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	n, ct := len(s.Records), len(s.Records[0].X)
	shape := fmt.Sprintf("%d,3,%d", n, ct/3)
	var sumX, sumD, sumL, sumM, sumE float64
	for _, r := range s.Records {
		sumL += float64(r.Label)
		for j := range r.X {
			sumX += float64(float32(r.X[j]))
			sumD += float64(float32(r.D[j]))
			if math.Abs(r.D[j]) > DefaultMaskEps {
				sumM++
			}
			if r.Event[j] {
				sumE++
			}
		}
	}
	want := map[string]string{
		WaveformsNPY:   "<f4 " + shape + " True",
		LabelsNPY:      fmt.Sprintf("<i8 %d True", n),
		MasksNPY:       "|b1 " + shape + " True",
		DisturbanceNPY: "<f4 " + shape + " True",
		EventNPY:       "|b1 " + shape + " True",
	}
	sums := map[string]float64{WaveformsNPY: sumX, LabelsNPY: sumL, MasksNPY: sumM, DisturbanceNPY: sumD, EventNPY: sumE}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(files) {
		t.Fatalf("NumPy said %q", out)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if got := strings.Join(f[1:4], " "); got != want[f[0]] {
			t.Errorf("%s: NumPy reads %q, want %q", f[0], got, want[f[0]])
		}
		var sum float64
		fmt.Sscan(f[4], &sum)
		if math.Abs(sum-sums[f[0]]) > 1e-9*math.Max(1, math.Abs(sum)) {
			t.Errorf("%s: NumPy's sum %v, want %v", f[0], sum, sums[f[0]])
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ClassesFile))
	if err != nil || string(b) != "one\ntwo\nthree\n" {
		t.Errorf("classes.txt %q, %v", b, err)
	}
}

// fixture is the closed form of make.py's values.
func fixtureWave(i, c, t int) float64 {
	return (float64(i)-1.5)*0.5 + float64(c)*0.25 - float64(t)/8
}

// TestReadsNumPysDirs: the directories make.py wrote with NumPy (float64
// and float32 waveforms, (N, C, T) and (N, T), class names and int16
// labels, a uint8 mask broadcast over channels, safetensors with
// metadata classes) read back to make.py's closed forms.
func TestReadsNumPysDirs(t *testing.T) {
	const n, c, tt = 4, 3, 5
	mask := func(i, t int) bool { return (i+t)%3 == 0 }
	check := func(dir string, got Split, ch int, f32 bool, labels []int, classes []string) {
		t.Helper()
		sameMeta(t, dir, got, ch, classes)
		if len(got.Records) != n {
			t.Fatalf("%s: %d records", dir, len(got.Records))
		}
		for i, r := range got.Records {
			if r.Label != labels[i] {
				t.Errorf("%s: record %d: label %d, want %d", dir, i, r.Label, labels[i])
			}
			if len(r.X) != ch*tt || !math.IsNaN(r.SNRdB) {
				t.Fatalf("%s: record %d: %d values, SNR %v", dir, i, len(r.X), r.SNRdB)
			}
			for k, x := range r.X {
				want := fixtureWave(i, k/tt, k%tt)
				if f32 {
					want = float64(float32(want))
				}
				if x != want {
					t.Errorf("%s: record %d value %d is %v, want %v", dir, i, k, x, want)
				}
			}
		}
	}
	got, err := ReadDir(filepath.Join("testdata", "npy3"), ReadOptions{Channels: 3})
	if err != nil {
		t.Fatal(err)
	}
	// sag, swell, normal, sag in classes.txt's order normal, sag, swell, dip
	check("npy3", got, 3, false, []int{1, 2, 0, 1}, []string{"normal", "sag", "swell", "dip"})
	for i, r := range got.Records {
		for k := range c * tt {
			ch, s := k/tt, k%tt
			if r.Mask[k] != mask(i, s) || r.Event[k] != ((i+ch+s)%2 == 1) || r.D[k] != float64(float32(fixtureWave(i, ch, s)/4)) {
				t.Fatalf("npy3: record %d value %d: mask %v, event %v, d %v", i, k, r.Mask[k], r.Event[k], r.D[k])
			}
		}
	}
	if got, err = ReadDir(filepath.Join("testdata", "npy1"), ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	check("npy1", got, 1, true, []int{2, 0, 5, 2}, []string{"class0", "class1", "class2", "class3", "class4", "class5"})
	if got, err = ReadDir(filepath.Join("testdata", "names"), ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	check("names", got, 3, true, []int{1, 2, 0, 1}, []string{"normal", "sag", "swell"})
	if got, err = ReadDir(filepath.Join("testdata", "st"), ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	check("st", got, 3, false, []int{1, 0, 2, 1}, []string{"normal", "sag", "swell"})
	for i, r := range got.Records {
		for k := range c * tt {
			if r.Mask[k] != mask(i, k%tt) {
				t.Fatalf("st: record %d mask %d is %v", i, k, r.Mask[k])
			}
		}
	}
}

// stTensor is one tensor of writeST.
type stTensor struct {
	name, dtype string
	shape       []int
	data        []byte
}

// writeST writes a safetensors file by hand, independently of the
// package safetensors: the header length, the JSON header, the data.
func writeST(t *testing.T, path string, meta map[string]string, ts []stTensor) {
	t.Helper()
	h := map[string]any{}
	if meta != nil {
		h["__metadata__"] = meta
	}
	var data []byte
	for _, x := range ts {
		h[x.name] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int{len(data), len(data) + len(x.data)}}
		data = append(data, x.data...)
	}
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hb)))
	if err := os.WriteFile(path, append(append(b, hb...), data...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stOf is s as safetensors tensors: F32 waveforms and disturbance, I64
// labels, BOOL masks (|D| > eps), U8 event.
func stOf(s Split, eps float64) []stTensor {
	n, ct := len(s.Records), len(s.Records[0].X)
	shape := []int{n, s.C(), ct / s.C()}
	var x, d, l, m, e []byte
	for _, r := range s.Records {
		for j := range r.X {
			x = binary.LittleEndian.AppendUint32(x, math.Float32bits(float32(r.X[j])))
			d = binary.LittleEndian.AppendUint32(d, math.Float32bits(float32(r.D[j])))
			m = append(m, b2u(math.Abs(r.D[j]) > eps))
			e = append(e, b2u(r.Event[j]))
		}
		l = binary.LittleEndian.AppendUint64(l, uint64(r.Label))
	}
	return []stTensor{
		{"waveforms", "F32", shape, x}, {"labels", "I64", []int{n}, l},
		{"masks", "BOOL", shape, m}, {"disturbance", "F32", shape, d}, {"event", "U8", shape, e},
	}
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// TestSafetensorsDirRoundTrip: a safetensors file of a split's tensors
// (any file name) reads back as the split in float32, with its classes
// from the metadata and its params from params.jsonl.
func TestSafetensorsDirRoundTrip(t *testing.T) {
	s := fakeSplit(t, 2)
	dir := t.TempDir()
	writeST(t, filepath.Join(dir, "mine.safetensors"), map[string]string{"classes": "one,two,three"}, stOf(s, DefaultMaskEps))
	// params.jsonl as WriteCSV writes it
	tmp := t.TempDir()
	if err := WriteCSV(tmp, s); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(tmp, ParamsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ParamsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDir(dir, ReadOptions{Channels: 2})
	if err != nil {
		t.Fatal(err)
	}
	sameSplit(t, "safetensors", asNPY(s, DefaultMaskEps), got)
	sameMeta(t, "safetensors", got, 2, s.Classes)
}

// TestCSVChannels: a split of C channels written by WriteCSV reads back
// with ReadOptions.Channels C (classes from classes.txt); the one-phase
// files are those of before (no classes.txt) and ReadDir reads them as
// ReadCSV does; a line whose values are no multiple of C is an error
// naming the file and line.
func TestCSVChannels(t *testing.T) {
	s := fakeSplit(t, 3)
	dir := filepath.Join(t.TempDir(), "c3")
	if err := WriteCSV(dir, s); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDir(dir, ReadOptions{Channels: 3})
	if err != nil {
		t.Fatal(err)
	}
	sameSplit(t, "csv, 3 channels", s, got)
	sameMeta(t, "csv, 3 channels", got, 3, s.Classes)

	_, err = ReadDir(dir, ReadOptions{Channels: 7})
	wantErr(t, "7 channels", err, filepath.Join(dir, WaveformsFile), "line 1", "1920 values, not a multiple of the 7 channels")

	one := filepath.Join(t.TempDir(), "c1")
	p := testSplit(t)
	if err := WriteCSV(one, p); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(one)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{DisturbanceFile, EventFile, LabelsFile, ParamsFile, WaveformsFile}; !slices.Equal(names, want) {
		t.Errorf("one-phase files %q, want %q", names, want)
	}
	old, err := ReadCSV(one)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []int{0, 1} {
		got, err := ReadDir(one, ReadOptions{Channels: c})
		if err != nil {
			t.Fatal(err)
		}
		sameSplit(t, "csv, one channel", old, got)
		sameMeta(t, "csv, one channel", got, 1, ClassNames[:])
	}
	// The classes.txt of the three-channel write goes when a one-phase
	// split is written over it.
	if err := WriteCSV(dir, p); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(dir, ClassesFile)) {
		t.Error("classes.txt left from the three-channel write")
	}
}

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

// npyBytes writes a .npy file of descr and shape holding the raw data.
func npyBytes(t *testing.T, path, descr string, shape []int, data []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := npy.WriteHeader(&b, descr, shape); err != nil {
		t.Fatal(err)
	}
	b.Write(data)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func f64s(n int, at map[int]float64) []byte {
	var b []byte
	for k := range n {
		v, ok := at[k]
		if !ok {
			v = float64(k) / 16
		}
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

func i64s(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func u32s(s ...string) []byte { // '<U5' strings
	var b []byte
	for _, x := range s {
		r := []rune(x)
		for k := range 5 {
			var c rune
			if k < len(r) {
				c = r[k]
			}
			b = binary.LittleEndian.AppendUint32(b, uint32(c))
		}
	}
	return b
}

// TestReadDirErrors: every malformed dataset directory is an error naming
// the file (and tensor), the record where one is at fault, and the shape,
// dtype or value that would have been accepted.
func TestReadDirErrors(t *testing.T) {
	const n, c, tt = 4, 3, 5
	shape := []int{n, c, tt}
	good := func(t *testing.T, dir string) {
		npyBytes(t, filepath.Join(dir, WaveformsNPY), "<f8", shape, f64s(n*c*tt, nil))
		npyBytes(t, filepath.Join(dir, LabelsNPY), "<i8", []int{n}, i64s(0, 1, 2, 1))
	}
	npyDir := func(mod func(t *testing.T, dir string)) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) { good(t, dir); mod(t, dir) }
	}
	file := func(name, descr string, shape []int, data []byte) func(t *testing.T, dir string) {
		return npyDir(func(t *testing.T, dir string) { npyBytes(t, filepath.Join(dir, name), descr, shape, data) })
	}
	text := func(name, s string) func(t *testing.T, dir string) {
		return npyDir(func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
	st := func(meta map[string]string, ts ...stTensor) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) { writeST(t, filepath.Join(dir, SafetensorsFile), meta, ts) }
	}
	stW := stTensor{"waveforms", "F64", shape, f64s(n*c*tt, nil)}
	stL := stTensor{"labels", "I64", []int{n}, i64s(0, 1, 2, 1)}
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, dir string)
		opt   ReadOptions
		where string // the file, joined to dir
		want  []string
	}{
		{"labels short", file(LabelsNPY, "<i8", []int{n - 1}, i64s(0, 1, 2)), ReadOptions{}, LabelsNPY,
			[]string{"shape (3,), want (4,) (one label a waveform of", "waveforms.npy (4, 3, 5))"}},
		{"waveforms ints", file(WaveformsNPY, "<i8", []int{n, tt}, make([]byte, 8*n*tt)), ReadOptions{}, WaveformsNPY,
			[]string{"dtype <i8, want float32 or float64"}},
		{"waveforms 1-D", file(WaveformsNPY, "<f8", []int{n}, f64s(n, nil)), ReadOptions{}, WaveformsNPY,
			[]string{"shape (4,), want (N, C, T) or (N, T)"}},
		{"waveforms empty", file(WaveformsNPY, "<f8", []int{n, 0}, nil), ReadOptions{}, WaveformsNPY,
			[]string{"shape (4, 0), want N, C and T of at least 1"}},
		{"NaN", file(WaveformsNPY, "<f8", shape, f64s(n*c*tt, map[int]float64{2*c*tt + 1*tt + 3: math.NaN()})), ReadOptions{}, WaveformsNPY,
			[]string{"record 2, channel 1, sample 3 is NaN, want a finite number within float32 range"}},
		{"beyond float32", file(WaveformsNPY, "<f8", shape, f64s(n*c*tt, map[int]float64{tt: 1e39})), ReadOptions{}, WaveformsNPY,
			[]string{"record 0, channel 1, sample 0 is 1e+39", "float32 range"}},
		{"channels", npyDir(func(*testing.T, string) {}), ReadOptions{Channels: 2}, WaveformsNPY,
			[]string{"shape (4, 3, 5) holds 3 channels, want 2"}},
		{"labels float", file(LabelsNPY, "<f8", []int{n}, f64s(n, nil)), ReadOptions{}, LabelsNPY,
			[]string{"dtype <f8, want integers (class indices) or unicode strings (class names)"}},
		{"labels negative", file(LabelsNPY, "<i8", []int{n}, i64s(0, 1, -1, 0)), ReadOptions{}, LabelsNPY,
			[]string{"record 2: label -1, want a class index 0 or more"}},
		{"labels past classes.txt", text(ClassesFile, "a\nb\n"), ReadOptions{}, LabelsNPY,
			[]string{"record 2: label 2, want 0..1 (the 2 classes of classes.txt)"}},
		{"labels huge", file(LabelsNPY, "<i8", []int{n}, i64s(0, 1<<40, 0, 0)), ReadOptions{}, LabelsNPY,
			[]string{"record 1: label 1099511627776, want 0..65535"}},
		{"name not in classes.txt", npyDir(func(t *testing.T, dir string) {
			npyBytes(t, filepath.Join(dir, LabelsNPY), "<U5", []int{n}, u32s("sag", "swell", "dip", "sag"))
			if err := os.WriteFile(filepath.Join(dir, ClassesFile), []byte("sag\nswell\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}), ReadOptions{}, LabelsNPY, []string{`record 2: class "dip" is not in the 2 classes of classes.txt`}},
		{"empty name in labels", file(LabelsNPY, "<U5", []int{n}, u32s("sag", "", "sag", "swell")), ReadOptions{}, LabelsNPY,
			[]string{"record 1: empty class name, want a name of at least one character"}},
		{"newline in labels", file(LabelsNPY, "<U5", []int{n}, u32s("sag", "sag", "a\nb", "swell")), ReadOptions{}, LabelsNPY,
			[]string{`record 2: class name "a\nb" holds a control character`}},
		{"escape in classes.txt", text(ClassesFile, "a\nb\x1b[2J\n"), ReadOptions{}, ClassesFile,
			[]string{`line 2: class name "b\x1b[2J" holds a control character`}},
		{"st tab in classes", st(map[string]string{"classes": "a,b\tc,d"}, stW, stL), ReadOptions{}, SafetensorsFile,
			[]string{`metadata classes, name 2: class name "b\tc" holds a control character`}},
		{"classes twice", text(ClassesFile, "a\nb\na\n"), ReadOptions{}, ClassesFile,
			[]string{`line 3: class "a" again (first on line 1)`}},
		{"classes empty line", text(ClassesFile, "a\n\nb\n"), ReadOptions{}, ClassesFile,
			[]string{"line 2: empty, want one class name a line"}},
		{"mask shape", file(MasksNPY, "|b1", []int{n, c}, make([]byte, n*c)), ReadOptions{}, MasksNPY,
			[]string{"shape (4, 3), want (4, 3, 5) or (4, 5) (as", "waveforms.npy (4, 3, 5))"}},
		{"mask value", file(MasksNPY, "|u1", []int{n, tt}, append(make([]byte, n*tt-1), 2)), ReadOptions{}, MasksNPY,
			[]string{"record 3, channel 0, sample 4 is 2, want 0 or 1"}},
		{"mask float", file(MasksNPY, "<f8", shape, f64s(n*c*tt, nil)), ReadOptions{}, MasksNPY,
			[]string{"dtype <f8, want bool or uint8 (0 or 1)"}},
		{"event int64", file(EventNPY, "<i8", []int{n, tt}, make([]byte, 8*n*tt)), ReadOptions{}, EventNPY,
			[]string{"dtype <i8, want bool or uint8"}},
		{"disturbance Inf", file(DisturbanceNPY, "<f8", []int{n, tt}, f64s(n*tt, map[int]float64{tt + 2: math.Inf(-1)})), ReadOptions{}, DisturbanceNPY,
			[]string{"record 1, channel 0, sample 2 is -Inf, want a finite number"}},
		{"disturbance bool", file(DisturbanceNPY, "|b1", shape, make([]byte, n*c*tt)), ReadOptions{}, DisturbanceNPY,
			[]string{"dtype |b1, want float32 or float64"}},
		{"truncated npy", npyDir(func(t *testing.T, dir string) {
			p := filepath.Join(dir, WaveformsNPY)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-3], 0o644)
		}), ReadOptions{}, WaveformsNPY, []string{"shape [4 3 5] of <f8 needs 480 bytes of data, the file has 477"}},
		{"no labels", npyDir(func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, LabelsNPY)) }), ReadOptions{}, LabelsNPY,
			[]string{"no such file"}},
		{"params class", text(ParamsFile, `{"index":0,"label":0,"class":"one","seed":1,"params":{}}`+"\n"), ReadOptions{}, ParamsFile,
			[]string{`line 1 (record 0): class "one", want "class0" (label 0)`}},
		{"two layouts", text(WaveformsFile, "1,2\n"), ReadOptions{}, "",
			[]string{"holds the waveforms of 2 layouts (waveforms.csv, waveforms.npy): want one, or the format named"}},
		{"nothing", func(*testing.T, string) {}, ReadOptions{}, "", []string{"holds no dataset: want waveforms.csv, waveforms.npy or a *.safetensors file"}},
		{"format", npyDir(func(*testing.T, string) {}), ReadOptions{Format: "hdf5"}, "", []string{`format "hdf5" (accepted: csv, npy, safetensors`}},
		{"negative channels", npyDir(func(*testing.T, string) {}), ReadOptions{Channels: -1}, "", []string{"-1 channels, want 1 or more"}},
		{"st no labels", st(nil, stW), ReadOptions{}, SafetensorsFile, []string{`no tensor "labels"`}},
		{"st unknown", st(nil, stW, stL, stTensor{"mask", "BOOL", shape, make([]byte, n*c*tt)}), ReadOptions{}, SafetensorsFile,
			[]string{`tensor "mask": unknown (accepted: waveforms, labels, masks, disturbance, event)`}},
		{"st F16", st(nil, stTensor{"waveforms", "F16", shape, make([]byte, 2*n*c*tt)}, stL), ReadOptions{}, SafetensorsFile,
			[]string{`tensor "waveforms": dtype F16, want float32 or float64`}},
		{"st labels shape", st(nil, stW, stTensor{"labels", "I64", []int{n, 1}, i64s(0, 1, 2, 1)}), ReadOptions{}, SafetensorsFile,
			[]string{`tensor "labels": shape (4, 1), want (4,) (one label a waveform of`, `tensor "waveforms" (4, 3, 5))`}},
		{"st U64", st(nil, stW, stTensor{"labels", "U64", []int{n}, i64s(0, -1, 0, 0)}), ReadOptions{}, SafetensorsFile,
			[]string{`tensor "labels": a value beyond int64`}},
		{"st classes differ", func(t *testing.T, dir string) {
			st(map[string]string{"classes": "a,b,c"}, stW, stL)(t, dir)
			os.WriteFile(filepath.Join(dir, ClassesFile), []byte("a\nb\nd\n"), 0o644)
		}, ReadOptions{}, SafetensorsFile, []string{`metadata classes "a,b,c" differ from the 3 classes of`}},
		{"st classes twice", st(map[string]string{"classes": "a,b,a"}, stW, stL), ReadOptions{}, SafetensorsFile,
			[]string{"want at most 65536 comma-separated names, nonempty, each once"}},
		{"st mask values", st(nil, stW, stL, stTensor{"masks", "U8", []int{n, tt}, append(make([]byte, n*tt-1), 9)}), ReadOptions{}, SafetensorsFile,
			[]string{`tensor "masks": record 3, channel 0, sample 4 is 9, want 0 or 1`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.make(t, dir)
			_, err := ReadDir(dir, tc.opt)
			want := tc.want
			if tc.where != "" {
				want = append(want, filepath.Join(dir, tc.where))
			} else {
				want = append(want, dir)
			}
			wantErr(t, tc.name, err, want...)
		})
	}
}

// BenchmarkReadDir reads 160 one-phase records of 640 samples in each
// layout (bytes/s: of the files read).
func BenchmarkReadDir(b *testing.B) {
	s, err := MakeSplit(b.Context(), DefaultConfig(), 1, "bench", 10, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, format := range []string{FormatCSV, FormatNPY} {
		dir := b.TempDir()
		write := WriteCSV
		if format == FormatNPY {
			write = func(dir string, s Split) error { return WriteNPYDir(dir, s, DefaultMaskEps) }
		}
		if err := write(dir, s); err != nil {
			b.Fatal(err)
		}
		ents, _ := os.ReadDir(dir)
		var size int64
		for _, e := range ents {
			fi, _ := e.Info()
			size += fi.Size()
		}
		b.Run(format, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				if _, err := ReadDir(dir, ReadOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
