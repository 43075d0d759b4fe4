package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/internal/termsafe"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// proc is one running plugin process.
type proc struct {
	m      *Manager
	id     string // the plugin's ID (a script's: set once it answered Info)
	source string // "built-in", the binary's path, or "script <path>"
	script string // a script's path
	client *goplugin.Client
	stderr *tail
	lim    limits.Limits
	mem    memLimit // its memory limit

	mu     sync.Mutex
	g      *group // nil until go-plugin asks for the runner
	killed bool   // kill was called (before or after g was set)
	reason string // why the host killed it, for the calls that fail with it
	pid    int
}

// spec says what to start.
type spec struct {
	id     string // the expected ID; "" for a script (any summary)
	kind   sdk.Kind
	path   string // the executable
	args   []string
	source string
	script string // the script's path, for a script
	// interpreted is the plugin file an interpreter (path) runs, a
	// Python plugin's; "" when path is the plugin.
	interpreted string
}

// name names the plugin in messages before it is known to work.
func (s spec) name() string {
	if s.script != "" {
		return "summary script " + s.script
	}
	return fmt.Sprintf("plugin %q (%s)", s.id, s.source)
}

// what names a started plugin in messages: ID, source and pid.
func (p *proc) what() string {
	return fmt.Sprintf("%s (%s, pid %d)", p.id, p.source, p.pid)
}

// setGroup records the process group go-plugin is about to start; if
// kill came first, the group never starts.
func (p *proc) setGroup(g *group) {
	p.mu.Lock()
	p.g = g
	killed := p.killed
	p.mu.Unlock()
	if killed {
		g.kill()
	}
}

// kill kills the plugin's process group now, whatever go-plugin is doing
// (it holds its client's lock through the whole handshake). It does not
// wait.
func (p *proc) kill() { p.killFor("") }

// killFor kills the process group and records why, for the calls that
// fail because of it.
func (p *proc) killFor(reason string) {
	p.mu.Lock()
	p.killed = true
	if reason != "" && p.reason == "" {
		p.reason = reason
	}
	g := p.g
	p.mu.Unlock()
	if g != nil {
		g.kill()
	}
}

// discard forgets a plugin that died or was killed, so that the next
// request starts it again, and lets go-plugin release its client.
func (p *proc) discard() {
	p.m.forget(p)
	p.mu.Lock()
	p.killed = true // its client's connection closes: later calls fail with Canceled
	p.mu.Unlock()
	go p.client.Kill()
}

// isKilled reports whether the host killed the plugin.
func (p *proc) isKilled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// killedFor is the reason the host killed the plugin, or "".
func (p *proc) killedFor() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reason
}

// closeGrace is how long stop lets a plugin exit by itself (go-plugin
// asks it to, and waits up to 2 s) before its group is killed.
const closeGrace = 3 * time.Second

// stop ends the plugin: go-plugin's Client.Kill (which asks the plugin
// to exit, then kills it), bounded by closeGrace, then the group. It
// returns once go-plugin is done with the process.
func (p *proc) stop() {
	done := make(chan struct{})
	go func() {
		p.client.Kill()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeGrace):
		p.kill()
		<-done
	}
	p.kill() // a grandchild that outlived the plugin: its group was killed when the plugin exited
}

// exited waits up to d for the process to have exited and been reaped,
// and then briefly for its stderr to be read to the end, so that a
// message can quote it. It reports whether the process has exited.
func (p *proc) exited(d time.Duration) bool {
	p.mu.Lock()
	g := p.g
	p.mu.Unlock()
	if g == nil || !g.hasStarted() {
		return false
	}
	select {
	case <-g.done():
	default:
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-g.done():
		case <-t.C:
			return false
		}
	}
	select {
	case <-g.stderr.ended():
	case <-time.After(2 * pipeGrace):
	}
	return true
}

