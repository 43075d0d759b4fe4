package data

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/uaxai/uaxai/internal/atomicfile"
)

// DatasetFile is the file of a generated dataset directory that records
// the generator's settings (see GenerateDir).
const DatasetFile = "dataset.json"

// GenerateOptions are the settings of GenerateDir. There are two modes:
// one split named Split (Paper false), or the paper's splits (Paper true:
// MakePaperSplits). The fields of the other mode must be zero.
type GenerateOptions struct {
	// Generator draws the records; nil: PQD{}, the one-phase generator.
	Generator Generator
	// Format is the layout written: FormatCSV (WriteCSV) or FormatNPY
	// (WriteNPYDir, masks.npy = |D| > DefaultMaskEps); "": FormatCSV for
	// PQD, FormatNPY for any other generator.
	Format string

	Config   Config
	Seed     uint64
	PerClass int // records a class; with Paper: the training pool a class

	// Split is the split's name (part of every record's random stream);
	// without Paper only.
	Split string

	// With Paper only.
	Paper        bool
	ValFraction  float64 // validation fraction of the pool
	TestSplits   int     // independent test splits test-0, test-1, ...
	TestPerClass int     // test records a class and split

	// MaxBytes bounds the memory the records hold before they are
	// written (GenerateBytes); 0: DefaultMaxGenerateBytes. Above it,
	// GenerateDir returns a *MemoryError before generating anything.
	MaxBytes int

	// Progress, when not nil, is called after each split's files are
	// written.
	Progress func(Written)
}

// Written is one split that GenerateDir wrote.
type Written struct {
	Split   string // its name
	Dir     string // the directory of its files
	Records int
}

// GenerateDir generates a dataset and writes it to dir (created if
// missing): without opt.Paper, the split MakeSplitOf(ctx, gen,
// opt.Config, opt.Seed, opt.Split, opt.PerClass, nil) as the files of
// opt.Format in dir; with opt.Paper, the splits of MakePaperSplitsOf, each
// in a directory of its name below dir (dir/train, dir/val, dir/test-0,
// ...). Beside them, dir/dataset.json records the settings that
// regenerate any record: gen.Generate(config, label, rng.New(seed of
// params.jsonl)); for a generator other than PQD also its name ("source")
// and for a format other than CSV the format ("format"), so that the
// one-phase CSV files stay what they were.
//
// Every split is generated before anything is written, so invalid
// settings leave dir untouched. GenerateDir returns the splits it wrote,
// in the order written.
func GenerateDir(ctx context.Context, dir string, opt GenerateOptions) ([]Written, error) {
	if dir == "" {
		return nil, fmt.Errorf("data: no output directory")
	}
	gen := opt.Generator
	if gen == nil {
		gen = PQD{}
	}
	_, one := gen.(PQD)
	format := opt.Format
	if format == "" {
		format = FormatNPY
		if one {
			format = FormatCSV
		}
	}
	if format != FormatCSV && format != FormatNPY {
		return nil, fmt.Errorf("data: format %q (accepted: %s, %s)", format, FormatCSV, FormatNPY)
	}
	// dataset.json: what regenerates any record.
	meta := map[string]any{"generator": "uaxai host/data", "seed": opt.Seed, "per_class": opt.PerClass, "config": opt.Config}
	if !one {
		meta["source"] = gen.Name()
	}
	if format != FormatCSV {
		meta["format"] = format
	}
	if err := checkGenerateBytes(gen, opt); err != nil {
		return nil, err
	}
	var splits []Split
	if opt.Paper {
		if opt.Split != "" {
			return nil, fmt.Errorf("data: split name %q given for the paper's splits, which are named train, val, test-0, ...", opt.Split)
		}
		ps, err := MakePaperSplitsOf(ctx, gen, opt.Config, opt.Seed, opt.PerClass, opt.ValFraction, opt.TestSplits, opt.TestPerClass)
		if err != nil {
			return nil, err
		}
		splits = append([]Split{ps.Train, ps.Val}, ps.Tests...)
		meta["val_fraction"], meta["test_splits"], meta["test_per_class"] = opt.ValFraction, opt.TestSplits, opt.TestPerClass
	} else {
		if opt.ValFraction != 0 || opt.TestSplits != 0 || opt.TestPerClass != 0 {
			return nil, fmt.Errorf("data: validation fraction %v, %d test splits of %d a class: these settings are for the paper's splits only", opt.ValFraction, opt.TestSplits, opt.TestPerClass)
		}
		s, err := MakeSplitOf(ctx, gen, opt.Config, opt.Seed, opt.Split, opt.PerClass, nil)
		if err != nil {
			return nil, err
		}
		splits = []Split{s}
		meta["split"] = opt.Split
	}
	b, err := json.MarshalIndent(meta, "", " ")
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, DatasetFile), append(b, '\n')); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	var out []Written
	for _, s := range splits {
		sdir := dir
		if opt.Paper {
			sdir = filepath.Join(dir, s.Name)
		}
		write := WriteCSV
		if format == FormatNPY {
			write = func(dir string, s Split) error { return WriteNPYDir(dir, s, DefaultMaskEps) }
		}
		if err := write(sdir, s); err != nil {
			return out, err
		}
		w := Written{Split: s.Name, Dir: sdir, Records: len(s.Records)}
		out = append(out, w)
		if opt.Progress != nil {
			opt.Progress(w)
		}
	}
	return out, nil
}
