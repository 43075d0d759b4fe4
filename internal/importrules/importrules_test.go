package importrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/uaxai/uaxai"

// root is the module's directory, two levels above this package.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return dir
}

// listPackages runs go list -json on every package of the module in dir
// (offline: GOPROXY=off, GOFLAGS=-mod=mod is not set, so the module cache
// and vendor state are what the build uses) and returns them with their
// module imports, module-relative.
func listPackages(t *testing.T, dir string) []Package {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles,IgnoredGoFiles,Imports,TestImports,XTestImports,Error", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Dir                                              string
			GoFiles, CgoFiles, TestGoFiles, XTestGoFiles, IgnoredGoFiles []string
			Imports, TestImports, XTestImports                           []string
			Error                                                        *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		// go test caches a result by the files the test opens or stats,
		// not by what go list reads: stat every source file and directory,
		// so that an edited, added or removed import reruns the test.
		statAll(t, p.Dir, p.GoFiles, p.CgoFiles, p.TestGoFiles, p.XTestGoFiles, p.IgnoredGoFiles)
		q := Package{Path: rel(p.ImportPath)}
		seen := map[string]bool{}
		for _, i := range p.Imports {
			if r, ok := modRel(i); ok {
				q.Imports = append(q.Imports, r)
				seen[r] = true
			}
		}
		for _, i := range append(p.TestImports, p.XTestImports...) {
			if r, ok := modRel(i); ok && !seen[r] {
				q.TestImports = append(q.TestImports, r)
				seen[r] = true
			}
		}
		pkgs = append(pkgs, q)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; the module has dozens", len(pkgs))
	}
	return pkgs
}

