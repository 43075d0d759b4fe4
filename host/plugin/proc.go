package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// proc is one running plugin process.
type proc struct {
	m      *Manager
	id     string
	source string // "built-in" or the binary's path
	client *goplugin.Client
	pid    int
	stderr *tail
}

// launch starts cmd as the plugin id and dispenses its client, checking
// that it serves the expected ID.
func (m *Manager) launch(id string, kind sdk.Kind, cmd *exec.Cmd, source string) (any, *proc, error) {
	configureCmd(cmd)
	p := &proc{m: m, id: id, source: source, stderr: &tail{}}
	p.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  driver.Handshake(),
		Plugins:          driver.PluginSet(),
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions:  driver.DialOptions(),
		Logger:           m.log.Named(id),
		Stderr:           p.stderr,
		SyncStdout:       &lineLog{log: m.log.Named(id), stream: "stdout"},
		SyncStderr:       &lineLog{log: m.log.Named(id), stream: "stderr", tail: p.stderr},
	})
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, nil, fmt.Errorf("plugin %q: the plugin manager is closed", id)
	}
	m.procs[p] = true
	m.mu.Unlock()
	// fail stops the process and returns the error msg makes, once the
	// process's stderr has been read (go-plugin drains it before it marks
	// the process exited), so that the message can quote it.
	fail := func(msg func() error) (any, *proc, error) {
		p.client.Kill()
		for i := 0; i < 40 && !p.client.Exited(); i++ {
			time.Sleep(25 * time.Millisecond)
		}
		m.mu.Lock()
		delete(m.procs, p)
		m.mu.Unlock()
		return nil, nil, msg()
	}

	rpc, err := p.client.Client()
	if err != nil {
		return fail(func() error {
			return fmt.Errorf("starting plugin %q (%s): %w%s", id, source, err, p.stderr.suffix())
		})
	}
	if rc := p.client.ReattachConfig(); rc != nil {
		p.pid = rc.Pid
	}
	raw, err := rpc.Dispense(string(kind))
	if err != nil {
		return fail(func() error {
			return fmt.Errorf("plugin %q (%s, pid %d): %w%s", id, source, p.pid, err, p.stderr.suffix())
		})
	}
	pl, ok := raw.(sdk.Plugin)
	if !ok {
		return fail(func() error { return fmt.Errorf("plugin %q (%s): dispensed %T, not a plugin", id, source, raw) })
	}
	if got := pl.Info().ID; got != id {
		if source == "built-in" {
			return fail(func() error {
				return fmt.Errorf("built-in %q serves plugin %q: the registry and the plugin's Info disagree", id, got)
			})
		}
		return fail(func() error {
			return fmt.Errorf("plugin binary %s serves %q, but its file name says %q; rename it %s%s",
				source, got, id, BinaryPrefix, strings.Replace(got, ".", "-", 1))
		})
	}
	m.log.Debug("plugin started", "plugin", id, "source", source, "pid", p.pid)
	switch v := raw.(type) {
	case sdk.Posterior:
		return remotePosterior{v, p}, p, nil
	case driver.Explainer:
		return remoteExplainer{v, p}, p, nil
	case sdk.Summary:
		return remoteSummary{v, p}, p, nil
	}
	return fail(func() error { return fmt.Errorf("plugin %q (%s): dispensed %T, not a plugin", id, source, raw) })
}

// procError is a plugin process failure: its text names the plugin, the
// binary and the pid; it unwraps to the call's error.
type procError struct {
	msg string
	err error
}

func (e *procError) Error() string { return e.msg }
func (e *procError) Unwrap() error { return e.err }

