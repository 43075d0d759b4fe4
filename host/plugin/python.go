package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// PythonEnv names the environment variable that names the interpreter of
// the Python plugins (a path, or a name looked up on PATH). It is tried
// after a plugin's own (plugin.toml's python) and before the defaults.
const PythonEnv = "UAXAI_PYTHON"

// pythonDefaults are the interpreters tried after the plugin's own, the
// environment's and its #! line's: the first python3 on PATH (what the
// #! line "/usr/bin/env python3" runs), then Debian's, whose
// python3-numpy, python3-grpcio and python3-protobuf packages the kit
// is written against. Tests replace it.
var pythonDefaults = []string{"python3", "/usr/bin/python3"}

// pythonApt is the command that installs what the kit needs on Debian.
const pythonApt = "apt-get install python3-numpy python3-grpcio python3-protobuf"

// pythonProbeScript imports each module the kit needs and writes one line
// "module<TAB>ExceptionType: message" to stderr for each that fails,
// then exits with status 1 if any did.
const pythonProbeScript = `import sys
bad = []
for m in ("numpy", "grpc", "google.protobuf"):
    try:
        __import__(m)
    except Exception as e:
        bad.append("%s\t%s: %s" % (m, type(e).__name__, e))
if bad:
    sys.stderr.write("\n".join(bad) + "\n")
    sys.exit(1)
`

// pythonProbeTimeout bounds one probe of an interpreter (importing numpy
// on a loaded machine takes seconds, not tens of them). A probe that
// takes longer is killed with its process group and the interpreter is
// taken as unusable. Tests shorten it.
var pythonProbeTimeout atomic.Int64

func init() { pythonProbeTimeout.Store(int64(30 * time.Second)) }

// pyProbe is the answer of one interpreter, probed once a process.
type pyProbe struct {
	done chan struct{} // closed once err is set
	err  error         // nil: it imports every module the kit needs
}

// pyProbes holds every interpreter's probe by path (as found, without
// resolving symbolic links: a virtualenv's bin/python is a link to the
// system's interpreter and behaves differently from it).
var pyProbes = struct {
	mu sync.Mutex
	m  map[string]*pyProbe
}{m: map[string]*pyProbe{}}

// probePython reports whether the interpreter at path imports numpy,
// grpc and google.protobuf: nil if it does, else an error saying what it
// lacks (or that it did not answer). Each path is probed once a process,
// whoever asks, however many ask at once; a caller whose ctx ends stops
// waiting, and the probe goes on for the next one.
func probePython(ctx context.Context, path string) error {
	pyProbes.mu.Lock()
	p, ok := pyProbes.m[path]
	if !ok {
		p = &pyProbe{done: make(chan struct{})}
		pyProbes.m[path] = p
		timeout := time.Duration(pythonProbeTimeout.Load())
		go func() {
			p.err = runPythonProbe(path, timeout)
			close(p.done)
		}()
	}
	pyProbes.mu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("probing %s: %w", path, context.Cause(ctx))
	}
}

// runPythonProbe runs pythonProbeScript under the interpreter at path, in
// a process group of its own that is killed past timeout.
func runPythonProbe(path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-c", pythonProbeScript)
	configureCmd(cmd)
	cmd.Cancel = func() error {
		killGroup(cmd) // an interpreter behind a shell script is the shell's child
		return nil
	}
	cmd.WaitDelay = time.Second // a grandchild that left the group and holds the pipes
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("no answer within %s to `%s -c 'import numpy, grpc, google.protobuf'` (killed)", timeout, filepath.Base(path))
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err // it did not start
	}
	var lacks []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if mod, why, ok := strings.Cut(line, "\t"); ok {
			lacks = append(lacks, fmt.Sprintf("%s (%s)", mod, why))
		}
	}
	if len(lacks) > 0 && ee.ExitCode() == 1 {
		return fmt.Errorf("lacks %s", strings.Join(lacks, ", "))
	}
	out := strings.TrimSpace(stderr.String())
	if len(out) > 300 {
		out = "..." + out[len(out)-300:]
	}
	if out != "" {
		return fmt.Errorf("does not run the import check: %w: %s", err, strings.ReplaceAll(out, "\n", " | "))
	}
	return fmt.Errorf("does not run the import check: %w", err)
}

// pyCandidate is one interpreter to try for a Python plugin.
type pyCandidate struct {
	from string // what names it, for messages: `plugin.toml's python`, "$UAXAI_PYTHON", ...
	name string // a path, or a name looked up on PATH
}

// pythonCandidates lists the interpreters to try for b, in order: the
// manifest's python, $UAXAI_PYTHON, the interpreter its #! line names
// (shebang: "python3" for "#!/usr/bin/env python3"; "" if none), then
// pythonDefaults.
func pythonCandidates(b binary, shebang string) []pyCandidate {
	var out []pyCandidate
	if b.python != "" {
		out = append(out, pyCandidate{"plugin.toml's python", b.python})
	}
	if env := os.Getenv(PythonEnv); env != "" {
		out = append(out, pyCandidate{"$" + PythonEnv, env})
	}
	if shebang != "" {
		out = append(out, pyCandidate{"the #! line's", shebang})
	}
	for _, d := range pythonDefaults {
		from := "Debian's"
		if !strings.ContainsRune(d, filepath.Separator) {
			from = "PATH's"
		}
		out = append(out, pyCandidate{from, d})
	}
	return out
}

