package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Missing-value markers of the COMTRADE data files (see doc.go).
const (
	missingASCII    = 99999         // 1991/1999 ASCII analog value
	missingBinary   = math.MinInt16 // 0x8000, BINARY
	missingBinary32 = math.MinInt32 // 0x80000000, BINARY32
	missingStamp    = 0xFFFFFFFF    // binary timestamp
)

// channelData is what the data file gives for one analog channel.
type channelData struct {
	raw    []float64 // x as stored; NaN where missing
	stamps []float64 // timestamps in file units (NaN where missing)
	where  []int64   // line (ASCII) or byte offset (binary) of each sample
	lines  bool      // where holds lines
}

// pickAnalog returns the index into c.Analogs of the channel named by
// sel: "" the first voltage channel (DefaultAnalog), else a ch_id (exact,
// then case-insensitive), else a channel number An as "n" or "An" ("2",
// "A2", "a2"). A digital channel ("Dn") holds status bits, not a
// waveform, and is refused. An error lists the accepted forms and the
// file's channels.
func pickAnalog(path string, c *Config, sel string) (int, error) {
	if sel == "" {
		k, _ := DefaultAnalog(c)
		return k, nil
	}
	for k, a := range c.Analogs {
		if a.ID == sel {
			return k, nil
		}
	}
	for k, a := range c.Analogs {
		if strings.EqualFold(a.ID, sel) {
			return k, nil
		}
	}
	num, prefix := sel, byte(0)
	if len(sel) > 1 && strings.ContainsRune("AaDd", rune(sel[0])) {
		num, prefix = sel[1:], sel[0]|0x20
	}
	n, err := strconv.Atoi(num)
	if err == nil && prefix != 'd' {
		for k, a := range c.Analogs {
			if a.Index == n {
				return k, nil
			}
		}
	}
	const accepted = `accepted: an analog channel's ch_id, its number n or An, e.g. "VA", "2", "A2"`
	list := channelList(c)
	digital := err == nil && prefix == 'd'
	for _, d := range c.Digitals {
		digital = digital || strings.EqualFold(d.ID, sel)
	}
	if digital {
		return 0, fmt.Errorf("record: %s: channel %q: a digital (status) channel is not a waveform to import (%s); the channels are %s", path, sel, accepted, list)
	}
	return 0, fmt.Errorf("record: %s: no analog channel %q (%s); the channels are %s", path, sel, accepted, list)
}

// DefaultAnalog is the channel taken when none is asked: the first whose
// unit is a voltage (V or kV), else the first whose ch_id names one (it
// begins with V or U, as VA, Ua, U_L1, V1 do), else the first; why says
// which rule chose it.
func DefaultAnalog(c *Config) (k int, why string) {
	for k, a := range c.Analogs {
		if isVoltage(a.Unit) {
			return k, fmt.Sprintf("the first voltage channel (unit %s)", a.Unit)
		}
	}
	for k, a := range c.Analogs {
		if id := strings.TrimSpace(a.ID); id != "" && strings.ContainsRune("VvUu", rune(id[0])) {
			return k, "the first channel whose name says voltage (no channel has the unit V or kV)"
		}
	}
	return 0, "the first channel (none has the unit V or kV, or a name beginning with V or U)"
}

// channelList describes the channels of c for an error: "analog (An ch_id)
// A1 "VA", A2 "VB"; digital D1 "TRIP"" (at most 40 of each kind).
func channelList(c *Config) string {
	kind := func(what string, n int, name func(int) string) string {
		if n == 0 {
			return "no " + what
		}
		var names []string
		for k := range min(n, 40) {
			names = append(names, name(k))
		}
		if n > 40 {
			names = append(names, fmt.Sprintf("... (%d in all)", n))
		}
		return what + " " + strings.Join(names, ", ")
	}
	return kind("analog (An ch_id)", len(c.Analogs), func(k int) string { return fmt.Sprintf("A%d %q", c.Analogs[k].Index, c.Analogs[k].ID) }) +
		"; " + kind("digital (Dn ch_id)", len(c.Digitals), func(k int) string { return fmt.Sprintf("D%d %q", c.Digitals[k].Index, c.Digitals[k].ID) })
}

