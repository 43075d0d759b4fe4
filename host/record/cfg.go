package record

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// COMTRADE data file types (the cfg's ft line).
const (
	ASCII    = "ASCII"
	Binary   = "BINARY"
	Binary32 = "BINARY32"
	Float32  = "FLOAT32"
)

// Analog is an analog channel line of a COMTRADE cfg:
// An,ch_id,ph,ccbm,uu,a,b,skew,min,max[,primary,secondary,PS].
type Analog struct {
	Index              int    // An
	ID, Phase, Circuit string // ch_id, ph, ccbm
	Unit               string // uu
	A, B               float64
	Skew               float64 // µs
	Min, Max           float64
	Primary, Secondary float64 // 0 when absent (1991)
	PS                 string  // "P" or "S"; "" when absent (1991)
	Line               int     // line of the cfg
}

// Digital is a digital (status) channel line: Dn,ch_id,ph,ccbm,y (1999,
// 2013) or Dn,ch_id,y (1991); a line without y, Dn,ch_id,ph,ccbm, is
// read with y = 0 and a warning.
type Digital struct {
	Index              int
	ID, Phase, Circuit string
	Normal             int
}

// Rate is one samp,endsamp line: samples up to EndSamp (1-based,
// inclusive) are at Samp Hz.
type Rate struct {
	Samp    float64
	EndSamp int
}

// Config is a parsed COMTRADE configuration (C37.111-1991/1999/2013).
type Config struct {
	Station, Device string
	Rev             int // 1991, 1999 or 2013
	Analogs         []Analog
	Digitals        []Digital
	LineFreq        float64
	NRates          int
	Rates           []Rate // max(NRates, 1) lines
	Start, Trigger  time.Time
	FileType        string  // ASCII, BINARY, BINARY32 or FLOAT32
	TimeMult        float64 // µs a timestamp unit (1 when absent)
	// 2013 only: the time code and local code line, and the time quality
	// line (empty when absent).
	TimeCode, LocalCode string
	TmqCode             string
	LeapSec             int
	Warnings            []string
}

// Timestamped reports whether the sample times come from the data file's
// timestamps (nrates = 0, or one rate of 0 Hz), not from the rates.
func (c *Config) Timestamped() bool {
	return c.NRates == 0 || (c.NRates == 1 && c.Rates[0].Samp == 0)
}

// Samples returns the number of samples the cfg announces (the last endsamp).
func (c *Config) Samples() int { return c.Rates[len(c.Rates)-1].EndSamp }

// maxChannels bounds the channel counts a cfg may state, so that a
// corrupt count is an error and not an allocation of gigabytes.
const maxChannels = 1 << 16

// cfgParser walks the lines of a cfg.
type cfgParser struct {
	path  string
	lines []string
	first int // line number of lines[0]
	i     int
}

func (p *cfgParser) lineNo() int { return p.first + p.i }

func (p *cfgParser) errf(format string, args ...any) error {
	return lineErr(p.path, p.lineNo(), format, args...)
}

// next returns the fields of the next line, trimmed; ok is false at the end.
func (p *cfgParser) next(what string) ([]string, error) {
	if p.i >= len(p.lines) {
		return nil, lineErr(p.path, p.first+len(p.lines), "the cfg ends before the %s line", what)
	}
	f := strings.Split(p.lines[p.i], ",")
	for k := range f {
		f[k] = strings.TrimSpace(f[k])
	}
	p.i++
	return f, nil
}

func (p *cfgParser) more() bool {
	for p.i < len(p.lines) && strings.TrimSpace(strings.Trim(p.lines[p.i], "\x1a")) == "" {
		p.i++
	}
	return p.i < len(p.lines)
}

