package recipe

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// decoder turns the generic TOML tree into a Recipe, with errors that name
// the file, the line, the key and what would be accepted.
type decoder struct {
	name  string
	lines keyLines
	dir   string
}

// line returns the line of path or, if it is not in the file, of its
// nearest ancestor that is; 0 if none is.
func (d *decoder) line(path []string) int {
	for i := len(path); i > 0; i-- {
		if l, ok := d.lines[pathKey(path[:i]...)]; ok {
			return l
		}
	}
	return 0
}

func (d *decoder) errAt(path []string, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if l := d.line(path); l > 0 {
		return fmt.Errorf("recipe %s: line %d: %s", d.name, l, msg)
	}
	return fmt.Errorf("recipe %s: %s", d.name, msg)
}

// keyErr reports a bad value of the key at path.
func (d *decoder) keyErr(path []string, format string, args ...any) error {
	return d.errAt(path, "%s: %s", keyName(path), fmt.Sprintf(format, args...))
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// tableName names a table for messages: "[data]", "[[posterior]] #2".
func tableName(path []string) string {
	if len(path) == 0 {
		return "the top level"
	}
	var keys []string
	idx := -1
	for i, p := range path {
		if i == len(path)-1 && isIndex(p) {
			idx, _ = strconv.Atoi(p)
			continue
		}
		keys = append(keys, p)
	}
	if idx >= 0 {
		return fmt.Sprintf("[[%s]] #%d", strings.Join(keys, "."), idx+1)
	}
	return "[" + strings.Join(keys, ".") + "]"
}

// keyName names a key for messages: `key "eps" in [evaluate]`.
func keyName(path []string) string {
	if len(path) == 0 {
		return "recipe"
	}
	k := path[len(path)-1]
	parent := path[:len(path)-1]
	if isIndex(k) && len(parent) > 0 { // an array element
		return fmt.Sprintf("element %s of %s", k, keyName(parent))
	}
	return fmt.Sprintf("key %q in %s", k, tableName(parent))
}

func sub(path []string, keys ...string) []string {
	return append(append([]string{}, path...), keys...)
}

// describe names a TOML value's type and value for messages.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("string %q", x)
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return fmt.Sprintf("float %v", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T %v", v, v)
}

// field is one accepted key of a host table.
type field struct {
	key string
	set func(v any, path []string) error
}

// table checks tbl for unknown keys and sets the fields present in it.
func (d *decoder) table(tbl map[string]any, path []string, fields []field) error {
	accepted := make([]string, len(fields))
	byKey := map[string]field{}
	for i, f := range fields {
		accepted[i] = f.key
		byKey[f.key] = f
	}
	var unknown []string
	for k := range tbl {
		if _, ok := byKey[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		d.sortByLine(path, unknown)
		return d.unknownKey(path, unknown[0], accepted)
	}
	for _, f := range fields {
		if v, ok := tbl[f.key]; ok {
			if err := f.set(v, sub(path, f.key)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sortByLine orders keys of the table at path by their line, then name.
func (d *decoder) sortByLine(path []string, keys []string) {
	sort.Slice(keys, func(i, j int) bool {
		li, lj := d.line(sub(path, keys[i])), d.line(sub(path, keys[j]))
		if li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
}

func (d *decoder) unknownKey(path []string, key string, accepted []string) error {
	acc := append([]string{}, accepted...)
	sort.Strings(acc)
	hint := ""
	if s := closest(key, acc); s != "" {
		hint = fmt.Sprintf("; did you mean %q?", s)
	}
	where := "in " + tableName(path)
	if len(path) == 0 {
		where = "at the top level"
	}
	return d.errAt(sub(path, key), "unknown key %q %s (accepted: %s)%s", key, where, strings.Join(acc, ", "), hint)
}

// closest returns the accepted key within edit distance 2 of key, if one is.
func closest(key string, accepted []string) string {
	best, bestD := "", 3
	for _, a := range accepted {
		if dd := editDistance(key, a); dd < bestD {
			best, bestD = a, dd
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			c = min(c, prev[j]+1, cur[j-1]+1)
			cur[j] = c
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ---- typed setters ----

func (d *decoder) setString(dst *string) func(any, []string) error {
	return func(v any, p []string) error {
		s, ok := v.(string)
		if !ok {
			return d.keyErr(p, "want a string, got %s", describe(v))
		}
		*dst = s
		return nil
	}
}

func (d *decoder) setInt(dst *int) func(any, []string) error {
	return func(v any, p []string) error {
		n, ok := v.(int64)
		if !ok {
			return d.keyErr(p, "want an integer, got %s", describe(v))
		}
		if int64(int(n)) != n {
			return d.keyErr(p, "%d is out of range", n)
		}
		*dst = int(n)
		return nil
	}
}

func (d *decoder) setFloat(dst *float64) func(any, []string) error {
	return func(v any, p []string) error {
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return d.keyErr(p, "want a finite number, got %v", x)
			}
			*dst = x
		case int64:
			*dst = float64(x)
		default:
			return d.keyErr(p, "want a number, got %s", describe(v))
		}
		return nil
	}
}

func (d *decoder) setBool(dst *bool) func(any, []string) error {
	return func(v any, p []string) error {
		b, ok := v.(bool)
		if !ok {
			return d.keyErr(p, "want true or false, got %s", describe(v))
		}
		*dst = b
		return nil
	}
}

func asArray(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []map[string]any:
		out := make([]any, len(x))
		for i, m := range x {
			out[i] = m
		}
		return out, true
	}
	return nil, false
}

func (d *decoder) setStrings(dst *[]string) func(any, []string) error {
	return func(v any, p []string) error {
		arr, ok := asArray(v)
		if !ok {
			return d.keyErr(p, "want an array of strings, got %s", describe(v))
		}
		out := make([]string, len(arr))
		for i, e := range arr {
			s, ok := e.(string)
			if !ok {
				return d.keyErr(sub(p, strconv.Itoa(i)), "want a string, got %s", describe(e))
			}
			out[i] = s
		}
		*dst = out
		return nil
	}
}

// setStruct decodes a table into a struct through its toml tags (used for
// nn.TrainConfig and nn.Layer, so that the accepted keys follow sdk/nn).
func (d *decoder) setStruct(tbl map[string]any, path []string, dst any) error {
	rv := reflect.ValueOf(dst).Elem()
	rt := rv.Type()
	var fields []field
	for i := 0; i < rt.NumField(); i++ {
		tag := strings.Split(rt.Field(i).Tag.Get("toml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		fv := rv.Field(i)
		var set func(any, []string) error
		switch fv.Kind() {
		case reflect.Int:
			set = d.setInt(fv.Addr().Interface().(*int))
		case reflect.Float64:
			set = d.setFloat(fv.Addr().Interface().(*float64))
		case reflect.Bool:
			set = d.setBool(fv.Addr().Interface().(*bool))
		case reflect.String:
			set = func(v any, p []string) error {
				var s string
				if err := d.setString(&s)(v, p); err != nil {
					return err
				}
				fv.SetString(s)
				return nil
			}
		default:
			panic(fmt.Sprintf("recipe: field %s.%s of kind %s is not supported", rt.Name(), rt.Field(i).Name, fv.Kind()))
		}
		fields = append(fields, field{tag, set})
	}
	return d.table(tbl, path, fields)
}

// asTable returns v as a table or an error naming path.
func (d *decoder) asTable(v any, path []string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if _, isArr := asArray(v); isArr && len(path) == 1 {
			return nil, d.errAt(path, "%s must be a table: write [%s], not [[%s]]", path[0], path[0], path[0])
		}
		return nil, d.keyErr(path, "want a table, got %s", describe(v))
	}
	return m, nil
}

// ---- the recipe ----

var nameRE = regexp.MustCompile(`^[a-z0-9_-]+$`)

func defaultData() Data {
	return Data{
		Source: SourcePQD, ValFraction: 0.1, TrainPerClass: 900, TestSplits: 5, TestPerClass: 100,
		F0: 50, Fs: 3200, Cycles: 10, Noise: true, SNRdB: [2]float64{20, 50}, Phase: Phase{Random: true},
	}
}

func defaultEvaluate() Evaluate {
	return Evaluate{Mask: MaskAmplitude, Eps: 0.02, Groups: []string{GroupAll, GroupDisc7}, Abs: true}
}

func (d *decoder) recipe(raw map[string]any) (*Recipe, error) {
	r := &Recipe{
		Seed: DefaultSeed, Out: DefaultOut,
		Data: defaultData(), Model: Model{Arch: nn.PaperArchName}, Train: nn.PaperTrainConfig(),
		Evaluate: defaultEvaluate(),
	}
	var seed int64 = DefaultSeed
	var tables = map[string]any{}
	keep := func(key string) func(any, []string) error {
		return func(v any, _ []string) error { tables[key] = v; return nil }
	}
	err := d.table(raw, nil, []field{
		{"name", d.setString(&r.Name)},
		{"seed", func(v any, p []string) error {
			n, ok := v.(int64)
			if !ok {
				return d.keyErr(p, "want an integer, got %s", describe(v))
			}
			seed = n
			return nil
		}},
		{"workers", d.setInt(&r.Workers)},
		{"out", d.setString(&r.Out)},
		{"data", keep("data")},
		{"model", keep("model")},
		{"train", keep("train")},
		{"posterior", keep("posterior")},
		{"explainer", keep("explainer")},
		{"summary", keep("summary")},
		{"evaluate", keep("evaluate")},
	})
	if err != nil {
		return nil, err
	}
	if _, ok := raw["name"]; !ok {
		return nil, d.errAt(nil, "missing required key \"name\" at the top level (the run's name, [a-z0-9_-]+)")
	}
	if !nameRE.MatchString(r.Name) {
		return nil, d.keyErr([]string{"name"}, "%q is not a valid name (accepted: lower-case letters, digits, '_' and '-')", r.Name)
	}
	if seed < 0 {
		return nil, d.keyErr([]string{"seed"}, "%d is negative (accepted: 0..%d)", seed, int64(math.MaxInt64))
	}
	r.Seed = uint64(seed)
	if r.Workers < 0 {
		return nil, d.keyErr([]string{"workers"}, "%d is negative (accepted: 0 for all cores, or a count >= 1)", r.Workers)
	}
	if r.Out == "" {
		return nil, d.keyErr([]string{"out"}, "is empty (accepted: a directory path)")
	}

	if v, ok := tables["data"]; ok {
		if err := d.data(v, &r.Data); err != nil {
			return nil, err
		}
	}
	if v, ok := tables["model"]; ok {
		if err := d.model(v, &r.Model); err != nil {
			return nil, err
		}
	}
	if v, ok := tables["train"]; ok {
		tbl, err := d.asTable(v, []string{"train"})
		if err != nil {
			return nil, err
		}
		if err := d.setStruct(tbl, []string{"train"}, &r.Train); err != nil {
			return nil, err
		}
	}
	if err := d.checkTrain(r.Train); err != nil {
		return nil, err
	}
	if err := d.checkModel(r); err != nil {
		return nil, err
	}
	for _, k := range []struct {
		kind sdk.Kind
		dst  *[]PluginRef
	}{{sdk.KindPosterior, &r.Posteriors}, {sdk.KindExplainer, &r.Explainers}, {sdk.KindSummary, &r.Summaries}} {
		refs, err := d.plugins(tables[string(k.kind)], k.kind)
		if err != nil {
			return nil, err
		}
		*k.dst = refs
	}
	if v, ok := tables["evaluate"]; ok {
		if err := d.evaluate(v, &r.Evaluate); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// ---- [data] ----

var pqdOnly = []string{"train_per_class", "test_splits", "test_per_class", "f0", "fs", "cycles", "noise", "snr_db", "phase"}
var filesOnly = []string{"train", "val", "test"}

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
	}
	switch dd.Source {
	case SourcePQD:
		fields = append(fields, pqdFields...)
		if k := firstPresent(tbl, filesOnly); k != "" {
			return d.keyErr(sub(path, k), "applies only to source = %q (this recipe has source = %q)", SourceFiles, dd.Source)
		}
	case SourceFiles:
		fields = append(fields, fileFields...)
		if k := firstPresent(tbl, pqdOnly); k != "" {
			return d.keyErr(sub(path, k), "applies only to source = %q (this recipe has source = %q)", SourcePQD, dd.Source)
		}
		*dd = Data{Source: SourceFiles, ValFraction: dd.ValFraction}
	default:
		return d.keyErr(sub(path, "source"), "unknown source %q (accepted: %s, %s)", dd.Source, SourcePQD, SourceFiles)
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
		key string
		n   int
	}{{"train_per_class", dd.TrainPerClass}, {"test_splits", dd.TestSplits}, {"test_per_class", dd.TestPerClass}, {"cycles", dd.Cycles}} {
		if c.n < 1 {
			return d.keyErr(sub(path, c.key), "%d must be >= 1", c.n)
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
				return d.keyErr(p, "%q is not accepted (accepted: \"random\" or a number in radians)", x)
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

func firstPresent(tbl map[string]any, keys []string) string {
	for _, k := range keys {
		if _, ok := tbl[k]; ok {
			return k
		}
	}
	return ""
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

// resolve makes a recipe path absolute against the recipe's directory.
func (d *decoder) resolve(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

func (d *decoder) filesData(tbl map[string]any, path []string, dd *Data) error {
	if dd.Train == "" {
		return d.errAt(path, "[data] with source = %q needs key \"train\" (a directory with waveforms.csv and labels.csv)", SourceFiles)
	}
	if len(dd.Test) == 0 {
		return d.errAt(sub(path, "test"), "[data] with source = %q needs key \"test\": an array of >= 1 directories, one per test split", SourceFiles)
	}
	if dd.Val != "" {
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
			return d.keyErr(p, "%s is not a directory", abs)
		}
		for _, f := range []string{"waveforms.csv", "labels.csv"} {
			if _, err := os.Stat(filepath.Join(abs, f)); err != nil {
				return d.keyErr(p, "%s has no %s (a data directory holds waveforms.csv, labels.csv and optionally disturbance.csv)", abs, f)
			}
		}
		*dir = abs
		return nil
	}
	if err := check(&dd.Train, sub(path, "train")); err != nil {
		return err
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

// ---- [model] and [train] ----

func (d *decoder) model(v any, m *Model) error {
	path := []string{"model"}
	tbl, err := d.asTable(v, path)
	if err != nil {
		return err
	}
	var layers []any
	haveLayers := false
	err = d.table(tbl, path, []field{
		{"arch", d.setString(&m.Arch)},
		{"in_channels", d.setInt(&m.InChannels)},
		{"in_len", d.setInt(&m.InLen)},
		{"layers", func(v any, p []string) error {
			arr, ok := asArray(v)
			if !ok {
				return d.keyErr(p, "want [[model.layers]] tables, got %s", describe(v))
			}
			layers, haveLayers = arr, true
			return nil
		}},
	})
	if err != nil {
		return err
	}
	if !haveLayers {
		if k := firstPresent(tbl, []string{"in_channels", "in_len"}); k != "" {
			return d.keyErr(sub(path, k), "applies only to an inline architecture, which needs [[model.layers]]")
		}
		if _, err := nn.LookupArch(m.Arch); err != nil {
			return d.keyErr(sub(path, "arch"), "%v; or define one inline with in_channels, in_len and [[model.layers]]", err)
		}
		if m.Arch == "" {
			m.Arch = nn.PaperArchName
		}
		return nil
	}
	if _, ok := tbl["arch"]; !ok {
		m.Arch = "inline"
	} else if _, err := nn.LookupArch(m.Arch); err == nil {
		return d.keyErr(sub(path, "arch"), "%q names a built-in architecture, but [[model.layers]] define one inline; give the inline one another name", m.Arch)
	}
	for _, k := range []string{"in_channels", "in_len"} {
		if _, ok := tbl[k]; !ok {
			return d.errAt(path, "[model] with [[model.layers]] needs key %q", k)
		}
	}
	if len(layers) == 0 {
		return d.keyErr(sub(path, "layers"), "no layers")
	}
	m.Layers = make([]nn.Layer, len(layers))
	for i, l := range layers {
		lp := sub(path, "layers", strconv.Itoa(i))
		lt, ok := l.(map[string]any)
		if !ok {
			return d.keyErr(lp, "want a table, got %s", describe(l))
		}
		if err := d.setStruct(lt, lp, &m.Layers[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkModel validates the architecture and its fit to the data.
func (d *decoder) checkModel(r *Recipe) error {
	a, err := r.Arch()
	if err != nil {
		path := []string{"model"}
		if r.Model.Layers == nil {
			path = sub(path, "arch")
		} else {
			// nn names the layer "layer N": point at it.
			var n int
			if _, e := fmt.Sscanf(layerPart(err.Error()), "layer %d", &n); e == nil {
				path = sub(path, "layers", strconv.Itoa(n))
			}
		}
		return d.errAt(path, "[model]: %v", err)
	}
	if n := r.Data.Len(); n > 0 && (a.InLen != n || a.InChannels != 1) {
		p := []string{"model", "in_len"}
		if r.Model.Layers == nil {
			p = []string{"model", "arch"}
		}
		return d.errAt(p, "[model]: architecture %q takes %d channel(s) x %d samples, but [data] makes 1 x %d (fs/f0*cycles = %v/%v*%d)",
			a.Name, a.InChannels, a.InLen, n, r.Data.Fs, r.Data.F0, r.Data.Cycles)
	}
	return nil
}

func layerPart(msg string) string {
	if i := strings.Index(msg, "layer "); i >= 0 {
		return msg[i:]
	}
	return ""
}

func (d *decoder) checkTrain(t nn.TrainConfig) error {
	p := func(k string) []string { return []string{"train", k} }
	switch {
	case t.Epochs < 1:
		return d.keyErr(p("epochs"), "%d must be >= 1", t.Epochs)
	case t.Batch < 1:
		return d.keyErr(p("batch"), "%d must be >= 1", t.Batch)
	case !(t.LR > 0):
		return d.keyErr(p("lr"), "%v must be > 0", t.LR)
	case !(t.WeightDecay >= 0):
		return d.keyErr(p("weight_decay"), "%v must be >= 0", t.WeightDecay)
	case t.StepEvery < 1:
		return d.keyErr(p("step_every"), "%d must be >= 1 (for no decay set step_gamma = 1)", t.StepEvery)
	case !(t.StepGamma > 0 && t.StepGamma <= 1):
		return d.keyErr(p("step_gamma"), "%v is outside (0, 1]", t.StepGamma)
	case !(t.Beta1 >= 0 && t.Beta1 < 1):
		return d.keyErr(p("beta1"), "%v is outside [0, 1)", t.Beta1)
	case !(t.Beta2 >= 0 && t.Beta2 < 1):
		return d.keyErr(p("beta2"), "%v is outside [0, 1)", t.Beta2)
	case !(t.Eps > 0):
		return d.keyErr(p("eps"), "%v must be > 0", t.Eps)
	}
	return nil
}

// ---- plugin tables ----

var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// hostKeys are the keys of each plugin table that the host reads; all
// others go to the plugin.
var hostKeys = map[sdk.Kind][]string{
	sdk.KindPosterior: {"use", "label", "draws"},
	sdk.KindExplainer: {"use", "label", "target"},
	sdk.KindSummary:   {"use", "label", "script"},
}

// HostKeys returns the keys of a plugin table of the given kind that the
// host reads itself; every other key is the plugin's.
func HostKeys(kind sdk.Kind) []string { return append([]string(nil), hostKeys[kind]...) }

func (d *decoder) plugins(v any, kind sdk.Kind) ([]PluginRef, error) {
	k := string(kind)
	if v == nil {
		return nil, d.errAt(nil, "no [[%s]] table: a recipe needs at least one (e.g. [[%s]] with use = %q)", k, k, example[kind])
	}
	arr, ok := asArray(v)
	if !ok {
		return nil, d.errAt([]string{k}, "%s must be an array of tables: write [[%s]], not [%s]", k, k, k)
	}
	if len(arr) == 0 {
		return nil, d.errAt([]string{k}, "no [[%s]] table: a recipe needs at least one", k)
	}
	refs := make([]PluginRef, len(arr))
	labels := map[string]int{}
	for i, e := range arr {
		path := []string{k, strconv.Itoa(i)}
		tbl, ok := e.(map[string]any)
		if !ok {
			return nil, d.keyErr(path, "want a table, got %s", describe(e))
		}
		ref, err := d.plugin(tbl, path, kind)
		if err != nil {
			return nil, err
		}
		ref.Index = i
		if j, dup := labels[ref.Label]; dup {
			lp := sub(path, "label")
			if _, ok := tbl["label"]; !ok {
				lp = path
			}
			return nil, d.errAt(lp, "%s: label %q is already used by %s (line %d); labels name the result rows and must be unique: set label = \"...\"",
				tableName(path), ref.Label, tableName([]string{k, strconv.Itoa(j)}), refs[j].Line)
		}
		labels[ref.Label] = i
		refs[i] = ref
	}
	return refs, nil
}

var example = map[sdk.Kind]string{sdk.KindPosterior: "ensemble", sdk.KindExplainer: "occlusion", sdk.KindSummary: "mean"}

func (d *decoder) plugin(tbl map[string]any, path []string, kind sdk.Kind) (PluginRef, error) {
	ref := PluginRef{Kind: kind, Config: sdk.Config{}, Line: d.line(path)}
	host := map[string]bool{}
	for _, h := range hostKeys[kind] {
		host[h] = true
	}
	for key, v := range tbl {
		if !host[key] {
			ref.Config[key] = sdk.CloneValue(v)
		}
	}
	var use, script string
	var haveUse, haveScript bool
	ref.Draws = 0
	get := func(key string, dst *string, have *bool) error {
		v, ok := tbl[key]
		if !ok {
			return nil
		}
		*have = true
		return d.setString(dst)(v, sub(path, key))
	}
	if err := get("use", &use, &haveUse); err != nil {
		return ref, err
	}
	var haveLabel bool
	if err := get("label", &ref.Label, &haveLabel); err != nil {
		return ref, err
	}
	if haveLabel && strings.TrimSpace(ref.Label) == "" {
		return ref, d.keyErr(sub(path, "label"), "is empty")
	}
	switch kind {
	case sdk.KindPosterior:
		ref.Draws = 1
		if v, ok := tbl["draws"]; ok {
			if err := d.setInt(&ref.Draws)(v, sub(path, "draws")); err != nil {
				return ref, err
			}
			if ref.Draws < 1 {
				return ref, d.keyErr(sub(path, "draws"), "%d must be >= 1 (S, the number of draws)", ref.Draws)
			}
		}
	case sdk.KindExplainer:
		ref.Target = TargetTrue
		var have bool
		if err := get("target", &ref.Target, &have); err != nil {
			return ref, err
		}
		if ref.Target != TargetTrue && ref.Target != TargetPredicted {
			return ref, d.keyErr(sub(path, "target"), "%q is not accepted (accepted: %q, %q)", ref.Target, TargetTrue, TargetPredicted)
		}
	case sdk.KindSummary:
		if err := get("script", &script, &haveScript); err != nil {
			return ref, err
		}
	}
	switch {
	case haveUse && haveScript:
		return ref, d.errAt(sub(path, "script"), "%s has both use and script: give one", tableName(path))
	case haveScript:
		if strings.TrimSpace(script) == "" {
			return ref, d.keyErr(sub(path, "script"), "is empty")
		}
		abs := d.resolve(script)
		fi, err := os.Stat(abs)
		if err != nil || !fi.Mode().IsRegular() {
			return ref, d.keyErr(sub(path, "script"), "script file %s does not exist (paths are relative to the recipe's directory %s)", abs, d.dir)
		}
		ref.Script = abs
		if !haveLabel {
			base := filepath.Base(abs)
			ref.Label = "summary.script." + strings.TrimSuffix(base, filepath.Ext(base))
		}
	case haveUse:
		id, err := normaliseID(use, kind)
		if err != nil {
			return ref, d.keyErr(sub(path, "use"), "%v", err)
		}
		ref.ID = id
		if !haveLabel {
			ref.Label = id
		}
	default:
		what := "use = \"<plugin>\""
		if kind == sdk.KindSummary {
			what += " or script = \"<file.go>\""
		}
		return ref, d.errAt(path, "%s needs %s (e.g. use = %q)", tableName(path), what, example[kind])
	}
	return ref, nil
}

// normaliseID turns "ensemble" or "posterior.ensemble" into
// "posterior.ensemble".
func normaliseID(use string, kind sdk.Kind) (string, error) {
	k := string(kind)
	id := use
	if !strings.HasPrefix(use, k+".") {
		for _, other := range []sdk.Kind{sdk.KindPosterior, sdk.KindExplainer, sdk.KindSummary} {
			if other != kind && strings.HasPrefix(use, string(other)+".") {
				return "", fmt.Errorf("%q is a %s plugin, not a %s", use, other, kind)
			}
		}
		id = k + "." + use
	}
	if !idRE.MatchString(strings.TrimPrefix(id, k+".")) {
		return "", fmt.Errorf("%q is not a plugin ID (accepted: lower-case letters, digits, '_', '-' and '.', optionally prefixed %q)", use, k+".")
	}
	return id, nil
}

// ---- [evaluate] ----

func (d *decoder) evaluate(v any, e *Evaluate) error {
	path := []string{"evaluate"}
	tbl, err := d.asTable(v, path)
	if err != nil {
		return err
	}
	err = d.table(tbl, path, []field{
		{"mask", d.setString(&e.Mask)},
		{"eps", d.setFloat(&e.Eps)},
		{"groups", d.setStrings(&e.Groups)},
		{"abs", d.setBool(&e.Abs)},
	})
	if err != nil {
		return err
	}
	if e.Mask != MaskAmplitude && e.Mask != MaskEvent {
		return d.keyErr(sub(path, "mask"), "unknown mask kind %q (accepted: %s, %s)", e.Mask, MaskAmplitude, MaskEvent)
	}
	if !(e.Eps > 0) {
		return d.keyErr(sub(path, "eps"), "%v must be > 0", e.Eps)
	}
	if len(e.Groups) == 0 {
		return d.keyErr(sub(path, "groups"), "is empty (accepted: %s, %s)", GroupAll, GroupDisc7)
	}
	seen := map[string]bool{}
	for i, g := range e.Groups {
		gp := sub(path, "groups", strconv.Itoa(i))
		if g != GroupAll && g != GroupDisc7 {
			return d.keyErr(gp, "unknown group %q (accepted: %s, %s)", g, GroupAll, GroupDisc7)
		}
		if seen[g] {
			return d.keyErr(gp, "group %q is listed twice", g)
		}
		seen[g] = true
	}
	return nil
}
