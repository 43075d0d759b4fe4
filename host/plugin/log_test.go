package plugin

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestClientLog: what go-plugin logs about a plugin reaches the host's
// log at its level, but for the lines of a crash dump, the exit of the
// process (the failing call reports both) and, for a plugin the host
// killed, the failed graceful exit: those become debug entries.
func TestClientLog(t *testing.T) {
	var buf bytes.Buffer
	base := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &buf})
	p := &proc{}
	l := hclog.Logger(clientLog{base, p}).Named("x").With("k", "v").ResetNamed("y")
	l.Error("goroutine 1 [running]:")        // a line of a dump: hidden
	l.Error("plugin process exited", "a", 1) // reported by the call: hidden
	l.Warn("plugin failed to exit gracefully")
	l.Error("reading plugin stderr", "error", "boom")
	l.Info("an info line")
	l.Log(hclog.Error, "goroutine 2 [running]:")
	p.kill()
	l.Warn("plugin failed to exit gracefully") // killed by the host: hidden
	out := buf.String()
	for _, hidden := range []string{"goroutine 1", "goroutine 2", "plugin process exited"} {
		if strings.Contains(out, hidden) {
			t.Errorf("the log shows %q:\n%s", hidden, out)
		}
	}
	for _, shown := range []string{"reading plugin stderr", "an info line"} {
		if !strings.Contains(out, shown) {
			t.Errorf("the log lacks %q:\n%s", shown, out)
		}
	}
	if n := strings.Count(out, "failed to exit gracefully"); n != 1 {
		t.Errorf("%d 'failed to exit gracefully' lines, want 1 (the plugin the host did not kill):\n%s", n, out)
	}
	buf.Reset()
	debug := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: &buf})
	// The Manager logs to the logger it is given.
	dir := t.TempDir()
	install(t, dir, "uaxai-explainer-echo", 0o755)
	m := NewManager(testRegistry(), Options{Dirs: []string{dir}, Logger: debug})
	if _, err := m.Explainer(context.Background(), "explainer.echo"); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if !strings.Contains(buf.String(), "plugin started") || !strings.Contains(buf.String(), "plugin stopped") {
		t.Errorf("the Manager's log does not reach its logger:\n%s", buf.String())
	}
	buf.Reset()
	clientLog{debug, &proc{}}.Error("goroutine 3 [running]:")
	if !strings.Contains(buf.String(), "[DEBUG]") || !strings.Contains(buf.String(), "goroutine 3") {
		t.Errorf("a hidden line is not a debug entry: %q", buf.String())
	}
}
