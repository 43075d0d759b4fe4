package record

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/memtest"
)

// wavAt returns a WAV file of n samples of a sine at rate Hz, read back.
func wavAt(t *testing.T, n, rate int) *Recording {
	t.Helper()
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Sin(2 * math.Pi * float64(i) / 7)
	}
	b, err := EncodeWAV(x, rate, 16, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ReadWAV("slow.wav", b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestImportGrowthBound: resampling a 4 Hz WAV to 3200 Hz (800 times its
// samples) is refused before the output is allocated, with an error that
// gives the rates, the growth and what to change; growth MaxGrowth (4 Hz
// to 400 Hz) is accepted and makes ceil(n * MaxGrowth) samples, one more
// Hz is refused.
func TestImportGrowthBound(t *testing.T) {
	const n = 20000
	rec := wavAt(t, n, 4)
	var err error
	bytes := memtest.Allocated(func() {
		_, err = Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: 3200})
	})
	if err == nil {
		t.Fatal("4 Hz to 3200 Hz: no error")
	}
	for _, want := range []string{"slow.wav", "resampling 4 Hz to 3200 Hz", "800x the input's samples", fmt.Sprintf("(%d samples", 800*n), fmt.Sprintf("at most %dx", MaxGrowth), "resample the file beforehand"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// The output would be 800*n float64s; the refusal allocates less
	// than the input's own samples.
	if limit := uint64(8 * n); bytes > limit {
		t.Errorf("refusing allocated %d bytes, more than the input's %d", bytes, limit)
	}
	imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: 4 * MaxGrowth})
	if err != nil {
		t.Fatalf("growth %d: %v", MaxGrowth, err)
	}
	if len(imp.Signal) != n*MaxGrowth {
		t.Errorf("growth %d: %d samples, want %d", MaxGrowth, len(imp.Signal), n*MaxGrowth)
	}
	if _, err := Import(context.Background(), rec, ImportOptions{Nominal: 1, Rate: 4*MaxGrowth + 4}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at most %dx", MaxGrowth)) {
		t.Errorf("growth %d: %v", MaxGrowth+1, err)
	}
}

// TestImportSizeBound: a signal of more than MaxOutSamples, or windows
// holding more than MaxOutSamples samples together (a small hop), are
// refused before they are made, with the hop that would do; the largest
// accepted hop count makes exactly MaxOutSamples/window windows.
func TestImportSizeBound(t *testing.T) {
	// MaxOutSamples/MaxGrowth+1 samples at 32 Hz grow 100 times: one
	// growth within the bound, MaxGrowth more samples than accepted.
	n := MaxOutSamples/MaxGrowth + 1
	rec := &Recording{Path: "long.wav", Samples: make([]float64, n), Segments: []Segment{{Start: 0, End: n, Rate: 32}}, Nominal: 1}
	var err error
	bytes := memtest.Allocated(func() { _, err = Import(context.Background(), rec, ImportOptions{Rate: 3200}) })
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("would make %d samples", n*MaxGrowth)) || !strings.Contains(err.Error(), "cut the recording") {
		t.Errorf("%d samples at 32 Hz to 3200 Hz: %v", n, err)
	}
	if bytes > 1<<20 {
		t.Errorf("refusing allocated %d bytes", bytes)
	}

	// Windows: at 3200 Hz, no resampling; hop 1 makes total-window+1
	// windows.
	const window = 640
	k := MaxOutSamples / window // the most windows accepted
	total := window + 10*(k-1)  // hop 10 makes exactly k windows
	rec = &Recording{Path: "w.wav", Samples: make([]float64, total), Segments: []Segment{{Start: 0, End: total, Rate: 3200}}, Nominal: 1}
	imp, err := Import(context.Background(), rec, ImportOptions{Rate: DefaultRate, Window: window, Hop: 10})
	if err != nil || len(imp.Windows) != k {
		t.Fatalf("hop 10: %v (%d windows, want %d)", err, len(imp.Windows), k)
	}
	_, err = Import(context.Background(), rec, ImportOptions{Rate: DefaultRate, Window: window, Hop: 9})
	if err == nil || !strings.Contains(err.Error(), "a hop of 10 or more") {
		t.Errorf("hop 9: %v", err)
	}
}

// overflowingCFF returns a single-file recording of the file type whose
// DAT byte count is replaced by count, and the line of the DAT header.
func overflowingCFF(t testing.TB, ft, count string) (string, int) {
	t.Helper()
	w := testWriter(2013, ft, []Segment{{Start: 0, End: 10, Rate: 1000}}, false)
	good, err := w.EncodeCFF()
	if err != nil {
		t.Fatal(err)
	}
	s := string(good)
	head := "--- file type: DAT " + ft + ": "
	i := strings.Index(s, head)
	if i < 0 {
		t.Fatalf("no %q in the .cff", head)
	}
	j := i + len(head) + strings.Index(s[i+len(head):], " ")
	return s[:i+len(head)] + count + s[j:], 1 + strings.Count(s[:i], "\n")
}

// TestCFFCountOverflow: a DAT byte count near 2^63 was added to an offset
// in splitCFF, wrapped negative, passed the length check and panicked in
// the slice. A binary section's count beyond the bytes that follow is an
// error naming the file, the header's line and how many bytes follow; an
// ASCII section's is ignored (its lines are read), as a count too large
// for the file always was: the recording equals the one with no count.
func TestCFFCountOverflow(t *testing.T) {
	for _, count := range []string{"9223372036854775807", "9223372036854775000", "4611686018427387904"} {
		for _, ft := range []string{Binary, Binary32, Float32} {
			s, line := overflowingCFF(t, ft, count)
			after := len(s) - (strings.Index(s, "DAT "+ft+": "+count+" ---\n") + len("DAT "+ft+": "+count+" ---\n"))
			_, err := ReadCFF("o.cff", []byte(s), Options{})
			if err == nil {
				t.Fatalf("%s count %s: no error", ft, count)
			}
			for _, want := range []string{fmt.Sprintf("o.cff: line %d:", line), "DAT section of " + count + " bytes", fmt.Sprintf("only %d bytes follow", after), fmt.Sprintf("at most %d", after)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s count %s: error %q does not say %q", ft, count, err, want)
				}
			}
		}
		s, _ := overflowingCFF(t, ASCII, count)
		got, err := ReadCFF("o.cff", []byte(s), Options{})
		if err != nil {
			t.Fatalf("ASCII count %s: %v", count, err)
		}
		plain := strings.Replace(s, "DAT ASCII: "+count, "DAT ASCII", 1)
		want, err := ReadCFF("o.cff", []byte(plain), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got.Samples) != fmt.Sprint(want.Samples) || len(got.Samples) != 10 {
			t.Errorf("ASCII count %s: samples %v, without the count %v", count, got.Samples, want.Samples)
		}
	}
}
