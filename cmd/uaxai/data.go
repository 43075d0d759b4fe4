package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/recipe"
)

func cmdDataGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("data generate", stdout, stderr)
	perClass := fs.Int("per-class", 100, "records per class (with --paper: the training pool per class, default 900)")
	seed := fs.Uint64("seed", 2026, "dataset seed")
	out := fs.String("out", "", "output directory (required)")
	f0 := fs.Float64("f0", 50, "nominal frequency, Hz")
	noise := fs.Bool("noise", true, "add white Gaussian noise (SNR 30-50 dB)")
	split := fs.String("split", "data", "split name (part of every record's random stream)")
	paper := fs.Bool("paper", false, "write the splits that recipes and train use: OUT/train, OUT/val, OUT/test-0, ...")
	valFrac := fs.Float64("val", 0.1, "with --paper: validation fraction of the pool")
	testSplits := fs.Int("test-splits", 5, "with --paper: independent test splits")
	testPerClass := fs.Int("test-per-class", 100, "with --paper: test records per class and split")
	source := fs.String("source", "pqd", "generator: "+sourceNames())
	format := fs.String("format", "", "files written: csv (waveforms.csv, labels.csv, ...) or npy (waveforms.npy, labels.npy, masks.npy, classes.txt, ...); default csv for pqd, npy for the others")
	maxMemory := fs.String("max-memory", recipe.FormatSize(data.DefaultMaxGenerateBytes), "the most memory the records may hold before they are written (every split is generated first): records x channels x samples x 17 bytes (float64 waveform and disturbance, event mask) and a little a record; a size such as 8GiB or 512MiB")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("data generate: --out DIR is required")
	}
	for _, f := range []string{"val", "test-splits", "test-per-class", "split"} {
		if isSet(fs, f) && *paper == (f == "split") {
			if *paper {
				return fmt.Errorf("data generate: --split does not go with --paper, which names its splits train, val, test-0, ...")
			}
			return fmt.Errorf("data generate: --%s needs --paper", f)
		}
	}
	if *paper && !isSet(fs, "per-class") {
		*perClass = 900
	}
	if *paper && !(*valFrac >= 0 && *valFrac < 1) {
		return fmt.Errorf("data generate: --val %v: want a fraction in [0, 1)", *valFrac)
	}
	gen, err := data.GeneratorByName(*source)
	if err != nil {
		return fmt.Errorf("data generate: --source: %w", err)
	}
	if *format != "" && *format != data.FormatCSV && *format != data.FormatNPY {
		return fmt.Errorf("data generate: --format %q (accepted: csv, npy)", *format)
	}
	maxBytes, err := recipe.ParseSize(*maxMemory)
	if err == nil && maxBytes < 1 {
		err = fmt.Errorf("%q is not positive", *maxMemory)
	}
	if err != nil {
		return fmt.Errorf("data generate: --max-memory: %w", err)
	}
	cfg := data.DefaultConfig()
	cfg.F0, cfg.Noise = *f0, *noise
	opt := data.GenerateOptions{Generator: gen, Format: *format, Config: cfg, Seed: *seed, PerClass: *perClass, MaxBytes: int(maxBytes), Progress: func(w data.Written) {
		fmt.Fprintf(stdout, "wrote %d records of split %q (seed %d) to %s\n", w.Records, w.Split, *seed, w.Dir)
	}}
	if *paper {
		opt.Paper, opt.ValFraction, opt.TestSplits, opt.TestPerClass = true, *valFrac, *testSplits, *testPerClass
	} else {
		opt.Split = *split
	}
	if _, err := data.GenerateDir(ctx, *out, opt); err != nil {
		if me := (*data.MemoryError)(nil); errors.As(err, &me) {
			return fmt.Errorf("data generate: %w (accepted: at most --max-memory %s; fewer records (--per-class, --test-per-class, --test-splits), or --max-memory SIZE raises the bound)", err, *maxMemory)
		}
		return fmt.Errorf("data generate: %w", err)
	}
	return nil
}

// sourceNames lists the names of data.Generators: "pqd|pqd-3phase".
func sourceNames() string {
	var names []string
	for _, g := range data.Generators() {
		names = append(names, g.Name())
	}
	return strings.Join(names, "|")
}
