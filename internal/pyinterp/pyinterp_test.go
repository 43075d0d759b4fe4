package pyinterp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uaxai/uaxai/internal/pyinterp"
	"github.com/uaxai/uaxai/internal/pythontest"
)

// TestShebangInterpreter: the interpreter a #! line names.
func TestShebangInterpreter(t *testing.T) {
	for head, want := range map[string]string{
		"#!/usr/bin/env python3\nimport sys\n":        "python3",
		"#!/usr/bin/env -S python3 -X dev\n":          "python3",
		"#!/usr/bin/env -i PYTHONPATH=x python3.11\n": "python3.11",
		"#!/usr/bin/python3.11 -u\n":                  "/usr/bin/python3.11",
		"#! /opt/Python-3/bin/PYTHON":                 "/opt/Python-3/bin/PYTHON",
		"#!/usr/bin/env\n":                            "",
		"#!\n":                                        "",
		"import sys\n":                                "",
	} {
		if got := pyinterp.Shebang([]byte(head)); got != want {
			t.Errorf("Shebang(%q) = %q, want %q", head, got, want)
		}
	}
}

// TestShebangScript: which executables Script takes for Python scripts,
// and the interpreter it reports.
func TestShebangScript(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, head string
		isPy       bool
		shebang    string
	}{
		{"env-python", "#!/usr/bin/env python3\nprint(1)\n", true, "python3"},
		{"upper", "#!/opt/Python-3/bin/PYTHON -u\n", true, "/opt/Python-3/bin/PYTHON"},
		{"plain.py", "print(1)\n", true, ""},
		{"sh", "#!/bin/sh\n# python is mentioned on the second line only\n", false, ""},
		{"sh.py", "#!/bin/sh\nexec python3 x\n", true, ""},
		{"frozen.py", "\x7fELF\x02\x01\x01python", false, ""},
		{"binary", "MZ python", false, ""},
		{"empty", "", false, ""},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.head), 0o755); err != nil {
			t.Fatal(err)
		}
		isPy, sb, err := pyinterp.Script(path)
		if err != nil || isPy != c.isPy || sb != c.shebang {
			t.Errorf("Script(%s) = %v, %q, %v; want %v, %q", c.name, isPy, sb, err, c.isPy, c.shebang)
		}
	}
	if _, _, err := pyinterp.Script(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Script of a missing file: %v", err)
	}
}

// TestInterpreterChoose: with a python3 without the modules first on
// PATH, Choose passes over a missing $UAXAI_PYTHON and the shim (tried
// once, though both the #! line and the defaults name it) and takes
// /usr/bin/python3; with no good interpreter, its error lists each one
// tried with what it lacks, the apt command and $UAXAI_PYTHON.
func TestInterpreterChoose(t *testing.T) {
	shim := pythontest.BareShim(t)
	missing := filepath.Join(t.TempDir(), "no-python")
	t.Setenv(pyinterp.Env, missing)
	cands := pyinterp.Candidates("python3")
	want := []pyinterp.Candidate{{"$UAXAI_PYTHON", missing}, {"the #! line's", "python3"}, {"PATH's", "python3"}, {"Debian's", "/usr/bin/python3"}}
	if fmt.Sprint(cands) != fmt.Sprint(want) {
		t.Fatalf("Candidates = %v, want %v", cands, want)
	}
	ctx := context.Background()
	lacks := "lacks numpy (ModuleNotFoundError: No module named 'numpy'), grpc (ModuleNotFoundError: No module named 'grpc'), google.protobuf (ModuleNotFoundError: No module named 'google')"
	got, skipped, err := pyinterp.Choose(ctx, "x", cands)
	wantSkipped := []string{
		"$UAXAI_PYTHON " + missing + ": not found (stat " + missing + ": no such file or directory)",
		"the #! line's python3 (" + shim + "): " + lacks,
	}
	if err != nil || got != pythontest.Python || fmt.Sprint(skipped) != fmt.Sprint(wantSkipped) {
		t.Errorf("Choose = %q, %q, %v; want %s after %q", got, skipped, err, pythontest.Python, wantSkipped)
	}

	// No good interpreter: a second bare one in place of /usr/bin/python3.
	bare := filepath.Join(t.TempDir(), "bare-python")
	if err := os.WriteFile(bare, []byte(pythontest.ShimScript), 0o755); err != nil {
		t.Fatal(err)
	}
	defer pyinterp.SetDefaults([]string{"python3", bare})()
	got, _, err = pyinterp.Choose(ctx, "the plugin", pyinterp.Candidates("python3"))
	var ne *pyinterp.NoInterpreterError
	if !errors.As(err, &ne) || got != "" {
		t.Fatalf("Choose with no good interpreter = %q, %v", got, err)
	}
	t.Log(err)
	msg := err.Error()
	for _, w := range []string{
		"starting the plugin: it is a Python plugin, and no Python interpreter tried has numpy, grpcio and protobuf:",
		"\n\t" + wantSkipped[0] + "\n",
		"\n\t" + wantSkipped[1] + "\n",
		"\n\tDebian's " + bare + ": " + lacks + "\n",
		"Debian: apt-get install python3-numpy python3-grpcio python3-protobuf",
		"name an interpreter that has them in $UAXAI_PYTHON",
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("the error lacks %q", w)
		}
	}
	if n := strings.Count(msg, "\n\t"); n != 3 {
		t.Errorf("the error lists %d interpreters, want 3", n)
	}
	if strings.Contains(msg, "plugin.toml") {
		t.Errorf("without a Manifest the error names plugin.toml")
	}
	ne.Manifest = "plugin.toml"
	if w := `in $UAXAI_PYTHON or in the plugin's plugin.toml (python = "/path/to/python3")`; !strings.HasSuffix(err.Error(), w) {
		t.Errorf("with a Manifest the error does not end in %q:\n%s", w, err)
	}
}

