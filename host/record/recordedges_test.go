package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRecordingTime checks Time against the closed form of three rate
// segments (10 samples at 100 Hz, 20 at 200 Hz, then 10 at 50 Hz after a
// skip of 0.5 s): the times add up segment by segment, and past the last
// sample they go on at the last segment's rate.
func TestRecordingTime(t *testing.T) {
	r := &Recording{Segments: []Segment{{Start: 0, End: 10, Rate: 100}, {Start: 10, End: 30, Rate: 200}, {Start: 30, End: 40, Rate: 50, Skip: 0.5}}}
	for _, i := range []int{0, 9, 10, 29, 30, 39, 40, 45} {
		var want float64
		switch {
		case i < 10:
			want = float64(i) / 100
		case i < 30:
			want = 10.0/100 + float64(i-10)/200
		default:
			want = 10.0/100 + 20.0/200 + 0.5 + float64(i-30)/50
		}
		if got := r.Time(i); math.Abs(got-want) > 1e-12 {
			t.Errorf("Time(%d) = %g, want %g", i, got, want)
		}
	}
}

// TestReadCSVBeyondCFFHead checks that Read tells a CFF by the first 200
// bytes only: a CSV file (of any length) whose comment mentions "file
// type: CFG" after them is read as CSV.
func TestReadCSVBeyondCFFHead(t *testing.T) {
	dir := t.TempDir()
	long := "# " + strings.Repeat("x", 220) + " converted from file type: CFG\n"
	for name, text := range map[string]string{"short.csv": "t,v\n0,1\n0.5,2\n1,3\n", "long.csv": long + "t,v\n0,1\n0.5,2\n1,3\n"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		rec, err := Read(p, Options{})
		if err != nil || rec.Format != "CSV" || !slices.Equal(rec.Samples, []float64{1, 2, 3}) || rec.Rate() != 2 {
			t.Errorf("%s: %v, want the CSV's 3 samples at 2 Hz", name, err)
		}
	}
}

// squareAt is a square wave of ±1 at rate 1024 Hz with 52 rising zero
// crossings 1024 samples apart in all (51 periods of 20 or 21 samples)
// and as many +1 as -1 samples, so that its zero-crossing frequency is
// exactly 51 Hz.
func squareAt() []float64 {
	var x []float64
	for range 10 {
		x = append(x, -1)
	}
	c := func(j int) int { return 10 + j*1024/51 }
	for j := 0; j < 51; j++ {
		n := c(j+1) - c(j)
		for k := 0; k < n; k++ {
			if k < n/2 {
				x = append(x, 1)
			} else {
				x = append(x, -1)
			}
		}
	}
	sum := 0
	for _, v := range x {
		sum += int(v)
	}
	// At c(51): +1 samples, then -1 samples, balancing the sum.
	p := 5
	m := p + sum
	for range p {
		x = append(x, 1)
	}
	for range m {
		x = append(x, -1)
	}
	return x
}

// TestFinishWarnings checks the warnings finish adds: the count of
// missing samples and gaps with the first gap's start; a stated line
// frequency more than 2 % from the zero crossings' (exactly 2 % is not),
// and none when the file states no frequency.
func TestFinishWarnings(t *testing.T) {
	x := []float64{0, 1, 2, math.NaN(), math.NaN(), 5, 6, 7, 8, 9, math.NaN(), 11}
	r := &Recording{Samples: x, Segments: []Segment{{Start: 0, End: len(x), Rate: 100}}}
	r.finish()
	wantWarn(t, r, "3 missing samples in 2 gaps (first at sample 3)")

	sq := squareAt()
	r = &Recording{Samples: sq, Segments: []Segment{{Start: 0, End: len(sq), Rate: 1024}}}
	if f := EstimateFrequency(r); f != 51 {
		t.Fatalf("the square wave's frequency %v, want exactly 51 (the test's construction)", f)
	}
	for _, c := range []struct {
		stated float64
		warns  bool
	}{{0, false}, {50, false}, {52, false}, {51.5, false}, {49.9, true}, {52.1, true}} {
		r := &Recording{Samples: sq, Segments: []Segment{{Start: 0, End: len(sq), Rate: 1024}}, LineFreq: c.stated}
		r.finish()
		said := strings.Contains(strings.Join(r.Warnings, "\n"), "stated line frequency")
		if said != c.warns {
			t.Errorf("stated %g Hz for 51 Hz: warned %v, want %v (%q)", c.stated, said, c.warns, r.Warnings)
		}
	}
}

