package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/internal/termsafe"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
)

// PathEnv is the environment variable that lists plugin directories,
// separated by the OS's list separator (':' on Unix).
const PathEnv = "UAXAI_PLUGIN_PATH"

// BinaryPrefix starts the file name of every third-party plugin binary:
// uaxai-<kind>-<name> serves the plugin <kind>.<name>.
const BinaryPrefix = "uaxai-"

// Options configures a Manager.
type Options struct {
	// Exe is the uaxai executable re-executed to serve built-ins as
	// `Exe plugin serve <id>`; empty means os.Executable().
	Exe string
	// Dirs are searched in order for plugin binaries; a missing directory
	// is skipped. DefaultDirs builds the usual list.
	Dirs []string
	// Logger receives the Manager's log and every plugin's stderr; nil
	// means an hclog logger on stderr at level Info.
	Logger hclog.Logger
	// InProcess runs built-ins inside the host process (wrapped by the
	// sdk.Checked* functions, so they behave as remote ones do). For
	// tests; binaries and scripts still run out of process.
	InProcess bool
	// Limits bound every call to a plugin process (zero fields: the
	// defaults); SetLimits changes them for what starts after.
	Limits limits.Limits
	// ScriptOutput receives what summary scripts print (fmt.Print*);
	// nil means os.Stderr.
	ScriptOutput io.Writer
}

// DefaultDirs returns the plugin directories in search order: flagDirs
// (the --plugins flag), then those of $UAXAI_PLUGIN_PATH, then the
// directory of the running executable, without duplicates.
func DefaultDirs(flagDirs ...string) []string {
	var dirs []string
	dirs = append(dirs, flagDirs...)
	dirs = append(dirs, filepath.SplitList(os.Getenv(PathEnv))...)
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		d = filepath.Clean(d)
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// Manager starts plugins, keeps them running for reuse and kills them on
// Close. Its methods are safe for concurrent use.
type Manager struct {
	reg  *Registry
	opts Options
	log  hclog.Logger

	mu      sync.Mutex
	closeMu sync.Mutex // held by Close and Stop while they stop plugins
	closed  bool
	lim     limits.Limits
	slots   map[string]*slot // started (or starting) plugins by ID, scripts by "script <path>"
	procs   map[*proc]bool   // every live child process
	// models serves the networks of the explainers that want the model
	// service (sdk.Info.WantsModel); it listens from the first such Load
	// until Close.
	models *driver.ModelService
}

// slot is one plugin ID's started value; ready closes when v or err is set.
type slot struct {
	ready chan struct{}
	v     any
	p     *proc // nil when in process
	err   error
}

// NewManager returns a Manager for the built-ins of reg and the binaries
// in opts.Dirs. It starts nothing until a plugin is asked for.
func NewManager(reg *Registry, opts Options) *Manager {
	log := opts.Logger
	if log == nil {
		log = hclog.New(&hclog.LoggerOptions{Name: "plugins", Level: hclog.Info, Output: os.Stderr})
	}
	if reg == nil {
		reg = NewRegistry()
	}
	return &Manager{reg: reg, opts: opts, log: log, lim: opts.Limits.OrDefault(), slots: map[string]*slot{}, procs: map[*proc]bool{}, models: driver.NewModelService()}
}

// SetLimits sets the limits of the plugins started from now on, and of
// their calls (zero fields: the defaults). host/runner sets the recipe's.
func (m *Manager) SetLimits(l limits.Limits) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lim = l.OrDefault()
}

// AddDirs puts dirs first in the plugin directories searched, ahead of
// Options.Dirs, without duplicates (a recipe's plugin_dirs). Call it
// before asking for the plugins it should find: host/runner does, as it
// starts a run.
func (m *Manager) AddDirs(dirs ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, d := range append(slices.Clone(dirs), m.opts.Dirs...) {
		if d = filepath.Clean(d); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	m.opts.Dirs = out
}

// dirs are the plugin directories, in search order.
func (m *Manager) dirs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.opts.Dirs
}

