package record

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"
)

// checkResult is what every fuzz target asserts of a successful read: no
// sample outside the gaps is NaN or infinite, the segments cover the
// samples at rates > 0, and import either works or fails with an error.
func checkResult(t *testing.T, rec *Recording, err error) {
	if err != nil {
		var e *Error
		_ = errors.As(err, &e)
		if err.Error() == "" {
			t.Fatal("empty error")
		}
		return
	}
	inGap := make([]bool, len(rec.Samples))
	for _, g := range rec.Gaps {
		for i := g.Start; i < g.End; i++ {
			inGap[i] = true
		}
	}
	for i, v := range rec.Samples {
		if math.IsInf(v, 0) || (math.IsNaN(v) && !inGap[i]) {
			t.Fatalf("sample %d = %v outside a gap", i, v)
		}
	}
	end := 0
	for _, s := range rec.Segments {
		if s.Start != end || s.End <= s.Start || !(s.Rate > 0) {
			t.Fatalf("segments %v", rec.Segments)
		}
		end = s.End
	}
	if end != len(rec.Samples) {
		t.Fatalf("segments end at %d, %d samples", end, len(rec.Samples))
	}
	// Import at the default MaxRatio: MaxGrowth bounds the output (a
	// slow file is refused before its output is made).
	if len(rec.Samples) <= 20000 {
		imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: DefaultRate, Window: 16})
		if err == nil && len(imp.Signal) > MaxGrowth*len(rec.Samples)+len(rec.Segments) {
			t.Fatalf("import made %d samples of %d, more than %d times", len(imp.Signal), len(rec.Samples), MaxGrowth)
		}
	}
}

func FuzzReadCOMTRADE(f *testing.F) {
	f.Add([]byte(goodCfg), []byte(goodDat))
	for _, ft := range []string{ASCII, Binary, Binary32, Float32} {
		for _, rev := range []int{1991, 1999, 2013} {
			w := testWriter(rev, ft, []Segment{{Start: 0, End: 6, Rate: 4000}, {Start: 6, End: 10, Rate: 1000}}, false)
			w.Digitals = w.Digitals[:3]
			for i := range w.Digitals {
				w.Digitals[i].States = w.Digitals[i].States[:10]
			}
			for i := range w.Analogs {
				w.Analogs[i].Samples = w.Analogs[i].Samples[:10]
			}
			cfg, dat, err := w.Encode()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(cfg, dat)
			if rev == 2013 {
				cff, err := w.EncodeCFF()
				if err != nil {
					f.Fatal(err)
				}
				f.Add(cff, []byte{})
			}
		}
	}
	// A DAT byte count near 2^63 overflowed an offset and panicked
	// (TestCFFCountOverflow).
	for _, ft := range []string{ASCII, Binary32} {
		s, _ := overflowingCFF(f, ft, "9223372036854775807")
		f.Add([]byte(s), []byte{})
	}
	f.Fuzz(func(t *testing.T, cfg, dat []byte) {
		rec, err := ReadCOMTRADE("f.cfg", cfg, "f.dat", dat, Options{})
		checkResult(t, rec, err)
		rec, err = ReadCFF("f.cff", cfg, Options{Channel: "2"})
		checkResult(t, rec, err)
	})
}

func FuzzReadWAV(f *testing.F) {
	for _, bits := range []int{16, 32} {
		b, err := EncodeWAV([]float64{0, 1, -1, 0.5, 0.25}, 8000, bits, 1)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(wavFile(wavePCM, 2, 8000, 24, true, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
	f.Add(wavFile(wavePCM, 1, 8000, 8, false, []byte{0, 128, 255}))
	// 8-bit at 4 Hz: 3200 Hz would be 800 times its samples
	// (TestImportGrowthBound).
	f.Add(wavFile(wavePCM, 1, 4, 8, false, bytes.Repeat([]byte{0, 128, 255, 128}, 8)))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := ReadWAV("f.wav", b, Options{})
		checkResult(t, rec, err)
		rec, err = ReadWAV("f.wav", b, Options{Channel: "2", FullScale: 3})
		checkResult(t, rec, err)
	})
}

func FuzzReadCSV(f *testing.F) {
	for _, s := range []string{"time,v\n0,1\n0.001,2\n0.002,3\n", "0,1\r\n0.5,2\r\n1,\r\n", "# c\nt;a;b\n0;1;10\n0.25;2;20\n", "v\n1\n2\n3\n", "t,v\n0,1\n1,NaN\n2,4\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := ReadCSV("f.csv", b, Options{})
		checkResult(t, rec, err)
		rec, err = ReadCSV("f.csv", b, Options{Rate: 100, Channel: "1"})
		checkResult(t, rec, err)
	})
}