// TestWriterSegmentChecks checks that the writer refuses an empty segment
// or a rate of 0 Hz.
func TestWriterSegmentChecks(t *testing.T) {
	for _, segs := range [][]Segment{
		{{Start: 0, End: 0, Rate: 1000}, {Start: 0, End: 4, Rate: 1000}},
		{{Start: 0, End: 2, Rate: 1000}, {Start: 2, End: 2, Rate: 1000}, {Start: 2, End: 4, Rate: 1000}},
		{{Start: 0, End: 4, Rate: 0}},
	} {
		w := &COMTRADE{Rev: 1999, FileType: ASCII, Segments: segs, Analogs: []Channel{{ID: "V", A: 1, Samples: []float64{1, 2, 3, 4}}}}
		_, _, err := w.Encode()
		wantErr(t, fmt.Sprint(segs), err, "want consecutive, non-empty segments at rates > 0")
	}
}

// TestWriterStamps checks the timestamps written for three rate segments
// (4 samples each at 1000, 2000 and 4000 Hz): sample i's time is the sum
// of the earlier segments' durations plus its offset in its own, in µs.
func TestWriterStamps(t *testing.T) {
	x := make([]float64, 12)
	w := &COMTRADE{Rev: 1999, FileType: ASCII, Station: "S", Device: "R", LineFreq: 50,
		Segments: []Segment{{Start: 0, End: 4, Rate: 1000}, {Start: 4, End: 8, Rate: 2000}, {Start: 8, End: 12, Rate: 4000}},
		Analogs:  []Channel{{ID: "V", A: 1, Samples: x}}}
	dat, err := w.Data()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(dat)), "\n")
	for i, l := range lines {
		var want float64
		switch {
		case i < 4:
			want = float64(i) * 1000
		case i < 8:
			want = 4*1000 + float64(i-4)*500
		default:
			want = 4*1000 + 4*500 + float64(i-8)*250
		}
		if f := strings.Split(l, ","); f[1] != strconv.Itoa(int(want)) {
			t.Errorf("sample %d: timestamp %s, want %g", i+1, f[1], want)
		}
	}
}

// TestWriter1991Digitals checks that a 1991 cfg numbers its digital
// channels 1, 2, ... as the 1999 form does, and parses without warnings.
func TestWriter1991Digitals(t *testing.T) {
	w := &COMTRADE{Rev: 1991, FileType: ASCII, Station: "S", Device: "R", LineFreq: 50,
		Segments: []Segment{{Start: 0, End: 2, Rate: 1000}}, Start: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
		Analogs:  []Channel{{ID: "V", A: 1, Samples: []float64{1, 2}}},
		Digitals: []DigitalChannel{{ID: "T1", States: []bool{false, true}}, {ID: "T2", Normal: 1, States: []bool{true, true}}}}
	text, err := w.Config()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig("w.cfg", text, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Digitals) != 2 || c.Digitals[0].Index != 1 || c.Digitals[1].Index != 2 || c.Digitals[1].Normal != 1 || len(c.Warnings) != 0 {
		t.Errorf("digitals %+v, warnings %q; want D1, D2 (y 1), none", c.Digitals, c.Warnings)
	}
}

