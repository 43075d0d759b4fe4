package record

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// cfgOf joins cfg lines with line ends (and one after the last).
func cfgOf(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// The lines of a small 1999 cfg of one analog channel, by part.
var (
	edgeHead  = []string{"S,R,1999", "1,1A,0D", "1,VA,A,,V,1,0,0,-1,1,1,1,P"}
	edgeRates = []string{"50", "1", "1000,3"}
	edgeTail  = []string{"01/01/2020,00:00:00", "01/01/2020,00:00:00", "ASCII", "1"}
)

// joinParts concatenates line lists.
func joinParts(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// wantErr fails unless err is an error holding every fragment.
func wantErr(t *testing.T, what string, err error, frags ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one with %q", what, frags)
		return
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("%s: error %q, want %q in it", what, err, f)
		}
	}
}

// TestCfgChannelCounts checks the TT,##A,##D line: TT disagreeing with
// ##A + ##D (0, or more than the sum) is read by the counts with a
// warning giving their sum; a count of exactly maxChannels passes the
// count check (the cfg then ends before the missing channel line, named
// by its number); the suffixes may be lower case.
func TestCfgChannelCounts(t *testing.T) {
	tail := joinParts(edgeRates, edgeTail)
	c, err := ParseConfig("c.cfg", cfgOf(joinParts([]string{"S,R,1999", "0,1A,0D", edgeHead[2]}, tail)...), 1)
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c.Warnings, "c.cfg: line 2: TT = 0, but 1A + 0D = 1")

	na, nd := 1, 1
	c, err = ParseConfig("c.cfg", cfgOf(joinParts([]string{"S,R,1999", "5,1A,1D", edgeHead[2], "1,TRIP,,,0"}, tail)...), 1)
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c.Warnings, fmt.Sprintf("TT = 5, but %dA + %dD = %d", na, nd, na+nd))

	// Lower-case suffixes.
	c, err = ParseConfig("c.cfg", cfgOf(joinParts([]string{"S,R,1999", "2,1a,1d", edgeHead[2], "1,TRIP,,,0"}, tail)...), 1)
	if err != nil || len(c.Analogs) != 1 || len(c.Digitals) != 1 {
		t.Fatalf("1a,1d: %v (%d analog, %d digital), want 1 and 1", err, len(c.Analogs), len(c.Digitals))
	}

	// Counts at the bound pass; the cfg then ends before the next
	// channel line (line 4 is one past the last).
	_, err = ParseConfig("c.cfg", cfgOf("S,R,1999", fmt.Sprintf("1,%dA,0D", maxChannels), edgeHead[2]), 1)
	wantErr(t, "##A = maxChannels", err, "c.cfg: line 4: the cfg ends before the analog channel 2 line")
	_, err = ParseConfig("c.cfg", cfgOf("S,R,1999", fmt.Sprintf("1,1A,%dD", maxChannels), edgeHead[2]), 1)
	wantErr(t, "##D = maxChannels", err, "c.cfg: line 4: the cfg ends before the digital channel 1 line")
	_, err = ParseConfig("c.cfg", cfgOf("S,R,1999", fmt.Sprintf("1,%dA,0D", maxChannels+1), edgeHead[2]), 1)
	wantErr(t, "##A = maxChannels+1", err, "c.cfg: line 2: channel counts", fmt.Sprintf("counts 0..%d", maxChannels))
	_, err = ParseConfig("c.cfg", cfgOf("S,R,1999", fmt.Sprintf("1,1A,%dD", maxChannels+1), edgeHead[2]), 1)
	wantErr(t, "##D = maxChannels+1", err, "c.cfg: line 2: channel counts")
}