// parseASCIIDat reads channel k of an ASCII data file: one sample a line,
// n,timestamp,A1..Ak,D1..Dm. first is the line number of text's first line.
// Empty lines between the samples (some recorders end every sample line
// with two line ends) are skipped, with one warning naming the first of
// them and their count (python-comtrade fails on them).
func parseASCIIDat(path, text string, first int, c *Config, k int, warn func(string, ...any)) (*channelData, error) {
	// A DOS end-of-file mark (a run of 0x1A bytes) ends the text, on a
	// line of its own or after the last sample; trailing blank lines are
	// dropped.
	lines := splitLines(strings.TrimRight(text, "\x1a"))
	for len(lines) > 0 && strings.TrimSpace(strings.Trim(lines[len(lines)-1], "\x1a")) == "" {
		lines = lines[:len(lines)-1]
	}
	want := 2 + len(c.Analogs) + len(c.Digitals)
	d := &channelData{raw: make([]float64, 0, len(lines)), stamps: make([]float64, 0, len(lines)), where: make([]int64, 0, len(lines)), lines: true}
	blank, firstBlank := 0, 0
	missing2013, firstMissing := 0, 0
	defer func() {
		if missing2013 > 0 {
			warn("%s: line %d: analog channel %d (%s): %d value(s) of 99999 from this line on read as missing (a 2013 file marks a missing value with an empty field; 99999 is the 1991/1999 marker, and python-comtrade reads it as missing too)", path, firstMissing, k+1, c.Analogs[k].ID, missing2013)
		}
		if blank > 0 {
			warn("%s: line %d: %d empty lines between the samples skipped (this is the first; the samples are the %d non-empty lines)", path, firstBlank, blank, len(d.raw))
		}
	}()
	for i, l := range lines {
		line := first + i
		if strings.TrimSpace(l) == "" {
			if blank == 0 {
				firstBlank = line
			}
			blank++
			continue
		}
		nf := strings.Count(l, ",") + 1
		if nf == want+1 && strings.HasSuffix(strings.TrimSpace(l), ",") {
			nf = want // a trailing comma
		}
		if nf != want {
			return nil, lineErr(path, line, "%d fields, want %d (n,timestamp,%d analog,%d digital values)", nf, want, len(c.Analogs), len(c.Digitals))
		}
		// Fields 0 (n), 1 (timestamp) and 2+k (the channel).
		var f0, f1, fk string
		rest := l
		for j := 0; j <= 2+k; j++ {
			field, r, _ := strings.Cut(rest, ",")
			rest = r
			switch j {
			case 0:
				f0 = strings.TrimSpace(field)
			case 1:
				f1 = strings.TrimSpace(field)
			case 2 + k:
				fk = strings.TrimSpace(field)
			}
		}
		if _, err := strconv.ParseInt(f0, 10, 64); err != nil {
			return nil, lineErr(path, line, "sample number %q, want an integer", clip(f0))
		}
		ts := math.NaN()
		if f1 != "" {
			v, err := strconv.ParseFloat(f1, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, lineErr(path, line, "timestamp %q, want an integer (or empty: missing)", clip(f1))
			}
			ts = v
		}
		x := math.NaN()
		if fk != "" {
			v, err := strconv.ParseFloat(fk, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, lineErr(path, line, "analog channel %d value %q, want a finite number (or empty: missing)", k+1, clip(fk))
			}
			switch {
			case v != missingASCII:
				x = v
			case c.Rev >= 2013:
				if missing2013 == 0 {
					firstMissing = line
				}
				missing2013++
			}
		}
		d.raw = append(d.raw, x)
		d.stamps = append(d.stamps, ts)
		d.where = append(d.where, int64(line))
	}
	return d, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// recordSize returns the bytes of one binary sample.
func recordSize(c *Config) int {
	w := 2
	if c.FileType != Binary {
		w = 4
	}
	return 8 + w*len(c.Analogs) + 2*((len(c.Digitals)+15)/16)
}

// parseBinaryDat reads channel k of a BINARY, BINARY32 or FLOAT32 data
// file; base is the byte offset of b in path.
func parseBinaryDat(path string, b []byte, base int64, c *Config, k int, warn func(string, ...any)) (*channelData, error) {
	size := recordSize(c)
	n := len(b) / size
	if rem := len(b) % size; rem != 0 {
		warn("%s: byte offset %d: %d bytes after the last whole sample of %d bytes are ignored", path, base+int64(n*size), rem, size)
	}
	d := &channelData{raw: make([]float64, n), stamps: make([]float64, n), where: make([]int64, n)}
	le := binary.LittleEndian
	for i := 0; i < n; i++ {
		r := b[i*size : (i+1)*size]
		off := base + int64(i*size)
		d.where[i] = off
		if ts := le.Uint32(r[4:]); ts == missingStamp {
			d.stamps[i] = math.NaN()
		} else {
			d.stamps[i] = float64(ts)
		}
		x := math.NaN()
		switch c.FileType {
		case Binary:
			if v := int16(le.Uint16(r[8+2*k:])); v != missingBinary {
				x = float64(v)
			}
		case Binary32:
			if v := int32(le.Uint32(r[8+4*k:])); v != missingBinary32 {
				x = float64(v)
			}
		case Float32:
			v := math.Float32frombits(le.Uint32(r[8+4*k:]))
			if math.IsInf(float64(v), 0) {
				return nil, offsetErr(path, off+8+4*int64(k), "analog channel %d value is %v, want a finite float32 (NaN: missing)", k+1, v)
			}
			x = float64(v) // NaN stays NaN: missing
		}
		d.raw[i] = x
	}
	return d, nil
}

// ReadCOMTRADE reads one channel of a COMTRADE recording from the bytes
// of its cfg and data files (paths are for messages).
func ReadCOMTRADE(cfgPath string, cfgBytes []byte, datPath string, dat []byte, opt Options) (*Recording, error) {
	return readCOMTRADE(cfgPath, cfgBytes, datPath, dat, "", opt)
}

// readCOMTRADE is ReadCOMTRADE with the text of the recording's INF file.
func readCOMTRADE(cfgPath string, cfgBytes []byte, datPath string, dat []byte, inf string, opt Options) (*Recording, error) {
	text, enc, guessed, err := decodeText(cfgBytes, opt.Encoding)
	if err != nil {
		return nil, fmt.Errorf("record: %s: %w", cfgPath, err)
	}
	c, err := ParseConfig(cfgPath, text, 1)
	if err != nil {
		return nil, err
	}
	rec := &Recording{Path: cfgPath}
	if guessed {
		rec.warnf("%s: not UTF-8; read as %s (give the encoding to be sure)", cfgPath, enc)
	}
	return fromConfig(rec, c, inf, datPath, dat, 1, 0, opt)
}

// fromConfig reads the channel from dat and fills rec. datLine is the line
// of dat's first line (ASCII), datBase its byte offset (binary).
func fromConfig(rec *Recording, c *Config, inf, datPath string, dat []byte, datLine int, datBase int64, opt Options) (*Recording, error) {
	rec.Warnings = append(rec.Warnings, c.Warnings...)
	k, err := pickAnalog(rec.Path, c, opt.Channel)
	if err != nil {
		return nil, err
	}
	a := c.Analogs[k]
	if opt.Channel == "" && len(c.Analogs) > 1 {
		_, why := DefaultAnalog(c)
		rec.warnf("no channel asked: took A%d %q, %s (accepted: a channel by its ch_id or number)", a.Index, a.ID, why)
	}
	var d *channelData
	if c.FileType == ASCII {
		text, _, _, err := decodeText(dat, opt.Encoding)
		if err != nil {
			return nil, fmt.Errorf("record: %s: %w", datPath, err)
		}
		d, err = parseASCIIDat(datPath, text, datLine, c, k, rec.warnf)
		if err != nil {
			return nil, err
		}
	} else {
		d, err = parseBinaryDat(datPath, dat, datBase, c, k, rec.warnf)
		if err != nil {
			return nil, err
		}
	}
	n := len(d.raw)
	if n == 0 {
		return nil, fmt.Errorf("record: %s: no samples", datPath)
	}
	if want := c.Samples(); n != want {
		if n > want && want > 0 {
			rec.warnf("%s: %d samples, the cfg says %d; the samples after %d are ignored", datPath, n, want, want)
			n = want
		} else {
			rec.warnf("%s: %d samples, the cfg says %d; the recording is cut at %d", datPath, n, want, n)
		}
	}

	rec.Format = fmt.Sprintf("COMTRADE %d %s", c.Rev, c.FileType)
	rec.Station, rec.Channel, rec.Index, rec.Unit, rec.Phase = c.Station, a.ID, a.Index, a.Unit, a.Phase
	rec.LineFreq, rec.Start, rec.Trigger = c.LineFreq, c.Start, c.Trigger

	// value = a*x + b, times primary/secondary if asked.
	scale := 1.0
	if opt.Primary && a.PS == "S" {
		if !(a.Secondary > 0) {
			return nil, lineErr(rec.Path, a.Line, "analog channel %d: --primary needs secondary > 0, have %g", a.Index, a.Secondary)
		}
		scale = a.Primary / a.Secondary
	}
	rec.Samples = make([]float64, n)
	for i := 0; i < n; i++ {
		x := d.raw[i]
		v := (a.A*x + a.B) * scale
		if math.IsInf(v, 0) {
			return nil, locErr(datPath, d, i, "analog channel %d: a*x+b = %v, want a finite value", a.Index, v)
		}
		rec.Samples[i] = v // NaN stays NaN: missing
	}

	if err := c.segments(rec, d, n, datPath); err != nil {
		return nil, err
	}
	rec.nominal(c, a, inf, opt)
	rec.finish()
	return rec, nil
}

func locErr(path string, d *channelData, i int, format string, args ...any) error {
	if d.lines {
		return lineErr(path, int(d.where[i]), format, args...)
	}
	return offsetErr(path, d.where[i], format, args...)
}

// segments sets rec.Segments from the rates, or from the timestamps when
// the cfg says so.
func (c *Config) segments(rec *Recording, d *channelData, n int, datPath string) error {
	if !c.Timestamped() {
		start := 0
		for k, r := range c.Rates {
			end := min(r.EndSamp, n)
			if end > start {
				rec.Segments = append(rec.Segments, Segment{Start: start, End: end, Rate: r.Samp})
			}
			start = end
			if k == len(c.Rates)-1 && start < n {
				rec.Segments[len(rec.Segments)-1].End = n
			}
		}
		rec.splitJumps(d.stamps, c.TimeMult, datPath)
		return nil
	}
	// Timestamps: times t_i = stamp_i * timemult µs; they must be evenly
	// spaced to within one timestamp unit (or 1 % of the step).
	if n < 2 {
		return locErr(datPath, d, 0, "nrates = 0 (times from the timestamps) needs at least 2 samples")
	}
	for i := 0; i < n; i++ {
		if math.IsNaN(d.stamps[i]) {
			return locErr(datPath, d, i, "sample %d has no timestamp, but the cfg has nrates = 0 (times from the timestamps)", i+1)
		}
	}
	// The first step is the reference; the rate is the mean step's.
	step := (d.stamps[1] - d.stamps[0]) * c.TimeMult
	if !(step > 0) {
		return locErr(datPath, d, 1, "timestamp %g after %g: timestamps must increase", d.stamps[1], d.stamps[0])
	}
	tol := math.Max(c.TimeMult, 0.01*step)
	for i := 1; i < n; i++ {
		dt := (d.stamps[i] - d.stamps[i-1]) * c.TimeMult
		if math.Abs(dt-step) > tol {
			return locErr(datPath, d, i, "timestamp step %g µs, want %g µs ± %g (nrates = 0: the samples must be evenly spaced to be resampled)", dt, step, tol)
		}
	}
	rate := 1e6 * float64(n-1) / ((d.stamps[n-1] - d.stamps[0]) * c.TimeMult)
	rec.Segments = []Segment{{Start: 0, End: n, Rate: rate}}
	rec.warnf("%s: nrates = 0: rate %.6g Hz measured from the timestamps (timemult %g)", datPath, rate, c.TimeMult)
	return nil
}

// JumpFactor: consecutive timestamps further apart than JumpFactor
// sample periods of their rate segment are a jump (a recorder that
// paused), which the import treats as a gap.
const JumpFactor = 10

// splitJumps splits rec's rate segments where the timestamps (in units
// of timemult µs; NaN: missing) jump by more than JumpFactor sample
// periods: the samples after a jump start a segment of the same rate
// whose Skip is the time skipped, and a warning names the samples and the
// jump. Timestamps that merely disagree with the rate (a steady ratio, a
// clock's rounding, zeros) are not jumps.
func (rec *Recording) splitJumps(stamps []float64, timemult float64, datPath string) {
	if timemult <= 0 {
		timemult = 1
	}
	var out []Segment
	for k, s := range rec.Segments {
		period := 1e6 / s.Rate // µs
		// the step across a border of rate segments: a jump there starts
		// the segment after a gap (by the longer of the two periods)
		if i := s.Start; k > 0 && i > 0 && i < len(stamps) {
			dt := (stamps[i] - stamps[i-1]) * timemult
			if prev := 1e6 / rec.Segments[k-1].Rate; dt > JumpFactor*max(period, prev) {
				s.Skip = (dt - period) / 1e6
				rec.warnf("%s: the timestamps jump by %.6g s between samples %d and %d (the border of rate segments %d and %d): taken as a gap of %.6g s; no window straddles it, and times after it follow the timestamps",
					datPath, dt/1e6, i, i+1, k, k+1, s.Skip)
			}
		}
		for i := s.Start + 1; i < s.End && i < len(stamps); i++ {
			dt := (stamps[i] - stamps[i-1]) * timemult
			if !(dt > JumpFactor*period) { // NaN: a missing timestamp, no jump
				continue
			}
			skip := (dt - period) / 1e6
			out = append(out, Segment{Start: s.Start, End: i, Rate: s.Rate, Skip: s.Skip})
			rec.warnf("%s: the timestamps jump by %.6g s between samples %d and %d (rate segment %d, %g Hz: one sample is %.6g µs): taken as a gap of %.6g s; no window straddles it, and times after it follow the timestamps",
				datPath, dt/1e6, i, i+1, k+1, s.Rate, period, skip)
			s = Segment{Start: i, End: s.End, Rate: s.Rate, Skip: skip}
		}
		out = append(out, s)
	}
	rec.Segments = out
}

// nominal sets the nominal RMS value: an INF "nominal" entry, else the
// channel's primary (values in primary units) or secondary rating.
func (rec *Recording) nominal(c *Config, a Analog, inf string, opt Options) {
	if v, ok := infNominal(inf); ok {
		rec.Nominal, rec.NominalSource = v, "INF nominal"
		return
	}
	if a.PS == "" || (a.Primary <= 1 && a.Secondary <= 1) {
		return
	}
	if a.PS == "P" || opt.Primary {
		rec.Nominal, rec.NominalSource = a.Primary, fmt.Sprintf("primary rating of channel %d in the cfg", a.Index)
	} else {
		rec.Nominal, rec.NominalSource = a.Secondary, fmt.Sprintf("secondary rating of channel %d in the cfg", a.Index)
	}
}

// infNominal finds "nominal = V" or "nominal_voltage = V" (any case, any
// section) in the text of a COMTRADE INF section.
func infNominal(inf string) (float64, bool) {
	for _, l := range splitLines(inf) {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "nominal", "nominal_voltage":
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil && x > 0 && !math.IsInf(x, 0) {
				return x, true
			}
		}
	}
	return 0, false
}

