package runner

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/record"
	"github.com/uaxai/uaxai/sdk"
)

// recordingSplit reads the recipe's [recording] (its channel, channels or
// phases), resamples it to the model's rate, divides each channel by its
// nominal value and cuts windows of the model's input length
// (host/record.ImportChannels): an unlabelled test split named after the
// file, one record a kept window of C x T values, channel-major, with
// Channels = C. C must be the model's in_channels. warnings are the
// reader's and the import's (each also a note, "recording: ..."); windows
// are the kept windows, one a record, with the rate after resampling and
// the system frequency.
func recordingSplit(ctx context.Context, r *recipe.Recipe) (ts engine.TestSplit, notes, warnings []string, windows recordingWindows, err error) {
	rc := r.Recording
	arch, err := r.Arch()
	if err != nil {
		return engine.TestSplit{}, nil, nil, recordingWindows{}, err
	}
	C := rc.NumChannels()
	if arch.InChannels != C {
		return engine.TestSplit{}, nil, nil, recordingWindows{}, r.Errorf([]string{"recording", rc.ChoiceKey()}, "[recording] %s makes windows of %d channel(s), but the model takes %d ([model] in_channels, or the channels of arch %q); accepted: as many channels as in_channels",
			rc.ChoiceKey(), C, arch.InChannels, arch.Name)
	}
	opt := record.Options{Channel: rc.Channel, Rate: rc.Rate}
	sels := rc.Channels
	if len(rc.Phases) > 0 {
		if sels, err = record.PhaseChannels(rc.File, opt, rc.Phases); err != nil {
			return engine.TestSplit{}, nil, nil, recordingWindows{}, fmt.Errorf("recipe %s: [recording] phases %q: %w", r.Name, rc.Phases, err)
		}
	}
	recs, err := record.ReadChannels(rc.File, opt, sels)
	if err != nil {
		return engine.TestSplit{}, nil, nil, recordingWindows{}, fmt.Errorf("recipe %s: [recording]: %w", r.Name, err)
	}
	// A window holds the network's cycles of the recording's own system
	// frequency: a generated source's cycles, else the paper's 10 (so a
	// 60 Hz recording is resampled to 3840 Hz for 640 samples).
	L, cycles := r.Data.Len(), r.Data.Cycles
	if !r.Data.Generated() {
		L, cycles = arch.InLen, record.DefaultCycles
	}
	imp, err := record.ImportChannels(ctx, recs, record.ImportOptions{Nominal: rc.Nominal, NominalAuto: rc.NominalAuto, Window: L, Cycles: cycles, Hop: rc.Hop})
	if err != nil {
		return engine.TestSplit{}, nil, nil, recordingWindows{}, fmt.Errorf("recipe %s: [recording] %s: %w", r.Name, rc.File, err)
	}
	kept := imp.Kept()
	if len(kept) == 0 {
		return engine.TestSplit{}, nil, nil, recordingWindows{}, fmt.Errorf("recipe %s: [recording] %s: no window of %d samples without a gap (the recording has %d samples at %g Hz after resampling)", r.Name, rc.File, L, len(imp.Signal), imp.Rate)
	}
	d := sdk.Dataset{N: len(kept), Len: C * L, X: make([]float32, 0, len(kept)*C*L), Y: make([]int, len(kept))}
	for i, w := range kept {
		for _, v := range w {
			d.X = append(d.X, float32(v))
		}
		d.Y[i] = -1
	}
	name := "rec-" + strings.TrimSuffix(filepath.Base(rc.File), filepath.Ext(rc.File))
	if rc.Channel == "" && len(rc.Channels) == 0 && len(rc.Phases) == 0 {
		// the default channel is often a healthy phase: show them all
		if chans, suggest, err := record.ChannelSummary(rc.File, opt); err == nil && (len(chans) > 1 || suggest != "") {
			notes = append(notes, fmt.Sprintf("recording %s: %s; channel A%d %q taken by default ([recording] channel chooses)", rc.File, record.FormatChannelSummary(chans, suggest), recs[0].Index, recs[0].Channel))
		}
	}
	if C == 1 {
		notes = append(notes, fmt.Sprintf("recording %s (channel %s): %d windows of %d samples at %g Hz, divided by sqrt(2) x %g (%s)",
			rc.File, recs[0].Channel, len(kept), L, imp.Rate, imp.Nominal, imp.NominalSource))
	} else {
		var chans []string
		for _, ch := range imp.Channels {
			chans = append(chans, fmt.Sprintf("%s divided by sqrt(2) x %g (%s)", ch.Recording.Channel, ch.Nominal, ch.NominalSource))
		}
		notes = append(notes, fmt.Sprintf("recording %s: %d windows of %d channels x %d samples at %g Hz, channel-major: %s",
			rc.File, len(kept), C, L, imp.Rate, strings.Join(chans, "; ")))
	}
	for _, w := range imp.Windows {
		if w.Dropped != "" {
			notes = append(notes, fmt.Sprintf("recording window at %.4f s dropped: %s", w.SourceTime, w.Dropped))
		} else {
			windows.kept = append(windows.kept, w)
		}
	}
	for _, rec := range recs {
		for _, w := range rec.Warnings {
			if !slices.Contains(warnings, w) { // the file's own warnings, once for all its channels
				warnings = append(warnings, w)
			}
		}
	}
	notes = append(notes, baselineNotes(r)...)
	warnings = record.Dedupe(append(warnings, imp.Warnings...))
	for _, w := range warnings {
		notes = append(notes, "recording: "+w)
	}
	ts = engine.TestSplit{Name: name, Data: d, Channels: C, Unlabelled: true}
	if C > 1 {
		for _, ch := range imp.Channels {
			ts.ChannelNames = append(ts.ChannelNames, ch.Recording.Channel)
		}
	}
	windows.rate, windows.f0 = imp.Rate, imp.SystemFreq
	for _, ch := range imp.Channels {
		windows.nominal, windows.units = append(windows.nominal, ch.Nominal), append(windows.units, ch.Recording.Unit)
	}
	windows.trigger = math.NaN()
	if rec := recs[0]; !rec.Trigger.IsZero() && !rec.Start.IsZero() {
		windows.trigger = rec.Trigger.Sub(rec.Start).Seconds()
	}
	return ts, notes, warnings, windows, nil
}

// recordingWindows are a recording's kept windows, the rate they were
// resampled to and the system frequency, Hz.
type recordingWindows struct {
	kept     []record.Window
	rate, f0 float64
	trigger  float64 // s from the first sample; NaN: the file gives none
	// per channel, the nominal RMS value each was divided by (times
	// sqrt(2)) and its unit ("" when the file gives none)
	nominal []float64
	units   []string
}

// baselineNotes say which occlusion explainers took the fundamental
// baseline because their table set none (occlusion's RecordingDefaults, which
// host/recipe applies at decode).
func baselineNotes(r *recipe.Recipe) []string {
	var notes []string
	for _, e := range r.Explainers {
		if from := e.From["baseline"]; len(from) != 1 || from[0] != "recording" {
			continue
		}
		notes = append(notes, fmt.Sprintf("explainer %s: baseline = \"fundamental\" (period %v samples), the default for a recording: each occluded window shows the record's own least-squares fundamental, so a window is relevant as far as it departs from the healthy wave (with the zero baseline, blanking any window wrecks the prediction and the maps are nearly flat); set baseline in the table for another", e.Label, e.Config["period"]))
	}
	return notes
}
