package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/uaxai/uaxai/internal/pyinterp"
)

// PythonEnv names the environment variable that names the interpreter of
// the Python plugins (a path, or a name looked up on PATH). It is tried
// after a plugin's own (plugin.toml's python) and before the defaults.
const PythonEnv = pyinterp.Env

// pythonCandidates lists the interpreters to try for b, in order: the
// manifest's python, then pyinterp.Candidates ($UAXAI_PYTHON, the
// interpreter its #! line names, shebang, "" if none; python3 on PATH,
// /usr/bin/python3).
func pythonCandidates(b binary, shebang string) []pyinterp.Candidate {
	var out []pyinterp.Candidate
	if b.python != "" {
		out = append(out, pyinterp.Candidate{From: "plugin.toml's python", Name: b.python})
	}
	return append(out, pyinterp.Candidates(shebang)...)
}

// choosePython is pyinterp.Choose for the plugin named what, whose
// *pyinterp.NoInterpreterError also points at the plugin's manifest.
func choosePython(ctx context.Context, what string, cands []pyinterp.Candidate, requires []string) (path string, skipped []string, err error) {
	path, skipped, err = pyinterp.Choose(ctx, what, cands, requires...)
	if ne, ok := errors.AsType[*pyinterp.NoInterpreterError](err); ok {
		ne.Manifest = ManifestName
	}
	return path, skipped, err
}

// pythonScript says whether b is a Python plugin to run through an
// interpreter, the interpreter its #! line names ("" if none) and the
// modules its head requires (pyinterp.Requires). A
// plugin is Python when its manifest says so (language "python", or a
// python key) or its #! line names python; an ELF file is exec'd
// whatever its manifest's language says (a frozen Python program).
func pythonScript(b binary) (bool, string, []string, error) {
	head, err := pyinterp.Head(b.command)
	if err != nil {
		return false, "", nil, err
	}
	if pyinterp.IsELF(head) {
		return false, "", nil, nil
	}
	lang, err := DetectLanguage(bytes.NewReader(head))
	if err != nil {
		return false, "", nil, fmt.Errorf("reading %s: %w", b.command, err)
	}
	interp := ""
	if lang == LangPython {
		interp = pyinterp.Shebang(head)
	}
	isPy := lang == LangPython || b.python != "" || isPythonLanguage(b.language)
	var requires []string
	if isPy {
		if requires, err = pyinterp.Requires(head); err != nil {
			return false, "", nil, fmt.Errorf("%s: %w", b.command, err)
		}
	}
	return isPy, interp, requires, nil
}

// pythonSpec turns sp, the spec of binary b, into `<interpreter>
// <script>` when b is a Python plugin (pythonScript), the interpreter
// chosen by choosePython; other binaries are returned as they are. An
// interpreter the plugin or the user named that is skipped is logged as
// a warning.
func (m *Manager) pythonSpec(ctx context.Context, sp spec, b binary) (spec, error) {
	isPy, shebang, requires, err := pythonScript(b)
	if err != nil {
		return spec{}, fmt.Errorf("starting %s: %w", sp.name(), err)
	}
	if !isPy {
		return sp, nil
	}
	cands := pythonCandidates(b, shebang)
	py, skipped, err := choosePython(ctx, sp.name(), cands, requires)
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
