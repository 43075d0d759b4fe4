package slurm

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseJobID(t *testing.T) {
	for _, c := range []struct {
		out  string
		want JobID
	}{
		{"123\n", JobID{"123", ""}},
		{"123;cluster\n", JobID{"123", "cluster"}},
		{"  42;big-one.2 \n", JobID{"42", "big-one.2"}},
		{"sbatch: warning: something\n77\n", JobID{"77", ""}},
	} {
		got, err := ParseJobID(c.out)
		if err != nil || got != c.want {
			t.Errorf("ParseJobID(%q) = %+v, %v; want %+v", c.out, got, err, c.want)
		}
		if back, err := ParseJobID(got.String()); err != nil || back != got {
			t.Errorf("ParseJobID(String()) of %+v = %+v, %v", got, back, err)
		}
	}
	for _, bad := range []string{"", "\n", "Submitted batch job 123", "12a", "123;", ";c", "123;a b", "-1", "123;c;d"} {
		_, err := ParseJobID(bad)
		if err == nil {
			t.Errorf("ParseJobID(%q) accepted", bad)
			continue
		}
		wantIn(t, "error", err.Error(), "not a job ID", "JOBID;CLUSTER", strings.TrimSpace(bad))
	}
}

// The lines below are what Slurm 22.05 printed on the single-node
// cluster of scripts/slurm-local (paths with a space).
const showOut = `JobId=1 ArrayJobId=1 ArrayTaskId=1 JobName=tst-a UserId=root(0) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=3:0 TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* Command=/tmp/sl test/a.sbatch WorkDir=/tmp/sl test StdErr=/tmp/sl test/out/tst-a-1_1.out StdIn=/dev/null StdOut=/tmp/sl test/out/tst-a-1_1.out Power= 
JobId=4 ArrayJobId=1 ArrayTaskId=0 JobName=tst-a JobState=COMPLETED Reason=None ExitCode=0:0 StdOut=/tmp/sl test/out/tst-a-1_0.out Power= 

JobId=5 ArrayJobId=5 ArrayTaskId=2-3,6%1 JobName=tst-c JobState=PENDING Reason=Dependency ExitCode=0:0 StdOut=/x/a=b.out
JobId=3 JobName=tst-b JobState=PENDING Reason=DependencyNeverSatisfied Dependency=afterok:1_*(failed) ExitCode=0:0 StdOut=/tmp/sl test/out/tst-b-3.out Power=
`

