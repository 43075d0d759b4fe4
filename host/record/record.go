package record

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/uaxai/uaxai/internal/atomicfile"
)

// Options select what Read takes from a file.
type Options struct {
	// Channel picks the channel: for COMTRADE an analog channel's ch_id
	// (exact, then case-insensitive) or its number An as "2" or "A2"
	// (never a digital channel); for WAV a channel
	// number 1..channels; for CSV a value column's header name or its
	// number 1.. among the value columns. Empty: the first.
	Channel string
	// Rate is the sampling rate in Hz of a CSV file with one value
	// column and no time column. It is an error with a time column.
	Rate float64
	// FullScale multiplies the samples of a WAV file after integers are
	// scaled to [-1, 1): the value, in the recording's units, of full
	// scale. 0 means 1 (samples stay in [-1, 1)).
	FullScale float64
	// Primary converts a COMTRADE channel whose values are secondary
	// values (PS = "S") to primary values by the factor
	// primary/secondary. Without it the values are taken as the file
	// stores them (after a*x+b).
	Primary bool
	// Encoding of the text of a COMTRADE or CSV file: "" (detect:
	// UTF-8 when valid, else GBK when every non-ASCII byte pairs as
	// GB2312, else Windows-1251 when its bytes >= 0x80 form Cyrillic
	// words, else Latin-1, with a warning), "utf-8", "latin1", "gbk" or
	// "cp1251".
	Encoding string
}

// Segment is a run of samples at one uniform rate: samples Start..End-1
// (0-based) are at Rate Hz.
type Segment struct {
	Start int     `json:"start"`
	End   int     `json:"end"`
	Rate  float64 `json:"rate"`
	// Skip is the time, s, that the file's timestamps skip before the
	// segment's first sample beyond one sample period (a recorder that
	// paused: a timestamp jump inside the cfg's rate segment); 0: none.
	Skip float64 `json:"skip_s,omitempty"`
}

// Gap is a run of missing samples Start..End-1 (0-based, End exclusive).
type Gap struct {
	Start  int    `json:"start"`
	End    int    `json:"end"`
	Reason string `json:"reason"`
}

// Recording is one channel of a recording file.
type Recording struct {
	Path   string // the file read
	Format string // e.g. "COMTRADE 1999 ASCII", "WAV PCM 16-bit", "CSV"

	Station string // COMTRADE station name (UTF-8), else ""
	Channel string // the channel's id (COMTRADE ch_id, WAV "2", CSV column name)
	Index   int    // the channel's number (COMTRADE An, WAV 1.., CSV value column 1..)
	Unit    string // the channel's unit (COMTRADE uu), else ""
	Phase   string // the channel's phase id (COMTRADE ph), else ""

	// Samples are the channel's values in engineering units (COMTRADE:
	// a*x+b, times primary/secondary with Options.Primary and PS = "S").
	// A missing sample is NaN and lies in one of Gaps; no other sample
	// is NaN or infinite.
	Samples []float64
	Gaps    []Gap

	// Segments cover 0..len(Samples) in order, each at one rate. A
	// COMTRADE file with nrates = 0 (timestamps) has one segment whose
	// rate is measured from the timestamps.
	Segments []Segment

	Start   time.Time // time of the first sample (zero when unknown)
	Trigger time.Time // COMTRADE trigger time (zero when unknown)

	LineFreq float64 // the file's stated line frequency, Hz (0 when none)
	// EstFreq is the line frequency estimated from the samples by
	// zero crossings (0 when there are fewer than 3 crossings).
	EstFreq float64

	// Nominal is the file's nominal RMS value of the channel, 0 when it
	// has none; NominalSource says where it came from.
	Nominal       float64
	NominalSource string

	Warnings []string
}

// Rate returns the sampling rate when the recording has one segment, else 0.
func (r *Recording) Rate() float64 {
	if len(r.Segments) == 1 {
		return r.Segments[0].Rate
	}
	return 0
}

// Time returns the time of sample i in seconds from the first sample,
// following the rate segments and the time they skip.
func (r *Recording) Time(i int) float64 {
	t := 0.0
	for k, s := range r.Segments {
		t += s.Skip
		if i < s.End || k == len(r.Segments)-1 {
			return t + float64(i-s.Start)/s.Rate
		}
		t += float64(s.End-s.Start) / s.Rate
	}
	return t
}

