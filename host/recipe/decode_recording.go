package recipe

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Recording is the [recording] table: explain the windows of a real
// recording (host/record: COMTRADE, WAV or CSV) instead of the test
// splits. The posteriors are still fitted on [data]'s training set; the
// windows have no class and no mask, so they are explained for their
// predicted class and not scored.
type Recording struct {
	File    string `toml:"file"`    // absolute (relative to the recipe's folder in the file)
	Channel string `toml:"channel"` // channel id or number; "": the first
	// Channels are several channels (ids or numbers, as Channel), in
	// order: windows of len(Channels) x T values, channel-major.
	Channels []string `toml:"channels,omitempty"`
	// Phases pick a COMTRADE recording's voltage channels by phase (its
	// cfg's ph field), in order, e.g. ["A", "B", "C"] (host/record
	// PhaseChannels: 1,2,3, R,S,T and L1,L2,L3 name the same phases).
	Phases  []string `toml:"phases,omitempty"`
	Nominal float64  `toml:"nominal"` // nominal RMS value of every channel; 0: each channel's own from the file
	// NominalAuto (nominal = "auto") takes each channel's nominal value
	// from its RMS before the event (host/record.PreEventRMS).
	NominalAuto bool    `toml:"-"`
	Rate        float64 `toml:"rate"` // sampling rate of a CSV file without times
	Hop         int     `toml:"hop"`  // samples between windows; 0: the window length
}

// NumChannels returns the channels of the windows: len(Phases), else
// len(Channels), else 1.
func (rc *Recording) NumChannels() int {
	switch {
	case len(rc.Phases) > 0:
		return len(rc.Phases)
	case len(rc.Channels) > 0:
		return len(rc.Channels)
	}
	return 1
}

// ChoiceKey returns the key that chose the channels: "phases",
// "channels" or "channel" (also when absent: the first channel).
func (rc *Recording) ChoiceKey() string {
	switch {
	case len(rc.Phases) > 0:
		return "phases"
	case len(rc.Channels) > 0:
		return "channels"
	}
	return "channel"
}

// recordingConflicts are the tables that need labelled, masked records.
var recordingConflicts = []string{"sensitivity", "calibration", "agreement", "paper"}

func (d *decoder) recording(v any, r *Recipe) error {
	path := []string{"recording"}
	tbl, err := d.asTable(v, path)
	if err != nil {
		return err
	}
	rc := &Recording{}
	if err := d.table(tbl, path, []field{
		{"file", d.setString(&rc.File)}, {"channel", d.setString(&rc.Channel)},
		{"channels", d.setStrings(&rc.Channels)}, {"phases", d.setStrings(&rc.Phases)},
		{"nominal", func(v any, p []string) error {
			if str, ok := v.(string); ok {
				if str != "auto" {
					return d.keyErr(p, "%q (accepted: the nominal RMS value > 0, \"auto\" for each channel's RMS before the event, or 0 for the file's own)", str)
				}
				rc.NominalAuto = true
				return nil
			}
			return d.setFloat(&rc.Nominal)(v, p)
		}}, {"rate", d.setFloat(&rc.Rate)}, {"hop", d.setInt(&rc.Hop)},
	}); err != nil {
		return err
	}
	// channel = "" is the default (the canonical recipe writes it).
	var set []string
	for _, k := range []string{"channel", "channels", "phases"} {
		if _, ok := tbl[k]; ok && (k != "channel" || rc.Channel != "") {
			set = append(set, k)
		}
	}
	if len(set) > 1 {
		return d.keyErr(sub(path, set[1]), "[recording] has both %q and %q; give one (accepted: channel = \"VA\" for one channel, channels = [\"VA\", \"VB\", \"VC\"] for several by id or number, or phases = [\"A\", \"B\", \"C\"] for a COMTRADE file's voltage channels by phase)", set[0], set[1])
	}
	for _, k := range []struct {
		key  string
		list []string
		eg   string
	}{{"channels", rc.Channels, `["VA", "VB", "VC"] or ["1", "2", "3"]`}, {"phases", rc.Phases, `["A", "B", "C"]`}} {
		if _, ok := tbl[k.key]; ok && len(k.list) == 0 {
			return d.keyErr(sub(path, k.key), "an empty list (accepted: one or more, e.g. %s)", k.eg)
		}
		for i, s := range k.list {
			if strings.TrimSpace(s) == "" {
				return d.keyErr(sub(path, k.key, strconv.Itoa(i)), "an empty name (accepted: e.g. %s)", k.eg)
			}
			if j := slices.Index(k.list[:i], s); j >= 0 {
				return d.keyErr(sub(path, k.key, strconv.Itoa(i)), "%q is also element %d (accepted: each once)", s, j)
			}
		}
	}
	if rc.File == "" {
		return d.errAt(path, "[recording]: missing key \"file\" (a COMTRADE .cfg or .cff, a .wav or a .csv file, relative to the recipe's folder)")
	}
	if !filepath.IsAbs(rc.File) {
		rc.File = filepath.Join(d.dir, rc.File)
	}
	if rc.Nominal < 0 {
		return d.keyErr(sub(path, "nominal"), "%v (accepted: the nominal RMS value > 0, or 0 for the file's own)", rc.Nominal)
	}
	if rc.Rate < 0 {
		return d.keyErr(sub(path, "rate"), "%v (accepted: a rate in Hz > 0, or 0 when the file has times)", rc.Rate)
	}
	if rc.Hop < 0 {
		return d.keyErr(sub(path, "hop"), "%d (accepted: samples > 0, or 0 for the window length)", rc.Hop)
	}
	r.Recording = rc
	return nil
}

// checkRecording refuses the analysis tables that need classes and masks.
func (d *decoder) checkRecording(r *Recipe, tables map[string]any) error {
	if r.Recording == nil {
		return nil
	}
	for _, k := range recordingConflicts {
		if _, ok := tables[k]; ok {
			return d.errAt([]string{k}, "[%s] needs labelled records with masks, and [recording] has neither (accepted with [recording]: [figures], [bound], [total_variance], [output])", k)
		}
	}
	if a, err := r.Arch(); err == nil && a.InChannels != r.Recording.NumChannels() {
		rc := r.Recording
		return d.errAt([]string{"recording", rc.ChoiceKey()}, "[recording] %s makes windows of %d channel(s), but the model takes %d ([model] in_channels, or the channels of arch %q); accepted: as many channels as in_channels (channel = \"..\" for one, channels = [...] or phases = [...] for several)",
			rc.ChoiceKey(), rc.NumChannels(), a.InChannels, a.Name)
	}
	if r.Analysis.Figures != nil && len(r.Analysis.Figures.Qualitative) > 0 && !slices.Contains(r.Analysis.Figures.Qualitative, "all") {
		return d.keyErr([]string{"figures", "qualitative"}, "a recording has no classes (accepted with [recording]: [\"all\"], a figure for every window)")
	}
	return nil
}
