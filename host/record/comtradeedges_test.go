package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// readCT reads channel sel of a cfg and dat given as text.
func readCT(cfg, dat, sel string) (*Recording, error) {
	return ReadCOMTRADE("e.cfg", []byte(cfg), "e.dat", []byte(dat), Options{Channel: sel})
}

// TestPickAnalogDigitalSelectors checks that "Dn" with a number names a
// digital channel (refused as such), while "D" followed by what is not a
// number is an unknown analog channel; "A2" picks analog channel 2.
func TestPickAnalogDigitalSelectors(t *testing.T) {
	cfg := cfgOf("S,R,1999", "3,2A,1D", "1,VA,A,,V,1,0,0,-1,1,1,1,P", "2,VB,B,,V,1,0,0,-1,1,1,1,P", "1,TRIP,,,0",
		"50", "1", "1000,3", "01/01/2020,00:00:00", "01/01/2020,00:00:00", "ASCII", "1")
	dat := "1,0,1,10,0\n2,1000,2,20,1\n3,2000,3,30,0\n"
	_, err := readCT(cfg, dat, "D1")
	wantErr(t, "D1", err, `e.cfg: channel "D1": a digital (status) channel is not a waveform to import`)
	_, err = readCT(cfg, dat, "DX")
	wantErr(t, "DX", err, `e.cfg: no analog channel "DX"`)
	if err != nil && strings.Contains(err.Error(), "digital (status)") {
		t.Errorf("DX: %v, want no mention of a digital channel", err)
	}
	rec, err := readCT(cfg, dat, "A2")
	if err != nil || rec.Index != 2 || !slices.Equal(rec.Samples, []float64{10, 20, 30}) {
		t.Errorf("A2: %v", err)
	}
}

// TestChannelListBound checks that an unknown channel's error lists at
// most 40 analog channels, and says how many there are only when there
// are more than 40.
func TestChannelListBound(t *testing.T) {
	for _, n := range []int{39, 40, 41} {
		lines := []string{"S,R,1999", fmt.Sprintf("%d,%dA,0D", n, n)}
		for k := 1; k <= n; k++ {
			lines = append(lines, fmt.Sprintf("%d,C%d,,,V,1,0,0,-1,1,1,1,P", k, k))
		}
		lines = append(lines, "50", "1", "1000,1", "01/01/2020,00:00:00", "01/01/2020,00:00:00", "ASCII", "1")
		_, err := readCT(cfgOf(lines...), "", "nope")
		if err == nil {
			t.Fatalf("%d channels: no error", n)
		}
		listed := strings.Count(err.Error(), `"C`)
		if listed != min(n, 40) {
			t.Errorf("%d channels: %d listed, want %d", n, listed, min(n, 40))
		}
		more := fmt.Sprintf("... (%d in all)", n)
		if got := strings.Contains(err.Error(), more); got != (n > 40) {
			t.Errorf("%d channels: says %q: %v, want %v (%v)", n, more, got, n > 40, err)
		}
	}
}

// TestASCIIDatFields checks the sample lines of an ASCII data file: a
// trailing comma after the last field is no extra field; a bad value
// names its channel; a bad sample number is quoted whole up to 40
// characters, and clipped with "..." beyond.
func TestASCIIDatFields(t *testing.T) {
	cfg := cfgOf(joinParts(edgeHead, edgeRates, edgeTail)...)
	rec, err := readCT(cfg, "1,0,5,\n2,1000,6,\n3,2000,7,\n", "")
	if err != nil || !slices.Equal(rec.Samples, []float64{5, 6, 7}) {
		t.Errorf("trailing commas: %v", err)
	}

	two := cfgOf("S,R,1999", "2,2A,0D", "1,VA,A,,V,1,0,0,-1,1,1,1,P", "2,VB,B,,V,1,0,0,-1,1,1,1,P", "50", "1", "1000,3", "01/01/2020,00:00:00", "01/01/2020,00:00:00", "ASCII", "1")
	_, err = readCT(two, "1,0,1,1\n2,1000,2,x\n3,2000,3,3\n", "2")
	wantErr(t, "bad value of channel 2", err, `e.dat: line 2: analog channel 2 value "x", want a finite number`)

	for _, n := range []int{40, 41} {
		num := strings.Repeat("x", n)
		_, err := readCT(cfg, "1,0,5\n"+num+",1000,6\n3,2000,7\n", "")
		want := `sample number "` + num + `", want`
		if n > 40 {
			want = `sample number "` + num[:40] + `...", want`
		}
		wantErr(t, fmt.Sprintf("sample number of %d characters", n), err, "e.dat: line 2: "+want)
	}
}

