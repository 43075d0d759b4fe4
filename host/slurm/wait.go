package slurm

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// WaitJob polls Slurm every poll until no task of job is active (running,
// or pending with a dependency that can still be met), and returns the
// tasks' last states: from scontrol for the tasks that ended, from squeue
// for those left pending behind a failed dependency (which never start).
// A job Slurm no longer knows gives one Task with State "".
func WaitJob(ctx context.Context, c Cluster, job JobID, poll time.Duration) ([]Task, error) {
	for {
		q, err := c.Queue(ctx, []JobID{job})
		if err != nil {
			return nil, err
		}
		var stuck []Task
		active := false
		for _, t := range q {
			if t.JobID != job.ID {
				continue
			}
			if t.Active() {
				active = true
			} else {
				stuck = append(stuck, t)
			}
		}
		if !active {
			ended, err := c.Show(ctx, job)
			if err != nil {
				return nil, err
			}
			out := stuck
			for _, t := range ended {
				if t.JobID == job.ID && !(t.State == "PENDING" && hasTask(stuck, t)) {
					out = append(out, t)
				}
			}
			if len(out) == 0 {
				out = []Task{{JobID: job.ID, Index: -1}}
			}
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for job %s: %w", job, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func hasTask(ts []Task, t Task) bool {
	for _, x := range ts {
		if x.Name() == t.Name() {
			return true
		}
	}
	return false
}

// Final is the end of a run's merge job.
type Final struct {
	Job    JobID
	Task   Task   // its last state; State "" when Slurm no longer knows it
	Output string // its output file
}

// OK reports whether the merge job completed (exit 0).
func (f Final) OK() bool { return f.Task.State == "COMPLETED" }

func (f Final) String() string {
	return fmt.Sprintf("merge job %s: %s; output %s", f.Job, slurmState(f.Task), f.Output)
}

// Wait waits for the latest merge job of the run directory dir to end,
// polling every poll, and returns its final state and output file. A
// merge job pending behind a failed task ends the wait at once (it would
// never start): Final.Task then has State PENDING and Reason
// DependencyNeverSatisfied.
func Wait(ctx context.Context, c Cluster, dir string, poll time.Duration) (Final, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Final{}, err
	}
	s, err := ReadState(dir)
	if err != nil {
		return Final{}, err
	}
	j, ok := indexJobs(s).latest[KindMerge][-1]
	if !ok {
		return Final{}, fmt.Errorf("%s: no merge job recorded (uaxai slurm submit --resume %s submits one)", StateFile(dir), Quote(dir))
	}
	ts, err := WaitJob(ctx, c, j.ID, poll)
	if err != nil {
		return Final{}, err
	}
	f := Final{Job: j.ID, Task: ts[0], Output: OutputFile(dir, s.Recipe, KindMerge, j.ID.ID, -1)}
	if f.Task.StdOut != "" {
		f.Output = f.Task.StdOut
	}
	return f, nil
}
