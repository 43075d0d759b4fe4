package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/recipe"
)

// TestScripts: the scripts of a run directory whose path holds a space,
// run by bash with Slurm's variables set, start the binary with exactly the
// argv of the contract; their directives have the array ranges, the
// output patterns and the settings, and no --mem unless one is set.
func TestScripts(t *testing.T) {
	dir, bin := runDir(t, t.TempDir(), 3, 10)
	cache := filepath.Join(filepath.Dir(dir), "cache 'x'")
	f := &fake{next: 100}
	var out bytes.Buffer
	cfg := Config{Dir: dir, Bin: bin, Cache: cache, Sbatch: recipe.Slurm{Shards: 4, Time: "1:00:00", CPUsPerTask: 2, Partition: "debug"}}
	s, err := Submit(context.Background(), f, cfg, 3, 10, true, &out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Tasks != (TaskCounts{Fit: 3, Explain: 4}) {
		t.Errorf("tasks %+v, want 3 fit and 4 explain", s.Tasks)
	}
	read := func(kind string) string {
		b, err := os.ReadFile(ScriptFile(dir, kind))
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(ScriptFile(dir, kind)); fi.Mode().Perm() != 0o755 {
			t.Errorf("%s.sbatch: mode %v, want 0755", kind, fi.Mode().Perm())
		}
		return string(b)
	}
	fit, explain, merge := read(KindFit), read(KindExplain), read(KindMerge)
	slurmDir := filepath.Join(dir, "slurm")
	wantIn(t, "fit.sbatch", fit, "#!/bin/bash\n#SBATCH --job-name=quick-fit\n#SBATCH --array=0-2\n",
		`#SBATCH --output="`+slurmDir+`/%x-%A_%a.out"`, "#SBATCH --cpus-per-task=2\n", "#SBATCH --partition=debug\n", "#SBATCH --time=1:00:00\n",
		"\nset -euo pipefail\n")
	wantIn(t, "explain.sbatch", explain, "#SBATCH --job-name=quick-explain\n#SBATCH --array=0-3\n")
	wantIn(t, "merge.sbatch", merge, "#SBATCH --job-name=quick-merge\n", `#SBATCH --output="`+slurmDir+`/%x-%j.out"`, "set -euo pipefail\n")
	wantNotIn(t, "merge.sbatch", merge, "--array")
	for _, sc := range []string{fit, explain, merge} {
		wantNotIn(t, "a script", sc, "--mem", "--account")
		// every directive comes before the first command (sbatch stops
		// reading them there)
		if i, j := strings.LastIndex(sc, "#SBATCH"), strings.Index(sc, "set -euo"); i > j {
			t.Errorf("a directive after the first command:\n%s", sc)
		}
	}
	// bash runs each script: the fake binary prints its argv, one per line.
	runScript := func(kind, task string) []string {
		cmd := exec.Command("bash", ScriptFile(dir, kind))
		cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID="+task, "SLURM_CPUS_PER_TASK=2")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash %s.sbatch: %v\n%s", kind, err, b)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	recipeFile := filepath.Join(dir, "recipe.toml")
	for _, c := range []struct {
		kind, task string
		want       []string
	}{
		{KindFit, "2", []string{"run", recipeFile, "--units", "fit", "--shard", "2/3", "--run-dir", dir, "--cache", cache, "--workers", "2"}},
		{KindExplain, "1", []string{"run", recipeFile, "--units", "explain", "--shard", "1/4", "--run-dir", dir, "--cache", cache, "--workers", "2"}},
		{KindMerge, "", []string{"merge", dir}},
	} {
		if got := runScript(c.kind, c.task); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s.sbatch runs\n%q\nwant\n%q", c.kind, got, c.want)
		}
	}
	// A set -u script fails without the variables Slurm sets.
	cmd := exec.Command("bash", ScriptFile(dir, KindFit))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "SLURM_ARRAY_TASK_ID") {
		t.Errorf("fit.sbatch without SLURM_ARRAY_TASK_ID: %v %s", err, b)
	}

	// The dry run submitted nothing, recorded nothing, and printed every
	// script and an sbatch line per job; run by bash against an sbatch
	// that logs its argv, the lines submit the jobs with their
	// dependencies.
	if len(f.sbatch) != 0 {
		t.Errorf("dry run called sbatch: %q", f.sbatch)
	}
	if _, err := os.Stat(StateFile(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry run wrote jobs.json: %v", err)
	}
	text := out.String()
	wantIn(t, "dry run", text, "==> "+ScriptFile(dir, KindFit)+" <==\n"+fit, explain, merge, "nothing submitted")
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "=$(sbatch ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("dry run: %d sbatch lines, want 3:\n%s", len(lines), text)
	}
	fakeBin := t.TempDir()
	log := filepath.Join(fakeBin, "log")
	os.WriteFile(filepath.Join(fakeBin, "sbatch"), []byte("#!/bin/bash\nn=$(( $(wc -l < "+Quote(log)+" 2>/dev/null || echo 0) + 7 ))\nprintf '%s|' \"$@\" >> "+Quote(log)+"\necho >> "+Quote(log)+"\necho \"$n;clu\"\n"), 0o755)
	sh := exec.Command("bash", "-euc", strings.Join(lines, "\n"))
	sh.Env = append(os.Environ(), "PATH="+fakeBin+":"+os.Getenv("PATH"))
	if b, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("dry-run lines in bash: %v\n%s", err, b)
	}
	b, _ := os.ReadFile(log)
	want := strings.Join([]string{
		"--parsable|" + ScriptFile(dir, KindFit) + "|",
		"--parsable|--dependency=afterok:7|" + ScriptFile(dir, KindExplain) + "|",
		"--parsable|--dependency=afterok:8|" + ScriptFile(dir, KindMerge) + "|", ""}, "\n")
	if string(b) != want {
		t.Errorf("the dry run's lines called sbatch with\n%s\nwant\n%s", b, want)
	}
}