// TestFloat32InfOffset checks that an infinite FLOAT32 value is an error
// at the byte offset of that value: record i, channel k (0-based) is at
// i*size + 8 + 4k, size = 8 + 4 * (analog channels).
func TestFloat32InfOffset(t *testing.T) {
	cfg := cfgOf("S,R,2013", "2,2A,0D", "1,VA,A,,V,1,0,0,-1,1,1,1,P", "2,VB,B,,V,1,0,0,-1,1,1,1,P", "50", "1", "1000,2",
		"01/01/2020,00:00:00", "01/01/2020,00:00:00", "FLOAT32", "1", "0,0", "0,0")
	le := binary.LittleEndian
	var dat []byte
	for i, v := range [][2]float32{{1, 2}, {3, float32(math.Inf(1))}} {
		dat = le.AppendUint32(dat, uint32(i+1))
		dat = le.AppendUint32(dat, uint32(1000*i))
		dat = le.AppendUint32(dat, math.Float32bits(v[0]))
		dat = le.AppendUint32(dat, math.Float32bits(v[1]))
	}
	size := 8 + 4*2
	_, err := readCT(cfg, string(dat), "2")
	wantErr(t, "+Inf in channel 2", err, fmt.Sprintf("e.dat: byte offset %d: analog channel 2 value is +Inf", 1*size+8+4*1))
	if rec, err := readCT(cfg, string(dat), "1"); err != nil || !slices.Equal(rec.Samples, []float64{1, 3}) {
		t.Errorf("channel 1: %v", err)
	}
}

// tsCfg is a 2013 cfg of one analog channel with the given rate lines
// (nrates first) and timemult.
func tsCfg(timemult string, rates ...string) string {
	return cfgOf(joinParts([]string{"S,R,2013", "1,1A,0D", "1,VA,A,,V,1,0,0,-1,1,1,1,P", "50"}, rates,
		[]string{"01/01/2020,00:00:00", "01/01/2020,00:00:00", "ASCII", timemult, "0,0", "0,0"})...)
}

// datOf is an ASCII data file of one channel with the given timestamps
// (as written; "" missing) and sample values 1, 2, ...
func datOf(stamps ...string) string {
	var b strings.Builder
	for i, s := range stamps {
		fmt.Fprintf(&b, "%d,%s,%d\n", i+1, s, i+1)
	}
	return b.String()
}

// TestTimestampedRates checks the rate measured from the timestamps
// (nrates 0, or one rate of 0 Hz): (n-1) steps over the span from the
// first stamp to the last, whatever the first stamp; steps off the first
// by up to max(one timestamp unit, 1 % of it) are accepted; a missing or
// non-increasing timestamp is an error naming the sample and line.
func TestTimestampedRates(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    string
		stamps []string
		rate   float64
	}{
		{"first stamp 1000", tsCfg("1", "0", "0,4"), []string{"1000", "1250", "1500", "1750"}, 1e6 * 3 / 750},
		{"one rate of 0 Hz", tsCfg("1", "1", "0,4"), []string{"1000", "1250", "1500", "1750"}, 1e6 * 3 / 750},
		{"timemult 10", tsCfg("10", "0", "0,4"), []string{"7", "32", "57", "82"}, 1e6 * 3 / (75 * 10)},
		{"1 % of a 1000 µs step", tsCfg("1", "0", "0,4"), []string{"0", "1000", "2005", "3000"}, 1e6 * 3 / 3000},
		{"one unit of a 50 µs step", tsCfg("1", "0", "0,4"), []string{"0", "50", "101", "151"}, 1e6 * 3 / 151},
	} {
		rec, err := readCT(c.cfg, datOf(c.stamps...), "")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(rec.Segments) != 1 || math.Abs(rec.Segments[0].Rate-c.rate) > 1e-9*c.rate || rec.Segments[0].End != len(c.stamps) {
			t.Errorf("%s: segments %+v, want one of %g Hz", c.name, rec.Segments, c.rate)
		}
	}
	_, err := readCT(tsCfg("1", "0", "0,4"), datOf("0", "1000", "2011", "3000"), "")
	wantErr(t, "a step 11 µs off a 1000 µs one", err, "e.dat: line 3: timestamp step 1011 µs, want 1000 µs ± 10")
	_, err = readCT(tsCfg("1", "0", "0,3"), datOf("0", "", "2000"), "")
	wantErr(t, "missing timestamp", err, "e.dat: line 2: sample 2 has no timestamp")
	_, err = readCT(tsCfg("1", "0", "0,3"), datOf("5", "5", "5"), "")
	wantErr(t, "equal timestamps", err, "e.dat: line 2: timestamp 5 after 5: timestamps must increase")

	// An endsamp of 0 with nrates 0: the samples are all read.
	rec, err := readCT(tsCfg("1", "0", "0,0"), datOf("0", "250", "500", "750"), "")
	if err != nil || len(rec.Samples) != 4 || rec.Rate() != 4000 {
		t.Fatalf("endsamp 0: %v", err)
	}
	wantWarn(t, rec, "e.dat: 4 samples, the cfg says 0; the recording is cut at 4")
}

