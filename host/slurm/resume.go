package slurm

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// liveness is what the queue says of one array task (or the merge job)
// across every job that ever ran it.
type liveness struct {
	running []string // names of its jobs' entries that run
	pending []string // that pend and can still start
	never   []string // that pend behind a dependency that failed
}

func (v *slurmView) classify(ix jobIndex, kind string, index int) liveness {
	var l liveness
	for _, j := range ix.all {
		if j.Kind != kind || (index >= 0 && !slices.Contains(j.Tasks, index)) {
			continue
		}
		t, ok := v.tasks[taskName(j.ID.ID, index)]
		if !ok {
			continue
		}
		switch {
		case t.State == "PENDING" && t.Reason == ReasonNeverSatisfied:
			l.never = append(l.never, t.Name())
		case t.State == "PENDING":
			l.pending = append(l.pending, t.Name())
		case t.Active():
			l.running = append(l.running, t.Name())
		}
	}
	return l
}

// Resume resubmits what an interrupted or failed submission of dir left
// undone, with the scripts and settings recorded in DIR/slurm/:
//
//   - the array tasks of each kind that have units missing (no output, no
//     lock held) and no job running or pending for them, as one job per
//     kind with --array=<those tasks>;
//   - a new merge job, unless results.json is written or a merge job is
//     still to run.
//
// Each new job waits (afterok) for the new jobs of the kinds before it and
// for the tasks of those kinds still running or pending. Pending tasks that
// can never start (DependencyNeverSatisfied), and pending tasks of a kind
// whose predecessors are resubmitted (they wait for a job that failed), are
// cancelled first. The submission is appended to jobs.json and printed;
// with dryRun the scancel and sbatch lines are printed and nothing is done.
// It returns the submission (nil when there is nothing to do).
func Resume(ctx context.Context, c Cluster, dir string, dryRun bool, w io.Writer) (*Submission, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s, err := ReadState(dir)
	if err != nil {
		return nil, err
	}
	if s.Dir != dir {
		return nil, fmt.Errorf("%s: recorded for the run directory %s, not %s (its scripts name that path; a moved run directory cannot be resumed on Slurm)", StateFile(dir), s.Dir, dir)
	}
	plan, err := ReadPlan(dir)
	if err != nil {
		return nil, err
	}
	for _, k := range Kinds {
		if n := plan.Count(k); (n == 0) != (s.Tasks.Of(k) == 0) {
			return nil, fmt.Errorf("%s has %d %s units, but %s has %d %s tasks: the plan changed since the submission", PlanFile(dir), n, k, StateFile(dir), s.Tasks.Of(k), k)
		}
	}
	us, err := readStates(dir, plan)
	if err != nil {
		return nil, err
	}
	ix := indexJobs(s)
	v, err := newView(ctx, c, ix)
	if err != nil {
		return nil, err
	}
	var (
		reqs     []request
		cancel   []string
		newKinds []string // kinds with a new job
		activeUp []string // running and kept pending tasks of the kinds before
		upResub  bool     // a kind before was resubmitted
	)
	for _, kind := range Kinds {
		n := s.Tasks.Of(kind)
		var resub []int
		var active []string
		for t := 0; t < n; t++ {
			l := v.classify(ix, kind, t)
			cancel = append(cancel, l.never...)
			if upResub {
				cancel = append(cancel, l.pending...)
				l.pending = nil
			}
			live := append(l.running, l.pending...)
			if us.task(kind, t, n).Missing > 0 && len(live) == 0 {
				resub = append(resub, t)
			}
			active = append(active, live...)
		}
		if len(resub) > 0 {
			reqs = append(reqs, request{kind: kind, tasks: resub, after: append([]string{}, activeUp...), dep: append([]string{}, newKinds...)})
			newKinds = append(newKinds, kind)
			upResub = true
		}
		activeUp = append(activeUp, active...)
	}
	l := v.classify(ix, KindMerge, -1)
	cancel = append(cancel, l.never...)
	if upResub {
		cancel = append(cancel, l.pending...)
		l.pending = nil
	}
	if !Merged(dir) && len(l.running)+len(l.pending) == 0 {
		reqs = append(reqs, request{kind: KindMerge, after: activeUp, dep: newKinds})
	}
	sort.Strings(cancel)
	if len(reqs) == 0 && len(cancel) == 0 {
		if Merged(dir) {
			fmt.Fprintf(w, "nothing to resubmit: %s is merged (results.json is written)\n", dir)
		} else {
			fmt.Fprintf(w, "nothing to resubmit: every task with missing units, and the merge job, is running or pending (uaxai slurm status %s)\n", Quote(dir))
		}
		return nil, nil
	}
	if dryRun {
		return &Submission{Cancelled: cancel}, s.printDry(w, reqs, cancel)
	}
	if err := cancelByCluster(ctx, c, ix, cancel); err != nil {
		return nil, err
	}
	if len(cancel) > 0 {
		fmt.Fprintf(w, "cancelled: %s (pending behind a job that failed)\n", strings.Join(cancel, " "))
	}
	s.Submissions = append(s.Submissions, Submission{Time: time.Now().UTC().Format(time.RFC3339), Cancelled: cancel})
	if len(reqs) == 0 {
		return &s.Submissions[len(s.Submissions)-1], s.write(dir)
	}
	if err := s.submit(ctx, c, reqs, w); err != nil {
		return nil, err
	}
	return &s.Submissions[len(s.Submissions)-1], nil
}

// cancelByCluster cancels tasks by name, grouped by their jobs' clusters.
func cancelByCluster(ctx context.Context, c Cluster, ix jobIndex, names []string) error {
	cluster := map[string]string{}
	for _, j := range ix.all {
		cluster[j.ID.ID] = j.ID.Cluster
	}
	groups := map[string][]string{}
	for _, n := range names {
		id, _, _ := strings.Cut(n, "_")
		groups[cluster[id]] = append(groups[cluster[id]], n)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := c.Cancel(ctx, k, groups[k]); err != nil {
			return fmt.Errorf("cancel the tasks that can never start: %w", err)
		}
	}
	return nil
}
