package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin/runner"
	"github.com/uaxai/uaxai/internal/procgroup"
)

// pipeGrace is how long the host keeps reading a plugin's stdout and
// stderr after the plugin process is gone (or was told to die) before it
// closes them itself. A grandchild that left the plugin's process group
// can hold the pipes open forever; go-plugin waits for them to close
// before it reaps the plugin and before Client.Kill returns.
const pipeGrace = 500 * time.Millisecond

// group is one plugin process, started in a process group of its own,
// as the runner of a go-plugin client (ClientConfig.RunnerFunc). It is
// what bounds the life of a plugin and of everything it starts:
//
//   - kill sends SIGKILL to the whole group, at once and without any
//     lock that go-plugin holds (Client.Start holds its lock until the
//     handshake ends), so Close, a signal or a deadline stop a plugin
//     even while it starts;
//   - once the group leader exits, on its own or killed, the rest of its
//     group is killed before the leader is reaped, so a plugin's
//     grandchildren die with it and the group's ID is never reused while
//     it is signalled;
//   - the host closes its ends of the plugin's stdout and stderr pipeGrace
//     after that, so a grandchild that still holds them (one that left
//     the group) cannot block the handshake, the reaping or Kill.
type group struct {
	name           string // the executable, for go-plugin's logs
	socketDir      string // go-plugin's directory for the plugin's socket, removed once it is gone
	cmd            *exec.Cmd
	stdout, stderr *pipe    // the host's ends
	outW, errW     *os.File // the child's ends, closed in the host once started
	closeW         sync.Once

	mu      sync.Mutex
	stopped bool // kill was called: Start refuses, a started group is killed
	started bool
	reaped  bool // the leader was reaped: its ID may be reused, never signal it
	// hostKilled: kill signalled the group before the leader was reaped,
	// so a signal that ended it may be the host's own.
	hostKilled bool
	pid        int

	exited  chan struct{} // closed once the leader has been reaped
	waitErr error         // the leader's exit, once exited is closed

	// mem is the process's memory limit, applied as it starts: by a
	// cgroup of its own (cg) where the host may make one, else by
	// RLIMIT_DATA; memHow says which, for the log; oom is set once
	// reaped if the kernel killed it for want of memory (cgroup only).
	mem    memLimit
	memHow string
	cg     *cgroup
	oom    bool
}

var _ runner.Runner = (*group)(nil)

var errStopped = errors.New("the plugin was stopped before it started")

// newGroup prepares path with args and env (go-plugin's handshake
// variables included) to start in its own process group, its stdin
// /dev/null and its stdout and stderr pipes the host reads. socketDir is
// the directory go-plugin made for the plugin's socket: it is removed
// once the plugin is gone (go-plugin's Kill does not, for a plugin that
// never started).
func newGroup(path string, args, env []string, socketDir string) (*group, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	procgroup.Own(cmd)
	g := &group{name: path, socketDir: socketDir, cmd: cmd, exited: make(chan struct{})}
	var err error
	if g.stdout, g.outW, err = newPipe(); err != nil {
		return nil, err
	}
	if g.stderr, g.errW, err = newPipe(); err != nil {
		g.stdout.Close()
		g.outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = g.outW, g.errW
	return g, nil
}

// Start starts the process, unless kill came first, with its memory
// limited (startLimited).
func (g *group) Start(context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	// The child has its own copies of the write ends; the host's must
	// close, so that the read ends see EOF when the child's do.
	defer g.closeWriters()
	if g.stopped {
		g.closePipes()
		g.removeSocketDir()
		return errStopped
	}
	if err := g.startLimited(); err != nil {
		g.closePipes()
		g.removeSocketDir()
		return err
	}
	g.started, g.pid = true, g.cmd.Process.Pid
	go g.reap()
	return nil
}

// startLimited starts the process with its memory limited to g.mem: in
// a cgroup v2 of its own (memory.max) if the host may make one under its
// own, from the first instruction; else by setting its RLIMIT_DATA at
// once after the start (prlimit; the process has then only begun to
// run). A Go program built with the race detector gets no RLIMIT_DATA
// (its ThreadSanitizer maps far more than it uses), nor does a process
// that limits itself (g.mem.inside). g.memHow records what was done.
func (g *group) startLimited() error {
	switch {
	case g.mem.bytes <= 0 || g.mem.inside || !memLimitsApply:
		g.memHow = "none (limited by the process itself, or not on this system)"
		return g.cmd.Start()
	}
	cg, cgErr := newCgroup(g.mem.bytes)
	if cg != nil {
		cg.attach(g.cmd.SysProcAttr)
		err := g.cmd.Start()
		cg.started()
		if err == nil {
			g.cg, g.memHow = cg, memoryHow(g.mem, "cgroup v2 "+cg.dir+" (memory.max)")
			return nil
		}
		// The kernel refused to start it in the cgroup: start it as
		// exec.Cmd can be started only once, afresh, with RLIMIT_DATA.
		cg.remove()
		cgErr = err
		g.cmd = cloneCmd(g.cmd)
	}
	if raceBuilt(g.cmd.Path) {
		g.memHow = fmt.Sprintf("none: a race-detector build gets no RLIMIT_DATA (cgroup v2: %v)", cgErr)
		return g.cmd.Start()
	}
	if err := g.cmd.Start(); err != nil {
		return err
	}
	if err := limitData(g.cmd.Process.Pid, g.mem.bytes); err != nil {
		procgroup.Kill(g.cmd)
		_ = g.cmd.Wait()
		return fmt.Errorf("limiting the memory of %s to %s (RLIMIT_DATA): %w", g.name, g.mem, err)
	}
	g.memHow = memoryHow(g.mem, fmt.Sprintf("RLIMIT_DATA (cgroup v2: %v)", cgErr))
	return nil
}

// cloneCmd is a fresh exec.Cmd that starts what cmd would have.
func cloneCmd(cmd *exec.Cmd) *exec.Cmd {
	c := exec.Command(cmd.Path, cmd.Args[1:]...)
	c.Env, c.Dir, c.Stdin, c.Stdout, c.Stderr = cmd.Env, cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr
	attr := *cmd.SysProcAttr
	detach(&attr)
	c.SysProcAttr = &attr
	return c
}

// reap waits for the leader to exit, kills what is left of its group,
// reaps the leader, and closes the pipes a moment later.
func (g *group) reap() {
	// waitExit leaves the leader a zombie, so its ID stays the group's.
	if waitExit(g.cmd.Process.Pid) {
		g.mu.Lock()
		procgroup.Kill(g.cmd)
		g.mu.Unlock()
	}
	err := g.cmd.Wait()
	oom := false
	if g.cg != nil {
		oom = g.cg.oomKilled()
		g.cg.remove()
	}
	g.mu.Lock()
	g.reaped, g.waitErr, g.oom = true, err, oom
	g.mu.Unlock()
	g.removeSocketDir()
	close(g.exited)
	time.AfterFunc(pipeGrace, g.closePipes)
}

func (g *group) removeSocketDir() {
	if g.socketDir != "" {
		_ = os.RemoveAll(g.socketDir)
	}
}

// kill kills the process group now (or keeps it from starting) and
// closes the pipes pipeGrace later. It does not wait. It is safe to call
// at any time, more than once.
func (g *group) kill() {
	g.mu.Lock()
	g.stopped = true
	if g.started && !g.reaped {
		procgroup.Kill(g.cmd)
		g.hostKilled = true
	}
	g.mu.Unlock()
	time.AfterFunc(pipeGrace, g.closePipes)
}

func (g *group) closePipes() {
	g.closeWriters()
	g.stdout.Close()
	g.stderr.Close()
}

func (g *group) closeWriters() {
	g.closeW.Do(func() {
		g.outW.Close()
		g.errW.Close()
	})
}

// hasStarted reports whether the process was started.
func (g *group) hasStarted() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started
}

