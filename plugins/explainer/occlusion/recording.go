package occlusion

import "github.com/uaxai/uaxai/sdk"

// RecordingDefaults gives a table without `baseline` on a real recording
// baseline = "fundamental", and period, the samples a cycle of the
// windows, unless the table sets it or it is unknown (below 2): with the
// zero baseline, blanking any 60 samples of a 50 Hz wave wrecks the
// prediction wherever it happens, so the maps of a recording are nearly
// flat; the fundamental baseline puts the record's own least-squares
// fundamental in the window, so a window is relevant only as far as it
// departs from the healthy wave. A table that sets baseline gets nothing.
func (*Explainer) RecordingDefaults(cfg sdk.Config, period float64) sdk.Config {
	if _, ok := cfg["baseline"]; ok {
		return nil
	}
	out := sdk.Config{"baseline": Fundamental}
	if _, ok := cfg["period"]; !ok && period >= 2 {
		out["period"] = period
	}
	return out
}

var _ sdk.RecordingDefaulter = (*Explainer)(nil)
