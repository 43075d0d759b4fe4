package record

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// cfg2013 is a 2013 cfg of one analog channel whose last two lines are tc
// and tq.
func cfg2013(tc, tq string) string {
	return "S,R,2013\n1,1A,0D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n50\n1\n1000,3\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n1\n" + tc + "\n" + tq + "\n"
}

// TestTimeQuality: the 2013 time code and time quality lines.
func TestTimeQuality(t *testing.T) {
	for _, c := range []struct {
		tc, tq      string
		code, local string
		tmq         string
		leap        int
		errLine     int
		errText     string
	}{
		{"+5h30,-5", "A,2", "+5h30", "-5", "A", 2, 0, ""},
		{"x,x", "0,0", "x", "x", "0", 0, 0, ""},
		{"-10h15,0", "F,3", "-10h15", "0", "F", 3, 0, ""},
		{"+25,0", "0,0", "", "", "", 0, 11, "time code"},
		{"0,+5h60", "0,0", "", "", "", 0, 11, "time code"},
		{"0,0", "G,0", "", "", "", 0, 12, "tmq_code"},
		{"0,0", "10,0", "", "", "", 0, 12, "tmq_code"},
		{"0,0", "1,4", "", "", "", 0, 12, "leapsec"},
		{"0,0", "1,-1", "", "", "", 0, 12, "leapsec"},
	} {
		cfg, err := ParseConfig("q.cfg", cfg2013(c.tc, c.tq), 1)
		if c.errLine > 0 {
			if want := fmt.Sprintf("q.cfg: line %d: %s", c.errLine, c.errText); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s / %s: error %v, want %q", c.tc, c.tq, err, want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s / %s: %v", c.tc, c.tq, err)
		}
		if cfg.TimeCode != c.code || cfg.LocalCode != c.local || cfg.TmqCode != c.tmq || cfg.LeapSec != c.leap {
			t.Errorf("%s / %s: parsed %q %q %q %d", c.tc, c.tq, cfg.TimeCode, cfg.LocalCode, cfg.TmqCode, cfg.LeapSec)
		}
	}
}