// ParseConfig parses the text of a COMTRADE cfg (already UTF-8). first is
// the line number of its first line in path (1 for a .cfg, more inside a
// .cff). Errors name path, the line and what the standard accepts; what
// the standard does not allow but a reader can take (two-digit years, a
// missing timemult) becomes a warning in Config.Warnings.
func ParseConfig(path, text string, first int) (*Config, error) {
	// A DOS end-of-file mark (a run of 0x1A bytes) may follow the last
	// line without a line end: it is not part of that line.
	p := &cfgParser{path: path, lines: splitLines(strings.TrimRight(text, "\x1a")), first: first}
	c := &Config{TimeMult: 1}
	warn := func(format string, args ...any) {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s: line %d: ", path, p.lineNo()-1)+fmt.Sprintf(format, args...))
	}

	// station_name,rec_dev_id,rev_year
	f, err := p.next("station")
	if err != nil {
		return nil, err
	}
	c.Station = f[0]
	if len(f) > 1 {
		c.Device = f[1]
	}
	c.Rev = 1991
	unknownRev := false
	if len(f) > 2 && f[2] != "" {
		switch f[2] {
		case "1991":
		case "1999":
			c.Rev = 1999
		case "2013":
			c.Rev = 2013
		default:
			// Devices write other years (2001, ...): read the file by its
			// layout, as python-comtrade does, and say so.
			unknownRev = true
			c.Rev = p.layoutRev()
			warn("revision year %q is not 1991, 1999 or 2013; read as %d by the file's layout (analog channel lines of %s fields)", f[2], c.Rev, map[bool]string{true: "13", false: "10"}[c.Rev == 1999])
		}
	}

	// TT,##A,##D
	f, err = p.next("channel count (TT,##A,##D)")
	if err != nil {
		return nil, err
	}
	if len(f) < 3 {
		return nil, lineErr(path, p.lineNo()-1, "%d fields, want TT,##A,##D (e.g. 4,3A,1D)", len(f))
	}
	tt, err1 := strconv.Atoi(f[0])
	na, err2 := countField(f[1], 'A')
	nd, err3 := countField(f[2], 'D')
	if err1 != nil || err2 != nil || err3 != nil || tt < 0 || na < 0 || nd < 0 || na > maxChannels || nd > maxChannels {
		return nil, lineErr(path, p.lineNo()-1, "channel counts %q, want TT,##A,##D with counts 0..%d (e.g. 4,3A,1D)", strings.Join(f, ","), maxChannels)
	}
	if tt != na+nd {
		warn("TT = %d, but %dA + %dD = %d: the channel lines are read as %d analog and %d digital", tt, na, nd, na+nd, na, nd)
	}

	for k := 0; k < na; k++ {
		f, err = p.next(fmt.Sprintf("analog channel %d", k+1))
		if err != nil {
			return nil, err
		}
		a, w, err := parseAnalog(f, c.Rev)
		if err != nil {
			return nil, lineErr(path, p.lineNo()-1, "analog channel %d: %v", k+1, err)
		}
		if w != "" {
			warn("analog channel %d: %s", k+1, w)
		}
		a.Line = p.lineNo() - 1
		prev := 0
		if k > 0 {
			prev = c.Analogs[k-1].Index
		}
		// One warning where the numbering leaves 1, 2, 3 ... (a device
		// that skips a number shifts every later channel; one warning
		// says it, not one for each).
		if want := prev + 1; a.Index != want {
			warn("analog channel number %d, want %d (channels are numbered in order; the numbers are kept as written: --channel %d is this line's channel)", a.Index, want, a.Index)
		}
		c.Analogs = append(c.Analogs, a)
	}
	noY, noYLine := 0, 0
	for k := 0; k < nd; k++ {
		f, err = p.next(fmt.Sprintf("digital channel %d", k+1))
		if err != nil {
			return nil, err
		}
		d, err := parseDigital(f)
		if err != nil {
			return nil, lineErr(path, p.lineNo()-1, "digital channel %d: %v", k+1, err)
		}
		if len(f) == 4 {
			// Recorders leave y off (Dn,ch_id,ph,ccbm): python-comtrade
			// pads the line with a 0. One warning, at the first.
			if noY == 0 {
				noYLine = p.lineNo() - 1
			}
			noY++
		}
		if len(f) == 3 && c.Rev > 1991 {
			warn("digital channel %d: the 1991 form Dn,ch_id,y in a %d cfg (read as such)", k+1, c.Rev)
		}
		c.Digitals = append(c.Digitals, d)
	}

	if noY > 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s: line %d: %d digital channel lines of 4 fields (this is the first), read as Dn,ch_id,ph,ccbm with the normal state y taken as 0 (the standard line is Dn,ch_id,ph,ccbm,y)", path, noYLine, noY))
	}

	// lf
	f, err = p.next("line frequency")
	if err != nil {
		return nil, err
	}
	if f[0] == "" {
		warn("no line frequency")
	} else if c.LineFreq, err = strconv.ParseFloat(f[0], 64); err != nil || !(c.LineFreq >= 0) || math.IsInf(c.LineFreq, 0) {
		return nil, lineErr(path, p.lineNo()-1, "line frequency %q, want a number of Hz (e.g. 50)", f[0])
	}

	// nrates, then max(nrates, 1) lines samp,endsamp
	f, err = p.next("nrates")
	if err != nil {
		return nil, err
	}
	c.NRates, err = strconv.Atoi(f[0])
	if err != nil || c.NRates < 0 || c.NRates > 1000 {
		return nil, lineErr(path, p.lineNo()-1, "nrates %q, want an integer 0..1000 (the number of sampling rates)", f[0])
	}
	prev := 0
	for k := 0; k < max(c.NRates, 1); k++ {
		f, err = p.next(fmt.Sprintf("rate %d (samp,endsamp)", k+1))
		if err != nil {
			return nil, err
		}
		if len(f) < 2 {
			return nil, lineErr(path, p.lineNo()-1, "rate %d: %q, want samp,endsamp (e.g. 20000,20000)", k+1, strings.Join(f, ","))
		}
		samp, err1 := strconv.ParseFloat(f[0], 64)
		end, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || !(samp >= 0) || math.IsInf(samp, 0) || end < 0 {
			return nil, lineErr(path, p.lineNo()-1, "rate %d: %q, want samp (Hz >= 0),endsamp (an integer >= 1)", k+1, strings.Join(f, ","))
		}
		if c.NRates > 0 && samp == 0 && c.NRates != 1 {
			return nil, lineErr(path, p.lineNo()-1, "rate %d is 0 Hz; only nrates = 0 (or one rate of 0) means timestamps", k+1)
		}
		if c.NRates > 0 && end <= prev {
			// Relays repeat the last endsamp for unused segments: such a
			// segment holds no samples (python-comtrade never reaches it).
			warn("rate %d: endsamp %d is not more than the previous endsamp %d: an empty segment, ignored", k+1, end, prev)
			continue
		}
		prev = end
		c.Rates = append(c.Rates, Rate{Samp: samp, EndSamp: end})
	}
	if len(c.Rates) == 0 {
		// Every segment was empty (endsamp 0 throughout): no sample has a rate.
		return nil, lineErr(path, p.lineNo()-1, "no rate segment holds a sample: every endsamp of the %d rates is 0 (accepted: an endsamp >= 1, the last sample of a segment)", c.NRates)
	}
	if c.NRates > len(c.Rates) {
		c.NRates = len(c.Rates)
	}

	// start and trigger dates
	for k, dst := range []*time.Time{&c.Start, &c.Trigger} {
		what := []string{"start date", "trigger date"}[k]
		f, err = p.next(what)
		if err != nil {
			return nil, err
		}
		t, w, err := parseDate(f, c.Rev)
		if err != nil {
			warn("%s %q: %v; the time is taken as unknown", what, strings.Join(f, ","), err)
		} else if w != "" {
			warn("%s %q: %s", what, strings.Join(f, ","), w)
		}
		*dst = t
	}

	// ft
	f, err = p.next("file type (ASCII, BINARY, BINARY32 or FLOAT32)")
	if err != nil {
		return nil, err
	}
	c.FileType = strings.ToUpper(f[0])
	switch c.FileType {
	case ASCII, Binary:
	case Binary32, Float32:
		if c.Rev < 2013 {
			warn("file type %s is a 2013 type in a %d cfg", c.FileType, c.Rev)
		}
	default:
		return nil, lineErr(path, p.lineNo()-1, "file type %q, want ASCII, BINARY, BINARY32 or FLOAT32", f[0])
	}

	// timemult (1999, 2013)
	if !p.more() {
		if c.Rev >= 1999 {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s: no timemult line after the file type; taken as 1", path))
		}
		return c, c.check(path, p.first)
	}
	f, _ = p.next("timemult")
	c.TimeMult, err = strconv.ParseFloat(f[0], 64)
	if err != nil || !(c.TimeMult > 0) || math.IsInf(c.TimeMult, 0) {
		return nil, lineErr(path, p.lineNo()-1, "timemult %q, want a number > 0 (the µs of one timestamp unit)", f[0])
	}

	// 2013: time_code,local_code and tmq_code,leapsec
	if p.more() {
		f, _ = p.next("time code")
		if c.Rev < 2013 && unknownRev && len(f) == 2 && validTimeCode(f[0]) && validTimeCode(f[1]) {
			c.Rev = 2013
			warn("a time code line after timemult: read as a 2013 cfg")
		}
		if c.Rev < 2013 {
			warn("extra line after timemult in a %d cfg (ignored)", c.Rev)
			return c, c.check(path, p.first)
		}
		c.TimeCode = f[0]
		if len(f) > 1 {
			c.LocalCode = f[1]
		}
		if !validTimeCode(c.TimeCode) || (c.LocalCode != "" && !validTimeCode(c.LocalCode)) {
			return nil, lineErr(path, p.lineNo()-1, "time code %q, want time_code,local_code as hours with an optional h and minutes (e.g. +5h30,0 or -5,-5)", strings.Join(f, ","))
		}
	}
	if p.more() {
		f, _ = p.next("time quality")
		c.TmqCode = f[0]
		if c.TmqCode != "" {
			if v, err := strconv.ParseUint(c.TmqCode, 16, 8); err != nil || v > 15 {
				return nil, lineErr(path, p.lineNo()-1, "tmq_code %q, want one hexadecimal digit 0..F", c.TmqCode)
			}
		}
		if len(f) > 1 && f[1] != "" {
			c.LeapSec, err = strconv.Atoi(f[1])
			if err != nil || c.LeapSec < 0 || c.LeapSec > 3 {
				return nil, lineErr(path, p.lineNo()-1, "leapsec %q, want 0, 1, 2 or 3", f[1])
			}
		}
	}
	if p.more() {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s: line %d: lines after the last cfg line are ignored", path, p.lineNo()))
	}
	return c, c.check(path, p.first)
}

