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

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// decoder turns the generic TOML tree into a Recipe, with errors that name
// the file, the line, the key and what would be accepted.
type decoder struct {
	name  string
	lines *keyLines
	dir   string
	// untrained: [model] names a PyTorch module (torch), so nothing is
	// trained and [data] needs no training set.
	untrained bool
}

// line returns the line of path or, if it is not in the file, of its
// nearest ancestor that is; 0 if none is.
func (d *decoder) line(path []string) int { return d.lines.nearest(path) }

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
		return "string " + sdk.Quote(x)
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
		hint = fmt.Sprintf("; did you mean %s?", sdk.Quote(s))
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

// ---- helpers shared by the table decoders ----

func firstPresent(tbl map[string]any, keys []string) string {
	for _, k := range keys {
		if _, ok := tbl[k]; ok {
			return k
		}
	}
	return ""
}

// resolve makes a recipe path absolute against the recipe's directory.
func (d *decoder) resolve(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

// ---- the recipe ----

var nameRE = regexp.MustCompile(`^[a-z0-9_-]+$`)

// MaxNameLen is the longest run name: the run directory <name>-<time>[-N]
// must fit the 255 bytes of a file name on every common file system.
const MaxNameLen = 200

func (d *decoder) recipe(raw map[string]any) (*Recipe, error) {
	r := &Recipe{
		Seed: DefaultSeed, Out: DefaultOut,
		Data: defaultData(), Model: Model{Arch: nn.PaperArchName}, Train: nn.PaperTrainConfig(),
		Evaluate: defaultEvaluate(), Limits: limits.Default(),
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
		{"plugin_dirs", d.setStrings(&r.PluginDirs)},
		{"data", keep("data")},
		{"model", keep("model")},
		{"train", keep("train")},
		{"posterior", keep("posterior")},
		{"explainer", keep("explainer")},
		{"summary", keep("summary")},
		{"evaluate", keep("evaluate")},
		{"limits", keep("limits")},
		{"paper", keep("paper")},
		{"sensitivity", keep("sensitivity")},
		{"calibration", keep("calibration")},
		{"agreement", keep("agreement")},
		{"bound", keep("bound")},
		{"total_variance", keep("total_variance")},
		{"figures", keep("figures")},
		{"output", keep("output")},
		{"recording", keep("recording")},
		{"slurm", keep("slurm")},
		{"replicates", keep("replicates")},
	})
	if err != nil {
		return nil, err
	}
	if _, ok := raw["name"]; !ok {
		return nil, d.errAt(nil, "missing required key \"name\" at the top level (the run's name, [a-z0-9_-]+)")
	}
	if !nameRE.MatchString(r.Name) || len(r.Name) > MaxNameLen {
		return nil, d.keyErr([]string{"name"}, "%s is not a valid name: it names the run directory <out>/<name>-<time> (accepted: 1 to %d lower-case letters, digits, '_' and '-')", sdk.Quote(r.Name), MaxNameLen)
	}
	if seed < 0 {
		return nil, d.keyErr([]string{"seed"}, "%d is negative (accepted: 0..%d)", seed, int64(math.MaxInt64))
	}
	r.Seed = uint64(seed)
	if r.Workers < 0 {
		return nil, d.keyErr([]string{"workers"}, "%d is negative (accepted: 0 for all cores, or a count >= 1)", r.Workers)
	}
	if err := d.checkCount([]string{"workers"}, r.Workers, MaxWorkers, "workers are goroutines of a single machine: give at most its cores (0: all)"); err != nil {
		return nil, err
	}
	if err := d.checkList([]string{"plugin_dirs"}, len(r.PluginDirs), "directories of plugins"); err != nil {
		return nil, err
	}
	if r.Out == "" {
		return nil, d.keyErr([]string{"out"}, "is empty (accepted: a directory path)")
	}
	if len(r.PluginDirs) == 0 {
		r.PluginDirs = nil // plugin_dirs = [] is no key, as its canonical form (none) says
	}
	for i, dir := range r.PluginDirs {
		key := []string{"plugin_dirs", strconv.Itoa(i)}
		if dir == "" {
			return nil, d.keyErr(key, "is empty (accepted: a directory of plugin binaries, relative to the recipe's folder)")
		}
		abs := d.resolve(dir)
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, d.keyErr(key, "%s is not a directory (accepted: a directory of plugin binaries, relative to the recipe's folder)", sdk.Quote(abs))
		}
		r.PluginDirs[i] = abs
	}

	if m, ok := tables["model"].(map[string]any); ok {
		_, d.untrained = m["torch"]
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
	inheritTorch(r)
	if err := d.checkDraws(r); err != nil {
		return nil, err
	}
	if v, ok := tables["evaluate"]; ok {
		if err := d.evaluate(v, &r.Evaluate); err != nil {
			return nil, err
		}
	}
	if v, ok := tables["limits"]; ok {
		if err := d.limits(v, &r.Limits); err != nil {
			return nil, err
		}
	}
	if v, ok := tables["slurm"]; ok {
		if r.Slurm, err = d.slurm(v); err != nil {
			return nil, err
		}
	}
	if v, ok := tables["replicates"]; ok {
		if r.Replicates, err = d.replicates(v); err != nil {
			return nil, err
		}
	}
	if err := d.analysis(tables, &r.Analysis); err != nil {
		return nil, err
	}
	if r.Replicates != nil && r.Replicates.ResampleSplits && !r.Data.Generated() {
		return nil, d.keyErr([]string{"replicates", "resample_splits"}, "needs [data] source = %q: the test splits of source %q are files, the same in every replicate (accepted: false, or the generated data)", SourcePQD, r.Data.Source)
	}
	if r.Replicates != nil {
		// The analyses (the paper's paired difference too) see one run's
		// posteriors; across replicates the replicates' own tables take
		// their place.
		for _, name := range append([]string{"recording"}, AnalysisTables...) {
			if _, ok := tables[name]; ok {
				return nil, d.errAt([]string{name}, "[%s] cannot be combined with [replicates] (the analyses compare one run's posteriors; a replicated run has its own tables across replicates: run the analysis on a recipe without [replicates])", name)
			}
		}
	}
	if v, ok := tables["recording"]; ok {
		if err := d.recording(v, r); err != nil {
			return nil, err
		}
	}
	if err := d.checkRecording(r, tables); err != nil {
		return nil, err
	}
	recordingDefaults(r)
	return r, nil
}
