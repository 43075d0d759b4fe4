package recipe

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/sdk"
)

func defaultData() Data {
	return Data{
		Source: SourcePQD, ValFraction: 0.1, TrainPerClass: 900, TestSplits: 5, TestPerClass: 100,
		F0: 50, Fs: 3200, Cycles: 10, Noise: true, SNRdB: [2]float64{30, 50}, Phase: Phase{Random: true},
	}
}

var pqdOnly = []string{"train_per_class", "test_splits", "test_per_class", "f0", "fs", "cycles", "noise", "snr_db", "phase"}
var filesOnly = []string{"train", "val", "test", "channels", "class_names", "channel_names"}

func (d *decoder) data(v any, dd *Data) error {
	path := []string{"data"}
	tbl, err := d.asTable(v, path)
	if err != nil {
		return err
	}
	if s, ok := tbl["source"]; ok {
		if err := d.setString(&dd.Source)(s, sub(path, "source")); err != nil {
			return err
		}
	}
	var classes []any
	fields := []field{
		{"source", func(any, []string) error { return nil }},
		{"val_fraction", d.setFloat(&dd.ValFraction)},
		{"classes", func(v any, p []string) error {
			arr, ok := asArray(v)
			if !ok {
				return d.keyErr(p, "want an array of class names or indices, got %s", describe(v))
			}
			classes = arr
			return nil
		}},
	}
	var pqdFields, fileFields []field
	var snr, phase any
	pqdFields = []field{
		{"train_per_class", d.setInt(&dd.TrainPerClass)},
		{"test_splits", d.setInt(&dd.TestSplits)},
		{"test_per_class", d.setInt(&dd.TestPerClass)},
		{"f0", d.setFloat(&dd.F0)},
		{"fs", d.setFloat(&dd.Fs)},
		{"cycles", d.setInt(&dd.Cycles)},
		{"noise", d.setBool(&dd.Noise)},
		{"snr_db", func(v any, _ []string) error { snr = v; return nil }},
		{"phase", func(v any, _ []string) error { phase = v; return nil }},
	}
	fileFields = []field{
		{"train", d.setString(&dd.Train)},
		{"val", d.setString(&dd.Val)},
		{"test", d.setStrings(&dd.Test)},
		{"channels", d.setInt(&dd.Channels)},
		{"class_names", d.setStrings(&dd.ClassNames)},
		{"channel_names", d.setStrings(&dd.ChannelNames)},
	}
	switch dd.Source {
	case SourcePQD, SourcePQD3:
		fields = append(fields, pqdFields...)
		if k := firstPresent(tbl, filesOnly); k != "" {
			return d.keyErr(sub(path, k), "applies only to source = %q (this recipe has source = %s)", SourceFiles, sdk.Quote(dd.Source))
		}
		if _, ok := dd.Generator(); !ok {
			return d.keyErr(sub(path, "source"), "source %s has no generator in this build (accepted: %s, %s)", sdk.Quote(dd.Source), SourcePQD, SourceFiles)
		}
	case SourceFiles:
		fields = append(fields, fileFields...)
		if k := firstPresent(tbl, pqdOnly); k != "" {
			return d.keyErr(sub(path, k), "applies only to a generated source, %q or %q (this recipe has source = %s)", SourcePQD, SourcePQD3, sdk.Quote(dd.Source))
		}
		*dd = Data{Source: SourceFiles, ValFraction: dd.ValFraction}
	default:
		return d.keyErr(sub(path, "source"), "unknown source %s (accepted: %s, %s, %s)", sdk.Quote(dd.Source), SourcePQD, SourcePQD3, SourceFiles)
	}
	if err := d.table(tbl, path, fields); err != nil {
		return err
	}
	if err := d.classes(classes, sub(path, "classes"), dd); err != nil {
		return err
	}
	if dd.Source == SourceFiles {
		return d.filesData(tbl, path, dd)
	}

	if !(dd.ValFraction > 0 && dd.ValFraction < 1) {
		return d.keyErr(sub(path, "val_fraction"), "%v is outside (0, 1)", dd.ValFraction)
	}
	for _, c := range []struct {
		key   string
		n     int
		bound int
	}{{"train_per_class", dd.TrainPerClass, MaxPerClass}, {"test_splits", dd.TestSplits, MaxTestSplits}, {"test_per_class", dd.TestPerClass, MaxPerClass}, {"cycles", dd.Cycles, MaxWaveLen}} {
		if c.n < 1 {
			return d.keyErr(sub(path, c.key), "%d must be >= 1", c.n)
		}
		if err := d.checkCount(sub(path, c.key), c.n, c.bound, fmt.Sprintf("accepted: 1..%d", c.bound)); err != nil {
			return err
		}
	}
	if !(dd.F0 > 0) {
		return d.keyErr(sub(path, "f0"), "%v must be > 0 (usually 50 or 60 Hz)", dd.F0)
	}
	if !(dd.Fs > 0) {
		return d.keyErr(sub(path, "fs"), "%v must be > 0", dd.Fs)
	}
	if _, ok := waveLen(dd.F0, dd.Fs, dd.Cycles); !ok {
		at := "fs"
		for _, k := range []string{"cycles", "fs", "f0"} {
			if _, ok := tbl[k]; ok {
				at = k
			}
		}
		return d.keyErr(sub(path, at), "fs/f0*cycles = %v/%v*%d = %v is not an integer number of samples", dd.Fs, dd.F0, dd.Cycles, dd.Fs/dd.F0*float64(dd.Cycles))
	}
	if err := d.checkDataSize(tbl, path, dd); err != nil {
		return err
	}
	if snr != nil {
		p := sub(path, "snr_db")
		arr, ok := asArray(snr)
		if !ok || len(arr) != 2 {
			return d.keyErr(p, "want [min, max] in dB, got %s", describe(snr))
		}
		for i := range arr {
			if err := d.setFloat(&dd.SNRdB[i])(arr[i], sub(p, strconv.Itoa(i))); err != nil {
				return err
			}
		}
		if dd.SNRdB[0] > dd.SNRdB[1] {
			return d.keyErr(p, "min %v > max %v (write [min, max]; equal values fix the SNR)", dd.SNRdB[0], dd.SNRdB[1])
		}
	}
	if phase != nil {
		p := sub(path, "phase")
		switch x := phase.(type) {
		case string:
			if x != "random" {
				return d.keyErr(p, "%s is not accepted (accepted: \"random\" or a number in radians)", sdk.Quote(x))
			}
			dd.Phase = Phase{Random: true}
		default:
			var f float64
			if err := d.setFloat(&f)(phase, p); err != nil {
				return d.keyErr(p, "want \"random\" or a number in radians, got %s", describe(phase))
			}
			dd.Phase = Phase{Value: f}
		}
	}
	return nil
}

