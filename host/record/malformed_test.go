package record

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

const goodCfg = "S,R,1999\n2,1A,1D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n1,T,,,0\n50\n1\n1000,3\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n1\n"
const goodDat = "1,0,1,0\n2,1000,2,1\n3,2000,3,0\n"

// replaceLine returns cfg with line n (1-based) replaced by s.
func replaceLine(cfg string, n int, s string) string {
	l := strings.Split(cfg, "\n")
	l[n-1] = s
	return strings.Join(l, "\n")
}

// TestMalformedCOMTRADE: every broken input is an error naming the file
// and the line (or byte offset) and what was wanted; none panics.
func TestMalformedCOMTRADE(t *testing.T) {
	bin := func(recs ...[]byte) []byte {
		var b []byte
		for _, r := range recs {
			b = append(b, r...)
		}
		return b
	}
	le := binary.LittleEndian
	rec32 := func(n uint32, ts uint32, v uint32) []byte {
		b := le.AppendUint32(nil, n)
		b = le.AppendUint32(b, ts)
		b = le.AppendUint32(b, v)
		return le.AppendUint16(b, 0)
	}
	float32Cfg := strings.Replace(strings.Replace(goodCfg, "ASCII", "FLOAT32", 1), ",1999", ",2013", 1)
	cases := []struct {
		name, cfg, dat string
		want           []string
	}{
		{"bad counts", replaceLine(goodCfg, 2, "2,1X,1D"), goodDat, []string{"x.cfg: line 2:", "TT,##A,##D"}},
		{"huge count", replaceLine(goodCfg, 2, "99999999,99999999A,0D"), goodDat, []string{"x.cfg: line 2:", "counts 0..65536"}},
		{"analog fields", replaceLine(goodCfg, 3, "1,V,A,,V,1,0,0"), goodDat, []string{"x.cfg: line 3:", "8 fields, want 13"}},
		{"unknown revision, broken counts", replaceLine(replaceLine(goodCfg, 1, "S,R,2001"), 2, "x"), goodDat, []string{"x.cfg: line 2:", "TT,##A,##D"}},
		{"analog a", replaceLine(goodCfg, 3, "1,V,A,,V,x,0,0,-1,1,1,1,P"), goodDat, []string{"x.cfg: line 3:", `a "x"`}},
		{"analog a zero", replaceLine(goodCfg, 3, "1,V,A,,V,0,0,0,-1,1,1,1,P"), goodDat, []string{"x.cfg: line 3:", "a is 0"}},
		{"analog PS", replaceLine(goodCfg, 3, "1,V,A,,V,1,0,0,-1,1,1,1,Q"), goodDat, []string{"x.cfg: line 3:", "P (primary) or S"}},
		{"digital fields", replaceLine(goodCfg, 4, "1,T,,0,1,2"), goodDat, []string{"x.cfg: line 4:", "Dn,ch_id,ph,ccbm,y"}},
		{"digital normal", replaceLine(goodCfg, 4, "1,T,,,7"), goodDat, []string{"x.cfg: line 4:", "0 or 1"}},
		{"line frequency", replaceLine(goodCfg, 5, "fifty"), goodDat, []string{"x.cfg: line 5:", "Hz"}},
		{"nrates", replaceLine(goodCfg, 6, "-1"), goodDat, []string{"x.cfg: line 6:", "nrates"}},
		{"samp", replaceLine(goodCfg, 7, "1000"), goodDat, []string{"x.cfg: line 7:", "samp,endsamp"}},
		{"file type", replaceLine(goodCfg, 10, "HEX"), goodDat, []string{"x.cfg: line 10:", "ASCII, BINARY, BINARY32 or FLOAT32"}},
		{"timemult", replaceLine(goodCfg, 11, "0"), goodDat, []string{"x.cfg: line 11:", "timemult"}},
		{"truncated", "S,R,1999\n2,1A,1D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n", goodDat, []string{"x.cfg: line 4:", "digital channel 1"}},
		{"no analog", "S,R,1999\n1,0A,1D\n1,T,,,0\n50\n1\n1000,3\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n1\n", goodDat, []string{"x.cfg: line 2:", "no analog channel"}},
		{"time code", goodCfg[:len(goodCfg)-len("1\n")] + "1\n+25h,0\n", goodDat, []string{"x.cfg:", "revision", "extra line"}},
		{"dat fields", goodCfg, "1,0,1\n", []string{"x.dat: line 1:", "3 fields, want 4"}},
		{"dat value", goodCfg, "1,0,1,0\n2,1000,abc,1\n", []string{"x.dat: line 2:", `value "abc"`}},
		{"dat inf", goodCfg, "1,0,1,0\n2,1000,1e999,1\n", []string{"x.dat: line 2:", "finite"}},
		{"dat sample number", goodCfg, "x,0,1,0\n", []string{"x.dat: line 1:", "sample number"}},
		{"dat timestamp", goodCfg, "1,t,1,0\n", []string{"x.dat: line 1:", "timestamp"}},
		{"float32 inf", float32Cfg, string(bin(rec32(1, 0, math.Float32bits(1)), rec32(2, 1, 0x7F800000))), []string{"x.dat: byte offset 22:", "finite float32"}},
		{"timestamps uneven", replaceLine(replaceLine(goodCfg, 6, "0"), 7, "0,3"), "1,0,1,0\n2,1000,2,1\n3,5000,3,0\n", []string{"x.dat: line 3:", "evenly spaced"}},
		{"timestamps missing", replaceLine(replaceLine(goodCfg, 6, "0"), 7, "0,3"), "1,0,1,0\n2,,2,1\n3,2000,3,0\n", []string{"x.dat: line 2:", "no timestamp"}},
		{"no samples", goodCfg, "", []string{"x.dat:", "no samples"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, err := ReadCOMTRADE("x.cfg", []byte(c.cfg), "x.dat", []byte(c.dat), Options{})
			if c.name == "time code" {
				// An extra line in a 1999 cfg is a warning, not an error.
				if err != nil {
					t.Fatal(err)
				}
				wantWarn(t, rec, "extra line after timemult")
				return
			}
			if err == nil {
				t.Fatalf("no error, want one with %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestMalformedCFF: broken single-file recordings.
func TestMalformedCFF(t *testing.T) {
	w := testWriter(2013, Binary32, []Segment{{Start: 0, End: 10, Rate: 1000}}, false)
	good, err := w.EncodeCFF()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCFF("g.cff", good, Options{}); err != nil {
		t.Fatal(err)
	}
	s := string(good)
	cases := []struct {
		name, in string
		want     []string
	}{
		{"text before", "junk\n" + s, []string{"g.cff: line 1:", "outside a section"}},
		{"bad section", strings.Replace(s, "file type: HDR", "file type: XYZ", 1), []string{"g.cff: line", "CFG, INF, HDR"}},
		{"no count", strings.Replace(s, "DAT BINARY32: ", "DAT BINARY32 ", 1)[:len(s)-10], []string{"g.cff: line", "section"}},
		{"short", s[:len(s)-10], []string{"g.cff: line", "only"}},
		{"type mismatch", strings.Replace(s, "DAT BINARY32", "DAT FLOAT32", 1), []string{"g.cff: line", "CFG's file type is BINARY32"}},
		{"no dat", s[:strings.Index(s, "--- file type: DAT")], []string{"g.cff:", "DAT section"}},
		{"cfg error line", strings.Replace(s, "2,VB,B", "x,VB,B", 1), []string{"g.cff: line 5:", "An"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCFF("g.cff", []byte(c.in), Options{})
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