// statAll stats dir and its files.
func statAll(t *testing.T, dir string, files ...[]string) {
	t.Helper()
	if _, err := os.ReadDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, fs := range files {
		for _, f := range fs {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func rel(p string) string { r, _ := modRel(p); return r }

// modRel is p relative to the module, and whether p is in it.
func modRel(p string) (string, bool) {
	if r, ok := strings.CutPrefix(p, module+"/"); ok {
		return r, true
	}
	return "", false
}

// TestTreeFollowsArchitecture: every import of every package of the tree,
// its tests' included, is allowed by ARCHITECTURE.md's import rules, and
// every pattern of the rules names a package that exists.
func TestTreeFollowsArchitecture(t *testing.T) {
	dir := root(t)
	f, err := os.Open(filepath.Join(dir, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules, err := Parse("ARCHITECTURE.md", f)
	if err != nil {
		t.Fatal(err)
	}
	pkgs := listPackages(t, dir)
	for _, v := range Check(rules, pkgs) {
		t.Error(v)
	}
	for _, u := range Unused(rules, pkgs) {
		t.Error(u)
	}
	// The rules are read, not assumed: the engine's import of the graph
	// executor is refused by the line that says so.
	r, ok := Decide(rules, "host/engine", "sdk/nn/graph", false)
	if ok || r == nil || !strings.Contains(r.String(), "host/engine !> sdk/nn/graph") {
		t.Errorf("ARCHITECTURE.md lets host/engine import sdk/nn/graph (rule %v, allowed %v)", r, ok)
	}
	// And they state the design: imports point down, only the registry
	// of built-ins (and tests) name plugins, authors' code never imports
	// the host's side of the protocol, the test fixtures are for tests.
	for _, c := range []struct {
		from, to string
		test, ok bool
	}{
		{"cmd/uaxai", "host/runner", false, true},
		{"host/runner", "cmd/uaxai", false, false},
		{"host/runner", "sdk/nn", false, true},
		{"sdk/nn", "host/engine", false, false},
		{"sdk", "plugins/explainer/occlusion", false, false},
		{"plugins/explainer/lime", "host/data", false, false},
		{"host/builtin", "plugins/explainer/lime", false, true},
		{"host/bench", "plugins/explainer/lime", false, false},
		{"host/engine", "plugins/explainer/lime", true, true},
		{"plugins/posterior/files", "sdk/driver", false, false},
		{"plugins/posterior/files", "sdk/driver", true, false},
		{"sdk", "sdk/driver", false, false},
		{"sdk/sdktest", "sdk/driver", false, true},
		{"host/engine", "internal/golden", false, false},
		{"sdk/nn", "internal/graphtest", false, false},
		{"sdk/nn", "internal/graphtest", true, true},
		{"internal/graphtest", "sdk/nn/graph", false, true},
		{"internal/atomicfile", "sdk/nn", false, false},
		{"host/paperreport", "host/runner", false, false},
	} {
		if _, ok := Decide(rules, c.from, c.to, c.test); ok != c.ok {
			t.Errorf("ARCHITECTURE.md: %s -> %s (test %v) allowed %v, want %v", c.from, c.to, c.test, ok, c.ok)
		}
	}
}

// TestEngineGraphImportFails: the example. A tree in which
// host/engine imports sdk/nn/graph again fails, naming the rule's file
// and line; the same tree without that import passes.
func TestEngineGraphImportFails(t *testing.T) {
	doc := "intro\n\n```imports\n# layers\nhost/...     -> host/... sdk/...\nhost/engine !> sdk/nn/graph\n```\n"
	rules, err := Parse("ARCH.md", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	tree := []Package{
		{Path: "host/engine", Imports: []string{"sdk/nn", "host/eval"}},
		{Path: "host/runner", Imports: []string{"sdk/nn/graph", "host/engine"}},
	}
	if v := Check(rules, tree); len(v) != 0 {
		t.Fatalf("clean tree refused: %v", v)
	}
	tree[0].Imports = append(tree[0].Imports, "sdk/nn/graph")
	v := Check(rules, tree)
	if len(v) != 1 || v[0].From != "host/engine" || v[0].To != "sdk/nn/graph" || v[0].By == nil {
		t.Fatalf("violations %v, want host/engine -> sdk/nn/graph denied", v)
	}
	if s := v[0].String(); !strings.Contains(s, "ARCH.md:6") || !strings.Contains(s, "host/engine !> sdk/nn/graph") {
		t.Errorf("violation %q does not name ARCH.md:6 and the rule", s)
	}
}

// TestDecide checks the order of the rules on a small table, each case
// against what the package comment says decides.
func TestDecide(t *testing.T) {
	doc := "```imports\n" +
		"host/...      -> host/... sdk/... internal/base\n" + // 2
		"host/builtin  -> plugins/...\n" + // 3
		"host/engine   !> sdk/nn/graph\n" + // 4
		"plugins/...   -> sdk/...\n" + // 5
		"plugins/...   !> sdk/driver\n" + // 6
		"sdk           !> sdk/driver\n" + // 7
		"sdk/...       -> sdk/...\n" + // 8
		"sdk/...       !> sdk/nn/...\n" + // 9
		"sdk/...       -> sdk/nn/ops\n" + // 10
		"test sdk      -> sdk/driver\n" + // 11
		"test host/... -> plugins/... internal/...\n" + // 12
		"... -> internal/base\n" + // 13
		"```\n"
	rules, err := Parse("A.md", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from, to string
		test     bool
		ok       bool
		line     int // 0: no rule
	}{
		{"host/engine", "sdk/nn", false, true, 2},
		{"host/engine", "sdk/nn/graph", false, false, 4}, // a path FROM before a subtree FROM
		{"host/engine", "sdk/nn/graph", true, false, 4},  // tests too
		{"host/runner", "sdk/nn/graph", false, true, 2},
		{"host/runner", "plugins/x", false, false, 0},   // nothing allows it
		{"host/runner", "plugins/x", true, true, 12},    // a test rule
		{"host/builtin", "plugins/a/b", false, true, 3}, // subtree TO
		{"host/builtin", "plugins", false, true, 3},     // P/... holds P
		{"hostx/y", "sdk", false, false, 0},             // host/... is not a prefix of hostx
		{"plugins/p", "sdk/driver", false, false, 6},    // deny before allow at one FROM
		{"sdk", "sdk/driver", false, false, 7},          // path FROM before subtree
		{"sdk", "sdk/driver", true, true, 11},           // a test rule before a plain one at a tie
		{"sdk/x", "sdk/nn/graph", false, false, 9},      // a more specific TO decides
		{"sdk/x", "sdk/nn/ops", false, true, 10},        // and a path TO before a subtree TO
		{"sdk/x", "internal/base", false, true, 13},     // ... matches every package
		{"cmd/x", "internal/base", false, true, 13},
		{"cmd/x", "internal/other", false, false, 0},
	} {
		r, ok := Decide(rules, c.from, c.to, c.test)
		line := 0
		if r != nil {
			line = r.Line
		}
		if ok != c.ok || line != c.line {
			t.Errorf("%s -> %s (test %v): allowed %v by line %d, want %v by line %d", c.from, c.to, c.test, ok, line, c.ok, c.line)
		}
	}
}

// TestCheckAndUnused: a test import is checked with the test rules, one
// also imported by the non-test files once, a package's import of itself
// (an external test's) never; a pattern naming no package is reported.
func TestCheckAndUnused(t *testing.T) {
	doc := "```imports\nhost/... -> sdk/...\ntest host/... -> plugins/...\ngone/... -> sdk\n```\n"
	rules, err := Parse("A.md", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	tree := []Package{
		{Path: "host/a", Imports: []string{"sdk", "plugins/p"}, TestImports: []string{"plugins/q", "host/a", "internal/x"}},
		{Path: "sdk"}, {Path: "plugins/p"}, {Path: "plugins/q"},
	}
	var got []string
	for _, v := range Check(rules, tree) {
		got = append(got, v.String())
	}
	want := []string{
		"host/a imports plugins/p: allowed by no rule (add one to the imports block, or change the import)",
		"host/a imports in its tests internal/x: allowed by no rule (add one to the imports block, or change the import)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	u := Unused(rules, tree)
	if len(u) != 1 || u[0] != "A.md:4: pattern gone/... matches no package of the module" {
		t.Errorf("unused %q, want gone/... of line 4", u)
	}
}

// TestParseErrors: every malformed block is refused with the file, the
// line and what is accepted; comments, blank lines and other code blocks
// are not rules.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"no block\n", "A.md: no import rule"},
		{"```go\nhost -> sdk\n```\n", "A.md: no import rule"},
		{"```imports\n# only a comment\n\n```\n", "A.md: no import rule"},
		{"```imports\nhost sdk\n```\n", "A.md:2: \"host sdk\" is not a rule (accepted: [test] FROM -> TO..."},
		{"```imports\nhost ->\n```\n", "A.md:2: \"host ->\" is not a rule"},
		{"```imports\ntest host => sdk\n```\n", "A.md:2: \"test host => sdk\" is not a rule"},
		{"```imports\nhost -> /sdk\n```\n", "A.md:2: pattern \"/sdk\" is not a package pattern (accepted: a module-relative path"},
		{"```imports\nhost/../x -> sdk\n```\n", "A.md:2: pattern \"host/../x\""},
		{"```imports\nhost/.../x -> sdk\n```\n", "A.md:2: pattern \"host/.../x\""},
		{"```imports\nhost -> sdk/\n```\n", "A.md:2: pattern \"sdk/\""},
		{"```imports\nhost -> sdk//nn\n```\n", "A.md:2: pattern \"sdk//nn\""},
		{"```imports\nhost -> sdk\n", "A.md: the imports block opened before line 3 is not closed"},
	} {
		_, err := Parse("A.md", strings.NewReader(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.doc, err, c.want)
		}
	}
	rules, err := Parse("A.md", strings.NewReader("```go\nx -> y\n```\n  ```imports  \ntest a/... -> b c # why\n```\n```imports\nd !> e\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].String() != "test a/... -> b c" || rules[0].Where() != "A.md:5" ||
		rules[1].String() != "d !> e" || rules[1].Where() != "A.md:8" {
		t.Errorf("rules %v", rules)
	}
}
