package testdep

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// Env is the environment variable that lists the required dependencies,
// comma-separated.
const Env = "UAXAI_REQUIRE"

// The dependencies a test may skip for.
const (
	Python   = "python"   // /usr/bin/python3 with grpc, protobuf and numpy
	Torch    = "torch"    // that python3 with torch too
	Chromium = "chromium" // a headless chromium on PATH
	Slurm    = "slurm"    // a Slurm cluster that answers sinfo
)

// Known lists the names Env accepts.
var Known = []string{Python, Torch, Chromium, Slurm}

// Required parses Env: the dependencies listed, or an error naming an
// entry that is not one of Known.
func Required() ([]string, error) {
	var out []string
	for _, f := range strings.Split(os.Getenv(Env), ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !slices.Contains(Known, f) {
			return nil, fmt.Errorf("%s=%q: unknown dependency %q (accepted: %s)", Env, os.Getenv(Env), f, strings.Join(Known, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

// Skip ends t for the missing dependency dep, why saying what is missing
// and how to install it: a skip, or, when dep is listed in $UAXAI_REQUIRE
// (or that variable is malformed), a failure.
func Skip(t testing.TB, dep string, why ...any) {
	t.Helper()
	t.Skip(missing(t, "Skip", dep, why))
}

// Lacking is Skip for a test that goes on without dep, doing less: it
// logs why, or fails t where dep is required.
func Lacking(t testing.TB, dep string, why ...any) {
	t.Helper()
	t.Log(missing(t, "Lacking", dep, why))
}

// missing fails t if dep is unknown or required, else returns why as one
// message.
func missing(t testing.TB, fn, dep string, why []any) string {
	t.Helper()
	if !slices.Contains(Known, dep) {
		t.Fatalf("testdep.%s: unknown dependency %q (accepted: %s)", fn, dep, strings.Join(Known, ", "))
	}
	req, err := Required()
	if err != nil {
		t.Fatal(err)
	}
	msg := fmt.Sprint(why...)
	if slices.Contains(req, dep) {
		t.Fatalf("%s is required (%s=%s) but missing: %s", dep, Env, os.Getenv(Env), msg)
	}
	return msg
}