// layoutRev is the revision a cfg of an unknown revision year is read
// as: 1999 when its first analog channel line (the line after the
// channel counts) has the 13 fields of 1999 and 2013, else 1991.
func (p *cfgParser) layoutRev() int {
	if p.i+1 < len(p.lines) && len(strings.Split(p.lines[p.i+1], ",")) >= 13 {
		return 1999
	}
	return 1991
}

// check is the last check of a parsed cfg.
func (c *Config) check(path string, first int) error {
	if len(c.Analogs) == 0 {
		return lineErr(path, first+1, "no analog channel (##A is 0); a recording needs one")
	}
	return nil
}

func countField(s string, suffix byte) (int, error) {
	s = strings.TrimSpace(s)
	if len(s) == 0 || (s[len(s)-1] != suffix && s[len(s)-1] != suffix+'a'-'A') {
		return 0, fmt.Errorf("no %c suffix", suffix)
	}
	return strconv.Atoi(strings.TrimSpace(s[:len(s)-1]))
}

// parseAnalog parses an analog channel line. A 1999 or 2013 line of the
// 1991 form (10 fields: no primary, secondary, PS) is read with a warning,
// w, as devices write them.
func parseAnalog(f []string, rev int) (a Analog, w string, err error) {
	want := 13
	if rev == 1991 {
		want = 10
	}
	if len(f) != want && len(f) != 10 && len(f) != 13 {
		return Analog{}, "", fmt.Errorf("%d fields, want %d (An,ch_id,ph,ccbm,uu,a,b,skew,min,max%s)", len(f), want, map[bool]string{true: ",primary,secondary,PS"}[want == 13])
	}
	if len(f) == 10 && rev > 1991 {
		w = fmt.Sprintf("the 1991 form of 10 fields in a %d cfg (no primary, secondary, PS: read as such)", rev)
	}
	a, err = parseAnalogFields(f)
	return a, w, err
}