// cffSection is one section of a .cff file.
type cffSection struct {
	kind  string // CFG, INF, HDR, DAT
	dtype string // for DAT: ASCII, BINARY, BINARY32, FLOAT32
	body  []byte
	line  int   // line of the body's first line in the file
	off   int64 // byte offset of the body
}

// splitCFF splits a COMTRADE 2013 .cff into its sections, headed by lines
// "--- file type: CFG ---", "--- file type: INF ---", "--- file type:
// HDR ---", "--- file type: DAT ASCII[: n] ---" or "--- file type: DAT
// BINARY|BINARY32|FLOAT32: n ---" (n: the byte count of the binary body).
func splitCFF(path string, b []byte) ([]cffSection, error) {
	var secs []cffSection
	line, pos := 1, 0
	cur := -1
	for pos < len(b) {
		end := bytes.IndexByte(b[pos:], '\n')
		next := len(b)
		if end >= 0 {
			next = pos + end + 1
		}
		text := strings.TrimSpace(string(b[pos:min(next, len(b))]))
		if kind, dtype, count, ok, err := cffHeader(text); ok || err != nil {
			if err != nil {
				return nil, lineErr(path, line, "%v", err)
			}
			if cur >= 0 {
				secs[cur].body = b[secs[cur].off:pos]
			}
			s := cffSection{kind: kind, dtype: dtype, line: line + 1, off: int64(next)}
			if kind == "DAT" && dtype != ASCII {
				if count < 0 {
					return nil, lineErr(path, line, "binary DAT section without a byte count, want \"--- file type: DAT %s: n ---\"", dtype)
				}
				// count is compared with what is left, never added to an
				// offset: a count near 2^63 would overflow the sum.
				if count > int64(len(b)-next) {
					return nil, lineErr(path, line, "DAT section of %d bytes, but only %d bytes follow (accepted: the byte count of the data after this line, at most %d)", count, len(b)-next, len(b)-next)
				}
				s.body = b[next : next+int(count)]
				secs = append(secs, s)
				cur = -1
				pos = next + int(count)
				line += 1 + bytes.Count(s.body, []byte{'\n'})
				continue
			}
			if kind == "DAT" && count >= 0 && count <= int64(len(b)-next) {
				s.body = b[next : next+int(count)]
				secs = append(secs, s)
				cur = -1
				pos = next + int(count)
				line += 1 + bytes.Count(s.body, []byte{'\n'})
				continue
			}
			secs = append(secs, s)
			cur = len(secs) - 1
		} else if cur < 0 && text != "" && strings.Trim(text, "\x1a") != "" {
			return nil, lineErr(path, line, "text outside a section, want a \"--- file type: CFG ---\" (INF, HDR, DAT ...) line first")
		}
		pos = next
		line++
	}
	if cur >= 0 {
		secs[cur].body = b[secs[cur].off:]
	}
	return secs, nil
}

