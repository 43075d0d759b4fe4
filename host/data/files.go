package data

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/internal/termsafe"
)

// Layouts of a dataset directory (ReadOptions.Format, GenerateOptions.Format).
const (
	// FormatCSV is the layout of WriteCSV: waveforms.csv, labels.csv, ...
	FormatCSV = "csv"
	// FormatNPY is the layout of WriteNPYDir: waveforms.npy, labels.npy, ...
	FormatNPY = "npy"
	// FormatSafetensors is one safetensors file of named tensors.
	FormatSafetensors = "safetensors"
)

// File names of the NPY and safetensors layouts (and classes.txt, which
// every layout may hold).
const (
	ClassesFile        = "classes.txt"
	WaveformsNPY       = "waveforms.npy"
	LabelsNPY          = "labels.npy"
	MasksNPY           = "masks.npy"
	DisturbanceNPY     = "disturbance.npy"
	EventNPY           = "event.npy"
	SafetensorsFile    = "data.safetensors"
	safetensorsPattern = "*.safetensors"
)

// DefaultMaskEps is the eps of the amplitude mask |d| > eps that
// WriteNPYDir writes into masks.npy when GenerateDir writes a dataset: the
// paper's 0.001, the recipes' default.
const DefaultMaskEps = 0.001

// maxClasses bounds the classes of a file: class names of classes.txt, or
// the largest integer label + 1 without one.
const maxClasses = 1 << 16

// ReadOptions are the settings of ReadDir.
type ReadOptions struct {
	// Format is the layout to read: FormatCSV, FormatNPY,
	// FormatSafetensors, or "" for the one whose waveforms the directory
	// holds (waveforms.csv, waveforms.npy, or a *.safetensors file; more
	// than one is an error).
	Format string
	// Channels is C. CSV: every line of waveforms.csv (disturbance.csv,
	// event.csv) holds C x T values, channel 0's T samples first; 0 or 1
	// reads one channel, as ReadCSV does. NPY and safetensors: the shape
	// says C; a Channels other than 0 must equal it.
	Channels int
}

// ReadDir reads the dataset directory dir in any of three layouts and
// returns its split, named after the directory's base name, with Channels
// (C >= 1) and Classes (never nil) set. Records hold C x T values,
// channel-major (X[c*T+t]).
//
// CSV: the files of WriteCSV (ReadCSV's rules), C from opt.Channels, the
// classes from classes.txt when present, else the 16 one-phase classes
// (ClassNames); labels.csv holds integers.
//
// NPY (NumPy's .npy, C order, any version):
//
//	waveforms.npy    float32 or float64, (N, C, T) or (N, T) (C = 1)
//	labels.npy       (N,) integers of any width, or unicode class names
//	classes.txt      optional: one class name a line
//	masks.npy        optional: bool or uint8 0/1, (N, C, T) or (N, T) (the
//	                 same mask for every channel); Record.Mask
//	disturbance.npy  optional: float32 or float64, (N, C, T) or (N, T); Record.D
//	event.npy        optional: bool or uint8 0/1, (N, C, T) or (N, T); Record.Event
//	params.jsonl     optional: as in the CSV layout
//
// Safetensors: data.safetensors (or else the first *.safetensors by name)
// with the tensors "waveforms" (F32 or F64, [N, C, T] or [N, T]), "labels"
// (integers, [N]) and optionally "masks" (BOOL or U8), "disturbance" (F32
// or F64) and "event" (BOOL or U8) shaped as in the NPY layout; no other
// tensor. Beside it classes.txt and params.jsonl as in the NPY layout.
//
// The classes: with class names in labels.npy, the order of classes.txt
// if present (every name must be in it), else the sorted distinct names.
// With integer labels, classes.txt if present (labels index it), else the
// safetensors metadata "classes" (comma-separated names), else
// class0..class{K-1}, K the largest label + 1 (at most 65,536). A
// directory with both classes.txt and the metadata needs them equal.
//
// Waveform values must be finite as float32 (the type the network computes
// in), disturbance values finite. Every error names the file (and the
// tensor), the record where one is at fault, and the shape, dtype or
// value that would have been accepted. Arrays are bounded by
// npy.DefaultMaxElements elements.
func ReadDir(dir string, opt ReadOptions) (Split, error) {
	if opt.Channels < 0 {
		return Split{}, fmt.Errorf("data: %s: %d channels, want 1 or more (0: one, or as the file says)", dir, opt.Channels)
	}
	format := opt.Format
	if format == "" {
		var err error
		if format, err = findFormat(dir); err != nil {
			return Split{}, err
		}
	}
	var s Split
	var err error
	switch format {
	case FormatCSV:
		s, err = readCSVDir(dir, max(opt.Channels, 1))
	case FormatNPY:
		s, err = readNPYDir(dir, opt.Channels)
	case FormatSafetensors:
		s, err = readSafetensorsDir(dir, opt.Channels)
	default:
		return Split{}, fmt.Errorf("data: %s: format %q (accepted: %s, %s, %s, or empty to find it from the files)", dir, format, FormatCSV, FormatNPY, FormatSafetensors)
	}
	if err != nil {
		return Split{}, err
	}
	s.Name = filepath.Base(filepath.Clean(dir))
	return s, nil
}

