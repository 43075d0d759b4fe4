package recipe

import (
	"path/filepath"
	"slices"
)

// Recording is the [recording] table: explain the windows of a real
// recording (host/record: COMTRADE, WAV or CSV) instead of the test
// splits. The posteriors are still fitted on [data]'s training set; the
// windows have no class and no mask, so they are explained for their
// predicted class and not scored.
type Recording struct {
	File    string  `toml:"file"`    // absolute (relative to the recipe's folder in the file)
	Channel string  `toml:"channel"` // channel id or number; "": the first
	Nominal float64 `toml:"nominal"` // nominal RMS value; 0: the file's
	Rate    float64 `toml:"rate"`    // sampling rate of a CSV file without times
	Hop     int     `toml:"hop"`     // samples between windows; 0: the window length
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
		{"nominal", d.setFloat(&rc.Nominal)}, {"rate", d.setFloat(&rc.Rate)}, {"hop", d.setInt(&rc.Hop)},
	}); err != nil {
		return err
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
	if r.Analysis.Figures != nil && len(r.Analysis.Figures.Qualitative) > 0 && !slices.Contains(r.Analysis.Figures.Qualitative, "all") {
		return d.keyErr([]string{"figures", "qualitative"}, "a recording has no classes (accepted with [recording]: [\"all\"], a figure for every window)")
	}
	return nil
}
