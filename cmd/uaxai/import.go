package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/host/record"
	"github.com/uaxai/uaxai/internal/atomicfile"
)

// importDetails is the text of uaxai data import -h after the usage.
const importDetails = `RECORDING is a COMTRADE .cfg (with its .dat) or .cff, a .wav or a .csv (time,value).
DIR receives waveforms.csv (the windows, for uaxai explain --input), windows.csv,
import.json (and labels.csv with --label); with several RECORDINGs, DIR/<name of RECORDING>.
Several channels (--channel repeated, or --phases A,B,C: the COMTRADE voltage channels
of phases A, B, C in that order; 1,2,3, R,S,T and L1,L2,L3 name the same phases) make
windows of C x T values: a waveforms.csv line is channel 0's T samples, then channel 1's ...,
and waveforms.npy holds them as float32 (N, C, T). Every channel is divided by sqrt(2) x
its nominal (--nominal for all, else each channel's own; for phases the phase-to-neutral
value), and a window with a gap in any channel is dropped for all.`

func cmdDataImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("data import", stdout, stderr)
	out := fs.String("out", "", "output directory (with --raw: the CSV file)")
	var channels listFlag
	fs.Var(&channels, "channel", "COMTRADE: an analog channel's ch_id or number, as 2 or A2 (digital channels are refused); WAV: a channel number 1..; CSV: a value column's name or number 1.. (default: COMTRADE the first voltage channel by unit or name, said; WAV and CSV the first); repeated: several channels, in that order")
	phases := fs.String("phases", "", "COMTRADE: the voltage channels (unit V or kV) of these phases, comma-separated, in this order, e.g. A,B,C (also 1,2,3, R,S,T, L1,L2,L3)")
	nominal := fs.String("nominal", "", "nominal RMS value in the channel's unit, for every channel (three phases: phase-to-neutral), or auto: each channel's median cycle RMS before the trigger (else of its first 5 cycles); windows are x/(sqrt2*V) (default: each channel's, from the file; a line-to-line rating of a phase-to-neutral channel is divided by sqrt3, said)")
	rate := fs.Float64("rate", 0, "target rate, Hz (default: the rate at which a window holds 10 cycles of the system frequency, 50 or 60 Hz by the zero crossings: 3200 Hz, or 3840 Hz at 60 Hz)")
	window := fs.Int("window", record.DefaultWindow, "window length, samples")
	hop := fs.Int("hop", 0, "samples between window starts (default: the window length)")
	label := fs.Int("label", -1, "class 0..15 of every window: also write labels.csv (a recipe's files split)")
	inRate := fs.Float64("input-rate", 0, "rate of a one-column CSV, Hz")
	fullScale := fs.Float64("full-scale", 0, "WAV: the value of full scale (default 1)")
	primary := fs.Bool("primary", false, "COMTRADE: convert secondary values (PS = S) to primary")
	encoding := fs.String("encoding", "", "text encoding of the cfg/CSV: utf-8, latin1, gbk, cp1251 (default: detect)")
	raw := fs.Bool("raw", false, "write the channel in engineering units at the file's own rate to --out F.csv, nothing else")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || *out == "" {
		return fs.usageError("a recording and --out are required")
	}
	if *raw && len(pos) != 1 {
		return fmt.Errorf("data import: --raw writes one recording, have %d", len(pos))
	}
	if *label < -1 || *label > 15 {
		return fmt.Errorf("data import: --label %d, want a class 0..15", *label)
	}
	if *phases != "" && len(channels) > 0 {
		return fmt.Errorf("data import: --phases %s and --channel %s both choose the channels; give one of them", *phases, strings.Join(channels, " --channel "))
	}
	var phaseList []string
	if *phases != "" {
		for _, p := range strings.Split(*phases, ",") {
			if p = strings.TrimSpace(p); p == "" {
				return fmt.Errorf("data import: --phases %q: an empty phase (accepted: phase ids separated by commas, e.g. A,B,C)", *phases)
			}
			phaseList = append(phaseList, p)
		}
	}
	if *raw && (len(channels) > 1 || len(phaseList) > 1) {
		return fmt.Errorf("data import: --raw writes one channel; choose one with --channel")
	}
	opt := record.Options{Rate: *inRate, FullScale: *fullScale, Primary: *primary, Encoding: *encoding}
	if len(channels) == 1 {
		opt.Channel = channels[0]
	}
	iopt := record.ImportOptions{Rate: *rate, Window: *window, Hop: *hop, Label: *label, Labeled: *label >= 0}
	switch *nominal {
	case "":
	case "auto":
		iopt.NominalAuto = true
	default:
		v, err := strconv.ParseFloat(*nominal, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("data import: --nominal %q (accepted: the nominal RMS value > 0, e.g. 230, or auto)", *nominal)
		}
		iopt.Nominal = v
	}
	seen := map[string]bool{}
	for _, p := range pos {
		if err := ctx.Err(); err != nil {
			return err
		}
		sels := []string(channels)
		if len(sels) == 1 {
			sels = nil // opt.Channel
		}
		if len(phaseList) > 0 {
			if sels, err = record.PhaseChannels(p, opt, phaseList); err != nil {
				return fmt.Errorf("data import: --phases %s: %w", *phases, err)
			}
		}
		recs, err := record.ReadChannels(p, opt, sels)
		if err != nil {
			return fmt.Errorf("data import: %w", err)
		}
		rec := recs[0]
		for _, w := range record.Dedupe(rec.Warnings) {
			fmt.Fprintf(stderr, "uaxai: warning: %s\n", w)
		}
		if len(channels) == 0 && len(phaseList) == 0 {
			// the default channel is often a healthy phase: show them all
			if chans, suggest, err := record.ChannelSummary(p, opt); err == nil && (len(chans) > 1 || suggest != "") {
				fmt.Fprintf(stderr, "uaxai: %s: %s; channel A%d %q taken (choose with --channel)\n", p, record.FormatChannelSummary(chans, suggest), rec.Index, rec.Channel)
			}
		}
		if *raw {
			f, err := atomicfile.Temp(filepath.Dir(*out), filepath.Base(*out), func(w *bufio.Writer) error { return record.WriteRawCSV(w, rec) })
			if err == nil {
				err = os.Rename(f, *out)
			}
			if err != nil {
				return fmt.Errorf("data import: %w", err)
			}
			fmt.Fprintf(stdout, "%s: channel %s (%s), %d samples at %s -> %s (raw)\n", p, rec.Channel, rec.Format, len(rec.Samples), rates(rec), *out)
			continue
		}
		imp, err := record.ImportChannels(ctx, recs, iopt)
		if err != nil {
			return fmt.Errorf("data import: %w", err)
		}
		for _, w := range record.Dedupe(imp.Warnings) {
			fmt.Fprintf(stderr, "uaxai: warning: %s\n", w)
		}
		dir := *out
		if len(pos) > 1 {
			dir = filepath.Join(*out, strings.ReplaceAll(filepath.Base(p), ".", "_"))
			if seen[dir] {
				return fmt.Errorf("data import: two recordings named %s; import them one at a time", filepath.Base(p))
			}
			seen[dir] = true
		}
		if err := record.WriteDir(dir, imp); err != nil {
			return fmt.Errorf("data import: %w", err)
		}
		kept := len(imp.Kept())
		what := "channel " + rec.Channel
		if len(recs) > 1 {
			var names []string
			for _, r := range recs {
				names = append(names, r.Channel)
			}
			what = fmt.Sprintf("%d channels %s", len(recs), strings.Join(names, ","))
		}
		fmt.Fprintf(stdout, "%s: %s (%s), %d samples at %s -> %g Hz (%s), nominal %s (%s), line %.6g Hz; %d windows kept, %d dropped -> %s\n",
			p, what, rec.Format, len(rec.Samples), rates(rec), imp.Rate, ratios(imp), strings.TrimSpace(fmt.Sprintf("%g %s", imp.Nominal, rec.Unit)), imp.NominalSource, rec.EstFreq, kept, len(imp.Windows)-kept, dir)
	}
	return nil
}

// rates describes the rate segments of rec: each rate, or with more than
// four segments their count and range.
func rates(rec *record.Recording) string {
	if n := len(rec.Segments); n > 4 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, g := range rec.Segments {
			lo, hi = math.Min(lo, g.Rate), math.Max(hi, g.Rate)
		}
		return fmt.Sprintf("%d rate segments of %g..%g Hz", n, lo, hi)
	}
	var s []string
	for _, g := range rec.Segments {
		s = append(s, fmt.Sprintf("%g Hz", g.Rate))
	}
	return strings.Join(s, " + ")
}

// ratios describes the resampling ratios of imp.
func ratios(imp *record.Imported) string {
	var s []string
	for _, r := range imp.Ratios {
		s = append(s, fmt.Sprintf("%d/%d", r.Up, r.Down))
	}
	return strings.Join(s, ", ")
}