// findFormat returns the layout whose waveforms dir holds.
func findFormat(dir string) (string, error) {
	var found []string
	var formats []string
	if exists(filepath.Join(dir, WaveformsFile)) {
		found, formats = append(found, WaveformsFile), append(formats, FormatCSV)
	}
	if exists(filepath.Join(dir, WaveformsNPY)) {
		found, formats = append(found, WaveformsNPY), append(formats, FormatNPY)
	}
	if st, err := safetensorsFile(dir); err == nil {
		found, formats = append(found, filepath.Base(st)), append(formats, FormatSafetensors)
	}
	switch len(found) {
	case 1:
		return formats[0], nil
	case 0:
		if _, err := os.Stat(dir); err != nil {
			return "", fmt.Errorf("data: %w", err)
		}
		return "", fmt.Errorf("data: %s holds no dataset: want %s, %s or a *.safetensors file", dir, WaveformsFile, WaveformsNPY)
	}
	return "", fmt.Errorf("data: %s holds the waveforms of %d layouts (%s): want one, or the format named", dir, len(found), strings.Join(found, ", "))
}

// safetensorsFile returns dir's data.safetensors, or else its first
// *.safetensors file by name.
func safetensorsFile(dir string) (string, error) {
	p := filepath.Join(dir, SafetensorsFile)
	if exists(p) {
		return p, nil
	}
	m, err := filepath.Glob(filepath.Join(dir, safetensorsPattern))
	if err != nil || len(m) == 0 {
		return "", fmt.Errorf("data: %s holds no %s nor any other *.safetensors file", dir, SafetensorsFile)
	}
	slices.Sort(m)
	return m[0], nil
}

// readCSVDir reads the CSV layout with channels channels.
func readCSVDir(dir string, channels int) (Split, error) {
	classes := ClassNames[:]
	cpath := filepath.Join(dir, ClassesFile)
	if exists(cpath) {
		var err error
		if classes, err = ReadClasses(cpath); err != nil {
			return Split{}, err
		}
	}
	recs, err := readCSV(dir, channels, classes)
	if err != nil {
		return Split{}, err
	}
	return Split{Records: recs, Channels: channels, Classes: slices.Clone(classes)}, nil
}

// MaxClassesBytes bounds a classes.txt: 256 bytes for each of the
// most classes.
const MaxClassesBytes = maxClasses * 256

// ReadClasses reads a classes.txt: one class name a line (spaces around
// it dropped; a last line without a newline counts), no empty line, no
// name twice, at most 65,536 names.
func ReadClasses(path string) ([]string, error) {
	b, err := atomicfile.ReadRegular(path, atomicfile.Limit{Bytes: MaxClassesBytes, What: "a classes.txt (a short list of class names)"})
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	text := strings.TrimSuffix(string(b), "\n")
	if text == "" {
		return nil, fmt.Errorf("data: %s: no classes, want one name a line", path)
	}
	lines := strings.Split(text, "\n")
	if len(lines) > maxClasses {
		return nil, fmt.Errorf("data: %s: %d lines, want at most %d classes", path, len(lines), maxClasses)
	}
	seen := make(map[string]int, len(lines))
	for i, l := range lines {
		name := strings.TrimSpace(l)
		if name == "" {
			return nil, fmt.Errorf("data: %s: line %d: empty, want one class name a line", path, i+1)
		}
		if err := checkClassName(fmt.Sprintf("%s: line %d", path, i+1), name); err != nil {
			return nil, err
		}
		if first, ok := seen[name]; ok {
			return nil, fmt.Errorf("data: %s: line %d: class %q again (first on line %d), want each class once", path, i+1, name, first)
		}
		seen[name] = i + 1
		lines[i] = name
	}
	return lines, nil
}