// limits are the current limits.
func (m *Manager) limits() limits.Limits {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lim
}

func (m *Manager) scriptOutput() io.Writer {
	if m.opts.ScriptOutput != nil {
		return m.opts.ScriptOutput
	}
	return os.Stderr
}

// Posterior returns the posterior plugin id ("posterior.ensemble"),
// starting it on first use.
func (m *Manager) Posterior(ctx context.Context, id string) (sdk.Posterior, error) {
	v, err := m.plugin(ctx, id, sdk.KindPosterior)
	if err != nil {
		return nil, err
	}
	return v.(sdk.Posterior), nil
}

// Explainer returns the explainer plugin id ("explainer.occlusion"),
// starting it on first use.
func (m *Manager) Explainer(ctx context.Context, id string) (driver.Explainer, error) {
	v, err := m.plugin(ctx, id, sdk.KindExplainer)
	if err != nil {
		return nil, err
	}
	return v.(driver.Explainer), nil
}

// Summary returns the summary plugin id ("summary.mean"), starting it on
// first use.
func (m *Manager) Summary(ctx context.Context, id string) (sdk.Summary, error) {
	v, err := m.plugin(ctx, id, sdk.KindSummary)
	if err != nil {
		return nil, err
	}
	return v.(sdk.Summary), nil
}

// Script returns the summary script at path, served by a process of its
// own (`uaxai plugin serve --script PATH`, the executable of
// Options.Exe), started on first use. The process runs the script in
// yaegi with at most Limits.ScriptMemory of memory, and instances
// interpreters (so that many calls run at once; each has its own
// globals). A script that crashes, overflows its stack or runs out of
// memory ends that process only: the call's error names the script's ID
// and path, and the next request starts it again. A script that does not
// load gives its own error (with the line, for syntax, type and import
// errors).
func (m *Manager) Script(ctx context.Context, path string, instances int) (sdk.Summary, error) {
	v, err := m.get(ctx, "script "+path, func() (any, *proc, error) { return m.startScript(ctx, path, instances) })
	if err != nil {
		return nil, err
	}
	return v.(sdk.Summary), nil
}

// ProbeScript starts the script at path in its own process, as Script
// does, asks its Info and stops it.
func (m *Manager) ProbeScript(ctx context.Context, path string) (sdk.Info, error) {
	v, p, err := m.startScript(ctx, path, 1)
	if err != nil {
		return sdk.Info{}, err
	}
	info := v.(sdk.Plugin).Info()
	m.mu.Lock()
	delete(m.procs, p)
	m.mu.Unlock()
	p.stop()
	return info, nil
}

// startScript starts a script process.
func (m *Manager) startScript(ctx context.Context, path string, instances int) (any, *proc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("summary script %s: %w", path, err)
	}
	if st, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("script %s: %w", path, err)
	} else if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("script %s: not a regular file", path)
	}
	exe, err := m.exe()
	if err != nil {
		return nil, nil, fmt.Errorf("summary script %s: %w", path, err)
	}
	args := []string{"plugin", "serve", "--script", path,
		"--memory", strconv.FormatInt(m.limits().ScriptMemory, 10), "--instances", strconv.Itoa(max(instances, 1))}
	return m.launch(ctx, spec{kind: sdk.KindSummary, path: exe, args: args, source: "script " + path, script: path})
}

// exe is the uaxai executable that serves built-ins and scripts.
func (m *Manager) exe() (string, error) {
	if m.opts.Exe != "" {
		return m.opts.Exe, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the uaxai executable to serve built-ins and scripts: %w", err)
	}
	return exe, nil
}

// Entry is one plugin as `uaxai plugins` lists it. Source is "built-in",
// the binary's path, or the path of the plugin's own directory (one with
// a plugin.toml, see ManifestName). Language is LangGo for a built-in,
// the manifest's language, or the one DetectLanguage finds in the
// binary. Shadowed is set on a binary whose ID is served by an entry
// before it (a built-in, or a binary in an earlier directory): it is
// never used. Problem, if set, says why a binary named like a
// plugin cannot be used ("not executable (mode 0644)", "failed to
// start"); such an entry has no Version.
type Entry struct {
	Problem  string
	ID       string
	Kind     sdk.Kind
	Version  string
	Source   string
	Language string
	Shadowed bool
}