// TestSubmit: three sbatch calls in order, each after the one before,
// with the extra arguments; jobs.json records them; the IDs are printed.
func TestSubmit(t *testing.T) {
	dir, bin := runDir(t, t.TempDir(), 2, 3)
	f := &fake{next: 100, cluster: "big"}
	var out bytes.Buffer
	cfg := Config{Dir: dir, Bin: bin, Sbatch: recipe.Slurm{Mem: "1G", Account: "acct", SbatchArgs: []string{"--qos=long", "--nice=5"}}}
	s, err := Submit(context.Background(), f, cfg, 2, 3, false, &out)
	if err != nil {
		t.Fatal(err)
	}
	// 3 explain units: the default 4 shards are capped at 3.
	if s.Tasks != (TaskCounts{Fit: 2, Explain: 3}) {
		t.Errorf("tasks %+v", s.Tasks)
	}
	want := [][]string{
		{"--parsable", "--qos=long", "--nice=5", ScriptFile(dir, KindFit)},
		{"--parsable", "--dependency=afterok:100", "--qos=long", "--nice=5", ScriptFile(dir, KindExplain)},
		{"--parsable", "--dependency=afterok:101", "--qos=long", "--nice=5", ScriptFile(dir, KindMerge)},
	}
	if !reflect.DeepEqual(f.sbatch, want) {
		t.Errorf("sbatch calls\n%q\nwant\n%q", f.sbatch, want)
	}
	wantIn(t, "output", out.String(), "fit: job 100;big, array tasks 0-1 of 2\n", "explain: job 101;big, array tasks 0-2 of 3, after 100\n",
		"merge: job 102;big, after 101\n", "uaxai slurm status '"+dir+"'")
	fit, _ := os.ReadFile(ScriptFile(dir, KindFit))
	wantIn(t, "fit.sbatch", string(fit), "#SBATCH --mem=1G\n", "#SBATCH --account=acct\n", "#SBATCH --cpus-per-task=1\n", "--no-cache")
	got, err := ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Submissions) != 1 || len(got.Submissions[0].Jobs) != 3 {
		t.Fatalf("jobs.json: %+v", got)
	}
	j := got.Submissions[0].Jobs
	if j[0].ID != (JobID{"100", "big"}) || j[1].ID.ID != "101" || j[2].Kind != KindMerge || j[2].Tasks != nil ||
		!reflect.DeepEqual(j[1].Tasks, []int{0, 1, 2}) || !reflect.DeepEqual(j[2].After, []string{"101"}) ||
		!reflect.DeepEqual(j[1].Argv, append([]string{"sbatch"}, want[1]...)) {
		t.Errorf("jobs.json jobs: %+v", j)
	}
	if !reflect.DeepEqual(got.Sbatch, cfg.Sbatch) || got.Bin != bin || got.Recipe != "quick" || got.Dir != dir {
		t.Errorf("jobs.json settings: %+v", got)
	}
	// A second submit of the same directory is refused: that is --resume.
	_, err = Submit(context.Background(), f, cfg, 2, 3, false, &out)
	if err == nil || !strings.Contains(err.Error(), "submitted before") || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("second submit: %v", err)
	}
}

