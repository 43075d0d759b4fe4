package data

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/uaxai/uaxai/host/data/npy"
	"github.com/uaxai/uaxai/internal/atomicfile"
)

// readNPY reads the .npy file at path into an array; absent and not
// required: nil.
func readNPY(path string, required bool) (*array, error) {
	if !required && !exists(path) {
		return nil, nil
	}
	a, err := npy.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	out := &array{where: path, dtype: a.Dtype, shape: a.Shape, float: a.Float, ints: a.Int, strs: a.Str}
	// npy.Read accepts only dtypes of the kinds f, i, u, b and U.
	switch k := a.Dtype[1]; k {
	case 'u':
		out.kind, out.u8 = 'i', a.Dtype[2:] == "1"
	default:
		out.kind = k
	}
	return out, nil
}

// readNPYDir reads the NPY layout (see ReadDir).
func readNPYDir(dir string, channels int) (Split, error) {
	var a arrays
	var err error
	for _, f := range []struct {
		name     string
		dst      **array
		required bool
	}{
		{WaveformsNPY, &a.waveforms, true},
		{LabelsNPY, &a.labels, true},
		{MasksNPY, &a.masks, false},
		{DisturbanceNPY, &a.disturbance, false},
		{EventNPY, &a.event, false},
	} {
		if *f.dst, err = readNPY(filepath.Join(dir, f.name), f.required); err != nil {
			return Split{}, err
		}
	}
	cpath := filepath.Join(dir, ClassesFile)
	if exists(cpath) {
		if a.classes, err = ReadClasses(cpath); err != nil {
			return Split{}, err
		}
	}
	s, err := buildSplit(a, channels)
	if err != nil {
		return Split{}, err
	}
	if err := readParams(filepath.Join(dir, ParamsFile), a.waveforms.where, a.labels.where, s.Records, s.Classes); err != nil {
		return Split{}, err
	}
	return s, nil
}

// WriteNPYDir writes the records of s to dir (created if missing) in the
// NPY layout that ReadDir reads, as NumPy's np.save writes each array:
//
//	waveforms.npy    float32 (N, C, T): X, C = s.C(), T = len(X)/C
//	labels.npy       int64 (N,)
//	classes.txt      s.ClassList(), one name a line
//	masks.npy        bool (N, C, T): a record's Mask, else |D| > eps (the
//	                 paper's amplitude mask, Mask); only if every record
//	                 has a Mask or D
//	disturbance.npy  float32 (N, C, T): D (only if every record has D)
//	event.npy        bool (N, C, T): Event (only if every record has Event)
//	params.jsonl     as WriteCSV writes it
//
// Values are rounded to float32, the type the network computes in: a
// value beyond the float32 range is an error. The files are written as
// one set (see WriteCSV); an optional file left from an earlier write is
// removed when s does not have it. eps must be finite and >= 0;
// DefaultMaskEps is the paper's.
func WriteNPYDir(dir string, s Split, eps float64) error {
	if !(eps >= 0) || math.IsInf(eps, 1) {
		return fmt.Errorf("data: mask eps %v, want a finite number >= 0", eps)
	}
	n, hasD, hasE, err := checkSplit(s)
	if err != nil {
		return err
	}
	c := s.C()
	shape := []int{len(s.Records), c, n / c}
	hasM := true
	for i := range s.Records {
		r := &s.Records[i]
		hasM = hasM && (r.Mask != nil || r.D != nil)
		for j, v := range r.X {
			if math.Abs(v) > math.MaxFloat32 {
				return fmt.Errorf("data: split %q record %d: waveform value %d is %v, beyond float32 (want |x| <= %g)", s.Name, i, j, v, math.MaxFloat32)
			}
		}
		for j, v := range r.D {
			if math.Abs(v) > math.MaxFloat32 {
				return fmt.Errorf("data: split %q record %d: disturbance value %d is %v, beyond float32 (want |d| <= %g)", s.Name, i, j, v, math.MaxFloat32)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	floats := func(row func(*Record) []float64) func(w *bufio.Writer) error {
		return func(w *bufio.Writer) error {
			if err := npy.WriteHeader(w, "<f4", shape); err != nil {
				return err
			}
			b := make([]byte, 4*n)
			for i := range s.Records {
				for j, v := range row(&s.Records[i]) {
					binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(float32(v)))
				}
				if _, err := w.Write(b); err != nil {
					return err
				}
			}
			return nil
		}
	}
	bools := func(row func(r *Record, dst []bool) []bool) func(w *bufio.Writer) error {
		return func(w *bufio.Writer) error {
			if err := npy.WriteHeader(w, "|b1", shape); err != nil {
				return err
			}
			m := make([]bool, n)
			b := make([]byte, n)
			for i := range s.Records {
				for j, v := range row(&s.Records[i], m) {
					b[j] = 0
					if v {
						b[j] = 1
					}
				}
				if _, err := w.Write(b); err != nil {
					return err
				}
			}
			return nil
		}
	}
	set := []atomicfile.Named{
		{Name: WaveformsNPY, Write: floats(func(r *Record) []float64 { return r.X })},
		{Name: LabelsNPY, Write: func(w *bufio.Writer) error {
			labels := make([]int64, len(s.Records))
			for i := range s.Records {
				labels[i] = int64(s.Records[i].Label)
			}
			return npy.WriteInt64(w, []int{len(labels)}, labels)
		}},
		{Name: ClassesFile, Write: func(w *bufio.Writer) error { return writeClasses(w, s.ClassList()) }},
		{Name: ParamsFile, Write: func(w *bufio.Writer) error { return writeParams(w, s) }},
	}
	if hasM {
		set = append(set, atomicfile.Named{Name: MasksNPY, Write: bools(func(r *Record, dst []bool) []bool {
			if r.Mask != nil {
				return r.Mask
			}
			return Mask(dst, r.D, eps)
		})})
	}
	if hasD {
		set = append(set, atomicfile.Named{Name: DisturbanceNPY, Write: floats(func(r *Record) []float64 { return r.D })})
	}
	if hasE {
		set = append(set, atomicfile.Named{Name: EventNPY, Write: bools(func(r *Record, _ []bool) []bool { return r.Event })})
	}
	if err := atomicfile.WriteSet(dir, set); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return removeStale(dir, map[string]bool{MasksNPY: hasM, DisturbanceNPY: hasD, EventNPY: hasE})
}