// checkClassName refuses a class name that is empty or holds a character
// a table or a terminal would act on (a line break, tab, another control
// character, a bidirectional override: termsafe.Clean): a class name
// reaches tables.md, the terminal's tables and report.html, where a
// newline would break a row. where names the file and the record or line.
func checkClassName(where, name string) error {
	if name == "" {
		return fmt.Errorf("data: %s: empty class name, want a name of at least one character", where)
	}
	if !termsafe.Clean(name) || strings.ContainsRune(name, '\t') {
		return fmt.Errorf("data: %s: class name %s holds a control character, want printable text (letters, digits, spaces, punctuation)", where, strconv.QuoteToASCII(name))
	}
	return nil
}

// writeClasses writes class names one a line.
func writeClasses(w *bufio.Writer, classes []string) error {
	for _, c := range classes {
		if c == "" || strings.ContainsAny(c, "\r\n") || strings.TrimSpace(c) != c {
			return fmt.Errorf("data: class name %q: want a name without line breaks and surrounding spaces", c)
		}
		if _, err := w.WriteString(c + "\n"); err != nil {
			return err
		}
	}
	return nil
}

// array is one array of a dataset file, whatever its format: Float (float
// dtypes), Int (integer and bool dtypes) or Str (class names) holds its
// elements in C order.
type array struct {
	where string // the file (and tensor) for errors
	dtype string
	shape []int
	kind  byte // 'f' float, 'i' integer, 'b' bool, 'U' string
	u8    bool // an unsigned 8-bit integer dtype, read as bool where one is due
	float []float64
	ints  []int64
	strs  []string
}

// pyShape formats a shape as NumPy prints it: (3,), (2, 3), ().
func pyShape(shape []int) string {
	d := make([]string, len(shape))
	for i, v := range shape {
		d[i] = strconv.Itoa(v)
	}
	if len(d) == 1 {
		return "(" + d[0] + ",)"
	}
	return "(" + strings.Join(d, ", ") + ")"
}

// arrays are the arrays of one dataset directory; nil entries are absent.
type arrays struct {
	waveforms, labels, masks, disturbance, event *array
	// classes are the class names of classes.txt or the file's metadata,
	// nil when there are none.
	classes []string
}

// buildSplit checks the arrays against each other and builds the split:
// want is the channels asked for (0: any).
func buildSplit(a arrays, want int) (Split, error) {
	w := a.waveforms
	if w.kind != 'f' {
		return Split{}, fmt.Errorf("data: %s: dtype %s, want float32 or float64", w.where, w.dtype)
	}
	var n, c, t int
	switch len(w.shape) {
	case 2:
		n, c, t = w.shape[0], 1, w.shape[1]
	case 3:
		n, c, t = w.shape[0], w.shape[1], w.shape[2]
	default:
		return Split{}, fmt.Errorf("data: %s: shape %s, want (N, C, T) or (N, T): N records of C channels of T samples", w.where, pyShape(w.shape))
	}
	if n < 1 || c < 1 || t < 1 {
		return Split{}, fmt.Errorf("data: %s: shape %s, want N, C and T of at least 1", w.where, pyShape(w.shape))
	}
	if want > 0 && c != want {
		return Split{}, fmt.Errorf("data: %s: shape %s holds %d channels, want %d (the channels asked for)", w.where, pyShape(w.shape), c, want)
	}
	ct := c * t
	for k, v := range w.float {
		if !finite(v) || math.Abs(v) > math.MaxFloat32 {
			return Split{}, fmt.Errorf("data: %s: record %d, channel %d, sample %d is %v, want a finite number within float32 range (|x| <= %g)", w.where, k/ct, k%ct/t, k%t, v, math.MaxFloat32)
		}
	}
	recs := make([]Record, n)
	for i := range recs {
		recs[i].X = w.float[i*ct : (i+1)*ct : (i+1)*ct]
		recs[i].SNRdB = math.NaN()
	}
	classes, err := labelsOf(a, recs, w)
	if err != nil {
		return Split{}, err
	}
	// perSample checks an (N, C, T) or (N, T) array and calls set with
	// record i's C x T values (broadcast over the channels for (N, T)).
	perSample := func(p *array, set func(i int, vals []float64, ints []int64)) error {
		if p == nil {
			return nil
		}
		bcast := len(p.shape) == 2 && p.shape[0] == n && p.shape[1] == t
		if !bcast && !slices.Equal(p.shape, []int{n, c, t}) {
			return fmt.Errorf("data: %s: shape %s, want %s or %s (as %s %s)", p.where, pyShape(p.shape), pyShape([]int{n, c, t}), pyShape([]int{n, t}), w.where, pyShape(w.shape))
		}
		per := ct
		if bcast {
			per = t
		}
		for i := range n {
			if p.float != nil {
				set(i, p.float[i*per:(i+1)*per], nil)
			} else {
				set(i, nil, p.ints[i*per:(i+1)*per])
			}
		}
		return nil
	}
	bools := func(p *array, dst func(i int) *[]bool) error {
		if p == nil {
			return nil
		}
		if p.kind != 'b' && !p.u8 {
			return fmt.Errorf("data: %s: dtype %s, want bool or uint8 (0 or 1)", p.where, p.dtype)
		}
		var bad error
		err := perSample(p, func(i int, _ []float64, v []int64) {
			m := make([]bool, ct)
			for k := range m {
				x := v[k%len(v)]
				if x != 0 && x != 1 && bad == nil {
					bad = fmt.Errorf("data: %s: record %d, channel %d, sample %d is %d, want 0 or 1", p.where, i, k/t, k%t, x)
				}
				m[k] = x == 1
			}
			*dst(i) = m
		})
		if err != nil {
			return err
		}
		return bad
	}
	if err := bools(a.masks, func(i int) *[]bool { return &recs[i].Mask }); err != nil {
		return Split{}, err
	}
	if err := bools(a.event, func(i int) *[]bool { return &recs[i].Event }); err != nil {
		return Split{}, err
	}
	if d := a.disturbance; d != nil {
		if d.kind != 'f' {
			return Split{}, fmt.Errorf("data: %s: dtype %s, want float32 or float64", d.where, d.dtype)
		}
		var bad error
		err := perSample(d, func(i int, v []float64, _ []int64) {
			x := make([]float64, ct)
			for k := range x {
				x[k] = v[k%len(v)]
				if !finite(x[k]) && bad == nil {
					bad = fmt.Errorf("data: %s: record %d, channel %d, sample %d is %v, want a finite number", d.where, i, k/t, k%t, x[k])
				}
			}
			recs[i].D = x
		})
		if err != nil {
			return Split{}, err
		}
		if bad != nil {
			return Split{}, bad
		}
	}
	return Split{Records: recs, Channels: c, Classes: classes}, nil
}