// TestPythonProbeHangs: an interpreter that never answers is killed
// with its process group at the probe's timeout; concurrent callers
// share one probe, later ones get its answer without probing again, and
// a caller whose context ends stops waiting without ending the probe.
func TestPythonProbeHangs(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	defer pyinterp.SetProbeTimeout(time.Second)()
	dir := t.TempDir()
	hang := filepath.Join(dir, "hanging-python")
	count := filepath.Join(dir, "probes")
	// The sleeper is the shell's child (not exec'd), a shell whose
	// command line names hang: only killing the group ends it. Each run
	// appends a line to count.
	src := fmt.Sprintf("#!/bin/sh\necho probe >> %q\n/bin/sh -c 'sleep 600; :' %q\n", count, hang)
	if err := os.WriteFile(hang, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// A caller that gives up at once.
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := pyinterp.Probe(gone, hang); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("Probe with an ended context: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = pyinterp.Probe(context.Background(), hang)
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for _, err := range errs {
		if w := "no answer within 1s to `hanging-python -c 'import numpy, grpc, google.protobuf'` (killed)"; err == nil || err.Error() != w {
			t.Errorf("Probe of a hanging interpreter: %v; want %q", err, w)
		}
	}
	// Not before the timeout; and long before the interpreter's 600 s
	// sleep ends, however loaded the machine: the timeout ended it.
	if took < time.Second || took > 5*time.Minute {
		t.Errorf("probing took %s; want the 1s timeout, and not the hanging interpreter's 600s", took)
	}
	if left := sleepers(t, hang); len(left) > 0 {
		t.Errorf("the hanging probe left processes %v", left)
	}
	// The kept answer: the count below shows that it did not probe again.
	if err := pyinterp.Probe(context.Background(), hang); err == nil {
		t.Error("probing again: no error; want the kept answer")
	}
	b, err := os.ReadFile(count)
	if n := strings.Count(string(b), "probe"); err != nil || n != 1 {
		t.Errorf("the hanging interpreter ran %d times (%v), want once", n, err)
	}
}

// sleepers lists the pids of live processes whose command line holds
// marker, waiting up to a minute for them to go (a killed process is
// gone at once on an idle machine, in seconds on a loaded one).
func sleepers(t *testing.T, marker string) []string {
	t.Helper()
	var live []string
	for range 1200 {
		live = live[:0]
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil || !strings.Contains(string(b), marker) {
				continue
			}
			stat, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
			if _, rest, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(rest, "Z") {
				continue // a zombie: dead, not yet reaped by its parent
			}
			live = append(live, filepath.Base(filepath.Dir(p)))
		}
		if len(live) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return live
}

// TestInterpreterProbeAnswers: an interpreter that exits otherwise than
// the probe script does is reported with its output; one that is no
// program is reported as such.
func TestInterpreterProbeAnswers(t *testing.T) {
	dir := t.TempDir()
	crash := filepath.Join(dir, "crashing-python")
	if err := os.WriteFile(crash, []byte("#!/bin/sh\necho 'Fatal Python error: init' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := pyinterp.Probe(ctx, crash); err == nil || err.Error() != "does not run the import check: exit status 3: Fatal Python error: init" {
		t.Errorf("Probe of a crashing interpreter: %v", err)
	}
	text := filepath.Join(dir, "not-a-program")
	if err := os.WriteFile(text, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := pyinterp.Probe(ctx, text); err == nil || !errors.Is(err, os.ErrPermission) {
		t.Errorf("Probe of a file that is not executable: %v", err)
	}
	if _, err := exec.LookPath("true"); err == nil {
		if err := pyinterp.Probe(ctx, "/bin/true"); err != nil {
			t.Errorf("Probe of an interpreter that exits 0: %v (taken as one that has the modules)", err)
		}
	}
}

// TestRequires: the "# uaxai-requires:" lines of a plugin's head name its
// own modules; a name that is not a module is an error; a line the head
// cuts short does not count.
func TestRequires(t *testing.T) {
	for _, c := range []struct {
		head string
		want []string
		err  string
	}{
		{"#!/usr/bin/env python3\n# uaxai-requires: torch\n\"\"\"doc\"\"\"\n", []string{"torch"}, ""},
		{"#!/usr/bin/env python3\n  # uaxai-requires: torch, scipy.signal sklearn\n# uaxai-requires: captum\n", []string{"torch", "scipy.signal", "sklearn", "captum"}, ""},
		{"#!/usr/bin/env python3\nimport torch\n", nil, ""},
		{"# uaxai-requires: torch-cpu\n", nil, `"torch-cpu" in "# uaxai-requires: torch-cpu" is not a Python module name`},
		{"# uaxai-requires: 2d\n", nil, "is not a Python module name"},
		{"# uaxai-requires: a..b\n", nil, "is not a Python module name"},
		{strings.Repeat("#\n", (pyinterp.HeadMax-20)/2) + "# uaxai-requires: torchvision"[:pyinterp.HeadMax-(pyinterp.HeadMax-20)/2*2], nil, ""},
	} {
		got, err := pyinterp.Requires([]byte(c.head))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Requires(%q) = %v, %v; want an error with %q", c.head, got, err, c.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Requires(%q) = %v, %v; want %v", c.head, got, err, c.want)
		}
	}
}

// TestChooseRequires: an interpreter with the kit's modules but without
// a module the plugin requires is passed over for one that has it; the
// same interpreter is chosen when nothing more is required; with no
// interpreter that has it, the error names the module and how to get it.
func TestChooseRequires(t *testing.T) {
	pythontest.Need(t)
	// A python3 that has the kit's modules and not "uaxai_probe_only":
	// /usr/bin/python3 itself. The module exists only on a PYTHONPATH the
	// second interpreter (a shell script around it) sets.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "uaxai_probe_only.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	with := filepath.Join(t.TempDir(), "python-with")
	script := "#!/bin/sh\nPYTHONPATH=" + dir + " exec " + pythontest.Python + " \"$@\"\n"
	if err := os.WriteFile(with, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cands := []pyinterp.Candidate{{"first", pythontest.Python}, {"second", with}}
	ctx := context.Background()
	got, _, err := pyinterp.Choose(ctx, "p", cands)
	if err != nil || got != pythontest.Python {
		t.Errorf("nothing required: %q, %v; want %s", got, err, pythontest.Python)
	}
	got, skipped, err := pyinterp.Choose(ctx, "p", cands, "uaxai_probe_only")
	if err != nil || got != with || len(skipped) != 1 || !strings.Contains(skipped[0], "lacks uaxai_probe_only (ModuleNotFoundError") {
		t.Errorf("uaxai_probe_only required: %q, %q, %v; want %s after passing over %s", got, skipped, err, with, pythontest.Python)
	}
	_, _, err = pyinterp.Choose(ctx, "the plugin", cands[:1], "uaxai_probe_only")
	if err == nil || !strings.Contains(err.Error(), "what the plugin requires (# uaxai-requires), uaxai_probe_only") {
		t.Errorf("no interpreter has it: %v", err)
	}
}

// TestIdentifier: Python's ASCII identifiers, at each edge of the
// character ranges.
func TestIdentifier(t *testing.T) {
	for s, want := range map[string]bool{
		"a": true, "z": true, "A": true, "Z": true, "_": true, "a0": true, "a9": true, "_Net_2": true,
		"": false, "0a": false, "9a": false, "a@": false, "a[": false, "a`": false, "a{": false, "a/": false, "a:": false,
		"a-b": false, "a.b": false, "é": false,
	} {
		if got := pyinterp.Identifier(s); got != want {
			t.Errorf("Identifier(%q) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{"a.b": true, "a": true, "a..b": false, ".a": false, "a.": false, "a.0b": false} {
		if got := pyinterp.DottedName(s); got != want {
			t.Errorf("DottedName(%q) = %v, want %v", s, got, want)
		}
	}
}
