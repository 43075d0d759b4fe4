package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"

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
	// tests; binaries still run out of process.
	InProcess bool
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

	mu     sync.Mutex
	closed bool
	slots  map[string]*slot // started (or starting) plugins by ID
	procs  map[*proc]bool   // every live child process
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
	return &Manager{reg: reg, opts: opts, log: log, slots: map[string]*slot{}, procs: map[*proc]bool{}}
}

// Posterior returns the posterior plugin id ("posterior.ensemble"),
// starting it on first use.
func (m *Manager) Posterior(ctx context.Context, id string) (sdk.Posterior, error) {
	v, err := m.get(ctx, id, sdk.KindPosterior)
	if err != nil {
		return nil, err
	}
	return v.(sdk.Posterior), nil
}

// Explainer returns the explainer plugin id ("explainer.occlusion"),
// starting it on first use.
func (m *Manager) Explainer(ctx context.Context, id string) (driver.Explainer, error) {
	v, err := m.get(ctx, id, sdk.KindExplainer)
	if err != nil {
		return nil, err
	}
	return v.(driver.Explainer), nil
}

// Summary returns the summary plugin id ("summary.mean"), starting it on
// first use.
func (m *Manager) Summary(ctx context.Context, id string) (sdk.Summary, error) {
	v, err := m.get(ctx, id, sdk.KindSummary)
	if err != nil {
		return nil, err
	}
	return v.(sdk.Summary), nil
}

// Entry is one plugin as `uaxai plugins` lists it. Source is "built-in"
// or the binary's path. Shadowed is set on a binary whose ID is served by
// an entry before it (a built-in, or a binary in an earlier directory):
// it is never used. Problem, if set, says why a binary named like a
// plugin cannot be used ("not executable (mode 0644)", "failed to
// start"); such an entry has no Version.
type Entry struct {
	Problem  string
	ID       string
	Kind     sdk.Kind
	Version  string
	Source   string
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
		out = append(out, Entry{ID: id, Kind: b.Kind, Version: b.Version, Source: "built-in"})
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
			problem = "a directory, not an executable file"
		} else {
			problem += fmt.Sprintf(" (mode %04o)", st.Mode().Perm())
		}
		out = append(out, Entry{ID: id, Kind: kind, Source: path, Problem: problem})
	}
	ids := make([]string, 0, len(bins))
	for id := range bins {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		kind, _, _ := sdk.ParseID(id)
		_, builtin := m.reg.m[id]
		for i, path := range bins[id] {
			shadowed := builtin || i > 0
			var info sdk.Info
			var err error
			if shadowed {
				info, err = m.probe(ctx, id, kind, path)
			} else {
				var v any
				if v, err = m.get(ctx, id, kind); err == nil {
					info = v.(sdk.Plugin).Info()
				}
			}
			if err != nil {
				errs = append(errs, err)
				out = append(out, Entry{ID: id, Kind: kind, Source: path, Shadowed: shadowed, Problem: "failed to start (see the error)"})
				continue
			}
			out = append(out, Entry{ID: id, Kind: kind, Version: info.Version, Source: path, Shadowed: shadowed})
		}
	}
	slices.SortStableFunc(out, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	return out, errors.Join(errs...)
}

// Close kills every plugin process the Manager started and makes later
// requests fail. It is safe to call more than once.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	procs := make([]*proc, 0, len(m.procs))
	for p := range m.procs {
		procs = append(procs, p)
	}
	m.procs = map[*proc]bool{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.client.Kill()
			m.log.Debug("plugin stopped", "plugin", p.id, "source", p.source, "pid", p.pid)
		}()
	}
	wg.Wait()
}

