package slurm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/internal/atomicfile"
)

// DefaultShards is the number of explain array tasks when neither the
// recipe's [slurm] nor a flag gives one (at most the explain units).
const DefaultShards = 4

// Config is what Submit needs besides the prepared run directory.
type Config struct {
	Dir string // the run directory, on a file system every node sees
	// Bin is the uaxai binary the jobs run, on a shared file system. When
	// it is "", Submit copies Install (or, when that is "" too, this
	// executable) to DIR/bin/uaxai (InstallBinary) once it has accepted
	// the run directory and before the first sbatch, and removes the copy
	// again if it then submits nothing.
	Bin     string
	Install string
	Cache   string       // the posterior cache directory the jobs use; "": --no-cache
	Plugins string       // --plugins DIR of the jobs; "": none
	Sbatch  recipe.Slurm // the sbatch settings: [slurm], then the flags
	Now     func() time.Time
}

// State is DIR/slurm/jobs.json: the settings of the first submission,
// which Resume reuses, and every submission's jobs.
type State struct {
	Dir         string       `json:"dir"`
	Recipe      string       `json:"recipe"`
	Bin         string       `json:"bin"`
	Cache       string       `json:"cache"`
	Plugins     string       `json:"plugins,omitempty"`
	Sbatch      recipe.Slurm `json:"sbatch"`
	Tasks       TaskCounts   `json:"tasks"` // array tasks of each kind
	Submissions []Submission `json:"submissions"`
}

// TaskCounts are the array sizes: F fit tasks (one per fit unit) and N
// explain shards.
type TaskCounts struct {
	Fit     int `json:"fit"`
	Explain int `json:"explain"`
}

// Of returns the task count of a kind (1 for the merge job).
func (t TaskCounts) Of(kind string) int {
	switch kind {
	case KindFit:
		return t.Fit
	case KindExplain:
		return t.Explain
	}
	return 1
}

// Submission is one call of Submit or Resume.
type Submission struct {
	Time      string   `json:"time"`
	Jobs      []Job    `json:"jobs"`
	Cancelled []string `json:"cancelled,omitempty"` // tasks of earlier jobs cancelled first ("123_4")
}

// Job is one submitted job.
type Job struct {
	Kind  string   `json:"kind"` // fit, explain or merge
	ID    JobID    `json:"id"`
	Tasks []int    `json:"tasks,omitempty"` // the array tasks submitted; nil: the merge job
	After []string `json:"after,omitempty"` // its afterok dependencies
	Argv  []string `json:"argv"`            // the sbatch command line
}

// MarshalJSON writes a job ID as sbatch printed it.
func (j JobID) MarshalJSON() ([]byte, error) { return json.Marshal(j.String()) }

// UnmarshalJSON reads a job ID as sbatch prints it.
func (j *JobID) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	id, err := ParseJobID(s)
	if err != nil {
		return err
	}
	*j = id
	return nil
}

// StateFile is the path of a run directory's jobs.json.
func StateFile(dir string) string { return filepath.Join(dir, "slurm", "jobs.json") }

// ScriptFile is the path of the sbatch script of a kind.
func ScriptFile(dir, kind string) string { return filepath.Join(dir, "slurm", kind+".sbatch") }

// JobName is the Slurm job name of a kind: "<recipe>-<kind>".
func JobName(recipeName, kind string) string { return recipeName + "-" + kind }

// OutputFile is the output file of a task of a job (index -1: the merge
// job), by the scripts' --output patterns %x-%A_%a.out and %x-%j.out.
func OutputFile(dir, recipeName, kind, jobID string, index int) string {
	name := JobName(recipeName, kind) + "-" + jobID
	if index >= 0 {
		name += "_" + strconv.Itoa(index)
	}
	return filepath.Join(dir, "slurm", name+".out")
}

// ReadState reads DIR/slurm/jobs.json.
func ReadState(dir string) (*State, error) {
	path := StateFile(dir)
	b, err := atomicfile.ReadRegular(path, atomicfile.AnySize) // the run directory's own file
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no submission recorded in %s (submit first: uaxai slurm submit R.toml --run-dir %s)", path, dir, dir)
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Recipe == "" || s.Bin == "" || s.Tasks.Fit < 0 || s.Tasks.Explain < 0 {
		return nil, fmt.Errorf("%s: incomplete (recipe %q, bin %q, tasks %+v): not written by uaxai slurm submit", path, s.Recipe, s.Bin, s.Tasks)
	}
	return &s, nil
}

func (s *State) write(dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(StateFile(dir), append(b, '\n')); err != nil {
		return fmt.Errorf("slurm state: %w", err)
	}
	return nil
}