// TestTimestampJumps checks where the timestamps of a rate segment jump:
// a step of more than JumpFactor sample periods (in µs: stamp units times
// timemult) splits the segment, the part after skipping the step less one
// period; a step of exactly JumpFactor periods does not; segments stay
// non-empty and cover the samples in order.
func TestTimestampJumps(t *testing.T) {
	// timemult 1000: a stamp unit is 1 ms, one sample at 1000 Hz.
	rec, err := readCT(tsCfg("1000", "1", "1000,8"), datOf("0", "1", "2", "3", "20", "21", "22", "23"), "")
	if err != nil {
		t.Fatal(err)
	}
	skip := (17*1000.0 - 1e6/1000) / 1e6
	if len(rec.Segments) != 2 || rec.Segments[0] != (Segment{0, 4, 1000, 0}) || rec.Segments[1].Start != 4 || rec.Segments[1].End != 8 || math.Abs(rec.Segments[1].Skip-skip) > 1e-12 {
		t.Errorf("segments %+v, want 0..3 and 4..7 after a skip of %g s", rec.Segments, skip)
	}
	wantWarn(t, rec, fmt.Sprintf("the timestamps jump by %.6g s between samples 4 and 5 (rate segment 1, 1000 Hz: one sample is %.6g µs): taken as a gap of %.6g s", 17*1000.0/1e6, 1e6/1000, skip))

	period := 1e6 / 1000
	for _, c := range []struct {
		last string
		segs int
	}{{fmt.Sprint(2000 + JumpFactor*period), 1}, {fmt.Sprint(2000 + JumpFactor*period + 1), 2}} {
		rec, err := readCT(tsCfg("1", "1", "1000,4"), datOf("0", "1000", "2000", c.last), "")
		if err != nil || len(rec.Segments) != c.segs {
			t.Errorf("step to %s µs: %v, %d segments, want %d", c.last, err, len(rec.Segments), c.segs)
		}
	}

	// A jump where the cfg's rate changes: the segments stay non-empty.
	rec, err = readCT(tsCfg("1", "2", "1000,4", "2000,8"), datOf("0", "1000", "2000", "3000", "50000", "50500", "51000", "51500"), "")
	if err != nil {
		t.Fatal(err)
	}
	end := 0
	for _, s := range rec.Segments {
		if s.Start != end || s.End <= s.Start {
			t.Errorf("segments %+v: not non-empty and in order", rec.Segments)
			break
		}
		end = s.End
	}
	if end != 8 {
		t.Errorf("segments %+v end at %d, want 8", rec.Segments, end)
	}
	// A jump exactly at the border of two rate segments (1000 then 2000
	// Hz; the step from sample 4 to 5 is 47 ms, past JumpFactor of the
	// longer period, 1 ms): the second segment starts after a gap of the
	// step less one of its own periods, and a warning names the border.
	rec, err = readCT(tsCfg("1", "2", "1000,4", "2000,8"), datOf("0", "1000", "2000", "3000", "50000", "50500", "51000", "51500"), "")
	if err != nil {
		t.Fatal(err)
	}
	border := (47000.0 - 1e6/2000) / 1e6
	if len(rec.Segments) != 2 || rec.Segments[0].Skip != 0 || math.Abs(rec.Segments[1].Skip-border) > 1e-12 {
		t.Errorf("segments %+v: want the second after a skip of %g s", rec.Segments, border)
	}
	wantWarn(t, rec, fmt.Sprintf("the timestamps jump by %.6g s between samples 4 and 5 (the border of rate segments 1 and 2): taken as a gap of %.6g s", 0.047, border))
	// a step at the border within JumpFactor periods is no jump
	rec, err = readCT(tsCfg("1", "2", "1000,4", "2000,8"), datOf("0", "1000", "2000", "3000", "4000", "4500", "5000", "5500"), "")
	if err != nil || rec.Segments[1].Skip != 0 {
		t.Errorf("a plain border: %v, segments %+v", err, rec.Segments)
	}
}

