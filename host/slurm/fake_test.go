package slurm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/rundir"
)

// fake is a Cluster in memory: sbatch hands out IDs from next, the queue
// and scontrol say what the test puts in them.
type fake struct {
	next      int
	cluster   string // appended to the IDs sbatch prints
	sbatch    [][]string
	failAt    int // the failAt-th sbatch call (1-based) fails; 0: none
	queue     []Task
	shown     map[string][]Task
	queued    [][]JobID
	cancelled []string
	polls     int
	onQueue   func(f *fake) // called before each Queue answer
}

func (f *fake) Sbatch(_ context.Context, args []string) (JobID, error) {
	f.sbatch = append(f.sbatch, args)
	if len(f.sbatch) == f.failAt {
		return JobID{}, &CommandError{Argv: append([]string{"sbatch"}, args...), Err: fmt.Errorf("exit status 1"), Stderr: "sbatch: error: Batch job submission failed: Invalid partition name specified"}
	}
	id := f.next
	f.next++
	out := fmt.Sprint(id)
	if f.cluster != "" {
		out += ";" + f.cluster
	}
	return ParseJobID(out + "\n")
}

func (f *fake) Queue(_ context.Context, jobs []JobID) ([]Task, error) {
	f.polls++
	f.queued = append(f.queued, jobs)
	if f.onQueue != nil {
		f.onQueue(f)
	}
	var out []Task
	for _, t := range f.queue {
		for _, j := range jobs {
			if j.ID == t.JobID {
				out = append(out, t)
				break
			}
		}
	}
	return out, nil
}

func (f *fake) Show(_ context.Context, job JobID) ([]Task, error) { return f.shown[job.ID], nil }

func (f *fake) Cancel(_ context.Context, cluster string, names []string) error {
	for _, n := range names {
		f.cancelled = append(f.cancelled, cluster+"/"+n)
	}
	return nil
}

// runDir writes a prepared run directory: plan.json with fit units
// fit-00.. and explain units explain-00.., and a fake binary.
func runDir(t *testing.T, parent string, fit, explain int) (dir, bin string) {
	t.Helper()
	dir = filepath.Join(parent, "run dir")
	if err := os.MkdirAll(filepath.Join(dir, "units"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := Plan{Recipe: "quick", Fingerprint: "abc"}
	for i := 0; i < fit; i++ {
		p.Units = append(p.Units, Unit{Name: fmt.Sprintf("fit-%02d", i), Kind: KindFit, Index: i})
	}
	for i := 0; i < explain; i++ {
		p.Units = append(p.Units, Unit{Name: fmt.Sprintf("explain-%02d", i), Kind: KindExplain, Index: i})
	}
	b, _ := json.Marshal(p)
	if err := os.WriteFile(PlanFile(dir), b, 0o644); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(parent, "bin dir", "uaxai")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// done writes the output file of units.
func done(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := (rundir.Dir{Path: dir}).Save(n, []byte("unit")); err != nil {
			t.Fatal(err)
		}
	}
}

func wantIn(t *testing.T, what, text string, frags ...string) {
	t.Helper()
	for _, f := range frags {
		if !strings.Contains(text, f) {
			t.Errorf("%s lacks %q:\n%s", what, f, text)
		}
	}
}

func wantNotIn(t *testing.T, what, text string, frags ...string) {
	t.Helper()
	for _, f := range frags {
		if strings.Contains(text, f) {
			t.Errorf("%s has %q:\n%s", what, f, text)
		}
	}
}
