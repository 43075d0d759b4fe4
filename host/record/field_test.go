package record

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// The deviations of real field recordings (see the package doc, which
// lists what field recorders write beyond the standard), each written
// here synthetically: the values read must be the values written, and
// each deviation a warning naming the file and the line.

// TestFieldBlankDatLines: a recorder that ends every ASCII sample line
// with two line ends (empty lines between the samples) is read as the
// same file without them, with one warning naming the first empty line
// and their count.
func TestFieldBlankDatLines(t *testing.T) {
	ref, err := ReadCOMTRADE("x.cfg", []byte(goodCfg), "x.dat", []byte(goodDat), Options{})
	if err != nil {
		t.Fatal(err)
	}
	dat := strings.ReplaceAll(goodDat, "\n", "\r\n\r\n")
	rec, err := ReadCOMTRADE("x.cfg", []byte(goodCfg), "x.dat", []byte(dat), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.Samples, ref.Samples) || !slices.Equal(rec.Segments, ref.Segments) {
		t.Errorf("samples %v segments %v, want %v %v", rec.Samples, rec.Segments, ref.Samples, ref.Segments)
	}
	// 3 samples on lines 1, 3, 5; the empty lines 2 and 4 (the last one,
	// 6, ends the file).
	wantWarn(t, rec, "x.dat: line 2:", "2 empty lines between the samples skipped")
	// A line of the wrong field count is still an error naming its line.
	if _, err := ReadCOMTRADE("x.cfg", []byte(goodCfg), "x.dat", []byte("1,0,1,0\n\n2,1000,2\n"), Options{}); err == nil || !strings.Contains(err.Error(), "x.dat: line 3:") {
		t.Errorf("short line after an empty one: %v", err)
	}
}

