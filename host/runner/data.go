package runner

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/record"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// This file is the job of a run's data: the recipe's datasets (the PQD
// generator, files, a recording), the ground-truth masks, the hold-out
// split and the datasets' hashes that key the cache.

// Datasets is the data of a recipe.
type Datasets struct {
	Train, Val sdk.Dataset
	Tests      []engine.TestSplit
	// Channels is C: every input, map and mask is C rows of T samples,
	// channel-major. Classes names the labels (nil: the one-phase PQD's
	// 16, as data.ClassNames).
	Channels int
	Classes  []string
	// ChannelNames names the channels (nil: ch0, ch1, ...): a
	// generator's that names them (the three-phase one's A, B, C).
	ChannelNames []string
	Recording    string   // with [recording]: the one, unlabelled, test split's name
	Notes        []string // what the run's notes should say of the data
	// Warnings are what reading the data assumed or doubted (a
	// recording's reader and import: an encoding guessed, a revision read
	// by layout, a frequency that disagrees): each is also a note, and
	// manifest.json lists them.
	Warnings []string
	// Windows are the recording's kept windows, in record order (with
	// [recording]): each one's start in the recording.
	Windows []record.Window
	// Rate and F0 are the records' sampling rate and system frequency,
	// Hz: [data] fs and f0, or a recording's rate after resampling and
	// its system frequency (host/record.SystemFrequency).
	Rate, F0 float64
	// Trigger is a recording's trigger time, s from its first sample
	// (NaN: the file gives none; 0 without [recording]).
	Trigger float64
	// Nominal and Units, per channel of a recording, are the nominal RMS
	// value it was divided by (times sqrt(2): 1 p.u. is sqrt(2) x
	// Nominal) and its unit ("" when the file gives none).
	Nominal []float64
	Units   []string
	// HeldOut, with [recording], is labelled records the model is judged
	// on beside the recording's answers (engine.Plan.HeldOut): the
	// generator's test splits, or the [data] test folders. HeldOutFrom
	// says which.
	HeldOut     sdk.Dataset
	HeldOutFrom string
}

// ClassList is the data's class names: Classes, or the one-phase PQD's 16.
func (ds Datasets) ClassList() []string {
	if ds.Classes != nil {
		return ds.Classes
	}
	return data.ClassNames[:]
}

// ToDataset converts records to the float32 rows the network reads.
func ToDataset(recs []data.Record) sdk.Dataset {
	if len(recs) == 0 {
		return sdk.Dataset{}
	}
	n := len(recs[0].X)
	d := sdk.Dataset{X: make([]float32, 0, len(recs)*n), Y: make([]int, len(recs)), N: len(recs), Len: n}
	for i, r := range recs {
		for _, v := range r.X {
			d.X = append(d.X, float32(v))
		}
		d.Y[i] = r.Label
	}
	return d
}

// masks returns the ground-truth mask of every record, C x T values:
// with mask = "amplitude" |d| > eps of the record's disturbance d, with
// "event" its event indicator; a record without them (files of a real
// dataset) has the mask its files give (masks.npy, a "masks" tensor), if
// any.
func masks(recs []data.Record, ev recipe.Evaluate, split string) ([][]bool, error) {
	out := make([][]bool, len(recs))
	for i, r := range recs {
		switch {
		case ev.Mask == recipe.MaskEvent && r.Event != nil:
			out[i] = data.EventMask(make([]bool, len(r.Event)), r.Event)
		case ev.Mask != recipe.MaskEvent && r.D != nil:
			out[i] = data.Mask(make([]bool, len(r.D)), r.D, ev.Eps)
		case r.Mask != nil:
			out[i] = slices.Clone(r.Mask)
		case ev.Mask == recipe.MaskEvent:
			return nil, fmt.Errorf("split %s record %d: mask = \"event\" needs the event indicator (event.csv or event.npy) or the files' masks (masks.npy)", split, i)
		default:
			return nil, fmt.Errorf("split %s record %d: mask = \"amplitude\" needs the disturbance d (disturbance.csv or disturbance.npy) or the files' masks (masks.npy)", split, i)
		}
	}
	return out, nil
}

