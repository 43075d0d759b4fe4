package record

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
)

// phaseNames are the phase ids PhaseChannels takes as the same phase:
// position k of every row is phase k+1.
var phaseNames = [][]string{{"A", "B", "C"}, {"1", "2", "3"}, {"R", "S", "T"}, {"L1", "L2", "L3"}}

// phasesAccepted lists phaseNames for an error.
const phasesAccepted = "A,B,C; 1,2,3; R,S,T; L1,L2,L3 (the same three phases), or the cfg's own ph text"

// phaseOf returns the position 0..2 of a phase id in phaseNames, or -1.
func phaseOf(ph string) int {
	ph = strings.ToUpper(strings.TrimSpace(ph))
	for _, row := range phaseNames {
		if k := slices.Index(row, ph); k >= 0 {
			return k
		}
	}
	return -1
}

// isVoltage reports whether a COMTRADE unit uu is a voltage: V or kV
// (any case).
func isVoltage(unit string) bool {
	u := strings.TrimSpace(unit)
	return strings.EqualFold(u, "V") || strings.EqualFold(u, "kV")
}

// PhaseChannels returns, for each phase of phases in order, the selector
// ("A<n>", for Options.Channel) of the COMTRADE recording's voltage
// channel of that phase: an analog channel whose unit is V or kV and
// whose ph is the phase, compared ignoring case, else the same position
// in one of the rows A,B,C / 1,2,3 / R,S,T / L1,L2,L3 (so "A,B,C" finds
// a cfg that writes its phases R,S,T or L1,L2,L3). The cfg's order of
// channels does not matter. The recording must be COMTRADE (.cfg or
// .cff): WAV and CSV files have no phases. A phase with no voltage
// channel, or with more than one, is an error naming the file, the phase,
// the cfg's voltage channels and their phases, and how to choose the
// channels by name instead.
func PhaseChannels(path string, opt Options, phases []string) ([]string, error) {
	if len(phases) == 0 {
		return nil, fmt.Errorf("record: %s: no phase given (accepted: phases such as A,B,C)", path)
	}
	c, err := readConfig(path, opt)
	if err != nil {
		return nil, err
	}
	var volts []Analog
	for _, a := range c.Analogs {
		if isVoltage(a.Unit) {
			volts = append(volts, a)
		}
	}
	list := func() string {
		if len(volts) == 0 {
			return "the cfg has no voltage channel (unit V or kV); its channels are " + channelList(c.Config)
		}
		var s []string
		for _, a := range volts {
			s = append(s, fmt.Sprintf("A%d %q phase %q (%s)", a.Index, a.ID, a.Phase, a.Unit))
		}
		return "the cfg's voltage channels are " + strings.Join(s, ", ")
	}
	const instead = "or choose the channels by ch_id or number instead (uaxai data import --channel, repeated; a recipe's [recording] channels = [...])"
	sels := make([]string, len(phases))
	seen := map[int]string{}
	for i, p := range phases {
		var hit []Analog
		for _, a := range volts {
			if strings.EqualFold(strings.TrimSpace(a.Phase), strings.TrimSpace(p)) {
				hit = append(hit, a)
			}
		}
		if k := phaseOf(p); len(hit) == 0 && k >= 0 {
			for _, a := range volts {
				if phaseOf(a.Phase) == k {
					hit = append(hit, a)
				}
			}
		}
		switch {
		case len(hit) == 0:
			return nil, fmt.Errorf("record: %s: no voltage channel of phase %q (accepted phase names: %s); %s; %s", c.path, p, phasesAccepted, list(), instead)
		case len(hit) > 1:
			var s []string
			for _, a := range hit {
				s = append(s, fmt.Sprintf("A%d %q", a.Index, a.ID))
			}
			return nil, fmt.Errorf("record: %s: phase %q names %d voltage channels (%s); %s", c.path, p, len(hit), strings.Join(s, ", "), instead)
		}
		if q, ok := seen[hit[0].Index]; ok {
			return nil, fmt.Errorf("record: %s: phases %q and %q are both channel A%d %q (accepted: distinct phases, e.g. A,B,C); %s", c.path, q, p, hit[0].Index, hit[0].ID, list())
		}
		seen[hit[0].Index] = p
		sels[i] = fmt.Sprintf("A%d", hit[0].Index)
	}
	return sels, nil
}

// namedConfig is a parsed cfg and the file it came from.
type namedConfig struct {
	*Config
	path string
}

// readConfig parses the cfg of a COMTRADE recording: a .cfg, or the CFG
// section of a .cff (by extension or content, as Read decides).
func readConfig(path string, opt Options) (namedConfig, error) {
	b, err := readFile(path)
	if err != nil {
		return namedConfig{}, fmt.Errorf("record: %w", err)
	}
	text, first := "", 1
	switch ext := strings.ToLower(filepath.Ext(path)); {
	case ext == ".cfg":
		if text, _, _, err = decodeText(b, opt.Encoding); err != nil {
			return namedConfig{}, fmt.Errorf("record: %s: %w", path, err)
		}
	case ext == ".cff" || isCFF(b):
		secs, err := splitCFF(path, b)
		if err != nil {
			return namedConfig{}, err
		}
		i := slices.IndexFunc(secs, func(s cffSection) bool { return s.kind == "CFG" })
		if i < 0 {
			return namedConfig{}, fmt.Errorf("record: %s: want a CFG section (\"--- file type: CFG ---\")", path)
		}
		if text, _, _, err = decodeText(secs[i].body, opt.Encoding); err != nil {
			return namedConfig{}, lineErr(path, secs[i].line, "%v", err)
		}
		first = secs[i].line
	default:
		return namedConfig{}, fmt.Errorf("record: %s: phases are read from a COMTRADE cfg (its analog channels' ph field), and this is not a COMTRADE .cfg or .cff file; choose the channels by number or name instead (uaxai data import --channel, repeated; a recipe's [recording] channels = [...])", path)
	}
	c, err := ParseConfig(path, text, first)
	if err != nil {
		return namedConfig{}, err
	}
	return namedConfig{c, path}, nil
}