// cffHeader parses a section header line. ok is false for another line.
func cffHeader(text string) (kind, dtype string, count int64, ok bool, err error) {
	if !strings.HasPrefix(text, "---") {
		return "", "", -1, false, nil
	}
	t := strings.TrimSpace(strings.Trim(text, "-"))
	low := strings.ToLower(t)
	if !strings.HasPrefix(low, "file type:") {
		return "", "", -1, false, nil
	}
	t = strings.TrimSpace(t[len("file type:"):])
	name, rest, _ := strings.Cut(t, ":")
	fields := strings.Fields(strings.ToUpper(name))
	count = -1
	if strings.TrimSpace(rest) != "" {
		count, err = strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		if err != nil || count < 0 {
			return "", "", -1, true, fmt.Errorf("section byte count %q, want an integer >= 0", strings.TrimSpace(rest))
		}
	}
	if len(fields) == 1 && (fields[0] == "CFG" || fields[0] == "INF" || fields[0] == "HDR") {
		return fields[0], "", count, true, nil
	}
	if len(fields) == 2 && fields[0] == "DAT" {
		switch fields[1] {
		case ASCII, Binary, Binary32, Float32:
			return "DAT", fields[1], count, true, nil
		}
	}
	return "", "", -1, true, fmt.Errorf("section %q, want CFG, INF, HDR, DAT ASCII, DAT BINARY, DAT BINARY32 or DAT FLOAT32", t)
}

