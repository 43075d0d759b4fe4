package slurm

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uaxai/uaxai/internal/testdep"
)

// realCluster skips the test unless sbatch and sinfo are on PATH and sinfo
// answers with a node that can take jobs (scripts/slurm-local start).
// UAXAI_NO_SLURM=1 skips it too (mutation runs: every mutant would wait
// for real jobs).
func realCluster(t *testing.T) CLI {
	t.Helper()
	if err := Available(context.Background()); err != nil {
		testdep.Skip(t, testdep.Slurm, err)
	}
	return CLI{}
}

// TestRealSlurm submits, through Script, Sbatch and WaitJob, an array job
// of 2 tasks and a job that depends on it (afterok), running shell
// commands, on a real Slurm; the output files show that the dependent job
// started after both tasks ended. A second pair, whose array fails in one
// task, leaves its dependent job pending behind a dependency that can
// never be met, which WaitJob reports and Cancel ends.
func TestRealSlurm(t *testing.T) {
	c := realCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "out dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stamp := `date +%s%N`
	arr := Script{
		Name: "uaxai-smoke-arr", Array: []int{0, 1}, Output: filepath.Join(dir, "%x-%A_%a.out"),
		Options: []string{"--cpus-per-task=1", "--time=5"},
		Lines: []string{`echo "start $(` + stamp + `)"`, `sleep 1`, `echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID"`,
			`if [ "${FAIL_TASK:-}" = "$SLURM_ARRAY_TASK_ID" ]; then exit 3; fi`, `echo "end $(` + stamp + `)"`},
	}
	after := Script{
		Name: "uaxai-smoke-after", Output: filepath.Join(dir, "%x-%j.out"), Options: []string{"--cpus-per-task=1", "--time=5"},
		Lines: []string{`echo "start $(` + stamp + `)"`},
	}
	for _, s := range []struct {
		sc   Script
		file string
	}{{arr, "arr.sbatch"}, {after, "after.sbatch"}} {
		if err := s.sc.Write(filepath.Join(dir, s.file)); err != nil {
			t.Fatal(err)
		}
	}
	a, err := c.Sbatch(ctx, []string{"--parsable", "--export=ALL,FAIL_TASK=", filepath.Join(dir, "arr.sbatch")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Sbatch(ctx, []string{"--parsable", "--dependency=afterok:" + a.ID, filepath.Join(dir, "after.sbatch")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("array job %s, dependent job %s", a, b)
	q, err := c.Queue(ctx, []JobID{a, b})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("squeue right after sbatch: %+v", q)
	ts, err := WaitJob(ctx, c, b, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].State != "COMPLETED" || ts[0].ExitCode != "0:0" {
		t.Fatalf("dependent job %s ended as %+v", b, ts)
	}
	at, err := c.Show(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(at) != 2 {
		t.Fatalf("scontrol show job %s: %+v, want 2 tasks", a, at)
	}
	read := func(name string) map[string]int64 {
		t.Helper()
		bb, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int64{}
		for _, l := range strings.Split(string(bb), "\n") {
			if k, v, ok := strings.Cut(l, " "); ok && (k == "start" || k == "end") {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("%s: %q", name, l)
				}
				m[k] = n
			}
		}
		return m
	}
	dep := read("uaxai-smoke-after-" + b.ID + ".out")
	for _, task := range at {
		if task.State != "COMPLETED" || task.StdOut == "" {
			t.Errorf("array task %s: %+v", task.Name(), task)
		}
		name := "uaxai-smoke-arr-" + a.ID + "_" + strconv.Itoa(task.Index) + ".out"
		if filepath.Join(dir, name) != task.StdOut {
			t.Errorf("task %s wrote %s, want %s (the %%x-%%A_%%a pattern)", task.Name(), task.StdOut, name)
		}
		m := read(name)
		if m["end"] == 0 || m["end"] > dep["start"] {
			t.Errorf("task %s ended at %d, after the dependent job started at %d", task.Name(), m["end"], dep["start"])
		}
	}

	// Task 1 fails: the dependent job can never start.
	a2, err := c.Sbatch(ctx, []string{"--parsable", "--export=ALL,FAIL_TASK=1", filepath.Join(dir, "arr.sbatch")})
	if err != nil {
		t.Fatal(err)
	}
	b2, err := c.Sbatch(ctx, []string{"--parsable", "--dependency=afterok:" + a2.ID, filepath.Join(dir, "after.sbatch")})
	if err != nil {
		t.Fatal(err)
	}
	ts, err = WaitJob(ctx, c, b2, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].State != "PENDING" || ts[0].Reason != ReasonNeverSatisfied || !ts[0].Failed() {
		t.Errorf("job %s after a failed task: %+v, want pending with %s", b2, ts, ReasonNeverSatisfied)
	}
	at, err = c.Show(ctx, a2)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range at {
		if want := map[int]string{0: "COMPLETED", 1: "FAILED"}[task.Index]; task.State != want || (task.Index == 1 && task.ExitCode != "3:0") {
			t.Errorf("task %s: %+v, want %s", task.Name(), task, want)
		}
	}
	if err := c.Cancel(ctx, "", []string{b2.ID}); err != nil {
		t.Fatal(err)
	}
	ts, err = WaitJob(ctx, c, b2, 200*time.Millisecond)
	if err != nil || len(ts) != 1 || ts[0].State != "CANCELLED" {
		t.Errorf("after scancel %s: %+v, %v", b2, ts, err)
	}
}
