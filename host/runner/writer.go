package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/uaxai/uaxai/host/analysis"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/figure"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/host/rundir"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file writes the run directory: recipe.toml and units/plan.json,
// the manifest and the shards' status files, results.json, records.csv,
// tables.md, report.html (html.go) and outputs/.

// runFingerprint identifies a run's results: the canonical recipe (the
// tables that change a result), the plugins' versions and the scripts'
// digests. Every unit carries it.
func runFingerprint(r *recipe.Recipe, versions, digests map[string]string) (string, error) {
	canon, err := r.Canonical()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	// The canonical form's comment head names the file it came from; a
	// run's recipe.toml is the same recipe from another path.
	_, body, _ := strings.Cut(string(canon), "\n\n")
	fmt.Fprintf(h, "uaxai-run-1\x00%s\x00", body)
	for _, k := range slices.Sorted(maps.Keys(versions)) {
		fmt.Fprintf(h, "%s=%s\x00", k, versions[k])
	}
	for _, k := range slices.Sorted(maps.Keys(digests)) {
		fmt.Fprintf(h, "%s=%s\x00", k, digests[k])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// runWriter writes the run directory: recipe.toml and units/plan.json
// when the run is prepared, a manifest (or a shard's status file) when it
// starts and when it ends (complete, failed or interrupted), and the
// results when the units are merged. It is the engine's Sink.
type runWriter struct {
	dir                string
	r                  *recipe.Recipe
	ds                 Datasets
	classes            int // the network's classes
	opt                Options
	workers            int
	start              time.Time
	trainHash, valHash string
	tim                engine.Timings
	outputs            int // set and band outputs written
	pred               predictive
	windows            windowTable        // a recording's per-window answers
	checks             checks             // each posterior's check of itself
	an                 *analysis.Analyser // nil: the recipe asks for no analysis
	costs              map[string]float64 // wall time of each unit, by name
	anRep              *analysis.Report   // the analyses of a finished run
	events             []report.Event     // a recording's events, for report.html
	// shown and ts are what a finished run shows: its rows (a replicated
	// run's aggregate rows) and its tables.
	shown *engine.Results
	ts    []report.Table
}

func (w *runWriter) write(name string, b []byte) error {
	if err := report.WriteFile(w.dir, name, b); err != nil {
		return fmt.Errorf("run directory %s: %w", w.dir, err)
	}
	return nil
}

// begin writes recipe.toml (unless the run directory has it: a shard
// after another, a resumed run) and units/plan.json, which must be the
// same as the one there.
func (w *runWriter) begin(plan engine.Plan) error {
	canon, err := w.r.Canonical()
	if err != nil {
		return err
	}
	units := engine.Units(plan)
	pl := rundir.Plan{Recipe: w.r.Name, Fingerprint: plan.Fingerprint, UnitRecords: engine.UnitSize(plan)}
	for _, u := range units {
		ru := rundir.Unit{Name: u.Name, Kind: u.Kind, Index: u.Index, Posterior: plan.Posteriors[u.Post].Label}
		if u.Kind == engine.ExplainUnit {
			ru.Records = u.B1 - u.B0
		}
		pl.Units = append(pl.Units, ru)
	}
	if err := (rundir.Dir{Path: w.dir}).WritePlan(pl); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(w.dir, "recipe.toml")); err == nil {
		return nil
	}
	return w.write("recipe.toml", canon)
}

// shardStatus writes shards/<kind>-<i>-of-<n>.json: what a shard did, and
// how it ended.
func (w *runWriter) shardStatus(sh engine.Shard, status string, runErr error) error {
	host, _ := os.Hostname()
	kind := sh.Kind
	if kind == "" {
		kind = "all"
	}
	m := map[string]any{"status": status, "host": host, "pid": os.Getpid(), "shard": sh.I, "shards": sh.N, "kind": kind, "kernels": nn.Kernels(),
		"started": w.start.UTC().Format(time.RFC3339), "wall_s": time.Since(w.start).Seconds(), "units_s": w.costs,
		"command": strings.Join(w.opt.Command, " ")}
	if runErr != nil {
		m["error"] = runErr.Error()
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(w.dir, "shards"), 0o755); err != nil {
		return err
	}
	return w.write(filepath.Join("shards", fmt.Sprintf("%s-%d-of-%d.json", kind, sh.I, sh.N)), append(b, '\n'))
}

// final writes the results of a finished run, with its analyses (their
// files first, so that results.json names only files that exist).
func (w *runWriter) final(res *engine.Results) error {
	if w.an != nil {
		rep, err := w.an.Finish(res)
		if err != nil {
			return fmt.Errorf("analysis: %w", err)
		}
		for _, f := range rep.Files {
			if err := os.MkdirAll(filepath.Join(w.dir, filepath.Dir(f.Name)), 0o755); err != nil {
				return fmt.Errorf("run directory %s: %w", w.dir, err)
			}
			if err := w.write(f.Name, f.Data); err != nil {
				return err
			}
		}
		res.Notes = append(res.Notes, rep.Notes...)
		w.anRep = rep
	}
	res.Notes = append(res.Notes, w.ds.Notes...)
	return w.results(res)
}

// tables are the tables of tables.md and of the terminal: the main table,
// the paper's tables the recipe names, the analyses', the predictive
// quality, for C > 1 channels the per-channel tables, and the per-class
// tables.
func (w *runWriter) tables(res *engine.Results) ([]report.Table, error) {
	if len(res.Rows) == 0 { // a recording: nothing scored
		var ts []report.Table
		if t, ok := w.checks.table(); ok {
			ts = append(ts, t)
		}
		if t, ok := w.checks.classTable(w.windows.rows, w.ds.ClassList()); ok {
			ts = append(ts, t)
		}
		if w.anRep != nil {
			ts = append(ts, w.anRep.Tables...)
		}
		return ts, nil
	}
	// The tables of res's rows are of aggregate rows in a replicated run
	// (their sd over the replicates' means); the analysis's and the
	// predictive table have a row per replicate and keep their titles.
	agg := func(ts ...report.Table) []report.Table {
		if w.r.Replicates != nil {
			return overReplicates(ts, w.r.Replicates.N())
		}
		return ts
	}
	ts := agg(report.Main(res))
	pts, err := w.paperTables(res)
	if err != nil {
		return nil, err
	}
	ts = append(ts, agg(pts...)...)
	if w.anRep != nil {
		ts = append(ts, w.anRep.Tables...)
	}
	if len(w.pred.rows) > 0 {
		ts = append(ts, w.pred.table())
	}
	ts = append(ts, agg(report.ChannelTables(res)...)...) // none for one channel
	// The per-class tables last: the terminal leaves them out (runner.go).
	return append(ts, agg(report.PerClassIoU(res), report.PerClass(res))...), nil
}

func (w *runWriter) results(res *engine.Results) error {
	var anJSON any
	if w.anRep != nil && len(w.anRep.JSON) > 0 {
		anJSON = w.anRep.JSON
	}
	shown, records, repSections, repTables, err := w.replicates(res)
	if err != nil {
		return err
	}
	rj, err := report.ResultsJSON(w.r.Name, w.r.Seed, shown, append([]report.Section{w.pred.section(), w.windows.section(), w.checks.section(), {Key: "analysis", Value: anJSON}}, repSections...)...)
	if err != nil {
		return err
	}
	var extra []report.RecordColumns
	if w.an != nil {
		if c, ok := w.an.RecordColumns(); ok {
			extra = append(extra, c)
		}
	}
	for _, c := range w.checks.rows {
		if c.Note != "" {
			res.Notes = append(res.Notes, c.Note)
		} else if f := c.Feature; f != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("feature-space out-of-distribution check of %s: each record's squared Mahalanobis distance to the nearest class on the draws' penultimate features (%d), a Gaussian a draw fitted on %d training records; the threshold %.3g flags %.0f%% of the %d validation records", c.name, f.Features, f.Train, f.Threshold, 100*f.Alpha, f.Val))
		}
	}
	if c, note, ok := oodColumns(w.ds, w.windows.ood, w.windows.feats, &w.checks); ok || w.ds.Recording == "" {
		if ok {
			extra = append(extra, c)
		}
		if note != "" {
			res.Notes = append(res.Notes, note)
		}
	}
	rc, err := report.RecordsCSV(records, w.splitNames(), extra...)
	if err != nil {
		return err
	}
	ts, err := w.tables(shown)
	if err != nil {
		return err
	}
	if w.r.Replicates != nil && len(ts) > 0 {
		// The tables across replicates follow the main table.
		ts = append(append(append([]report.Table{}, ts[0]), repTables...), ts[1:]...)
	}
	w.shown, w.ts = shown, ts
	var tlNames []string
	var tlPNGs [][]byte
	if w.ds.Recording != "" {
		// a timeline that cannot be drawn is a note, never the run's end
		var notes []string
		if tlNames, tlPNGs, notes, err = w.windows.timelines(w.ds, figure.TimelinePlot); err != nil {
			return err
		}
		res.Notes = append(res.Notes, notes...)
		if w.windows.oodNote != "" {
			res.Notes = append(res.Notes, w.windows.oodNote)
		}
	}
	md, err := report.Markdown(w.r.Name, res.Notes, ts...)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{"results.json", rj}, {"records.csv", rc}, {"tables.md", md}} {
		if f.name == "tables.md" && w.ds.Recording != "" {
			wc, err := w.windows.csv()
			if err != nil {
				return err
			}
			if err := w.write("windows.csv", wc); err != nil {
				return err
			}
			var share func(string, int) ([]float64, bool)
			exp := ""
			if w.an != nil && len(w.r.Explainers) > 0 {
				exp = w.r.Explainers[0].Label
				share = func(post string, window int) ([]float64, bool) { return w.an.ChannelShare(post, 0, exp, 0, window) }
			}
			evs, origin := w.windows.events(w.ds, share)
			w.events = reportEvents(evs, origin)
			ec, err := eventsCSV(evs, origin, exp)
			if err != nil {
				return err
			}
			if err := w.write("events.csv", ec); err != nil {
				return err
			}
			for i, name := range tlNames {
				if err := os.MkdirAll(filepath.Join(w.dir, "figures"), 0o755); err != nil {
					return fmt.Errorf("run directory %s: %w", w.dir, err)
				}
				if err := w.write(name, tlPNGs[i]); err != nil {
					return err
				}
			}
		}
		if err := w.write(f.name, f.b); err != nil {
			return err
		}
	}
	d, err := w.html(res.Notes, ts, shown) // beside tables.md
	if err != nil {
		return err
	}
	if w.tim != nil {
		w.tim["report.html"] = d
	}
	return nil
}

