package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/uaxai/uaxai/host/rundir"
)

// TestStatus: the counts of units by kind and state come from the run
// directory; each task's line has its job, Slurm's state and its units;
// failed tasks are named with their output files and their shard's error.
func TestStatus(t *testing.T) {
	ctx := context.Background()
	dir, f := submitted(t) // 2 fit units in 2 tasks, 8 explain units in 4 tasks
	done(t, dir, "fit-00", "fit-01", "explain-00", "explain-04", "explain-01")
	lf, err := os.Create(filepath.Join(dir, "units", "explain-02.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	syscall.Flock(int(lf.Fd()), syscall.LOCK_EX)
	// A lock file nobody holds is not running.
	os.WriteFile(filepath.Join(dir, "units", "explain-03.lock"), nil, 0o644)
	os.MkdirAll(filepath.Join(dir, "shards"), 0o755)
	sh, _ := json.Marshal(ShardStatus{Status: "failed", Host: "node7", PID: 4, Error: "unit explain-05: disk full"})
	os.WriteFile(ShardFile(dir, KindExplain, 1, 4), sh, 0o644)
	os.WriteFile(ShardFile(dir, KindExplain, 3, 4), []byte("{not json"), 0o644)
	f.queue = []Task{
		{JobID: "101", Index: 2, State: "RUNNING", Reason: "None"},
		{JobID: "101", Index: 3, State: "PENDING", Reason: "Resources"},
		{JobID: "102", Index: -1, State: "PENDING", Reason: ReasonNeverSatisfied},
	}
	f.shown = map[string][]Task{
		"100": {{JobID: "100", Index: 0, State: "COMPLETED", Reason: "None", ExitCode: "0:0"}, {JobID: "100", Index: 1, State: "COMPLETED", ExitCode: "0:0"}},
		"101": {{JobID: "101", Index: 1, State: "FAILED", Reason: "NonZeroExitCode", ExitCode: "1:0", StdOut: "/elsewhere/x.out"}},
	}
	r, err := Status(ctx, f, dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Units[KindFit] != (Counts{Done: 2}) || r.Units[KindExplain] != (Counts{Done: 3, Running: 1, Missing: 4}) {
		t.Errorf("unit counts %+v", r.Units)
	}
	if len(r.Tasks) != 2+4+1 {
		t.Fatalf("%d task lines, want 7", len(r.Tasks))
	}
	byName := map[string]TaskReport{}
	for _, tr := range r.Tasks {
		byName[tr.Job] = tr
	}
	if tr := byName["101_1"]; !tr.Failed() || tr.Output != "/elsewhere/x.out" || tr.Units != (Counts{Done: 1, Missing: 1}) || tr.Shard == nil || tr.Shard.Host != "node7" {
		t.Errorf("failed task: %+v", tr)
	}
	if tr := byName["101_0"]; tr.Failed() || tr.Slurm.State != "" || tr.Output != OutputFile(dir, "quick", KindExplain, "101", 0) {
		t.Errorf("a task Slurm forgot: %+v", tr)
	}
	if tr := byName["101_2"]; tr.Failed() || tr.Units != (Counts{Running: 1, Missing: 1}) {
		t.Errorf("running task: %+v", tr)
	}
	if tr := byName["102"]; !tr.Failed() || tr.Kind != KindMerge || tr.Output != filepath.Join(dir, "slurm", "quick-merge-102.out") {
		t.Errorf("merge job: %+v", tr)
	}
	var out bytes.Buffer
	r.Write(&out)
	text := out.String()
	wantIn(t, "report", text,
		"run "+dir+" (recipe quick)\n",
		"fit      units: 2 done, 0 running, 0 missing (of 2)\n",
		"explain  units: 3 done, 1 running, 4 missing (of 8)\n",
		"merged:  not yet",
		"fit      0     100_0  COMPLETED exit 0:0",
		"explain  1     101_1  FAILED exit 1:0 (NonZeroExitCode) ", "1/0/1",
		"failed on node7",
		"explain  2     101_2  RUNNING",
		"PENDING (Resources)",
		"explain  0     101_0  gone (Slurm no longer knows it)",
		"failed:\n  explain task 1 (job 101_1): FAILED exit 1:0 (NonZeroExitCode); output /elsewhere/x.out\n    shard error: unit explain-05: disk full\n",
		"  merge job (job 102): PENDING (DependencyNeverSatisfied): never started, a job it waits for failed\n",
		"note: explain task 3: shard status: ",
		"next: uaxai slurm submit --resume '"+dir+"'",
	)
	wantNotIn(t, "report", text, "fit task", "explain task 2 (", "explain task 0 (")
	if len(f.queued) != 1 || len(f.queued[0]) != 3 {
		t.Errorf("squeue asked about %v, want the 3 jobs at once", f.queued)
	}

	// Merged: no hint to resume.
	os.WriteFile(filepath.Join(dir, "results.json"), nil, 0o644)
	f.queue = nil
	r, err = Status(ctx, f, dir)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	r.Write(&out)
	wantIn(t, "merged report", out.String(), "merged:  results.json is written")
	wantNotIn(t, "merged report", out.String(), "next:")

	// Without jobs.json: the units only, and a note.
	dir2, _ := runDir(t, t.TempDir(), 1, 2)
	done(t, dir2, "fit-00")
	r, err = Status(ctx, &fake{}, dir2)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	r.Write(&out)
	wantIn(t, "unsubmitted report", out.String(), "fit      units: 1 done, 0 running, 0 missing (of 1)", "explain  units: 0 done, 0 running, 2 missing (of 2)", "note: no Slurm submission recorded")
	wantNotIn(t, "unsubmitted report", out.String(), "next:", "kind  ")
	if _, err := Status(ctx, &fake{}, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a prepared run directory") {
		t.Errorf("status of an empty directory: %v", err)
	}
}

// TestReadPlan: a plan's kinds, names and indices are checked, with the
// file and the unit in the error.
func TestReadPlan(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "units"), 0o755)
	for _, c := range []struct{ plan, want string }{
		{`{"units":[{"name":"a","kind":"train","index":0}]}`, `unit 0 ("a"): kind "train" (accepted: "fit", "explain")`},
		{`{"units":[{"name":"../a","kind":"fit","index":0}]}`, `name "../a" is not a file name`},
		{`{"units":[{"name":"","kind":"fit","index":0}]}`, `name "" is not a file name`},
		{`{"units":[{"name":"a","kind":"fit","index":0},{"name":"a","kind":"explain","index":0}]}`, `unit 1: name "a" appears twice`},
		{`{"units":[{"name":"a","kind":"fit","index":0},{"name":"b","kind":"fit","index":0}]}`, `index 0 is negative or taken`},
		{`{"units":[{"name":"a","kind":"fit","index":-1}]}`, `index -1 is negative`},
		{`{"units":[{"name":"a","kind":"fit","index":0},{"name":"b","kind":"fit","index":2}]}`, `the 2 fit units have index 2 (accepted: 0..1, each once)`},
		{`{"units":[`, "plan.json: unexpected end of JSON input"},
	} {
		os.WriteFile(PlanFile(dir), []byte(c.plan), 0o644)
		_, err := ReadPlan(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), PlanFile(dir)) {
			t.Errorf("plan %s: %v, want %q", c.plan, err, c.want)
		}
	}
	os.WriteFile(PlanFile(dir), []byte(`{"recipe":"r","units":[{"name":"f","kind":"fit","index":0},{"name":"e1","kind":"explain","index":1},{"name":"e0","kind":"explain","index":0}]}`), 0o644)
	p, err := ReadPlan(dir)
	if err != nil || p.Count(KindFit) != 1 || p.Count(KindExplain) != 2 || p.Recipe != "r" {
		t.Errorf("ReadPlan = %+v, %v", p, err)
	}
	// Unit states: an empty output file is not done, nor one cut short; a
	// directory in its place is no unit either; a whole one is done.
	os.WriteFile(filepath.Join(dir, "units", "f.unit"), nil, 0o644)
	os.Mkdir(filepath.Join(dir, "units", "e0.unit"), 0o755)
	d := rundir.Dir{Path: dir}
	if err := d.Save("e1", []byte("payload")); err != nil {
		t.Fatal(err)
	}
	if s, err := StateOf(dir, "e1"); err != nil || s != Done {
		t.Errorf("StateOf(e1) = %v, %v, want done", s, err)
	}
	b, _ := os.ReadFile(d.UnitPath("e1"))
	os.WriteFile(d.UnitPath("e1"), b[:len(b)-2], 0o644)
	for _, n := range []string{"f", "e0", "e1"} {
		if s, err := StateOf(dir, n); err != nil || s != Missing {
			t.Errorf("StateOf(%s) = %v, %v, want missing", n, s, err)
		}
	}
	if Done.String() != "done" || Running.String() != "running" || Missing.String() != "missing" {
		t.Error("UnitState names")
	}
}