// labelsOf sets the records' labels from a.labels and returns the classes.
func labelsOf(a arrays, recs []Record, w *array) ([]string, error) {
	l := a.labels
	n := len(recs)
	if len(l.shape) != 1 || l.shape[0] != n {
		return nil, fmt.Errorf("data: %s: shape %s, want %s (one label a waveform of %s %s)", l.where, pyShape(l.shape), pyShape([]int{n}), w.where, pyShape(w.shape))
	}
	switch l.kind {
	case 'U':
		classes := a.classes
		if classes == nil {
			classes = slices.Clone(l.strs)
			slices.Sort(classes)
			classes = slices.Compact(classes)
		}
		index := make(map[string]int, len(classes))
		for i, c := range classes {
			index[c] = i
		}
		for i, s := range l.strs {
			if err := checkClassName(fmt.Sprintf("%s: record %d", l.where, i), s); err != nil {
				return nil, err
			}
			k, ok := index[s]
			if !ok {
				return nil, fmt.Errorf("data: %s: record %d: class %q is not in the %d classes of %s", l.where, i, s, len(classes), ClassesFile)
			}
			recs[i].Label = k
		}
		return classes, nil
	case 'i':
		top := int64(-1)
		for i, v := range l.ints {
			if v < 0 {
				return nil, fmt.Errorf("data: %s: record %d: label %d, want a class index 0 or more", l.where, i, v)
			}
			if a.classes != nil && v >= int64(len(a.classes)) {
				return nil, fmt.Errorf("data: %s: record %d: label %d, want 0..%d (the %d classes of %s)", l.where, i, v, len(a.classes)-1, len(a.classes), ClassesFile)
			}
			if v >= maxClasses {
				return nil, fmt.Errorf("data: %s: record %d: label %d, want 0..%d (or the class names in %s)", l.where, i, v, maxClasses-1, ClassesFile)
			}
			top = max(top, v)
			recs[i].Label = int(v)
		}
		if a.classes != nil {
			return a.classes, nil
		}
		classes := make([]string, top+1)
		for k := range classes {
			classes[k] = "class" + strconv.Itoa(k)
		}
		return classes, nil
	}
	return nil, fmt.Errorf("data: %s: dtype %s, want integers (class indices) or unicode strings (class names)", l.where, l.dtype)
}
