package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Report is the state of a run directory and its jobs.
type Report struct {
	Dir       string
	Recipe    string
	Units     map[string]Counts // by kind
	Merged    bool              // DIR/results.json exists
	Submitted bool              // DIR/slurm/jobs.json exists
	Tasks     []TaskReport      // fit tasks, explain tasks, then the merge job
	Notes     []string          // what could not be read (a shard file, a job Slurm forgot)
}

// TaskReport is one array task (or the merge job) of the latest
// submission that included it.
type TaskReport struct {
	Kind   string
	Index  int    // array task ID; -1: the merge job
	Job    string // Slurm's name of it: "123_4", "125"
	Slurm  Task   // its state in Slurm; State "" when Slurm no longer knows it
	Units  Counts // its units (none for the merge job)
	Shard  *ShardStatus
	Output string // its output file
}

// Failed reports whether the task failed in Slurm, or its shard says so.
func (t TaskReport) Failed() bool {
	return t.Slurm.Failed() || (t.Shard != nil && t.Shard.Status == "failed" && !t.Slurm.Active())
}

// jobIndex maps every (kind, task) to the latest job that ran it.
type jobIndex struct {
	latest map[string]map[int]Job // kind -> task (-1: merge) -> job
	all    []Job
}

func indexJobs(s *State) jobIndex {
	ix := jobIndex{latest: map[string]map[int]Job{}}
	for _, sub := range s.Submissions {
		for _, j := range sub.Jobs {
			ix.all = append(ix.all, j)
			if ix.latest[j.Kind] == nil {
				ix.latest[j.Kind] = map[int]Job{}
			}
			if j.Tasks == nil {
				ix.latest[j.Kind][-1] = j
			}
			for _, t := range j.Tasks {
				ix.latest[j.Kind][t] = j
			}
		}
	}
	return ix
}

// slurmView is what Slurm says of the jobs of a state: the queue, and
// scontrol for the jobs that have left it.
type slurmView struct {
	tasks map[string]Task // by name "123_4", "125"
	shown map[string]bool // jobs asked of scontrol
	c     Cluster
	notes []string
}