// TestStatusNext: "next: --resume" appears when units are missing and no
// job is left to run them, even with no task failed in Slurm; not while
// their task runs. A shard that says failed while its (resubmitted) task
// runs is not failed.
func TestStatusNext(t *testing.T) {
	ctx := context.Background()
	dir, f := submitted(t)
	done(t, dir, "fit-00", "fit-01")
	for i := 0; i < 4; i++ {
		done(t, dir, explainUnits(i)[0])
	}
	os.MkdirAll(filepath.Join(dir, "shards"), 0o755)
	sh, _ := json.Marshal(ShardStatus{Status: "failed", Error: "killed"})
	os.WriteFile(ShardFile(dir, KindExplain, 0, 4), sh, 0o644)
	var tasks []Task
	for i := 0; i < 4; i++ {
		tasks = append(tasks, Task{JobID: "101", Index: i, State: "RUNNING"})
	}
	f.queue = append(tasks, Task{JobID: "102", Index: -1, State: "PENDING", Reason: "Dependency"})
	r, err := Status(ctx, f, dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r.Write(&out)
	wantNotIn(t, "report of running tasks", out.String(), "next:", "failed:")
	f.queue = nil
	f.shown = map[string][]Task{"101": nil}
	for i := range tasks {
		tasks[i].State, tasks[i].ExitCode = "COMPLETED", "0:0"
	}
	f.shown["101"] = tasks[1:]
	r, err = Status(ctx, f, dir)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	r.Write(&out)
	wantIn(t, "report of ended tasks with units missing", out.String(), "failed:\n  explain task 0 (job 101_0)", "next: uaxai slurm submit --resume")
	wantNotIn(t, "report", out.String(), "explain task 1 (")
	if got, want := OutputFile(dir, "quick", KindExplain, "101", 0), filepath.Join(dir, "slurm", "quick-explain-101_0.out"); got != want {
		t.Errorf("OutputFile of task 0 = %s, want %s", got, want)
	}
}

// TestStatusNextNoFailure: units missing after every task completed.
func TestStatusNextNoFailure(t *testing.T) {
	dir, f := submitted(t)
	f.shown = map[string][]Task{"100": {{JobID: "100", Index: 0, State: "COMPLETED"}, {JobID: "100", Index: 1, State: "COMPLETED"}}}
	r, err := Status(context.Background(), f, dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r.Write(&out)
	wantIn(t, "report", out.String(), "next: uaxai slurm submit --resume")
	wantNotIn(t, "report", out.String(), "fit task")
}