func parseAnalogFields(f []string) (Analog, error) {
	var a Analog
	var err error
	if a.Index, err = strconv.Atoi(f[0]); err != nil {
		return a, fmt.Errorf("An %q, want an integer", f[0])
	}
	a.ID, a.Phase, a.Circuit, a.Unit = f[1], f[2], f[3], f[4]
	nums := []struct {
		name string
		dst  *float64
		s    string
	}{{"a", &a.A, f[5]}, {"b", &a.B, f[6]}, {"skew", &a.Skew, f[7]}, {"min", &a.Min, f[8]}, {"max", &a.Max, f[9]}}
	if len(f) == 13 {
		nums = append(nums, struct {
			name string
			dst  *float64
			s    string
		}{"primary", &a.Primary, f[10]}, struct {
			name string
			dst  *float64
			s    string
		}{"secondary", &a.Secondary, f[11]})
	}
	for _, n := range nums {
		if n.s == "" && (n.name == "skew" || n.name == "b") {
			continue
		}
		v, err := strconv.ParseFloat(n.s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return a, fmt.Errorf("%s %q, want a finite number", n.name, n.s)
		}
		*n.dst = v
	}
	if a.A == 0 {
		return a, fmt.Errorf("multiplier a is 0, want a nonzero number (value = a*x + b)")
	}
	if len(f) == 13 {
		a.PS = strings.ToUpper(f[12])
		if a.PS != "P" && a.PS != "S" {
			return a, fmt.Errorf("PS %q, want P (primary) or S (secondary)", f[12])
		}
		if a.Primary < 0 || a.Secondary < 0 {
			return a, fmt.Errorf("primary %g, secondary %g, want ratings >= 0", a.Primary, a.Secondary)
		}
	}
	return a, nil
}