// LoadData builds the recipe's datasets.
func LoadData(ctx context.Context, r *recipe.Recipe) (Datasets, error) {
	var train, val []data.Record
	var tests []data.Split
	var first data.Split // a split of the data: its channels and classes
	switch {
	case r.Data.Generated():
		gen, ok := r.Data.Generator()
		if !ok {
			return Datasets{}, r.Errorf([]string{"data", "source"}, "source %q has no generator (accepted: %s, %s, %s)", r.Data.Source, recipe.SourcePQD, recipe.SourcePQD3, recipe.SourceFiles)
		}
		cfg := data.DefaultConfig()
		cfg.F0, cfg.Fs, cfg.Cycles, cfg.Noise = r.Data.F0, r.Data.Fs, r.Data.Cycles, r.Data.Noise
		cfg.SNRMin, cfg.SNRMax = r.Data.SNRdB[0], r.Data.SNRdB[1]
		if !r.Data.Phase.Random {
			ph := r.Data.Phase.Value
			cfg.Phase = &ph
		}
		nTests := r.Data.TestSplits // with [recording], held out for the model's quality
		ps, err := data.MakePaperSplitsOf(ctx, gen, cfg, r.Seed, r.Data.TrainPerClass, r.Data.ValFraction, nTests, r.Data.TestPerClass)
		if err != nil {
			return Datasets{}, fmt.Errorf("recipe %s: data: %w", r.Name, err)
		}
		train, val, tests, first = ps.Train.Records, ps.Val.Records, ps.Tests, ps.Train
	case r.Data.Source == recipe.SourceFiles:
		channels := r.Data.Channels
		if channels == 0 {
			if a, err := r.Arch(); err == nil {
				channels = a.InChannels // a CSV line of the model's channels
			}
		}
		read := func(dir string) (data.Split, error) {
			s, err := data.ReadDir(dir, data.ReadOptions{Channels: channels})
			if err != nil {
				return data.Split{}, fmt.Errorf("recipe %s: data: %w", r.Name, err)
			}
			if r.Data.ClassNames != nil {
				for i, rec := range s.Records {
					if rec.Label >= len(r.Data.ClassNames) {
						return data.Split{}, r.Errorf([]string{"data", "class_names"}, "%s: record %d has label %d, and class_names names %d classes (accepted: a name for every label 0..%d)", dir, i, rec.Label, len(r.Data.ClassNames), rec.Label)
					}
				}
				s.Classes = r.Data.ClassNames
			}
			if slices.Equal(s.Classes, data.ClassNames[:]) {
				s.Classes = nil // the one-phase PQD's, as the generator's splits say it
			}
			return s, nil
		}
		if r.Data.Train != "" { // none with [model] torch: nothing is trained
			s, err := read(r.Data.Train)
			if err != nil {
				return Datasets{}, err
			}
			train, first = s.Records, s
			if r.Data.Val != "" {
				v, err := read(r.Data.Val)
				if err != nil {
					return Datasets{}, err
				}
				val = v.Records
			} else {
				train, val = HoldOut(train, r.Data.ValFraction, r.Seed)
			}
		}
		for _, dir := range r.Data.Test { // with [recording], held out for the model's quality
			s, err := read(dir)
			if err != nil {
				return Datasets{}, err
			}
			if r.Data.Train == "" && len(tests) == 0 {
				first = s // the data's channels and classes
			}
			tests = append(tests, s)
		}
	default:
		return Datasets{}, r.Errorf([]string{"data", "source"}, "unknown source %q (accepted: pqd, files)", r.Data.Source)
	}
	ds := Datasets{Train: ToDataset(train), Val: ToDataset(val), Channels: first.C(), Classes: first.Classes, Rate: r.Data.Fs, F0: r.Data.F0}
	if g, ok := r.Data.Generator(); ok {
		if n, ok := g.(interface{ ChannelNames() []string }); ok {
			ds.ChannelNames = n.ChannelNames()
		}
	}
	if n := r.Data.ChannelNames; n != nil {
		if len(n) != ds.Channels {
			return Datasets{}, r.Errorf([]string{"data", "channel_names"}, "names %d channels, and the data has %d (accepted: one name a channel)", len(n), ds.Channels)
		}
		ds.ChannelNames = n
	}
	if r.Recording != nil && len(tests) > 0 {
		var held []data.Record
		for _, s := range tests {
			if s.C() != ds.Channels {
				return Datasets{}, r.Errorf([]string{"data", "test"}, "a held-out test split has %d channel(s), the training set %d (accepted: the training set's channels)", s.C(), ds.Channels)
			}
			held = append(held, s.Records...)
		}
		ds.HeldOut = ToDataset(held)
		ds.HeldOutFrom = fmt.Sprintf("the %d records of the [data] test folders", len(held))
		if r.Data.Generated() {
			ds.HeldOutFrom = fmt.Sprintf("%d generated test records (seed %d, never trained on)", len(held), r.Seed)
		}
		tests = nil // the recording's windows are the test set
	}
	for i, s := range tests {
		// Splits are named test-<i> whatever their folder: names key the
		// random streams and label records.csv, so they must be unique.
		name := fmt.Sprintf("test-%d", i)
		m, err := masks(s.Records, r.Evaluate, name)
		if err != nil {
			return Datasets{}, fmt.Errorf("recipe %s: %w", r.Name, err)
		}
		if s.C() != ds.Channels {
			return Datasets{}, r.Errorf([]string{"data", "test"}, "test split %s has %d channel(s), the training set %d (accepted: the training set's channels)", name, s.C(), ds.Channels)
		}
		ts := engine.TestSplit{Name: name, Data: ToDataset(s.Records), Masks: m}
		if ds.Channels > 1 {
			ts.Channels, ts.ChannelNames = ds.Channels, ds.ChannelNames
		}
		ds.Tests = append(ds.Tests, ts)
	}
	if r.Recording != nil {
		ts, notes, warnings, windows, err := recordingSplit(ctx, r)
		if err != nil {
			return Datasets{}, err
		}
		ds.Tests = []engine.TestSplit{ts}
		ds.Recording, ds.Notes, ds.Warnings, ds.Windows = ts.Name, notes, warnings, windows.kept
		ds.Rate, ds.F0, ds.Trigger = windows.rate, windows.f0, windows.trigger
		ds.Nominal, ds.Units = windows.nominal, windows.units
	}
	if w := emptyValWarning(r, len(train), len(val)); w != "" {
		ds.Warnings = append(ds.Warnings, w)
		ds.Notes = append(ds.Notes, w)
	}
	return ds, nil
}