// TestWriterValueBounds checks the stored values at the bounds of each
// file type: ASCII 1999 stores -99999..99998 (99999 is the missing
// marker), BINARY -32767..32767, FLOAT32 up to ±MaxFloat32; each reads
// back as written; one step beyond is refused.
func TestWriterValueBounds(t *testing.T) {
	for _, c := range []struct {
		rev    int
		ft     string
		ok     []float64
		beyond float64
	}{
		{1999, ASCII, []float64{-99999, 99998}, 99999},
		{1999, ASCII, []float64{-99999, 99998}, -100000},
		{1999, Binary, []float64{-32767, 32767}, 32768},
		{1999, Binary, []float64{-32767, 32767}, -32768},
		{2013, Float32, []float64{-math.MaxFloat32, math.MaxFloat32}, math.MaxFloat64},
	} {
		w := &COMTRADE{Rev: c.rev, FileType: c.ft, Station: "S", Device: "R", LineFreq: 50,
			Segments: []Segment{{Start: 0, End: 2, Rate: 1000}}, Start: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
			Analogs: []Channel{{ID: "V", A: 1, Primary: 1, Secondary: 1, PS: "P", Samples: c.ok}}}
		cfg, dat, err := w.Encode()
		if err != nil {
			t.Errorf("%d %s %v: %v", c.rev, c.ft, c.ok, err)
			continue
		}
		rec, err := ReadCOMTRADE("w.cfg", cfg, "w.dat", dat, Options{})
		if err != nil || !slices.Equal(rec.Samples, c.ok) {
			t.Errorf("%d %s: read back %v (%v), want %v", c.rev, c.ft, rec, err, c.ok)
		}
		w.Analogs[0].Samples = []float64{0, c.beyond}
		if _, _, err := w.Encode(); err == nil || !strings.Contains(err.Error(), "beyond") {
			t.Errorf("%d %s: %g: %v, want an error", c.rev, c.ft, c.beyond, err)
		}
	}
}

// TestWriterMissingMarkers checks how a missing value is written in an
// ASCII file: 99999 before 2013, an empty field in 2013; both read back
// as a gap, the 2013 file without a warning about 99999.
func TestWriterMissingMarkers(t *testing.T) {
	for _, c := range []struct {
		rev  int
		line string
	}{{1999, "2,1000,99999"}, {2013, "2,1000,"}} {
		w := &COMTRADE{Rev: c.rev, FileType: ASCII, Station: "S", Device: "R", LineFreq: 50,
			Segments: []Segment{{Start: 0, End: 3, Rate: 1000}}, Start: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
			Analogs: []Channel{{ID: "V", A: 1, Primary: 1, Secondary: 1, PS: "P", Samples: []float64{1, math.NaN(), 3}}}}
		cfg, dat, err := w.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Split(string(dat), "\n"); lines[1] != c.line {
			t.Errorf("%d: line 2 %q, want %q", c.rev, lines[1], c.line)
		}
		rec, err := ReadCOMTRADE("w.cfg", cfg, "w.dat", dat, Options{})
		if err != nil || len(rec.Gaps) != 1 || rec.Gaps[0].Start != 1 || rec.Gaps[0].End != 2 {
			t.Fatalf("%d: %v, gaps %v", c.rev, err, rec.Gaps)
		}
		if strings.Contains(strings.Join(rec.Warnings, "\n"), "99999") {
			t.Errorf("%d: warnings %q", c.rev, rec.Warnings)
		}
	}
}

