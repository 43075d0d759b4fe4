// Package paperreport writes REPORT.md of a `uaxai paper` directory: the
// machine, the parts and their wall times, each run's tables and figures,
// and the prose of the headline finding. It reads run directories
// (results.json, tables.md, manifest.json) and recipe files; running the
// recipes is host/runner's Paper.
package paperreport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/internal/atomicfile"
)

// Order is the order in which runner.Paper runs the paper's recipes (the
// paper's order of tables); other recipes of the folder follow by name.
var Order = []string{"bnn_results", "xai_results", "uarao_results", "sensitivity", "calibration", "real_recordings", "headline"}

// Outcome is what runner.Paper did: one entry a recipe, in run order.
type Outcome struct {
	Dir   string // the report's directory, with REPORT.md
	Parts []Part
}

// Part is one recipe of a runner.Paper run.
type Part struct {
	Recipe string        // file
	Name   string        // the recipe's name
	Dir    string        // its run directory ("" if it did not start)
	Wall   time.Duration // its wall time
	Err    error
}

// HeadlineDir is the subfolder of a paper folder whose recipes vary the
// setting of the headline finding (the ensemble's disc-7 IoU gain); runner.Paper
// runs them after the others and gathers them in a section of their own.
const HeadlineDir = "headline"

// Recipes lists the recipes of dir (*.toml), in Order first,
// then those of dir/headline by name.
func Recipes(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return nil, err
	}
	head, err := filepath.Glob(filepath.Join(dir, HeadlineDir, "*.toml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("paper: no recipe (*.toml) in %s", dir)
	}
	files = append(files, head...)
	slices.SortStableFunc(files, compareOrder)
	return files, nil
}

// compareOrder orders recipe files as runner.Paper runs them: the recipes
// of Order in its order, then the folder's other recipes by name,
// then the headline variants by name. It reads names only, never times,
// so that a report written again (Rewrite) has the sections
// of the run that wrote it, however close together its parts started.
func compareOrder(a, b string) int {
	rank := func(f string) int {
		if isHeadline(f) {
			return len(Order) + 1
		}
		if i := slices.Index(Order, strings.TrimSuffix(filepath.Base(f), ".toml")); i >= 0 {
			return i
		}
		return len(Order)
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	return strings.Compare(filepath.Base(a), filepath.Base(b))
}

// isHeadline reports whether a recipe file is one of the headline variants.
func isHeadline(f string) bool { return filepath.Base(filepath.Dir(f)) == HeadlineDir }

// recipeDoc is the comment block at the head of a recipe file.
func recipeDoc(path string) string {
	f, err := atomicfile.OpenRegular(path, atomicfile.Limit{Bytes: recipe.MaxRecipeSize, What: "a recipe"})
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "#") {
			break
		}
		lines = append(lines, strings.TrimSpace(strings.TrimPrefix(l, "#")))
	}
	return strings.TrimSpace(strings.Join(lines, " "))
}

// Machine describes the machine a run is on, for REPORT.md.
func Machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.1f GiB memory", float64(kb)/(1<<20))
		}
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = ", uaxai " + s.Value[:min(12, len(s.Value))]
			}
			if s.Key == "vcs.modified" && s.Value == "true" {
				rev += " (modified)"
			}
		}
	}
	return fmt.Sprintf("%s, %d cores (GOMAXPROCS %d)%s; %s/%s, %s%s", cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0), mem, runtime.GOOS, runtime.GOARCH, runtime.Version(), rev)
}

