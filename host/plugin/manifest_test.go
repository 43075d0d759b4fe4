package plugin

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/sdk"
)

func TestLanguageDetection(t *testing.T) {
	long := "#!/usr/bin/env " + strings.Repeat("x", shebangMax) + " python3\n"
	for _, c := range []struct {
		name, head, want string
	}{
		{"env python3", "#!/usr/bin/env python3\nimport sys\n", LangPython},
		{"direct python with a flag", "#!/usr/bin/python3.11 -u\n", LangPython},
		{"upper case, no newline", "#! /opt/Python-3/bin/PYTHON", LangPython},
		{"env -S", "#!/usr/bin/env -S python3 -X dev\n", LangPython},
		{"sh", "#!/bin/sh\nexec python3 \"$0.py\"\n", LangScript}, // python on the second line only
		{"bash", "#!/bin/bash\n", LangScript},
		{"bare #!", "#!", LangScript},
		{"python past the kernel's #! limit", long, LangScript},
		{"ELF", "\x7fELF\x02\x01\x01\x00", LangBinary},
		{"empty", "", LangBinary},
		{"a comment, not a #! line", "# python\n", LangBinary},
		{"leading space", " #!/usr/bin/python3\n", LangBinary},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := DetectLanguage(strings.NewReader(c.head))
			if err != nil || got != c.want {
				t.Errorf("DetectLanguage(%q) = %q, %v; want %q", c.head, got, err, c.want)
			}
		})
	}
	// The files themselves: the Go test plugin (ELF) and the Python kit's
	// example script.
	for path, want := range map[string]string{testBin: LangBinary, pythonEcho: LangPython} {
		if got, err := detectFile(path); err != nil || got != want {
			t.Errorf("detectFile(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := detectFile(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("detectFile of a missing file: no error")
	}
}

// manifestDir makes dir/uaxai-explainer-NAME/ with plugin.toml holding
// manifest and the test plugin as its file "run" (mode runMode; 0 for
// none).
func manifestDir(t *testing.T, dir, name, manifest string, runMode os.FileMode) string {
	t.Helper()
	d := filepath.Join(dir, "uaxai-explainer-"+name)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if runMode != 0 {
		install(t, d, "run", runMode)
	}
	if err := os.WriteFile(filepath.Join(d, ManifestName), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestManifestErrors: a bad plugin.toml is an error that names the file,
// the key and what is accepted, from ReadManifest, when the plugin is
// asked for, and in List (where the directory is listed with its
// problem).
func TestManifestErrors(t *testing.T) {
	for _, c := range []struct {
		name, manifest string
		runMode        os.FileMode
		want           []string
	}{
		{"syntax", "command = \"run\n", 0o755, []string{"line 1"}},
		{"unknown key", "command = \"run\"\ncmd = \"run\"\n", 0o755, []string{`unknown key "cmd" (accepted: command, language, python)`}},
		{"no command", "language = \"go\"\n", 0o755, []string{`key "command" is missing (want the plugin's executable, relative to`, `e.g. command = "run.py"`}},
		{"command not a string", "command = 3\n", 0o755, []string{`key "command": 3 is an integer, want a string`}},
		{"command a table", "[command]\nx = 1\n", 0o755, []string{`key "command": map[x:1] is a table, want a string`}},
		{"empty command", "command = \"\"\n", 0o755, []string{`key "command": "" is not a path inside`}},
		{"absolute command", "command = \"/bin/sh\"\n", 0o755, []string{`key "command": "/bin/sh" is not a path inside`, `want a relative path without ".."`}},
		{"command outside", "command = \"sub/../../run\"\n", 0o755, []string{`key "command": "sub/../../run" is not a path inside`}},
		{"command the directory", "command = \"./\"\n", 0o755, []string{`key "command": "./" is not a path inside`}},
		{"missing command file", "command = \"nope\"\n", 0o755, []string{`key "command": stat `, "nope: no such file or directory"}},
		{"command not executable", "command = \"run\"\n", 0o644, []string{`key "command": `, "run is not an executable file (mode -rw-r--r--; want a regular file with an execute bit)"}},
		{"command a directory", "command = \".git\"\n", 0o755, []string{`key "command": `, ".git is not an executable file (mode d"}},
		{"language not a string", "command = \"run\"\nlanguage = [\"go\"]\n", 0o755, []string{`key "language": [go] is an array, want a string (e.g. "python"), or leave it out`}},
		{"empty language", "command = \"run\"\nlanguage = \" \"\n", 0o755, []string{`key "language": " " is empty or holds control characters`}},
		{"language with a newline", "command = \"run\"\nlanguage = \"go\\nrust\"\n", 0o755, []string{`key "language": "go\nrust" is empty or holds control characters`}},
		{"python not a string", "command = \"run\"\npython = 3\n", 0o755, []string{`key "python": 3 is an integer, want a string: an absolute path ("/usr/bin/python3"), a path relative to the plugin's directory (".venv/bin/python") or a name on PATH ("python3.11")`}},
		{"empty python", "command = \"run\"\npython = \"\"\n", 0o755, []string{`key "python": "" is empty or holds control characters (want an absolute path`}},
		{"python not on PATH", "command = \"run\"\npython = \"python-uaxai-none\"\n", 0o755, []string{`key "python": "python-uaxai-none" is not on PATH (want an absolute path ("/usr/bin/python3"), a path relative`}},
		{"missing python", "command = \"run\"\npython = \"/nonexistent/bin/python3\"\n", 0o755, []string{`key "python": stat /nonexistent/bin/python3: no such file or directory (want an absolute path`}},
		{"python not executable", "command = \"run\"\npython = \"./plugin.toml\"\n", 0o755, []string{`key "python": `, `plugin.toml is not an executable file (mode -rw-r--r--; want an absolute path`}},
		{"python a directory", "command = \"run\"\npython = \".git/\"\n", 0o755, []string{`key "python": `, `.git is not an executable file (mode d`}},
		{"python for another language", "command = \"run\"\nlanguage = \"rust\"\npython = \"/usr/bin/python3\"\n", 0o755, []string{`key "python": the manifest says language = "rust", and python names the interpreter of a Python plugin only (set language = "python" or leave it out)`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			d := manifestDir(t, dir, "bad", c.manifest, c.runMode)
			if err := os.Mkdir(filepath.Join(d, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			want := append([]string{"plugin manifest " + filepath.Join(d, ManifestName) + ": "}, c.want...)
			_, err := ReadManifest(d)
			for _, w := range want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("ReadManifest: %v; want it to hold %q", err, w)
				}
			}
			m := newManager(t, Options{Dirs: []string{dir}})
			_, err = m.Explainer(context.Background(), "explainer.bad")
			if err == nil || !strings.HasPrefix(err.Error(), `plugin "explainer.bad": plugin manifest `) || !strings.Contains(err.Error(), c.want[0]) {
				t.Errorf("Explainer: %v", err)
			}
			list, err := m.List(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.want[0]) {
				t.Errorf("List error: %v", err)
			}
			wantEntry := Entry{ID: "explainer.bad", Kind: sdk.KindExplainer, Source: d, Problem: "bad plugin.toml (see the error)"}
			found := false
			for _, e := range list {
				if e.ID == "explainer.bad" {
					found = true
					if e != wantEntry {
						t.Errorf("List entry %+v, want %+v", e, wantEntry)
					}
				}
			}
			if !found {
				t.Errorf("List does not list the directory: %+v", list)
			}
		})
	}
}

// TestManifestDirs: plugin directories with a plugin.toml are listed and
// run as plugin files are: a manifest's language is shown as written, a
// command in a sub-directory runs; a #! script is a "script"; a
// directory without a manifest is a problem, not a plugin.
func TestManifestDirs(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	echoDir := manifestDir(t, d1, "echo", "command = \"bin/../bin/echo\"\nlanguage = \"Go (compiled)\"\n", 0)
	if err := os.Mkdir(filepath.Join(echoDir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	install(t, filepath.Join(echoDir, "bin"), "echo", 0o755)
	detected := manifestDir(t, d1, "builtin-echo", "command = \"run\"\n", 0o755) // shadowed: the built-in comes first
	script := filepath.Join(d2, "uaxai-explainer-echo")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec '"+testBin+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d2, "uaxai-explainer-empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	// d1 twice: a directory named twice is scanned once (its plugins do
	// not shadow themselves).
	m := newManager(t, Options{Dirs: []string{d1, d2, d1}})
	ctx := context.Background()
	got, err := m.List(ctx)
	if err == nil || !strings.Contains(err.Error(), "plugin binary "+detected+` serves "explainer.echo"`) {
		t.Errorf("List error %v, want the misnamed manifest plugin reported", err)
	}
	var plugins []Entry
	for _, e := range got {
		if e.Source != "built-in" {
			plugins = append(plugins, e)
		}
	}
	want := []Entry{
		{ID: "explainer.builtin-echo", Kind: sdk.KindExplainer, Source: detected, Language: LangBinary, Shadowed: true, Problem: "failed to start (see the error)"},
		{ID: "explainer.echo", Kind: sdk.KindExplainer, Version: "0.0.1", Source: echoDir, Language: "Go (compiled)"},
		{ID: "explainer.echo", Kind: sdk.KindExplainer, Version: "0.0.1", Source: script, Language: LangScript, Shadowed: true},
		{ID: "explainer.empty", Kind: sdk.KindExplainer, Source: filepath.Join(d2, "uaxai-explainer-empty"), Problem: "a directory without plugin.toml, not an executable file"},
	}
	if !reflect.DeepEqual(plugins, want) {
		t.Errorf("List:\n got %+v\nwant %+v", plugins, want)
	}
	e, err := m.Explainer(ctx, "explainer.echo")
	if err != nil {
		t.Fatal(err)
	}
	if r := e.(remoteExplainer); r.p.source != echoDir {
		t.Errorf("explainer.echo runs from %s, want the manifest directory %s", r.p.source, echoDir)
	}
	maps, err := explain(t, ctx, e, request(nil))
	if err != nil {
		t.Fatal(err)
	}
	checkEcho(t, maps)
	if _, err := m.Explainer(ctx, "explainer.empty"); err == nil || !strings.Contains(err.Error(), `unknown plugin "explainer.empty"`) {
		t.Errorf("a directory without a manifest: %v", err)
	}
}

// TestManifestPython: the Python kit's example plugin, run through a
// manifest whose command is a symbolic link to the script; its language
// is detected from the #! line.
func TestManifestPython(t *testing.T) {
	pythontest.Need(t)
	script, err := filepath.Abs(pythonEcho)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d := filepath.Join(dir, "uaxai-explainer-python-echo")
	if err := os.MkdirAll(filepath.Join(d, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(script, filepath.Join(d, "lib", "echo.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, ManifestName), []byte("command = \"lib/echo.py\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Options{Dirs: []string{dir}, Limits: patientLimits()})
	ctx := context.Background()
	list, err := m.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var entry Entry
	for _, e := range list {
		if e.ID == "explainer.python-echo" {
			entry = e
		}
	}
	if want := (Entry{ID: "explainer.python-echo", Kind: sdk.KindExplainer, Version: "0.1.0", Source: d, Language: LangPython}); entry != want {
		t.Errorf("List entry %+v, want %+v", entry, want)
	}
	e, err := m.Explainer(ctx, "explainer.python-echo")
	if err != nil {
		t.Fatal(err)
	}
	req := request(sdk.Config{"scale": 0.5})
	maps, err := explain(t, ctx, e, req)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	for i, tg := range req.Targets {
		if want := echoMap(req.X[i*n:(i+1)*n], tg, 0.5); !reflect.DeepEqual(maps[i], want) {
			t.Errorf("input %d: %v, want %v", i, maps[i], want)
		}
	}
}
