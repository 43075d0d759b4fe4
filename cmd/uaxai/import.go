package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/uaxai/uaxai/host/record"
	"github.com/uaxai/uaxai/internal/atomicfile"
)

// importDetails is the text of uaxai data import -h after the usage.
const importDetails = `RECORDING is a COMTRADE .cfg (with its .dat) or .cff, a .wav or a .csv (time,value).
DIR receives waveforms.csv (the windows, for uaxai explain --input), windows.csv,
import.json (and labels.csv with --label); with several RECORDINGs, DIR/<name of RECORDING>.`

func cmdDataImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("data import", stdout, stderr)
	out := fs.String("out", "", "output directory (with --raw: the CSV file)")
	channel := fs.String("channel", "", "COMTRADE: an analog channel's ch_id or number, as 2 or A2 (digital channels are refused); WAV: a channel number 1..; CSV: a value column's name or number 1.. (default: the first)")
	nominal := fs.Float64("nominal", 0, "nominal RMS value in the channel's unit; windows are x/(sqrt2*V) (default: the file's)")
	rate := fs.Float64("rate", record.DefaultRate, "target rate, Hz")
	window := fs.Int("window", record.DefaultWindow, "window length, samples")
	hop := fs.Int("hop", 0, "samples between window starts (default: the window length)")
	label := fs.Int("label", -1, "class 0..15 of every window: also write labels.csv (a recipe's files split)")
	inRate := fs.Float64("input-rate", 0, "rate of a one-column CSV, Hz")
	fullScale := fs.Float64("full-scale", 0, "WAV: the value of full scale (default 1)")
	primary := fs.Bool("primary", false, "COMTRADE: convert secondary values (PS = S) to primary")
	encoding := fs.String("encoding", "", "text encoding of the cfg/CSV: utf-8, latin1, gbk (default: detect)")
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
	opt := record.Options{Channel: *channel, Rate: *inRate, FullScale: *fullScale, Primary: *primary, Encoding: *encoding}
	iopt := record.ImportOptions{Rate: *rate, Nominal: *nominal, Window: *window, Hop: *hop, Label: *label, Labeled: *label >= 0}
	seen := map[string]bool{}
	for _, p := range pos {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := record.Read(p, opt)
		if err != nil {
			return fmt.Errorf("data import: %w", err)
		}
		for _, w := range rec.Warnings {
			fmt.Fprintf(stderr, "uaxai: warning: %s\n", w)
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
		imp, err := record.Import(ctx, rec, iopt)
		if err != nil {
			return fmt.Errorf("data import: %w", err)
		}
		for _, w := range imp.Warnings {
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
		fmt.Fprintf(stdout, "%s: channel %s (%s), %d samples at %s -> %g Hz (%s), nominal %s (%s), line %.3f Hz; %d windows kept, %d dropped -> %s\n",
			p, rec.Channel, rec.Format, len(rec.Samples), rates(rec), imp.Rate, ratios(imp), strings.TrimSpace(fmt.Sprintf("%g %s", imp.Nominal, rec.Unit)), imp.NominalSource, rec.EstFreq, kept, len(imp.Windows)-kept, dir)
	}
	return nil
}

// rates describes the rate segments of rec.
func rates(rec *record.Recording) string {
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