// ReadChannels reads the channels sels of the recording at path, in
// order (each as Read with Options.Channel set to it; no selector: the
// one channel opt.Channel picks). The channels of one file share their
// rate segments and sample count; two selectors naming the same channel
// are an error.
func ReadChannels(path string, opt Options, sels []string) ([]*Recording, error) {
	if len(sels) == 0 {
		rec, err := Read(path, opt)
		if err != nil {
			return nil, err
		}
		return []*Recording{rec}, nil
	}
	recs := make([]*Recording, len(sels))
	for i, s := range sels {
		o := opt
		o.Channel = s
		rec, err := Read(path, o)
		if err != nil {
			return nil, err
		}
		for j, r := range recs[:i] {
			if r.Index == rec.Index {
				return nil, fmt.Errorf("record: %s: channels %q and %q are the same channel %d (%s); accepted: each channel once", path, sels[j], s, rec.Index, rec.Channel)
			}
		}
		if i > 0 && (len(rec.Samples) != len(recs[0].Samples) || !slices.Equal(rec.Segments, recs[0].Segments)) {
			return nil, fmt.Errorf("record: %s: channel %q has %d samples in segments %v, channel %q %d in %v; the channels of one recording must share their time base", path, s, len(rec.Samples), rec.Segments, sels[0], len(recs[0].Samples), recs[0].Segments)
		}
		recs[i] = rec
	}
	return recs, nil
}

// MaxSummaryChannels bounds the channels ChannelSummary reads.
const MaxSummaryChannels = 12

// ChannelRMS is one analog channel of a recording with its RMS value
// over the samples it has (NaN: none).
type ChannelRMS struct {
	Index     int
	ID, Phase string
	Unit      string
	RMS       float64
}

// ChannelSummary reads the voltage channels (unit V or kV; every analog
// channel when there is none) of the COMTRADE recording at path, at most
// MaxSummaryChannels, and gives each one's RMS, so that an engineer sees
// which phase carries the event before choosing one; suggest is the
// --phases value that imports three phases when the cfg's voltage
// channels name three distinct ones (A,B,C, R,S,T or 1,2,3), else "".
// A recording that is not COMTRADE has no summary (nil, "", nil).
func ChannelSummary(path string, opt Options) (chans []ChannelRMS, suggest string, err error) {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".cfg" && ext != ".cff" {
		return nil, "", nil
	}
	c, err := readConfig(path, opt)
	if err != nil {
		return nil, "", err
	}
	var pick []Analog
	for _, a := range c.Analogs {
		if isVoltage(a.Unit) {
			pick = append(pick, a)
		}
	}
	if len(pick) == 0 {
		pick = c.Analogs
	}
	pick = pick[:min(len(pick), MaxSummaryChannels)]
	byPhase := map[int]string{}
	for _, a := range pick {
		o := opt
		o.Channel = fmt.Sprintf("A%d", a.Index)
		rec, err := Read(path, o)
		if err != nil {
			return nil, "", err
		}
		var s float64
		n := 0
		for _, v := range rec.Samples {
			if !math.IsNaN(v) {
				s += v * v
				n++
			}
		}
		rms := math.NaN()
		if n > 0 {
			rms = math.Sqrt(s / float64(n))
		}
		chans = append(chans, ChannelRMS{Index: a.Index, ID: a.ID, Phase: a.Phase, Unit: rec.Unit, RMS: rms})
		if k := phaseOf(a.Phase); k >= 0 && isVoltage(a.Unit) {
			if _, dup := byPhase[k]; dup {
				byPhase[k] = "" // two channels of one phase: no suggestion for it
			} else {
				byPhase[k] = strings.TrimSpace(a.Phase)
			}
		}
	}
	if p0, p1, p2 := byPhase[0], byPhase[1], byPhase[2]; p0 != "" && p1 != "" && p2 != "" {
		suggest = p0 + "," + p1 + "," + p2
	}
	return chans, suggest, nil
}

// FormatChannelSummary is the summary on one line: each channel as
// "A1 VA (phase A) 230.1 V", then the suggestion, if any.
func FormatChannelSummary(chans []ChannelRMS, suggest string) string {
	var parts []string
	for _, ch := range chans {
		s := fmt.Sprintf("A%d %q", ch.Index, ch.ID)
		if ch.Phase != "" {
			s += " (phase " + ch.Phase + ")"
		}
		if math.IsNaN(ch.RMS) {
			s += " no samples"
		} else {
			s += fmt.Sprintf(" %.4g %s rms", ch.RMS, ch.Unit)
		}
		parts = append(parts, s)
	}
	out := "channels: " + strings.Join(parts, ", ")
	if suggest != "" {
		out += "; --phases " + suggest + " imports the three phases (a recipe's [recording] phases = [...])"
	}
	return out
}
