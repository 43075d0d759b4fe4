package pyinterp

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

	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/internal/procgroup"
)

// Env names the environment variable that names the interpreter of the
// Python plugins (a path, or a name looked up on PATH). It is tried
// after a plugin's own (plugin.toml's python) and before the defaults.
const Env = "UAXAI_PYTHON"

// Apt is the command that installs what the kit needs on Debian.
const Apt = "apt-get install python3-numpy python3-grpcio python3-protobuf"

// defaults are the interpreters tried after the plugin's own, the
// environment's and its #! line's: the first python3 on PATH (what the
// #! line "/usr/bin/env python3" runs), then Debian's, whose
// python3-numpy, python3-grpcio and python3-protobuf packages the kit
// is written against. Tests replace it (SetDefaults).
var defaults = struct {
	mu sync.Mutex
	d  []string
}{d: []string{"python3", "/usr/bin/python3"}}

// SetDefaults replaces the interpreters tried after the plugin's own,
// $UAXAI_PYTHON and the #! line's, and returns a function that puts the
// previous ones back. It is for tests (of this package and of its
// users), which must not run in parallel with others that choose an
// interpreter.
func SetDefaults(d []string) (restore func()) {
	defaults.mu.Lock()
	defer defaults.mu.Unlock()
	old := defaults.d
	defaults.d = append([]string(nil), d...)
	return func() {
		defaults.mu.Lock()
		defaults.d = old
		defaults.mu.Unlock()
	}
}

// kitModules are the modules the kit needs.
var kitModules = []string{"numpy", "grpc", "google.protobuf"}

// probeScript imports each module named by its arguments (the kit's,
// then the plugin's) and writes one line "module<TAB>ExceptionType:
// message" to stderr for each that fails, then exits with status 1 if
// any did.
const probeScript = `import sys
bad = []
for m in sys.argv[1:]:
    try:
        __import__(m)
    except Exception as e:
        bad.append("%s\t%s: %s" % (m, type(e).__name__, e))
if bad:
    sys.stderr.write("\n".join(bad) + "\n")
    sys.exit(1)
`

// probeTimeout bounds one probe of an interpreter (importing numpy on a
// loaded machine takes seconds, not tens of them). A probe that takes
// longer is killed with its process group and the interpreter is taken
// as unusable. Tests shorten it (SetProbeTimeout).
var probeTimeout atomic.Int64

func init() { probeTimeout.Store(int64(30 * time.Second)) }

// SetProbeTimeout sets the time a probe of an interpreter may take
// (30 s unless set) for the probes started from now on, and returns a
// function that puts the previous one back. It is for tests.
func SetProbeTimeout(d time.Duration) (restore func()) {
	old := probeTimeout.Swap(int64(d))
	return func() { probeTimeout.Store(old) }
}

// probe is the answer of one interpreter, probed once a process.
type probe struct {
	done chan struct{} // closed once err is set
	err  error         // nil: it imports every module the kit needs
}

// probes holds every interpreter's probe by path (as found, without
// resolving symbolic links: a virtualenv's bin/python is a link to the
// system's interpreter and behaves differently from it) and the extra
// modules asked for.
var probes = struct {
	mu sync.Mutex
	m  map[string]*probe
}{m: map[string]*probe{}}

// Probe reports whether the interpreter at path imports numpy, grpc and
// google.protobuf, and the modules named by requires: nil if it does,
// else an error saying what it lacks (or that it did not answer). Each
// path and set of modules is probed once a process, whoever asks,
// however many ask at once; a caller whose ctx ends stops waiting, and
// the probe goes on for the next one.
func Probe(ctx context.Context, path string, requires ...string) error {
	mods := append(append([]string(nil), kitModules...), requires...)
	key := path + "\x00" + strings.Join(mods, "\x00")
	probes.mu.Lock()
	p, ok := probes.m[key]
	if !ok {
		p = &probe{done: make(chan struct{})}
		probes.m[key] = p
		timeout := time.Duration(probeTimeout.Load())
		go func() {
			p.err = runProbe(path, mods, timeout)
			close(p.done)
		}()
	}
	probes.mu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("probing %s: %w", path, context.Cause(ctx))
	}
}