var _ engine.Sink = (*runWriter)(nil)

// Predicted keeps a posterior's predictive quality (NLL, ECE, Brier,
// entropy) for the tables and results.json.
func (w *runWriter) Predicted(ps engine.Step, pred engine.Prediction) error {
	tests := ps.Tests // a replicate's own splits
	if tests == nil {
		tests = w.ds.Tests
	}
	if err := w.checks.add(w.ds, w.classes, ps, pred); err != nil {
		return err
	}
	if err := w.windows.add(w.ds, ps, pred, w.checks.of(ps.Label, ps.Replicate)); err != nil {
		return err
	}
	return w.pred.add(tests, w.classes, ps, pred.Probs)
}

// Output writes the records of one set or band summary to its own file
// under outputs/, and names the file in o.
func (w *runWriter) Output(o *engine.Output) error {
	w.outputs++
	name := report.OutputFile(w.outputs, o)
	b, err := report.OutputCSV(o, w.splitNames())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(w.dir, filepath.Dir(name)), 0o755); err != nil {
		return fmt.Errorf("run directory %s: %w", w.dir, err)
	}
	if err := w.write(name, b); err != nil {
		return err
	}
	o.File = name
	return nil
}

func (w *runWriter) splitNames() []string {
	names := make([]string, len(w.ds.Tests))
	for i, t := range w.ds.Tests {
		names[i] = t.Name
	}
	return names
}