// socketNameLen is the most go-plugin adds to the temporary directory
// for a plugin's socket: the directory it makes there (os.MkdirTemp's
// "plugin-dir" and up to 10 random digits) and the socket the plugin
// makes in that (os.CreateTemp's "plugin" and up to 10 digits).
const socketNameLen = len("/plugin-dir") + 10 + len("/plugin") + 10

// checkSocketDir says, before a plugin starts, whether the socket path
// go-plugin would make for it under TMPDIR (os.TempDir) may not fit in a
// unix socket's address: the plugin would then fail to listen, and the
// host would see a plugin that prints no handshake.
func checkSocketDir() error {
	dir := strings.TrimSuffix(os.TempDir(), "/")
	if n := len(dir) + socketNameLen; n > socketPathMax {
		return fmt.Errorf("TMPDIR %s is %d bytes; unix socket paths must fit in %d bytes: set TMPDIR to a shorter directory (of at most %d bytes), where go-plugin's socket path of up to %d bytes more fits",
			termsafe.Escape(dir), len(dir), socketPathMax, socketPathMax-socketNameLen, socketNameLen)
	}
	return nil
}

// launch starts sp and dispenses its client, checking that it serves the
// expected ID. Starting is bounded by the handshake limit and by ctx:
// past either, the process group is killed, which ends the handshake
// whatever the plugin (or a grandchild holding its stdout) does.
func (m *Manager) launch(ctx context.Context, sp spec) (any, *proc, error) {
	if err := checkSocketDir(); err != nil {
		return nil, nil, fmt.Errorf("cannot start %s: %w", sp.name(), err)
	}
	lim := m.limits()
	p := &proc{m: m, id: sp.id, source: sp.source, script: sp.script, stderr: &tail{}, lim: lim,
		mem: memLimit{bytes: lim.PluginMemoryBytes(), key: "plugin_memory"}}
	if sp.script != "" {
		p.mem = memLimit{bytes: lim.ScriptMemory, key: "script_memory", inside: true}
	}
	log := m.log.Named(sp.id)
	if sp.script != "" {
		log = m.log.Named("script")
	}
	syncStderr := &lineLog{log: log, stream: "stderr", tail: p.stderr}
	if sp.script != "" {
		syncStderr.out = m.scriptOutput()
	}
	p.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: driver.Handshake(),
		Plugins: driver.PluginSetFor(driver.Options{
			Timeouts:  driver.Timeouts{Info: lim.Handshake, Check: lim.Check, Release: lim.Load},
			Models:    m.models,
			ModelCall: modelCallLimit(lim),
		}),
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, socketDir string) (runner.Runner, error) {
			// cmd carries the environment go-plugin made for the plugin.
			g, err := newGroup(sp.path, sp.args, cmd.Env, socketDir)
			if err != nil {
				return nil, err
			}
			if sp.interpreted != "" {
				g.name = sp.interpreted // go-plugin's log names the plugin, not python3
			}
			g.mem = p.mem
			p.setGroup(g)
			return g, nil
		},
		StartTimeout:     2*lim.Handshake + 5*time.Second, // a backstop: the watchdog below comes first
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions:  driver.DialOptions(),
		Logger:           clientLog{log, p},
		Stderr:           p.stderr,
		SyncStdout:       &lineLog{log: log, stream: "stdout"},
		SyncStderr:       syncStderr,
	})
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, nil, fmt.Errorf("%s: the plugin manager is closed", sp.name())
	}
	m.procs[p] = true
	m.mu.Unlock()
	// fail stops the process and returns the error msg makes, once the
	// process's stderr has been read, so that the message can quote it.
	fail := func(msg func() error) (any, *proc, error) {
		p.kill()
		p.exited(time.Second)
		p.stop()
		m.mu.Lock()
		delete(m.procs, p)
		m.mu.Unlock()
		return nil, nil, msg()
	}

	// The watchdog of the handshake.
	const (
		running = iota
		timedOut
		cancelled
	)
	var why atomic.Int32
	started := make(chan struct{})
	go func() {
		t := time.NewTimer(lim.Handshake)
		defer t.Stop()
		select {
		case <-started:
		case <-t.C:
			why.Store(timedOut)
			p.kill()
		case <-ctx.Done():
			why.Store(cancelled)
			p.kill()
		}
	}()
	var raw any
	rpc, err := p.client.Client()
	if err == nil {
		raw, err = rpc.Dispense(string(sp.kind))
	}
	close(started)
	p.mu.Lock()
	if p.g != nil {
		p.pid, _ = strconv.Atoi(p.g.ID())
	}
	p.mu.Unlock()
	if err != nil {
		return fail(func() error {
			switch {
			case why.Load() == timedOut || strings.Contains(err.Error(), "timeout while waiting for plugin to start"):
				return fmt.Errorf("starting %s: no handshake within %s; killed its process group%s", sp.name(), limitOf(lim, ""), p.stderr.suffix())
			case why.Load() == cancelled:
				return fmt.Errorf("starting %s: %w", sp.name(), context.Cause(ctx))
			case sp.script != "" && p.stderr.loadError() != "":
				return errors.New(p.stderr.loadError())
			case p.exitCause() != "":
				return fmt.Errorf("starting %s: it died: %s%s", sp.name(), p.exitCause(), p.stderr.suffix())
			}
			return fmt.Errorf("starting %s: %w%s", sp.name(), escapeErr(err), p.stderr.suffix())
		})
	}
	pl, ok := raw.(sdk.Plugin)
	if !ok {
		return fail(func() error { return fmt.Errorf("%s: dispensed %T, not a plugin", sp.name(), raw) })
	}
	got := pl.Info().ID
	switch {
	case sp.script != "":
		p.id = termsafe.Escape(got)
	case got != sp.id && sp.source == "built-in":
		return fail(func() error {
			return fmt.Errorf("built-in %q serves plugin %q: the registry and the plugin's Info disagree", sp.id, got)
		})
	case got != sp.id:
		return fail(func() error {
			return fmt.Errorf("plugin binary %s serves %q, but its file name says %q; rename it %s%s",
				sp.source, got, sp.id, BinaryPrefix, termsafe.Escape(strings.Replace(got, ".", "-", 1)))
		})
	}
	m.log.Debug("plugin started", "plugin", p.id, "source", p.source, "pid", p.pid, "memory", p.g.memory())
	switch v := raw.(type) {
	case sdk.Posterior:
		return remotePosterior{v, p}, p, nil
	case driver.Explainer:
		return remoteExplainer{v, p}, p, nil
	case sdk.Summary:
		return remoteSummary{v, p}, p, nil
	}
	return fail(func() error { return fmt.Errorf("%s: dispensed %T, not a plugin", sp.name(), raw) })
}