// List returns every plugin the Manager can serve: the built-ins (from
// the registry), then the binaries in the plugin directories, sorted by
// ID. It starts each binary to ask its version (the binary that would be
// used stays running for reuse; shadowed ones are stopped). A binary that
// fails is left out and reported in the error, which joins every failure;
// the entries that worked are returned with it.
func (m *Manager) List(ctx context.Context) ([]Entry, error) {
	var out []Entry
	for _, id := range m.reg.IDs() {
		b, _ := m.reg.Lookup(id)
		out = append(out, Entry{ID: id, Kind: b.Kind, Version: b.Version, Source: "built-in", Language: LangGo})
	}
	bins, scanErr := m.binaries()
	var errs []error
	if scanErr != nil {
		errs = append(errs, scanErr)
	}
	for _, path := range m.notExecutable() {
		id, _ := binaryID(filepath.Base(path))
		kind, _, _ := sdk.ParseID(id)
		problem := "not an executable file"
		if st, err := os.Stat(path); err != nil {
			problem += " (" + err.Error() + ")"
		} else if st.IsDir() {
			problem = "a directory without " + ManifestName + ", not an executable file"
		} else {
			problem += fmt.Sprintf(" (mode %04o)", st.Mode().Perm())
		}
		out = append(out, Entry{ID: id, Kind: kind, Source: path, Problem: problem})
	}
	for _, me := range manifestErrors(scanErr) { // scanErr holds the error
		kind, _, _ := sdk.ParseID(me.id)
		out = append(out, Entry{ID: me.id, Kind: kind, Source: me.dir, Problem: "bad " + ManifestName + " (see the error)"})
	}
	ids := make([]string, 0, len(bins))
	for id := range bins {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		kind, _, _ := sdk.ParseID(id)
		_, builtin := m.reg.m[id]
		for i, bin := range bins[id] {
			shadowed := builtin || i > 0
			var info sdk.Info
			var err error
			if shadowed {
				info, err = m.probe(ctx, id, kind, bin)
			} else {
				var v any
				if v, err = m.plugin(ctx, id, kind); err == nil {
					info = v.(sdk.Plugin).Info()
				}
			}
			if err != nil {
				errs = append(errs, err)
				out = append(out, Entry{ID: id, Kind: kind, Source: bin.source, Language: termsafe.Escape(bin.lang()), Shadowed: shadowed, Problem: "failed to start (see the error)"})
				continue
			}
			out = append(out, Entry{ID: id, Kind: kind, Version: termsafe.Escape(info.Version), Source: bin.source, Language: termsafe.Escape(bin.lang()), Shadowed: shadowed})
		}
	}
	slices.SortStableFunc(out, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	return out, errors.Join(errs...)
}

// Close stops every plugin process the Manager started, with everything
// each started (its process group), and makes later requests fail. A
// plugin is asked to exit and killed if it has not within a few seconds;
// one that is still starting is killed at once. It is safe to call more
// than once.
func (m *Manager) Close() { m.close(false) }

// Stop is Close without asking: every plugin's process group is killed
// at once, also while it starts. KillOnSignal uses it.
func (m *Manager) Stop() { m.close(true) }

func (m *Manager) close(now bool) {
	m.mu.Lock()
	m.closed = true
	procs := m.live()
	m.mu.Unlock()
	if now { // at once, even while another Close waits for its plugins
		for _, p := range procs {
			p.kill()
		}
	}
	// One closer at a time: a Close that comes while another (or Stop)
	// is under way returns when that one is done, so the caller's process
	// never exits with a plugin not yet killed.
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	m.mu.Lock()
	procs = m.live()
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop()
			m.log.Debug("plugin stopped", "plugin", p.id, "source", p.source, "pid", p.pid)
		}()
	}
	wg.Wait()
	m.mu.Lock()
	for _, p := range procs {
		delete(m.procs, p)
	}
	m.mu.Unlock()
	if err := m.models.Close(); err != nil {
		m.log.Warn("closing the model service", "error", err)
	}
}

