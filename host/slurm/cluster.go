package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// JobID is a job's ID as `sbatch --parsable` prints it: "123", or
// "123;cluster" on a multi-cluster setup.
type JobID struct {
	ID      string // decimal digits
	Cluster string // "" on a single cluster
}

func (j JobID) String() string {
	if j.Cluster != "" {
		return j.ID + ";" + j.Cluster
	}
	return j.ID
}

var (
	jobIDRE   = regexp.MustCompile(`^[0-9]+$`)
	clusterRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// ParseJobID reads the output of `sbatch --parsable`: "JOBID" or
// "JOBID;CLUSTER" and a newline. sbatch may print warnings before it on
// stdout of some versions; only the last non-empty line counts.
func ParseJobID(out string) (JobID, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	id, cluster, hasCluster := strings.Cut(last, ";")
	if !jobIDRE.MatchString(id) || (hasCluster && !clusterRE.MatchString(cluster)) {
		return JobID{}, fmt.Errorf("sbatch --parsable printed %q, not a job ID (accepted: JOBID or JOBID;CLUSTER, JOBID decimal digits)", strings.TrimSpace(out))
	}
	return JobID{ID: id, Cluster: cluster}, nil
}

// Task is the state of one job, or one task of an array job, as squeue or
// scontrol report it.
type Task struct {
	JobID    string // the array's job ID (squeue %F, scontrol ArrayJobId), or the job's own
	Index    int    // the array task ID; -1: not an array job
	State    string // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
	Reason   string // why it pends or ended: "Dependency", "NonZeroExitCode", ...; "None"
	ExitCode string // "0:0" (exit status:signal), from scontrol only
	StdOut   string // its output file, from scontrol only
}

// Name is the task's name in Slurm's syntax: "123_4", or "123".
func (t Task) Name() string { return taskName(t.JobID, t.Index) }

func taskName(job string, index int) string {
	if index < 0 {
		return job
	}
	return job + "_" + strconv.Itoa(index)
}

// Active reports whether the task is still to run or running: in the
// queue and not stuck behind a dependency that can never be met.
func (t Task) Active() bool {
	switch t.State {
	case "PENDING":
		return t.Reason != ReasonNeverSatisfied
	case "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT":
		return true
	}
	return false
}

// Failed reports whether the task ended without success, or can never
// start.
func (t Task) Failed() bool {
	switch t.State {
	case "COMPLETED", "":
		return false
	case "PENDING":
		return t.Reason == ReasonNeverSatisfied
	}
	return !t.Active()
}

// ReasonNeverSatisfied is the reason of a job whose afterok dependency
// failed: it pends forever.
const ReasonNeverSatisfied = "DependencyNeverSatisfied"

// Cluster is the scheduler: the four Slurm commands this package uses.
// CLI runs the real ones; tests use fakes.
type Cluster interface {
	// Sbatch runs `sbatch ARGS...` (ARGS begin with --parsable) and
	// returns the new job's ID.
	Sbatch(ctx context.Context, args []string) (JobID, error)
	// Queue returns, one per array task, the tasks of the jobs still in
	// the queue (squeue); jobs that have left it are absent.
	Queue(ctx context.Context, jobs []JobID) ([]Task, error)
	// Show returns the tasks of a job that the controller still knows
	// (scontrol show job), finished ones included; none for a job it has
	// forgotten.
	Show(ctx context.Context, job JobID) ([]Task, error)
	// Cancel cancels jobs or array tasks by name ("123", "123_4"), all of
	// one cluster ("" on a single cluster).
	Cancel(ctx context.Context, cluster string, names []string) error
}

// CLI is the Cluster of the Slurm commands on PATH.
type CLI struct{}

// ErrNoSlurm is wrapped by the error of a command missing from PATH.
var ErrNoSlurm = errors.New("not found on PATH")

// run runs a Slurm command and returns its stdout; a failure gives an
// error with the command line and its stderr.
func run(ctx context.Context, name string, args []string) ([]byte, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (is Slurm installed, and is this a host that can submit jobs? PATH is searched for sbatch, squeue, scontrol and scancel)", name, ErrNoSlurm)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		if msg == "" {
			msg = "no output"
		}
		return stdout.Bytes(), &CommandError{Argv: append([]string{name}, args...), Err: err, Stderr: msg}
	}
	return stdout.Bytes(), nil
}