// TestCfgNominalRatings checks where the nominal value comes from: an
// INF nominal above 0, else the cfg's rating when either rating is above
// 1 (1 and 1 are no rating); --primary on a secondary channel needs a
// secondary rating above 0.
func TestCfgNominalRatings(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, primary, secondary float64, ps, inf string) string {
		w := &COMTRADE{Rev: 2013, FileType: ASCII, Station: "S", Device: "R", LineFreq: 50,
			Segments: []Segment{{Start: 0, End: 4, Rate: 1000}}, Start: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
			Analogs: []Channel{{ID: "VA", Phase: "A", Unit: "V", A: 1, Primary: primary, Secondary: secondary, PS: ps, Samples: []float64{1, 2, 3, 4}}}}
		p := filepath.Join(dir, name+".cfg")
		if err := w.WriteFiles(p); err != nil {
			t.Fatal(err)
		}
		if inf != "" {
			if err := os.WriteFile(filepath.Join(dir, name+".inf"), []byte(inf), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	for _, c := range []struct {
		name               string
		primary, secondary float64
		ps, inf            string
		nominal            float64
		source             string
	}{
		{"ratings 1 and 1", 1, 1, "P", "", 0, ""},
		{"primary 230", 230, 1, "P", "", 230, "primary rating of channel 1 in the cfg"},
		{"INF nominal 0", 230, 1, "P", "[Public]\nnominal = 0\n", 230, "primary rating of channel 1 in the cfg"},
		{"INF nominal 66", 230, 1, "P", "[Public]\nnominal = 66\n", 66, "INF nominal"},
	} {
		rec, err := Read(write(strings.ReplaceAll(c.name, " ", "_"), c.primary, c.secondary, c.ps, c.inf), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Nominal != c.nominal || rec.NominalSource != c.source {
			t.Errorf("%s: nominal %g (%q), want %g (%q)", c.name, rec.Nominal, rec.NominalSource, c.nominal, c.source)
		}
	}
	p := write("secondary0", 230, 0, "S", "")
	_, err := Read(p, Options{Primary: true})
	wantErr(t, "--primary, secondary 0", err, p+": line 3: analog channel 1: --primary needs secondary > 0, have 0")
}

// smallCFF is a 2013 single-file recording of 12 samples (v = i+1) of
// type ft, and the 1-based line of its DAT header.
func smallCFF(t *testing.T, ft string) ([]byte, int) {
	t.Helper()
	x := make([]float64, 12)
	for i := range x {
		x[i] = float64(i + 1)
	}
	w := &COMTRADE{Rev: 2013, FileType: ft, Station: "S", Device: "R", LineFreq: 50,
		Segments: []Segment{{Start: 0, End: len(x), Rate: 1000}}, Start: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
		Analogs: []Channel{{ID: "VA", Phase: "A", Unit: "V", A: 1, Primary: 230, Secondary: 230, PS: "P", Samples: x}},
		INF:     "[Public]\nnominal = 100\n"}
	b, err := w.EncodeCFF()
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("--- file type: DAT"))
	if i < 0 {
		t.Fatal("no DAT header")
	}
	return b, 1 + bytes.Count(b[:i], []byte{'\n'})
}

// setDATCount returns b with the byte count of its DAT header replaced
// by count ("" drops it) and the bytes after the header replaced by body.
func setDATCount(t *testing.T, b []byte, ft, count string, body []byte) []byte {
	t.Helper()
	i := bytes.Index(b, []byte("--- file type: DAT"))
	head := "--- file type: DAT " + ft
	if count != "" {
		head += ": " + count
	}
	out := append([]byte{}, b[:i]...)
	out = append(out, head+" ---\n"...)
	return append(out, body...)
}

// datBody returns the data after the DAT header of b.
func datBody(b []byte) []byte {
	i := bytes.Index(b, []byte("--- file type: DAT"))
	return b[i+bytes.IndexByte(b[i:], '\n')+1:]
}

// TestCFFSections checks how a .cff is cut into sections: a blank line
// before the first header is no text outside a section; a count on an
// HDR header is read and ignored; an ASCII DAT count ends the section
// after that many bytes (0: an empty section), so that a line after it is
// outside any section, named by its line; a count beyond the bytes that
// follow is ignored; a binary DAT of 0 bytes has no samples; text after a
// binary DAT section is outside a section, on the line after the body's
// own line ends.
func TestCFFSections(t *testing.T) {
	want := make([]float64, 12)
	for i := range want {
		want[i] = float64(i + 1)
	}
	good, line := smallCFF(t, ASCII)
	body := datBody(good)
	read := func(what string, b []byte) {
		t.Helper()
		rec, err := ReadCFF("s.cff", b, Options{})
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if !slices.Equal(rec.Samples, want) || rec.Nominal != 100 {
			t.Errorf("%s: samples %v, nominal %g; want %v, 100", what, rec.Samples, rec.Nominal, want)
		}
	}
	read("as written", good)
	read("a blank line first", append([]byte("\n"), good...))
	read("HDR: 0", bytes.Replace(good, []byte("--- file type: HDR ---"), []byte("--- file type: HDR: 0 ---"), 1))
	read("a count one beyond the data", setDATCount(t, good, ASCII, fmt.Sprint(len(body)+1), body))
	read("the exact count", setDATCount(t, good, ASCII, fmt.Sprint(len(body)), body))

	lines := bytes.SplitAfter(body, []byte("\n"))
	two := len(lines[0]) + len(lines[1])
	_, err := ReadCFF("s.cff", setDATCount(t, good, ASCII, fmt.Sprint(two), body), Options{})
	wantErr(t, "a count of two lines", err, fmt.Sprintf("s.cff: line %d: text outside a section", line+1+2))
	_, err = ReadCFF("s.cff", setDATCount(t, good, ASCII, "0", body), Options{})
	wantErr(t, "a count of 0", err, fmt.Sprintf("s.cff: line %d: text outside a section", line+1))

	bin, bline := smallCFF(t, Binary)
	bbody := datBody(bin)
	if _, err := ReadCFF("b.cff", bin, Options{}); err != nil {
		t.Fatal(err)
	}
	_, err = ReadCFF("b.cff", setDATCount(t, bin, Binary, "0", nil), Options{})
	wantErr(t, "binary count 0", err, "b.cff: no samples")
	nl := bytes.Count(bbody, []byte{'\n'})
	if nl == 0 {
		t.Fatal("the binary body has no 0x0A byte; the test needs one")
	}
	_, err = ReadCFF("b.cff", append(append([]byte{}, bin...), "junk\n"...), Options{})
	wantErr(t, "text after a binary DAT", err, fmt.Sprintf("b.cff: line %d: text outside a section", bline+1+nl))
}

// TestCFFTypeMismatchLine checks that a DAT section of another type than
// the cfg's names the line of its header.
func TestCFFTypeMismatchLine(t *testing.T) {
	good, line := smallCFF(t, ASCII)
	body := datBody(good)
	_, err := ReadCFF("m.cff", setDATCount(t, good, Binary, fmt.Sprint(len(body)), body), Options{})
	wantErr(t, "BINARY section, ASCII cfg", err, fmt.Sprintf("m.cff: line %d: DAT section of type BINARY, but the CFG's file type is ASCII", line))
}

// TestCFFConfigOnly checks that the phases of a .cff are read from its
// CFG section alone: a file of just that section gives them.
func TestCFFConfigOnly(t *testing.T) {
	good, _ := smallCFF(t, ASCII)
	i := bytes.Index(good, []byte("--- file type: INF"))
	p := filepath.Join(t.TempDir(), "c.cff")
	if err := os.WriteFile(p, good[:i], 0o644); err != nil {
		t.Fatal(err)
	}
	sels, err := PhaseChannels(p, Options{}, []string{"A"})
	if err != nil || !slices.Equal(sels, []string{"A1"}) {
		t.Errorf("PhaseChannels: %v %v, want [A1]", sels, err)
	}
}
