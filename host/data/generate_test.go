package data

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk/rng"
)

// readDatasetJSON decodes dir/dataset.json.
func readDatasetJSON(t *testing.T, dir string) (meta map[string]json.RawMessage, cfg Config) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, DatasetFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(meta["config"], &cfg); err != nil {
		t.Fatal(err)
	}
	return meta, cfg
}

// TestGenerateDirSplit: one split's files read back as the in-memory
// split, and dataset.json plus a record's seed regenerate the record.
func TestGenerateDirSplit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.F0, cfg.Fs = 60, 3840
	dir := filepath.Join(t.TempDir(), "new", "dir")
	var progress []Written
	got, err := GenerateDir(t.Context(), dir, GenerateOptions{Config: cfg, Seed: 17, PerClass: 2, Split: "mine",
		Progress: func(w Written) { progress = append(progress, w) }})
	if err != nil {
		t.Fatal(err)
	}
	want, err := MakeSplit(t.Context(), cfg, 17, "mine", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	written := []Written{{Split: "mine", Dir: dir, Records: len(want.Records)}}
	if !reflect.DeepEqual(got, written) || !reflect.DeepEqual(progress, written) {
		t.Errorf("returned %+v, reported %+v; want %+v", got, progress, written)
	}
	back, err := ReadCSV(dir)
	if err != nil {
		t.Fatal(err)
	}
	sameSplit(t, "files vs MakeSplit", want, back)

	meta, mcfg := readDatasetJSON(t, dir)
	if !reflect.DeepEqual(mcfg, cfg) {
		t.Errorf("dataset.json config %+v, want %+v", mcfg, cfg)
	}
	var seed uint64
	var split string
	if json.Unmarshal(meta["seed"], &seed) != nil || seed != 17 || json.Unmarshal(meta["split"], &split) != nil || split != "mine" {
		t.Errorf("dataset.json seed %s split %s, want 17 and \"mine\"", meta["seed"], meta["split"])
	}
	for _, k := range []string{"val_fraction", "test_splits", "test_per_class"} {
		if _, ok := meta[k]; ok {
			t.Errorf("dataset.json of one split has %q", k)
		}
	}
	// Any record is Generate(config of dataset.json, its label, its seed).
	r := back.Records[len(back.Records)-1]
	g := Generate(mcfg, r.Label, rng.New(r.Seed))
	g.Seed = r.Seed
	if !sameRecord(g, r) {
		t.Error("the last record is not regenerated from dataset.json and its seed")
	}
}

// TestGenerateDirPaper: the paper's splits land in directories of their
// names and read back as MakePaperSplits's splits.
func TestGenerateDirPaper(t *testing.T) {
	cfg := DefaultConfig()
	dir := t.TempDir()
	opt := GenerateOptions{Config: cfg, Seed: 4, PerClass: 5, Paper: true, ValFraction: 0.2, TestSplits: 2, TestPerClass: 1}
	got, err := GenerateDir(t.Context(), dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := MakePaperSplits(t.Context(), cfg, 4, 5, 0.2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]Split{ps.Train, ps.Val}, ps.Tests...)
	if len(got) != len(want) {
		t.Fatalf("wrote %d splits, want %d: %+v", len(got), len(want), got)
	}
	for i, s := range want {
		w := Written{Split: s.Name, Dir: filepath.Join(dir, s.Name), Records: len(s.Records)}
		if got[i] != w {
			t.Errorf("split %d: %+v, want %+v", i, got[i], w)
		}
		back, err := ReadCSV(w.Dir)
		if err != nil {
			t.Fatal(err)
		}
		sameSplit(t, s.Name, s, back)
	}
	if _, err := os.Stat(filepath.Join(dir, WaveformsFile)); err == nil {
		t.Error("paper mode wrote waveforms.csv at the top level")
	}
	meta, _ := readDatasetJSON(t, dir)
	var val float64
	var pool, tests, perClass int
	if json.Unmarshal(meta["per_class"], &pool) != nil || json.Unmarshal(meta["val_fraction"], &val) != nil ||
		json.Unmarshal(meta["test_splits"], &tests) != nil || json.Unmarshal(meta["test_per_class"], &perClass) != nil {
		t.Fatalf("dataset.json lacks the paper settings: %v", meta)
	}
	if pool != opt.PerClass || val != opt.ValFraction || tests != opt.TestSplits || perClass != opt.TestPerClass {
		t.Errorf("dataset.json: pool %d a class, val %v, %d test splits of %d; want %d, %v, %d, %d",
			pool, val, tests, perClass, opt.PerClass, opt.ValFraction, opt.TestSplits, opt.TestPerClass)
	}
	if _, ok := meta["split"]; ok {
		t.Error("dataset.json of the paper's splits has \"split\"")
	}
}