// procError is a plugin process failure: its text names the plugin, the
// binary and the pid; it unwraps to the call's error.
type procError struct {
	msg string
	err error
}

func (e *procError) Error() string { return e.msg }
func (e *procError) Unwrap() error { return e.err }

// pluginError is an error whose text a plugin wrote (a call's error, a
// handshake's failure quoting the plugin's output): its text is escaped
// (termsafe.Escape), so that a plugin cannot print a line of its own
// through it; it unwraps to the error itself.
type pluginError struct{ err error }

func (e pluginError) Error() string { return termsafe.Escape(e.err.Error()) }
func (e pluginError) Unwrap() error { return e.err }

// escapeErr returns err, or a pluginError of it when its text holds
// anything termsafe.Escape escapes.
func escapeErr(err error) error {
	if err == nil || termsafe.Escape(err.Error()) == err.Error() {
		return err
	}
	return pluginError{err}
}

// call runs one call of the plugin under its limit (limitOf).
// Past the limit the plugin's process group is killed, which ends the
// call (and every other call under way in that process), and the error
// names the plugin, the call and the limit; the next request for the
// plugin starts it again. Calls without a context of their own (Check,
// Release) are bounded by the driver with the same limit, which counts
// the same.
func (p *proc) call(ctx context.Context, method string, f func(context.Context) error) error {
	lim := limitOf(p.lim, method)
	// A deadline of the caller's own that comes first is the caller's
	// business: its expiry is no failure of the plugin.
	callerFirst := false
	if dl, ok := ctx.Deadline(); ok && !dl.After(time.Now().Add(lim.d)) {
		callerFirst = true
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var expired atomic.Bool
	reason := fmt.Sprintf("%s had no answer within %s", method, lim)
	t := time.AfterFunc(lim.d, func() {
		expired.Store(true)
		p.killFor(reason)
		cancel()
	})
	err := f(cctx)
	t.Stop()
	if expired.Load() || errors.Is(err, context.DeadlineExceeded) && !callerFirst {
		p.killFor(reason)
		p.discard()
		return &procError{fmt.Sprintf("%s: %s: no answer within %s; killed its process group", p.what(), method, lim), context.DeadlineExceeded}
	}
	return p.wrap(ctx, method, err)
}

// wrap turns the error of a call that failed because the process died,
// was killed or is unreachable into one that says so. ctx is the
// caller's: a call it cancelled is not a failure of the process.
func (p *proc) wrap(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	switch code := status.Code(err); {
	case code == codes.Unavailable, p.exited(0):
	case code == codes.Canceled && ctx.Err() == nil && (p.isKilled() || p.m.isClosed()):
		// the host closed the connection (Close, Stop, a deadline)
	default:
		return escapeErr(err)
	}
	// The connection breaks a moment before the process is reaped.
	exited := p.exited(time.Second)
	closed := p.m.isClosed()
	p.discard()
	what := p.what()
	cause := err.Error()
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		cause = se.GRPCStatus().Message()
	}
	cause = termsafe.Escape(cause)
	switch reason := p.killedFor(); {
	case reason != "":
		return &procError{fmt.Sprintf("%s was killed during %s: its %s", what, method, reason), err}
	case closed:
		return &procError{fmt.Sprintf("%s was stopped during %s: the host is shutting down", what, method), err}
	case exited && p.exitCause() != "":
		return &procError{fmt.Sprintf("%s died during %s: %s%s", what, method, p.exitCause(), p.stderr.suffix()), err}
	case exited && p.script != "":
		if why := p.stderr.fatal(); why != "" {
			return &procError{fmt.Sprintf("%s died during %s: %s%s", what, method, why, scriptHint(why, p.lim)), err}
		}
		return &procError{fmt.Sprintf("%s exited unexpectedly during %s: %s%s", what, method, cause, p.stderr.suffix()), err}
	case exited:
		return &procError{fmt.Sprintf("%s exited unexpectedly during %s: %s%s", what, method, cause, p.stderr.suffix()), err}
	}
	return &procError{fmt.Sprintf("%s is unreachable during %s: %s%s", what, method, cause, p.stderr.suffix()), err}
}