func newView(ctx context.Context, c Cluster, ix jobIndex) (*slurmView, error) {
	v := &slurmView{tasks: map[string]Task{}, shown: map[string]bool{}, c: c}
	var ids []JobID
	for _, j := range ix.all {
		ids = append(ids, j.ID)
	}
	if len(ids) == 0 {
		return v, nil
	}
	q, err := c.Queue(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, t := range q {
		v.tasks[t.Name()] = t
	}
	return v, nil
}

// task returns Slurm's state of a task of job j: from the queue, else
// from scontrol; State "" when Slurm no longer knows it.
func (v *slurmView) task(ctx context.Context, j Job, index int) (Task, error) {
	name := taskName(j.ID.ID, index)
	if t, ok := v.tasks[name]; ok {
		return t, nil
	}
	if !v.shown[j.ID.ID] {
		v.shown[j.ID.ID] = true
		ts, err := v.c.Show(ctx, j.ID)
		if err != nil {
			return Task{}, err
		}
		for _, t := range ts {
			if _, ok := v.tasks[t.Name()]; !ok {
				v.tasks[t.Name()] = t
			}
		}
	}
	if t, ok := v.tasks[name]; ok {
		return t, nil
	}
	return Task{JobID: j.ID.ID, Index: index}, nil
}

// Status reads the run directory dir (plan, units, locks, shard files,
// jobs.json) and asks Slurm for the state of the latest job of every
// array task and of the merge job.
func Status(ctx context.Context, c Cluster, dir string) (*Report, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	plan, err := ReadPlan(dir)
	if err != nil {
		return nil, err
	}
	us, err := readStates(dir, plan)
	if err != nil {
		return nil, err
	}
	r := &Report{Dir: dir, Recipe: plan.Recipe, Units: map[string]Counts{}, Merged: Merged(dir)}
	for _, k := range Kinds {
		r.Units[k] = us.kind(k)
	}
	if _, err := os.Stat(StateFile(dir)); errors.Is(err, os.ErrNotExist) {
		r.Notes = append(r.Notes, "no Slurm submission recorded ("+StateFile(dir)+" is absent)")
		return r, nil
	}
	s, err := ReadState(dir)
	if err != nil {
		return nil, err
	}
	r.Submitted = true
	ix := indexJobs(s)
	v, err := newView(ctx, c, ix)
	if err != nil {
		return nil, err
	}
	for _, kind := range append(append([]string{}, Kinds...), KindMerge) {
		n := s.Tasks.Of(kind)
		idx := seq(n)
		if kind == KindMerge {
			idx = []int{-1}
		}
		for _, i := range idx {
			tr := TaskReport{Kind: kind, Index: i}
			if kind != KindMerge {
				tr.Units = us.task(kind, i, n)
				sh, err := ReadShard(dir, kind, i, n)
				if err != nil {
					r.Notes = append(r.Notes, fmt.Sprintf("%s task %d: shard status: %v", kind, i, err))
				}
				tr.Shard = sh
			}
			j, ok := ix.latest[kind][i]
			if !ok {
				tr.Job = "-"
				r.Tasks = append(r.Tasks, tr)
				continue
			}
			tr.Job = taskName(j.ID.ID, i)
			if tr.Slurm, err = v.task(ctx, j, i); err != nil {
				return nil, err
			}
			tr.Output = OutputFile(dir, s.Recipe, kind, j.ID.ID, i)
			if tr.Slurm.StdOut != "" {
				tr.Output = tr.Slurm.StdOut
			}
			r.Tasks = append(r.Tasks, tr)
		}
	}
	return r, nil
}

// Write prints the report: the units of each kind, a line per array task,
// the failed tasks with their output files, and what to do next.
func (r *Report) Write(w io.Writer) error {
	fmt.Fprintf(w, "run %s (recipe %s)\n", r.Dir, r.Recipe)
	for _, k := range Kinds {
		c := r.Units[k]
		fmt.Fprintf(w, "%-8s units: %d done, %d running, %d missing (of %d)\n", k, c.Done, c.Running, c.Missing, c.Total())
	}
	if r.Merged {
		fmt.Fprintln(w, "merged:  results.json is written")
	} else {
		fmt.Fprintln(w, "merged:  not yet (no results.json)")
	}
	if len(r.Tasks) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "kind\ttask\tjob\tslurm\tunits done/running/missing\tshard")
		for _, t := range r.Tasks {
			task, units, shard := fmt.Sprint(t.Index), fmt.Sprintf("%d/%d/%d", t.Units.Done, t.Units.Running, t.Units.Missing), "-"
			if t.Kind == KindMerge {
				task, units = "-", "-"
			}
			if t.Shard != nil {
				shard = t.Shard.Status
				if t.Shard.Host != "" {
					shard += " on " + t.Shard.Host
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Kind, task, t.Job, slurmState(t.Slurm), units, shard)
		}
		tw.Flush()
	}
	var failed []TaskReport
	for _, t := range r.Tasks {
		if t.Failed() {
			failed = append(failed, t)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintln(w, "\nfailed:")
		for _, t := range failed {
			what := t.Kind + " task " + fmt.Sprint(t.Index)
			if t.Kind == KindMerge {
				what = "merge job"
			}
			if t.Slurm.State == "PENDING" {
				fmt.Fprintf(w, "  %s (job %s): %s: never started, a job it waits for failed\n", what, t.Job, slurmState(t.Slurm))
			} else {
				fmt.Fprintf(w, "  %s (job %s): %s; output %s\n", what, t.Job, slurmState(t.Slurm), t.Output)
			}
			if t.Shard != nil && t.Shard.Error != "" {
				fmt.Fprintf(w, "    shard error: %s\n", t.Shard.Error)
			}
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	switch {
	case r.Merged:
	case len(failed) > 0 || r.needsResume():
		fmt.Fprintf(w, "\nnext: uaxai slurm submit --resume %s\n", Quote(r.Dir))
	}
	return nil
}

// needsResume reports whether units are missing with no job left to run
// them.
func (r *Report) needsResume() bool {
	if !r.Submitted {
		return false
	}
	for _, t := range r.Tasks {
		if t.Kind != KindMerge && t.Units.Missing > 0 && !t.Slurm.Active() {
			return true
		}
	}
	return false
}

// slurmState writes a task's state: "RUNNING", "PENDING (Dependency)",
// "FAILED exit 1:0 (NonZeroExitCode)", "gone (Slurm no longer knows it)".
func slurmState(t Task) string {
	if t.State == "" {
		if t.JobID == "" {
			return "-"
		}
		return "gone (Slurm no longer knows it)"
	}
	s := t.State
	if t.ExitCode != "" && !t.Active() && t.State != "PENDING" {
		s += " exit " + t.ExitCode
	}
	if t.Reason != "" && t.Reason != "None" {
		s += " (" + t.Reason + ")"
	}
	return strings.TrimSpace(s)
}