// Write writes po.Dir/REPORT.md, files being every recipe of the run (a
// file past po.Parts is "not run"), wall the total wall time, partial
// whether the run is still going: the machine, the parts and their wall
// times, then each part's tables.md (its title one level down) and
// figures.
func Write(po *Outcome, files []string, wall time.Duration, partial bool) error {
	var b bytes.Buffer
	b.WriteString("# The paper, regenerated\n\n")
	if partial {
		b.WriteString("> **Incomplete**: written after each recipe; the run has not finished (or was interrupted).\n\n")
	}
	fmt.Fprintf(&b, "Machine: %s.\n\n", Machine())
	fmt.Fprintf(&b, "Total wall time: %s.\n\n", RoundDur(wall))
	t := report.Table{Title: "Parts", Header: []string{"Recipe", "Wall time", "Status", "Run directory"}}
	for _, p := range po.Parts {
		status := "complete"
		if p.Err != nil {
			status = "failed: " + p.Err.Error()
		}
		rel := "-"
		if p.Dir != "" {
			rel, _ = filepath.Rel(po.Dir, p.Dir)
		}
		t.Rows = append(t.Rows, []string{filepath.Base(p.Recipe), RoundDur(p.Wall), status, rel})
	}
	for _, f := range files[len(po.Parts):] {
		t.Rows = append(t.Rows, []string{filepath.Base(f), "-", "not run", "-"})
	}
	if err := t.Render(&b, true); err != nil {
		return err
	}
	b.WriteString("\nEach table below prints our value, and under it (or in brackets) the paper's. Where they disagree, see the notes of issue 10 and the section on the headline finding.\n")
	headline := false
	for _, p := range po.Parts {
		if isHeadline(p.Recipe) {
			headline = true
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", p.Name)
		if doc := recipeDoc(p.Recipe); doc != "" {
			b.WriteString(doc + "\n\n")
		}
		fmt.Fprintf(&b, "Recipe `%s` (its wall time is in the table of parts).\n\n", filepath.Base(p.Recipe))
		if p.Dir == "" {
			continue
		}
		rel, _ := filepath.Rel(po.Dir, p.Dir)
		if md, err := atomicfile.ReadRegular(filepath.Join(p.Dir, "tables.md"), atomicfile.AnySize); err == nil {
			for _, l := range strings.Split(strings.TrimRight(string(md), "\n"), "\n") {
				if strings.HasPrefix(l, "#") {
					if strings.HasPrefix(l, "# ") {
						continue // the run's title: the section heading says it
					}
					l = "#" + l
				}
				b.WriteString(l + "\n")
			}
			b.WriteString("\n")
		}
		figs, _ := filepath.Glob(filepath.Join(p.Dir, "figures", "*.png"))
		for _, f := range figs {
			fr := filepath.ToSlash(filepath.Join(rel, "figures", filepath.Base(f)))
			fmt.Fprintf(&b, "![%s](%s)\n\n", strings.TrimSuffix(filepath.Base(f), ".png"), fr)
		}
	}
	if headline {
		if err := headlineSection(&b, po); err != nil {
			return err
		}
	}
	return report.WriteFile(po.Dir, "REPORT.md", b.Bytes())
}

// RoundDur prints a wall time to a tenth of a second.
func RoundDur(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

// Rewrite writes REPORT.md of a runner.Paper directory again, from the
// run directories it holds (each one's manifest.json: its recipe, status
// and wall time), so that a report can be
// redone with a newer uaxai, or after a part was rerun by hand. Its
// sections are in the paper's order (compareOrder), as Paper wrote
// them. The total wall time is then the sum of the parts'.
func Rewrite(dir string) (*Outcome, error) {
	mans, err := filepath.Glob(filepath.Join(dir, "*", "manifest.json"))
	if err != nil {
		return nil, err
	}
	type part struct {
		Part
		started string
	}
	var parts []part
	for _, m := range mans {
		b, err := atomicfile.ReadRegular(m, atomicfile.AnySize)
		if err != nil {
			return nil, err
		}
		var man struct {
			Recipe     string  `json:"recipe"`
			RecipePath string  `json:"recipe_path"`
			Started    string  `json:"started"`
			Status     string  `json:"status"`
			Error      string  `json:"error"`
			Wall       float64 `json:"wall_s"`
		}
		if err := json.Unmarshal(b, &man); err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		p := part{Part: Part{Recipe: man.RecipePath, Name: man.Recipe, Dir: filepath.Dir(m), Wall: time.Duration(man.Wall * float64(time.Second))}, started: man.Started}
		if man.Status != "complete" {
			p.Err = fmt.Errorf("%s: %s", man.Status, man.Error)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("paper: no run directory with a manifest.json in %s", dir)
	}
	// The paper's order, as Paper ran them; a recipe run more than once
	// (a part rerun by hand) in the order its runs started.
	slices.SortStableFunc(parts, func(a, b part) int {
		if c := compareOrder(a.Recipe, b.Recipe); c != 0 {
			return c
		}
		return strings.Compare(a.started, b.started)
	})
	po := &Outcome{Dir: dir}
	var files []string
	var wall time.Duration
	for _, p := range parts {
		po.Parts = append(po.Parts, p.Part)
		files = append(files, p.Recipe)
		wall += p.Wall
	}
	return po, Write(po, files, wall, false)
}