// live lists the plugin processes; the caller holds m.mu.
func (m *Manager) live() []*proc {
	procs := make([]*proc, 0, len(m.procs))
	for p := range m.procs {
		procs = append(procs, p)
	}
	return procs
}

// KillOnSignal arranges for every child to be killed, with its process
// group, as Stop does, as soon as the process receives SIGINT or SIGTERM
// or ctx is done, even while a plugin starts. It returns a context that
// is cancelled at that moment, for the caller to stop its work and exit,
// and a function that releases the signal handler (without closing the
// Manager). The command line uses it as
//
//	ctx, stop := m.KillOnSignal(ctx)
//	defer stop()
//	defer m.Close()
//
// The handler is released at the first signal as well, so that a second
// one has its default effect (the host exits at once).
func (m *Manager) KillOnSignal(ctx context.Context) (context.Context, func()) {
	sctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	released := make(chan struct{})
	go func() {
		select {
		case <-sctx.Done():
			cancel() // the next signal is not caught here
			select {
			case <-released:
				return
			default:
			}
			m.log.Info("stopping every plugin", "reason", context.Cause(sctx))
			m.Stop()
		case <-released:
		}
	}()
	var once sync.Once
	return sctx, func() {
		once.Do(func() {
			close(released)
			cancel()
		})
	}
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// plugin returns the running plugin id of kind want, starting it once.
func (m *Manager) plugin(ctx context.Context, id string, want sdk.Kind) (any, error) {
	kind, _, err := sdk.ParseID(id)
	if err != nil {
		return nil, fmt.Errorf("%w (known plugins: %s)", err, listIDs(m.knownIDs()))
	}
	if kind != want {
		return nil, fmt.Errorf("plugin %q is of kind %s, not %s", id, kind, want)
	}
	return m.get(ctx, id, func() (any, *proc, error) { return m.start(ctx, id, kind) })
}

// get returns the value of slot key, starting it once with start.
func (m *Manager) get(ctx context.Context, key string, start func() (any, *proc, error)) (any, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, fmt.Errorf("%s: the plugin manager is closed", key)
	}
	s, ok := m.slots[key]
	if !ok {
		s = &slot{ready: make(chan struct{})}
		m.slots[key] = s
		m.mu.Unlock()
		s.v, s.p, s.err = start()
		if s.err != nil {
			m.mu.Lock()
			if m.slots[key] == s {
				delete(m.slots, key)
			}
			m.mu.Unlock()
		}
		close(s.ready)
		return s.v, s.err
	}
	m.mu.Unlock()
	select {
	case <-s.ready:
		return s.v, s.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", key, ctx.Err())
	}
}

// forget drops a dead (or killed) process's slot so that the next
// request restarts the plugin.
func (m *Manager) forget(p *proc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, s := range m.slots {
		if s.p == p {
			delete(m.slots, key)
		}
	}
	delete(m.procs, p)
}

