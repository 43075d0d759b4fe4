package record

import (
	"slices"
	"strings"
	"testing"
)

// TestTolerantCOMTRADE: what devices write beyond the standard is read,
// each deviation a warning naming the file, the line and what was
// assumed, and the recording is the one the standard file gives
// (metamorphic: the same samples, rates and channel): an unknown revision
// year (read by the layout of its analog lines, 13 fields as 1999, 10 as
// 1991, and with a time code line after timemult as 2013), a TT that is
// not ##A + ##D, endsamp repeated for unused rate segments (empty
// segments), 1991-form analog and digital lines in a 1999 cfg.
func TestTolerantCOMTRADE(t *testing.T) {
	ref, err := ReadCOMTRADE("x.cfg", []byte(goodCfg), "x.dat", []byte(goodDat), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.Warnings) != 0 {
		t.Fatalf("the standard file warns: %q", ref.Warnings)
	}
	cfg1991 := "S,R\n2,1A,1D\n1,V,A,,V,1,0,0,-1,1\n1,T,0\n50\n1\n1000,3\n01/01/20,00:00:00\n01/01/20,00:00:00\nASCII\n"
	ref91, err := ReadCOMTRADE("x.cfg", []byte(cfg1991), "x.dat", []byte(goodDat), Options{})
	if err != nil {
		t.Fatal(err)
	}
	twoRates := replaceLine(replaceLine(goodCfg, 6, "2"), 7, "1000,2\n1000,3")
	ref2, err := ReadCOMTRADE("x.cfg", []byte(twoRates), "x.dat", []byte(goodDat), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, cfg string
		ref       *Recording
		warns     []string
		format    string
	}{
		{"year 2001, 1999 layout", replaceLine(goodCfg, 1, "S,R,2001"), ref, []string{"x.cfg: line 1:", `revision year "2001"`, "read as 1999"}, "COMTRADE 1999"},
		{"year 2001, 1991 layout", replaceLine(cfg1991, 1, "S,R,2001"), ref91, []string{"x.cfg: line 1:", "read as 1991"}, "COMTRADE 1991"},
		{"year 2005 with a time code", replaceLine(goodCfg, 1, "S,R,2005") + "+1,+1\n", ref, []string{"read as 1999", "read as a 2013 cfg"}, "COMTRADE 2013"},
		{"TT", replaceLine(goodCfg, 2, "3,1A,1D"), ref, []string{"x.cfg: line 2:", "TT = 3", "read as 1 analog and 1 digital"}, "COMTRADE 1999"},
		{"repeated endsamp", replaceLine(replaceLine(goodCfg, 6, "4"), 7, "1000,2\n1000,3\n1000,3\n1000,3"), ref2,
			[]string{"x.cfg: line 9:", "x.cfg: line 10:", "endsamp 3 is not more than the previous endsamp 3: an empty segment, ignored"}, "COMTRADE 1999"},
		{"1991 analog line", replaceLine(goodCfg, 3, "1,V,A,,V,1,0,0,-1,1"), ref, []string{"x.cfg: line 3:", "the 1991 form of 10 fields in a 1999 cfg"}, "COMTRADE 1999"},
		{"1991 digital line", replaceLine(goodCfg, 4, "1,T,0"), ref, []string{"x.cfg: line 4:", "Dn,ch_id,y in a 1999 cfg"}, "COMTRADE 1999"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, err := ReadCOMTRADE("x.cfg", []byte(c.cfg), "x.dat", []byte(goodDat), Options{})
			if err != nil {
				t.Fatal(err)
			}
			wantWarn(t, rec, c.warns...)
			if !slices.Equal(rec.Samples, c.ref.Samples) || !slices.Equal(rec.Segments, c.ref.Segments) || rec.Channel != c.ref.Channel {
				t.Errorf("samples %v segments %v channel %q, want the standard file's %v %v %q", rec.Samples, rec.Segments, rec.Channel, c.ref.Samples, c.ref.Segments, c.ref.Channel)
			}
			if !strings.HasPrefix(rec.Format, c.format) {
				t.Errorf("format %q, want %q", rec.Format, c.format)
			}
		})
	}
}

// TestDefaultAnalog: without a channel asked, the first voltage channel
// by unit, else by a name beginning with V or U, else the first; the rule
// is said.
func TestDefaultAnalog(t *testing.T) {
	for _, c := range []struct {
		analogs []Analog
		want    int
		why     string
	}{
		{[]Analog{{ID: "IA", Unit: "A"}, {ID: "X", Unit: "kV"}, {ID: "VB", Unit: "V"}}, 1, "unit kV"},
		{[]Analog{{ID: "IA", Unit: "A"}, {ID: "Ub", Unit: "p.u."}, {ID: "VC", Unit: "p.u."}}, 1, "name says voltage"},
		{[]Analog{{ID: "IA", Unit: "A"}, {ID: "IB", Unit: "A"}}, 0, "the first channel (none"},
	} {
		k, why := DefaultAnalog(&Config{Analogs: c.analogs})
		if k != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%+v: channel %d (%s), want %d (%s)", c.analogs, k, why, c.want, c.why)
		}
	}
}

// TestNoRateSegment: a cfg whose every rate segment is empty (endsamp 0,
// which the empty-segment tolerance skips) is an error naming the file
// and the line, not a recording without a time base (the fuzzer found
// the panic).
func TestNoRateSegment(t *testing.T) {
	cfg := replaceLine(replaceLine(goodCfg, 6, "2"), 7, "1000,0\n1000,0")
	_, err := ReadCOMTRADE("x.cfg", []byte(cfg), "x.dat", []byte(goodDat), Options{})
	if err == nil || !strings.Contains(err.Error(), "x.cfg: line 8:") || !strings.Contains(err.Error(), "no rate segment holds a sample") {
		t.Errorf("every endsamp 0: %v", err)
	}
}
