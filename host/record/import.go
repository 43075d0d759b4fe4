package record

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/internal/atomicfile"
)

// Defaults of ImportOptions: the rate and window of the paper's network
// (10 cycles of 50 Hz at 3.2 kHz).
const (
	DefaultRate     = 3200
	DefaultWindow   = 640
	DefaultMaxRatio = 1000
	// MaxGrowth bounds a segment's resampling ratio up/down: the output
	// samples a source sample makes. The case study's 3200 Hz is 3.2 times
	// a 1 kHz recorder's rate and 64 times a 50 Hz one's; beyond 100 the
	// output is mostly filter (a 4 Hz file would grow 800 times).
	MaxGrowth = 100
	// MaxOutSamples bounds the resampled signal, and the samples of the
	// windows cut from it together: 1 GiB as float64, 11.6 hours at
	// 3200 Hz.
	MaxOutSamples = 1 << 27
	// WindowsFile and ImportFile are written beside waveforms.csv.
	WindowsFile = "windows.csv"
	ImportFile  = "import.json"
)

// ImportOptions set how a recording becomes windows.
type ImportOptions struct {
	Rate float64 // the target rate, Hz (0: DefaultRate)
	// Nominal is the nominal RMS value in the channel's unit (0: the
	// file's). The windows are x / (sqrt(2) * Nominal), so a sine at the
	// nominal value has peak 1, the amplitude of the generator's records.
	Nominal     float64
	Window, Hop int // samples (0: DefaultWindow each)
	// MaxRatio bounds up and down of a segment's rate ratio (0:
	// DefaultMaxRatio); a ratio that needs more is an error.
	MaxRatio int
	// Label, with Labeled, is written to labels.csv for every window, so
	// that the directory is a split of a recipe's [data] source = "files".
	Label   int
	Labeled bool
}

// SegmentRatio is how one rate segment was resampled: source samples
// Start..End-1 at Rate Hz by Up/Down to output samples OutStart..OutEnd-1.
type SegmentRatio struct {
	Start    int     `json:"start"`
	End      int     `json:"end"`
	Rate     float64 `json:"rate"`
	Up       int     `json:"up"`
	Down     int     `json:"down"`
	OutStart int     `json:"out_start"`
	OutEnd   int     `json:"out_end"`
	Time     float64 `json:"time_s"` // seconds from the first source sample to Start
}

// Window is one cut of the resampled signal.
type Window struct {
	Start        int     `json:"start"`         // first sample in the resampled signal
	SourceSample int     `json:"source_sample"` // the source sample at or just before its start
	SourceTime   float64 `json:"source_time_s"` // its start, s from the first source sample
	Dropped      string  `json:"dropped"`       // why it was dropped; "" for a kept window
}

// Imported is a recording resampled, divided by its nominal value and cut.
type Imported struct {
	Recording     *Recording
	Rate          float64
	Ratios        []SegmentRatio
	Nominal       float64
	NominalSource string
	// Signal is the resampled signal divided by sqrt(2)*Nominal; its
	// samples in Gaps are NaN.
	Signal   []float64
	Gaps     []Gap
	Length   int      // window length
	Hop      int      // window hop
	Windows  []Window // every window cut, kept or dropped, in order
	Label    int
	Labeled  bool
	Warnings []string
}

// Kept returns the kept windows' samples (slices of Signal).
func (imp *Imported) Kept() [][]float64 {
	var out [][]float64
	for _, w := range imp.Windows {
		if w.Dropped == "" {
			out = append(out, imp.Signal[w.Start:w.Start+imp.Length])
		}
	}
	return out
}