func parseDigital(f []string) (Digital, error) {
	var d Digital
	var y string
	switch len(f) {
	case 3:
		d.ID, y = f[1], f[2]
	case 4:
		d.ID, d.Phase, d.Circuit = f[1], f[2], f[3]
	case 5:
		d.ID, d.Phase, d.Circuit, y = f[1], f[2], f[3], f[4]
	default:
		return d, fmt.Errorf("%d fields, want Dn,ch_id,ph,ccbm,y (or Dn,ch_id,y in 1991; Dn,ch_id,ph,ccbm is read with y = 0)", len(f))
	}
	var err error
	if d.Index, err = strconv.Atoi(f[0]); err != nil {
		return d, fmt.Errorf("Dn %q, want an integer", f[0])
	}
	if y == "" {
		return d, nil
	}
	if d.Normal, err = strconv.Atoi(y); err != nil || (d.Normal != 0 && d.Normal != 1) {
		return d, fmt.Errorf("normal state %q, want 0 or 1", y)
	}
	return d, nil
}

// validTimeCode accepts the 2013 time code forms: "", "0", "+5", "-5",
// "+5h30", "-10h15", "x" (unknown)... a sign, hours and optional h
// and minutes.
func validTimeCode(s string) bool {
	if s == "" || s == "x" || s == "X" {
		return true
	}
	s = strings.TrimLeft(s, "+-")
	h, m, hasM := strings.Cut(strings.ToLower(s), "h")
	hv, err := strconv.Atoi(h)
	if err != nil || hv < 0 || hv > 14 {
		return false
	}
	if hasM && m != "" {
		mv, err := strconv.Atoi(m)
		return err == nil && mv >= 0 && mv < 60
	}
	return true
}

