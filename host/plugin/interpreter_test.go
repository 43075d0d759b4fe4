package plugin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/uaxai/uaxai/internal/pyinterp"
	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/sdk"
)

// Which interpreter runs a Python plugin (python.go, internal/pyinterp): a python3 first on
// PATH that lacks the kit's modules (pythontest.BareShim) is passed over.

// echoDir makes a plugin directory holding python-echo as a symbolic
// link (the script finds the kit from its real location) and returns the
// directory and the script's absolute path.
func echoDir(t *testing.T) (dir, script string) {
	t.Helper()
	script, err := filepath.Abs(pythonEcho)
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if err := os.Symlink(script, filepath.Join(dir, "uaxai-explainer-python-echo")); err != nil {
		t.Fatal(err)
	}
	return dir, script
}

// cmdline is the command line of process pid.
func cmdline(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("reading the plugin's command line: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// runsEcho starts explainer.python-echo from m, checks a batch against
// its closed form and returns the command line of its process.
func runsEcho(t *testing.T, m *Manager) []string {
	t.Helper()
	ctx := context.Background()
	e, err := m.Explainer(ctx, "explainer.python-echo")
	if err != nil {
		t.Fatal(err)
	}
	req := request(sdk.Config{"scale": 2.0})
	maps, err := explain(t, ctx, e, req)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	for i, tg := range req.Targets {
		if want := echoMap(req.X[i*n:(i+1)*n], tg, 2); !reflect.DeepEqual(maps[i], want) {
			t.Errorf("input %d: %v, want %v", i, maps[i], want)
		}
	}
	return cmdline(t, pidOf(t, e))
}

// pythonLink makes a symbolic link to pythontest.Python in a new
// directory: an interpreter with the modules, told apart from Python by
// its path (a process's argv[0]).
func pythonLink(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(pythontest.Python, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPythonShimFirstOnPath: with a python3 without numpy first on PATH,
// the plugin's own #! line fails (the kit says what is missing), and the
// host still runs the plugin, under /usr/bin/python3.
func TestPythonShimFirstOnPath(t *testing.T) {
	shim := pythontest.BareShim(t)
	t.Setenv(PythonEnv, "")
	dir, _ := echoDir(t)
	if got, err := exec.LookPath("python3"); err != nil || got != shim {
		t.Fatalf("python3 on PATH is %q, %v; want the shim %s", got, err, shim)
	}
	// Run directly, the script gets the shim and stops with the kit's
	// message (the host's choice is what makes it run).
	out, err := exec.Command(filepath.Join(dir, "uaxai-explainer-python-echo")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "uaxai_plugin needs numpy, grpcio and protobuf, and the interpreter") ||
		!strings.Contains(string(out), "lacks") {
		t.Fatalf("the script run by its #! line under the shim: %v\n%s", err, out)
	}

	logs := &syncBuffer{}
	m := newManager(t, Options{Dirs: []string{dir}, Limits: patientLimits(),
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: logs})})
	if got := runsEcho(t, m); len(got) != 2 || got[0] != pythontest.Python || got[1] != filepath.Join(dir, "uaxai-explainer-python-echo") {
		t.Errorf("the plugin runs as %q, want [%s %s]", got, pythontest.Python, filepath.Join(dir, "uaxai-explainer-python-echo"))
	}
	if !strings.Contains(logs.String(), "interpreter="+pythontest.Python) {
		t.Errorf("the host's debug log does not name the interpreter:\n%s", logs.String())
	}
	// uaxai plugins lists it as Python, with its version (it started).
	list, err := m.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if e.ID == "explainer.python-echo" && (e.Language != LangPython || e.Version != "0.1.0" || e.Problem != "") {
			t.Errorf("List entry %+v", e)
		}
	}
}

// TestPythonNoInterpreter: when no interpreter has the modules, starting
// the plugin fails with an error that names the plugin, lists every
// interpreter tried with the modules it lacks, and says what to install
// and which variable names an interpreter; List shows the plugin as
// failing to start.
func TestPythonNoInterpreter(t *testing.T) {
	shim := pythontest.BareShim(t)
	dir, _ := echoDir(t)
	// A second interpreter without the modules, at an absolute path, in
	// place of /usr/bin/python3; $UAXAI_PYTHON names one that is missing.
	bare := filepath.Join(t.TempDir(), "bare-python")
	if err := os.WriteFile(bare, []byte(pythontest.ShimScript), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-python")
	t.Setenv(PythonEnv, missing)
	defer pyinterp.SetDefaults([]string{"python3", bare})()

	m := newManager(t, Options{Dirs: []string{dir}, Limits: patientLimits()})
	var err error
	within(t, "starting", func() { _, err = m.Explainer(context.Background(), "explainer.python-echo") })
	if err == nil {
		t.Fatal("the plugin started without an interpreter that has the modules")
	}
	t.Log(err)
	lacks := "lacks numpy (ModuleNotFoundError: No module named 'numpy'), grpc (ModuleNotFoundError: No module named 'grpc'), google.protobuf (ModuleNotFoundError: No module named 'google')"
	for _, want := range []string{
		`starting plugin "explainer.python-echo" (` + filepath.Join(dir, "uaxai-explainer-python-echo") + `): it is a Python plugin, and no Python interpreter tried has numpy, grpcio and protobuf:`,
		"\n\t$UAXAI_PYTHON " + missing + ": not found (stat " + missing + ": no such file or directory)\n",
		"\n\tthe #! line's python3 (" + shim + "): " + lacks + "\n",
		"\n\tDebian's " + bare + ": " + lacks + "\n",
		"Debian: apt-get install python3-numpy python3-grpcio python3-protobuf",
		"$UAXAI_PYTHON", `plugin.toml (python = "/path/to/python3")`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q", want)
		}
	}
	if n := strings.Count(err.Error(), "\n\t"); n != 3 {
		t.Errorf("the error lists %d interpreters, want 3 (PATH's python3 is the #! line's, tried once)", n)
	}
	list, lerr := m.List(context.Background())
	if lerr == nil || !strings.Contains(lerr.Error(), "no Python interpreter tried has numpy") {
		t.Errorf("List's error: %v", lerr)
	}
	for _, e := range list {
		if e.ID == "explainer.python-echo" && e.Problem != "failed to start (see the error)" {
			t.Errorf("List entry %+v", e)
		}
	}
}

// TestPythonEnvInterpreter: $UAXAI_PYTHON comes before python3 on PATH
// and /usr/bin/python3; one that lacks the modules is passed over, with
// a warning.
func TestPythonEnvInterpreter(t *testing.T) {
	shim := pythontest.BareShim(t)
	dir, _ := echoDir(t)
	script := filepath.Join(dir, "uaxai-explainer-python-echo")
	env := pythonLink(t, "env-python")
	t.Setenv(PythonEnv, env)
	m := newManager(t, Options{Dirs: []string{dir}, Limits: patientLimits()})
	if got := runsEcho(t, m); !reflect.DeepEqual(got, []string{env, script}) {
		t.Errorf("with $%s=%s the plugin runs as %q", PythonEnv, env, got)
	}
	m.Close()

	// A name looked up on PATH works as well.
	t.Setenv("PATH", filepath.Dir(env)+string(filepath.ListSeparator)+os.Getenv("PATH"))
	t.Setenv(PythonEnv, "env-python")
	m = newManager(t, Options{Dirs: []string{dir}, Limits: patientLimits()})
	if got := runsEcho(t, m); !reflect.DeepEqual(got, []string{env, script}) {
		t.Errorf("with $%s=env-python the plugin runs as %q", PythonEnv, got)
	}
	m.Close()

	t.Setenv(PythonEnv, shim)
	logs := &syncBuffer{}
	m = newManager(t, Options{Dirs: []string{dir}, Limits: patientLimits(),
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: logs})})
	if got := runsEcho(t, m); !reflect.DeepEqual(got, []string{pythontest.Python, script}) {
		t.Errorf("with $%s naming the shim the plugin runs as %q, want %s", PythonEnv, got, pythontest.Python)
	}
	if w := "$UAXAI_PYTHON " + shim + ": lacks numpy"; !strings.Contains(logs.String(), w) || !strings.Contains(logs.String(), "[WARN]") {
		t.Errorf("no warning holding %q:\n%s", w, logs.String())
	}
}