// Import resamples rec to opt.Rate segment by segment (Resampler with
// the ratio of each segment's rate, Ratio), concatenates the segments,
// divides by sqrt(2)*Nominal and cuts windows of opt.Window samples every
// opt.Hop samples: window k holds samples k*hop .. k*hop+window-1.
//
// Gaps: a missing source sample is 0 in the filter's input and every
// output sample whose sum reaches it (Resampler.Support) is a gap; so are
// the output samples whose filter reaches across the border between two
// rate segments (each segment is filtered on its own, padded with zeros
// like resample_poly). A window holding a gap sample is dropped, and the
// reason recorded. The recording's two ends are padded with zeros like
// resample_poly and are not gaps.
func Import(ctx context.Context, rec *Recording, opt ImportOptions) (*Imported, error) {
	if opt.Rate == 0 {
		opt.Rate = DefaultRate
	}
	if opt.Window == 0 {
		opt.Window = DefaultWindow
	}
	if opt.Hop == 0 {
		opt.Hop = opt.Window
	}
	if opt.MaxRatio == 0 {
		opt.MaxRatio = DefaultMaxRatio
	}
	if !(opt.Rate > 0) || math.IsInf(opt.Rate, 0) || opt.Window < 1 || opt.Hop < 1 || opt.MaxRatio < 1 || opt.Nominal < 0 || math.IsNaN(opt.Nominal) || math.IsInf(opt.Nominal, 0) {
		return nil, fmt.Errorf("record: import: rate %g, window %d, hop %d, nominal %g: want rate > 0, window >= 1, hop >= 1, nominal >= 0", opt.Rate, opt.Window, opt.Hop, opt.Nominal)
	}
	imp := &Imported{Recording: rec, Rate: opt.Rate, Length: opt.Window, Hop: opt.Hop, Label: opt.Label, Labeled: opt.Labeled}
	imp.Nominal, imp.NominalSource = opt.Nominal, "given"
	if imp.Nominal == 0 {
		if rec.Nominal == 0 {
			return nil, fmt.Errorf("record: %s: the file states no nominal value; give --nominal V (the nominal RMS value in %s, e.g. 230)", rec.Path, unitOr(rec.Unit))
		}
		imp.Nominal, imp.NominalSource = rec.Nominal, rec.NominalSource
		if strings.Contains(rec.NominalSource, "rating") {
			imp.Warnings = append(imp.Warnings, fmt.Sprintf("nominal %g %s taken from the %s; if that is a line-to-line rating of a phase-to-neutral channel, give --nominal %.6g", rec.Nominal, rec.Unit, rec.NominalSource, rec.Nominal/math.Sqrt(3)))
		}
	}
	if f := rec.LineFreq; f > 0 && math.Abs(f-50) > 1 {
		imp.Warnings = append(imp.Warnings, fmt.Sprintf("line frequency %g Hz: a window of %d samples at %g Hz holds %.3g cycles; the paper's network was trained on 10 cycles of 50 Hz", f, opt.Window, opt.Rate, float64(opt.Window)*f/opt.Rate))
	}

	// Resample every segment.
	total := 0
	for _, s := range rec.Segments {
		up, down, err := Ratio(s.Rate, opt.Rate, opt.MaxRatio)
		if err != nil {
			return nil, fmt.Errorf("record: %s: samples %d..%d: %w", rec.Path, s.Start, s.End-1, err)
		}
		r := SegmentRatio{Start: s.Start, End: s.End, Rate: s.Rate, Up: up, Down: down, OutStart: total, Time: rec.Time(s.Start)}
		total += (s.End-s.Start)*up/down + btoi((s.End-s.Start)*up%down != 0)
		r.OutEnd = total
		imp.Ratios = append(imp.Ratios, r)
	}
	if err := checkOutput(rec, imp.Ratios, total, opt); err != nil {
		return nil, err
	}
	imp.Signal = make([]float64, total)
	scale := 1 / (math.Sqrt2 * imp.Nominal)
	var in []float64
	for k, r := range imp.Ratios {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rs := NewResampler(r.Up, r.Down)
		in = append(in[:0], rec.Samples[r.Start:r.End]...)
		for i, v := range in {
			if math.IsNaN(v) {
				in[i] = 0
			}
		}
		out := imp.Signal[r.OutStart:r.OutEnd]
		rs.Apply(out, in)
		for i := range out {
			out[i] *= scale
		}
		mark := func(lo, hi int, reason string) {
			for i := lo; i < hi; i++ {
				out[i] = math.NaN()
			}
			if hi > lo {
				imp.Gaps = append(imp.Gaps, Gap{Start: r.OutStart + lo, End: r.OutStart + hi, Reason: reason})
			}
		}
		n := r.End - r.Start
		if k > 0 { // reaches back over the border with segment k-1
			lo, hi := rs.Support(-rs.HalfLen-1, 0, len(out))
			mark(lo, hi, "rate segment border")
		}
		for _, g := range rec.Gaps {
			a, b := max(g.Start, r.Start)-r.Start, min(g.End, r.End)-r.Start
			if a < b {
				lo, hi := rs.Support(a, b, len(out))
				mark(lo, hi, g.Reason)
			}
		}
		if k < len(imp.Ratios)-1 {
			lo, hi := rs.Support(n, n+rs.HalfLen+1, len(out))
			mark(lo, hi, "rate segment border")
		}
	}
	imp.Gaps = mergeGaps(imp.Gaps)

	// Cut.
	if total < opt.Window {
		return nil, fmt.Errorf("record: %s: %d samples at %g Hz, shorter than one window of %d", rec.Path, total, opt.Rate, opt.Window)
	}
	kept := 0
	for s := 0; s+opt.Window <= total; s += opt.Hop {
		w := Window{Start: s}
		w.SourceSample, w.SourceTime = imp.source(s)
		for _, g := range imp.Gaps {
			if g.Start < s+opt.Window && g.End > s {
				if w.Dropped != "" {
					w.Dropped += "; "
				}
				w.Dropped += fmt.Sprintf("%s at samples %d..%d", g.Reason, g.Start, g.End-1)
			}
		}
		if w.Dropped == "" {
			kept++
		}
		imp.Windows = append(imp.Windows, w)
	}
	if kept == 0 {
		return nil, fmt.Errorf("record: %s: every one of the %d windows holds a gap (%s)", rec.Path, len(imp.Windows), imp.Windows[0].Dropped)
	}
	return imp, nil
}