func (w *runWriter) manifest(status string, runErr error) error {
	host, _ := os.Hostname()
	m := map[string]any{
		"status":         status,
		"recipe":         w.r.Name,
		"recipe_path":    w.r.Path,
		"seed":           w.r.Seed,
		"command":        strings.Join(w.opt.Command, " "),
		"started":        w.start.UTC().Format(time.RFC3339),
		"wall_s":         time.Since(w.start).Seconds(),
		"workers":        w.workers,
		"go":             runtime.Version(),
		"kernels":        nn.Kernels(),
		"machine":        map[string]any{"os": runtime.GOOS, "arch": runtime.GOARCH, "cpus": runtime.NumCPU(), "host": host},
		"plugins":        w.opt.versions,
		"scripts_sha256": w.opt.digests,
		"data": map[string]any{"train": w.ds.Train.N, "val": w.ds.Val.N, "tests": len(w.ds.Tests),
			"train_sha256": w.trainHash, "val_sha256": w.valHash},
		"warnings": append([]string{}, w.ds.Warnings...),
	}
	if runErr != nil {
		m["error"] = runErr.Error()
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		m["module"] = bi.Main.Path + "@" + bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				m["revision"] = s.Value
			}
		}
	}
	timings := map[string]float64{}
	for k, v := range w.tim {
		timings[k] = v.Seconds()
	}
	m["timings_s"] = timings
	if len(w.costs) > 0 {
		m["units_s"] = w.costs
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	return w.write("manifest.json", append(b, '\n'))
}
