package plugin

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/internal/units"
)

// TestPipe: the host's end of a plugin's stream reads data, then the end
// of the stream once the plugin's end closes, or once the host closes
// its own end under a blocked read (never an error: go-plugin would log
// it); ended is closed then, and only then.
func TestPipe(t *testing.T) {
	p, w, err := newPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8)
	if n, err := p.Read(b); n != 1 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	select {
	case <-p.ended():
		t.Fatal("ended after a read of data")
	default:
	}
	w.Close()
	if _, err := p.Read(b); err != io.EOF {
		t.Fatalf("read after the writer closed: %v, want io.EOF", err)
	}
	<-p.ended()
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}

	p2, w2, err := newPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	got := make(chan error, 1)
	go func() {
		_, err := p2.Read(b)
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	p2.Close()
	select {
	case err := <-got:
		if err != io.EOF {
			t.Errorf("a read blocked when the host closed its end: %v, want io.EOF", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close did not end a blocked read")
	}
	<-p2.ended()
}

// TestGroupKilledBeforeStart: a group killed before it starts never
// starts, and its socket directory is removed.
func TestGroupKilledBeforeStart(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		t.Fatal(err)
	}
	g, err := newGroup("/bin/sh", []string{"-c", "sleep 300"}, nil, sock)
	if err != nil {
		t.Fatal(err)
	}
	g.kill()
	if err := g.Start(context.Background()); !errors.Is(err, errStopped) {
		t.Fatalf("Start after kill: %v", err)
	}
	if g.ID() != "" {
		t.Errorf("ID %q of a group that never started", g.ID())
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket directory: %v, want it removed", err)
	}
}

// TestGroupLeaderExitKillsGroup: when the leader of a group exits, the
// rest of its group is killed, the leader is reaped (Wait returns its
// status), the socket directory is removed, and the host's ends of the
// pipes, which the grandchild still held, are closed.
func TestGroupLeaderExitKillsGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	sock := filepath.Join(t.TempDir(), "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		t.Fatal(err)
	}
	g, err := newGroup("/bin/sh", []string{"-c", "sleep 300 & echo $!; exit 3"}, nil, sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if id, _ := strconv.Atoi(g.ID()); id != g.cmd.Process.Pid {
		t.Errorf("ID %q, pid %d", g.ID(), g.cmd.Process.Pid)
	}
	line, err := bufio.NewReader(g.Stdout()).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Wait: %v, want exit status 3", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket directory: %v, want it removed", err)
	}
	for i := 0; i < 2400 && alive(child) && !zombie(child); i++ { // up to a minute
		time.Sleep(25 * time.Millisecond)
	}
	if alive(child) && !zombie(child) {
		t.Errorf("grandchild %d outlived its group's leader", child)
	}
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(g.Stdout())
		read <- err
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Errorf("reading stdout to its end: %v", err)
		}
	case <-time.After(time.Minute):
		t.Error("stdout not at its end after the group died")
	}
	<-g.stdout.ended()
	// Killing a reaped group signals nothing (its ID may be reused).
	g.kill()
	if ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond); g.Wait(ctx) == nil {
		cancel()
		t.Error("Wait of an exited group returned nil")
	} else {
		cancel()
	}
}

// zombie reports whether pid is a zombie.
func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// TestGroupWaitHonoursContext: Wait of a live group returns when its
// context ends.
func TestGroupWaitHonoursContext(t *testing.T) {
	g, err := newGroup("/bin/sh", []string{"-c", "sleep 300"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer g.kill()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait: %v", err)
	}
	g.kill()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	if err := g.Wait(ctx2); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Wait after kill: %v, want the leader killed", err)
	}
}

// TestLimitsOf: a new manager has the default limits, SetLimits fills
// zero fields with them, and a limit is named as the recipe's key.
func TestLimitsOf(t *testing.T) {
	d := limits.Default()
	m := NewManager(testRegistry(), Options{Logger: quietLogger(t)})
	if m.limits() != d {
		t.Errorf("a new manager's limits: %+v", m.limits())
	}
	m.SetLimits(limits.Limits{ExplainBatch: time.Second})
	if l := m.limits(); l.ExplainBatch != time.Second || l.SummariseBatch != d.SummariseBatch {
		t.Errorf("after SetLimits: %+v", l)
	}
	for method, want := range map[string]string{
		"Check": "1m (limits.check)", "Fit": "6h (limits.fit)", "Sample": "30m (limits.sample)",
		"Load": "5m (limits.load)", "Release": "5m (limits.load)", "Explain": "10m (limits.explain_batch)",
		"Summarise": "10m (limits.summarise_batch)", "": "1m (limits.handshake)",
	} {
		if got := limitOf(d, method).String(); got != want {
			t.Errorf("limit of %q: %s, want %s", method, got, want)
		}
	}
	for d, want := range map[time.Duration]string{time.Hour: "1h", 90 * time.Second: "90s", 1500 * time.Millisecond: "1500ms", time.Millisecond: "1ms", 1500 * time.Microsecond: "1.5ms", 61 * time.Minute: "61m"} {
		if got := units.FormatDuration(d); got != want {
			t.Errorf("formatDuration(%s) = %s, want %s", d, got, want)
		}
	}
	for _, mem := range []int64{256 << 20, 2 << 30, 3<<30 + 5} {
		if soft := softMemoryLimit(mem); soft >= mem || soft < mem*3/4 {
			t.Errorf("soft memory limit %d of a hard limit of %d: want a little below it", soft, mem)
		}
	}
	for mem, want := range map[int64]int{0: 16 << 20, 64 << 20: 16 << 20, 256 << 20: 32 << 20, 2 << 30: 256 << 20, 16 << 30: 256 << 20} {
		if got := ScriptMaxStack(mem); got != want {
			t.Errorf("ScriptMaxStack(%d) = %d, want %d", mem, got, want)
		}
	}
}
