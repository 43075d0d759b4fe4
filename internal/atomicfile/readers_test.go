package atomicfile

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// openers are the functions that open or read a file by its path without
// the checks of OpenRegular: import path, then names.
var openers = map[string][]string{
	"os":                         {"Open", "OpenFile", "ReadFile", "DirFS", "OpenInRoot", "OpenRoot"},
	"io/ioutil":                  {"ReadFile", "ReadDir"},
	"syscall":                    {"Open", "Openat"},
	"golang.org/x/sys/unix":      {"Open", "Openat", "Openat2"},
	"github.com/BurntSushi/toml": {"DecodeFile"},
	"go/parser":                  {"ParseDir"},
}

// allowed are the uses of an opener outside OpenRegular, by file (from
// the module's root), function and opener, each with the reason it is not
// "reading an input file". A use not listed fails the test; so does an
// entry no longer used, so the list stays the truth.
var allowed = map[string]string{
	// The helper itself, and the directory it syncs after a rename.
	"internal/atomicfile/read.go OpenRegular os.OpenFile": "the one helper: O_NONBLOCK, then Fstat",
	"internal/atomicfile/atomicfile.go SyncDir os.Open":   "opens a directory to fsync it; reads nothing",
	"internal/filelock/filelock.go Lock os.OpenFile":      "a lock file, opened read-write to flock it; its contents are not read",
	"internal/filelock/filelock.go Held os.OpenFile":      "a lock file, opened read-write to test its flock; its contents are not read",
	// The view server: every request is opened inside the run directory's
	// os.Root (Stat first, then O_NONBLOCK and Fstat), which refuses
	// symlinks and ".." out of it at open time; served files are streamed,
	// not read into memory (host/serve).
	"host/serve/serve.go New os.OpenRoot": "the run directory as an os.Root; requests are opened in it by Root.OpenFile, regular files only",
	// Kernel pseudo-files (regular, of size 0, written by the kernel), and
	// a cgroup's directory.
	"host/limits/hostmem_linux.go cgroupPaths os.Open":           "/proc/self/cgroup",
	"host/limits/hostmem_linux.go mountOf os.Open":               "/proc/self/mountinfo",
	"host/limits/hostmem_linux.go readBytes os.ReadFile":         "a cgroup's memory.max under /sys/fs/cgroup",
	"host/plugin/memlimit_linux.go newCgroup os.ReadFile":        "the host cgroup's cgroup.subtree_control",
	"host/plugin/memlimit_linux.go newCgroup unix.Open":          "the plugin's cgroup directory, for CLONE_INTO_CGROUP",
	"host/plugin/memlimit_linux.go cgroup.oomKilled os.ReadFile": "a plugin cgroup's memory.events",
	"host/paperreport/report.go Machine os.ReadFile":             "/proc/cpuinfo and /proc/meminfo",
	"host/bench/run.go loadAvg os.ReadFile":                      "/proc/loadavg",
	// Test helpers (not _test files, so that tests of several packages
	// share them): golden files of the repository.
	"internal/golden/quantiles.go Records os.Open":   "a golden file of testdata/, in tests only",
	"internal/proctest/proctest.go List os.ReadFile": "/proc/PID/stat and cmdline, in tests only",
	"internal/golden/golden.go CSV32 os.Open":        "a golden file of testdata/, in tests only",
}

// TestReadersUseTheHelper walks the Go source of cmd, host, internal,
// plugins and sdk (not _test files, not testdata) and fails on any use
// of a function that opens or reads a file by path (openers) outside
// allowed: every file the host reads goes through OpenRegular or
// ReadRegular, so a FIFO, a device or a directory is refused without
// blocking, and a file is size-bounded before it is read.
func TestReadersUseTheHelper(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	used := map[string]bool{}
	var bad []string
	files := 0
	for _, top := range []string{"cmd", "host", "internal", "plugins", "sdk"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			files++
			for _, use := range openerUses(t, path) {
				key := filepath.ToSlash(rel) + " " + use.fn + " " + use.opener
				if _, ok := allowed[key]; ok {
					used[key] = true
					continue
				}
				bad = append(bad, filepath.ToSlash(rel)+":"+strconv.Itoa(use.line)+": "+use.fn+" calls "+use.opener)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 100 {
		t.Fatalf("walked %d Go files under %s, want the module's source", files, root)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: open input files with atomicfile.OpenRegular or ReadRegular and a Limit (or justify it in allowed)", b)
	}
	for key := range allowed {
		if !used[key] {
			t.Errorf("allowed lists %q, which the source no longer has: remove it", key)
		}
	}
}

// openerUse is one reference to an opener: the function it is in
// ("Type.Method" for a method, "" at package level), the opener as
// "pkg.Name", and its line.
type openerUse struct {
	fn, opener string
	line       int
}

// openerUses parses the file at path and returns its references to an
// opener, called or not (a function value passed on counts too).
func openerUses(t *testing.T, path string) []openerUse {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{} // local name -> import path, for the openers' packages
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if _, ok := openers[p]; !ok {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		names[name] = p
	}
	if len(names) == 0 {
		return nil
	}
	var out []openerUse
	visit := func(fn string, n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			p, ok := names[id.Name]
			if !ok {
				return true
			}
			for _, o := range openers[p] {
				if sel.Sel.Name == o {
					out = append(out, openerUse{fn: fn, opener: id.Name + "." + o, line: fset.Position(sel.Pos()).Line})
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			visit("", d)
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			typ := fd.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			if ix, ok := typ.(*ast.IndexExpr); ok {
				typ = ix.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		visit(name, fd)
	}
	return out
}

// TestOpenerUsesFindsEachForm: the walker sees a call, a function value,
// a renamed import and a method's use, with the enclosing function's name
// (so that TestReadersUseTheHelper cannot pass by missing them).
func TestOpenerUsesFindsEachForm(t *testing.T) {
	src := `package p

import (
	stdos "os"
	"github.com/BurntSushi/toml"
)

var open = stdos.Open

type T struct{}

func (t *T) m() { stdos.ReadFile("x") }

func f() {
	g := stdos.OpenFile
	_ = g
	toml.DecodeFile("x", nil)
	stdos.Stat("x")
}
`
	p := filepath.Join(t.TempDir(), "p.go")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range openerUses(t, p) {
		got = append(got, u.fn+" "+u.opener+" "+strconv.Itoa(u.line))
	}
	want := []string{" stdos.Open 8", "T.m stdos.ReadFile 12", "f stdos.OpenFile 15", "f toml.DecodeFile 17"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("uses %q, want %q", got, want)
	}
}
