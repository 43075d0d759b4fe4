package data

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/uaxai/uaxai/internal/atomicfile"
)

// MaxValueBytes bounds one value of a waveforms CSV line, spaces
// included: a float64 in its shortest form is at most 24 bytes.
const MaxValueBytes = 1024

// waveBuffer is the size of the waveform reader's buffer: a line longer
// than it is read in pieces, never held whole.
const waveBuffer = 1 << 16

// WaveformBound is the bound on the values of one line of a waveforms
// CSV (ScanWaveforms): Max values (0: no bound beyond the file's), and
// Why, what the bound is and what raises it, for its error ("1 channel x
// --max-in-len 65536 samples; --max-in-len raises it").
type WaveformBound struct {
	Max int
	Why string
}

// ScanWaveforms reads a CSV file of waveforms, one a line, every line n
// comma-separated finite numbers that stay finite as float32 (n <= 0: as
// many as on the first line), and gives each value to put in file order,
// with its index i in its line (0 begins a line).
// It returns the lines and the values a line.
//
// The file is read through a buffer of a fixed size, a value at a time,
// so that what a line costs is what put keeps of it: a line of more than
// bound.Max values is refused, naming the file, the line, the count and
// the bound, once the line is counted (without parsing or keeping the
// values past the bound); a value of more than MaxValueBytes bytes is
// refused when it is read. Errors name the file, the line and what was
// expected.
func ScanWaveforms(path string, n int, bound WaveformBound, put func(i int, v float64)) (lines, cols int, err error) {
	f, err := atomicfile.OpenRegular(path, csvLimit)
	if err != nil {
		return 0, 0, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	s := waveScanner{path: path, r: bufio.NewReaderSize(f, waveBuffer), n: n, bound: bound, put: put}
	for {
		more, err := s.line()
		if err != nil {
			return 0, 0, err
		}
		if !more {
			break
		}
	}
	if s.lineNo == 0 {
		return 0, 0, fmt.Errorf("data: %s: no records, want one waveform a line", path)
	}
	return s.lineNo, s.n, nil
}

// waveScanner is the state of ScanWaveforms.
type waveScanner struct {
	path   string
	r      *bufio.Reader
	n      int // values a line; <= 0 until the first line gives it
	bound  WaveformBound
	put    func(int, float64)
	lineNo int

	// of the current line
	count    int    // values begun (fields seen)
	field    []byte // the current value's bytes so far
	blank    bool   // nothing but spaces so far
	counting bool   // past what is accepted: only counting the values
}

// want is the most values the current line may have: n, and the bound.
func (s *waveScanner) want() int {
	w := math.MaxInt
	if s.n > 0 {
		w = s.n
	}
	if s.bound.Max > 0 {
		w = min(w, s.bound.Max)
	}
	return w
}

// line reads one line; false at the end of the file.
func (s *waveScanner) line() (bool, error) {
	s.count, s.field, s.blank, s.counting = 1, s.field[:0], true, false
	read := 0
	for {
		chunk, err := s.r.ReadSlice('\n')
		read += len(chunk)
		end := err == nil || errors.Is(err, io.EOF)
		if err != nil && !end && !errors.Is(err, bufio.ErrBufferFull) {
			return false, fmt.Errorf("data: %s: line %d: %w", s.path, s.lineNo+1, err)
		}
		if err == nil {
			chunk = chunk[:len(chunk)-1] // the '\n'
		}
		if errors.Is(err, io.EOF) && read == 0 {
			return false, nil
		}
		if err := s.bytes(chunk, s.lineNo+1); err != nil {
			return false, err
		}
		if end {
			break
		}
	}
	s.lineNo++
	if s.blank {
		return false, lineErr(s.path, s.lineNo, "empty line, want one record a line")
	}
	if s.counting {
		if s.bound.Max > 0 && s.count > s.bound.Max {
			return false, lineErr(s.path, s.lineNo, "%d values, above the bound of %d (%s)", s.count, s.bound.Max, s.bound.Why)
		}
		return false, lineErr(s.path, s.lineNo, "%d values, want %d", s.count, s.n)
	}
	if err := s.value(s.lineNo); err != nil {
		return false, err
	}
	if s.n <= 0 {
		s.n = s.count
	} else if s.count != s.n {
		return false, lineErr(s.path, s.lineNo, "%d values, want %d", s.count, s.n)
	}
	return true, nil
}

// bytes takes a piece of line line.
func (s *waveScanner) bytes(b []byte, line int) error {
	for len(b) > 0 {
		i := bytes.IndexByte(b, ',')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if s.blank && len(bytes.TrimSpace(part)) > 0 || i >= 0 {
			s.blank = false
		}
		if !s.counting {
			if len(s.field)+len(part) > MaxValueBytes {
				return lineErr(s.path, line, "value %d is longer than %d bytes, want a number", s.count, MaxValueBytes)
			}
			s.field = append(s.field, part...)
		}
		if i < 0 {
			return nil
		}
		if !s.counting {
			if err := s.value(line); err != nil {
				return err
			}
		}
		s.count++
		s.field = s.field[:0]
		if s.count > s.want() {
			s.counting = true
		}
		b = b[i+1:]
	}
	return nil
}

// value parses the current value, s.field, the s.count-th of line line.
func (s *waveScanner) value(line int) error {
	t := bytes.TrimSpace(s.field)
	v, err := strconv.ParseFloat(string(t), 64)
	if err != nil || !finite(v) {
		return lineErr(s.path, line, "value %d is %q, want a finite number", s.count, t)
	}
	if !finite(float64(float32(v))) {
		return lineErr(s.path, line, "value %d is %q, beyond the float32 range the network computes in (want |x| <= %g)", s.count, t, math.MaxFloat32)
	}
	s.put(s.count-1, v)
	return nil
}