// wrap turns the error of a call that failed because the process died
// (or is unreachable) into one that says so.
func (p *proc) wrap(method string, err error) error {
	if err == nil {
		return nil
	}
	if status.Code(err) != codes.Unavailable && !p.client.Exited() {
		return err
	}
	// The connection breaks a moment before the process is reaped.
	exited := p.client.Exited()
	for i := 0; !exited && i < 40; i++ {
		time.Sleep(25 * time.Millisecond)
		exited = p.client.Exited()
	}
	closed := p.m.isClosed()
	p.m.forget(p)
	what := fmt.Sprintf("%s (%s, pid %d)", p.id, p.source, p.pid)
	cause := err.Error()
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		cause = se.GRPCStatus().Message()
	}
	switch {
	case closed:
		return &procError{fmt.Sprintf("%s was stopped during %s: the host is shutting down", what, method), err}
	case exited:
		return &procError{fmt.Sprintf("%s exited unexpectedly during %s: %s%s", what, method, cause, p.stderr.suffix()), err}
	}
	return &procError{fmt.Sprintf("%s is unreachable during %s: %s%s", what, method, cause, p.stderr.suffix()), err}
}

// remotePosterior, remoteExplainer and remoteSummary add process failure
// detection to the driver's clients.
type remotePosterior struct {
	sdk.Posterior
	p *proc
}

func (r remotePosterior) Check(cfg sdk.Config, draws int) error {
	return r.p.wrap("Check", r.Posterior.Check(cfg, draws))
}

func (r remotePosterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	a, err := r.Posterior.Fit(ctx, req)
	return a, r.p.wrap("Fit", err)
}

func (r remotePosterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	d, err := r.Posterior.Sample(ctx, a, req)
	return d, r.p.wrap("Sample", err)
}

type remoteExplainer struct {
	driver.Explainer
	p *proc
}

func (r remoteExplainer) Check(cfg sdk.Config) error {
	return r.p.wrap("Check", r.Explainer.Check(cfg))
}

func (r remoteExplainer) Load(ctx context.Context, draw nn.Params) (driver.Model, error) {
	m, err := r.Explainer.Load(ctx, draw)
	if err != nil {
		return nil, r.p.wrap("Load", err)
	}
	return remoteModel{m, r.p}, nil
}

type remoteModel struct {
	driver.Model
	p *proc
}

func (r remoteModel) Explain(ctx context.Context, req sdk.ExplainRequest) ([][]float64, error) {
	maps, err := r.Model.Explain(ctx, req)
	return maps, r.p.wrap("Explain", err)
}

func (r remoteModel) Close() error { return r.p.wrap("Release", r.Model.Close()) }

type remoteSummary struct {
	sdk.Summary
	p *proc
}

func (r remoteSummary) Check(cfg sdk.Config) error {
	return r.p.wrap("Check", r.Summary.Check(cfg))
}

func (r remoteSummary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	res, err := r.Summary.Summarise(ctx, draws, cfg)
	return res, r.p.wrap("Summarise", err)
}

// tail keeps the last lines a plugin wrote to stderr that are not JSON
// log entries (those go to the host's log), or, once a Go panic or fatal
// error starts, its first lines.
type tail struct {
	mu      sync.Mutex
	cur     []byte
	lines   []string
	inPanic bool
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
		line := string(bytes.TrimSpace(t.cur))
		t.cur = t.cur[:0]
		switch {
		case line == "" || strings.HasPrefix(line, "{"):
		case strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: "):
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

// suffix is "" or "; its last stderr lines: ..." for an error message.
func (t *tail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if len(t.cur) > 0 && t.cur[0] != '{' {
		lines = append(lines[:len(lines):len(lines)], string(t.cur))
	}
	if len(lines) == 0 {
		return ""
	}
	return "; its last stderr lines:\n\t" + strings.Join(lines, "\n\t")
}

// lineLog logs what a plugin writes to its (go-plugin redirected) stdout
// and stderr, line by line at debug level, and feeds stderr to the tail.
type lineLog struct {
	log    hclog.Logger
	stream string
	tail   *tail
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
		l.log.Debug(string(l.cur), "stream", l.stream)
		l.cur = l.cur[:0]
	}
	return len(b), nil
}
