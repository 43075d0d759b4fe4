package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/internal/proctest"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// The hostile-plugin suite: plugins and scripts that misbehave on
// purpose. For each, the host must end in bounded time, with an error
// that names the plugin (and for a call, the call), and leave no process
// behind.

// A test's limits decide nothing but the deadline the test is about: a
// step that behaves never meets a limit, however loaded the machine (a
// Python plugin that imports torch took 3.4 s to answer Check at load
// average 12; a Go plugin's Check missed a 2 s limit at load average 7
// while another case's memory limit was the subject), and a limit that
// is a test's subject is met by a plugin that never answers, so that it
// expires for sure.

// patient is every limit of a step that behaves: far above what any
// step takes on a loaded machine.
const patient = 5 * time.Minute

// Short limits, for the call (or the handshake) whose deadline a test is
// about: the plugin never answers it.
const (
	shortCall      = 2 * time.Second
	shortHandshake = 3 * time.Second
)

// patientLimits are the limits of tests whose plugins behave, and of
// those whose subject is not a deadline (a crash, a bad answer, the
// memory limit): every limit patient.
func patientLimits() limits.Limits {
	return limits.Limits{Handshake: patient, Check: patient, Fit: patient, Sample: patient,
		Load: patient, ExplainBatch: patient, SummariseBatch: patient, ScriptMemory: 256 << 20}
}

// hostileLimits are patientLimits with the plugin memory at its minimum
// and the limits named by keys (their limits.* keys: handshake, check,
// fit, sample, load, explain_batch, summarise_batch) short: shortCall,
// shortHandshake for the handshake ("" names none). A test names the
// limit that is its subject, and only that one.
func hostileLimits(keys ...string) limits.Limits {
	l := patientLimits()
	l.PluginMemory = limits.MinPluginMemory
	for _, k := range keys {
		if k == "" {
			continue
		}
		i := slices.IndexFunc(l.Durations(), func(d limits.Duration) bool { return d.Key == k })
		if i < 0 {
			panic("hostileLimits: no limit " + k)
		}
		short := shortCall
		if k == "handshake" {
			short = shortHandshake
		}
		*l.Durations()[i].Value = short
	}
	return l
}

// bound is how long a hostile case may take before the test gives up on
// the host: more than any limit, patient ones included. A host that
// works ends every case long before; bound only turns a host that never
// ends into a failure that says so.
const bound = patient + time.Minute

// processes lists the live (not zombie) processes.
func processes() []proctest.Proc {
	var out []proctest.Proc
	for _, p := range proctest.List() {
		if p.Live() {
			out = append(out, p)
		}
	}
	return out
}

