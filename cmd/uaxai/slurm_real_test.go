package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uaxai/uaxai/host/slurm"
	"github.com/uaxai/uaxai/internal/testdep"
)

// TestSlurmQuickstart runs the quickstart through `uaxai slurm submit` on
// a real Slurm (the single-node cluster .ci/run starts with
// scripts/slurm-local): the fit array, the explain array held back with
// afterok, and the merge job after it. Its results.json, records.csv and
// tables.md are the same bytes as those of `uaxai run` on this machine.
// `uaxai slurm status` then reports every unit done. It skips, saying
// why, where no Slurm answers.
func TestSlurmQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quickstart on Slurm")
	}
	if err := slurm.Available(context.Background()); err != nil {
		testdep.Skip(t, testdep.Slurm, err)
	}
	exe := buildUaxai(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	run := filepath.Join(dir, "slurm run")
	out := uaxai(t, exe, "slurm", "submit", "../../recipes/quickstart.toml", "--run-dir", run, "--shards", "3", "--cache", cache, "--time", "30")
	t.Logf("uaxai slurm submit:\n%s", out)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	go func() {
		// squeue while the jobs run, for the log.
		for ctx.Err() == nil {
			if b, err := exec.Command("squeue").CombinedOutput(); err == nil && strings.Count(string(b), "\n") > 1 {
				t.Logf("squeue at %s:\n%s", time.Now().Format("15:04:05"), b)
			}
			select {
			case <-ctx.Done():
			case <-time.After(15 * time.Second):
			}
		}
	}()
	final, err := slurm.Wait(ctx, slurm.CLI{}, run, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !final.OK() {
		b, _ := os.ReadFile(final.Output)
		st, _ := exec.Command(exe, "slurm", "status", run).CombinedOutput()
		t.Fatalf("merge job %s ended %s; its output %s:\n%s\nstatus:\n%s", final.Job, final.Task.State, final.Output, b, st)
	}
	status := uaxai(t, exe, "slurm", "status", run)
	if !strings.Contains(status, "merged:  yes") && !strings.Contains(status, "missing (of") {
		t.Logf("status:\n%s", status)
	}
	for _, line := range strings.Split(status, "\n") {
		if strings.Contains(line, "units:") && !strings.Contains(line, " 0 running, 0 missing") {
			t.Errorf("after the merge job, status says %q", line)
		}
	}
	local := filepath.Join(dir, "local")
	uaxai(t, exe, "run", "../../recipes/quickstart.toml", "--run-dir", local, "--cache", cache)
	sameResults(t, "quickstart through Slurm", run, local)
}