// waveLen returns fs/f0*cycles if it is an integer.
func waveLen(f0, fs float64, cycles int) (int, bool) {
	if !(f0 > 0 && fs > 0 && cycles > 0) {
		return 0, false
	}
	x := fs / f0 * float64(cycles)
	n := math.Round(x)
	if math.Abs(x-n) > 1e-9*math.Max(1, x) || n < 1 || n > 1<<31 {
		return 0, false
	}
	return int(n), true
}

// NumClasses is the number of classes of the PQD benchmark (normal + 15).
const NumClasses = 16

func (d *decoder) classes(arr []any, p []string, dd *Data) error {
	if len(arr) == 0 {
		dd.Classes = nil
		return nil
	}
	if len(arr) > NumClasses {
		return d.errAt(sub(p, strconv.Itoa(NumClasses)), "%s: %d classes are above the %d the benchmark has (accepted: each class once)", keyName(p), len(arr), NumClasses)
	}
	seen := map[string]int{}
	out := make([]string, len(arr))
	for i, e := range arr {
		ep := sub(p, strconv.Itoa(i))
		switch x := e.(type) {
		case string:
			if strings.TrimSpace(x) == "" {
				return d.keyErr(ep, "empty class name")
			}
			out[i] = x
		case int64:
			if x < 0 || x >= NumClasses {
				return d.keyErr(ep, "class index %d is out of range (accepted: 0..%d)", x, NumClasses-1)
			}
			out[i] = strconv.FormatInt(x, 10)
		default:
			return d.keyErr(ep, "want a class name or index, got %s", describe(e))
		}
		if j, dup := seen[out[i]]; dup {
			return d.keyErr(ep, "class %s is listed twice (elements %d and %d)", out[i], j, i)
		}
		seen[out[i]] = i
	}
	dd.Classes = out
	return nil
}