// exit is how the reaped process ended (nil before), whether the kernel
// killed it for want of memory, and whether the host may have killed it.
func (g *group) exit() (st *os.ProcessState, oom, hostKilled bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.reaped {
		return nil, false, false
	}
	return g.cmd.ProcessState, g.oom, g.hostKilled
}

// memory says how the process's memory was limited, for the log.
func (g *group) memory() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.memHow
}

// done is closed once the process has exited and was reaped.
func (g *group) done() <-chan struct{} { return g.exited }

// Wait waits for the leader to exit (go-plugin calls it once stdout and
// stderr are closed).
func (g *group) Wait(ctx context.Context) error {
	select {
	case <-g.exited:
		return g.waitErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Kill is go-plugin's way to stop the plugin: the whole group dies.
func (g *group) Kill(context.Context) error {
	g.kill()
	return nil
}

func (g *group) Stdout() io.ReadCloser { return g.stdout }
func (g *group) Stderr() io.ReadCloser { return g.stderr }
func (g *group) Name() string          { return g.name }

// ID is the leader's pid (the group's ID), "" before Start.
func (g *group) ID() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pid == 0 {
		return ""
	}
	return strconv.Itoa(g.pid)
}

// Diagnose explains a handshake that failed.
func (g *group) Diagnose(context.Context) string {
	return "(a plugin's first line on stdout is go-plugin's handshake, which sdk.Serve prints: a plugin prints nothing else to stdout, logs to stderr, and does not exit before it serves)"
}

// PluginToHost and HostToPlugin: the plugin shares the host's network
// and file system.
func (g *group) PluginToHost(network, addr string) (string, string, error) { return network, addr, nil }
func (g *group) HostToPlugin(network, addr string) (string, string, error) { return network, addr, nil }

// pipe is the host's end of a plugin's stdout or stderr. Once the host
// closes it, a read reports the end of the stream rather than an error
// (go-plugin logs read errors), and eof is closed at the end.
type pipe struct {
	f      *os.File
	closed atomic.Bool
	once   sync.Once
	eof    chan struct{}
}

func newPipe() (*pipe, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return &pipe{f: r, eof: make(chan struct{})}, w, nil
}

func (p *pipe) Read(b []byte) (int, error) {
	n, err := p.f.Read(b)
	if err != nil && (p.closed.Load() || errors.Is(err, os.ErrClosed)) {
		err = io.EOF
	}
	if err == io.EOF {
		p.once.Do(func() { close(p.eof) })
	}
	return n, err
}

// Close closes the host's end; a blocked Read returns io.EOF.
func (p *pipe) Close() error {
	p.closed.Store(true)
	err := p.f.Close()
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

// ended is closed once a read has met the end of the stream.
func (p *pipe) ended() <-chan struct{} { return p.eof }