// InstallBinary copies the executable src (os.Executable() when "") to
// DIR/bin/uaxai, atomically and with mode 0755, and returns that path: the
// jobs must not depend on a binary that disappears (go run's) or changes
// while they wait.
func InstallBinary(dir, src string) (string, error) {
	if src == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("install the uaxai binary: %w (give one with --uaxai PATH)", err)
		}
		src = exe
	}
	in, err := atomicfile.OpenRegular(src, atomicfile.AnySize) // copied, not held
	if err != nil {
		return "", fmt.Errorf("install the uaxai binary: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return "", fmt.Errorf("install the uaxai binary: %w", err)
	}
	dst := filepath.Join(dir, "bin", "uaxai")
	err = writeExecutable(dst, func(w *bufio.Writer) error { _, err := io.Copy(w, in); return err })
	if err != nil {
		return "", fmt.Errorf("install the uaxai binary %s: %w", src, err)
	}
	return dst, nil
}

// CheckBinary checks that path is an absolute path to an executable
// regular file (the jobs run it from any directory).
func CheckBinary(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("uaxai binary %q: not an absolute path", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("uaxai binary: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("uaxai binary %s: not an executable file (mode %v)", path, fi.Mode())
	}
	return nil
}

// shards is the explain array's size: the configured shards (or
// DefaultShards), at most the explain units, at least 1.
func shards(configured, explainUnits int) int {
	n := configured
	if n == 0 {
		n = DefaultShards
	}
	return max(1, min(n, explainUnits))
}

func (s *State) cpus() int { return max(1, s.Sbatch.CPUsPerTask) }

// directives are the #SBATCH options of every script from the settings.
func (s *State) directives() []string {
	o := []string{"--cpus-per-task=" + strconv.Itoa(s.cpus())}
	for _, kv := range [][2]string{{"partition", s.Sbatch.Partition}, {"time", s.Sbatch.Time}, {"mem", s.Sbatch.Mem}, {"account", s.Sbatch.Account}} {
		if kv[1] != "" {
			o = append(o, "--"+kv[0]+"="+kv[1])
		}
	}
	return o
}

// Scripts returns the three scripts of a state (an empty array kind has
// none: its Script has no Lines).
func (s *State) Scripts() map[string]Script {
	bin, dir := Quote(s.Bin), Quote(s.Dir)
	common := []string{"--run-dir", dir}
	if s.Cache != "" {
		common = append(common, "--cache", Quote(s.Cache))
	} else {
		common = append(common, "--no-cache")
	}
	if s.Plugins != "" {
		common = append(common, "--plugins", Quote(s.Plugins))
	}
	common = append(common, "--workers", `"$SLURM_CPUS_PER_TASK"`)
	recipeFile := Quote(filepath.Join(s.Dir, "recipe.toml"))
	// sbatch expands % in an --output pattern (%j, %A, %x, ...): a % of
	// the run directory's path is written %%, which it turns back into %.
	outDir := filepath.Join(strings.ReplaceAll(s.Dir, "%", "%%"), "slurm")
	out := map[string]Script{}
	for _, kind := range Kinds {
		n := s.Tasks.Of(kind)
		sc := Script{
			Name: JobName(s.Recipe, kind), Array: seq(n),
			Output:  outDir + "/%x-%A_%a.out",
			Options: s.directives(),
			Comments: []string{fmt.Sprintf("uaxai slurm submit: the %s units of %s in %d array tasks; task t runs the units whose index mod %d == t", kind, s.Dir, n, n),
				"resubmit failed tasks with: uaxai slurm submit --resume " + Quote(s.Dir)},
			Lines: []string{"exec " + bin + " run " + recipeFile + " --units " + kind +
				fmt.Sprintf(` --shard "$SLURM_ARRAY_TASK_ID/%d" `, n) + strings.Join(common, " ")},
		}
		out[kind] = sc
	}
	out[KindMerge] = Script{
		Name: JobName(s.Recipe, KindMerge), Output: outDir + "/%x-%j.out",
		Options:  s.directives(),
		Comments: []string{"uaxai slurm submit: merge the units of " + s.Dir + " into results.json, records.csv and tables.md"},
		Lines:    []string{"exec " + bin + " merge " + dir},
	}
	return out
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// writeScripts writes DIR/slurm/<kind>.sbatch and returns the paths it
// wrote (those written before a failure, too).
func (s *State) writeScripts() ([]string, error) {
	if err := os.MkdirAll(filepath.Join(s.Dir, "slurm"), 0o755); err != nil {
		return nil, fmt.Errorf("slurm scripts: %w", err)
	}
	var written []string
	for kind, sc := range s.Scripts() {
		if kind != KindMerge && s.Tasks.Of(kind) == 0 {
			continue
		}
		if err := sc.Write(ScriptFile(s.Dir, kind)); err != nil {
			return written, err
		}
		written = append(written, ScriptFile(s.Dir, kind))
	}
	return written, nil
}

// request is one sbatch call to make.
type request struct {
	kind  string
	tasks []int    // nil: the merge job; else the array tasks (--array on the command line when not all)
	after []string // afterok dependencies known now: "123", "123_4"
	dep   []string // kinds whose new job this one depends on (its ID known only once submitted)
}

// argv is the sbatch command line of a request, with the IDs of the jobs
// submitted before it (ids by kind; a dry run gives shell variables).
func (s *State) argv(q request, ids map[string]string) []string {
	a := []string{"sbatch", "--parsable"}
	if q.tasks != nil && len(q.tasks) != s.Tasks.Of(q.kind) {
		a = append(a, "--array="+FormatArray(q.tasks))
	}
	after := append([]string{}, q.after...)
	for _, k := range q.dep {
		after = append(after, ids[k])
	}
	if len(after) > 0 {
		a = append(a, "--dependency=afterok:"+strings.Join(after, ":"))
	}
	a = append(a, s.Sbatch.SbatchArgs...)
	return append(a, ScriptFile(s.Dir, q.kind))
}

// Submit writes the sbatch scripts of the prepared run directory cfg.Dir
// (with fit and explain units, from runner.Prepare) and submits the fit
// array, the explain array after it and the merge job after that. It
// records the jobs in DIR/slurm/jobs.json (after each sbatch, so that a
// failure half-way leaves a state Resume can finish) and prints them to w.
// With dryRun it writes the scripts, prints them and the sbatch lines (a
// shell snippet that submits them), and submits nothing (nor copies the
// binary: the scripts name DIR/bin/uaxai, where a submission puts it).
//
// A run directory Submit refuses is left as it was: every check comes
// before the first file is written. If it fails after writing (a script,
// the binary's copy, the first sbatch), it removes the files it wrote
// (and the DIR/bin and DIR/slurm folders if it made them and they are
// empty), since no job was submitted that needs them; once a job is
// submitted, everything stays for Resume.
func Submit(ctx context.Context, c Cluster, cfg Config, fit, explain int, dryRun bool, w io.Writer) (_ *State, err error) {
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	plan, err := ReadPlan(dir)
	if err != nil {
		return nil, err
	}
	if pf, pe := plan.Count(KindFit), plan.Count(KindExplain); pf != fit || pe != explain {
		return nil, fmt.Errorf("%s lists %d fit and %d explain units, not the %d and %d the run was prepared with", PlanFile(dir), pf, pe, fit, explain)
	}
	if err := cfg.Sbatch.Validate(); err != nil {
		return nil, err
	}
	install := cfg.Bin == ""
	if install {
		cfg.Bin = filepath.Join(dir, "bin", "uaxai")
	} else if err := CheckBinary(cfg.Bin); err != nil {
		return nil, err
	}
	if cfg.Cache != "" && !filepath.IsAbs(cfg.Cache) {
		return nil, fmt.Errorf("cache directory %q: not an absolute path (the jobs run elsewhere)", cfg.Cache)
	}
	if err := checkRunDir(dir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(StateFile(dir)); err == nil && !dryRun {
		return nil, fmt.Errorf("%s: %s was submitted before; resubmit what is missing with uaxai slurm submit --resume %s, or use a new run directory", StateFile(dir), dir, dir)
	}
	s := &State{Dir: dir, Recipe: plan.Recipe, Bin: cfg.Bin, Cache: cfg.Cache, Plugins: cfg.Plugins, Sbatch: cfg.Sbatch,
		Tasks: TaskCounts{Fit: fit, Explain: shards(cfg.Sbatch.Shards, explain)}}
	if explain == 0 {
		s.Tasks.Explain = 0
	}
	if s.Recipe == "" {
		return nil, fmt.Errorf("%s: no recipe name", PlanFile(dir))
	}
	for _, sc := range s.Scripts() {
		if _, err := sc.Bytes(); err != nil {
			return nil, err
		}
	}
	// From here on, files are written: undo them if nothing is submitted.
	var written []string
	made := map[string]bool{}
	for _, d := range []string{filepath.Join(dir, "bin"), filepath.Join(dir, "slurm")} {
		if _, serr := os.Lstat(d); errors.Is(serr, fs.ErrNotExist) {
			made[d] = true
		}
	}
	defer func() {
		if err == nil || dryRun || (len(s.Submissions) > 0 && len(s.Submissions[0].Jobs) > 0) {
			return
		}
		for _, f := range written {
			os.Remove(f)
		}
		for _, d := range []string{filepath.Join(dir, "bin"), filepath.Join(dir, "slurm")} {
			if made[d] {
				os.Remove(d) // only if empty
			}
		}
	}()
	if install && !dryRun {
		if _, err := InstallBinary(dir, cfg.Install); err != nil {
			return nil, err
		}
		written = append(written, cfg.Bin)
		if err := CheckBinary(cfg.Bin); err != nil {
			return nil, err
		}
	}
	scripts, err := s.writeScripts()
	written = append(written, scripts...)
	if err != nil {
		return nil, err
	}
	var reqs []request
	var prev []string
	for _, kind := range Kinds {
		if n := s.Tasks.Of(kind); n > 0 {
			reqs = append(reqs, request{kind: kind, tasks: seq(n), dep: prev})
			prev = []string{kind}
		}
	}
	reqs = append(reqs, request{kind: KindMerge, dep: prev})
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	sub := Submission{Time: now().UTC().Format(time.RFC3339)}
	if dryRun {
		return s, s.printDry(w, reqs, nil)
	}
	s.Submissions = []Submission{sub}
	if err := s.submit(ctx, c, reqs, w); err != nil {
		return s, err
	}
	fmt.Fprintf(w, "status: uaxai slurm status %s\n", Quote(dir))
	return s, nil
}

// checkRunDir refuses a run directory whose path sbatch cannot take in
// an --output pattern: with a backslash in it, sbatch expands none of the
// pattern's %x, %A, %a, %j (and the output files would not be where
// uaxai slurm status looks for them).
func checkRunDir(dir string) error {
	if strings.ContainsRune(dir, '\\') {
		return fmt.Errorf("run directory %s holds a backslash, which makes sbatch ignore the %%x-%%A_%%a patterns of the jobs' --output files (accepted: a path without a backslash)", dir)
	}
	return nil
}

// submit runs the requests in order into the last submission of s,
// writing jobs.json after each.
func (s *State) submit(ctx context.Context, c Cluster, reqs []request, w io.Writer) error {
	sub := &s.Submissions[len(s.Submissions)-1]
	ids := map[string]string{}
	for _, q := range reqs {
		argv := s.argv(q, ids)
		id, err := c.Sbatch(ctx, argv[1:])
		if err != nil {
			if len(sub.Jobs) > 0 {
				if werr := s.write(s.Dir); werr != nil {
					return errors.Join(err, werr)
				}
				return fmt.Errorf("submit the %s job: %w (the jobs before it are submitted and recorded; uaxai slurm submit --resume %s submits the rest)", q.kind, err, Quote(s.Dir))
			}
			return fmt.Errorf("submit the %s job: %w", q.kind, err)
		}
		ids[q.kind] = id.ID
		after := argvAfter(argv)
		sub.Jobs = append(sub.Jobs, Job{Kind: q.kind, ID: id, Tasks: q.tasks, After: after, Argv: argv})
		if err := s.write(s.Dir); err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: job %s", q.kind, id)
		if q.tasks != nil {
			fmt.Fprintf(w, ", array tasks %s of %d", FormatArray(q.tasks), s.Tasks.Of(q.kind))
		}
		if len(after) > 0 {
			fmt.Fprintf(w, ", after %s", strings.Join(after, ", "))
		}
		fmt.Fprintln(w)
	}
	return nil
}

// argvAfter returns the afterok dependencies of an sbatch command line.
func argvAfter(argv []string) []string {
	for _, a := range argv {
		if d, ok := strings.CutPrefix(a, "--dependency=afterok:"); ok {
			return strings.Split(d, ":")
		}
	}
	return nil
}

// printDry prints the scripts and the sbatch lines of reqs as a shell
// snippet: each job's ID goes into a variable the later lines use.
func (s *State) printDry(w io.Writer, reqs []request, cancel []string) error {
	scripts := s.Scripts()
	seen := map[string]bool{}
	for _, q := range reqs {
		if seen[q.kind] {
			continue
		}
		seen[q.kind] = true
		b, err := scripts[q.kind].Bytes()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "==> %s <==\n%s\n", ScriptFile(s.Dir, q.kind), b)
	}
	fmt.Fprintln(w, "# dry run: nothing submitted; these commands would submit the jobs:")
	if len(cancel) > 0 {
		fmt.Fprintln(w, ShellLine(append([]string{"scancel"}, cancel...)))
	}
	ids := map[string]string{}
	for _, k := range append(append([]string{}, Kinds...), KindMerge) {
		ids[k] = "${" + k + "%%;*}"
	}
	for _, q := range reqs {
		fmt.Fprintf(w, "%s=$(%s)\n", q.kind, dryLine(s.argv(q, ids)))
	}
	return nil
}

// dryLine writes a dry-run sbatch line: every word quoted, the dependency
// in double quotes so that its ${kind%%;*} variables expand.
func dryLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if strings.HasPrefix(a, "--dependency=") {
			q[i] = `"` + a + `"`
			continue
		}
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