// exitCause says how the exited process ended when that was by a signal
// or for want of memory, else "": "killed by SIGKILL: out of memory
// (...)" when its cgroup says the kernel killed it for want of memory;
// "killed by SIGKILL, likely out of memory (...)" for a SIGKILL from
// outside the host (the kernel's OOM killer sends it, and says so only in
// its own log), unless the host signalled the process itself; "killed by
// SIGSEGV" and the like; "out of memory (...)"
// for a Go runtime that failed to map memory and said so on stderr (its
// exit status is then 2; the message quotes that stderr). The parentheses hold the process's limit and
// its key. A script's process says more (scriptHint).
func (p *proc) exitCause() string {
	p.mu.Lock()
	g := p.g
	p.mu.Unlock()
	if g == nil {
		return ""
	}
	st, oom, hostKilled := g.exit()
	if st == nil {
		return ""
	}
	limit := "no limit"
	if p.mem.bytes > 0 {
		limit = "limit " + p.mem.String()
	}
	sig, signalled := signalOf(st)
	if hostKilled && !oom {
		signalled = false // the host's own SIGKILL: the caller says why it sent it
	}
	switch {
	case oom:
		return fmt.Sprintf("killed by %s: out of memory (%s; the kernel's OOM killer, in its cgroup)", sig, limit)
	case signalled && sig == "SIGKILL":
		return fmt.Sprintf("killed by SIGKILL, likely out of memory (%s), or by something outside the host", limit)
	case signalled:
		return "killed by " + sig
	case p.script == "" && memoryFatal(p.stderr.fatal()):
		return fmt.Sprintf("out of memory (%s)", limit) // its stderr, which the message quotes, says how
	}
	return ""
}