// CommandError is a Slurm command that failed: its command line, its
// exit, and what it printed on stderr.
type CommandError struct {
	Argv   []string
	Err    error
	Stderr string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("%s: %v: %s", ShellLine(e.Argv), e.Err, e.Stderr)
}

func (e *CommandError) Unwrap() error { return e.Err }

// unknownJob reports whether a failed squeue or scontrol said that no job
// it was asked about exists (they have left the controller's memory).
func unknownJob(err error) bool {
	var ce *CommandError
	return errors.As(err, &ce) && strings.Contains(ce.Stderr, "Invalid job id")
}

// Sbatch runs sbatch and parses the job ID it prints.
func (CLI) Sbatch(ctx context.Context, args []string) (JobID, error) {
	out, err := run(ctx, "sbatch", args)
	if err != nil {
		return JobID{}, err
	}
	return ParseJobID(string(out))
}

// queueFormat is squeue's output: array job ID, task ID, state, reason.
const queueFormat = "%F|%K|%T|%r"

// Queue runs `squeue -h -r -j IDS -o %F|%K|%T|%r`, once per cluster.
func (CLI) Queue(ctx context.Context, jobs []JobID) ([]Task, error) {
	var out []Task
	for _, g := range byCluster(jobs) {
		args := []string{"-h", "-r", "-j", strings.Join(g.ids, ","), "-o", queueFormat}
		if g.cluster != "" {
			args = append(args, "-M", g.cluster)
		}
		b, err := run(ctx, "squeue", args)
		if unknownJob(err) {
			continue // every job asked about has left the queue
		}
		if err != nil {
			return nil, err
		}
		ts, err := ParseQueue(string(b))
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	return out, nil
}

// Show runs `scontrol -o show job ID`.
func (CLI) Show(ctx context.Context, job JobID) ([]Task, error) {
	args := []string{"-o", "show", "job", job.ID}
	if job.Cluster != "" {
		args = append([]string{"-M", job.Cluster}, args...)
	}
	b, err := run(ctx, "scontrol", args)
	if unknownJob(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseShow(string(b))
}

// Cancel runs `scancel NAMES...`.
func (CLI) Cancel(ctx context.Context, cluster string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	args := append([]string{}, names...)
	if cluster != "" {
		args = append([]string{"-M", cluster}, args...)
	}
	_, err := run(ctx, "scancel", args)
	return err
}

type clusterIDs struct {
	cluster string
	ids     []string
}

// byCluster groups job IDs by cluster, in a fixed order.
func byCluster(jobs []JobID) []clusterIDs {
	m := map[string][]string{}
	for _, j := range jobs {
		if !slices.Contains(m[j.Cluster], j.ID) {
			m[j.Cluster] = append(m[j.Cluster], j.ID)
		}
	}
	var out []clusterIDs
	for c, ids := range m {
		out = append(out, clusterIDs{c, ids})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].cluster < out[j].cluster })
	return out
}

