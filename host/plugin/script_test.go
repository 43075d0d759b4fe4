package plugin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/sdk"
)

// scriptFile writes a summary script named name.go with the given
// functions and returns its path.
func scriptFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".go")
	src := "//go:build ignore\n\npackage " + name + "\n\n" + body
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const okCheck = "func Check(cfg map[string]interface{}) error { return nil }\n"

// syncBuffer is a bytes.Buffer for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestScriptOutOfProcess: a script runs in a process of its own (the
// test binary serves it, see TestMain), with its Info from its
// constants; its results, its Check, its prints and its panics reach the
// host as a plugin's do; Close ends its process.
func TestScriptOutOfProcess(t *testing.T) {
	path := scriptFile(t, "double", `import (
	"errors"
	"fmt"
)

const ID = "summary.double"
const Version = "1.2.3"

func Check(cfg map[string]interface{}) error {
	if _, ok := cfg["bad"]; ok {
		return errors.New("unknown key \"bad\" (accepted: none)")
	}
	return nil
}

func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) {
	if len(draws) == 3 {
		var m map[string]int
		m["x"] = 1
	}
	fmt.Println("double: batch of", len(draws))
	out := make([][]float64, len(draws))
	for i, d := range draws {
		out[i] = make([]float64, len(d[0]))
		for n := range out[i] {
			out[i][n] = 2 * d[0][n]
		}
	}
	return out, nil
}
`)
	var printed syncBuffer
	m := NewManager(testRegistry(), Options{Exe: os.Args[0], Limits: hostileLimits(), Logger: quietLogger(t), ScriptOutput: &printed})
	defer m.Close()
	ctx := context.Background()
	s, err := m.Script(ctx, path, 2)
	if err != nil {
		t.Fatal(err)
	}
	if info := s.Info(); info.ID != "summary.double" || info.Version != "1.2.3" || info.Output != sdk.OutputMap {
		t.Errorf("Info %+v", info)
	}
	pid := s.(remoteSummary).p.pid
	if pid == os.Getpid() || !alive(pid) {
		t.Fatalf("the script runs in pid %d (the host is %d)", pid, os.Getpid())
	}
	res, err := s.Summarise(ctx, [][][]float64{{{1, 2}, {3, 4}}}, nil)
	if err != nil || !reflect.DeepEqual(res[0].Map, []float64{2, 4}) {
		t.Errorf("Summarise: %v, %v", res, err)
	}
	if err := s.Check(sdk.Config{"bad": 1}); err == nil || !strings.Contains(err.Error(), `summary.double: Check: script `+path+`: unknown key "bad"`) {
		t.Errorf("Check: %v", err)
	}
	_, err = s.Summarise(ctx, [][][]float64{{{1}}, {{2}}, {{3}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "summary.double: Summarise: script "+path+": Summarise panicked") {
		t.Errorf("a panic in the script: %v", err)
	}
	if again, err := m.Script(ctx, path, 2); err != nil || again.(remoteSummary).p.pid != pid {
		t.Errorf("a recovered panic restarted the script process (%v)", err)
	}
	for i := 0; i < 3000 && !strings.Contains(printed.String(), "double: batch of 1"); i++ { // up to a minute: the copy of the script's output may lag on a loaded machine
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(printed.String(), "double: batch of 1\n") {
		t.Errorf("the script's print did not reach ScriptOutput: %q", printed.String())
	}
	info, err := m.ProbeScript(ctx, path)
	if err != nil || info.ID != "summary.double" {
		t.Errorf("ProbeScript: %+v, %v", info, err)
	}
	m.Close()
	if left := leftBehind(t.TempDir(), path); len(left) > 0 {
		t.Errorf("left behind after Close: %+v", left)
	}
}

// TestScriptLoadErrors: a script that does not load gives its own error,
// with the line, as when it was loaded in the host.
func TestScriptLoadErrors(t *testing.T) {
	m := NewManager(testRegistry(), Options{Exe: os.Args[0], Limits: hostileLimits(), Logger: quietLogger(t)})
	defer m.Close()
	path := scriptFile(t, "osuser", "import \"os\"\n\nfunc Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) { os.Exit(1); return nil, nil }\n")
	_, err := m.Script(context.Background(), path, 1)
	want := fmt.Sprintf(`script %s: line 5, column 8: import "os" is not allowed in a summary script (accepted: errors, fmt, math, sort, strconv, strings, github.com/uaxai/uaxai/sdk)`, path)
	if err == nil || err.Error() != want {
		t.Errorf("a forbidden import:\n got %v\nwant %s", err, want)
	}
	path = scriptFile(t, "typo", "func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n\treturn nil, undefinedThing\n}\n")
	_, err = m.Script(context.Background(), path, 1)
	if err == nil || !strings.HasPrefix(err.Error(), "script "+path+": line 6") || !strings.Contains(err.Error(), "undefined") {
		t.Errorf("an undefined name: %v", err)
	}
	if _, err := m.Script(context.Background(), filepath.Join(t.TempDir(), "missing.go"), 1); err == nil || !strings.Contains(err.Error(), "missing.go") {
		t.Errorf("a missing script: %v", err)
	}
	// A failed start is not remembered: once the script is mended, the
	// next request starts it.
	if err := os.WriteFile(path, []byte("//go:build ignore\n\npackage typo\n\nfunc Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) { return nil, nil }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Script(context.Background(), path, 1); err != nil {
		t.Errorf("the mended script: %v", err)
	}
	if err := os.WriteFile(path, []byte("package typo\n\nfunc Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n\treturn nil, undefinedThing\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := m.Script(context.Background(), dir, 1); err == nil || err.Error() != "script "+dir+": not a regular file" {
		t.Errorf("a directory as a script: %v", err)
	}
	if _, err := m.ProbeScript(context.Background(), path); err == nil || !strings.Contains(err.Error(), "undefined") {
		t.Errorf("ProbeScript of a script that does not load: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Script(ctx, path+"x", 1); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("a script asked for with a cancelled context: %v", err)
	}
	m.Close()
	if _, err := m.Script(context.Background(), path, 1); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a script asked for after Close: %v", err)
	}
}

// TestHostileScripts: a script that hangs, recurses without end,
// allocates without end or answers with the wrong shape, NaN or Inf, in
// any of its functions, ends its own process at most: the host ends in
// bounded time, with an error that names the script's ID and path and
// the call, and no process is left behind.
func TestHostileScripts(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	const summarise = "func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n%s\n}\n"
	good := "out := make([][]float64, len(draws))\nfor i, d := range draws { out[i] = append([]float64(nil), d[0]...) }\n"
	spin := "for {\n}\n"
	recurse := "func deeper(n int) int { return deeper(n+1) + 1 }\n"
	alloc := "var keep [][]float64\nfor {\nkeep = append(keep, make([]float64, 1<<20))\n}\n"
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"hang_check", "func Check(cfg map[string]interface{}) error {\n" + spin + "return nil\n}\n" + fmt.Sprintf(summarise, good+"return out, nil"),
			[]string{"(script %s, pid", "Check: no answer within 2s (limits.check); killed its process group"}},
		{"hang_summarise", okCheck + fmt.Sprintf(summarise, spin+"return nil, nil"),
			[]string{"(script %s, pid", "Summarise: no answer within 2s (limits.summarise_batch); killed its process group"}},
		{"hang_load", "var x = spin()\nfunc spin() int {\n" + spin + "return 0\n}\n" + fmt.Sprintf(summarise, good+"return out, nil"),
			[]string{"starting summary script %s: no handshake within 3s (limits.handshake); killed its process group"}},
		{"stack_check", recurse + "func Check(cfg map[string]interface{}) error { deeper(0); return nil }\n" + fmt.Sprintf(summarise, good+"return out, nil"),
			[]string{"(script %s, pid", "died during Check: fatal error: stack overflow (the script recursed too deep"}},
		{"stack_summarise", recurse + okCheck + fmt.Sprintf(summarise, "deeper(0)\nreturn nil, nil"),
			[]string{"(script %s, pid", "died during Summarise: fatal error: stack overflow"}},
		{"memory_summarise", okCheck + fmt.Sprintf(summarise, alloc+"return nil, nil"),
			[]string{"(script %s, pid", "died during Summarise: ", "(the script needed more memory than limits.script_memory, 256MiB)"}},
		{"shape_summarise", okCheck + fmt.Sprintf(summarise, good+"return out[:1], nil"),
			[]string{"Summarise: returned 1 results for a batch of 2 inputs"}},
		{"nan_summarise", "import \"math\"\n" + okCheck + fmt.Sprintf(summarise, good+"out[1][0] = math.NaN()\nreturn out, nil"),
			[]string{"Summarise: input 1: map value 0 is NaN"}},
		{"inf_summarise", "import \"math\"\n" + okCheck + fmt.Sprintf(summarise, good+"out[0][1] = math.Inf(-1)\nreturn out, nil"),
			[]string{"Summarise: input 0: map value 1 is -Inf"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if raceEnabled && strings.HasPrefix(c.name, "memory") {
				t.Skip("a build with the race detector sets no memory limit")
			}
			t.Parallel()
			path := scriptFile(t, c.name, c.body)
			// Only the hang cases test a deadline, each its own: a slow
			// start or a slow overflow on a loaded machine is not the
			// case tested.
			subject := map[string]string{"hang_check": "check", "hang_summarise": "summarise_batch", "hang_load": "handshake"}[c.name]
			m := NewManager(testRegistry(), Options{Exe: os.Args[0], Limits: hostileLimits(subject), Logger: quietLogger(t)})
			defer m.Close()
			var err error
			took := within(t, "the calls", func() {
				var s sdk.Summary
				if s, err = m.Script(context.Background(), path, 1); err != nil {
					return
				}
				if err = s.Check(nil); err != nil {
					return
				}
				_, err = s.Summarise(context.Background(), [][][]float64{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}, nil)
			})
			if err == nil {
				t.Fatal("the script went through every call without an error")
			}
			id := "summary.script-" + c.name
			if c.name == "hang_load" {
				id = path // not known before the script loads
			}
			for _, w := range append([]string{id}, c.want...) {
				if w = strings.ReplaceAll(w, "%s", path); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			within(t, "Close", m.Close)
			if left := leftBehind(t.TempDir(), path); len(left) > 0 {
				t.Errorf("left behind after %s: %+v", took.Round(time.Millisecond), left)
			}
		})
	}
}

// TestCrashedScriptRestarts: after its process died, the next request
// for the script starts it again.
func TestCrashedScriptRestarts(t *testing.T) {
	path := scriptFile(t, "sometimes", "func deeper(n int) int { return deeper(n+1) + 1 }\n"+
		"func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n"+
		"\tif len(draws) == 2 { deeper(0) }\n\treturn [][]float64{draws[0][0]}, nil\n}\n")
	m := NewManager(testRegistry(), Options{Exe: os.Args[0], Limits: limits.Limits{Handshake: time.Minute}, Logger: quietLogger(t)})
	defer m.Close()
	ctx := context.Background()
	s, err := m.Script(ctx, path, 1)
	if err != nil {
		t.Fatal(err)
	}
	pid := s.(remoteSummary).p.pid
	if _, err := s.Summarise(ctx, [][][]float64{{{1}}, {{2}}}, nil); err == nil || !strings.Contains(err.Error(), "stack overflow") {
		t.Fatalf("the overflowing call: %v", err)
	}
	s2, err := m.Script(ctx, path, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s2.(remoteSummary).p.pid == pid {
		t.Error("the dead script process was not replaced")
	}
	if res, err := s2.Summarise(ctx, [][][]float64{{{7}}}, nil); err != nil || res[0].Map[0] != 7 {
		t.Errorf("after a restart: %v, %v", res, err)
	}
}

// TestFuzzedScriptOutOfProcess: a source on which yaegi overflows its
// stack (found by host/script's FuzzLoad) costs only the script's child
// process: loading it is an error that names the script, and the host
// goes on.
func TestFuzzedScriptOutOfProcess(t *testing.T) {
	m := NewManager(testRegistry(), Options{Exe: os.Args[0], Limits: hostileLimits(), Logger: quietLogger(t)})
	defer m.Close()
	path := filepath.Join(t.TempDir(), "fuzzed.go")
	if err := os.WriteFile(path, []byte("package A\nfunc A(A[]A,c[]y)(k,)"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := m.Script(context.Background(), path, 1)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("the fuzzed script: %v, want an error naming it", err)
	}
	ok := scriptFile(t, "ok", "func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n\treturn [][]float64{draws[0][0]}, nil\n}\n")
	if _, err := m.Script(context.Background(), ok, 1); err != nil {
		t.Errorf("a sound script after it: %v", err)
	}
}