// TestCfgChannelLineNumbers checks that the errors and warnings of
// analog and digital channel lines name the channel by its 1-based
// number and the line it is on, and the field count wanted by the
// revision (13 with primary,secondary,PS; 10 in 1991).
func TestCfgChannelLineNumbers(t *testing.T) {
	va := "1,VA,A,,V,1,0,0,-1,1,1,1,P"
	tail := joinParts(edgeRates, edgeTail)
	for _, c := range []struct {
		name  string
		lines []string
		err   string
		warn  string
	}{
		{"bad a of channel 2", []string{"S,R,1999", "2,2A,0D", va, "2,VB,B,,V,x,0,0,-1,1,1,1,P"}, `c.cfg: line 4: analog channel 2: a "x", want a finite number`, ""},
		{"empty a", []string{"S,R,1999", "1,1A,0D", "1,VA,A,,V,,0,0,-1,1,1,1,P"}, `c.cfg: line 3: analog channel 1: a "", want a finite number`, ""},
		{"empty min", []string{"S,R,1999", "1,1A,0D", "1,VA,A,,V,1,0,0,,1,1,1,P"}, `c.cfg: line 3: analog channel 1: min "", want a finite number`, ""},
		{"11 fields in 1999", []string{"S,R,1999", "1,1A,0D", "1,VA,A,,V,1,0,0,-1,1,1"}, "analog channel 1: 11 fields, want 13 (An,ch_id,ph,ccbm,uu,a,b,skew,min,max,primary,secondary,PS)", ""},
		{"11 fields in 1991", []string{"S,R", "1,1A,0D", "1,VA,A,,V,1,0,0,-1,1,1"}, "analog channel 1: 11 fields, want 10 (An,ch_id,ph,ccbm,uu,a,b,skew,min,max)", ""},
		{"bad y of digital 2", []string{"S,R,1999", "3,1A,2D", va, "1,T1,,,0", "2,T2,,,5"}, `c.cfg: line 5: digital channel 2: normal state "5", want 0 or 1`, ""},
		{"1991 form of channel 2", []string{"S,R,1999", "2,2A,0D", va, "2,VB,B,,V,1,0,0,-1,1"}, "", "c.cfg: line 4: analog channel 2: the 1991 form of 10 fields in a 1999 cfg"},
		{"1991 digital form of channel 2", []string{"S,R,1999", "3,1A,2D", va, "1,T1,,,0", "2,T2,1"}, "", "c.cfg: line 5: digital channel 2: the 1991 form Dn,ch_id,y in a 1999 cfg"},
	} {
		lines := joinParts(c.lines, tail)
		if c.lines[0] == "S,R" {
			lines = joinParts(c.lines, edgeRates, edgeTail[:3])
		}
		cfg, err := ParseConfig("c.cfg", cfgOf(lines...), 1)
		if c.err != "" {
			wantErr(t, c.name, err, c.err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		wantWarnings(t, cfg.Warnings, c.warn)
	}
}

// TestCfg1991NoWarnings checks that a 1991 cfg in its own forms (analog
// lines of 10 fields, digital lines Dn,ch_id,y, no timemult line) parses
// without a single warning.
func TestCfg1991NoWarnings(t *testing.T) {
	cfg := cfgOf("S,R", "3,1A,2D", "1,VA,A,,V,1,0,0,-1,1", "1,T1,0", "2,T2,1", "50", "1", "1000,3", "01/01/20,00:00:00", "01/01/20,00:00:00", "ASCII")
	c, err := ParseConfig("o.cfg", cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings %q, want none", c.Warnings)
	}
	if len(c.Digitals) != 2 || c.Digitals[1].Normal != 1 {
		t.Errorf("digitals %+v, want T1 (y 0), T2 (y 1)", c.Digitals)
	}
}

// TestCfgOptionalAnalogFields checks that b and skew may be empty (taken
// as 0) while a may not.
func TestCfgOptionalAnalogFields(t *testing.T) {
	cfg := cfgOf(joinParts([]string{"S,R,1999", "1,1A,0D", "1,VA,A,,V,0.5,,,-1,1,1,1,P"}, edgeRates, edgeTail)...)
	c, err := ParseConfig("o.cfg", cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Analogs[0]; a.A != 0.5 || a.B != 0 || a.Skew != 0 || a.Min != -1 || a.Max != 1 {
		t.Errorf("analog %+v, want a 0.5, b 0, skew 0, min -1, max 1", a)
	}
}

// TestCfgRateLines checks the lf, nrates and samp,endsamp lines at their
// bounds: lf 0 is accepted; nrates 1000 (the most) is; nrates 1 with a
// rate of 0 Hz means timestamps, as nrates 0 does (whose endsamp line is
// not an empty segment even at 0); nrates 2 with a 0 Hz rate is an error;
// a missing or short rate line names the rate by number; a segment whose
// endsamp repeats the previous one is ignored with a warning and nrates
// counts only the rates kept.
func TestCfgRateLines(t *testing.T) {
	parse := func(rates ...string) (*Config, error) {
		return ParseConfig("r.cfg", cfgOf(joinParts(edgeHead, rates, edgeTail)...), 1)
	}
	c, err := parse("0", "1", "1000,3")
	if err != nil || c.LineFreq != 0 {
		t.Errorf("lf 0: %v (lf %g)", err, c.LineFreq)
	}

	many := []string{"50", "1000"}
	for k := 1; k <= 1000; k++ {
		many = append(many, fmt.Sprintf("1000,%d", k))
	}
	if c, err = parse(many...); err != nil || len(c.Rates) != 1000 || c.NRates != 1000 || c.Samples() != 1000 {
		t.Errorf("nrates 1000: %v", err)
	}
	_, err = parse("50", "1001", "1000,3")
	wantErr(t, "nrates 1001", err, "r.cfg: line 5: nrates \"1001\", want an integer 0..1000")

	if c, err = parse("50", "1", "0,4"); err != nil || !c.Timestamped() {
		t.Errorf("nrates 1, rate 0: %v, want timestamps", err)
	}
	if c, err = parse("50", "1", "1000,4"); err != nil || c.Timestamped() {
		t.Errorf("nrates 1, rate 1000: %v, timestamped %v", err, c != nil && c.Timestamped())
	}
	if c, err = parse("50", "0", "0,0"); err != nil || !c.Timestamped() || c.NRates != 0 || len(c.Rates) != 1 {
		t.Errorf("nrates 0, endsamp 0: %v, want timestamps with nrates 0 and its one line", err)
	}
	if c, err = parse("50", "0", "0,5"); err != nil || c.NRates != 0 {
		t.Errorf("nrates 0: %v, nrates %d", err, c.NRates)
	}

	_, err = parse("50", "2", "0,2", "1000,4")
	wantErr(t, "nrates 2 with a 0 Hz rate", err, "r.cfg: line 6: rate 1 is 0 Hz; only nrates = 0 (or one rate of 0) means timestamps")
	_, err = ParseConfig("r.cfg", cfgOf(joinParts(edgeHead, []string{"50", "2", "1000,3"})...), 1)
	wantErr(t, "one rate line of two", err, "r.cfg: line 7: the cfg ends before the rate 2 (samp,endsamp) line")
	_, err = parse("50", "2", "1000,3", "2000")
	wantErr(t, "a rate line of one field", err, `r.cfg: line 7: rate 2: "2000", want samp,endsamp`)

	c, err = parse("50", "2", "1000,3", "2000,3")
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c.Warnings, "r.cfg: line 7: rate 2: endsamp 3 is not more than the previous endsamp 3: an empty segment, ignored")
	if c.NRates != len(c.Rates) || len(c.Rates) != 1 {
		t.Errorf("nrates %d with %d rates kept, want 1 and 1", c.NRates, len(c.Rates))
	}
}

// TestCfgTimemultAndCodes checks the lines after the file type: a 1999
// cfg without timemult warns (1991 has none to miss); a 2013 time code
// line or time quality line of one field leaves the second empty; the
// time code bounds are hours 0..14 and minutes 0..59.
func TestCfgTimemultAndCodes(t *testing.T) {
	c, err := ParseConfig("t.cfg", cfgOf(joinParts(edgeHead, edgeRates, edgeTail[:3])...), 1)
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c.Warnings, "t.cfg: no timemult line after the file type; taken as 1")
	c, err = ParseConfig("t.cfg", cfgOf("S,R", "1,1A,0D", "1,VA,A,,V,1,0,0,-1,1", "50", "1", "1000,3", "01/01/20,00:00:00", "01/01/20,00:00:00", "ASCII"), 1)
	if err != nil || len(c.Warnings) != 0 {
		t.Errorf("1991 without timemult: %v, warnings %q", err, c.Warnings)
	}

	c, err = ParseConfig("t.cfg", cfg2013("0", "A"), 1)
	if err != nil || c.TimeCode != "0" || c.LocalCode != "" || c.TmqCode != "A" || c.LeapSec != 0 {
		t.Errorf("one-field code lines: %v; %q %q %q %d", err, c.TimeCode, c.LocalCode, c.TmqCode, c.LeapSec)
	}
	for _, tc := range []string{"+14,0", "-14,+5h00", "+5h59,0"} {
		if c, err := ParseConfig("t.cfg", cfg2013(tc, "0,0"), 1); err != nil || c.TimeCode+","+c.LocalCode != tc {
			t.Errorf("time code %s: %v", tc, err)
		}
	}
	for _, tc := range []string{"+15,0", "0,+5h60"} {
		_, err := ParseConfig("t.cfg", cfg2013(tc, "0,0"), 1)
		wantErr(t, "time code "+tc, err, "t.cfg: line 11: time code")
	}
}

// TestCfgUnknownRevision checks that an unknown revision year is read by
// the layout of the first analog line, which the warning names (13
// fields: 1999; 10: 1991), and that a cfg ending right after the counts
// is an error, not a crash.
func TestCfgUnknownRevision(t *testing.T) {
	for _, c := range []struct {
		analog string
		rev    int
		fields string
	}{
		{"1,VA,A,,V,1,0,0,-1,1,1,1,P", 1999, "13"},
		{"1,VA,A,,V,1,0,0,-1,1", 1991, "10"},
	} {
		cfg, err := ParseConfig("u.cfg", cfgOf(joinParts([]string{"S,R,2001", "1,1A,0D", c.analog}, edgeRates, edgeTail)...), 1)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`u.cfg: line 1: revision year "2001" is not 1991, 1999 or 2013; read as %d by the file's layout (analog channel lines of %s fields)`, c.rev, c.fields)
		if cfg.Rev != c.rev {
			t.Errorf("rev %d, want %d", cfg.Rev, c.rev)
		}
		wantWarnings(t, cfg.Warnings, want)
	}
	_, err := ParseConfig("u.cfg", cfgOf("S,R,2001", "1,1A,0D"), 1)
	wantErr(t, "no analog line", err, "u.cfg: line 3: the cfg ends before the analog channel 1 line")
}