// KillOnSignal arranges for every child to be killed, as Close does, as
// soon as the process receives SIGINT or SIGTERM or ctx is done. It
// returns a context that is cancelled at that moment, for the caller to
// stop its work and exit, and a function that releases the signal
// handler (without closing the Manager). The command line uses it as
//
//	ctx, stop := m.KillOnSignal(ctx)
//	defer stop()
//	defer m.Close()
//
// After the first signal, a second one is caught as well until stop is
// called; the caller should return promptly once ctx is done.
func (m *Manager) KillOnSignal(ctx context.Context) (context.Context, func()) {
	sctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	released := make(chan struct{})
	go func() {
		select {
		case <-sctx.Done():
			select {
			case <-released:
				return
			default:
			}
			m.log.Info("stopping every plugin", "reason", context.Cause(sctx))
			m.Close()
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

// get returns the running plugin id of kind want, starting it once.
func (m *Manager) get(ctx context.Context, id string, want sdk.Kind) (any, error) {
	kind, _, err := sdk.ParseID(id)
	if err != nil {
		return nil, fmt.Errorf("%w (known plugins: %s)", err, listIDs(m.knownIDs()))
	}
	if kind != want {
		return nil, fmt.Errorf("plugin %q is of kind %s, not %s", id, kind, want)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, fmt.Errorf("plugin %q: the plugin manager is closed", id)
	}
	s, ok := m.slots[id]
	if !ok {
		s = &slot{ready: make(chan struct{})}
		m.slots[id] = s
		m.mu.Unlock()
		s.v, s.p, s.err = m.start(ctx, id, kind)
		if s.err != nil {
			m.mu.Lock()
			if m.slots[id] == s {
				delete(m.slots, id)
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
		return nil, fmt.Errorf("plugin %q: %w", id, ctx.Err())
	}
}

// forget drops a dead process's slot so that the next request restarts
// the plugin.
func (m *Manager) forget(p *proc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.slots[p.id]; ok && s.p == p {
		delete(m.slots, p.id)
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
		exe := m.opts.Exe
		if exe == "" {
			if exe, err = os.Executable(); err != nil {
				return nil, nil, fmt.Errorf("plugin %q: finding the uaxai executable to serve built-ins: %w", id, err)
			}
		}
		return m.launch(id, kind, exec.Command(exe, "plugin", "serve", id), "built-in")
	}
	bins, scanErr := m.binaries()
	if paths := bins[id]; len(paths) > 0 {
		return m.launch(id, kind, exec.Command(paths[0]), paths[0])
	}
	ids := m.reg.IDs()
	for bid := range bins {
		ids = append(ids, bid)
	}
	slices.Sort(ids)
	err := fmt.Errorf("unknown plugin %q (known: %s; plugin binaries named %s%s-%s are searched in: %s)",
		id, listIDs(slices.Compact(ids)), BinaryPrefix, kind, strings.TrimPrefix(id, string(kind)+"."), listIDs(m.opts.Dirs))
	if scanErr != nil {
		err = errors.Join(err, scanErr)
	}
	return nil, nil, err
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

// binaries scans the plugin directories: for each ID, the paths of the
// executables named uaxai-<kind>-<name>, in directory order.
func (m *Manager) binaries() (map[string][]string, error) {
	out := map[string][]string{}
	var errs []error
	for _, dir := range m.opts.Dirs {
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
			st, err := os.Stat(path)
			if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
				m.log.Debug("skipping plugin file: not an executable file", "path", path)
				continue
			}
			if !slices.Contains(out[id], path) {
				out[id] = append(out[id], path)
			}
		}
	}
	return out, errors.Join(errs...)
}

// notExecutable lists the files of the plugin directories named like a
// plugin binary that are not executable regular files.
func (m *Manager) notExecutable() []string {
	var out []string
	for _, dir := range m.opts.Dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue // binaries() reports it
		}
		for _, e := range ents {
			if _, ok := binaryID(e.Name()); !ok {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
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
func (m *Manager) probe(ctx context.Context, id string, kind sdk.Kind, path string) (sdk.Info, error) {
	if err := ctx.Err(); err != nil {
		return sdk.Info{}, err
	}
	v, p, err := m.launch(id, kind, exec.Command(path), path)
	if err != nil {
		return sdk.Info{}, err
	}
	info := v.(sdk.Plugin).Info()
	m.mu.Lock()
	delete(m.procs, p)
	m.mu.Unlock()
	p.client.Kill()
	return info, nil
}
