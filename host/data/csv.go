package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/uaxai/uaxai/host/data/npy"
	"github.com/uaxai/uaxai/internal/atomicfile"
)

// File names of a dataset directory.
const (
	WaveformsFile   = "waveforms.csv"
	LabelsFile      = "labels.csv"
	DisturbanceFile = "disturbance.csv"
	EventFile       = "event.csv"
	ParamsFile      = "params.jsonl"
)

// paramsLine is one line of params.jsonl.
type paramsLine struct {
	Index  int                `json:"index"`
	Label  int                `json:"label"`
	Class  string             `json:"class"`
	Seed   uint64             `json:"seed"`
	SNRdB  json.RawMessage    `json:"snr_db,omitempty"`
	Params map[string]float64 `json:"params"`
}

// WriteCSV writes the records of s to dir (created if missing):
//
//	waveforms.csv    x, one record a line, N comma-separated values
//	labels.csv       the label, one integer a line
//	disturbance.csv  d, one record a line (only if every record has D)
//	event.csv        event as 0/1, one record a line (only if every record has Event)
//	params.jsonl     {"index":i,"label":l,"class":"sag","seed":key,"snr_db":v,"params":{...}}
//	classes.txt      the class names, one a line (only if they are not the
//	                 16 one-phase classes, ClassNames)
//
// A record of C channels (s.C()) holds its C x T values on one line,
// channel-major: channel 0's T samples, then channel 1's, ...; the file
// does not say C (ReadDir's ReadOptions.Channels does).
//
// Values are written with strconv 'g', -1 (float64), so they read back
// exactly. In params.jsonl, "snr_db" is null for a noise-free record
// (SNRdB = +Inf) and absent when the SNR is unknown (NaN); "index" is the
// position in the split, "seed" the record's stream key.
//
// Every file is written to a temporary file in dir and renamed into place
// only once all files are complete, so a failure leaves the previous files
// (or none), never a half-written one. A disturbance.csv, event.csv or
// classes.txt left from an earlier write is removed when s has no D, no
// Event or the one-phase classes.
func WriteCSV(dir string, s Split) (err error) {
	n, hasD, hasE, err := checkSplit(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	type file atomicfile.Named // a local type: its literals need no keys
	files := []file{
		{WaveformsFile, func(w *bufio.Writer) error { return writeRows(w, s, func(r *Record) []float64 { return r.X }) }},
		{LabelsFile, func(w *bufio.Writer) error {
			var b []byte
			for i := range s.Records {
				b = strconv.AppendInt(b[:0], int64(s.Records[i].Label), 10)
				b = append(b, '\n')
				if _, err := w.Write(b); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	if hasD {
		files = append(files, file{DisturbanceFile, func(w *bufio.Writer) error { return writeRows(w, s, func(r *Record) []float64 { return r.D }) }})
	}
	if hasE {
		files = append(files, file{EventFile, func(w *bufio.Writer) error {
			b := make([]byte, 0, 2*n)
			for i := range s.Records {
				b = b[:0]
				for j, e := range s.Records[i].Event {
					if j > 0 {
						b = append(b, ',')
					}
					if e {
						b = append(b, '1')
					} else {
						b = append(b, '0')
					}
				}
				b = append(b, '\n')
				if _, err := w.Write(b); err != nil {
					return err
				}
			}
			return nil
		}})
	}
	files = append(files, file{ParamsFile, func(w *bufio.Writer) error { return writeParams(w, s) }})
	hasC := !slices.Equal(s.ClassList(), ClassNames[:])
	if hasC {
		files = append(files, file{ClassesFile, func(w *bufio.Writer) error { return writeClasses(w, s.ClassList()) }})
	}

	set := make([]atomicfile.Named, len(files))
	for i, f := range files {
		set[i] = atomicfile.Named(f)
	}
	if err := atomicfile.WriteSet(dir, set); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return removeStale(dir, map[string]bool{DisturbanceFile: hasD, EventFile: hasE, ClassesFile: hasC})
}

// removeStale removes the optional files of dir that a split just written
// does not have (written[name] false), so that an earlier split's file
// is not read with it.
func removeStale(dir string, written map[string]bool) error {
	for _, name := range slices.Sorted(maps.Keys(written)) {
		if written[name] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("data: removing stale %w", err)
		}
	}
	return nil
}

// checkSplit checks that s can be written: at least one record, all X of
// the same length N >= 1, a multiple of the channels, with finite values,
// labels indexing s.ClassList(), D and Event of length N in all records or
// in none, Mask (if any) of length N.
func checkSplit(s Split) (n int, hasD, hasE bool, err error) {
	if len(s.Records) == 0 {
		return 0, false, false, fmt.Errorf("data: split %q has no records", s.Name)
	}
	n = len(s.Records[0].X)
	if n == 0 {
		return 0, false, false, fmt.Errorf("data: split %q record 0: empty waveform", s.Name)
	}
	if c := s.C(); n%c != 0 {
		return 0, false, false, fmt.Errorf("data: split %q record 0: %d waveform values, not a multiple of its %d channels (want C*T values)", s.Name, n, c)
	}
	nc := len(s.ClassList())
	hasD = s.Records[0].D != nil
	hasE = s.Records[0].Event != nil
	for i := range s.Records {
		r := &s.Records[i]
		if len(r.X) != n {
			return 0, false, false, fmt.Errorf("data: split %q record %d: %d waveform values, want %d as in record 0", s.Name, i, len(r.X), n)
		}
		if r.Label < 0 || r.Label >= nc {
			return 0, false, false, fmt.Errorf("data: split %q record %d: label %d, want 0..%d", s.Name, i, r.Label, nc-1)
		}
		if r.Mask != nil && len(r.Mask) != n {
			return 0, false, false, fmt.Errorf("data: split %q record %d: %d mask values, want %d (or none)", s.Name, i, len(r.Mask), n)
		}
		if (r.D != nil) != hasD || (r.D != nil && len(r.D) != n) {
			return 0, false, false, fmt.Errorf("data: split %q record %d: %d disturbance values, want %d in every record or none", s.Name, i, len(r.D), n)
		}
		if (r.Event != nil) != hasE || (r.Event != nil && len(r.Event) != n) {
			return 0, false, false, fmt.Errorf("data: split %q record %d: %d event values, want %d in every record or none", s.Name, i, len(r.Event), n)
		}
		for j, v := range r.X {
			if !finite(v) {
				return 0, false, false, fmt.Errorf("data: split %q record %d: waveform value %d is %v, want a finite number", s.Name, i, j, v)
			}
		}
		for j, v := range r.D {
			if !finite(v) {
				return 0, false, false, fmt.Errorf("data: split %q record %d: disturbance value %d is %v, want a finite number", s.Name, i, j, v)
			}
		}
	}
	return n, hasD, hasE, nil
}

func writeRows(w *bufio.Writer, s Split, row func(*Record) []float64) error {
	var b []byte
	for i := range s.Records {
		b = AppendRow(b[:0], row(&s.Records[i]))
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// AppendRow appends row to b as one line of waveforms.csv: the values in
// the shortest decimals that read back to the same float64, separated by
// commas, and a newline.
func AppendRow(b []byte, row []float64) []byte {
	for j, v := range row {
		if j > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, '\n')
}

func writeParams(w *bufio.Writer, s Split) error {
	for i := range s.Records {
		r := &s.Records[i]
		pl := paramsLine{Index: i, Label: r.Label, Class: s.ClassList()[r.Label], Seed: r.Seed, Params: r.Params}
		if pl.Params == nil {
			pl.Params = map[string]float64{}
		}
		for k, v := range pl.Params {
			if !finite(v) {
				return fmt.Errorf("data: split %q record %d: params[%q] = %v, want a finite number", s.Name, i, k, v)
			}
		}
		switch {
		case math.IsInf(r.SNRdB, 1):
			pl.SNRdB = json.RawMessage("null")
		case math.IsNaN(r.SNRdB):
		case finite(r.SNRdB):
			pl.SNRdB = strconv.AppendFloat(nil, r.SNRdB, 'g', -1, 64)
		default:
			return fmt.Errorf("data: split %q record %d: SNRdB = %v, want a finite number, +Inf (no noise) or NaN (unknown)", s.Name, i, r.SNRdB)
		}
		b, err := json.Marshal(pl)
		if err != nil {
			return fmt.Errorf("data: split %q record %d: %w", s.Name, i, err)
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// lineError is an error in line Line (1-based; record Line-1) of file Path.
type lineError struct {
	Path string
	Line int
	Msg  string
}

func (e *lineError) Error() string {
	return fmt.Sprintf("%s: line %d (record %d): %s", e.Path, e.Line, e.Line-1, e.Msg)
}

func lineErr(path string, line int, format string, args ...any) error {
	return &lineError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// MaxCSVBytes bounds a CSV file of a dataset or of inputs: a value as
// %.17g writes it, with its comma (at most 24 bytes), for each of the
// npy.DefaultMaxElements elements an array may hold (6 GiB).
const MaxCSVBytes = 24 * npy.DefaultMaxElements

var csvLimit = atomicfile.Limit{Bytes: MaxCSVBytes, What: "a CSV file"}

// scanLines calls fn for every line of the file at path (without the line
// end; a "\r" before "\n" is dropped). Empty lines are errors. The file
// must be a regular file of at most MaxCSVBytes bytes (a FIFO, a device
// such as /dev/zero, a directory or a larger file is refused before it
// is read).
func scanLines(path string, fn func(line int, text []byte) error) error {
	f, err := atomicfile.OpenRegular(path, csvLimit)
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<28)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSuffix(sc.Bytes(), []byte{'\r'})
		if len(bytes.TrimSpace(text)) == 0 {
			return lineErr(path, line, "empty line, want one record a line")
		}
		if err := fn(line, text); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("data: %s: after line %d: %w", path, line, err)
	}
	return nil
}

// countFields returns the number of comma-separated fields of text.
func countFields(text []byte) int { return bytes.Count(text, []byte{','}) + 1 }

// parseRow parses the comma-separated finite numbers of text into dst,
// which must have room for exactly their number. With f32, a value must
// also stay finite as a float32 (the type the network computes in), so
// that 1e39 is an error here and not an Inf in the first layer.
func parseRow(path string, line int, text []byte, dst []float64, f32 bool) error {
	if got := countFields(text); got != len(dst) {
		return lineErr(path, line, "%d values, want %d", got, len(dst))
	}
	j := 0
	for field := range bytes.SplitSeq(text, []byte{','}) {
		s := string(bytes.TrimSpace(field))
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !finite(v) {
			return lineErr(path, line, "value %d is %q, want a finite number", j+1, s)
		}
		if f32 && !finite(float64(float32(v))) {
			return lineErr(path, line, "value %d is %q, beyond the float32 range the network computes in (want |x| <= %g)", j+1, s, math.MaxFloat32)
		}
		dst[j] = v
		j++
	}
	return nil
}

// ReadWaveforms reads a CSV file of waveforms, one a line, n
// comma-separated finite numbers each (n <= 0: as many as on the first
// line), through ScanWaveforms (no line held whole). Errors name the
// file, the line and what was expected.
func ReadWaveforms(path string, n int) ([][]float64, error) {
	var rows [][]float64
	_, _, err := ScanWaveforms(path, n, WaveformBound{}, func(i int, v float64) {
		if i == 0 {
			var row []float64
			if len(rows) > 0 {
				row = make([]float64, 0, len(rows[0]))
			}
			rows = append(rows, row)
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], v)
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// parseLabel parses one line of a labels file: an integer 0..classes-1.
func parseLabel(path string, line int, text []byte, classes int) (int, error) {
	s := string(bytes.TrimSpace(text))
	l, err := strconv.Atoi(s)
	if err != nil || l < 0 || l >= classes {
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return 0, lineErr(path, line, "label %q, want an integer 0..%d", s, classes-1)
	}
	return l, nil
}

// ReadLabels reads a file of class labels, one integer 0..classes-1 a
// line, in the format of labels.csv. Errors name the file and the line.
func ReadLabels(path string, classes int) ([]int, error) {
	var out []int
	err := scanLines(path, func(line int, text []byte) error {
		l, err := parseLabel(path, line, text, classes)
		out = append(out, l)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("data: %s: no labels, want one class a line", path)
	}
	return out, nil
}

// ReadCSV reads a dataset directory written by WriteCSV. waveforms.csv and
// labels.csv are required; disturbance.csv, event.csv and params.jsonl are
// read when present (else D and Event are nil, Params nil, Seed 0, SNRdB
// NaN). N is the number of values on the first line of waveforms.csv;
// every row of every file must have N values, every file as many lines as
// waveforms.csv. Labels index the 16 one-phase classes (ClassNames). The
// split is named after the directory's base name. Errors name the file,
// the line and what was expected. ReadDir reads more layouts, channels and
// class lists.
func ReadCSV(dir string) (Split, error) {
	recs, err := readCSV(dir, 1, ClassNames[:])
	if err != nil {
		return Split{}, err
	}
	return Split{Name: filepath.Base(filepath.Clean(dir)), Records: recs}, nil
}

// readCSV reads the records of the CSV files in dir: C channels a record
// (every line's N values a multiple of C), labels indexing classes.
func readCSV(dir string, channels int, classes []string) ([]Record, error) {
	wpath := filepath.Join(dir, WaveformsFile)
	xs, err := ReadWaveforms(wpath, 0)
	if err != nil {
		return nil, err
	}
	n, nrec := len(xs[0]), len(xs)
	if n%channels != 0 {
		return nil, lineErr(wpath, 1, "%d values, not a multiple of the %d channels (want C*T values: channel 0's T samples, then channel 1's, ...)", n, channels)
	}
	recs := make([]Record, nrec)
	for i := range recs {
		recs[i].X = xs[i]
		recs[i].SNRdB = math.NaN()
	}

	lpath := filepath.Join(dir, LabelsFile)
	count := 0
	err = scanLines(lpath, func(line int, text []byte) error {
		if line > nrec {
			return lineErr(lpath, line, "more labels than the %d records of %s", nrec, wpath)
		}
		l, err := parseLabel(lpath, line, text, len(classes))
		if err != nil {
			return err
		}
		recs[line-1].Label = l
		count = line
		return nil
	})
	if err != nil {
		return nil, err
	}
	if count != nrec {
		return nil, fmt.Errorf("data: %s: %d labels, want %d (one a record of %s)", lpath, count, nrec, wpath)
	}

	dpath := filepath.Join(dir, DisturbanceFile)
	if exists(dpath) {
		count = 0
		err = scanLines(dpath, func(line int, text []byte) error {
			if line > nrec {
				return lineErr(dpath, line, "more rows than the %d records of %s", nrec, wpath)
			}
			recs[line-1].D = make([]float64, n)
			count = line
			return parseRow(dpath, line, text, recs[line-1].D, false)
		})
		if err != nil {
			return nil, err
		}
		if count != nrec {
			return nil, fmt.Errorf("data: %s: %d rows, want %d (one a record of %s)", dpath, count, nrec, wpath)
		}
	}

	epath := filepath.Join(dir, EventFile)
	if exists(epath) {
		count = 0
		err = scanLines(epath, func(line int, text []byte) error {
			if line > nrec {
				return lineErr(epath, line, "more rows than the %d records of %s", nrec, wpath)
			}
			if got := countFields(text); got != n {
				return lineErr(epath, line, "%d values, want %d", got, n)
			}
			ev := make([]bool, n)
			j := 0
			for field := range bytes.SplitSeq(text, []byte{','}) {
				switch string(bytes.TrimSpace(field)) {
				case "0":
				case "1":
					ev[j] = true
				default:
					return lineErr(epath, line, "value %d is %q, want 0 or 1", j+1, field)
				}
				j++
			}
			recs[line-1].Event = ev
			count = line
			return nil
		})
		if err != nil {
			return nil, err
		}
		if count != nrec {
			return nil, fmt.Errorf("data: %s: %d rows, want %d (one a record of %s)", epath, count, nrec, wpath)
		}
	}
	if err := readParams(filepath.Join(dir, ParamsFile), wpath, lpath, recs, classes); err != nil {
		return nil, err
	}
	return recs, nil
}

// readParams reads params.jsonl at ppath, if it exists, into recs: one
// line a record of wpath, whose label (from lpath) names classes[label].
func readParams(ppath, wpath, lpath string, recs []Record, classes []string) error {
	if !exists(ppath) {
		return nil
	}
	nrec, count := len(recs), 0
	err := scanLines(ppath, func(line int, text []byte) error {
		if line > nrec {
			return lineErr(ppath, line, "more lines than the %d records of %s", nrec, wpath)
		}
		var pl paramsLine
		if err := json.Unmarshal(text, &pl); err != nil {
			return lineErr(ppath, line, "%v, want a JSON object {\"index\",\"label\",\"class\",\"seed\",\"snr_db\",\"params\"}", err)
		}
		r := &recs[line-1]
		if pl.Index != line-1 {
			return lineErr(ppath, line, "index %d, want %d", pl.Index, line-1)
		}
		if pl.Label != r.Label {
			return lineErr(ppath, line, "label %d, want %d as in %s", pl.Label, r.Label, lpath)
		}
		if pl.Class != classes[r.Label] {
			return lineErr(ppath, line, "class %q, want %q (label %d)", pl.Class, classes[r.Label], r.Label)
		}
		switch s := string(bytes.TrimSpace(pl.SNRdB)); s {
		case "":
		case "null":
			r.SNRdB = math.Inf(1)
		default:
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || !finite(v) {
				return lineErr(ppath, line, "snr_db %s, want a finite number or null (no noise)", s)
			}
			r.SNRdB = v
		}
		r.Seed = pl.Seed
		r.Params = pl.Params
		count = line
		return nil
	})
	if err != nil {
		return err
	}
	if count != nrec {
		return fmt.Errorf("data: %s: %d lines, want %d (one a record of %s)", ppath, count, nrec, wpath)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