// knownIDs lists the built-ins and the binaries' IDs.
func (m *Manager) knownIDs() []string {
	ids := m.reg.IDs()
	bins, _ := m.binaries()
	for id := range bins {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// start starts plugin id: a built-in (in process or re-executed), else
// the first binary of that ID in the plugin directories.
func (m *Manager) start(ctx context.Context, id string, kind sdk.Kind) (any, *proc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("plugin %q: %w", id, err)
	}
	if b, err := m.reg.Lookup(id); err == nil {
		if m.opts.InProcess {
			v, err := inProcess(b)
			return v, nil, err
		}
		exe, err := m.exe()
		if err != nil {
			return nil, nil, fmt.Errorf("plugin %q: %w", id, err)
		}
		return m.launch(ctx, spec{id: id, kind: kind, path: exe, args: []string{"plugin", "serve", id}, source: "built-in"})
	}
	bins, scanErr := m.binaries()
	if b := bins[id]; len(b) > 0 {
		sp, err := m.pythonSpec(ctx, spec{id: id, kind: kind, path: b[0].command, source: b[0].source}, b[0])
		if err != nil {
			return nil, nil, err
		}
		return m.launch(ctx, sp)
	}
	return nil, nil, m.notFound(id, kind, bins, scanErr)
}

// inProcess makes a built-in and wraps it as a remote plugin behaves.
func inProcess(b Builtin) (any, error) {
	kind, v, err := driver.Local(b.New())
	if err != nil {
		return nil, fmt.Errorf("built-in %q: %w", b.ID, err)
	}
	if kind != b.Kind {
		return nil, fmt.Errorf("built-in %q is registered as a %s but is a %s", b.ID, b.Kind, kind)
	}
	if got := v.(sdk.Plugin).Info().ID; got != b.ID {
		return nil, fmt.Errorf("built-in registered as %q says its ID is %q", b.ID, got)
	}
	return v, nil
}

// binaries scans the plugin directories: for each ID, the executables
// named uaxai-<kind>-<name> and the directories of that name with a
// plugin.toml, in directory order. The error joins those of the
// directories that cannot be read and of the bad manifests.
func (m *Manager) binaries() (map[string][]binary, error) {
	out := map[string][]binary{}
	var errs []error
	for _, dir := range m.dirs() {
		ents, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("plugin directory %s: %w", dir, err))
			}
			continue
		}
		for _, e := range ents {
			id, ok := binaryID(e.Name())
			if !ok {
				continue
			}
			path := filepath.Join(dir, e.Name())
			b, ok, err := scanEntry(id, path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !ok {
				m.log.Debug("skipping plugin file: not an executable file", "path", path)
				continue
			}
			if !slices.ContainsFunc(out[id], func(o binary) bool { return o.source == b.source }) {
				out[id] = append(out[id], b)
			}
		}
	}
	return out, errors.Join(errs...)
}

// notExecutable lists the files of the plugin directories named like a
// plugin binary that are not executable regular files, nor directories
// with a plugin.toml.
func (m *Manager) notExecutable() []string {
	var out []string
	for _, dir := range m.dirs() {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue // binaries() reports it
		}
		for _, e := range ents {
			if _, ok := binaryID(e.Name()); !ok {
				continue
			}
			path := filepath.Join(dir, e.Name())
			st, err := os.Stat(path)
			if err == nil && st.IsDir() && hasManifest(path) {
				continue // binaries() takes it, or reports its manifest
			}
			if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
				if !slices.Contains(out, path) {
					out = append(out, path)
				}
			}
		}
	}
	return out
}

// binaryID returns the plugin ID a binary's file name says:
// uaxai-explainer-gradinput serves explainer.gradinput.
func binaryID(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, BinaryPrefix)
	if !ok {
		return "", false
	}
	kind, pname, ok := strings.Cut(rest, "-")
	if !ok {
		return "", false
	}
	id := kind + "." + pname
	if _, _, err := sdk.ParseID(id); err != nil {
		return "", false
	}
	return id, true
}

// probe starts a binary, asks its Info and stops it.
func (m *Manager) probe(ctx context.Context, id string, kind sdk.Kind, b binary) (sdk.Info, error) {
	if err := ctx.Err(); err != nil {
		return sdk.Info{}, err
	}
	sp, err := m.pythonSpec(ctx, spec{id: id, kind: kind, path: b.command, source: b.source}, b)
	if err != nil {
		return sdk.Info{}, err
	}
	v, p, err := m.launch(ctx, sp)
	if err != nil {
		return sdk.Info{}, err
	}
	info := v.(sdk.Plugin).Info()
	m.mu.Lock()
	delete(m.procs, p)
	m.mu.Unlock()
	p.stop()
	return info, nil
}