// TestWriterStatusWords checks the status words of a binary file with 17
// digital channels: word 0 holds channels 1..16 as bits 0..15, word 1
// channel 17 as bit 0, after the sample number, timestamp and analog
// value.
func TestWriterStatusWords(t *testing.T) {
	const n = 5
	var digs []DigitalChannel
	for k := 0; k < 17; k++ {
		st := make([]bool, n)
		for i := range st {
			st[i] = (i*7+k*3)%4 == 0
		}
		digs = append(digs, DigitalChannel{ID: fmt.Sprintf("D%d", k+1), States: st})
	}
	w := &COMTRADE{Rev: 1999, FileType: Binary, Station: "S", Device: "R", LineFreq: 50,
		Segments: []Segment{{Start: 0, End: n, Rate: 1000}}, Start: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
		Analogs: []Channel{{ID: "V", A: 1, Samples: make([]float64, n)}}, Digitals: digs}
	dat, err := w.Data()
	if err != nil {
		t.Fatal(err)
	}
	size := 8 + 2 + 2*2
	if len(dat) != n*size {
		t.Fatalf("%d bytes, want %d", len(dat), n*size)
	}
	le := binary.LittleEndian
	for i := 0; i < n; i++ {
		var w0, w1 uint16
		for k := 0; k < 16; k++ {
			if digs[k].States[i] {
				w0 |= 1 << k
			}
		}
		if digs[16].States[i] {
			w1 = 1
		}
		r := dat[i*size:]
		if g0, g1 := le.Uint16(r[10:]), le.Uint16(r[12:]); g0 != w0 || g1 != w1 {
			t.Errorf("sample %d: words %016b %016b, want %016b %016b", i+1, g0, g1, w0, w1)
		}
	}
}

// TestPhaseNotAName checks that a phase that is none of the phase names
// (nor a channel's ph) is an error, not some channel's phase.
func TestPhaseNotAName(t *testing.T) {
	p := writeCOMTRADE(t, t.TempDir(), "abc", [][3]string{{"VA", "A", "V"}, {"VB", "B", "V"}, {"VC", "C", "V"}})
	_, err := PhaseChannels(p, Options{}, []string{"X"})
	wantErr(t, "phase X", err, `no voltage channel of phase "X"`)
}

// TestQuirkFilesAll checks that QuirkFiles gives every quirk recording
// its doc names, a .cfg and a .dat each, and that each reads with the
// property it is made for.
func TestQuirkFilesAll(t *testing.T) {
	files, err := QuirkFiles()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"eofmark", "99999", "latin1", "offfreq", "lowrate", "level", "timejump"}
	if len(files) != 2*len(names) {
		t.Errorf("%d files, want %d", len(files), 2*len(names))
	}
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recs := map[string]*Recording{}
	for _, n := range names {
		rec, err := Read(filepath.Join(dir, "quirk-"+n+".cfg"), Options{})
		if err != nil {
			t.Errorf("quirk-%s: %v", n, err)
			continue
		}
		recs[n] = rec
	}
	if len(recs) != len(names) {
		return
	}
	if r := recs["eofmark"]; len(r.Samples) != QuirkSamples {
		t.Errorf("eofmark: %d samples", len(r.Samples))
	}
	if r := recs["99999"]; len(r.Gaps) != 1 || r.Gaps[0].Start != QuirkMissingFrom || r.Gaps[0].End != QuirkMissingTo {
		t.Errorf("99999: gaps %v", r.Gaps)
	}
	if r := recs["latin1"]; r.Station != QuirkLatin1Station {
		t.Errorf("latin1: station %q", r.Station)
	}
	if r := recs["offfreq"]; math.Abs(r.EstFreq-QuirkOffFreq) > 0.1 {
		t.Errorf("offfreq: %g Hz", r.EstFreq)
	}
	if r := recs["lowrate"]; r.Rate() != QuirkLowRate {
		t.Errorf("lowrate: %g Hz", r.Rate())
	}
	if r := recs["level"]; math.Abs(r.Samples[16]-QuirkLevel*QuirkSignal(16)) > 0.005 {
		t.Errorf("level: sample 16 = %g, want %g", r.Samples[16], QuirkLevel*QuirkSignal(16))
	}
	if r := recs["timejump"]; len(r.Segments) != 2 || r.Segments[1].Start != QuirkJumpAt || math.Abs(r.Segments[1].Skip-QuirkJump) > 1e-6 {
		t.Errorf("timejump: segments %+v", r.Segments)
	}
	if !bytes.HasSuffix(files["quirk-eofmark.dat"], []byte{0x1a, 0x1a, 0x1a, 0x1a}) {
		t.Error("quirk-eofmark.dat does not end with the 0x1A run")
	}
}