func (r *Recording) warnf(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

// Error is an error in an input file: Path and either Line (1-based) or
// Offset (a byte offset, when Line is 0).
type Error struct {
	Path   string
	Line   int
	Offset int64
	Msg    string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: byte offset %d: %s", e.Path, e.Offset, e.Msg)
}

func lineErr(path string, line int, format string, args ...any) error {
	return &Error{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func offsetErr(path string, off int64, format string, args ...any) error {
	return &Error{Path: path, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// Read reads one channel of the recording at path. The format follows
// the extension: .cfg (COMTRADE with its .dat beside it), .cff (COMTRADE
// 2013 single file), .wav, .csv/.txt; any other extension is detected
// from the content ("RIFF....WAVE", a "--- file type: CFG ---" line, else
// CSV).
//
// Every file read (the .cfg, its .dat and .inf, a .cff, .wav or CSV) must
// be a regular file of at most MaxFileBytes bytes: a FIFO, a device such
// as /dev/zero, a directory or a larger file is refused before it is
// read.
func Read(path string, opt Options) (*Recording, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	var rec *Recording
	switch ext := strings.ToLower(filepath.Ext(path)); {
	case ext == ".cfg":
		dat, datPath, derr := readDat(path)
		if derr != nil {
			return nil, derr
		}
		inf := ""
		if ib, err := readFile(strings.TrimSuffix(path, filepath.Ext(path)) + ".inf"); err == nil {
			inf, _, _, _ = decodeText(ib, opt.Encoding)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("record: %s: its .inf file: %w", path, err)
		}
		rec, err = readCOMTRADE(path, b, datPath, dat, inf, opt)
	case ext == ".dat":
		return nil, fmt.Errorf("record: %s: give the .cfg file of a COMTRADE recording (its .dat is found beside it)", path)
	case ext == ".cff" || isCFF(b):
		rec, err = ReadCFF(path, b, opt)
	case ext == ".wav" || (len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WAVE"):
		rec, err = ReadWAV(path, b, opt)
	default:
		rec, err = ReadCSV(path, b, opt)
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// MaxFileBytes bounds each file of a recording (a COMTRADE .dat holds
// every channel: 4 GiB is hours of a many-channel recorder's samples).
const MaxFileBytes = 4 << 30

// readFile reads one file of a recording (atomicfile.ReadRegular).
func readFile(path string) ([]byte, error) {
	return atomicfile.ReadRegular(path, atomicfile.Limit{Bytes: MaxFileBytes, What: "a recording's file"})
}

// readDat reads the .dat beside cfg (any case of the extension).
func readDat(cfg string) ([]byte, string, error) {
	base := strings.TrimSuffix(cfg, filepath.Ext(cfg))
	for _, ext := range []string{".dat", ".DAT", ".Dat"} {
		p := base + ext
		b, err := readFile(p)
		if err == nil {
			return b, p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("record: %s: its data file: %w", cfg, err)
		}
	}
	return nil, "", fmt.Errorf("record: %s: no data file %s beside it (COMTRADE keeps the samples in a .dat of the same name)", cfg, base+".dat")
}

func isCFF(b []byte) bool {
	head := b
	if len(head) > 200 {
		head = head[:200]
	}
	return bytes.Contains(bytes.ToLower(head), []byte("file type: cfg"))
}

// finish checks the samples, sets the gaps from the NaN samples and
// estimates the line frequency.
func (r *Recording) finish() {
	r.Gaps = nanGaps(r.Samples, "missing value")
	if len(r.Gaps) > 0 {
		n := 0
		for _, g := range r.Gaps {
			n += g.End - g.Start
		}
		r.warnf("%d missing samples in %d gaps (first at sample %d)", n, len(r.Gaps), r.Gaps[0].Start)
	}
	r.EstFreq = EstimateFrequency(r)
	if r.LineFreq > 0 && r.EstFreq > 0 && math.Abs(r.EstFreq-r.LineFreq) > 0.02*r.LineFreq {
		r.warnf("stated line frequency %g Hz, but the samples' zero crossings give %.6g Hz (more than 2%% apart)", r.LineFreq, r.EstFreq)
	}
}

// nanGaps returns the runs of NaN in x.
func nanGaps(x []float64, reason string) []Gap {
	var gaps []Gap
	for i := 0; i < len(x); i++ {
		if !math.IsNaN(x[i]) {
			continue
		}
		j := i
		for j < len(x) && math.IsNaN(x[j]) {
			j++
		}
		gaps = append(gaps, Gap{Start: i, End: j, Reason: reason})
		i = j
	}
	return gaps
}

// Dedupe returns the warnings ws in the order of their first appearance,
// each once; one repeated is followed by " (N times)".
func Dedupe(ws []string) []string {
	count := map[string]int{}
	var order []string
	for _, w := range ws {
		if count[w] == 0 {
			order = append(order, w)
		}
		count[w]++
	}
	out := make([]string, len(order))
	for i, w := range order {
		out[i] = w
		if n := count[w]; n > 1 {
			out[i] = fmt.Sprintf("%s (%d times)", w, n)
		}
	}
	return out
}
