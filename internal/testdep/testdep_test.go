package testdep

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestRequired: the variable's list, blanks and empty entries ignored, and
// an unknown name refused with the accepted ones.
func TestRequired(t *testing.T) {
	for _, c := range []struct {
		env  string
		want string
		err  string
	}{
		{"", "", ""},
		{"python,torch", "python torch", ""},
		{" chromium , ,slurm", "chromium slurm", ""},
		{"python,pytorch", "", `unknown dependency "pytorch" (accepted: python, torch, chromium, slurm)`},
	} {
		t.Setenv(Env, c.env)
		got, err := Required()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s=%q: error %v, want %q", Env, c.env, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("%s=%q: %q, %v; want %q", Env, c.env, got, err, c.want)
		}
	}
}

// TestSkip runs this test binary again on helperSkip under several
// values of UAXAI_REQUIRE: a dependency not listed skips, a listed one
// fails naming the dependency and why it is missing, an unknown listed
// name or an unknown dependency fails.
func TestSkip(t *testing.T) {
	for _, c := range []struct {
		env, dep string
		verdict  string // the line go test prints for the helper
		says     string
	}{
		{"", Torch, "--- SKIP", "no torch here"},
		{"python,chromium", Torch, "--- SKIP", "no torch here"},
		{"python,torch", Torch, "--- FAIL", "torch is required (UAXAI_REQUIRE=python,torch) but missing: no torch here"},
		{"slurm", Slurm, "--- FAIL", "slurm is required"},
		{"pyhton", Python, "--- FAIL", `unknown dependency "pyhton"`},
		{"", "cuda", "--- FAIL", `testdep.Skip: unknown dependency "cuda"`},
		{"", "lacking:" + Python, "--- PASS", "no python here"},
		{"chromium,python", "lacking:" + Python, "--- FAIL", "python is required (UAXAI_REQUIRE=chromium,python) but missing: no python here"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperSkip$", "-test.v")
		cmd.Env = append(os.Environ(), Env+"="+c.env, "TESTDEP_HELPER_DEP="+c.dep)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), c.verdict+": TestHelperSkip") || !strings.Contains(string(out), c.says) {
			t.Errorf("%s=%q, Skip(%q): want %q and %q in:\n%s", Env, c.env, c.dep, c.verdict, c.says, out)
		}
	}
}

// TestHelperSkip is TestSkip's child: Skip for $TESTDEP_HELPER_DEP, or
// Lacking for "lacking:" and a dependency.
func TestHelperSkip(t *testing.T) {
	dep := os.Getenv("TESTDEP_HELPER_DEP")
	if dep == "" {
		t.Skip("helper of TestSkip")
	}
	if d, ok := strings.CutPrefix(dep, "lacking:"); ok {
		Lacking(t, d, "no ", d, " here")
		return
	}
	Skip(t, dep, "no ", dep, " here")
	t.Error("Skip returned")
}

// recorder is a testing.TB whose Fatal, Fatalf and Skip record their
// message and end the goroutine, as testing's do, without ending the test.
type recorder struct {
	testing.TB
	verdict, msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatal(args ...any) {
	r.verdict, r.msg = "fail", fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.verdict, r.msg = "fail", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any) {
	r.verdict, r.msg = "skip", fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Log(args ...any) { r.verdict, r.msg = "log", fmt.Sprint(args...) }

// TestInProcess is TestSkip's table in this process, through a recorder,
// for Skip and Lacking alike.
func TestInProcess(t *testing.T) {
	for _, c := range []struct {
		env, fn, dep, verdict, says string
	}{
		{"", "Skip", Torch, "skip", "no torch here"},
		{"python", "Skip", Torch, "skip", "no torch here"},
		{"torch", "Skip", Torch, "fail", "torch is required (UAXAI_REQUIRE=torch) but missing: no torch here"},
		{"", "Skip", "cuda", "fail", `testdep.Skip: unknown dependency "cuda" (accepted: python, torch, chromium, slurm)`},
		{"x", "Skip", Python, "fail", `unknown dependency "x"`},
		{"", "Lacking", Chromium, "log", "no chromium here"},
		{"chromium", "Lacking", Chromium, "fail", "chromium is required"},
		{"", "Lacking", "gpu", "fail", `testdep.Lacking: unknown dependency "gpu"`},
	} {
		t.Setenv(Env, c.env)
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if c.fn == "Skip" {
				Skip(r, c.dep, "no ", c.dep, " here")
				r.verdict = "returned"
			} else {
				Lacking(r, c.dep, "no ", c.dep, " here")
			}
		}()
		<-done
		if r.verdict != c.verdict || !strings.Contains(r.msg, c.says) {
			t.Errorf("%s=%q %s(%q): %s %q, want %s containing %q", Env, c.env, c.fn, c.dep, r.verdict, r.msg, c.verdict, c.says)
		}
	}
}