// TestSubmitErrors: a directory without a plan, a plan that does not
// match, a bad binary, bad settings, and sbatch failing half-way (the jobs
// before are recorded, the error has sbatch's stderr).
func TestSubmitErrors(t *testing.T) {
	ctx := context.Background()
	dir, bin := runDir(t, t.TempDir(), 2, 4)
	empty := t.TempDir()
	for _, c := range []struct {
		cfg         Config
		fit, expl   int
		frags       []string
		dirForError string
	}{
		{Config{Dir: empty, Bin: bin}, 1, 1, []string{"plan.json", "not a prepared run directory", "--prepare"}, ""},
		{Config{Dir: dir, Bin: bin}, 2, 5, []string{"lists 2 fit and 4 explain units, not the 2 and 5"}, ""},
		{Config{Dir: dir, Bin: "uaxai"}, 2, 4, []string{`uaxai binary "uaxai": not an absolute path`}, ""},
		{Config{Dir: dir, Bin: filepath.Join(dir, "units", "plan.json")}, 2, 4, []string{"not an executable file"}, ""},
		{Config{Dir: dir, Bin: bin, Cache: "rel/cache"}, 2, 4, []string{`cache directory "rel/cache": not an absolute path`}, ""},
		{Config{Dir: dir, Bin: bin, Sbatch: recipe.Slurm{Time: "soon"}}, 2, 4, []string{`slurm time: "soon"`}, ""},
	} {
		_, err := Submit(ctx, &fake{}, c.cfg, c.fit, c.expl, false, &bytes.Buffer{})
		if err == nil {
			t.Errorf("Submit(%+v) succeeded", c.cfg)
			continue
		}
		wantIn(t, "error", err.Error(), c.frags...)
	}
	f := &fake{next: 7, failAt: 2}
	_, err := Submit(ctx, f, Config{Dir: dir, Bin: bin}, 2, 4, false, &bytes.Buffer{})
	if err == nil {
		t.Fatal("Submit with a failing sbatch succeeded")
	}
	wantIn(t, "error", err.Error(), "submit the explain job", "Invalid partition name specified", "--resume")
	s, err := ReadState(dir)
	if err != nil || len(s.Submissions[0].Jobs) != 1 || s.Submissions[0].Jobs[0].ID.ID != "7" {
		t.Errorf("after a failed second sbatch, jobs.json: %+v, %v", s, err)
	}
	// The first sbatch failing records nothing.
	dir2, _ := runDir(t, t.TempDir(), 1, 1)
	_, err = Submit(ctx, &fake{failAt: 1}, Config{Dir: dir2, Bin: bin}, 1, 1, false, &bytes.Buffer{})
	if err == nil || strings.Contains(err.Error(), "--resume") {
		t.Errorf("first sbatch failing: %v", err)
	}
	if _, err := ReadState(dir2); err == nil || !strings.Contains(err.Error(), "no submission recorded") {
		t.Errorf("jobs.json after the first sbatch failed: %v", err)
	}
}

// TestInstallBinary: the copy has the source's bytes and mode 0755, and
// replaces an older copy.
func TestInstallBinary(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(t.TempDir(), "src")
	for _, content := range []string{"first binary", "second, longer binary"} {
		os.WriteFile(src, []byte(content), 0o600)
		dst, err := InstallBinary(dir, src)
		if err != nil {
			t.Fatal(err)
		}
		if dst != filepath.Join(dir, "bin", "uaxai") {
			t.Errorf("installed at %s", dst)
		}
		b, _ := os.ReadFile(dst)
		fi, _ := os.Stat(dst)
		if string(b) != content || fi.Mode().Perm() != 0o755 {
			t.Errorf("copy %q mode %v, want %q 0755", b, fi.Mode().Perm(), content)
		}
		if err := CheckBinary(dst); err != nil {
			t.Error(err)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "bin"))
	if len(ents) != 1 {
		t.Errorf("bin/ holds %d files (a temporary left?)", len(ents))
	}
	if _, err := InstallBinary(dir, filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("missing source: %v", err)
	}
	// The test binary itself is installed when no source is named.
	dst, err := InstallBinary(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	a, _ := os.ReadFile(exe)
	b, _ := os.ReadFile(dst)
	if !bytes.Equal(a, b) {
		t.Error("InstallBinary(\"\") is not a copy of os.Executable()")
	}
}

// TestStateJSON: a job ID with a cluster survives jobs.json; a bad one is
// an error naming it.
func TestStateJSON(t *testing.T) {
	j := Job{Kind: KindFit, ID: JobID{"12", "c"}, Tasks: []int{0, 1}}
	b, _ := json.Marshal(j)
	if !strings.Contains(string(b), `"id":"12;c"`) {
		t.Errorf("job JSON %s", b)
	}
	var back Job
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, j) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"id":"x1"}`), &back); err == nil || !strings.Contains(err.Error(), `"x1"`) {
		t.Errorf("bad ID: %v", err)
	}
}

// TestSubmitNoExplain: a plan without explain units has no explain job;
// the merge job waits for the fits.
func TestSubmitNoExplain(t *testing.T) {
	dir, bin := runDir(t, t.TempDir(), 2, 0)
	f := &fake{next: 5}
	if _, err := Submit(context.Background(), f, Config{Dir: dir, Bin: bin}, 2, 0, false, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ScriptFile(dir, KindExplain)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("explain.sbatch written for no explain units: %v", err)
	}
	want := [][]string{{"--parsable", ScriptFile(dir, KindFit)}, {"--parsable", "--dependency=afterok:5", ScriptFile(dir, KindMerge)}}
	if !reflect.DeepEqual(f.sbatch, want) {
		t.Errorf("sbatch %q, want %q", f.sbatch, want)
	}
}
