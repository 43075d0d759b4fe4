package pythontest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/internal/testdep"
)

// Python is the interpreter the kit targets: Debian's, whose
// python3-grpcio, python3-protobuf and python3-numpy packages it needs.
const Python = "/usr/bin/python3"

// Need skips t unless Python imports grpc, google.protobuf and numpy (and
// every module of also), through testdep.Skip: the dependency is
// testdep.Torch when also names torch, else testdep.Python, and t fails
// instead of skipping where $UAXAI_REQUIRE lists it.
func Need(t testing.TB, also ...string) {
	t.Helper()
	if err := Available(also...); err != nil {
		dep := testdep.Python
		if slices.Contains(also, "torch") {
			dep = testdep.Torch
		}
		testdep.Skip(t, dep, err)
	}
}

// ShimScript is the python3 that BareShim installs: Python in isolated
// mode without the site module (-I -S), so that Debian's dist-packages,
// where numpy, grpcio and protobuf are, are not on its sys.path.
const ShimScript = "#!/bin/sh\nexec " + Python + " -I -S \"$@\"\n"

// BareShim is Need, then writes ShimScript as python3 into a new
// directory, puts that directory first on the PATH for the rest of t
// (t.Setenv) and returns the shim's path. It fails t if the shim does
// import numpy (then it would show nothing).
func BareShim(t testing.TB) string {
	t.Helper()
	Need(t)
	dir := t.TempDir()
	shim := filepath.Join(dir, "python3")
	if err := os.WriteFile(shim, []byte(ShimScript), 0o755); err != nil {
		t.Fatalf("writing the python3 shim: %v", err)
	}
	if out, err := exec.Command(shim, "-c", "import numpy").CombinedOutput(); err == nil {
		t.Fatalf("the shim %s imports numpy; it should lack it:\n%s", shim, out)
	}
	t.Setenv("PATH", dir+string(filepath.ListSeparator)+os.Getenv("PATH"))
	return shim
}

// Available says why Python cannot run the plugins (nil if it can): it
// must import grpc, google.protobuf, numpy and every module of also. The
// answer for a list of modules is asked of Python once a test binary and
// kept: importing torch takes seconds, tens of seconds on a loaded
// machine, and every test that needs it asks.
func Available(also ...string) error {
	mods := "grpc, google.protobuf, numpy"
	for _, m := range also {
		mods += ", " + m
	}
	known.mu.Lock()
	defer known.mu.Unlock()
	if err, ok := known.answers[mods]; ok {
		return err
	}
	err := available(mods)
	if known.answers == nil {
		known.answers = map[string]error{}
	}
	known.answers[mods] = err
	return err
}

// known are Available's answers, by its import list.
var known struct {
	mu      sync.Mutex
	answers map[string]error
}

// available asks Python whether it imports mods (a comma-separated import
// list).
func available(mods string) error {
	if _, err := os.Stat(Python); err != nil {
		return fmt.Errorf("the Python plugins need %s: %w", Python, err)
	}
	out, err := exec.Command(Python, "-c", "import "+mods).CombinedOutput()
	if err != nil {
		return fmt.Errorf("the Python plugins need %s with %s (Debian: apt-get install -y python3-grpcio python3-protobuf python3-numpy): %w\n%s", Python, mods, err, out)
	}
	return nil
}