// emptyValWarning is the warning for a training set with no validation
// records (val_fraction of every class rounds to none): each epoch's
// val_loss and val_acc are then NaN, which is said once here rather than
// left to the training log. "" when there is a validation set, or no
// training set ([model] torch).
func emptyValWarning(r *recipe.Recipe, train, val int) string {
	if train == 0 || val > 0 {
		return ""
	}
	return fmt.Sprintf("the validation set is empty (val_fraction %g of each class of the %d training records rounds to none): every epoch's val_loss and val_acc are NaN, so nothing measures held-out quality during training; accepted: a val_fraction or per-class counts that hold out at least one record of a class, or [data] val, a directory", r.Data.ValFraction, train)
}

// checkLengths checks that every split has the model's input shape,
// in_channels x in_len, and labels below its classes.
func checkLengths(r *recipe.Recipe, ds Datasets, arch nn.Arch) error {
	want := arch.InChannels * arch.InLen
	c := max(ds.Channels, 1)
	if ds.Train.N > 0 && c != arch.InChannels {
		p := []string{"model", "in_channels"}
		if r.KeyLine(p...) == 0 {
			p = []string{"model", "arch"}
		}
		return r.Errorf(p, "the data has %d channel(s), the model takes %d (accepted: [model] in_channels = %d; a built-in architecture takes it from there)", c, arch.InChannels, c)
	}
	if k := len(ds.Classes); k > arch.Classes() {
		return r.Errorf([]string{"model", "arch"}, "the data has %d classes, the model %d logits (accepted: [model] classes = %d for a built-in architecture, or a last layer of %d outputs)", k, arch.Classes(), k, k)
	}
	check := func(d sdk.Dataset, path []string, what string) error {
		if d.N > 0 && d.Len != want {
			return r.Errorf(path, "%s has waveforms of %d values (%d channel(s) x %d samples); the model takes %d x %d (accepted: %d values a record; [model] in_len = %d for a built-in architecture)", what, d.Len, c, d.Len/c, arch.InChannels, arch.InLen, want, d.Len/c)
		}
		return nil
	}
	if err := check(ds.Train, []string{"data", "train"}, "the training set"); err != nil {
		return err
	}
	if err := check(ds.Val, []string{"data", "val"}, "the validation set"); err != nil {
		return err
	}
	for i, t := range ds.Tests {
		what := "test split " + t.Name
		if r.Data.Source == recipe.SourceFiles && i < len(r.Data.Test) {
			what += " (" + r.Data.Test[i] + ")"
		}
		if err := check(t.Data, []string{"data", "test"}, what); err != nil {
			return err
		}
	}
	return nil
}

// HoldOut splits records into training and validation: per class c with
// n_c records, round(frac * n_c) records chosen by the permutation of the
// stream (seed, "data-split", "files", c) are held out. Both parts keep the
// input order.
func HoldOut(recs []data.Record, frac float64, seed uint64) (train, val []data.Record) {
	byClass := map[int][]int{}
	for i, r := range recs {
		byClass[r.Label] = append(byClass[r.Label], i)
	}
	held := make([]bool, len(recs))
	for c, idx := range byClass {
		k := int(math.Round(frac * float64(len(idx))))
		perm := rng.For(seed, "data-split", "files", c, -1).Perm(len(idx))
		for _, j := range perm[:k] {
			held[idx[j]] = true
		}
	}
	for i, r := range recs {
		if held[i] {
			val = append(val, r)
		} else {
			train = append(train, r)
		}
	}
	return train, val
}

// hashDataset is a SHA-256 of a dataset's values and labels.
func hashDataset(d sdk.Dataset) string {
	h := sha256.New()
	var b [8]byte
	for _, v := range d.X {
		binary.LittleEndian.PutUint32(b[:4], math.Float32bits(v))
		h.Write(b[:4])
	}
	for _, y := range d.Y {
		binary.LittleEndian.PutUint64(b[:], uint64(y))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}