// checkOutput refuses an import whose output would be more than MaxGrowth
// times a segment's samples, or more than MaxOutSamples in all (the
// signal, or its windows' samples), before anything of that size is
// allocated.
func checkOutput(rec *Recording, ratios []SegmentRatio, total int, opt ImportOptions) error {
	mib := func(n int) float64 { return float64(n) * 8 / (1 << 20) }
	for _, r := range ratios {
		if g := float64(r.Up) / float64(r.Down); g > MaxGrowth {
			n := r.OutEnd - r.OutStart
			return fmt.Errorf("record: %s: samples %d..%d: resampling %g Hz to %g Hz would make %.4gx the input's samples (%d samples, %.1f MiB); at most %dx are accepted: resample the file beforehand to a rate of at least %g Hz, or import at a lower rate",
				rec.Path, r.Start, r.End-1, r.Rate, opt.Rate, g, n, mib(n), MaxGrowth, opt.Rate/MaxGrowth)
		}
	}
	if total > MaxOutSamples {
		return fmt.Errorf("record: %s: %d samples resampled to %g Hz would make %d samples (%.1f MiB); at most %d (%.0f MiB) are accepted: cut the recording into parts of at most %.3g s",
			rec.Path, len(rec.Samples), opt.Rate, total, mib(total), MaxOutSamples, mib(MaxOutSamples), float64(MaxOutSamples)/opt.Rate)
	}
	if total >= opt.Window {
		windows := (total-opt.Window)/opt.Hop + 1
		if k := MaxOutSamples / opt.Window; windows > k {
			hop := total - opt.Window + 1 // one window
			if k > 1 {
				hop = (total - opt.Window + k - 2) / (k - 1) // ceil: (total-window)/hop + 1 <= k
			}
			n := windows * opt.Window
			return fmt.Errorf("record: %s: %d windows of %d samples every %d would hold %d samples (%.1f MiB); at most %d (%.0f MiB) are accepted: a hop of %d or more, or cut the recording",
				rec.Path, windows, opt.Window, opt.Hop, n, mib(n), MaxOutSamples, mib(MaxOutSamples), hop)
		}
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func unitOr(u string) string {
	if u == "" {
		return "the channel's unit"
	}
	return u
}

// source maps output sample j to the source sample at or before it and
// its time from the first source sample.
func (imp *Imported) source(j int) (int, float64) {
	for _, r := range imp.Ratios {
		if j < r.OutEnd {
			k := j - r.OutStart
			return r.Start + k*r.Down/r.Up, r.Time + float64(k)/imp.Rate
		}
	}
	return 0, 0
}

// mergeGaps sorts and merges overlapping or touching gaps (the reasons of
// merged gaps are joined).
func mergeGaps(g []Gap) []Gap {
	for i := 1; i < len(g); i++ {
		for j := i; j > 0 && g[j].Start < g[j-1].Start; j-- {
			g[j], g[j-1] = g[j-1], g[j]
		}
	}
	var out []Gap
	for _, x := range g {
		if n := len(out); n > 0 && x.Start <= out[n-1].End {
			if x.End > out[n-1].End {
				out[n-1].End = x.End
			}
			if !strings.Contains(out[n-1].Reason, x.Reason) {
				out[n-1].Reason += ", " + x.Reason
			}
			continue
		}
		out = append(out, x)
	}
	return out
}

// importJSON is import.json.
type importJSON struct {
	Source         string         `json:"source"`
	Format         string         `json:"format"`
	Station        string         `json:"station,omitempty"`
	Channel        string         `json:"channel"`
	ChannelNumber  int            `json:"channel_number"`
	Unit           string         `json:"unit,omitempty"`
	Start          string         `json:"start,omitempty"`
	SourceSamples  int            `json:"source_samples"`
	Segments       []SegmentRatio `json:"segments"`
	Rate           float64        `json:"rate"`
	Samples        int            `json:"samples"`
	Nominal        float64        `json:"nominal"`
	NominalSource  string         `json:"nominal_source"`
	Divisor        float64        `json:"divisor"`
	LineFrequency  float64        `json:"line_frequency,omitempty"`
	EstFrequency   float64        `json:"estimated_frequency,omitempty"`
	SourceGaps     []Gap          `json:"source_gaps"`
	Gaps           []Gap          `json:"gaps"`
	WindowLength   int            `json:"window_length"`
	Hop            int            `json:"hop"`
	WindowsKept    int            `json:"windows_kept"`
	WindowsDropped []Window       `json:"windows_dropped"`
	Label          *int           `json:"label,omitempty"`
	Warnings       []string       `json:"warnings"`
}

// WriteDir writes imp to dir (created if missing) in the format of a
// dataset directory (host/data):
//
//	waveforms.csv  the kept windows, one a line (uaxai explain --input reads it)
//	labels.csv     with Labeled: Label for every window (a recipe's files split)
//	windows.csv    window,start,source_sample,source_time_s,time: the kept
//	               windows' index, first resampled sample, source sample,
//	               start in s from the first source sample, and its date
//	               and time (RFC 3339, empty when the file has none)
//	import.json    provenance: source, channel, rates, nominal, gaps,
//	               dropped windows, warnings
//
// Values are written with strconv 'g', -1. The files are written to
// temporary files and renamed into place once all are complete.
func WriteDir(dir string, imp *Imported) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	rec := imp.Recording
	kept := imp.Kept()
	type file atomicfile.Named // a local type: its literals need no keys
	files := []file{
		{data.WaveformsFile, func(w *bufio.Writer) error {
			var b []byte
			for _, x := range kept {
				b = data.AppendRow(b[:0], x)
				if _, err := w.Write(b); err != nil {
					return err
				}
			}
			return nil
		}},
		{WindowsFile, func(w *bufio.Writer) error {
			fmt.Fprintln(w, "window,start,source_sample,source_time_s,time")
			k := 0
			for _, win := range imp.Windows {
				if win.Dropped != "" {
					continue
				}
				stamp := ""
				if !rec.Start.IsZero() {
					stamp = rec.Start.Add(time.Duration(math.Round(win.SourceTime * 1e9))).Format(time.RFC3339Nano)
				}
				fmt.Fprintf(w, "%d,%d,%d,%s,%s\n", k, win.Start, win.SourceSample, strconv.FormatFloat(win.SourceTime, 'g', -1, 64), stamp)
				k++
			}
			return nil
		}},
		{ImportFile, func(w *bufio.Writer) error {
			j := importJSON{Source: rec.Path, Format: rec.Format, Station: rec.Station, Channel: rec.Channel, ChannelNumber: rec.Index,
				Unit: rec.Unit, SourceSamples: len(rec.Samples), Segments: imp.Ratios, Rate: imp.Rate, Samples: len(imp.Signal),
				Nominal: imp.Nominal, NominalSource: imp.NominalSource, Divisor: math.Sqrt2 * imp.Nominal,
				LineFrequency: rec.LineFreq, EstFrequency: rec.EstFreq, SourceGaps: rec.Gaps, Gaps: imp.Gaps,
				WindowLength: imp.Length, Hop: imp.Hop, WindowsKept: len(kept), Warnings: append(append([]string{}, rec.Warnings...), imp.Warnings...)}
			if !rec.Start.IsZero() {
				j.Start = rec.Start.Format(time.RFC3339Nano)
			}
			for _, win := range imp.Windows {
				if win.Dropped != "" {
					j.WindowsDropped = append(j.WindowsDropped, win)
				}
			}
			if imp.Labeled {
				j.Label = &imp.Label
			}
			for _, p := range []*[]Gap{&j.SourceGaps, &j.Gaps} {
				if *p == nil {
					*p = []Gap{}
				}
			}
			if j.WindowsDropped == nil {
				j.WindowsDropped = []Window{}
			}
			if j.Warnings == nil {
				j.Warnings = []string{}
			}
			b, err := json.MarshalIndent(j, "", "  ")
			if err != nil {
				return err
			}
			_, err = w.Write(append(b, '\n'))
			return err
		}},
	}
	if imp.Labeled {
		if imp.Label < 0 || imp.Label >= data.NumClasses {
			return fmt.Errorf("record: label %d, want 0..%d", imp.Label, data.NumClasses-1)
		}
		files = append(files, file{data.LabelsFile, func(w *bufio.Writer) error {
			for range kept {
				fmt.Fprintf(w, "%d\n", imp.Label)
			}
			return nil
		}})
	}
	set := make([]atomicfile.Named, len(files))
	for i, f := range files {
		set[i] = atomicfile.Named(f)
	}
	if err := atomicfile.WriteSet(dir, set); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if !imp.Labeled {
		if err := os.Remove(filepath.Join(dir, data.LabelsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record: removing a stale %w", err)
		}
	}
	return nil
}
