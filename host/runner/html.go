package runner

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/report"
)

// html writes report.html: tables.md's tables and notes, the per-class
// chart of the rows shown, the analyser's explained records, a
// recording's windows and the manifest's warnings. It returns how long
// building and writing the page took (manifest.json's timings).
func (w *runWriter) html(notes []string, ts []report.Table, shown *engine.Results) (time.Duration, error) {
	t0 := time.Now()
	bars, err := report.PerClassIoUBars(shown, report.PerClassPaperTable(w.r.Analysis.Paper))
	if err != nil {
		return 0, err
	}
	h := report.HTML{Title: "uaxai run: " + w.r.Name, Notes: notes, Warnings: w.ds.Warnings, Tables: ts,
		Bars: bars, ClassNames: w.ds.Classes, Windows: w.timeline(), F0: w.ds.F0, Trigger: math.NaN()}
	if w.ds.Recording != "" || w.r.Data.Generated() {
		h.Unit = "p.u." // a recording divided by its nominal, or the generator's waveforms
	}
	if w.ds.Recording != "" {
		h.Trigger = w.ds.Trigger
		for i, v := range w.ds.Nominal {
			if i < len(w.ds.Units) && w.ds.Units[i] != "" && v > 0 {
				h.PeakUnits, h.Units = append(h.PeakUnits, math.Sqrt2*v), append(h.Units, w.ds.Units[i])
				continue
			}
			h.PeakUnits, h.Units = nil, nil // a channel without a unit: p.u. only
			break
		}
	}
	if w.an != nil {
		h.Records = w.an.Explored()
	}
	h.Events = w.events
	if w.ds.Recording != "" {
		for i := range h.Records {
			if e := &h.Records[i]; e.SplitName == w.ds.Recording {
				e.OOD = w.windows.oodOf(e.PosteriorName(), e.Record)
			}
		}
	}
	if w.anRep != nil {
		h.Charts = w.anRep.Charts
	}
	if len(h.Windows) > 0 && len(h.Records) > 0 && h.Windows[0].Length > 0 {
		h.Fs = float64(len(h.Records[0].Mean)/max(h.Records[0].Channels, 1)) / h.Windows[0].Length
	}
	var b bytes.Buffer
	if err := report.WriteHTML(&b, h); err != nil {
		return 0, fmt.Errorf("run directory %s: %w", w.dir, err)
	}
	if err := w.write("report.html", b.Bytes()); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// timeline is the recording's windows for the report: each with its
// length, the smallest gap between two window starts (the windows are
// cut one after another, the same length; a dropped window leaves a
// larger gap).
func (w *runWriter) timeline() []report.Window {
	rows := w.windows.rows
	length := math.Inf(1)
	for i := 1; i < len(w.ds.Windows); i++ {
		if d := w.ds.Windows[i].SourceTime - w.ds.Windows[i-1].SourceTime; d > 0 {
			length = min(length, d)
		}
	}
	if math.IsInf(length, 1) {
		length = 0
	}
	out := make([]report.Window, len(rows))
	for i, r := range rows {
		out[i] = report.Window{Posterior: r.Label, Window: r.Window, Start: r.Start, Length: length, Class: r.Class,
			Probability: r.Probability, MutualInfo: r.MutualInfo, Agreement: r.Agreement, OOD: r.OOD, OODReason: r.OODReason}
	}
	return out
}