// TestPythonManifestInterpreter: plugin.toml's python comes before
// $UAXAI_PYTHON; a relative one is relative to the plugin's directory;
// with a python key the command needs no #! line.
func TestPythonManifestInterpreter(t *testing.T) {
	pythontest.BareShim(t)
	t.Setenv(PythonEnv, pythonLink(t, "env-python"))
	_, echo := echoDir(t)
	dir := t.TempDir()
	d := filepath.Join(dir, "uaxai-explainer-python-echo")
	if err := os.MkdirAll(filepath.Join(d, "venv", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// run.py has no #! line: the python key makes it a Python plugin.
	run := fmt.Sprintf("import runpy\nrunpy.run_path(%q, run_name=\"__main__\")\n", echo)
	if err := os.WriteFile(filepath.Join(d, "run.py"), []byte(run), 0o755); err != nil {
		t.Fatal(err)
	}
	own := pythonLink(t, "own-python")
	if err := os.Symlink(pythontest.Python, filepath.Join(d, "venv", "bin", "python")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, python, want string }{
		{"absolute", own, own},
		{"relative", "venv/bin/python", filepath.Join(d, "venv", "bin", "python")},
	} {
		t.Run(c.name, func(t *testing.T) {
			toml := fmt.Sprintf("command = \"run.py\"\npython = %q\n", c.python)
			if err := os.WriteFile(filepath.Join(d, ManifestName), []byte(toml), 0o644); err != nil {
				t.Fatal(err)
			}
			if mf, err := ReadManifest(d); err != nil || mf.Python != c.want {
				t.Fatalf("ReadManifest: %+v, %v; want python %s", mf, err, c.want)
			}
			m := newManager(t, Options{Dirs: []string{dir}, Limits: patientLimits()})
			if got := runsEcho(t, m); !reflect.DeepEqual(got, []string{c.want, filepath.Join(d, "run.py")}) {
				t.Errorf("the plugin runs as %q, want [%s %s]", got, c.want, filepath.Join(d, "run.py"))
			}
			list, err := m.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range list {
				if e.ID == "explainer.python-echo" && e.Language != LangPython {
					t.Errorf("List says the language is %q, want %q (from the python key)", e.Language, LangPython)
				}
			}
		})
	}
}

// TestPythonProbeHangs: an interpreter that never answers the probe is
// killed, with its process group, at the probe's timeout, and passed
// over; its answer is kept, so the next start does not wait again;
// concurrent starts probe it once.
func TestPythonProbeHangs(t *testing.T) {
	shim := pythontest.BareShim(t)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	// The interpreters tried after the hanging one are probed first,
	// under the patient timeout: the short one is the hanging one's alone
	// (importing numpy and grpc takes seconds on a loaded machine).
	if err := pyinterp.Probe(context.Background(), pythontest.Python); err != nil {
		t.Fatal(err)
	}
	if err := pyinterp.Probe(context.Background(), shim); err == nil {
		t.Fatalf("the shim %s passes the probe", shim)
	}
	defer pyinterp.SetProbeTimeout(time.Second)()
	dir, _ := echoDir(t)
	hangDir := t.TempDir()
	hang := filepath.Join(hangDir, "hanging-python")
	count := filepath.Join(hangDir, "probes")
	// The interpreter proper is the shell's child (not exec'd): only
	// killing the group ends it. Each run appends a line to count.
	src := fmt.Sprintf("#!/bin/sh\necho probe >> %q\n%s -c 'import time; time.sleep(600)' %q\n", count, pythontest.Python, hang)
	if err := os.WriteFile(hang, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PythonEnv, hang)
	// Four Managers start the plugin at once: one probe between them.
	logs := &syncBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: logs})
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		m := newManager(t, Options{Dirs: []string{dir}, Limits: patientLimits(), Logger: log})
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = m.Explainer(context.Background(), "explainer.python-echo")
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Not before the probe's timeout; and long before the hanging
	// interpreter's 600 s sleep ends, however loaded the machine.
	if took < time.Second || took > 5*time.Minute {
		t.Errorf("starting took %s; want the probe's 1s timeout, and not the hanging interpreter's 600s", took)
	}
	if w := "$UAXAI_PYTHON " + hang + ": no answer within 1s"; !strings.Contains(logs.String(), w) {
		t.Errorf("no warning holding %q:\n%s", w, logs.String())
	}
	if left := leftBehind(hangDir, hang); len(left) > 0 {
		t.Errorf("the hanging probe left %+v", left)
	}
	// Another Manager in this process starts it without probing again.
	m := newManager(t, Options{Dirs: []string{dir}, Limits: patientLimits()})
	if _, err := m.Explainer(context.Background(), "explainer.python-echo"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(count)
	if err != nil || strings.Count(string(b), "probe") != 1 {
		t.Errorf("the hanging interpreter ran %d times (%v), want once", strings.Count(string(b), "probe"), err)
	}
}

// TestPythonRequires: a plugin whose head says "# uaxai-requires: M" runs
// under an interpreter that imports M: $UAXAI_PYTHON, which has the
// kit's modules but not M, is passed over with a warning naming M, for
// the next candidate that has it.
func TestPythonRequires(t *testing.T) {
	pythontest.Need(t)
	_, echo := echoDir(t)
	src, err := os.ReadFile(echo)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(src), "\n")
	dir := t.TempDir()
	script := filepath.Join(dir, "uaxai-explainer-python-echo")
	if err := os.WriteFile(script, []byte(first+"\n# uaxai-requires: uaxai_probe_only\n"+rest), 0o755); err != nil {
		t.Fatal(err)
	}
	mods := t.TempDir()
	if err := os.WriteFile(filepath.Join(mods, "uaxai_probe_only.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	kit, err := filepath.Abs("../../sdk/python")
	if err != nil {
		t.Fatal(err)
	}
	with := filepath.Join(t.TempDir(), "python-with")
	sh := "#!/bin/sh\nPYTHONPATH=" + mods + ":" + kit + " exec " + pythontest.Python + " \"$@\"\n"
	if err := os.WriteFile(with, []byte(sh), 0o755); err != nil {
		t.Fatal(err)
	}
	env := pythonLink(t, "env-python")
	t.Setenv(PythonEnv, env)
	t.Setenv("PYTHONPATH", kit) // the copied script finds the kit here, not beside it
	defer pyinterp.SetDefaults([]string{with})()
	logs := &syncBuffer{}
	m := newManager(t, Options{Dirs: []string{dir}, Limits: patientLimits(),
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: logs})})
	defer m.Close()
	if got := runsEcho(t, m); !reflect.DeepEqual(got, []string{pythontest.Python, script}) {
		t.Errorf("the plugin runs as %q, want %s (through %s) %s", got, pythontest.Python, with, script)
	}
	if w := "$UAXAI_PYTHON " + env + ": lacks uaxai_probe_only"; !strings.Contains(logs.String(), w) {
		t.Errorf("no warning holding %q:\n%s", w, logs.String())
	}
}