// TestGenerateDirRefuses: settings that cannot be used, or a cancelled
// context, give an error and leave the directory unwritten.
func TestGenerateDirRefuses(t *testing.T) {
	bad := DefaultConfig()
	bad.F0 = -1
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	ok := GenerateOptions{Config: DefaultConfig(), Seed: 1, PerClass: 1, Split: "s"}
	for _, c := range []struct {
		name string
		ctx  context.Context
		opt  func(o *GenerateOptions)
		want string
	}{
		{"config", t.Context(), func(o *GenerateOptions) { o.Config = bad }, "F0 = -1"},
		{"per-class", t.Context(), func(o *GenerateOptions) { o.PerClass = 0 }, "perClass = 0"},
		{"no name", t.Context(), func(o *GenerateOptions) { o.Split = "" }, "empty split name"},
		{"split with paper", t.Context(), func(o *GenerateOptions) { o.Paper = true }, `split name "s"`},
		{"paper settings without paper", t.Context(), func(o *GenerateOptions) { o.TestSplits = 2 }, "paper's splits only"},
		{"paper val", t.Context(), func(o *GenerateOptions) { o.Split, o.Paper, o.ValFraction = "", true, 1 }, "valFrac = 1"},
		{"cancelled", cancelled, func(o *GenerateOptions) {}, context.Canceled.Error()},
		{"format", t.Context(), func(o *GenerateOptions) { o.Format = "hdf5" }, `format "hdf5" (accepted: csv, npy)`},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		o := ok
		c.opt(&o)
		w, err := GenerateDir(c.ctx, dir, o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
		if c.name == "cancelled" && !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v does not wrap context.Canceled", err)
		}
		if _, serr := os.Stat(dir); w != nil || serr == nil {
			t.Errorf("%s: wrote %v; directory exists: %v", c.name, w, serr == nil)
		}
	}
	if _, err := GenerateDir(t.Context(), "", ok); err == nil {
		t.Error("no directory accepted")
	}
}

// TestGenerateDirWriteError: a directory that cannot be made gives an
// error naming it.
func TestGenerateDirWriteError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := GenerateDir(t.Context(), filepath.Join(file, "sub"), GenerateOptions{Config: DefaultConfig(), Seed: 1, PerClass: 1, Split: "s"})
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("%v: want an error naming %s", err, file)
	}
}

// TestGenerateDirGenerator: the splits of another generator are written
// as NPY files by default, which read back as MakePaperSplitsOf's splits
// (in float32, with the amplitude masks); dataset.json names the
// generator and the format; the one-phase dataset.json keeps its keys, and
// Format npy writes the one-phase records as NPY.
func TestGenerateDirGenerator(t *testing.T) {
	dir := t.TempDir()
	gen := fakeGen{2}
	opt := GenerateOptions{Generator: gen, Config: DefaultConfig(), Seed: 9, PerClass: 3, Paper: true, ValFraction: 0.34, TestSplits: 1, TestPerClass: 1}
	w, err := GenerateDir(t.Context(), dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := MakePaperSplitsOf(t.Context(), gen, opt.Config, 9, 3, 0.34, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 3 {
		t.Fatalf("wrote %+v", w)
	}
	for i, s := range []Split{ps.Train, ps.Val, ps.Tests[0]} {
		if w[i].Dir != filepath.Join(dir, s.Name) || !exists(filepath.Join(w[i].Dir, WaveformsNPY)) || exists(filepath.Join(w[i].Dir, WaveformsFile)) {
			t.Fatalf("split %s: wrote %+v", s.Name, w[i])
		}
		got, err := ReadDir(w[i].Dir, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sameSplit(t, s.Name, asNPY(s, DefaultMaskEps), got)
		sameMeta(t, s.Name, got, 2, gen.Classes())
	}
	meta, _ := readDatasetJSON(t, dir)
	if string(meta["source"]) != `"fake2"` || string(meta["format"]) != `"npy"` {
		t.Errorf("dataset.json source %s format %s, want \"fake2\" and \"npy\"", meta["source"], meta["format"])
	}

	one := t.TempDir()
	if _, err := GenerateDir(t.Context(), one, GenerateOptions{Config: DefaultConfig(), Seed: 1, PerClass: 1, Split: "s"}); err != nil {
		t.Fatal(err)
	}
	meta, _ = readDatasetJSON(t, one)
	var keys []string
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"config", "generator", "per_class", "seed", "split"}; !slices.Equal(keys, want) {
		t.Errorf("one-phase dataset.json keys %q, want %q", keys, want)
	}
	npyOne := t.TempDir()
	if _, err := GenerateDir(t.Context(), npyOne, GenerateOptions{Format: FormatNPY, Config: DefaultConfig(), Seed: 1, PerClass: 1, Split: "s"}); err != nil {
		t.Fatal(err)
	}
	want, err := MakeSplit(t.Context(), DefaultConfig(), 1, "s", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadDir(npyOne, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameSplit(t, "one-phase npy", asNPY(want, DefaultMaskEps), got)
	sameMeta(t, "one-phase npy", got, 1, ClassNames[:])
}

// TestGenerators: the table names each generator once, PQD first, and
// GeneratorByName finds each and refuses an unknown name listing them.
func TestGenerators(t *testing.T) {
	gs := Generators()
	if _, ok := gs[0].(PQD); !ok {
		t.Errorf("first generator %T, want PQD", gs[0])
	}
	seen := map[string]bool{}
	for _, g := range gs {
		if seen[g.Name()] {
			t.Errorf("%q twice", g.Name())
		}
		seen[g.Name()] = true
		if got, err := GeneratorByName(g.Name()); err != nil || got.Name() != g.Name() {
			t.Errorf("%q: %v, %v", g.Name(), got, err)
		}
	}
	_, err := GeneratorByName("pqd-9phase")
	wantErr(t, "unknown", err, `unknown generator "pqd-9phase" (accepted: pqd`)
}
