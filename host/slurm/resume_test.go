package slurm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uaxai/uaxai/host/recipe"
)

// submitted returns a run directory of 2 fit and 8 explain units submitted
// in 2 fit and 4 explain tasks as jobs 100 (fit), 101 (explain) and 102
// (merge), and the fake that took them.
func submitted(t *testing.T) (string, *fake) {
	t.Helper()
	dir, bin := runDir(t, t.TempDir(), 2, 8)
	f := &fake{next: 100}
	_, err := Submit(context.Background(), f, Config{Dir: dir, Bin: bin, Sbatch: recipe.Slurm{SbatchArgs: []string{"--qos=q"}}}, 2, 8, false, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	f.sbatch = nil
	f.next = 200
	return dir, f
}

// explainUnits are the names of the explain units of task t of 4 (of 8).
func explainUnits(t int) []string {
	return []string{"explain-0" + string(rune('0'+t)), "explain-0" + string(rune('0'+t+4))}
}

// TestResume: only the tasks with missing units and no live job are
// resubmitted, with --array of those tasks; the new jobs wait for the
// tasks still running or pending; doomed pending tasks are cancelled.
func TestResume(t *testing.T) {
	ctx := context.Background()
	t.Run("explain task failed", func(t *testing.T) {
		dir, f := submitted(t)
		done(t, dir, "fit-00", "fit-01")
		done(t, dir, explainUnits(0)...)
		// task 1: failed (gone from the queue), missing units;
		// task 2: running; task 3: pending and can still start.
		f.queue = []Task{
			{JobID: "101", Index: 2, State: "RUNNING"},
			{JobID: "101", Index: 3, State: "PENDING", Reason: "Resources"},
			{JobID: "102", Index: -1, State: "PENDING", Reason: ReasonNeverSatisfied},
		}
		var out bytes.Buffer
		sub, err := Resume(ctx, f, dir, false, &out)
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{
			{"--parsable", "--array=1", "--qos=q", ScriptFile(dir, KindExplain)},
			{"--parsable", "--dependency=afterok:101_2:101_3:200", "--qos=q", ScriptFile(dir, KindMerge)},
		}
		if !reflect.DeepEqual(f.sbatch, want) {
			t.Errorf("sbatch\n%q\nwant\n%q", f.sbatch, want)
		}
		if !reflect.DeepEqual(f.cancelled, []string{"/102"}) {
			t.Errorf("cancelled %q, want the merge job that can never start", f.cancelled)
		}
		wantIn(t, "output", out.String(), "cancelled: 102", "explain: job 200, array tasks 1 of 4\n", "merge: job 201, after 101_2, 101_3, 200\n")
		s, _ := ReadState(dir)
		if len(s.Submissions) != 2 || !reflect.DeepEqual(s.Submissions[1].Cancelled, []string{"102"}) || len(sub.Jobs) != 2 ||
			!reflect.DeepEqual(s.Submissions[1].Jobs[0].Tasks, []int{1}) {
			t.Errorf("jobs.json after resume: %+v", s.Submissions)
		}
		// Resumed again with the new jobs live: nothing to do. Task 1's
		// live job is the resubmitted one (200_1), not the failed 101_1.
		f.sbatch, f.cancelled = nil, nil
		f.queue = []Task{{JobID: "101", Index: 2, State: "RUNNING"}, {JobID: "101", Index: 3, State: "RUNNING"},
			{JobID: "200", Index: 1, State: "RUNNING"}, {JobID: "201", Index: -1, State: "PENDING", Reason: "Dependency"}}
		out.Reset()
		if sub, err := Resume(ctx, f, dir, false, &out); err != nil || sub != nil || len(f.sbatch) != 0 || len(f.cancelled) != 0 {
			t.Errorf("second resume: %+v %v, sbatch %q, cancel %q", sub, err, f.sbatch, f.cancelled)
		}
		wantIn(t, "output", out.String(), "nothing to resubmit", "running or pending")
	})
	t.Run("fit task failed", func(t *testing.T) {
		dir, f := submitted(t)
		done(t, dir, "fit-00")
		f.queue = []Task{
			{JobID: "101", Index: 0, State: "PENDING", Reason: "Dependency"},
			{JobID: "101", Index: 1, State: "PENDING", Reason: "Dependency"},
			{JobID: "101", Index: 2, State: "PENDING", Reason: ReasonNeverSatisfied},
			{JobID: "101", Index: 3, State: "PENDING", Reason: "Dependency"},
			{JobID: "102", Index: -1, State: "PENDING", Reason: "Dependency"},
		}
		if _, err := Resume(ctx, f, dir, false, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		// The explain tasks wait for the failed fit job: all cancelled and
		// resubmitted (all four: no --array), after the new fit task.
		want := [][]string{
			{"--parsable", "--array=1", "--qos=q", ScriptFile(dir, KindFit)},
			{"--parsable", "--dependency=afterok:200", "--qos=q", ScriptFile(dir, KindExplain)},
			{"--parsable", "--dependency=afterok:200:201", "--qos=q", ScriptFile(dir, KindMerge)},
		}
		if !reflect.DeepEqual(f.sbatch, want) {
			t.Errorf("sbatch\n%q\nwant\n%q", f.sbatch, want)
		}
		if wantC := []string{"/101_0", "/101_1", "/101_2", "/101_3", "/102"}; !reflect.DeepEqual(f.cancelled, wantC) {
			t.Errorf("cancelled %q, want %q", f.cancelled, wantC)
		}
	})
	t.Run("fit task running, explain units of one task held", func(t *testing.T) {
		dir, f := submitted(t)
		done(t, dir, "fit-00")
		for i := 0; i < 4; i++ {
			if i != 2 {
				done(t, dir, explainUnits(i)...)
			}
		}
		// explain task 2's units: one done, one locked by a live process.
		done(t, dir, "explain-02")
		lock := filepath.Join(dir, "units", "explain-06.lock")
		lf, err := os.Create(lock)
		if err != nil {
			t.Fatal(err)
		}
		defer lf.Close()
		if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		f.queue = []Task{{JobID: "100", Index: 1, State: "RUNNING"}}
		var out bytes.Buffer
		if _, err := Resume(ctx, f, dir, false, &out); err != nil {
			t.Fatal(err)
		}
		wantNotIn(t, "output", out.String(), "cancelled")
		// Nothing of fit or explain to redo; the merge job (gone: failed)
		// again, after the running fit task.
		want := [][]string{{"--parsable", "--dependency=afterok:100_1", "--qos=q", ScriptFile(dir, KindMerge)}}
		if !reflect.DeepEqual(f.sbatch, want) {
			t.Errorf("sbatch\n%q\nwant\n%q", f.sbatch, want)
		}
		// The lock released, the unit is missing: task 2 is resubmitted.
		syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
		f.sbatch = nil
		f.queue = []Task{{JobID: "100", Index: 1, State: "RUNNING"}, {JobID: "200", Index: -1, State: "PENDING", Reason: "Dependency"}}
		if _, err := Resume(ctx, f, dir, false, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		want = [][]string{
			{"--parsable", "--array=2", "--dependency=afterok:100_1", "--qos=q", ScriptFile(dir, KindExplain)},
			{"--parsable", "--dependency=afterok:100_1:201", "--qos=q", ScriptFile(dir, KindMerge)},
		}
		if !reflect.DeepEqual(f.sbatch, want) || !reflect.DeepEqual(f.cancelled, []string{"/200"}) {
			t.Errorf("sbatch\n%q\nwant\n%q\ncancelled %q", f.sbatch, want, f.cancelled)
		}
	})
	t.Run("merged", func(t *testing.T) {
		dir, f := submitted(t)
		os.WriteFile(filepath.Join(dir, "results.json"), []byte("{}"), 0o644)
		for _, u := range []string{"fit-00", "fit-01"} {
			done(t, dir, u)
		}
		for i := 0; i < 4; i++ {
			done(t, dir, explainUnits(i)...)
		}
		var out bytes.Buffer
		if sub, err := Resume(ctx, f, dir, false, &out); err != nil || sub != nil || len(f.sbatch) != 0 {
			t.Errorf("resume of a merged run: %+v %v %q", sub, err, f.sbatch)
		}
		wantIn(t, "output", out.String(), "nothing to resubmit", "is merged")
		// A merge job left pending behind a failed dependency is cleaned
		// up, and only that is recorded.
		f.queue = []Task{{JobID: "102", Index: -1, State: "PENDING", Reason: ReasonNeverSatisfied}}
		out.Reset()
		sub, err := Resume(ctx, f, dir, false, &out)
		if err != nil || sub == nil || len(f.sbatch) != 0 || !reflect.DeepEqual(f.cancelled, []string{"/102"}) {
			t.Errorf("resume of a merged run with a stuck merge job: %+v %v %q %q", sub, err, f.sbatch, f.cancelled)
		}
		s, _ := ReadState(dir)
		if len(s.Submissions) != 2 || len(s.Submissions[1].Jobs) != 0 || !reflect.DeepEqual(s.Submissions[1].Cancelled, []string{"102"}) {
			t.Errorf("jobs.json after a cancellation alone: %+v", s.Submissions)
		}
		wantIn(t, "output", out.String(), "cancelled: 102")
	})
	t.Run("dry run", func(t *testing.T) {
		dir, f := submitted(t)
		before, _ := os.ReadFile(StateFile(dir))
		f.queue = []Task{{JobID: "102", Index: -1, State: "PENDING", Reason: ReasonNeverSatisfied}}
		var out bytes.Buffer
		sub, err := Resume(ctx, f, dir, true, &out)
		if err != nil {
			t.Fatal(err)
		}
		after, _ := os.ReadFile(StateFile(dir))
		if len(f.sbatch) != 0 || len(f.cancelled) != 0 || !bytes.Equal(before, after) {
			t.Errorf("dry run did something: sbatch %q cancel %q", f.sbatch, f.cancelled)
		}
		wantIn(t, "dry run", out.String(), "scancel 102\n", "fit=$(sbatch --parsable --qos=q ", "explain=$(sbatch --parsable \"--dependency=afterok:${fit%%;*}\"",
			"merge=$(sbatch --parsable \"--dependency=afterok:${fit%%;*}:${explain%%;*}\"")
		if sub == nil || !reflect.DeepEqual(sub.Cancelled, []string{"102"}) {
			t.Errorf("dry run's submission %+v", sub)
		}
	})
	t.Run("errors", func(t *testing.T) {
		dir, _ := runDir(t, t.TempDir(), 1, 1)
		if _, err := Resume(ctx, &fake{}, dir, false, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "no submission recorded") {
			t.Errorf("resume without a submission: %v", err)
		}
		dir2, f := submitted(t)
		moved := filepath.Join(filepath.Dir(dir2), "moved")
		if err := os.Rename(dir2, moved); err != nil {
			t.Fatal(err)
		}
		if _, err := Resume(ctx, f, moved, false, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "moved run directory") {
			t.Errorf("resume of a moved directory: %v", err)
		}
	})
}

// TestWait: Wait polls until the merge job leaves the queue and returns
// scontrol's final state; a merge job that can never start ends the wait.
func TestWait(t *testing.T) {
	ctx := context.Background()
	dir, f := submitted(t)
	f.queue = []Task{{JobID: "102", Index: -1, State: "RUNNING"}}
	f.onQueue = func(f *fake) {
		if f.polls == 3 {
			f.queue = nil
		}
	}
	f.shown = map[string][]Task{"102": {{JobID: "102", Index: -1, State: "COMPLETED", ExitCode: "0:0"}}}
	fin, err := Wait(ctx, f, dir, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !fin.OK() || f.polls != 3 || fin.Job.ID != "102" || fin.Output != filepath.Join(dir, "slurm", "quick-merge-102.out") {
		t.Errorf("Wait = %+v after %d polls", fin, f.polls)
	}
	wantIn(t, "Final", fin.String(), "merge job 102: COMPLETED exit 0:0", "quick-merge-102.out")

	f.polls, f.onQueue = 0, nil
	f.queue = []Task{{JobID: "102", Index: -1, State: "PENDING", Reason: ReasonNeverSatisfied}}
	f.shown = map[string][]Task{"102": {{JobID: "102", Index: -1, State: "PENDING", Reason: ReasonNeverSatisfied, StdOut: "/x/y.out"}}}
	fin, err = Wait(ctx, f, dir, time.Millisecond)
	if err != nil || fin.OK() || fin.Task.Reason != ReasonNeverSatisfied || f.polls != 1 {
		t.Errorf("Wait on a merge that never starts = %+v, %v after %d polls", fin, err, f.polls)
	}
	f.queue, f.shown = nil, nil
	fin, err = Wait(ctx, f, dir, time.Millisecond)
	if err != nil || fin.OK() || fin.Task.State != "" {
		t.Errorf("Wait on a forgotten job = %+v, %v", fin, err)
	}
	f.queue = []Task{{JobID: "102", Index: -1, State: "RUNNING"}}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := Wait(cctx, f, dir, time.Millisecond); err == nil || !strings.Contains(err.Error(), "wait for job 102") {
		t.Errorf("Wait past its context: %v", err)
	}
}
