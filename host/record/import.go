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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/data/npy"
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
	// WindowsFile and ImportFile are written beside waveforms.csv, and
	// NPYFile too when the windows have more than one channel.
	WindowsFile = "windows.csv"
	ImportFile  = "import.json"
	NPYFile     = "waveforms.npy"
)

// ImportOptions set how a recording becomes windows.
type ImportOptions struct {
	// Rate is the target rate, Hz; 0: the rate at which a window holds
	// Cycles cycles of the system frequency (SystemFrequency: 3200 Hz
	// for 640 samples of 50 Hz, 3840 Hz for 60 Hz).
	Rate   float64
	Cycles int // 0: DefaultCycles
	// NominalAuto takes each channel's nominal value from its pre-event
	// RMS (PreEventRMS) instead of the file (Nominal must be 0).
	NominalAuto bool
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
	// Skip is the time the file's timestamps skip before Start
	// (Segment.Skip): the border is a gap.
	Skip float64 `json:"skip_s,omitempty"`
}

// Window is one cut of the resampled signal.
type Window struct {
	Start        int     `json:"start"`         // first sample in the resampled signal
	SourceSample int     `json:"source_sample"` // the source sample at or just before its start
	SourceTime   float64 `json:"source_time_s"` // its start, s from the first source sample
	Dropped      string  `json:"dropped"`       // why it was dropped; "" for a kept window
}

// Imported is a recording resampled, divided by its nominal value and cut:
// one channel (Import) or several sharing one time base (ImportChannels).
type Imported struct {
	// Recording, Nominal, NominalSource and Signal are channel 0's
	// (Channels[0]).
	Recording     *Recording
	Rate          float64
	SystemFreq    float64 // the power system's frequency, 50 or 60 Hz (SystemFrequency)
	Ratios        []SegmentRatio
	Nominal       float64
	NominalSource string
	// Signal is the resampled signal divided by sqrt(2)*Nominal; its
	// samples in Gaps are NaN.
	Signal []float64
	// Gaps are the gaps of every channel, merged: a window that holds one
	// is dropped for all channels. With one channel, its gaps.
	Gaps []Gap
	// Channels are the channels in order, each with its own nominal
	// value and signal (len 1 for Import).
	Channels []ChannelSignal
	Length   int      // window length
	Hop      int      // window hop
	Windows  []Window // every window cut, kept or dropped, in order
	Label    int
	Labeled  bool
	Warnings []string
}

// ChannelSignal is one channel of an import.
type ChannelSignal struct {
	Recording     *Recording
	Nominal       float64 // RMS, in the channel's unit
	NominalSource string
	// Signal is the channel resampled and multiplied by
	// 1/(sqrt(2)*Nominal); its samples in Gaps are NaN.
	Signal []float64
	Gaps   []Gap // this channel's gaps in Signal
}