// memoryFatal reports whether a Go fatal error is the runtime's failure
// to map memory (its heap, its arenas' metadata, a thread's stack).
func memoryFatal(line string) bool {
	return strings.Contains(line, "out of memory") || strings.Contains(line, "cannot allocate memory") || strings.Contains(line, "pthread_create failed")
}

// remotePosterior, remoteExplainer and remoteSummary add deadlines and
// process failure detection to the driver's clients, and escape the text
// of their Info (safeInfo).
type remotePosterior struct {
	sdk.Posterior
	p *proc
}

// safeInfo is a plugin's Info with its free text (Version, Summary)
// escaped (termsafe.Escape), as `uaxai plugins`, the run's log and its
// results show them. Its ID was checked against the expected one.
func safeInfo(i sdk.Info) sdk.Info {
	i.Version, i.Summary = termsafe.Escape(i.Version), termsafe.Escape(i.Summary)
	return i
}

func (r remotePosterior) Info() sdk.Info { return safeInfo(r.Posterior.Info()) }
func (r remoteExplainer) Info() sdk.Info { return safeInfo(r.Explainer.Info()) }
func (r remoteSummary) Info() sdk.Info   { return safeInfo(r.Summary.Info()) }

func (r remotePosterior) Check(cfg sdk.Config, draws int) error {
	return r.p.call(context.Background(), "Check", func(context.Context) error { return r.Posterior.Check(cfg, draws) })
}

// Parts forwards sdk.Parted (the driver's posterior implements it; a
// plugin that does not answers 0), under the Check deadline.
func (r remotePosterior) Parts(cfg sdk.Config) (k int, err error) {
	pp, ok := r.Posterior.(sdk.Parted)
	if !ok {
		return 0, nil
	}
	err = r.p.call(context.Background(), "Parts", func(context.Context) (err error) {
		k, err = pp.Parts(cfg)
		return err
	})
	return k, err
}

func (r remotePosterior) Fit(ctx context.Context, req sdk.FitRequest) (a sdk.Artifact, err error) {
	err = r.p.call(ctx, "Fit", func(ctx context.Context) (err error) {
		a, err = r.Posterior.Fit(ctx, req)
		return err
	})
	return a, err
}

func (r remotePosterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) (d []nn.Params, err error) {
	err = r.p.call(ctx, "Sample", func(ctx context.Context) (err error) {
		d, err = r.Posterior.Sample(ctx, a, req)
		return err
	})
	return d, err
}

// SampleDraws forwards sdk.DrawSampler (the driver's posterior implements
// it: the served draws of a posterior that serves them) under the
// process's deadline.
func (r remotePosterior) SampleDraws(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) (d []sdk.Draw, err error) {
	err = r.p.call(ctx, "Sample", func(ctx context.Context) (err error) {
		d, err = driver.SampleDraws(ctx, r.Posterior, a, req)
		return err
	})
	if err != nil {
		return nil, r.ModelCalls().Expire(err) // a served draw's Describe past model_call
	}
	return d, nil
}

