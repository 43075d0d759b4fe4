package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/internal/pyinterp"
)

// ManifestName is the file that makes a directory named
// uaxai-<kind>-<name> in a plugin directory a plugin: its keys are
//
//	command = "run.py"           # the executable, relative to the directory (required)
//	language = "python"          # free text for `uaxai plugins` (optional)
//	python = "/usr/bin/python3"  # the interpreter of a Python plugin (optional)
//
// The Manager runs the command; without language, the language is
// detected from the command as for a plugin file (DetectLanguage). A
// Python plugin (language "python", or a #! line that names python, or a
// python key) runs as `<interpreter> <command>`, the interpreter chosen
// by choosePython, python's first.
const ManifestName = "plugin.toml"

// The languages `uaxai plugins` shows when no manifest names one.
const (
	LangGo     = "go"     // a built-in (or a summary script)
	LangPython = "python" // an executable whose #! line names python
	LangScript = "script" // an executable with another #! line
	LangBinary = "binary" // any other executable (ELF, ...)
)

// Manifest is a plugin directory's plugin.toml.
type Manifest struct {
	Command  string // relative to the directory, cleaned, inside it
	Language string // "" when the manifest names none
	// Python is the interpreter the manifest names for a Python plugin:
	// an absolute path, a path relative to the directory (joined to it
	// here: a virtualenv's bin/python inside the plugin), or a name
	// looked up on PATH when the plugin starts; "" when it names none.
	Python string
}

// manifestKeys are the keys a manifest accepts.
var manifestKeys = []string{"command", "language", "python"}

// MaxManifestBytes bounds a plugin.toml (three keys).
const MaxManifestBytes = 1 << 20

// ReadManifest reads dir's plugin.toml (a regular file of at most
// MaxManifestBytes bytes). Its errors name the file, the key
// and what is accepted. The command must be an executable regular file
// inside dir (it may be a symbolic link to one elsewhere).
func ReadManifest(dir string) (Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	var raw map[string]any
	b, err := atomicfile.ReadRegular(path, atomicfile.Limit{Bytes: MaxManifestBytes, What: "a plugin manifest"})
	if err != nil {
		return Manifest{}, fmt.Errorf("plugin manifest: %w", err)
	}
	if _, err := toml.Decode(string(b), &raw); err != nil {
		return Manifest{}, fmt.Errorf("plugin manifest %s: %w", path, err)
	}
	bad := func(format string, args ...any) (Manifest, error) {
		return Manifest{}, fmt.Errorf("plugin manifest %s: "+format, append([]any{path}, args...)...)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(manifestKeys, k) {
			return bad("unknown key %q (accepted: %s)", k, strings.Join(manifestKeys, ", "))
		}
	}
	var m Manifest
	cmd, ok := raw["command"]
	if !ok {
		return bad(`key "command" is missing (want the plugin's executable, relative to %s, e.g. command = "run.py")`, dir)
	}
	s, ok := cmd.(string)
	if !ok {
		return bad(`key "command": %v is %s, want a string: the executable's path relative to %s`, cmd, tomlType(cmd), dir)
	}
	c := filepath.Clean(s)
	if s == "" || filepath.IsAbs(s) || c == "." || c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return bad(`key "command": %q is not a path inside %s (want a relative path without "..", e.g. "run.py" or "bin/plugin")`, s, dir)
	}
	m.Command = c
	exe := filepath.Join(dir, c)
	st, err := os.Stat(exe)
	switch {
	case err != nil:
		return bad(`key "command": %w`, err)
	case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
		return bad(`key "command": %s is not an executable file (mode %v; want a regular file with an execute bit)`, exe, st.Mode())
	}
	if lang, ok := raw["language"]; ok {
		s, ok := lang.(string)
		if !ok {
			return bad(`key "language": %v is %s, want a string (e.g. "python"), or leave it out to detect it`, lang, tomlType(lang))
		}
		if strings.TrimSpace(s) == "" || strings.IndexFunc(s, unicode.IsControl) >= 0 {
			return bad(`key "language": %q is empty or holds control characters (want a word, e.g. "python", or leave it out to detect it)`, s)
		}
		m.Language = s
	}
	if py, ok := raw["python"]; ok {
		const accepted = `an absolute path ("/usr/bin/python3"), a path relative to the plugin's directory (".venv/bin/python") or a name on PATH ("python3.11"), of an interpreter with numpy, grpcio and protobuf`
		s, ok := py.(string)
		if !ok {
			return bad(`key "python": %v is %s, want a string: %s`, py, tomlType(py), accepted)
		}
		if strings.TrimSpace(s) == "" || strings.IndexFunc(s, unicode.IsControl) >= 0 {
			return bad(`key "python": %q is empty or holds control characters (want %s)`, s, accepted)
		}
		if m.Language != "" && !isPythonLanguage(m.Language) {
			return bad(`key "python": the manifest says language = %q, and python names the interpreter of a Python plugin only (set language = "python" or leave it out)`, m.Language)
		}
		switch {
		case !strings.ContainsRune(s, filepath.Separator):
			if _, err := exec.LookPath(s); err != nil {
				return bad(`key "python": %q is not on PATH (want %s)`, s, accepted)
			}
			m.Python = s
		default:
			p := s
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			st, err := os.Stat(p)
			switch {
			case err != nil:
				return bad(`key "python": %w (want %s)`, err, accepted)
			case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
				return bad(`key "python": %s is not an executable file (mode %v; want %s)`, p, st.Mode(), accepted)
			}
			m.Python = p
		}
	}
	return m, nil
}