// TestFieldDigitalWithoutY: digital channel lines of 4 fields,
// Dn,ch_id,ph,ccbm (a recorder's spare inputs), are read with y = 0 and
// one warning for all of them; the data file's layout (the digital
// fields of each sample) is the standard one.
func TestFieldDigitalWithoutY(t *testing.T) {
	cfg := "S,R,1999\n3,1A,2D\n1,V,A,,V,0.5,1,0,-100,100,1,1,P\n1,T,,,0\n2,Spare1,0,Spares\n50\n1\n1000,3\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n1\n"
	dat := "1,0,4,0,1\n2,1000,-6,1,0\n3,2000,10,0,0\n"
	rec, err := ReadCOMTRADE("x.cfg", []byte(cfg), "x.dat", []byte(dat), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// value = a*x + b with a = 0.5, b = 1.
	want := []float64{0.5*4 + 1, 0.5*-6 + 1, 0.5*10 + 1}
	if !slices.Equal(rec.Samples, want) {
		t.Errorf("samples %v, want %v", rec.Samples, want)
	}
	wantWarn(t, rec, "x.cfg: line 5:", "1 digital channel lines of 4 fields", "y taken as 0")
	c, err := ParseConfig("x.cfg", cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Digitals[1]; d.Index != 2 || d.ID != "Spare1" || d.Phase != "0" || d.Circuit != "Spares" || d.Normal != 0 {
		t.Errorf("digital 2 %+v, want Dn 2, ch_id Spare1, ph 0, ccbm Spares, y 0", d)
	}
}

// TestFieldAnalogNumberGap: a cfg whose analog numbers skip one (1, 3,
// 4) gives one warning, where the numbering leaves 1, 2, 3, and the
// numbers stay as written: channel "3" is the second line.
func TestFieldAnalogNumberGap(t *testing.T) {
	cfg := "S,R,1999\n4,3A,1D\n1,VA,A,,V,1,0,0,-100,100,1,1,P\n3,VB,B,,V,2,0,0,-100,100,1,1,P\n4,VC,C,,V,3,0,0,-100,100,1,1,P\n1,T,,,0\n50\n1\n1000,2\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n1\n"
	dat := "1,0,1,2,3,0\n2,1000,4,5,6,0\n"
	rec, err := ReadCOMTRADE("x.cfg", []byte(cfg), "x.dat", []byte(dat), Options{Channel: "3"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Channel != "VB" || !slices.Equal(rec.Samples, []float64{2 * 2, 2 * 5}) {
		t.Errorf("channel 3: %s %v, want VB [4 10]", rec.Channel, rec.Samples)
	}
	n := 0
	for _, w := range rec.Warnings {
		if strings.Contains(w, "analog channel number") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d numbering warnings, want 1: %q", n, rec.Warnings)
	}
	wantWarn(t, rec, "x.cfg: line 4:", "analog channel number 3, want 2")
}

// trackingRec is a frequency-tracking recorder's recording: 48 samples
// a cycle of sin(2 pi i/48 + 0.3) throughout, in segments whose rates are
// 48 times the frequency measured (50.03, 49.9, 50.2 ... Hz; the last
// exactly 50).
func trackingRec() *Recording {
	lens := []int{708, 24, 24, 240, 24, 960, 48, 1000}
	freqs := []float64{50.031448, 50.0171509, 49.9628855, 49.9115855, 50.2238, 50.05, 49.95, 50.0}
	rec := &Recording{Path: "t.cfg", LineFreq: 50}
	start := 0
	for k, n := range lens {
		rec.Segments = append(rec.Segments, Segment{Start: start, End: start + n, Rate: 48 * freqs[k]})
		start += n
	}
	rec.Samples = make([]float64, start)
	for i := range rec.Samples {
		rec.Samples[i] = math.Sin(2*math.Pi*float64(i)/48 + 0.3)
	}
	return rec
}

// TestFieldFrequencyTracking: rate segments at 48 times the measured
// frequency (no ratio up/down <= 1000 of 3200 Hz) are resampled as one
// segment of 48 x 50 = 2400 Hz: the import equals, value for value, the
// import of the same samples as one 2400 Hz segment (metamorphic), holds
// no border gap, and a warning says the rates, the rate taken and how far
// the times move (the largest |t_file - t_taken| at the segments' ends,
// computed here from the rates).
func TestFieldFrequencyTracking(t *testing.T) {
	rec := trackingRec()
	opt := ImportOptions{Nominal: 1 / math.Sqrt2}
	imp, err := Import(context.Background(), rec, opt)
	if err != nil {
		t.Fatal(err)
	}
	one := &Recording{Path: "t.cfg", LineFreq: 50, Samples: rec.Samples, Segments: []Segment{{Start: 0, End: len(rec.Samples), Rate: 2400}}}
	ref, err := Import(context.Background(), one, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(imp.Signal, ref.Signal) || len(imp.Gaps) != 0 || len(imp.Ratios) != 1 || imp.Ratios[0].Up != 4 || imp.Ratios[0].Down != 3 {
		t.Fatalf("ratios %+v gaps %v; equal to one 2400 Hz segment: %v", imp.Ratios, imp.Gaps, slices.Equal(imp.Signal, ref.Signal))
	}
	// 64 samples a cycle at 3200 Hz: the sine of the source, away from the
	// zero-padded ends (the filter's half length, 40 taps of 4/3).
	worst := 0.0
	for j := 200; j < len(imp.Signal)-200; j++ {
		worst = math.Max(worst, math.Abs(imp.Signal[j]-math.Sin(2*math.Pi*float64(j)/64+0.3)))
	}
	if worst > 1e-3 {
		t.Errorf("largest difference from sin(2 pi j/64 + 0.3): %g, want <= 1e-3", worst)
	}
	shift, tf := 0.0, 0.0
	for _, s := range rec.Segments {
		tf += float64(s.End-s.Start) / s.Rate
		shift = math.Max(shift, math.Abs(tf-float64(s.End)/2400))
	}
	all := strings.Join(imp.Warnings, "\n")
	for _, s := range []string{"samples 0..3027: rate segments 1..8", "7 of them no ratio", "one segment of 2400 Hz, 48 samples a cycle of 50 Hz", strconvG3(1e3*shift) + " ms"} {
		if !strings.Contains(all, s) {
			t.Errorf("no warning with %q in %q", s, imp.Warnings)
		}
	}
	// 48.72 samples a cycle (1.5 % above 48, 0.28 below 49) is no
	// tracking rate, and 2436.0123 Hz no ratio of 3200: an error.
	rec.Segments[3].Rate = 2436.0123
	if _, err := Import(context.Background(), rec, opt); err == nil || !strings.Contains(err.Error(), "samples 756..995") {
		t.Errorf("a rate 1.5%% off: %v", err)
	}
}

func strconvG3(v float64) string { return fmt.Sprintf("%.3g", v) }

// TestFieldSameRateSegments: segments that repeat one rate (a recorder
// starting a segment at every trigger) are resampled as one: the import
// equals that of one segment, with no border gap, and a warning says so.
func TestFieldSameRateSegments(t *testing.T) {
	n := 2131
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Sin(2 * math.Pi * float64(i) / 24)
	}
	ends := []int{289, 506, 1045, 1451, 1629, 1812, 2099, 2131}
	rec := &Recording{Path: "s.cfg", LineFreq: 50, Samples: x}
	start := 0
	for _, e := range ends {
		rec.Segments = append(rec.Segments, Segment{Start: start, End: e, Rate: 1200})
		start = e
	}
	opt := ImportOptions{Nominal: 1}
	imp, err := Import(context.Background(), rec, opt)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Import(context.Background(), &Recording{Path: "s.cfg", LineFreq: 50, Samples: x, Segments: []Segment{{Start: 0, End: n, Rate: 1200}}}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(imp.Signal, ref.Signal) || len(imp.Gaps) != 0 || len(imp.Ratios) != 1 {
		t.Errorf("ratios %+v gaps %v, want one 8/3 segment without gaps equal to the single-segment import", imp.Ratios, imp.Gaps)
	}
	wantWarnings(t, imp.Warnings, "samples 0..2130: rate segments 1..8 share the rate 1200 Hz: resampled as one segment")
}

func wantWarnings(t *testing.T, warnings []string, subs ...string) {
	t.Helper()
	all := strings.Join(warnings, "\n")
	for _, s := range subs {
		if !strings.Contains(all, s) {
			t.Errorf("no warning with %q in %q", s, warnings)
		}
	}
}
