package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/record"
	"github.com/uaxai/uaxai/sdk"
)

// recordingSplit reads the recipe's [recording], resamples it to the
// model's rate, divides it by its nominal value and cuts windows of the
// model's input length (host/record.Import): an unlabelled test split
// named after the file, one record a kept window.
func recordingSplit(ctx context.Context, r *recipe.Recipe) (engine.TestSplit, []string, error) {
	rc := r.Recording
	rec, err := record.Read(rc.File, record.Options{Channel: rc.Channel, Rate: rc.Rate})
	if err != nil {
		return engine.TestSplit{}, nil, fmt.Errorf("recipe %s: [recording]: %w", r.Name, err)
	}
	L := r.Data.Len()
	rate := r.Data.Fs
	if r.Data.Source != recipe.SourcePQD {
		arch, err := r.Arch()
		if err != nil {
			return engine.TestSplit{}, nil, err
		}
		L, rate = arch.InLen, record.DefaultRate
	}
	imp, err := record.Import(ctx, rec, record.ImportOptions{Rate: rate, Nominal: rc.Nominal, Window: L, Hop: rc.Hop})
	if err != nil {
		return engine.TestSplit{}, nil, fmt.Errorf("recipe %s: [recording] %s: %w", r.Name, rc.File, err)
	}
	kept := imp.Kept()
	if len(kept) == 0 {
		return engine.TestSplit{}, nil, fmt.Errorf("recipe %s: [recording] %s: no window of %d samples without a gap (the recording has %d samples at %g Hz after resampling)", r.Name, rc.File, L, len(imp.Signal), imp.Rate)
	}
	d := sdk.Dataset{N: len(kept), Len: L, X: make([]float32, 0, len(kept)*L), Y: make([]int, len(kept))}
	for i, w := range kept {
		for _, v := range w {
			d.X = append(d.X, float32(v))
		}
		d.Y[i] = -1
	}
	name := "rec-" + strings.TrimSuffix(filepath.Base(rc.File), filepath.Ext(rc.File))
	notes := []string{fmt.Sprintf("recording %s (channel %s): %d windows of %d samples at %g Hz, divided by sqrt(2) x %g (%s)",
		rc.File, rec.Channel, len(kept), L, imp.Rate, imp.Nominal, imp.NominalSource)}
	for _, w := range imp.Windows {
		if w.Dropped != "" {
			notes = append(notes, fmt.Sprintf("recording window at %.4f s dropped: %s", w.SourceTime, w.Dropped))
		}
	}
	for _, w := range imp.Warnings {
		notes = append(notes, "recording: "+w)
	}
	return engine.TestSplit{Name: name, Data: d, Unlabelled: true}, notes, nil
}