// modelCallLimit is each request's limit to a served draw's model
// service (limits.model_call).
func modelCallLimit(l limits.Limits) sdk.CallLimit {
	lim := limitOf(l, "ModelCall")
	return sdk.CallLimit{Timeout: lim.d, Key: "limits." + lim.key}
}

// ModelCalls makes the posterior a driver.DrawServer: the host's
// requests to its served draws have limits.model_call, and one past it
// kills the posterior's process group (which serves them, hung in the
// request or not) and fails naming the plugin. The next request for the
// posterior starts it again.
func (r remotePosterior) ModelCalls() driver.ModelCalls {
	return driver.ModelCalls{Limit: modelCallLimit(r.p.lim), Expired: r.p.modelCallExpired}
}

// modelCallExpired kills the process whose served draw had no answer
// within limits.model_call, waits (a few seconds at most) for it to be
// reaped, and returns err naming the plugin.
func (p *proc) modelCallExpired(err error) error {
	p.killFor(fmt.Sprintf("model service had no answer within %s", limitOf(p.lim, "ModelCall")))
	p.exited(5 * time.Second)
	p.discard()
	return &procError{fmt.Sprintf("%s: %s; killed its process group", p.what(), termsafe.Escape(err.Error())), err}
}

type remoteExplainer struct {
	driver.Explainer
	p *proc
}

func (r remoteExplainer) Check(cfg sdk.Config) error {
	return r.p.call(context.Background(), "Check", func(context.Context) error { return r.Explainer.Check(cfg) })
}

func (r remoteExplainer) Load(ctx context.Context, draw sdk.Draw) (driver.Model, error) {
	var m driver.Model
	err := r.p.call(ctx, "Load", func(ctx context.Context) (err error) {
		m, err = r.Explainer.Load(ctx, draw)
		return err
	})
	if err != nil {
		return nil, err
	}
	return deadlineModel{m, r.p}, nil
}

// deadlineModel is a draw loaded into an explainer plugin (driver.Model)
// whose Explain and Close run under the plugin process's limits
// (limits.explain_batch, limits.load): past one, the process is killed.
type deadlineModel struct {
	driver.Model
	p *proc
}

func (r deadlineModel) Explain(ctx context.Context, req sdk.ExplainRequest) (maps [][]float64, err error) {
	err = r.p.call(ctx, "Explain", func(ctx context.Context) (err error) {
		maps, err = r.Model.Explain(ctx, req)
		return err
	})
	return maps, err
}

func (r deadlineModel) Close() error {
	return r.p.call(context.Background(), "Release", func(context.Context) error { return r.Model.Close() })
}

type remoteSummary struct {
	sdk.Summary
	p *proc
}

func (r remoteSummary) Check(cfg sdk.Config) error {
	return r.p.call(context.Background(), "Check", func(context.Context) error { return r.Summary.Check(cfg) })
}

func (r remoteSummary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) (res []sdk.Result, err error) {
	err = r.p.call(ctx, "Summarise", func(ctx context.Context) (err error) {
		res, err = r.Summary.Summarise(ctx, draws, cfg)
		return err
	})
	return res, err
}

// tail keeps the last lines a plugin wrote to stderr that are not JSON
// log entries (those go to the host's log), or, once a Go panic or fatal
// error starts, its first lines; each escaped (termsafe.Escape), as the
// errors that quote them must show them.
type tail struct {
	mu      sync.Mutex
	cur     []byte
	lines   []string
	inPanic bool
	loadErr string // a script process's load error (scriptErrorPrefix)
}

// scriptErrorPrefix starts the line a script process writes to stderr
// when the script does not load, followed by the error quoted as a Go
// string; the process then exits with status 3. The host returns that
// error as it is: it names the script, and the line for syntax, type and
// import errors.
const scriptErrorPrefix = "uaxai: script load error: "

// escapeLines escapes each line of s (termsafe.Escape) and keeps the
// newlines between them: a script process's load error, which the host's
// own code wrote over several lines.
func escapeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = termsafe.Escape(l)
	}
	return strings.Join(lines, "\n")
}