// runProbe runs probeScript under the interpreter at path, in a process
// group of its own that is killed past timeout.
func runProbe(path string, mods []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"-c", probeScript}, mods...)...)
	procgroup.Own(cmd)
	cmd.Cancel = func() error {
		procgroup.Kill(cmd) // an interpreter behind a shell script is the shell's child
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
		return fmt.Errorf("no answer within %s to `%s -c 'import %s'` (killed)", timeout, filepath.Base(path), strings.Join(mods, ", "))
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

// Candidate is one interpreter to try for a Python plugin.
type Candidate struct {
	From string // what names it, for messages: `plugin.toml's python`, "$UAXAI_PYTHON", ...
	Name string // a path, or a name looked up on PATH
}

// Candidates lists the interpreters to try for a Python plugin after
// the plugin's own, in order: $UAXAI_PYTHON, the interpreter its #!
// line names (shebang: "python3" for "#!/usr/bin/env python3"; "" if
// none), then python3 on PATH and /usr/bin/python3 (SetDefaults).
func Candidates(shebang string) []Candidate {
	var out []Candidate
	if env := os.Getenv(Env); env != "" {
		out = append(out, Candidate{"$" + Env, env})
	}
	if shebang != "" {
		out = append(out, Candidate{"the #! line's", shebang})
	}
	defaults.mu.Lock()
	d := defaults.d
	defaults.mu.Unlock()
	for _, name := range d {
		from := "Debian's"
		if !strings.ContainsRune(name, filepath.Separator) {
			from = "PATH's"
		}
		out = append(out, Candidate{from, name})
	}
	return out
}

// NoInterpreterError is the error of a Python plugin for which no
// candidate interpreter has the kit's modules: it names the plugin and
// lists each interpreter tried and what it lacks, and says what to
// install and where to name an interpreter.
type NoInterpreterError struct {
	Plugin string   // what Choose was given
	Tried  []string // "<from> <path>: <why>"
	// Manifest, if set, is the plugin's manifest file (plugin.toml), a
	// further place to name an interpreter.
	Manifest string
	// Requires are the modules the plugin requires beyond the kit's.
	Requires []string
}

func (e *NoInterpreterError) Error() string {
	where := "$" + Env
	if e.Manifest != "" {
		where += fmt.Sprintf(" or in the plugin's %s (python = \"/path/to/python3\")", e.Manifest)
	}
	has, install := "numpy, grpcio and protobuf", Apt
	if len(e.Requires) > 0 {
		has += " and what the plugin requires (# uaxai-requires), " + strings.Join(e.Requires, ", ")
		install += "; for torch: apt-get install python3-torch"
	}
	return fmt.Sprintf("starting %s: it is a Python plugin, and no Python interpreter tried has %s:\n\t%s\n"+
		"Install them (Debian: %s), or name an interpreter that has them in %s",
		e.Plugin, has, strings.Join(e.Tried, "\n\t"), install, where)
}

// Choose returns the first of cands that imports the kit's modules and
// the modules of requires (an absolute path, or as found on PATH), and
// what was skipped before it
// ("<from> <path>: <why>"). An interpreter found twice (PATH's python3
// as the #! line's and as PATH's) is tried once. err is a
// *NoInterpreterError naming what (with an empty Manifest) when none
// does, or says that ctx ended.
func Choose(ctx context.Context, what string, cands []Candidate, requires ...string) (path string, skipped []string, err error) {
	seen := map[string]bool{}
	for _, c := range cands {
		p, err := exec.LookPath(c.Name)
		if errors.Is(err, exec.ErrDot) {
			p, err = filepath.Abs(p)
		}
		if err != nil {
			var ee *exec.Error
			if errors.As(err, &ee) {
				err = ee.Err // the name is in the line already
			}
			skipped = append(skipped, fmt.Sprintf("%s %s: not found (%v)", c.From, c.Name, err))
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
		err = Probe(ctx, p, requires...)
		if err == nil {
			return p, skipped, nil
		}
		if ctx.Err() != nil {
			return "", skipped, fmt.Errorf("starting %s: choosing its Python interpreter: %w", what, err)
		}
		name := p
		if p != c.Name {
			name = c.Name + " (" + p + ")"
		}
		skipped = append(skipped, fmt.Sprintf("%s %s: %v", c.From, name, err))
	}
	return "", skipped, &NoInterpreterError{Plugin: what, Tried: skipped, Requires: requires}
}

// HeadMax is as much of a file as the kernel reads of a #! line (Linux:
// 256 bytes), and as much as Script reads.
const HeadMax = 256

// RequiresPrefix starts the line of a Python plugin's head that names
// the modules it requires beyond the kit's, separated by spaces or
// commas: "# uaxai-requires: torch".
const RequiresPrefix = "# uaxai-requires:"

// Requires returns the modules the "# uaxai-requires:" lines of head
// (the first HeadMax bytes of the plugin: the line must end within them)
// name, in order (none: nil), or an error naming the first that is not a
// dotted Python module name.
func Requires(head []byte) ([]string, error) {
	var out []string
	lines := strings.Split(string(head), "\n")
	if len(head) >= HeadMax {
		lines = lines[:len(lines)-1] // cut short by the head's end
	}
	for _, line := range lines {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), RequiresPrefix)
		if !ok {
			continue
		}
		for _, m := range strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
			if !DottedName(m) {
				return nil, fmt.Errorf("%q in %q is not a Python module name (accepted: dotted names, as %q)", m, strings.TrimSpace(line), RequiresPrefix+" torch")
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// Identifier reports whether s is a Python identifier (ASCII letters,
// digits and '_', not starting with a digit).
func Identifier(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// DottedName reports whether s is a dotted Python name, identifiers
// joined by '.' (a module path, "pkg.mod").
func DottedName(s string) bool {
	for _, p := range strings.Split(s, ".") {
		if !Identifier(p) {
			return false
		}
	}
	return true
}

// Shebang is the interpreter a #! line runs: its first word, or for
// /usr/bin/env the first word after env's options
// ("#!/usr/bin/env -S python3 -u": "python3"); "" if head has no #!
// line. Its arguments are dropped.
func Shebang(head []byte) string {
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

// Head is the first HeadMax bytes of the file at path (fewer if it is
// shorter), which must be a regular file (atomicfile.OpenRegular).
func Head(path string) ([]byte, error) {
	f, err := atomicfile.OpenRegular(path, atomicfile.AnySize) // reads HeadMax bytes at most
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, HeadMax)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return head[:n], nil
}

// IsELF reports whether head starts an ELF file (a compiled program, or
// a frozen Python one: exec'd as it is).
func IsELF(head []byte) bool { return bytes.HasPrefix(head, []byte("\x7fELF")) }

// NamesPython reports whether head's #! line names python (in any case:
// "#!/usr/bin/env python3", "#!/opt/Python-3/bin/PYTHON").
func NamesPython(head []byte) bool {
	line, ok := bytes.CutPrefix(head, []byte("#!"))
	if !ok {
		return false
	}
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	return bytes.Contains(bytes.ToLower(line), []byte("python"))
}

// Script says whether the executable at path is a Python script to run
// through an interpreter chosen by Choose, and the interpreter its #!
// line names ("" if none): it is one when its #! line names python, or
// when its name ends in ".py" and it is not an ELF file. The host's
// plugin manager decides with its manifest as well; the conformance kit
// with this alone.
func Script(path string) (isPython bool, shebang string, err error) {
	head, err := Head(path)
	if err != nil {
		return false, "", err
	}
	if IsELF(head) {
		return false, "", nil
	}
	if NamesPython(head) {
		return true, Shebang(head), nil
	}
	return strings.HasSuffix(path, ".py"), "", nil
}
