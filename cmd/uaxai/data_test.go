package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/internal/memtest"
)

// TestDataGenerateFormats: --source pqd --format csv writes the bytes of
// the default; --format npy writes the NPY layout, whose records are the
// CSV ones in float32 with the amplitude masks |d| > 0.001; an unknown
// source or format is refused naming what is accepted.
func TestDataGenerateFormats(t *testing.T) {
	gen := func(args ...string) string {
		t.Helper()
		d := t.TempDir()
		var errb bytes.Buffer
		if code := run(append([]string{"data", "generate", "--per-class", "2", "--seed", "4", "--out", d}, args...), &bytes.Buffer{}, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return d
	}
	def, csv, npyDir := gen(), gen("--source", "pqd", "--format", "csv"), gen("--format", "npy")
	for _, f := range []string{"waveforms.csv", "labels.csv", "disturbance.csv", "event.csv", "params.jsonl", "dataset.json"} {
		a, err := os.ReadFile(filepath.Join(def, f))
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(csv, f)); !bytes.Equal(a, b) {
			t.Errorf("%s: --source pqd --format csv differs from the default", f)
		}
	}
	want, err := data.ReadCSV(def)
	if err != nil {
		t.Fatal(err)
	}
	got, err := data.ReadDir(npyDir, data.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 32 || len(got.Records) != len(want.Records) || got.Channels != 1 || len(got.Classes) != 16 {
		t.Fatalf("npy: %d records, %d channels, %d classes; want 32, 1, 16", len(got.Records), got.Channels, len(got.Classes))
	}
	for i, r := range got.Records {
		w := want.Records[i]
		if r.Label != w.Label || r.Seed != w.Seed || len(r.X) != 640 || len(r.Mask) != 640 {
			t.Fatalf("record %d: label %d seed %d, %d values", i, r.Label, r.Seed, len(r.X))
		}
		for k := range r.X {
			if r.X[k] != float64(float32(w.X[k])) || r.Mask[k] != (w.D[k] > 0.001 || w.D[k] < -0.001) {
				t.Fatalf("record %d sample %d: x %v mask %v, csv x %v d %v", i, k, r.X[k], r.Mask[k], w.X[k], w.D[k])
			}
		}
	}
	for _, c := range []struct{ args []string }{
		{[]string{"--source", "pqd-9phase"}},
		{[]string{"--format", "hdf5"}},
	} {
		var errb bytes.Buffer
		code := run(append([]string{"data", "generate", "--out", t.TempDir()}, c.args...), &bytes.Buffer{}, &errb)
		if code == 0 || !strings.Contains(errb.String(), c.args[1]) || !strings.Contains(errb.String(), "accepted: ") {
			t.Errorf("%v: exit %d, %q", c.args, code, errb.String())
		}
	}
}

// TestDataGenerateMemoryBound (issue 34, item 9): --source pqd-3phase
// --paper --per-class 100000 (40 GiB of records: the old bound counted
// records, not their channels x samples) is refused before anything is
// generated, with the bytes, the bound and --max-memory, which moves the
// bound: a request is accepted at --max-memory of its own bytes
// (data.GenerateBytes) and refused one byte below.
func TestDataGenerateMemoryBound(t *testing.T) {
	d := filepath.Join(t.TempDir(), "out")
	var errb bytes.Buffer
	code := 0
	alloc := memtest.Allocated(func() {
		code = run([]string{"data", "generate", "--source", "pqd-3phase", "--paper", "--per-class", "100000", "--out", d}, &bytes.Buffer{}, &errb)
	})
	msg := errb.String()
	for _, want := range []string{"1306500 records of 3 channel(s) x 640 samples", "above the bound of 8589934592 bytes", "--max-memory 8GiB", "--max-memory SIZE raises"} {
		if code != 1 || !strings.Contains(msg, want) {
			t.Errorf("exit %d, %q: want %q", code, msg, want)
		}
	}
	if alloc > 4<<20 {
		t.Errorf("the refusal allocated %d bytes", alloc)
	}
	if _, err := os.Stat(d); err == nil {
		t.Errorf("%s exists after the refusal", d)
	}
	gen, err := data.GeneratorByName("pqd-3phase")
	if err != nil {
		t.Fatal(err)
	}
	need, _, _ := data.GenerateBytes(data.GenerateOptions{Generator: gen, Config: data.DefaultConfig(), PerClass: 2, Split: "data"})
	for _, c := range []struct {
		max  int
		code int
	}{{need, 0}, {need - 1, 1}} {
		var errb bytes.Buffer
		got := run([]string{"data", "generate", "--source", "pqd-3phase", "--per-class", "2", "--max-memory", strconv.Itoa(c.max), "--out", t.TempDir()}, &bytes.Buffer{}, &errb)
		if got != c.code || c.code == 1 && !strings.Contains(errb.String(), fmt.Sprintf("hold %d bytes", need)) {
			t.Errorf("--max-memory %d for %d bytes: exit %d (want %d), %q", c.max, need, got, c.code, errb.String())
		}
	}
	for _, bad := range []string{"0", "lots", "-5"} {
		var errb bytes.Buffer
		if got := run([]string{"data", "generate", "--max-memory", bad, "--out", t.TempDir()}, &bytes.Buffer{}, &errb); got != 1 || !strings.Contains(errb.String(), "--max-memory") {
			t.Errorf("--max-memory %s: exit %d, %q", bad, got, errb.String())
		}
	}
}
