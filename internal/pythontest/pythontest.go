// Package pythontest lets a Go test run the Python plugins
// (sdk/python/uaxai_plugin and plugins/explainer/python-*): Need skips
// the test unless Debian's python3 has the kit's modules, and makes that
// interpreter the one a plugin script's `#!/usr/bin/env python3` finds.
package pythontest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Python is the interpreter the kit targets: Debian's, whose
// python3-grpcio, python3-protobuf and python3-numpy packages it needs.
const Python = "/usr/bin/python3"

// Need skips t unless Python imports grpc, google.protobuf and numpy (and
// every module of also), and puts Python's directory first on the PATH
// for the rest of t (t.Setenv), so that a plugin script started by the
// host runs under it rather than under another python3 without the
// modules.
func Need(t testing.TB, also ...string) {
	t.Helper()
	if err := Available(also...); err != nil {
		t.Skip(err)
	}
	t.Setenv("PATH", filepath.Dir(Python)+string(filepath.ListSeparator)+os.Getenv("PATH"))
}

// Available says why Python cannot run the plugins (nil if it can): it
// must import grpc, google.protobuf, numpy and every module of also.
func Available(also ...string) error {
	if _, err := os.Stat(Python); err != nil {
		return fmt.Errorf("the Python plugins need %s: %w", Python, err)
	}
	mods := "grpc, google.protobuf, numpy"
	for _, m := range also {
		mods += ", " + m
	}
	out, err := exec.Command(Python, "-c", "import "+mods).CombinedOutput()
	if err != nil {
		return fmt.Errorf("the Python plugins need %s with %s (Debian: apt-get install -y python3-grpcio python3-protobuf python3-numpy): %w\n%s", Python, mods, err, out)
	}
	return nil
}
