package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/uaxai/uaxai/internal/atomicfile"
)

// Channel is an analog channel to write: its cfg fields and its values in
// engineering units (NaN: missing).
type Channel struct {
	ID, Phase, Circuit, Unit string
	A, B                     float64 // value = A*x + B; x is what the data file stores
	Skew                     float64
	Primary, Secondary       float64
	PS                       string // "P" or "S"
	Samples                  []float64
}

// DigitalChannel is a digital channel to write.
type DigitalChannel struct {
	ID, Phase, Circuit string
	Normal             int
	States             []bool
}

// COMTRADE is a recording to write with Encode or EncodeCFF.
type COMTRADE struct {
	Rev             int    // 1991, 1999 or 2013
	FileType        string // ASCII, BINARY, BINARY32 or FLOAT32
	Station, Device string
	LineFreq        float64
	// Segments give the rates (nrates = len(Segments)); with Timestamped,
	// the cfg says nrates = 0 and the times are in the timestamps only.
	Segments       []Segment
	Timestamped    bool
	Start, Trigger time.Time
	TimeMult       float64 // 0 means 1
	TimeCode       string  // 2013: time_code,local_code (default "0,0")
	TmqCode        string  // 2013: tmq_code,leapsec (default "0,0")
	Analogs        []Channel
	Digitals       []DigitalChannel
	INF, HDR       string // for EncodeCFF
	CRLF           bool   // end text lines with CR LF (the standard's line end)
}