// TestCfgDateBounds checks dates at their bounds: month 12 with a day
// below 13 is not swapped (only a month above 12 is), and second 60 (a
// leap second) is accepted, falling on the next minute, also at the end
// of a day (23:59:60 is the next day's 00:00:00; time.Date's roll-over
// once made the day check refuse it).
func TestCfgDateBounds(t *testing.T) {
	for _, c := range []struct {
		date string
		want time.Time
	}{
		{"05/12/2021,01:02:03", time.Date(2021, 12, 5, 1, 2, 3, 0, time.UTC)},
		{"12/05/2021,01:02:03", time.Date(2021, 5, 12, 1, 2, 3, 0, time.UTC)},
		{"15/06/2015,12:34:60.000000", time.Date(2015, 6, 15, 12, 35, 0, 0, time.UTC)},
		{"31/12/2016,23:59:60.000000", time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"30/06/2015,23:59:60.500000", time.Date(2015, 7, 1, 0, 0, 0, 5e8, time.UTC)},
	} {
		cfg, err := ParseConfig("d.cfg", cfgOf(joinParts(edgeHead, edgeRates, []string{c.date}, edgeTail[1:])...), 1)
		if err != nil {
			t.Fatal(err)
		}
		if !cfg.Start.Equal(c.want) || len(cfg.Warnings) != 0 {
			t.Errorf("%s: %v, warnings %q; want %v and none", c.date, cfg.Start, cfg.Warnings, c.want)
		}
	}
}