// noPythonError is the error of a Python plugin for which no candidate
// interpreter has the kit's modules: it names the plugin and lists each
// interpreter tried and what it lacks.
type noPythonError struct {
	plugin string   // spec.name()
	tried  []string // "<from> <path>: <why>"
}

func (e *noPythonError) Error() string {
	return fmt.Sprintf("starting %s: it is a Python plugin, and no Python interpreter tried has numpy, grpcio and protobuf:\n\t%s\n"+
		"Install them (Debian: %s), or name an interpreter that has them in $%s or in the plugin's %s (python = \"/path/to/python3\")",
		e.plugin, strings.Join(e.tried, "\n\t"), pythonApt, PythonEnv, ManifestName)
}

// choosePython returns the first of cands that imports the kit's
// modules, as an absolute path (or as found on PATH), and what was
// skipped before it ("<from> <path>: <why>"). err is a *noPythonError
// when none does (named by what), or ctx's end.
func choosePython(ctx context.Context, what string, cands []pyCandidate) (path string, skipped []string, err error) {
	seen := map[string]bool{}
	for _, c := range cands {
		p, err := exec.LookPath(c.name)
		if errors.Is(err, exec.ErrDot) {
			p, err = filepath.Abs(p)
		}
		if err != nil {
			var ee *exec.Error
			if errors.As(err, &ee) {
				err = ee.Err // the name is in the line already
			}
			skipped = append(skipped, fmt.Sprintf("%s %s: not found (%v)", c.from, c.name, err))
			continue
		}
		if !filepath.IsAbs(p) {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		err = probePython(ctx, p)
		if err == nil {
			return p, skipped, nil
		}
		if ctx.Err() != nil {
			return "", skipped, fmt.Errorf("starting %s: choosing its Python interpreter: %w", what, err)
		}
		name := p
		if p != c.name {
			name = c.name + " (" + p + ")"
		}
		skipped = append(skipped, fmt.Sprintf("%s %s: %v", c.from, name, err))
	}
	return "", skipped, &noPythonError{plugin: what, tried: skipped}
}

// pythonScript says whether b is a Python plugin to run through an
// interpreter, and the interpreter its #! line names ("" if none). A
// plugin is Python when its manifest says so (language "python", or a
// python key) or its #! line names python; an ELF file is exec'd
// whatever its manifest's language says (a frozen Python program).
func pythonScript(b binary) (bool, string, error) {
	f, err := os.Open(b.command)
	if err != nil {
		return false, "", err
	}
	defer f.Close()
	head := make([]byte, shebangMax)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, "", fmt.Errorf("reading %s: %w", b.command, err)
	}
	head = head[:n]
	if bytes.HasPrefix(head, []byte("\x7fELF")) {
		return false, "", nil
	}
	lang, err := DetectLanguage(bytes.NewReader(head))
	if err != nil {
		return false, "", fmt.Errorf("reading %s: %w", b.command, err)
	}
	interp := ""
	if lang == LangPython {
		interp = shebangInterpreter(head)
	}
	return lang == LangPython || b.python != "" || isPythonLanguage(b.language), interp, nil
}

// shebangInterpreter is the interpreter a #! line runs: its first word,
// or for /usr/bin/env the first word after env's options
// ("#!/usr/bin/env -S python3 -u": "python3"); "" if head has no #!
// line. Its arguments are dropped.
func shebangInterpreter(head []byte) string {
	line, ok := bytes.CutPrefix(head, []byte("#!"))
	if !ok {
		return ""
	}
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	words := strings.Fields(string(line))
	if len(words) == 0 {
		return ""
	}
	if filepath.Base(words[0]) != "env" {
		return words[0]
	}
	for _, w := range words[1:] {
		if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
			return w
		}
	}
	return ""
}

// pythonSpec turns sp, the spec of binary b, into `<interpreter>
// <script>` when b is a Python plugin (pythonScript), the interpreter
// chosen by choosePython; other binaries are returned as they are. An
// interpreter the plugin or the user named that is skipped is logged as
// a warning.
func (m *Manager) pythonSpec(ctx context.Context, sp spec, b binary) (spec, error) {
	isPy, shebang, err := pythonScript(b)
	if err != nil {
		return spec{}, fmt.Errorf("starting %s: %w", sp.name(), err)
	}
	if !isPy {
		return sp, nil
	}
	cands := pythonCandidates(b, shebang)
	py, skipped, err := choosePython(ctx, sp.name(), cands)
	if err != nil {
		return spec{}, err
	}
	for _, s := range skipped {
		if strings.HasPrefix(s, "plugin.toml's") || strings.HasPrefix(s, "$"+PythonEnv) {
			m.log.Warn("skipping a Python interpreter that cannot run the plugin", "plugin", sp.id, "interpreter", s, "using", py)
		}
	}
	m.log.Debug("python plugin", "plugin", sp.id, "interpreter", py, "script", b.command)
	sp.path = py
	sp.args = append([]string{b.command}, sp.args...)
	sp.interpreted = b.command
	return sp, nil
}