// parseDate parses "dd/mm/yyyy,hh:mm:ss.ssssss" (1999, 2013) or
// "mm/dd/yy,hh:mm:ss.ssssss" (1991). A two-digit year yy is 19yy for yy
// >= 70, else 20yy (a warning outside 1991). A day/month order that
// cannot be (month > 12) is swapped, with a warning. An all-zero date
// (0/0/0000) is unknown (zero time), with a warning.
func parseDate(f []string, rev int) (time.Time, string, error) {
	if len(f) != 2 {
		return time.Time{}, "", fmt.Errorf("want date,time (e.g. 01/06/2024,12:00:00.000000)")
	}
	d := strings.Split(f[0], "/")
	if len(d) != 3 {
		return time.Time{}, "", fmt.Errorf("date %q, want dd/mm/yyyy", f[0])
	}
	var n [3]int
	for k := range d {
		v, err := strconv.Atoi(strings.TrimSpace(d[k]))
		if err != nil || v < 0 {
			return time.Time{}, "", fmt.Errorf("date %q, want dd/mm/yyyy", f[0])
		}
		n[k] = v
	}
	if n[0] == 0 && n[1] == 0 {
		return time.Time{}, "", fmt.Errorf("no date (zero day and month)")
	}
	day, month, year := n[0], n[1], n[2]
	var warn []string
	if rev == 1991 {
		day, month = n[1], n[0]
	}
	if month > 12 && day <= 12 {
		day, month = month, day
		warn = append(warn, "day and month swapped (a month cannot be above 12)")
	}
	if len(strings.TrimSpace(d[2])) <= 2 {
		if year >= 70 {
			year += 1900
		} else {
			year += 2000
		}
		if rev != 1991 {
			warn = append(warn, fmt.Sprintf("two-digit year taken as %d", year))
		}
	}
	if month < 1 || month > 12 || day < 1 || day > 31 {
		return time.Time{}, "", fmt.Errorf("date %q: day %d, month %d out of range", f[0], day, month)
	}
	tp := strings.Split(f[1], ":")
	if len(tp) != 3 {
		return time.Time{}, "", fmt.Errorf("time %q, want hh:mm:ss.ssssss", f[1])
	}
	hh, err1 := strconv.Atoi(tp[0])
	mm, err2 := strconv.Atoi(tp[1])
	secs, frac, _ := strings.Cut(tp[2], ".")
	ss, err3 := strconv.Atoi(secs)
	if err1 != nil || err2 != nil || err3 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60 || len(frac) > 9 {
		return time.Time{}, "", fmt.Errorf("time %q, want hh:mm:ss.ssssss", f[1])
	}
	ns := 0
	if frac != "" {
		v, err := strconv.Atoi(frac)
		if err != nil || v < 0 {
			return time.Time{}, "", fmt.Errorf("time %q, want hh:mm:ss.ssssss", f[1])
		}
		ns = v
		for k := len(frac); k < 9; k++ {
			ns *= 10
		}
	}
	// a leap second (ss = 60) is checked as :59 (time.Date would roll
	// 23:59:60 into the next day, and the day check refuse it), then
	// added: 23:59:60 is the next day's 00:00:00, Go's time having no
	// leap seconds
	t := time.Date(year, time.Month(month), day, hh, mm, min(ss, 59), ns, time.UTC)
	if t.Day() != day {
		return time.Time{}, "", fmt.Errorf("date %q: day %d does not exist in that month", f[0], day)
	}
	if ss == 60 {
		t = t.Add(time.Second)
	}
	return t, strings.Join(warn, "; "), nil
}