// Kept returns the kept windows' samples, each C x Length values
// channel-major (channel c's samples at c*Length ..): with one channel
// slices of Signal, else new slices.
func (imp *Imported) Kept() [][]float64 {
	var out [][]float64
	C := max(len(imp.Channels), 1)
	for _, w := range imp.Windows {
		if w.Dropped != "" {
			continue
		}
		if C == 1 {
			out = append(out, imp.Signal[w.Start:w.Start+imp.Length])
			continue
		}
		row := make([]float64, 0, C*imp.Length)
		for _, ch := range imp.Channels {
			row = append(row, ch.Signal[w.Start:w.Start+imp.Length]...)
		}
		out = append(out, row)
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
	return ImportChannels(ctx, []*Recording{rec}, opt)
}

// ImportChannels is Import of several channels of one recording (as
// ReadChannels returns them: one sample count, one set of rate
// segments). Every channel is resampled as Import does and divided by
// sqrt(2) times its own nominal value: opt.Nominal for every channel when
// it is given, else each channel's Recording.Nominal (for the voltages of
// three phases: the phase-to-neutral RMS value). The windows are cut at
// the same samples of every channel, and a window with a gap in any
// channel is dropped for all; a kept window is the channels' C x Length
// samples, channel-major (Kept).
func ImportChannels(ctx context.Context, recs []*Recording, opt ImportOptions) (*Imported, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("record: import: no channel")
	}
	rec := recs[0]
	for _, r := range recs[1:] {
		if len(r.Samples) != len(rec.Samples) || !slices.Equal(r.Segments, rec.Segments) {
			return nil, fmt.Errorf("record: %s: channel %s has %d samples in segments %v, channel %s %d in %v; the channels of one import must share their time base", r.Path, r.Channel, len(r.Samples), r.Segments, rec.Channel, len(rec.Samples), rec.Segments)
		}
	}
	if opt.Window == 0 {
		opt.Window = DefaultWindow
	}
	if opt.Cycles == 0 {
		opt.Cycles = DefaultCycles
	}
	var sysWarn []string
	sys, why := SystemFrequency(rec)
	if opt.Rate == 0 {
		opt.Rate = float64(opt.Window) * sys / float64(opt.Cycles)
		if sys != 50 || rec.LineFreq != 0 && rec.LineFreq != sys {
			sysWarn = append(sysWarn, fmt.Sprintf("a %g Hz system (%s): resampled to %g Hz, so that a window of %d samples holds %d cycles", sys, why, opt.Rate, opt.Window, opt.Cycles))
		}
	}
	if opt.Hop == 0 {
		opt.Hop = opt.Window
	}
	if opt.MaxRatio == 0 {
		opt.MaxRatio = DefaultMaxRatio
	}
	if !(opt.Rate > 0) || math.IsInf(opt.Rate, 0) || opt.Window < 1 || opt.Hop < 1 || opt.MaxRatio < 1 || opt.Cycles < 1 || opt.Nominal < 0 || math.IsNaN(opt.Nominal) || math.IsInf(opt.Nominal, 0) || (opt.NominalAuto && opt.Nominal != 0) {
		return nil, fmt.Errorf("record: import: rate %g, window %d, hop %d, cycles %d, nominal %g (auto %v): want rate > 0, window >= 1, hop >= 1, cycles >= 1, nominal >= 0, and no nominal with auto", opt.Rate, opt.Window, opt.Hop, opt.Cycles, opt.Nominal, opt.NominalAuto)
	}
	if w := fundamentalWarning(rec, sys, why); w != "" {
		sysWarn = append(sysWarn, w)
	}
	imp := &Imported{Recording: rec, Rate: opt.Rate, SystemFreq: sys, Length: opt.Window, Hop: opt.Hop, Label: opt.Label, Labeled: opt.Labeled}
	imp.Warnings = append(imp.Warnings, sysWarn...)
	imp.Channels = make([]ChannelSignal, len(recs))
	for c, r := range recs {
		ch := &imp.Channels[c]
		ch.Recording, ch.Nominal, ch.NominalSource = r, opt.Nominal, "given"
		if opt.NominalAuto {
			v, how, err := PreEventRMS(r, sys)
			if err != nil {
				return nil, err
			}
			ch.Nominal, ch.NominalSource = v, how
			continue
		}
		if ch.Nominal == 0 {
			if r.Nominal == 0 {
				// What --nominal auto would take, so that the user can
				// judge it.
				auto := ""
				if v, how, err := PreEventRMS(r, sys); err == nil {
					auto = fmt.Sprintf(", or --nominal auto (%s: %s here)", how, strings.TrimSpace(fmt.Sprintf("%.6g %s", v, r.Unit)))
				}
				if len(recs) > 1 {
					return nil, fmt.Errorf("record: %s: channel %s: the file states no nominal value; give --nominal V (the nominal RMS value in %s, one for every channel; for three phases the phase-to-neutral value, e.g. 230)%s", r.Path, r.Channel, unitOr(r.Unit), auto)
				}
				return nil, fmt.Errorf("record: %s: the file states no nominal value; give --nominal V (the nominal RMS value in %s, e.g. 230)%s", r.Path, unitOr(r.Unit), auto)
			}
			ch.Nominal, ch.NominalSource = r.Nominal, r.NominalSource
			if rms := medianCycleRMS(r, sys); lineToLine(rms, r.Nominal) {
				ch.Nominal = r.Nominal / math.Sqrt(3)
				ch.NominalSource = fmt.Sprintf("%s / sqrt(3)", r.NominalSource)
				imp.Warnings = append(imp.Warnings, fmt.Sprintf("channel %s: nominal %g %s from the %s is a line-to-line value: the channel's cycles have a median RMS of %.4g, near %g/sqrt(3) = %.6g, which is taken (else give --nominal)", r.Channel, r.Nominal, r.Unit, r.NominalSource, rms, r.Nominal, ch.Nominal))
			} else if v, how, ok := ratingDisagrees(r, sys, r.Nominal, rms); ok {
				ch.Nominal, ch.NominalSource = v, how
				imp.Warnings = append(imp.Warnings, fmt.Sprintf("channel %s: nominal %g %s from the %s disagrees with the signal: %s, %.3g times it, and the whole recording's median cycle RMS too (beyond a factor %g; a transformer ratio written where a rating belongs?): %.6g %s is taken (else give --nominal V)", r.Channel, r.Nominal, r.Unit, r.NominalSource, how, v/r.Nominal, float64(RatingFactor), v, r.Unit))
			}
		}
	}
	imp.Nominal, imp.NominalSource = imp.Channels[0].Nominal, imp.Channels[0].NominalSource
	if !opt.NominalAuto {
		for _, ch := range imp.Channels {
			// A level before the event far from the nominal moves every
			// class (a swell at the nameplate is normal at the level).
			if pre, how, err := PreEventRMS(ch.Recording, sys); err == nil && math.Abs(pre/ch.Nominal-1) > PreEventTolerance {
				imp.Warnings = append(imp.Warnings, fmt.Sprintf("channel %s: the level, %s (%s), is %+.1f%% from the nominal %.6g (%s): the classes are read against the nominal; --nominal auto takes the level instead",
					ch.Recording.Channel, strings.TrimSpace(fmt.Sprintf("%.4g %s", pre, ch.Recording.Unit)), how, 100*(pre/ch.Nominal-1), ch.Nominal, ch.NominalSource))
			}
		}
	}
	if c := float64(opt.Window) * sys / opt.Rate; math.Abs(c-float64(opt.Cycles)) > 0.01 {
		imp.Warnings = append(imp.Warnings, fmt.Sprintf("a %g Hz system (%s): a window of %d samples at %g Hz holds %.3g cycles, not %d (the rate was given; leave it out to take %g Hz)", sys, why, opt.Window, opt.Rate, c, opt.Cycles, float64(opt.Window)*sys/float64(opt.Cycles)))
	}

	// Resample every segment.
	segs, segWarn := importSegments(rec, sys, opt)
	imp.Warnings = append(imp.Warnings, segWarn...)
	total := 0
	for _, s := range segs {
		up, down, err := Ratio(s.Rate, opt.Rate, opt.MaxRatio)
		if err != nil {
			return nil, fmt.Errorf("record: %s: samples %d..%d: %w", rec.Path, s.Start, s.End-1, err)
		}
		r := SegmentRatio{Start: s.Start, End: s.End, Rate: s.Rate, Up: up, Down: down, OutStart: total, Time: rec.Time(s.Start), Skip: s.Skip}
		total += (s.End-s.Start)*up/down + btoi((s.End-s.Start)*up%down != 0)
		r.OutEnd = total
		imp.Ratios = append(imp.Ratios, r)
	}
	if err := checkOutput(rec, imp.Ratios, total, len(recs), opt); err != nil {
		return nil, err
	}
	var in []float64
	for c := range imp.Channels {
		ch := &imp.Channels[c]
		var err error
		if in, err = imp.resample(ctx, ch, total, in); err != nil {
			return nil, err
		}
		if len(recs) == 1 {
			imp.Gaps = ch.Gaps
			continue
		}
		for _, g := range ch.Gaps {
			g.Reason = "channel " + ch.Recording.Channel + ": " + g.Reason
			imp.Gaps = append(imp.Gaps, g)
		}
	}
	imp.Gaps = mergeGaps(imp.Gaps)
	imp.Signal = imp.Channels[0].Signal

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
		for _, r := range imp.Ratios {
			if r.Skip > 0 && s < r.OutStart && r.OutStart < s+opt.Window {
				if w.Dropped != "" {
					w.Dropped += "; "
				}
				w.Dropped += fmt.Sprintf("timestamp jump of %.6g s before sample %d", r.Skip, r.OutStart)
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
	if last := imp.Windows[len(imp.Windows)-1].Start + opt.Window; last < total {
		_, t := imp.source(last)
		imp.Warnings = append(imp.Warnings, fmt.Sprintf("the last %d samples (%.4g s from %.4g s) make no whole window of %d: left out", total-last, float64(total-last)/opt.Rate, t, opt.Window))
	}
	return imp, nil
}

// RateTolerance is how far, relatively, a rate segment's rate may be
// from a whole number of samples a cycle of the system frequency, N * f,
// to be resampled as N * f when no ratio up/down <= MaxRatio takes it to
// the target rate; it must also be within a quarter sample a cycle of N
// (|rate/f - N| <= 1/4), so that N is not in doubt (3333.3333 Hz, 66.67
// samples a cycle of 50 Hz, is no tracking rate and stays an error). Frequency-tracking recorders sample N times a cycle of
// the frequency they measure (C37.111 writes their rates as 2401.509521
// Hz ...), and a rate measured from timestamps is N * f give or take the
// stamps' jitter; 1 % is the band EN 50160 gives the frequency of an
// interconnected system for 99.5 % of a year.
const RateTolerance = 0.01

// importSegments returns the segments the import resamples: those of rec,
// except that (1) a rate that no ratio up/down <= opt.MaxRatio takes to
// opt.Rate, but within RateTolerance of N * sys (N = round(rate/sys)),
// and within a quarter sample a cycle of N, is taken as N * sys, and (2) adjacent segments of one rate (as stated,
// or as taken) are one segment, filtered together without a border gap
// between them. A warning says each change: the segments, their rates,
// the rate taken and by how much the times of the samples move (at most
// max_i |t_file(i) - t_taken(i)| over the merged segment, reached at a
// border of the file's segments, as the difference is linear between
// them).
func importSegments(rec *Recording, sys float64, opt ImportOptions) ([]Segment, []string) {
	type group struct {
		seg         Segment
		first, last int     // file segments merged
		snapped     int     // of them, how many had their rate taken as N*sys
		lo, hi      float64 // their stated rates
		shift       float64 // max |t_file - t_taken|, s
		tFile       float64 // the file's time at the end of the last merged segment, s
	}
	var gs []group
	for k, s := range rec.Segments {
		r, snapped := s.Rate, false
		if _, _, err := Ratio(r, opt.Rate, opt.MaxRatio); err != nil && sys > 0 {
			if n := math.Round(r / sys); n >= 1 && math.Abs(r-n*sys) <= RateTolerance*n*sys && math.Abs(r/sys-n) <= 0.25 {
				if _, _, err := Ratio(n*sys, opt.Rate, opt.MaxRatio); err == nil {
					r, snapped = n*sys, true
				}
			}
		}
		m := len(gs)
		if m == 0 || gs[m-1].seg.Rate != r || gs[m-1].seg.End != s.Start || s.Skip != 0 {
			gs = append(gs, group{seg: Segment{Start: s.Start, End: s.Start, Rate: r, Skip: s.Skip}, first: k, lo: s.Rate, hi: s.Rate})
			m++
		}
		g := &gs[m-1]
		g.last = k
		g.seg.End = s.End
		g.lo, g.hi = math.Min(g.lo, s.Rate), math.Max(g.hi, s.Rate)
		if snapped {
			g.snapped++
		}
		// The file's time at the end of this segment against the taken one.
		g.tFile += float64(s.End-s.Start) / s.Rate
		g.shift = math.Max(g.shift, math.Abs(g.tFile-float64(s.End-g.seg.Start)/r))
	}
	segs := make([]Segment, len(gs))
	var warn []string
	for i, g := range gs {
		segs[i] = g.seg
		what := fmt.Sprintf("samples %d..%d: rate segment %d", g.seg.Start, g.seg.End-1, g.first+1)
		if g.last > g.first {
			what = fmt.Sprintf("samples %d..%d: rate segments %d..%d", g.seg.Start, g.seg.End-1, g.first+1, g.last+1)
		}
		rates := fmt.Sprintf("%.10g Hz", g.lo)
		if g.hi > g.lo {
			rates = fmt.Sprintf("%.10g..%.10g Hz", g.lo, g.hi)
		}
		switch {
		case g.snapped > 0:
			n := g.seg.Rate / sys
			warn = append(warn, fmt.Sprintf("%s (%s; %d of them no ratio up/down <= %d of %g Hz) resampled as one segment of %g Hz, %g samples a cycle of %g Hz (a frequency-tracking recorder, or a rate measured from timestamps: within %g%% of it); the samples' times move by up to %.3g ms",
				what, rates, g.snapped, opt.MaxRatio, opt.Rate, g.seg.Rate, n, sys, 100*RateTolerance, 1e3*g.shift))
		case g.last > g.first:
			warn = append(warn, fmt.Sprintf("%s share the rate %g Hz: resampled as one segment (no border gap between them)", what, g.seg.Rate))
		}
	}
	return segs, warn
}

// resample fills ch.Signal (total samples) and ch.Gaps from
// ch.Recording, segment by segment by imp.Ratios, multiplied by
// 1/(sqrt(2)*ch.Nominal). in is scratch space, returned for reuse.
func (imp *Imported) resample(ctx context.Context, ch *ChannelSignal, total int, in []float64) ([]float64, error) {
	rec := ch.Recording
	ch.Signal = make([]float64, total)
	scale := 1 / (math.Sqrt2 * ch.Nominal)
	for k, r := range imp.Ratios {
		if err := ctx.Err(); err != nil {
			return in, err
		}
		rs := NewResampler(r.Up, r.Down)
		in = append(in[:0], rec.Samples[r.Start:r.End]...)
		for i, v := range in {
			if math.IsNaN(v) {
				in[i] = 0
			}
		}
		out := ch.Signal[r.OutStart:r.OutEnd]
		rs.Apply(out, in)
		for i := range out {
			out[i] *= scale
		}
		mark := func(lo, hi int, reason string) {
			for i := lo; i < hi; i++ {
				out[i] = math.NaN()
			}
			if hi > lo {
				ch.Gaps = append(ch.Gaps, Gap{Start: r.OutStart + lo, End: r.OutStart + hi, Reason: reason})
			}
		}
		n := r.End - r.Start
		border := func(k int) string { // the border before segment k
			if imp.Ratios[k].Skip > 0 {
				return "timestamp jump"
			}
			return "rate segment border"
		}
		if k > 0 { // reaches back over the border with segment k-1
			lo, hi := rs.Support(-rs.HalfLen-1, 0, len(out))
			mark(lo, hi, border(k))
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
			mark(lo, hi, border(k+1))
		}
	}
	ch.Gaps = mergeGaps(ch.Gaps)
	return in, nil
}

// PreEventTolerance is how far the level before the event (PreEventRMS)
// may lie from the nominal, relatively, before the import warns.
const PreEventTolerance = 0.05

// fundamentalWarning says when rec shows no fundamental of a power system
// (its zero crossings give a frequency more than 5 % from 50 and 60 Hz,
// or none) or is sampled too slowly to carry one well (fewer than 8
// samples a cycle of sys): the windows then assume sys Hz (why), and the
// waveform the network sees is not the device's. "" when neither.
func fundamentalWarning(rec *Recording, sys float64, why string) string {
	var parts []string
	near := func(f float64) bool { return math.Abs(rec.EstFreq-f) <= 0.05*f }
	switch {
	case rec.EstFreq == 0:
		parts = append(parts, "no fundamental found (fewer than 3 zero crossings)")
	case !near(50) && !near(60):
		parts = append(parts, fmt.Sprintf("no fundamental of a power system found: the zero crossings give %.4g Hz, near neither 50 nor 60 Hz", rec.EstFreq))
	}
	if r := rec.Rate(); r > 0 && r < 8*sys {
		parts = append(parts, fmt.Sprintf("sampled at %g Hz, %.3g samples a cycle of %g Hz: the waveform between the samples is not in the file, and resampling invents it", r, r/sys, sys))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s; the windows assume a %g Hz system (%s)", strings.Join(parts, "; "), sys, why)
}

// checkOutput refuses an import whose output would be more than MaxGrowth
// times a segment's samples, or more than MaxOutSamples in all (the
// signal, or its windows' samples), before anything of that size is
// allocated.
func checkOutput(rec *Recording, ratios []SegmentRatio, total, channels int, opt ImportOptions) error {
	mib := func(n int) float64 { return float64(n) * 8 / (1 << 20) }
	for _, r := range ratios {
		if g := float64(r.Up) / float64(r.Down); g > MaxGrowth {
			n := r.OutEnd - r.OutStart
			return fmt.Errorf("record: %s: samples %d..%d: resampling %g Hz to %g Hz would make %.4gx the input's samples (%d samples, %.1f MiB); at most %dx are accepted: resample the file beforehand to a rate of at least %g Hz, or import at a lower rate",
				rec.Path, r.Start, r.End-1, r.Rate, opt.Rate, g, n, mib(n), MaxGrowth, opt.Rate/MaxGrowth)
		}
	}
	// With C channels, each channel gets MaxOutSamples/C.
	limit, per := MaxOutSamples/channels, ""
	if channels > 1 {
		per = fmt.Sprintf(" a channel, for %d channels", channels)
	}
	if total > limit {
		return fmt.Errorf("record: %s: %d samples resampled to %g Hz would make %d samples (%.1f MiB); at most %d (%.0f MiB)%s are accepted: cut the recording into parts of at most %.3g s",
			rec.Path, len(rec.Samples), opt.Rate, total, mib(total), limit, mib(limit), per, float64(limit)/opt.Rate)
	}
	if total >= opt.Window {
		windows := (total-opt.Window)/opt.Hop + 1
		if k := limit / opt.Window; windows > k {
			hop := total - opt.Window + 1 // one window
			if k > 1 {
				hop = (total - opt.Window + k - 2) / (k - 1) // ceil: (total-window)/hop + 1 <= k
			}
			n := windows * opt.Window
			return fmt.Errorf("record: %s: %d windows of %d samples every %d would hold %d samples (%.1f MiB); at most %d (%.0f MiB)%s are accepted: a hop of %d or more, or cut the recording",
				rec.Path, windows, opt.Window, opt.Hop, n, mib(n), limit, mib(limit), per, hop)
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
	// Channels, with more than one channel: each channel of the windows,
	// in order (the top-level channel joins their names with commas;
	// channel_number, unit, nominal and divisor are channel 0's).
	Channels []channelJSON `json:"channels,omitempty"`
}

// channelJSON is a channel in import.json.
type channelJSON struct {
	Name          string  `json:"name"`
	Number        int     `json:"number"`
	Phase         string  `json:"phase,omitempty"`
	Unit          string  `json:"unit,omitempty"`
	Nominal       float64 `json:"nominal"`
	NominalSource string  `json:"nominal_source"`
	// Scale is what the channel's resampled values were multiplied by:
	// 1/(sqrt(2)*Nominal).
	Scale      float64 `json:"scale"`
	SourceGaps []Gap   `json:"source_gaps"`
	Gaps       []Gap   `json:"gaps"`
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
// With C > 1 channels a line of waveforms.csv holds a window's C x T
// values channel-major (channel 0's T samples, then channel 1's ...),
// waveforms.npy holds the same windows as float32 of shape (N, C, T),
// and import.json lists the channels (name, number, phase, unit, nominal,
// scale, gaps). With one channel no waveforms.npy is written (a stale one
// is removed) and import.json has no channel list.
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
			if len(imp.Channels) > 1 {
				var names []string
				for _, ch := range imp.Channels {
					r := ch.Recording
					c := channelJSON{Name: r.Channel, Number: r.Index, Phase: r.Phase, Unit: r.Unit, Nominal: ch.Nominal, NominalSource: ch.NominalSource,
						Scale: 1 / (math.Sqrt2 * ch.Nominal), SourceGaps: r.Gaps, Gaps: ch.Gaps}
					if c.SourceGaps == nil {
						c.SourceGaps = []Gap{}
					}
					if c.Gaps == nil {
						c.Gaps = []Gap{}
					}
					j.Channels = append(j.Channels, c)
					names = append(names, r.Channel)
				}
				j.Channel = strings.Join(names, ",")
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
	if C := len(imp.Channels); C > 1 {
		files = append(files, file{NPYFile, func(w *bufio.Writer) error {
			x := make([]float32, 0, len(kept)*C*imp.Length)
			for _, row := range kept {
				for _, v := range row {
					x = append(x, float32(v))
				}
			}
			return npy.WriteFloat32(w, []int{len(kept), C, imp.Length}, x)
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
	if len(imp.Channels) <= 1 {
		if err := os.Remove(filepath.Join(dir, NPYFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record: removing a stale %w", err)
		}
	}
	return nil
}