func TestParseShow(t *testing.T) {
	got, err := ParseShow(showOut)
	if err != nil {
		t.Fatal(err)
	}
	want := []Task{
		{JobID: "1", Index: 1, State: "FAILED", Reason: "NonZeroExitCode", ExitCode: "3:0", StdOut: "/tmp/sl test/out/tst-a-1_1.out"},
		{JobID: "1", Index: 0, State: "COMPLETED", Reason: "None", ExitCode: "0:0", StdOut: "/tmp/sl test/out/tst-a-1_0.out"},
		{JobID: "5", Index: 2, State: "PENDING", Reason: "Dependency", ExitCode: "0:0", StdOut: "/x/a=b.out"},
		{JobID: "5", Index: 3, State: "PENDING", Reason: "Dependency", ExitCode: "0:0", StdOut: "/x/a=b.out"},
		{JobID: "5", Index: 6, State: "PENDING", Reason: "Dependency", ExitCode: "0:0", StdOut: "/x/a=b.out"},
		{JobID: "3", Index: -1, State: "PENDING", Reason: ReasonNeverSatisfied, ExitCode: "0:0", StdOut: "/tmp/sl test/out/tst-b-3.out"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseShow\n got %+v\nwant %+v", got, want)
	}
	if got[0].Name() != "1_1" || got[5].Name() != "3" {
		t.Errorf("names %s %s", got[0].Name(), got[5].Name())
	}
	for _, bad := range []string{"JobName=x JobState=RUNNING", "JobId=1 JobName=x", "JobId=1 ArrayJobId=1 ArrayTaskId=x JobState=RUNNING"} {
		if _, err := ParseShow("JobId=3 JobState=RUNNING\n" + bad); err == nil {
			t.Errorf("ParseShow(%q) accepted", bad)
		} else {
			wantIn(t, "error", err.Error(), "scontrol show job", "record 2")
		}
	}
}

func TestParseQueue(t *testing.T) {
	got, err := ParseQueue("CLUSTER: local\n1|0|RUNNING|None\n1|1|PENDING|Resources\n3|N/A|PENDING|DependencyNeverSatisfied\n\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Task{
		{JobID: "1", Index: 0, State: "RUNNING", Reason: "None"},
		{JobID: "1", Index: 1, State: "PENDING", Reason: "Resources"},
		{JobID: "3", Index: -1, State: "PENDING", Reason: ReasonNeverSatisfied},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseQueue\n got %+v\nwant %+v", got, want)
	}
	if !got[0].Active() || !got[1].Active() || got[2].Active() || got[0].Failed() || got[1].Failed() || !got[2].Failed() {
		t.Errorf("Active/Failed of %+v", got)
	}
	for _, bad := range []string{"1|0|RUNNING", "x|0|RUNNING|None", "1|-1|RUNNING|None", "1|a|RUNNING|None", "1|0||None"} {
		_, err := ParseQueue("2|N/A|RUNNING|None\n" + bad)
		if err == nil {
			t.Errorf("ParseQueue(%q) accepted", bad)
			continue
		}
		wantIn(t, "error", err.Error(), "line 2", bad)
	}
}

func TestTaskStates(t *testing.T) {
	for _, c := range []struct {
		state, reason  string
		active, failed bool
	}{
		{"RUNNING", "None", true, false},
		{"PENDING", "Dependency", true, false},
		{"PENDING", ReasonNeverSatisfied, false, true},
		{"COMPLETING", "", true, false},
		{"COMPLETED", "None", false, false},
		{"FAILED", "NonZeroExitCode", false, true},
		{"CANCELLED", "None", false, true},
		{"TIMEOUT", "TimeLimit", false, true},
		{"OUT_OF_MEMORY", "", false, true},
		{"", "", false, false},
	} {
		tk := Task{State: c.state, Reason: c.reason}
		if tk.Active() != c.active || tk.Failed() != c.failed {
			t.Errorf("%s (%s): active %v failed %v, want %v %v", c.state, c.reason, tk.Active(), tk.Failed(), c.active, c.failed)
		}
	}
}

// TestArray: FormatArray then ParseArray gives the set back, for random
// sets; ranges are as short as they can be; bad specs are errors.
func TestArray(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		var ids []int
		for n := 0; n < 40; n++ {
			if r.IntN(3) > 0 {
				ids = append(ids, n)
			}
		}
		s := FormatArray(ids)
		back, err := ParseArray(s)
		if err != nil || !slices.Equal(back, ids) && len(ids) > 0 {
			t.Fatalf("ParseArray(FormatArray(%v) = %q) = %v, %v", ids, s, back, err)
		}
		// one part per run of consecutive IDs
		runs := 0
		for k := range ids {
			if k == 0 || ids[k] != ids[k-1]+1 {
				runs++
			}
		}
		if len(ids) > 0 && strings.Count(s, ",")+1 != runs {
			t.Errorf("FormatArray(%v) = %q: not %d ranges", ids, s, runs)
		}
	}
	if got, err := ParseArray("5,1-3,2%4"); err != nil || !slices.Equal(got, []int{1, 2, 3, 5}) {
		t.Errorf("ParseArray(5,1-3,2%%4) = %v, %v", got, err)
	}
	if s := FormatArray([]int{0, 1, 2, 3, 5, 7, 8}); s != "0-3,5,7-8" {
		t.Errorf("FormatArray = %q", s)
	}
	for _, bad := range []string{"", "%2", "3-1", "a", "1,,2", "-1", "1-"} {
		if _, err := ParseArray(bad); err == nil {
			t.Errorf("ParseArray(%q) accepted", bad)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/a/b-c_d.e": "/a/b-c_d.e", "a b": "'a b'", "": "''", "it's": `'it'\''s'`, "$HOME": "'$HOME'", "--x=1:2,3": "--x=1:2,3",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	if s := ShellLine([]string{"a", "b c"}); s != "a 'b c'" {
		t.Errorf("ShellLine = %s", s)
	}
	if _, err := (Script{Name: "x", Output: "/a\"b"}).Bytes(); err == nil || !strings.Contains(err.Error(), "double quote") {
		t.Errorf("an output path with a double quote: %v", err)
	}
}

// fakeCommands puts shell scripts named after Slurm's commands on PATH.
func fakeCommands(t *testing.T, scripts map[string]string) {
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}

// TestCLI: the commands run with the arguments of the contract, their
// output is parsed, a failure carries stderr, a missing command names
// itself, and "Invalid job id" is no job rather than an error.
func TestCLI(t *testing.T) {
	ctx := context.Background()
	sh, err := os.ReadFile("/bin/sh")
	if err != nil || len(sh) == 0 {
		t.Skip("no /bin/sh")
	}
	log := filepath.Join(t.TempDir(), "log")
	fakeCommands(t, map[string]string{
		"sbatch":   `echo "sbatch $*" >> ` + log + `; echo "55;c"`,
		"squeue":   `echo "squeue $*" >> ` + log + `; echo "55|0|RUNNING|None"; echo "55|1|PENDING|Priority"`,
		"scontrol": `echo "scontrol $*" >> ` + log + `; echo "JobId=56 ArrayJobId=55 ArrayTaskId=0 JobState=COMPLETED Reason=None ExitCode=0:0"`,
		"scancel":  `echo "scancel $*" >> ` + log,
	})
	var c CLI
	id, err := c.Sbatch(ctx, []string{"--parsable", "/a b/x.sbatch"})
	if err != nil || id != (JobID{"55", "c"}) {
		t.Errorf("Sbatch = %+v, %v", id, err)
	}
	q, err := c.Queue(ctx, []JobID{{"55", ""}, {"57", ""}, {"55", ""}, {"60", "other"}})
	if err != nil || len(q) != 4 || q[1].State != "PENDING" {
		t.Errorf("Queue = %+v, %v", q, err)
	}
	s, err := c.Show(ctx, JobID{"55", "c"})
	if err != nil || len(s) != 1 || s[0].JobID != "55" || s[0].State != "COMPLETED" {
		t.Errorf("Show = %+v, %v", s, err)
	}
	if err := c.Cancel(ctx, "c", []string{"55_1", "57"}); err != nil {
		t.Error(err)
	}
	if err := c.Cancel(ctx, "", nil); err != nil {
		t.Error(err)
	}
	b, _ := os.ReadFile(log)
	want := "sbatch --parsable /a b/x.sbatch\n" +
		"squeue -h -r -j 55,57 -o %F|%K|%T|%r\n" +
		"squeue -h -r -j 60 -o %F|%K|%T|%r -M other\n" +
		"scontrol -M c -o show job 55\n" +
		"scancel -M c 55_1 57\n"
	if string(b) != want {
		t.Errorf("commands run:\n%s\nwant\n%s", b, want)
	}

	fakeCommands(t, map[string]string{
		"sbatch":   `echo "sbatch: error: Batch job submission failed: Requested time limit is invalid" >&2; exit 1`,
		"squeue":   `echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1`,
		"scontrol": `echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1`,
		"scancel":  `echo "scancel: error: Kill job error on job id 9: Access denied" >&2; exit 1`,
	})
	_, err = c.Sbatch(ctx, []string{"--parsable", "x"})
	var ce *CommandError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "Requested time limit is invalid") || !strings.Contains(err.Error(), "sbatch --parsable x") {
		t.Errorf("failing sbatch: %v", err)
	}
	if q, err := c.Queue(ctx, []JobID{{"9", ""}}); err != nil || len(q) != 0 {
		t.Errorf("squeue of forgotten jobs: %+v, %v", q, err)
	}
	if s, err := c.Show(ctx, JobID{"9", ""}); err != nil || len(s) != 0 {
		t.Errorf("scontrol of a forgotten job: %+v, %v", s, err)
	}
	if err := c.Cancel(ctx, "", []string{"9"}); err == nil || !strings.Contains(err.Error(), "Access denied") {
		t.Errorf("failing scancel: %v", err)
	}
	fakeCommands(t, map[string]string{
		"sbatch": `echo "Submitted batch job 5"`,
		"squeue": `echo "garbage"`,
	})
	if _, err := c.Sbatch(ctx, nil); err == nil || !strings.Contains(err.Error(), `"Submitted batch job 5"`) {
		t.Errorf("sbatch without --parsable's output: %v", err)
	}
	if _, err := c.Queue(ctx, []JobID{{"1", ""}}); err == nil || !strings.Contains(err.Error(), "garbage") {
		t.Errorf("squeue garbage: %v", err)
	}
	if _, err := c.Show(ctx, JobID{"1", ""}); !errors.Is(err, ErrNoSlurm) || !strings.Contains(err.Error(), "scontrol") {
		t.Errorf("scontrol missing: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err = c.Sbatch(ctx, []string{"--parsable", "x"})
	if !errors.Is(err, ErrNoSlurm) || !strings.Contains(err.Error(), "sbatch: not found on PATH") {
		t.Errorf("sbatch missing: %v", err)
	}
}