// ReadCFF reads one channel of a COMTRADE 2013 single-file recording.
func ReadCFF(path string, b []byte, opt Options) (*Recording, error) {
	secs, err := splitCFF(path, b)
	if err != nil {
		return nil, err
	}
	var cfg, inf, dat *cffSection
	for i := range secs {
		s := &secs[i]
		switch s.kind {
		case "CFG":
			cfg = s
		case "INF":
			inf = s
		case "DAT":
			dat = s
		}
	}
	if cfg == nil || dat == nil {
		return nil, fmt.Errorf("record: %s: want a CFG and a DAT section (\"--- file type: CFG ---\", \"--- file type: DAT ASCII ---\")", path)
	}
	text, enc, guessed, err := decodeText(cfg.body, opt.Encoding)
	if err != nil {
		return nil, lineErr(path, cfg.line, "%v", err)
	}
	c, err := ParseConfig(path, text, cfg.line)
	if err != nil {
		return nil, err
	}
	if dat.dtype != c.FileType {
		return nil, lineErr(path, dat.line-1, "DAT section of type %s, but the CFG's file type is %s", dat.dtype, c.FileType)
	}
	rec := &Recording{Path: path}
	if guessed {
		rec.warnf("%s: not UTF-8; read as %s (give the encoding to be sure)", path, enc)
	}
	infText := ""
	if inf != nil {
		infText, _, _, _ = decodeText(inf.body, opt.Encoding)
	}
	return fromConfig(rec, c, infText, path, dat.body, dat.line, dat.off, opt)
}