// samples returns the common length of the channels.
func (w *COMTRADE) samples() (int, error) {
	if len(w.Analogs) == 0 {
		return 0, fmt.Errorf("record: COMTRADE write: no analog channel")
	}
	n := len(w.Analogs[0].Samples)
	for _, a := range w.Analogs {
		if len(a.Samples) != n {
			return 0, fmt.Errorf("record: COMTRADE write: channel %q has %d samples, want %d", a.ID, len(a.Samples), n)
		}
		if a.A == 0 {
			return 0, fmt.Errorf("record: COMTRADE write: channel %q has a = 0", a.ID)
		}
	}
	for _, d := range w.Digitals {
		if len(d.States) != n {
			return 0, fmt.Errorf("record: COMTRADE write: digital channel %q has %d states, want %d", d.ID, len(d.States), n)
		}
	}
	if len(w.Segments) == 0 || w.Segments[0].Start != 0 || w.Segments[len(w.Segments)-1].End != n {
		return 0, fmt.Errorf("record: COMTRADE write: the segments must cover the %d samples", n)
	}
	for k, s := range w.Segments {
		if s.End <= s.Start || !(s.Rate > 0) || (k > 0 && s.Start != w.Segments[k-1].End) {
			return 0, fmt.Errorf("record: COMTRADE write: segment %d %+v: want consecutive, non-empty segments at rates > 0", k, s)
		}
	}
	if w.Timestamped && len(w.Segments) != 1 {
		return 0, fmt.Errorf("record: COMTRADE write: timestamps (nrates = 0) with %d segments, want 1", len(w.Segments))
	}
	return n, nil
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// dateString formats t as dd/mm/yyyy,hh:mm:ss.ssssss (mm/dd/yy for 1991).
func dateString(t time.Time, rev int) string {
	us := t.Nanosecond() / 1000
	if rev == 1991 {
		return fmt.Sprintf("%02d/%02d/%02d,%02d:%02d:%02d.%06d", int(t.Month()), t.Day(), t.Year()%100, t.Hour(), t.Minute(), t.Second(), us)
	}
	return fmt.Sprintf("%02d/%02d/%04d,%02d:%02d:%02d.%06d", t.Day(), int(t.Month()), t.Year(), t.Hour(), t.Minute(), t.Second(), us)
}

// stamps returns the timestamp of every sample in units of timemult µs.
func (w *COMTRADE) stamps(n int) []uint32 {
	tm := w.TimeMult
	if tm == 0 {
		tm = 1
	}
	out := make([]uint32, n)
	t := 0.0
	for _, s := range w.Segments {
		t += s.Skip
		for i := s.Start; i < s.End; i++ {
			out[i] = uint32(math.Round((t + float64(i-s.Start)/s.Rate) * 1e6 / tm))
		}
		t += float64(s.End-s.Start) / s.Rate
	}
	return out
}

// Config returns the cfg text.
func (w *COMTRADE) Config() (string, error) {
	n, err := w.samples()
	if err != nil {
		return "", err
	}
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	if w.Rev == 1991 {
		add("%s,%s", w.Station, w.Device)
	} else {
		add("%s,%s,%d", w.Station, w.Device, w.Rev)
	}
	add("%d,%dA,%dD", len(w.Analogs)+len(w.Digitals), len(w.Analogs), len(w.Digitals))
	for k, a := range w.Analogs {
		lo, hi := rawRange(w.FileType)
		line := fmt.Sprintf("%d,%s,%s,%s,%s,%s,%s,%s,%s,%s", k+1, a.ID, a.Phase, a.Circuit, a.Unit, fmtFloat(a.A), fmtFloat(a.B), fmtFloat(a.Skew), lo, hi)
		if w.Rev != 1991 {
			ps := a.PS
			if ps == "" {
				ps = "P"
			}
			line += fmt.Sprintf(",%s,%s,%s", fmtFloat(a.Primary), fmtFloat(a.Secondary), ps)
		}
		lines = append(lines, line)
	}
	for k, d := range w.Digitals {
		if w.Rev == 1991 {
			add("%d,%s,%d", k+1, d.ID, d.Normal)
		} else {
			add("%d,%s,%s,%s,%d", k+1, d.ID, d.Phase, d.Circuit, d.Normal)
		}
	}
	add("%s", fmtFloat(w.LineFreq))
	if w.Timestamped {
		add("0")
		add("0,%d", n)
	} else {
		add("%d", len(w.Segments))
		for _, s := range w.Segments {
			add("%s,%d", fmtFloat(s.Rate), s.End)
		}
	}
	add("%s", dateString(w.Start, w.Rev))
	add("%s", dateString(w.Trigger, w.Rev))
	add("%s", w.FileType)
	if w.Rev != 1991 {
		tm := w.TimeMult
		if tm == 0 {
			tm = 1
		}
		add("%s", fmtFloat(tm))
	}
	if w.Rev == 2013 {
		tc, tq := w.TimeCode, w.TmqCode
		if tc == "" {
			tc = "0,0"
		}
		if tq == "" {
			tq = "0,0"
		}
		add("%s", tc)
		add("%s", tq)
	}
	return w.join(lines), nil
}

func (w *COMTRADE) join(lines []string) string {
	end := "\n"
	if w.CRLF {
		end = "\r\n"
	}
	return strings.Join(lines, end) + end
}

func rawRange(ft string) (string, string) {
	switch ft {
	case Binary:
		return "-32767", "32767"
	case Binary32:
		return "-2147483647", "2147483647"
	case Float32:
		return "-3.4e38", "3.4e38"
	}
	return "-99999", "99998"
}

// raw returns the stored value x of v = a*x + b for channel a, rounded to
// an integer for the integer types and checked against the type's range.
func (w *COMTRADE) raw(a Channel, v float64) (float64, error) {
	x := (v - a.B) / a.A
	if w.FileType == Float32 {
		if math.Abs(x) > math.MaxFloat32 {
			return 0, fmt.Errorf("record: COMTRADE write: channel %q value %g beyond float32 with a = %g", a.ID, v, a.A)
		}
		return float64(float32(x)), nil
	}
	x = math.Round(x)
	lo, hi := -99999.0, 99998.0
	switch w.FileType {
	case Binary:
		lo, hi = -32767, 32767
	case Binary32:
		lo, hi = -2147483647, 2147483647
	}
	if w.FileType == ASCII && w.Rev == 2013 {
		lo, hi = -math.MaxInt32, math.MaxInt32
	}
	if x < lo || x > hi {
		return 0, fmt.Errorf("record: COMTRADE write: channel %q value %g stores as %g, beyond %s's %g..%g (choose a larger a)", a.ID, v, x, w.FileType, lo, hi)
	}
	return x, nil
}

// Data returns the data file's bytes.
func (w *COMTRADE) Data() ([]byte, error) {
	n, err := w.samples()
	if err != nil {
		return nil, err
	}
	st := w.stamps(n)
	var b []byte
	le := binary.LittleEndian
	end := "\n"
	if w.CRLF {
		end = "\r\n"
	}
	words := (len(w.Digitals) + 15) / 16
	for i := 0; i < n; i++ {
		if w.FileType == ASCII {
			b = strconv.AppendInt(b, int64(i+1), 10)
			b = append(b, ',')
			b = strconv.AppendUint(b, uint64(st[i]), 10)
			for _, a := range w.Analogs {
				b = append(b, ',')
				v := a.Samples[i]
				if math.IsNaN(v) {
					if w.Rev < 2013 {
						b = append(b, "99999"...)
					}
					continue
				}
				x, err := w.raw(a, v)
				if err != nil {
					return nil, err
				}
				b = strconv.AppendFloat(b, x, 'f', -1, 64)
			}
			for _, d := range w.Digitals {
				b = append(b, ',')
				if d.States[i] {
					b = append(b, '1')
				} else {
					b = append(b, '0')
				}
			}
			b = append(b, end...)
			continue
		}
		b = le.AppendUint32(b, uint32(i+1))
		b = le.AppendUint32(b, st[i])
		for _, a := range w.Analogs {
			v := a.Samples[i]
			missing := math.IsNaN(v)
			x := 0.0
			if !missing {
				if x, err = w.raw(a, v); err != nil {
					return nil, err
				}
			}
			switch w.FileType {
			case Binary:
				if missing {
					x = missingBinary
				}
				b = le.AppendUint16(b, uint16(int16(x)))
			case Binary32:
				if missing {
					x = missingBinary32
				}
				b = le.AppendUint32(b, uint32(int32(x)))
			case Float32:
				if missing {
					b = le.AppendUint32(b, 0xFFFFFFFF)
				} else {
					b = le.AppendUint32(b, math.Float32bits(float32(x)))
				}
			default:
				return nil, fmt.Errorf("record: COMTRADE write: file type %q, want ASCII, BINARY, BINARY32 or FLOAT32", w.FileType)
			}
		}
		for k := 0; k < words; k++ {
			var word uint16
			for j := 0; j < 16 && 16*k+j < len(w.Digitals); j++ {
				if w.Digitals[16*k+j].States[i] {
					word |= 1 << j
				}
			}
			b = le.AppendUint16(b, word)
		}
	}
	return b, nil
}

// Encode returns the cfg and the data file.
func (w *COMTRADE) Encode() (cfg, dat []byte, err error) {
	c, err := w.Config()
	if err != nil {
		return nil, nil, err
	}
	d, err := w.Data()
	if err != nil {
		return nil, nil, err
	}
	return []byte(c), d, nil
}

// EncodeCFF returns a 2013 single-file recording: the CFG, INF, HDR and
// DAT sections.
func (w *COMTRADE) EncodeCFF() ([]byte, error) {
	c, d, err := w.Encode()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	head := func(s string) {
		b.WriteString("--- file type: " + s + " ---")
		if w.CRLF {
			b.WriteByte('\r')
		}
		b.WriteByte('\n')
	}
	head("CFG")
	b.Write(c)
	for _, s := range []struct{ name, text string }{{"INF", w.INF}, {"HDR", w.HDR}} {
		head(s.name)
		if s.text != "" {
			b.WriteString(w.join(splitLines(s.text)))
		}
	}
	head(fmt.Sprintf("DAT %s: %d", w.FileType, len(d)))
	b.Write(d)
	return b.Bytes(), nil
}

// WriteFiles writes cfgPath and the .dat beside it.
func (w *COMTRADE) WriteFiles(cfgPath string) error {
	c, d, err := w.Encode()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(cfgPath, c); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	dat := strings.TrimSuffix(cfgPath, ".cfg") + ".dat"
	if err := atomicfile.WriteFile(dat, d); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// writeBytes writes b to path atomically.
func writeBytes(path string, b []byte) error {
	if err := atomicfile.WriteFile(path, b); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}
