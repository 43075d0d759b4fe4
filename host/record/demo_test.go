package record

import (
	"bytes"
	"context"
	"flag"
	"maps"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/recordings from record.DemoFiles")

func recordingsDir(t *testing.T) string {
	return filepath.Join(golden.RepoRoot(t), "testdata", "recordings")
}

// TestShippedRecordings checks that the committed demonstration files are
// exactly what DemoFiles and ThreePhaseFiles write (go test -run
// ShippedRecordings -update ./host/record rewrites them).
func TestShippedRecordings(t *testing.T) {
	files, err := DemoFiles()
	if err != nil {
		t.Fatal(err)
	}
	three, err := ThreePhaseFiles()
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(files, three)
	quirks, err := QuirkFiles()
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(files, quirks)
	dir := recordingsDir(t)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(dir, name)
		if *update {
			if err := os.WriteFile(path, files[name], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run ShippedRecordings -update ./host/record writes it)", err)
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("%s differs from DemoFiles (go test -run ShippedRecordings -update ./host/record rewrites it)", path)
		}
	}
}

// TestShippedRecordingsAgree reads the four shipped files and checks that
// each gives the synthesized signal to within its quantisation, the
// stated rate, start and nominal, and the same windows after import.
func TestShippedRecordingsAgree(t *testing.T) {
	x := Synthesize(SynthSeed)
	dir := recordingsDir(t)
	for _, c := range []struct {
		name string
		opt  Options
		tol  float64 // the format's quantisation step / 2
	}{
		{"demo.cfg", Options{}, 0.005},
		{"demo.cff", Options{}, 0.0005},
		{"demo.wav", Options{FullScale: 400}, 400.0 / 32768 / 2},
		{"demo.csv", Options{}, 0.005},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, err := Read(filepath.Join(dir, c.name), c.opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Samples) != len(x) || rec.Rate() != SynthRate {
				t.Fatalf("%d samples at %g Hz, want %d at %d", len(rec.Samples), rec.Rate(), len(x), SynthRate)
			}
			e := 0.0
			for i := range x {
				e = math.Max(e, math.Abs(rec.Samples[i]-x[i]))
			}
			if e > c.tol*(1+1e-9) {
				t.Errorf("max |read - synthesized| = %g V, want <= %g", e, c.tol)
			}
			if math.Abs(rec.EstFreq-SynthFreq) > 0.05 {
				t.Errorf("estimated frequency %g Hz, want 50 ± 0.05", rec.EstFreq)
			}
			imp, err := Import(context.Background(), rec, ImportOptions{Nominal: SynthNominal})
			if err != nil {
				t.Fatal(err)
			}
			if len(imp.Signal) != 3200 || len(imp.Kept()) != 5 {
				t.Errorf("%d samples, %d windows, want 3200 and 5", len(imp.Signal), len(imp.Kept()))
			}
			t.Logf("%s: %s, warnings %q", c.name, rec.Format, rec.Warnings)
		})
	}
}