// loadError is the load error a script process reported, or "".
func (t *tail) loadError() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.loadErr
}

const (
	tailLines   = 12
	tailLineLen = 300
)

// Write receives the plugin's raw stderr.
func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range b {
		if c != '\n' {
			if len(t.cur) < tailLineLen {
				t.cur = append(t.cur, c)
			}
			continue
		}
		line := termsafe.Escape(string(bytes.TrimSpace(t.cur)))
		t.cur = t.cur[:0]
		switch {
		case strings.HasPrefix(line, scriptErrorPrefix):
			if msg, err := strconv.Unquote(strings.TrimPrefix(line, scriptErrorPrefix)); err == nil {
				t.loadErr = escapeLines(msg)
			}
		case line == "" || strings.HasPrefix(line, "{"):
		case !t.inPanic && crashLine(line):
			t.lines, t.inPanic = []string{line}, true
		case t.inPanic:
			if len(t.lines) < tailLines {
				t.lines = append(t.lines, line)
			}
		default:
			t.lines = append(t.lines, line)
			if len(t.lines) > tailLines {
				t.lines = t.lines[1:]
			}
		}
	}
	return len(b), nil
}

// crashLine reports whether line starts a Go panic, a fatal error of the
// Go runtime, or a crash by a signal (as when the runtime cannot start a
// thread for want of memory).
func crashLine(line string) bool {
	for _, p := range []string{"panic: ", "fatal error: ", "runtime/cgo: ", "SIGABRT: ", "SIGSEGV: ", "SIGBUS: ", "SIGILL: ", "SIGFPE: "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// fatal is the first line of the Go panic or fatal error the plugin
// wrote, or "".
func (t *tail) fatal() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inPanic && len(t.lines) > 0 {
		return t.lines[0]
	}
	return ""
}

// scriptHint says what a script process's fatal error means.
func scriptHint(fatal string, lim limits.Limits) string {
	switch {
	case strings.Contains(fatal, "stack overflow"):
		return fmt.Sprintf(" (the script recursed too deep: a script's stacks are limited to %dMiB)", ScriptMaxStack(lim.ScriptMemory)>>20)
	case memoryFatal(fatal):
		return fmt.Sprintf(" (the script needed more memory than limits.script_memory, %dMiB)", lim.ScriptMemory>>20)
	}
	return ""
}

// suffix is "" or "; its last stderr lines: ..." for an error message.
func (t *tail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if len(t.cur) > 0 && t.cur[0] != '{' {
		lines = append(lines[:len(lines):len(lines)], termsafe.Escape(string(t.cur)))
	}
	if len(lines) == 0 {
		return ""
	}
	return "; its last stderr lines:\n\t" + strings.Join(lines, "\n\t")
}

// lineLog logs what a plugin writes to its (go-plugin redirected) stdout
// and stderr, line by line at debug level, and feeds stderr to the tail.
// With out set (a script's stderr: what the script prints), the lines go
// there instead of the log. Each line is escaped (termsafe.Escape): a
// carriage return or an escape sequence in it is shown, not acted on.
type lineLog struct {
	log    hclog.Logger
	stream string
	tail   *tail
	out    io.Writer
	mu     sync.Mutex
	cur    []byte
}

// Write receives the plugin's redirected output.
func (l *lineLog) Write(b []byte) (int, error) {
	if l.tail != nil {
		_, _ = l.tail.Write(b)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range b {
		if c != '\n' {
			if len(l.cur) < 4096 {
				l.cur = append(l.cur, c)
			}
			continue
		}
		line := termsafe.Escape(string(l.cur))
		if l.out != nil {
			_, _ = io.WriteString(l.out, line+"\n")
		} else {
			l.log.Debug(line, "stream", l.stream)
		}
		l.cur = l.cur[:0]
	}
	return len(b), nil
}
