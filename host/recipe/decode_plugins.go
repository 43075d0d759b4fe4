package recipe

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/sdk"
)

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
	if len(arr) > MaxPluginTables {
		return nil, d.errAt([]string{k, strconv.Itoa(MaxPluginTables)}, "%d [[%s]] tables are above the bound %d (each is run with every other kind's); split the study into recipes", len(arr), k, MaxPluginTables)
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
			return nil, d.errAt(lp, "%s: label %s is already used by %s (line %d); labels name the result rows and must be unique: set label = \"...\"",
				tableName(path), sdk.Quote(ref.Label), tableName([]string{k, strconv.Itoa(j)}), refs[j].Line)
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
			if err := d.checkCount(sub(path, "draws"), ref.Draws, MaxDraws, "a summary holds a record's S maps together (accepted: 1.."+strconv.Itoa(MaxDraws)+")"); err != nil {
				return ref, err
			}
		}
	case sdk.KindExplainer:
		ref.Target = TargetTrue
		var have bool
		if err := get("target", &ref.Target, &have); err != nil {
			return ref, err
		}
		if ref.Target != TargetTrue && ref.Target != TargetPredicted {
			return ref, d.keyErr(sub(path, "target"), "%s is not accepted (accepted: %q, %q)", sdk.Quote(ref.Target), TargetTrue, TargetPredicted)
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
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return ref, d.keyErr(sub(path, "script"), "script file %s does not exist (paths are relative to the recipe's directory %s)", abs, d.dir)
		case err != nil:
			return ref, d.keyErr(sub(path, "script"), "script file %s: %v", abs, err)
		case fi.IsDir():
			return ref, d.keyErr(sub(path, "script"), "%s is a directory (accepted: a Go source file, e.g. %s)", abs, filepath.Join(abs, "summary.go"))
		case !fi.Mode().IsRegular():
			return ref, d.keyErr(sub(path, "script"), "%s is not a regular file (accepted: a Go source file)", abs)
		}
		ref.Script = abs
		if !haveLabel {
			base := filepath.Base(abs)
			ref.Label = "summary.script." + strings.TrimSuffix(base, filepath.Ext(base))
		}
	case haveUse:
		id, err := normaliseID(use, kind)
		if err != nil {
			if kind == sdk.KindSummary && strings.HasSuffix(use, ".go") {
				return ref, d.keyErr(sub(path, "use"), "%v (a script summary is given as script = %s)", err, sdk.Quote(use))
			}
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

// NormaliseID turns a plugin name as a recipe's use key (or a command
// line) gives it, "ensemble" or "posterior.ensemble", into its ID
// "posterior.ensemble"; a name of another kind's namespace is an error.
func NormaliseID(use string, kind sdk.Kind) (string, error) { return normaliseID(use, kind) }

// normaliseID turns "ensemble" or "posterior.ensemble" into
// "posterior.ensemble".
func normaliseID(use string, kind sdk.Kind) (string, error) {
	k := string(kind)
	id := use
	if !strings.HasPrefix(use, k+".") {
		for _, other := range []sdk.Kind{sdk.KindPosterior, sdk.KindExplainer, sdk.KindSummary} {
			if other != kind && strings.HasPrefix(use, string(other)+".") {
				return "", fmt.Errorf("%s is a %s plugin, not a %s", sdk.Quote(use), other, kind)
			}
		}
		id = k + "." + use
	}
	if !idRE.MatchString(strings.TrimPrefix(id, k+".")) {
		return "", fmt.Errorf("%s is not a plugin ID (accepted: lower-case letters, digits, '_', '-' and '.', optionally prefixed %q)", sdk.Quote(use), k+".")
	}
	return id, nil
}

// inheritTorch gives each posterior.torch table that names no module
// (neither key module nor key file) [model] torch's module, args and
// output (Model.TorchKeys), keys the table sets itself staying as they
// are; ref.From records where they came from.
func inheritTorch(r *Recipe) {
	cfg, from := r.Model.TorchKeys()
	if cfg == nil {
		return
	}
	for i := range r.Posteriors {
		p := &r.Posteriors[i]
		if p.ID != TorchPosterior {
			continue
		}
		if _, ok := p.Config["module"]; ok {
			continue
		}
		if _, ok := p.Config["file"]; ok {
			continue
		}
		if p.Config == nil {
			p.Config = sdk.Config{}
		}
		for k, v := range cfg {
			if _, ok := p.Config[k]; !ok {
				p.Config[k] = sdk.CloneValue(v)
				if p.From == nil {
					p.From = map[string][]string{}
				}
				p.From[k] = from[k]
			}
		}
	}
}

// checkDraws bounds each posterior's draws times the network's input size:
// the values of one record's S maps, which a summary holds together.
func (d *decoder) checkDraws(r *Recipe) error {
	a, err := r.Arch()
	if err != nil {
		return nil // checkModel has reported it
	}
	in := a.InChannels * a.InLen
	for _, p := range r.Posteriors {
		if p.Draws*in > MaxDrawValues {
			path := []string{string(p.Kind), strconv.Itoa(p.Index), "draws"}
			return d.above(path, int64(p.Draws), int64(MaxDrawValues/in),
				fmt.Sprintf("a record's %d maps of %d x %d values would be %d values together, and at most %d (%d MiB as float64) are accepted with this network's input", p.Draws, a.InChannels, a.InLen, p.Draws*in, MaxDrawValues, MaxDrawValues*8>>20))
		}
	}
	return nil
}

// RecordingCycles is the cycles of the system frequency a window of a
// recording holds when the data are not generated (host/record's
// DefaultCycles, the network's 10; a runner test checks they agree).
const RecordingCycles = 10

// recordingDefaults gives every explainer of a [recording] recipe the
// keys its built-in declares as its defaults on a recording
// (sdk.RecordingDefaulter, by builtin.RecordingDefaults: occlusion's
// fundamental baseline and its period), with period the samples a cycle
// of the windows: fs/f0 of generated data, else the model's in_len over
// RecordingCycles. ref.From names [recording] as where the keys came
// from, and the run's notes say so.
func recordingDefaults(r *Recipe) {
	if r.Recording == nil {
		return
	}
	period := 0.0
	if r.Data.Generated() {
		period = r.Data.Fs / r.Data.F0
	} else if a, err := r.Arch(); err == nil {
		period = float64(a.InLen) / RecordingCycles
	}
	for i := range r.Explainers {
		e := &r.Explainers[i]
		add := builtin.RecordingDefaults(e.ID, e.Config, period)
		for _, k := range slices.Sorted(maps.Keys(add)) {
			if _, ok := e.Config[k]; ok {
				continue // the table's own value
			}
			if e.Config == nil {
				e.Config = sdk.Config{}
			}
			if e.From == nil {
				e.From = map[string][]string{}
			}
			e.Config[k] = add[k]
			e.From[k] = []string{"recording"}
		}
	}
}
