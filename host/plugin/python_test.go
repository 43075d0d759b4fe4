package plugin

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/uaxai/uaxai/sdk"
)

// The Python kit (sdk/python/uaxai_plugin) from the host's side: its
// example plugin, an executable script, is found, started and driven by
// the Manager as a Go plugin binary is.

// pythonEcho is the example plugin's script, relative to this package.
const pythonEcho = "../../plugins/explainer/python-echo/uaxai-explainer-python-echo"

// needPython skips the test unless Debian's /usr/bin/python3 has the
// kit's modules (grpc, google.protobuf, numpy), and puts /usr/bin first
// on the PATH, so that the script's `#!/usr/bin/env python3` finds that
// interpreter rather than another one (pyenv's) without the modules.
func needPython(t *testing.T) {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("the Python kit's test needs %s: %v", py, err)
	}
	out, err := exec.Command(py, "-c", "import grpc, google.protobuf, numpy").CombinedOutput()
	if err != nil {
		t.Skipf("the Python kit's test needs python3-grpcio, python3-protobuf and python3-numpy (apt-get install -y python3-grpcio python3-protobuf python3-numpy): %v\n%s", err, out)
	}
	t.Setenv("PATH", "/usr/bin"+string(filepath.ListSeparator)+os.Getenv("PATH"))
}

// echoMap is python-echo's closed form: scale * |x_i| + target.
func echoMap(x []float32, target int, scale float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = scale*math.Abs(float64(v)) + float64(target)
	}
	return out
}

func TestPythonPlugin(t *testing.T) {
	needPython(t)
	script, err := filepath.Abs(pythonEcho)
	if err != nil {
		t.Fatal(err)
	}
	// A plugin directory holds a symlink to the script: the kit is found
	// from the script's real location.
	dir := t.TempDir()
	link := filepath.Join(dir, "uaxai-explainer-python-echo")
	if err := os.Symlink(script, link); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: logs})
	m := newManager(t, Options{Dirs: []string{dir}, Limits: hostileLimits(), Logger: log})
	ctx := context.Background()
	e, err := m.Explainer(ctx, "explainer.python-echo")
	if err != nil {
		t.Fatal(err)
	}
	if i := e.Info(); i.ID != "explainer.python-echo" || i.Version != "0.1.0" || i.Needs != 0 || i.Stochastic ||
		i.Summary != "scale * |x| + target, a model-free example of the Python kit" {
		t.Errorf("Info %+v", i)
	}

	// Check: a good table passes, an unknown key and a bad value are
	// errors that name the plugin, the call and the key.
	if err := e.Check(sdk.Config{"scale": 2.5}); err != nil {
		t.Errorf("Check(scale 2.5): %v", err)
	}
	if err := e.Check(sdk.Config{"scal": 2}); err == nil || err.Error() != `explainer.python-echo: Check: unknown key 'scal' (accepted: scale, fail, crash)` {
		t.Errorf("Check(scal): %v", err)
	}
	if err := e.Check(sdk.Config{"scale": "big"}); err == nil || !strings.HasPrefix(err.Error(), `explainer.python-echo: Check: key "scale": 'big'`) {
		t.Errorf("Check(scale big): %v", err)
	}

	// A batch of 5 inputs against the closed form, with and without a
	// scale; the inputs hold negative values, zeros and values no float32
	// rounds exactly to a short decimal.
	mod, err := e.Load(ctx, params(t))
	if err != nil {
		t.Fatal(err)
	}
	const b, n = 5, 8
	x := make([]float32, b*n)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*1.7)) * float32(i%3) * 3.3
	}
	targets := []int{0, 1, 2, 2, 0}
	for _, scale := range []float64{1, 2.5, -0.125} {
		var cfg sdk.Config
		if scale != 1 {
			cfg = sdk.Config{"scale": scale}
		}
		maps, err := mod.Explain(ctx, sdk.ExplainRequest{X: x, Targets: targets, Config: cfg})
		if err != nil {
			t.Fatalf("scale %v: %v", scale, err)
		}
		if len(maps) != b {
			t.Fatalf("scale %v: %d maps for %d inputs", scale, len(maps), b)
		}
		for i := range b {
			want := echoMap(x[i*n:(i+1)*n], targets[i], scale)
			for j := range n {
				if maps[i][j] != want[j] {
					t.Fatalf("scale %v input %d index %d: %v, want scale*|x|+target = %v", scale, i, j, maps[i][j], want[j])
				}
			}
		}
	}

	// The plugin's errors: a ValueError comes back as its message, a bug
	// (ZeroDivisionError) as Internal with its type; both name the plugin
	// and the call, and the plugin keeps serving after them.
	_, err = mod.Explain(ctx, sdk.ExplainRequest{X: x, Targets: targets, Config: sdk.Config{"fail": "window too long"}})
	if err == nil || err.Error() != "explainer.python-echo: Explain: window too long" {
		t.Errorf("a ValueError in explain: %v", err)
	}
	_, err = mod.Explain(ctx, sdk.ExplainRequest{X: x, Targets: targets, Config: sdk.Config{"crash": true}})
	if err == nil || err.Error() != "explainer.python-echo: Explain: Internal: ZeroDivisionError: division by zero (traceback in the plugin's log)" {
		t.Errorf("a bug in explain: %v", err)
	}
	maps, err := mod.Explain(ctx, sdk.ExplainRequest{X: x[:n], Targets: targets[:1]})
	if err != nil || len(maps) != 1 || maps[0][1] != echoMap(x[:n], targets[0], 1)[1] {
		t.Errorf("after the errors: %v, %v", maps, err)
	}

	if err := mod.Close(); err != nil {
		t.Fatalf("Close (Release): %v", err)
	}

	// Close ends the process (go-plugin's Shutdown: a clean exit).
	pid := pidOf(t, e)
	if !alive(pid) {
		t.Fatalf("plugin pid %d not running", pid)
	}
	start := time.Now()
	m.Close()
	if alive(pid) {
		t.Errorf("pid %d still running after Close", pid)
	}
	t.Logf("Close took %v", time.Since(start))
	// The exit was the plugin's own (after Shutdown), not a kill; its
	// stderr reached the host's log as hclog JSON, with the traceback of
	// the bug.
	out := logs.String()
	for _, bad := range []string{"failed to exit gracefully", "Unrecognized remote plugin message", "stdio service not available"} {
		if strings.Contains(out, bad) {
			t.Errorf("the host's log says %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"plugin serving", "ZeroDivisionError", "plugin exited"} {
		if !strings.Contains(out, want) {
			t.Errorf("the host's log lacks %q:\n%s", want, out)
		}
	}
}
