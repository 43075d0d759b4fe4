package data

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzReadWaveforms: no file panics the reader; an accepted file has
// rows of one length, every value finite as a float32.
func FuzzReadWaveforms(f *testing.F) {
	f.Add([]byte("1,2,3\n4,5,6\n"))
	f.Add([]byte("1e39,0\n"))
	f.Add([]byte("\xef\xbb\xbf0.5, -0.25\r\n0x1p-3,1_0\n\n"))
	f.Add([]byte(",\n"))
	dir := f.TempDir()
	path := filepath.Join(dir, "w.csv")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := ReadWaveforms(path, 0)
		if err != nil {
			return
		}
		for i, r := range rows {
			if len(r) != len(rows[0]) {
				t.Fatalf("row %d has %d values, row 0 %d", i, len(r), len(rows[0]))
			}
			for j, v := range r {
				if x := float64(float32(v)); math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("row %d value %d is %v as a float32", i, j, v)
				}
			}
		}
	})
}

// FuzzReadCSV: a dataset directory with any one of its files replaced by
// the fuzzer's bytes never panics the reader; what it accepts has one
// label in range per record and rows of the waveforms' length.
func FuzzReadCSV(f *testing.F) {
	src, err := MakeSplit(f.Context(), DefaultConfig(), 1, "fz", 1, []int{0, 5, 9})
	if err != nil {
		f.Fatal(err)
	}
	base := f.TempDir()
	if err := WriteCSV(base, src); err != nil {
		f.Fatal(err)
	}
	files := []string{WaveformsFile, LabelsFile, DisturbanceFile, EventFile, ParamsFile}
	orig := map[string][]byte{}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(base, name))
		if err != nil {
			f.Fatal(err)
		}
		orig[name] = b
		f.Add(uint8(len(orig)-1), b)
	}
	f.Add(uint8(1), []byte("0\n5\n"))
	f.Add(uint8(4), []byte("{\"index\":0,\"label\":0,\"class\":\"normal\",\"seed\":1,\"snr_db\":1e999,\"params\":{}}\n"))
	dir := f.TempDir()
	for _, name := range files {
		if err := os.WriteFile(filepath.Join(dir, name), orig[name], 0o644); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		// Only the fuzzed file is written, and restored afterwards.
		name := files[int(which)%len(files)]
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := os.WriteFile(filepath.Join(dir, name), orig[name], 0o644); err != nil {
				t.Fatal(err)
			}
		}()
		s, err := ReadCSV(dir)
		if err != nil {
			return
		}
		n := len(s.Records[0].X)
		for i, rec := range s.Records {
			if rec.Label < 0 || rec.Label >= len(ClassNames) || len(rec.X) != n {
				t.Fatalf("record %d: label %d, %d values (want 0..%d and %d)", i, rec.Label, len(rec.X), len(ClassNames)-1, n)
			}
			if rec.D != nil && len(rec.D) != n || rec.Event != nil && len(rec.Event) != n {
				t.Fatalf("record %d: disturbance %d, event %d values, want %d", i, len(rec.D), len(rec.Event), n)
			}
		}
		if int(which)%len(files) == 0 && reflect.DeepEqual(b, orig[WaveformsFile]) && len(s.Records) != len(src.Records) {
			t.Fatalf("the unchanged directory reads %d records, want %d", len(s.Records), len(src.Records))
		}
	})
}

// FuzzReadNPYDir: an NPY dataset directory with any one of its files
// replaced by the fuzzer's bytes never panics ReadDir; what it accepts has
// records of C x T values (X, and D, Event, Mask when present), finite as
// float32, and labels indexing its classes.
func FuzzReadNPYDir(f *testing.F) {
	const c, tt = 2, 4
	src := Split{Name: "fz", Channels: c, Classes: []string{"a", "b"}}
	for i := range 3 {
		r := Record{Label: i % 2, SNRdB: math.NaN(), X: make([]float64, c*tt), D: make([]float64, c*tt), Event: make([]bool, c*tt)}
		for k := range r.X {
			r.X[k] = float64(i*k) / 8
			r.D[k] = float64(k%3) / 100
			r.Event[k] = k%3 == 0
		}
		src.Records = append(src.Records, r)
	}
	base := f.TempDir()
	if err := WriteNPYDir(base, src, DefaultMaskEps); err != nil {
		f.Fatal(err)
	}
	files := []string{WaveformsNPY, LabelsNPY, MasksNPY, DisturbanceNPY, EventNPY, ClassesFile, ParamsFile}
	orig := map[string][]byte{}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(base, name))
		if err != nil {
			f.Fatal(err)
		}
		orig[name] = b
		f.Add(uint8(len(orig)-1), b)
	}
	dir := f.TempDir()
	for _, name := range files {
		if err := os.WriteFile(filepath.Join(dir, name), orig[name], 0o644); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		name := files[int(which)%len(files)]
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := os.WriteFile(filepath.Join(dir, name), orig[name], 0o644); err != nil {
				t.Fatal(err)
			}
		}()
		s, err := ReadDir(dir, ReadOptions{})
		if err != nil {
			return
		}
		n := len(s.Records[0].X)
		if s.Channels < 1 || n%s.Channels != 0 || len(s.Classes) == 0 {
			t.Fatalf("%d channels, %d values, %d classes", s.Channels, n, len(s.Classes))
		}
		for i, rec := range s.Records {
			if rec.Label < 0 || rec.Label >= len(s.Classes) || len(rec.X) != n {
				t.Fatalf("record %d: label %d, %d values (want 0..%d and %d)", i, rec.Label, len(rec.X), len(s.Classes)-1, n)
			}
			if rec.D != nil && len(rec.D) != n || rec.Event != nil && len(rec.Event) != n || rec.Mask != nil && len(rec.Mask) != n {
				t.Fatalf("record %d: disturbance %d, event %d, mask %d values, want %d", i, len(rec.D), len(rec.Event), len(rec.Mask), n)
			}
			for k, v := range rec.X {
				if x := float64(float32(v)); math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("record %d value %d is %v as a float32", i, k, v)
				}
			}
		}
	})
}