// TestTruncatedData: a data file shorter or longer than the cfg says cuts
// the segments (with a warning).
func TestTruncatedData(t *testing.T) {
	cfg := "S,R,1999\n1,1A,0D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n50\n2\n4000,2\n1000,4\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n1\n"
	for _, c := range []struct {
		n    int
		segs []Segment
		warn string
	}{
		{1, []Segment{{Start: 0, End: 1, Rate: 4000}}, "cut at 1"},
		{2, []Segment{{Start: 0, End: 2, Rate: 4000}}, "cut at 2"},
		{3, []Segment{{Start: 0, End: 2, Rate: 4000}, {Start: 2, End: 3, Rate: 1000}}, "cut at 3"},
		{4, []Segment{{Start: 0, End: 2, Rate: 4000}, {Start: 2, End: 4, Rate: 1000}}, ""},
		{6, []Segment{{Start: 0, End: 2, Rate: 4000}, {Start: 2, End: 4, Rate: 1000}}, "the samples after 4 are ignored"},
	} {
		var dat strings.Builder
		for i := 0; i < c.n; i++ {
			fmt.Fprintf(&dat, "%d,%d,%d\n", i+1, i*250, i)
		}
		rec, err := ReadCOMTRADE("t.cfg", []byte(cfg), "t.dat", []byte(dat.String()), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(rec.Segments) != fmt.Sprint(c.segs) || len(rec.Samples) != min(c.n, 4) {
			t.Errorf("%d samples: segments %v (%d samples), want %v", c.n, rec.Segments, len(rec.Samples), c.segs)
		}
		if c.warn != "" {
			wantWarn(t, rec, c.warn)
		} else if len(rec.Warnings) != 0 {
			t.Errorf("%d samples: warnings %q", c.n, rec.Warnings)
		}
	}
}

// TestTimestampJitter: with nrates = 0, steps may differ from the first
// by max(one timestamp unit, 1 %), not more.
func TestTimestampJitter(t *testing.T) {
	cfg := "S,R,2013\n1,1A,0D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n50\n0\n0,4\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n1\n0,0\n0,0\n"
	ok := "1,0,1\n2,333,2\n3,667,3\n4,1000,4\n" // 3000 Hz in µs
	rec, err := ReadCOMTRADE("j.cfg", []byte(cfg), "j.dat", []byte(ok), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := rec.Rate(); r != 3000 {
		t.Errorf("rate %v, want 3/1000 µs = 3000 Hz", r)
	}
	bad := "1,0,1\n2,333,2\n3,670,3\n4,1000,4\n" // a step 4 µs off: beyond max(1 µs, 1 %)
	if _, err := ReadCOMTRADE("j.cfg", []byte(cfg), "j.dat", []byte(bad), Options{}); err == nil || !strings.Contains(err.Error(), "j.dat: line 3:") {
		t.Errorf("two-unit jitter: %v, want an error at line 3", err)
	}
	dec := "1,10,1\n2,5,2\n"
	if _, err := ReadCOMTRADE("j.cfg", []byte(strings.Replace(cfg, "0,4", "0,2", 1)), "j.dat", []byte(dec), Options{}); err == nil || !strings.Contains(err.Error(), "j.dat: line 2: timestamp 5 after 10") {
		t.Errorf("decreasing: %v", err)
	}
}

// TestDates: the date forms, and the warnings name the cfg line.
func TestDates(t *testing.T) {
	for _, c := range []struct {
		date string
		rev  int
		want time.Time
		warn string
	}{
		{"05/06/2021,01:02:03.123456789", 1999, time.Date(2021, 6, 5, 1, 2, 3, 123456789, time.UTC), ""},
		{"05/06/2021,01:02:03.5", 2013, time.Date(2021, 6, 5, 1, 2, 3, 5e8, time.UTC), ""},
		{"05/06/69,01:02:03", 1999, time.Date(2069, 6, 5, 1, 2, 3, 0, time.UTC), "two-digit year taken as 2069"},
		{"05/06/70,01:02:03", 1999, time.Date(1970, 6, 5, 1, 2, 3, 0, time.UTC), "two-digit year taken as 1970"},
		{"06/05/99,01:02:03", 1991, time.Date(1999, 6, 5, 1, 2, 3, 0, time.UTC), ""},
		{"31/02/2021,00:00:00", 1999, time.Time{}, "does not exist"},
		{"0/0/0000,00:00:00", 1999, time.Time{}, "no date"},
		{"05/06/2021,24:00:00", 1999, time.Time{}, "hh:mm:ss"},
		{"05/06/2021,01:60:00", 1999, time.Time{}, "hh:mm:ss"},
		{"13/13/2021,01:00:00", 1999, time.Time{}, "out of range"},
		{"05-06-2021,01:00:00", 1999, time.Time{}, "dd/mm/yyyy"},
	} {
		head := fmt.Sprintf("S,R,%d\n", c.rev)
		tail := "1,1A,0D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n50\n1\n1000,3\n" + c.date + "\n01/01/2020,00:00:00\nASCII\n1\n"
		if c.rev == 1991 {
			head = "S,R\n"
			tail = "1,1A,0D\n1,V,A,,V,1,0,0,-1,1\n50\n1\n1000,3\n" + c.date + "\n01/01/20,00:00:00\nASCII\n"
		}
		cfg, err := ParseConfig("d.cfg", head+tail, 1)
		if err != nil {
			t.Fatalf("%s: %v", c.date, err)
		}
		if !cfg.Start.Equal(c.want) {
			t.Errorf("%s (%d): %v, want %v", c.date, c.rev, cfg.Start, c.want)
		}
		all := strings.Join(cfg.Warnings, "\n")
		if c.warn != "" && !strings.Contains(all, "d.cfg: line 7: start date") || !strings.Contains(all, c.warn) {
			t.Errorf("%s: warnings %q, want one at line 7 with %q", c.date, cfg.Warnings, c.warn)
		}
		if c.warn == "" && c.rev != 1991 && all != "" {
			t.Errorf("%s: warnings %q, want none", c.date, cfg.Warnings)
		}
	}
}

// TestConfigFields: every field of the analog and digital lines lands
// where it belongs.
func TestConfigFields(t *testing.T) {
	cfg, err := ParseConfig("f.cfg", "St,Dev,1999\n3,1A,2D\n1,IA,A,line 1,kA,0.25,-3,12.5,-100,200,1200,5,s\n1,TRIP,B,brk,1\n2,CLOSE,0\n60\n1\n1000,3\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nbinary\n2.5\n", 1)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Analogs[0]
	if a != (Analog{Index: 1, ID: "IA", Phase: "A", Circuit: "line 1", Unit: "kA", A: 0.25, B: -3, Skew: 12.5, Min: -100, Max: 200, Primary: 1200, Secondary: 5, PS: "S", Line: 3}) {
		t.Errorf("analog %+v", a)
	}
	if d := cfg.Digitals; len(d) != 2 || d[0] != (Digital{1, "TRIP", "B", "brk", 1}) || d[1] != (Digital{2, "CLOSE", "", "", 0}) {
		t.Errorf("digitals %+v", d)
	}
	if cfg.Station != "St" || cfg.Device != "Dev" || cfg.LineFreq != 60 || cfg.FileType != Binary || cfg.TimeMult != 2.5 || cfg.Samples() != 3 {
		t.Errorf("config %+v", cfg)
	}
}