// recorded are the pids the hostile plugins of dir recorded.
func recorded(dir string) []int {
	ents, _ := os.ReadDir(filepath.Join(dir, "pids"))
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// leftBehind waits up to a minute for every process of a case to be gone
// and returns those that are not: the recorded pids (plugins,
// grandchildren), any member of their process groups, and any process
// whose command line holds marker (the case's directory, or a script's
// path). A killed process is gone at once on an idle machine; a loaded
// one may take seconds to reap it; one left behind (a grandchild that
// sleeps for 300 s) is still there after the minute.
func leftBehind(dir, marker string) []proctest.Proc {
	for range 1200 {
		if len(live(dir, marker)) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return live(dir, marker)
}

// live lists the processes of a case now (see leftBehind).
func live(dir, marker string) []proctest.Proc {
	pids := recorded(dir)
	var out []proctest.Proc
	for _, p := range processes() {
		if slices.Contains(pids, p.Pid) || slices.Contains(pids, p.PGrp) || marker != "" && strings.Contains(p.Cmdline, marker) {
			out = append(out, p)
		}
	}
	return out
}

// within runs f and fails the test if it takes longer than bound.
func within(t *testing.T, what string, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("%s: no end within %s", what, bound)
	}
	return time.Since(start)
}

// hostileDir makes a plugin directory holding the hostile plugin as name
// (uaxai-<kind>-<mode>_<call>), with a pids directory.
func hostileDir(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "pids"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostileBin, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// drive runs every call of a plugin of kind, in the order the host
// makes them, and returns the first error.
func drive(t *testing.T, m *Manager, kind sdk.Kind, id string) error {
	ctx := context.Background()
	switch kind {
	case sdk.KindPosterior:
		p, err := m.Posterior(ctx, id)
		if err != nil {
			return err
		}
		if err := p.Check(nil, 2); err != nil {
			return err
		}
		pr := params(t)
		train := sdk.Dataset{X: make([]float32, 4*8), Y: []int{0, 1, 2, 0}, N: 4, Len: 8}
		art, err := p.Fit(ctx, sdk.FitRequest{Arch: pr.Arch, Train: train, Val: train, Training: nn.PaperTrainConfig()})
		if err != nil {
			return err
		}
		_, err = p.Sample(ctx, art, sdk.SampleRequest{Seeds: []uint64{1, 2}})
		return err
	case sdk.KindExplainer:
		e, err := m.Explainer(ctx, id)
		if err != nil {
			return err
		}
		if err := e.Check(nil); err != nil {
			return err
		}
		_, err = explain(t, ctx, e, request(nil))
		return err
	default:
		s, err := m.Summary(ctx, id)
		if err != nil {
			return err
		}
		if err := s.Check(nil); err != nil {
			return err
		}
		_, err = s.Summarise(ctx, [][][]float64{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}, nil)
		return err
	}
}

// TestHostilePlugins: a plugin binary that hangs, crashes, spawns
// grandchildren or exhausts its memory in any call, or answers with the
// wrong shape, NaN or Inf, makes an error that names it and the call;
// the host ends in bounded time and, once the Manager is closed, no
// process of the plugin is left, grandchildren included.
func TestHostilePlugins(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	calls := map[sdk.Kind][]string{
		sdk.KindPosterior: {"check", "fit", "sample"},
		sdk.KindExplainer: {"check", "explain"},
		sdk.KindSummary:   {"check", "summarise"},
	}
	method := map[string]string{"check": "Check", "fit": "Fit", "sample": "Sample", "explain": "Explain", "summarise": "Summarise"}
	key := map[string]string{"check": "check", "fit": "fit", "sample": "sample", "explain": "explain_batch", "summarise": "summarise_batch"}
	type tc struct {
		kind       sdk.Kind
		mode, call string
		want       []string // fragments of the error; the plugin's ID is always wanted
		anyOf      []string // if set, the error holds one of these too
		limit      string   // the limit that is the case's subject (hostileLimits), if any
	}
	var cases []tc
	for _, kind := range []sdk.Kind{sdk.KindPosterior, sdk.KindExplainer, sdk.KindSummary} {
		cases = append(cases,
			tc{kind, "hang", "start", []string{"starting plugin", "no handshake within 3s (limits.handshake); killed its process group"}, nil, "handshake"},
			tc{kind, "spawn", "start", []string{"starting plugin", "no handshake within 3s (limits.handshake)"}, nil, "handshake"},
			tc{kind, "crash", "start", []string{"starting plugin", "hostile: crashing in start"}, nil, ""},
			tc{kind, "garbage", "start", []string{"starting plugin", "Unrecognized remote plugin message: hello from a plugin"}, nil, ""},
			tc{kind, "silent", "start", []string{"starting plugin", "no handshake within 3s"}, nil, "handshake"},
			tc{kind, "orphan", "start", []string{"starting plugin"}, nil, ""},
		)
		for _, c := range calls[kind] {
			m, k := method[c], key[c]
			cases = append(cases,
				tc{kind, "hang", c, []string{m + ": no answer within 2s (limits." + k + "); killed its process group"}, nil, k},
				tc{kind, "spawn", c, []string{m + ": no answer within 2s (limits." + k + ")"}, nil, k},
				tc{kind, "crash", c, []string{"exited unexpectedly during " + m, "hostile: crashing in " + c}, nil, ""},
				// The runtime fails to map heap ("fatal error: runtime: out
				// of memory", "fatal error: out of memory allocating heap
				// arena metadata") or a thread's stack ("runtime/cgo:
				// pthread_create failed"), and says so first. The
				// memory limit is the subject: no deadline may come
				// first.
				tc{kind, "oom", c, []string{"died during " + m + ": out of memory (limit 256MiB, limits.plugin_memory)"}, []string{
					"its last stderr lines:\n\tfatal error: ", "its last stderr lines:\n\truntime/cgo: pthread_create failed"}, ""},
			)
		}
	}
	cases = append(cases,
		tc{sdk.KindPosterior, "nan", "fit", []string{"Fit: artifact tensor \"w\" value 0 is NaN (want finite values)"}, nil, ""},
		tc{sdk.KindPosterior, "inf", "fit", []string{"Fit: artifact tensor \"w\" value 0 is +Inf"}, nil, ""},
		tc{sdk.KindPosterior, "shape", "sample", []string{"Sample: draw 0:", "parameters, want"}, nil, ""},
		tc{sdk.KindPosterior, "nan", "sample", []string{"Sample: draw 0: parameter 0 is NaN"}, nil, ""},
		tc{sdk.KindPosterior, "inf", "sample", []string{"Sample: draw 0: parameter 0 is +Inf"}, nil, ""},
		tc{sdk.KindExplainer, "shape", "explain", []string{"Explain: returned 1 maps for a batch of 2 inputs"}, nil, ""},
		tc{sdk.KindExplainer, "nan", "explain", []string{"Explain: input 0: map value 0 is NaN"}, nil, ""},
		tc{sdk.KindExplainer, "inf", "explain", []string{"Explain: input 0: map value 0 is +Inf"}, nil, ""},
		tc{sdk.KindSummary, "shape", "summarise", []string{"Summarise: returned 1 results for a batch of 2 inputs"}, nil, ""},
		tc{sdk.KindSummary, "nan", "summarise", []string{"Summarise: input 0: map value 0 is NaN"}, nil, ""},
		tc{sdk.KindSummary, "inf", "summarise", []string{"Summarise: input 0: map value 0 is +Inf"}, nil, ""},
	)
	for _, c := range cases {
		name := fmt.Sprintf("%s-%s_%s", c.kind, c.mode, c.call)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			id := fmt.Sprintf("%s.%s_%s", c.kind, c.mode, c.call)
			dir := hostileDir(t, "uaxai-"+name)
			m := NewManager(testRegistry(), Options{Dirs: []string{dir}, Limits: hostileLimits(c.limit), Logger: quietLogger(t)})
			defer m.Close()
			var err error
			took := within(t, "the calls", func() { err = drive(t, m, c.kind, id) })
			if err == nil {
				t.Fatalf("%s went through every call without an error", id)
			}
			for _, w := range append([]string{id}, c.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if len(c.anyOf) > 0 && !slices.ContainsFunc(c.anyOf, func(w string) bool { return strings.Contains(err.Error(), w) }) {
				t.Errorf("error %q holds none of %q", err, c.anyOf)
			}
			within(t, "Close", m.Close)
			if left := leftBehind(dir, dir); len(left) > 0 {
				t.Errorf("left behind after %s: %+v", took.Round(time.Millisecond), left)
			}
		})
	}
}

// TestEscapedGrandchildDoesNotBlock: a plugin whose grandchild leaves
// its process group (setsid) and keeps the plugin's stdout open, and
// which then exits, fails to start at once: the host closes the pipes
// itself rather than wait for the grandchild. (The host cannot kill a
// process that left the group; the test does.)
func TestEscapedGrandchildDoesNotBlock(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	dir := hostileDir(t, "uaxai-explainer-escape_start")
	m := NewManager(testRegistry(), Options{Dirs: []string{dir}, Limits: hostileLimits(), Logger: quietLogger(t)})
	defer m.Close()
	var err error
	within(t, "the start", func() { _, err = m.Explainer(context.Background(), "explainer.escape_start") })
	// The grandchild sleeps for 300 s and the handshake limit is longer:
	// a host that waited for the grandchild, or for the limit, would
	// find it gone, or say that no handshake came.
	if err == nil || !strings.Contains(err.Error(), `starting plugin "explainer.escape_start"`) || strings.Contains(err.Error(), "no handshake within") {
		t.Errorf("start: %v", err)
	}
	within(t, "Close", m.Close)
	var left []proctest.Proc
	for range 1200 { // the plugin, killed, may take a loaded machine seconds to reap
		if left = live(dir, ""); len(left) <= 1 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range left {
		syscall.Kill(p.Pid, syscall.SIGKILL)
	}
	if len(left) != 1 || !strings.Contains(left[0].Cmdline, "sleep") {
		t.Errorf("left behind: %+v, want the escaped grandchild only (still asleep: the host did not wait for it)", left)
	}
}

// TestKillOnSignalWhileStarting: a signal kills a plugin that is still
// in its handshake at once (go-plugin holds its client's lock through
// the handshake), and the host's context ends.
func TestKillOnSignalWhileStarting(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	dir := hostileDir(t, "uaxai-explainer-spawn_start")
	// A signal, not the (patient) handshake limit, must end it.
	m := NewManager(testRegistry(), Options{Dirs: []string{dir}, Limits: hostileLimits(), Logger: quietLogger(t)})
	defer m.Close()
	ctx, stop := m.KillOnSignal(context.Background())
	defer stop()
	var err error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err = m.Explainer(ctx, "explainer.spawn_start")
	}()
	for deadline := time.Now().Add(bound); len(recorded(dir)) < 2; { // the plugin and its grandchild are up
		if time.Now().After(deadline) {
			t.Fatalf("the plugin and its grandchild did not start within %s: pids %v", bound, recorded(dir))
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	within(t, "the start after SIGINT", wg.Wait)
	if ctx.Err() == nil {
		t.Error("SIGINT did not end the context")
	}
	if err == nil || !strings.Contains(err.Error(), "explainer.spawn_start") || strings.Contains(err.Error(), "no handshake within") {
		t.Errorf("start after SIGINT: %v, want the signal, not the handshake limit, to end it", err)
	}
	if left := leftBehind(dir, dir); len(left) > 0 {
		t.Errorf("left behind: %+v", left)
	}
}

// TestKilledPluginStaysNamed: after a call missed its deadline and the
// plugin was killed, a later call on the same client says why, naming
// the first call and its limit; the next request starts the plugin
// again.
func TestKilledPluginStaysNamed(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "uaxai-explainer-echo", 0o755)
	m := newManager(t, Options{Dirs: []string{dir}, Limits: hostileLimits("explain_batch")})
	ctx := context.Background()
	e, err := m.Explainer(ctx, "explainer.echo")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := e.Load(ctx, sdk.Draw{Params: params(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = mod.Explain(ctx, request(sdk.Config{"block": true}))
	if err == nil || !strings.Contains(err.Error(), "Explain: no answer within 2s (limits.explain_batch)") {
		t.Fatalf("blocked call: %v", err)
	}
	_, err = mod.Explain(ctx, request(nil))
	if err == nil || !strings.Contains(err.Error(), "was killed during Explain: its Explain had no answer within 2s (limits.explain_batch)") {
		t.Errorf("a call after the kill: %v", err)
	}
	e2, err := m.Explainer(ctx, "explainer.echo")
	if err != nil {
		t.Fatal(err)
	}
	if pidOf(t, e2) == pidOf(t, e) {
		t.Error("the killed plugin was not started again")
	}
	maps, err := explain(t, ctx, e2, request(nil))
	if err != nil {
		t.Fatal(err)
	}
	checkEcho(t, maps)
}

// TestExeServesBuiltins: built-ins and scripts are served by
// Options.Exe; one that cannot run is named in the error.
func TestExeServesBuiltins(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-uaxai")
	m := newManager(t, Options{Exe: missing, Limits: hostileLimits()})
	if _, err := m.Explainer(context.Background(), "explainer.builtin-echo"); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a built-in served by a missing executable: %v", err)
	}
	path := scriptFile(t, "any", "func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) { return nil, nil }\n")
	if _, err := m.Script(context.Background(), path, 1); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a script served by a missing executable: %v", err)
	}
}

// syncLog is a log buffer safe for go-plugin's goroutines.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestPluginTextEscaped: a plugin whose version, log entries, stderr and
// error hold "\x1b[2K\r" (erase the line, back to its start) and
// "\nuaxai: all good" cannot forge a line of the host's: the error, the
// listed version and every line of the host's log show the controls
// escaped, each plugin line stays one line that starts with the log's
// own prefix, and no terminal control reaches the output.
func TestPluginTextEscaped(t *testing.T) {
	const liar = "\x1b[2K\ruaxai: all good\nuaxai: all good" // the hostile plugin's liarText
	escaped := `\x1b[2K\ruaxai: all good\nuaxai: all good`
	dir := hostileDir(t, "uaxai-explainer-liar_check")
	var out syncLog
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: &out})
	m := NewManager(testRegistry(), Options{Dirs: []string{dir}, Limits: hostileLimits(), Logger: log})
	defer m.Close()
	ctx := context.Background()
	e, err := m.Explainer(ctx, "explainer.liar_check")
	if err != nil {
		t.Fatal(err)
	}
	if v := e.Info().Version; v != "0.0.1"+escaped {
		t.Errorf("Info().Version = %q, want %q", v, "0.0.1"+escaped)
	}
	err = e.Check(nil)
	if err == nil || !strings.Contains(err.Error(), escaped) {
		t.Fatalf("Check: %v, want an error quoting %q", err, escaped)
	}
	if !strings.Contains(fmt.Sprint(errors.Unwrap(err)), liar) {
		t.Errorf("Check's error does not unwrap to the plugin's own: %v", errors.Unwrap(err))
	}
	t.Logf("Check: %v", err)
	entries, _ := m.List(ctx)
	for _, en := range entries {
		if en.ID == "explainer.liar_check" && en.Version != "0.0.1"+escaped {
			t.Errorf("List's version %q, want %q", en.Version, "0.0.1"+escaped)
		}
	}
	// The plugin wrote liar three ways: as raw stderr and through
	// go-plugin's forwarding (two lines each, its own newline ends a
	// line) and as one hclog entry (one message: its newline escaped).
	// The forwarded copy comes over go-plugin's stdio stream, which
	// closing the plugin cuts: wait for it first (a loaded machine was
	// seen to close before it arrived).
	first, _, _ := strings.Cut(escaped, `\n`)
	for i := 0; i < 1200 && strings.Count(out.String(), first) < 3; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	m.Close()
	text := out.String()
	if n := strings.Count(text, first); n < 3 {
		t.Errorf("the log quotes the plugin's text %d times escaped, want 3 or more:\n%s", n, text)
	}
	if !strings.Contains(text, "[INFO]  explainer.liar_check.uaxai-explainer-liar_check: "+escaped) {
		t.Errorf("the plugin's log entry is not one info line with its newline escaped:\n%s", text)
	}
	prefix := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[-+Z]\S* \[(TRACE|DEBUG|INFO|WARN|ERROR)\] `)
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if !prefix.MatchString(line) {
			t.Errorf("log line %d is not a log entry of the host's: %q", i+1, line)
		}
	}
	for _, s := range []string{text, err.Error(), e.Info().Version} {
		if strings.ContainsAny(s, "\x1b\r") {
			t.Errorf("a terminal control reaches the output: %q", s)
		}
	}
}

// TestPluginMemory: a plugin binary that allocates more than
// limits.plugin_memory (the hostile plugin's hog mode: 1 GiB, then it
// hangs) is stopped by the host's limit, whichever way this system
// applies it (a cgroup v2 of its own, or RLIMIT_DATA), and the error says
// it ran out of memory and names the limit; the host's log says which
// way was used.
func TestPluginMemory(t *testing.T) {
	if !memLimitsApply {
		t.Skip("the host limits a plugin's memory on Linux only")
	}
	dir := hostileDir(t, "uaxai-explainer-hog_explain")
	var out syncLog
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: &out})
	lim := hostileLimits() // the limit on memory, not a deadline, must end it
	m := NewManager(testRegistry(), Options{Dirs: []string{dir}, Limits: lim, Logger: log})
	defer m.Close()
	var err error
	within(t, "the calls", func() { err = drive(t, m, sdk.KindExplainer, "explainer.hog_explain") })
	limit := formatBytes(lim.PluginMemory) + ", limits.plugin_memory"
	if err == nil || !strings.Contains(err.Error(), "died during Explain: ") || !strings.Contains(err.Error(), "out of memory") ||
		!strings.Contains(err.Error(), "(limit "+limit) {
		t.Errorf("a plugin over its memory limit: %v; want it to have died during Explain of want of memory, with its limit %s", err, limit)
	}
	m.Close()
	how := regexp.MustCompile(`plugin started: .*plugin=explainer.hog_explain .*memory="?([^"\n]*)`).FindStringSubmatch(out.String())
	switch {
	case how == nil:
		t.Errorf("the log does not say how the plugin's memory was limited:\n%s", out.String())
	case !strings.HasPrefix(how[1], formatBytes(lim.PluginMemory)+" by cgroup v2") && !strings.HasPrefix(how[1], formatBytes(lim.PluginMemory)+" by RLIMIT_DATA"):
		t.Errorf("the plugin's memory was limited by %q, want a cgroup v2 or RLIMIT_DATA", how[1])
	default:
		t.Logf("method: %s", how[1])
	}
	t.Logf("error: %v", err)
}

// TestPluginKilledBySignal: a plugin killed from outside the host during
// a call is reported as killed by that signal: SIGKILL, as the kernel's
// OOM killer sends, with the memory limit; SIGTERM by its name alone.
func TestPluginKilledBySignal(t *testing.T) {
	if !memLimitsApply {
		t.Skip("signals are named on Linux")
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		name := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM"}[sig]
		t.Run(name, func(t *testing.T) {
			dir := hostileDir(t, "uaxai-explainer-hang_explain")
			lim := patientLimits()
			lim.PluginMemory = 768 << 20
			m := newManager(t, Options{Dirs: []string{dir}, Limits: lim})
			ctx := context.Background()
			e, err := m.Explainer(ctx, "explainer.hang_explain")
			if err != nil {
				t.Fatal(err)
			}
			pid := pidOf(t, e)
			done := make(chan error, 1)
			go func() {
				_, err := explain(t, ctx, e, request(nil))
				done <- err
			}()
			if err := syscall.Kill(pid, sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err = <-done:
			case <-time.After(bound):
				t.Fatalf("no end of the call within %s of %s", bound, sig)
			}
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("explainer.hang_explain (%s, pid %d) died during ", filepath.Join(dir, "uaxai-explainer-hang_explain"), pid)) ||
				!strings.Contains(err.Error(), ": killed by "+name) {
				t.Fatalf("a plugin killed by %s: %v", name, err)
			}
			if mem := strings.Contains(err.Error(), "likely out of memory (limit 768MiB, limits.plugin_memory)"); mem != (sig == syscall.SIGKILL) {
				t.Errorf("a plugin killed by %s: %v; a memory limit is named for SIGKILL only", name, err)
			}
			t.Logf("%s: %v", name, err)
		})
	}
}

// TestLongTMPDIR: a TMPDIR so long that go-plugin's socket path under it
// cannot fit in a unix socket's address is reported as such, before any
// plugin starts, rather than as the plugin's failure; the longest TMPDIR
// the check accepts works.
func TestLongTMPDIR(t *testing.T) {
	plugins := t.TempDir()
	install(t, plugins, "uaxai-explainer-echo", 0o755)
	base := t.TempDir()
	// dirOf makes a directory of exactly n bytes under base.
	dirOf := func(n int) string {
		d := base + "/" + strings.Repeat("d", n-len(base)-1)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	longest := socketPathMax - socketNameLen
	tooLong := dirOf(longest + 1)
	t.Setenv("TMPDIR", tooLong)
	m := newManager(t, Options{Dirs: []string{plugins}, Limits: patientLimits()})
	_, err := m.Explainer(context.Background(), "explainer.echo")
	want := fmt.Sprintf("TMPDIR %s is %d bytes; unix socket paths must fit in %d bytes: set TMPDIR to a shorter directory", tooLong, len(tooLong), socketPathMax)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a plugin started with a TMPDIR of %d bytes: %v; want %q", len(tooLong), err, want)
	}
	t.Setenv("TMPDIR", dirOf(longest))
	e, err := m.Explainer(context.Background(), "explainer.echo")
	if err != nil {
		t.Fatalf("a plugin started with a TMPDIR of %d bytes, the longest accepted: %v", longest, err)
	}
	maps, err := explain(t, context.Background(), e, request(nil))
	if err != nil {
		t.Fatal(err)
	}
	checkEcho(t, maps)
}
