package record

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestQuirkEOFMark: a run of 0x1A bytes right after the last line of the
// cfg (2013's leapsec line) and of the .dat is an end-of-file mark, not
// part of the line: the file reads, every sample the signal within the
// quantisation, with no warning.
func TestQuirkEOFMark(t *testing.T) {
	rec, err := Read(filepath.Join(recordingsDir(t), "quirk-eofmark.cfg"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Samples) != QuirkSamples || len(rec.Warnings) != 0 {
		t.Fatalf("%d samples, warnings %q: want %d and none", len(rec.Samples), rec.Warnings, QuirkSamples)
	}
	for n, v := range rec.Samples {
		if math.Abs(v-QuirkSignal(n)) > 0.005+1e-9 {
			t.Fatalf("sample %d: %v V, want %v", n, v, QuirkSignal(n))
		}
	}
}

// TestQuirk99999: 99999 in a 2013 ASCII .dat is a missing value (as in
// 1991/1999 and as python-comtrade reads it), with one warning naming
// the channel, the first line and the count; the other samples are the
// signal.
func TestQuirk99999(t *testing.T) {
	rec, err := Read(filepath.Join(recordingsDir(t), "quirk-99999.cfg"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for n, v := range rec.Samples {
		missing := n >= QuirkMissingFrom && n < QuirkMissingTo
		if missing != math.IsNaN(v) || !missing && math.Abs(v-QuirkSignal(n)) > 0.005+1e-9 {
			t.Fatalf("sample %d: %v V (missing: %v)", n, v, missing)
		}
	}
	var found bool
	for _, w := range rec.Warnings {
		// the .dat's line of sample QuirkMissingFrom is its line QuirkMissingFrom+1
		found = found || strings.Contains(w, "quirk-99999.dat: line 101: analog channel 1 (VA): 5 value(s) of 99999")
	}
	if !found {
		t.Errorf("warnings %q: none names the channel, the line and the count", rec.Warnings)
	}
}

// TestQuirkLatin1: a station name in Latin-1 with two accented letters
// side by side is read as Latin-1, not Windows-1251 ("Estaзгo"), with
// the warning naming the guess.
func TestQuirkLatin1(t *testing.T) {
	rec, err := Read(filepath.Join(recordingsDir(t), "quirk-latin1.cfg"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Station != QuirkLatin1Station {
		t.Errorf("station %q, want %q", rec.Station, QuirkLatin1Station)
	}
	var found bool
	for _, w := range rec.Warnings {
		found = found || strings.Contains(w, "latin1")
	}
	if !found {
		t.Errorf("warnings %q: none names the guessed encoding", rec.Warnings)
	}
}

// TestNoNominalNamesAuto: a file without a nominal value is refused with
// both ways out: --nominal V, and --nominal auto with the value it would
// take (the demo WAV's first 5 cycles: its 230 V RMS fundamental with
// 3 % and 2 % harmonics, sqrt(1 + 0.03^2 + 0.02^2) x 230 V, noise aside).
func TestNoNominalNamesAuto(t *testing.T) {
	rec, err := Read(filepath.Join(recordingsDir(t), "demo.wav"), Options{FullScale: 400})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Import(context.Background(), rec, ImportOptions{})
	const lead = "or --nominal auto (the median RMS of 5 cycles of the first 5 cycles: "
	if err == nil || !strings.Contains(err.Error(), "give --nominal V") || !strings.Contains(err.Error(), lead) {
		t.Fatalf("error %v: want --nominal V and %q", err, lead)
	}
	msg := err.Error()
	var v float64
	if _, err := fmt.Sscanf(msg[strings.Index(msg, lead)+len(lead):], "%g", &v); err != nil {
		t.Fatal(err)
	}
	if want := 230 * math.Sqrt(1+0.03*0.03+0.02*0.02); math.Abs(v-want) > 0.005*want {
		t.Errorf("--nominal auto would take %g V, want about %g", v, want)
	}
}

// TestQuirkWarnings: a recording with no power system's fundamental
// (64.8 Hz), one sampled at 2 samples a cycle, and one whose level sits
// 6.5 % above its stated nominal each import with a warning that says so,
// naming the frequency, the rate, or the level and the nominal; the
// signal at its nominal imports with none of them.
func TestQuirkWarnings(t *testing.T) {
	for _, c := range []struct {
		file string
		want []string
	}{
		{"quirk-offfreq.cfg", []string{"no fundamental of a power system found: the zero crossings give 64.8 Hz", "the windows assume a 50 Hz system"}},
		{"quirk-lowrate.cfg", []string{"sampled at 100 Hz, 2 samples a cycle of 50 Hz"}},
		{"quirk-level.cfg", []string{"channel VA: the level, 245 V (the median RMS of 2 cycles before the trigger), is +6.5% from the nominal 230"}},
		{"quirk-eofmark.cfg", nil},
	} {
		rec, err := Read(filepath.Join(recordingsDir(t), c.file), Options{})
		if err != nil {
			t.Fatal(err)
		}
		imp, err := Import(context.Background(), rec, ImportOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		all := strings.Join(imp.Warnings, "\n")
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: warnings %q lack %q", c.file, imp.Warnings, w)
			}
		}
		if c.want == nil && (strings.Contains(all, "fundamental") || strings.Contains(all, "from the nominal") || strings.Contains(all, "samples a cycle")) {
			t.Errorf("%s: warnings %q for a recording at its nominal", c.file, imp.Warnings)
		}
	}
}

// TestQuirkTimeJump: timestamps that skip 3.28 s inside the cfg's one
// rate segment split it there, the second part carrying the skip, with a
// warning naming the samples and the jump; the import makes the border a
// gap ("timestamp jump"), so that no kept window straddles it, and the
// windows after it start at the timestamps' times.
func TestQuirkTimeJump(t *testing.T) {
	path := filepath.Join(recordingsDir(t), "quirk-timejump.cfg")
	rec, err := Read(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Segments) != 2 || rec.Segments[0].End != QuirkJumpAt || rec.Segments[1].Start != QuirkJumpAt || math.Abs(rec.Segments[1].Skip-QuirkJump) > 1e-6 || rec.Segments[0].Skip != 0 {
		t.Fatalf("segments %+v: want a split at %d skipping %g s", rec.Segments, QuirkJumpAt, QuirkJump)
	}
	want := fmt.Sprintf("the timestamps jump by %.6g s between samples %d and %d (rate segment 1, 3200 Hz", QuirkJump+1.0/QuirkRate, QuirkJumpAt, QuirkJumpAt+1)
	if len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], want) {
		t.Errorf("warnings %q: want one with %q", rec.Warnings, want)
	}
	// (the timestamps are whole µs: the skip is 3.28 s to within 1 µs)
	if got, wantT := rec.Time(QuirkJumpAt+10), QuirkJump+float64(QuirkJumpAt+10)/QuirkRate; math.Abs(got-wantT) > 1e-6 {
		t.Errorf("sample %d at %v s, want %v", QuirkJumpAt+10, got, wantT)
	}
	imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 230, Hop: 320})
	if err != nil {
		t.Fatal(err)
	}
	kept, jumped := 0, 0
	for _, w := range imp.Windows {
		end := w.Start + imp.Length
		straddles := w.SourceSample < QuirkJumpAt && w.SourceSample+imp.Length > QuirkJumpAt
		if straddles != (w.Dropped != "") {
			t.Errorf("window at %d (source %d, %v s): dropped %q", w.Start, w.SourceSample, w.SourceTime, w.Dropped)
		}
		if strings.Contains(w.Dropped, "timestamp jump") {
			jumped++
		}
		if w.Dropped == "" {
			kept++
			wantT := float64(w.SourceSample) / QuirkRate
			if w.SourceSample >= QuirkJumpAt {
				wantT += QuirkJump
			}
			if math.Abs(w.SourceTime-wantT) > 1e-6 {
				t.Errorf("window at %d..%d: source time %v s, want %v", w.Start, end, w.SourceTime, wantT)
			}
		}
	}
	if kept < 2 || jumped == 0 {
		t.Errorf("%d windows kept, %d dropped for the jump (windows %+v)", kept, jumped, imp.Windows)
	}
}

func TestDedupe(t *testing.T) {
	got := Dedupe([]string{"b", "a", "b", "c", "b", "a"})
	want := []string{"b (3 times)", "a (2 times)", "c"}
	if !slices.Equal(got, want) {
		t.Errorf("Dedupe: %q, want %q", got, want)
	}
	if got := Dedupe(nil); len(got) != 0 {
		t.Errorf("Dedupe(nil) = %q", got)
	}
}