// isPythonLanguage reports whether a manifest's language names Python
// ("python", "Python3", ...).
func isPythonLanguage(lang string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(lang)), LangPython)
}

// tomlType names a decoded TOML value's type for messages.
func tomlType(v any) string {
	switch v.(type) {
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

// shebangMax is as much of a file as DetectLanguage reads: Linux reads at
// most 256 bytes of a #! line.
const shebangMax = pyinterp.HeadMax

// DetectLanguage says what an executable is written in from its first
// bytes: LangPython for a #! line that names python ("#!/usr/bin/env
// python3"), LangScript for another #! line, else LangBinary (an ELF file
// or anything else the kernel runs).
func DetectLanguage(r io.Reader) (string, error) {
	b := make([]byte, shebangMax)
	n, err := io.ReadFull(r, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	b = b[:n]
	if !bytes.HasPrefix(b, []byte("#!")) {
		return LangBinary, nil
	}
	if pyinterp.NamesPython(b) {
		return LangPython, nil
	}
	return LangScript, nil
}

// detectFile is DetectLanguage of the file at path.
func detectFile(path string) (string, error) {
	f, err := atomicfile.OpenRegular(path, atomicfile.AnySize) // reads its first line only
	if err != nil {
		return "", err
	}
	defer f.Close()
	lang, err := DetectLanguage(f)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return lang, nil
}

// binary is one plugin executable of a plugin directory: a file named
// uaxai-<kind>-<name>, or the command of a directory of that name with a
// plugin.toml.
type binary struct {
	command  string // the executable the Manager runs
	source   string // what names it: the file, or the directory
	language string // the manifest's language, or "" (detect it from command)
	python   string // the manifest's python (Manifest.Python), or ""
}

// lang is the binary's language: the manifest's, else LangPython if the
// manifest names a python, else detected from its first bytes; "-" if
// the file cannot be read (it will not start either).
func (b binary) lang() string {
	if b.language != "" {
		return b.language
	}
	if b.python != "" {
		return LangPython
	}
	lang, err := detectFile(b.command)
	if err != nil {
		return "-"
	}
	return lang
}

// hasManifest reports whether dir holds a plugin.toml (of any kind: a
// directory or a broken link is a manifest ReadManifest refuses).
func hasManifest(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ManifestName))
	return err == nil
}

// manifestError is a plugin directory whose plugin.toml is wrong.
type manifestError struct {
	id, dir string
	err     error
}

func (e *manifestError) Error() string { return e.err.Error() }
func (e *manifestError) Unwrap() error { return e.err }

// scanEntry returns the binary that a plugin directory entry named like a
// plugin (path) stands for: the file itself if it is an executable
// regular file, or a directory's manifest command. ok is false for
// anything else (a non-executable file, a directory without a manifest:
// notExecutable lists them); err is set for a directory with a bad
// manifest.
func scanEntry(id, path string) (b binary, ok bool, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return binary{}, false, nil
	}
	if st.IsDir() {
		if !hasManifest(path) {
			return binary{}, false, nil
		}
		m, err := ReadManifest(path)
		if err != nil {
			return binary{}, false, &manifestError{id: id, dir: path, err: err}
		}
		return binary{command: filepath.Join(path, m.Command), source: path, language: m.Language, python: m.Python}, true, nil
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return binary{}, false, nil
	}
	return binary{command: path, source: path}, true, nil
}

// manifestErrors lists the manifest errors in err (a join of scan
// errors).
func manifestErrors(err error) []*manifestError {
	var out []*manifestError
	var walk func(error)
	walk = func(err error) {
		var me *manifestError
		switch e := err.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		default:
			if errors.As(err, &me) {
				out = append(out, me)
			}
		}
	}
	walk(err)
	return out
}