// ParseQueue reads squeue's lines in queueFormat ("123|4|RUNNING|None";
// "125|N/A|PENDING|Dependency" for a job that is no array). Header lines
// of -M ("CLUSTER: name") are skipped.
func ParseQueue(out string) ([]Task, error) {
	var ts []Task
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "CLUSTER:") {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 4 || !jobIDRE.MatchString(f[0]) || f[2] == "" {
			return nil, fmt.Errorf("squeue output line %d: %q is not JOBID|TASK|STATE|REASON (format %s)", i+1, line, queueFormat)
		}
		t := Task{JobID: f[0], Index: -1, State: f[2], Reason: f[3]}
		if f[1] != "N/A" {
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("squeue output line %d: %q: task ID %q is not N/A or an integer >= 0", i+1, line, f[1])
			}
			t.Index = n
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// ParseShow reads `scontrol -o show job` output: one line of Key=Value
// fields per job or array task. A record of pending array tasks not yet
// split off ("ArrayTaskId=2-5%2") gives one Task per task.
func ParseShow(out string) ([]Task, error) {
	var ts []Task
	for i, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := fields(line)
		id, state := f["JobId"], f["JobState"]
		if !jobIDRE.MatchString(id) || state == "" {
			return nil, fmt.Errorf("scontrol show job, record %d: no JobId and JobState in %.80q", i+1, line)
		}
		t := Task{JobID: id, Index: -1, State: state, Reason: f["Reason"], ExitCode: f["ExitCode"], StdOut: f["StdOut"]}
		arr, ok := f["ArrayJobId"]
		if !ok {
			ts = append(ts, t)
			continue
		}
		t.JobID = arr
		idx, err := ParseArray(f["ArrayTaskId"])
		if err != nil {
			return nil, fmt.Errorf("scontrol show job %s, record %d: ArrayTaskId: %w", id, i+1, err)
		}
		for _, n := range idx {
			t.Index = n
			ts = append(ts, t)
		}
	}
	return ts, nil
}

// fields splits a line of `scontrol -o` into its Key=Value fields. A value
// may hold spaces (a path: "StdOut=/a b/x.out"): a word without "=" belongs
// to the value before it, and so does one whose "=" follows a "/" at its
// start. A key is the text before the word's first "=".
func fields(line string) map[string]string {
	m := map[string]string{}
	last := ""
	for _, w := range strings.Split(strings.TrimSpace(line), " ") {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" || strings.HasPrefix(k, "/") {
			if last != "" {
				m[last] += " " + w
			}
			continue
		}
		m[k] = v
		last = k
	}
	return m
}

// ParseArray reads an array spec of sbatch or scontrol: "0-3", "1,3,5-7",
// "0-9%2" (a limit of running tasks, ignored), "4". The IDs come back
// sorted without duplicates.
func ParseArray(s string) ([]int, error) {
	spec, _, _ := strings.Cut(s, "%")
	if spec == "" {
		return nil, fmt.Errorf("empty array spec (accepted: \"0-3\", \"1,3,5-7\")")
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(spec, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q: %q is not a task ID or a range LO-HI with 0 <= LO <= HI (accepted: \"0-3\", \"1,3,5-7\")", s, part)
		}
		for n := a; n <= b; n++ {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// FormatArray writes task IDs as sbatch's --array: ranges of consecutive
// IDs, "0-3,5". ids must be sorted and distinct.
func FormatArray(ids []int) string {
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ids[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ids[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Available says why jobs cannot be submitted here, or nil: the Slurm
// commands must be on PATH, sinfo must answer within 5 s, and a node must
// take jobs. UAXAI_NO_SLURM=1 makes it say no (mutation runs, where every
// mutant would wait for real jobs).
func Available(ctx context.Context) error {
	if os.Getenv("UAXAI_NO_SLURM") == "1" {
		return errors.New("UAXAI_NO_SLURM=1: real Slurm switched off")
	}
	for _, c := range []string{"sbatch", "sinfo", "squeue", "scontrol"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("no Slurm here: %s is not on PATH (as root: scripts/slurm-local install && scripts/slurm-local start)", c)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sinfo", "-h", "-o", "%t").CombinedOutput()
	if ctx.Err() != nil {
		return errors.New("slurm does not answer: sinfo had no answer within 5s (start it: scripts/slurm-local start)")
	}
	if err != nil {
		return fmt.Errorf("slurm does not answer: sinfo: %v: %s (start it: scripts/slurm-local start)", err, strings.TrimSpace(string(out)))
	}
	states := strings.Fields(string(out))
	for _, s := range states {
		if strings.HasPrefix(s, "idle") || strings.HasPrefix(s, "mix") || strings.HasPrefix(s, "alloc") {
			return nil
		}
	}
	return fmt.Errorf("slurm answers but no node takes jobs (sinfo states %q)", states)
}
