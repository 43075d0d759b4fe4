package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sameResults compares the result files of two run directories.
func sameResults(t *testing.T, what, got, want string) {
	t.Helper()
	for _, f := range []string{"results.json", "records.csv", "tables.md"} {
		a, err := os.ReadFile(filepath.Join(got, f))
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		b, err := os.ReadFile(filepath.Join(want, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: %s differs from %s's", what, f, want)
		}
	}
}

func uaxai(t *testing.T, exe string, args ...string) string {
	t.Helper()
	return uaxaiEnv(t, exe, nil, args...)
}

// uaxaiEnv is uaxai with env added to the environment.
func uaxaiEnv(t *testing.T, exe string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("uaxai %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return string(b)
}

// TestKilledRunResumes: a run killed with SIGKILL halfway (after two of
// its explain units), with one of its unit files then cut short as by a
// power cut, is finished by `uaxai run --resume`, which redoes only what
// is missing and ends in the same bytes as an uninterrupted run. Four
// shards run in a shuffled order, then `uaxai merge`, give them too, with
// the odd shards on the portable kernels (UAXAI_KERNELS) and the even ones
// on the CPU's best: the fits and maps of either path are the same bits.
func TestKilledRunResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel() // a slow run of the binary: see shared_test.go
	exe := buildUaxai(t)
	dir := t.TempDir()
	// 40 records a class make six explain units; stride 10 keeps each
	// cheap (stride 2 made the test three minutes of the package's at
	// load average 20), long enough for the kill to land between them.
	rec := writeRecipe(t, dir, 40, "occlusion", "stride = 10")
	whole := filepath.Join(dir, "whole")
	uaxai(t, exe, "run", rec, "--run-dir", whole, "--workers", "1", "--no-cache")

	killed := filepath.Join(dir, "killed")
	cmd := exec.Command(exe, "run", rec, "--run-dir", killed, "--workers", "1", "--no-cache")
	// A process killed with SIGKILL cannot remove its plugins' socket
	// directories (go-plugin's plugin-dir*): they go to the test's TMPDIR.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		units, _ := filepath.Glob(filepath.Join(killed, "units", "explain-*.unit"))
		if len(units) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no explain unit after 5 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	done, _ := filepath.Glob(filepath.Join(killed, "units", "*.unit"))
	plan := string(must(os.ReadFile(filepath.Join(killed, "units", "plan.json"))))
	if total := strings.Count(plan, `"name"`); len(done) >= total {
		t.Fatalf("the run was killed after all its %d units", total)
	}
	// A power cut: the last unit written is cut short.
	last := done[len(done)-1]
	b := must(os.ReadFile(last))
	if err := os.WriteFile(last, b[:len(b)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	mtimes := map[string]time.Time{}
	for _, u := range done[:len(done)-1] {
		st, _ := os.Stat(u)
		mtimes[u] = st.ModTime()
	}
	out := uaxai(t, exe, "run", "--resume", killed, "--workers", "2", "--no-cache")
	if !strings.Contains(out, "run directory: "+killed) {
		t.Errorf("resume output:\n%s", out)
	}
	for u, m := range mtimes {
		if st, _ := os.Stat(u); !st.ModTime().Equal(m) {
			t.Errorf("unit %s was done again", filepath.Base(u))
		}
	}
	if _, err := os.Stat(last + ".corrupt"); err != nil {
		t.Errorf("the unit cut short was not set aside: %v", err)
	}
	sameResults(t, "resumed after SIGKILL", killed, whole)

	sharded := filepath.Join(dir, "sharded")
	for _, i := range rand.New(rand.NewPCG(5, 6)).Perm(4) {
		env := []string{"UAXAI_KERNELS="}
		if i%2 == 1 {
			env = []string{"UAXAI_KERNELS=portable"}
		}
		uaxaiEnv(t, exe, env, "run", rec, "--run-dir", sharded, "--shard", strconv.Itoa(i)+"/4", "--workers", "1", "--no-cache")
	}
	for i := 1; i < 4; i += 2 {
		st := string(must(os.ReadFile(filepath.Join(sharded, "shards", "all-"+strconv.Itoa(i)+"-of-4.json"))))
		if !strings.Contains(st, `"kernels": "portable"`) {
			t.Errorf("shard %d's status file does not record the portable kernels:\n%s", i, st)
		}
	}
	uaxai(t, exe, "merge", sharded)
	sameResults(t, "4 shards merged", sharded, whole)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestShardFlags: the flags of sharded runs are checked before anything
// runs, with errors that say what is accepted.
func TestShardFlags(t *testing.T) {
	dir := t.TempDir()
	rec := writeRecipe(t, dir, 2, "occlusion", "stride = 10")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", rec, "--shard", "4/4", "--run-dir", dir}, "accepted: i/n with 0 <= i < n"},
		{[]string{"run", rec, "--shard", "x", "--run-dir", dir}, "accepted: i/n"},
		{[]string{"run", rec, "--shard", "0/2"}, "need --run-dir"},
		{[]string{"run", rec, "--shard", "0/2", "--run-dir", dir, "--units", "train"}, "accepted: fit, explain or all"},
		{[]string{"run", rec, "--units", "fit"}, "--units goes with --shard"},
		{[]string{"run", "--resume", dir, rec}, "takes no recipe"},
		{[]string{"run", "--resume", dir, "--run-dir", dir}, "takes no recipe"},
		{[]string{"run", rec, "--prepare", "--run-dir", dir, "--shard", "0/2"}, "takes no --shard"},
		{[]string{"merge"}, "Usage: uaxai merge [flags] RUN_DIR"},
		{[]string{"merge", dir}, "recipe.toml"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("uaxai %s: exit %d, stderr %q; want %q", strings.Join(c.args, " "), code, errb.String(), c.want)
		}
	}
}