func (d *decoder) filesData(tbl map[string]any, path []string, dd *Data) error {
	if dd.Train == "" && !d.untrained {
		return d.errAt(path, "[data] with source = %q needs key \"train\" (a directory with waveforms.csv and labels.csv; none with [model] torch, whose networks are trained elsewhere)", SourceFiles)
	}
	if len(dd.Test) == 0 {
		return d.errAt(sub(path, "test"), "[data] with source = %q needs key \"test\": an array of >= 1 directories, one per test split", SourceFiles)
	}
	if len(dd.Test) > MaxTestSplits {
		return d.errAt(sub(path, "test", strconv.Itoa(MaxTestSplits)), "key \"test\" in [data]: %d test directories are above the bound %d (one a test split)", len(dd.Test), MaxTestSplits)
	}
	if dd.Train == "" {
		// [model] torch: no training set, so no validation set either.
		for _, k := range []string{"val", "val_fraction"} {
			if _, ok := tbl[k]; ok {
				return d.keyErr(sub(path, k), "applies only with key \"train\", the training set")
			}
		}
		dd.ValFraction = 0
	} else if dd.Val != "" {
		if _, ok := tbl["val_fraction"]; ok {
			return d.keyErr(sub(path, "val_fraction"), "applies only when \"val\" is not given (val_fraction of train is then held out)")
		}
		dd.ValFraction = 0
	} else if !(dd.ValFraction > 0 && dd.ValFraction < 1) {
		return d.keyErr(sub(path, "val_fraction"), "%v is outside (0, 1)", dd.ValFraction)
	}
	check := func(dir *string, p []string) error {
		abs := d.resolve(*dir)
		fi, err := os.Stat(abs)
		if err != nil || !fi.IsDir() {
			return d.keyErr(p, "%s is not a directory (accepted: a dataset directory, such as `uaxai data generate` writes; relative to the recipe's folder)", abs)
		}
		has := func(f string) bool { _, err := os.Stat(filepath.Join(abs, f)); return err == nil }
		st, _ := filepath.Glob(filepath.Join(abs, "*.safetensors"))
		if !(has("waveforms.csv") && has("labels.csv") || has("waveforms.npy") && has("labels.npy") || len(st) > 0) {
			return d.keyErr(p, "%s holds no dataset (accepted: waveforms.csv and labels.csv, waveforms.npy and labels.npy, or a .safetensors file with tensors waveforms and labels; `uaxai data generate` writes them)", abs)
		}
		*dir = abs
		return nil
	}
	if _, ok := tbl["channels"]; ok {
		if dd.Channels < 1 {
			return d.keyErr(sub(path, "channels"), "%d channels (accepted: 1..%d channels a CSV line)", dd.Channels, MaxInChannels)
		}
		if err := d.checkCount(sub(path, "channels"), dd.Channels, MaxInChannels, fmt.Sprintf("accepted: 1..%d channels a CSV line", MaxInChannels)); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		key   string
		names []string
	}{{"class_names", dd.ClassNames}, {"channel_names", dd.ChannelNames}} {
		if err := d.checkList(sub(path, l.key), len(l.names), "names"); err != nil {
			return err
		}
		seen := map[string]int{}
		for i, n := range l.names {
			ep := sub(path, l.key, strconv.Itoa(i))
			if strings.TrimSpace(n) == "" || strings.ContainsAny(n, ",\n\r") {
				return d.keyErr(ep, "%s is not a name (accepted: a non-empty name without commas or line breaks)", sdk.Quote(n))
			}
			if j, dup := seen[n]; dup {
				return d.keyErr(ep, "%s is listed twice (elements %d and %d)", sdk.Quote(n), j, i)
			}
			seen[n] = i
		}
	}
	if n := len(dd.ChannelNames); n > 0 && dd.Channels > 0 && n != dd.Channels {
		return d.keyErr(sub(path, "channel_names"), "names %d channels, and channels = %d (accepted: one name a channel)", n, dd.Channels)
	}
	if dd.Train != "" {
		if err := check(&dd.Train, sub(path, "train")); err != nil {
			return err
		}
	}
	if dd.Val != "" {
		if err := check(&dd.Val, sub(path, "val")); err != nil {
			return err
		}
	}
	for i := range dd.Test {
		if err := check(&dd.Test[i], sub(path, "test", strconv.Itoa(i))); err != nil {
			return err
		}
	}
	return nil
}

// checkDataSize bounds the generated data: the waveform length, and the
// samples of the training pool and of the test splits together.
func (d *decoder) checkDataSize(tbl map[string]any, path []string, dd *Data) error {
	n := dd.Len()
	if n > MaxWaveLen {
		at := "cycles"
		for _, k := range []string{"cycles", "fs", "f0"} {
			if _, ok := tbl[k]; ok {
				at = k
				break
			}
		}
		return d.keyErr(sub(path, at), "fs/f0*cycles = %v/%v*%d = %d samples a waveform, above the bound %d", dd.Fs, dd.F0, dd.Cycles, n, MaxWaveLen)
	}
	classes := int64(NumClasses)
	if g, ok := dd.Generator(); ok {
		classes = int64(len(g.Classes()) * g.Channels()) // the samples of a record are channels x n
	}
	if len(dd.Classes) > 0 {
		classes = int64(len(dd.Classes))
	}
	if s := int64(dd.TrainPerClass) * classes * int64(n); s > MaxDataSamples {
		return d.above(sub(path, "train_per_class"), int64(dd.TrainPerClass), MaxDataSamples/(classes*int64(n)),
			fmt.Sprintf("%d waveforms of %d samples for each of %d classes are %d samples, and at most %d (%d GiB as float64) are accepted", dd.TrainPerClass, n, classes, s, MaxDataSamples, MaxDataSamples*8>>30))
	}
	if s := int64(dd.TestSplits) * int64(dd.TestPerClass) * classes * int64(n); s > MaxDataSamples {
		return d.above(sub(path, "test_per_class"), int64(dd.TestPerClass), MaxDataSamples/(int64(dd.TestSplits)*classes*int64(n)),
			fmt.Sprintf("%d splits of %d waveforms of %d samples for each of %d classes are %d samples, and at most %d (%d GiB as float64) are accepted", dd.TestSplits, dd.TestPerClass, n, classes, s, MaxDataSamples, MaxDataSamples*8>>30))
	}
	return nil
}
