package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// wantCommands is every command uaxai has, written out here: the table
// must name each, and no other.
var wantCommands = []string{"run", "merge", "view", "recipe check", "plugins", "data generate", "data import", "train",
	"predict", "explain", "evaluate", "paper", "slurm submit", "slurm status", "bench", "help", "plugin serve"}

// wantUsage is the first Usage line of every command's -h: its
// positional arguments (and the flags it cannot do without).
var wantUsage = map[string]string{
	"run":           "Usage: uaxai run [flags] RECIPE.toml",
	"merge":         "Usage: uaxai merge [flags] RUN_DIR",
	"view":          "Usage: uaxai view RUN_DIR",
	"recipe check":  "Usage: uaxai recipe check [flags] RECIPE.toml",
	"plugins":       "Usage: uaxai plugins [flags]",
	"data generate": "Usage: uaxai data generate [flags] --per-class N --seed S --out DIR",
	"data import":   "Usage: uaxai data import [flags] RECORDING [RECORDING...] --out DIR",
	"train":         "Usage: uaxai train [flags] --per-class N --out W.safetensors",
	"predict":       "Usage: uaxai predict [flags] --weights W.safetensors",
	"explain":       "Usage: uaxai explain [flags] --weights W.safetensors[,W2.safetensors,...] --input X.csv|X.npy [--channels C] --explainer NAME --target C|predicted|FILE",
	"evaluate":      "Usage: uaxai evaluate [flags] --weights W[,W2,...] | --model M --input X.csv|X.npy --maps A.csv --target C|predicted|FILE --metric ID [--set key=value ...] [--mask S.csv] [--explainer NAME]",
	"paper":         "Usage: uaxai paper [flags] [--quick] [--dir DIR] [--out DIR]",
	"slurm submit":  "Usage: uaxai slurm submit [flags] RECIPE.toml",
	"slurm status":  "Usage: uaxai slurm status RUN_DIR",
	"bench":         "Usage: uaxai bench [flags]",
	"help":          "Usage: uaxai help [COMMAND]",
	"plugin serve":  "Usage: uaxai plugin serve ID",
}

// commandFuncs returns the functions of the package's source (tests
// aside) that have a command's signature, func(ctx context.Context, args
// []string, stdout, stderr io.Writer) error: the commands written, whether
// or not the table has them.
func commandFuncs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil {
				continue
			}
			var types []string
			for _, p := range fd.Type.Params.List {
				for range max(len(p.Names), 1) {
					types = append(types, types2string(p.Type))
				}
			}
			res := fd.Type.Results
			if slices.Equal(types, []string{"context.Context", "[]string", "io.Writer", "io.Writer"}) &&
				res != nil && len(res.List) == 1 && types2string(res.List[0].Type) == "error" {
				out = append(out, fd.Name.Name)
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d command functions (%v): the scan is broken", len(out), out)
	}
	return out
}

// types2string writes a parameter type as source: "io.Writer", "[]string".
func types2string(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return types2string(e.X) + "." + e.Sel.Name
	case *ast.ArrayType:
		return "[]" + types2string(e.Elt)
	}
	return "?"
}

// TestHelp: --help, -h and help print to stdout, exit 0 and show every
// command (paper included) with its arguments; every function with a
// command's signature is in the table, and the table holds exactly the
// commands above; no arguments or an unknown command print the overview
// to stderr and exit 2; uaxai help CMD is CMD -h.
func TestHelp(t *testing.T) {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(wantCommands))) {
		t.Errorf("the table has %q, want %q", names, wantCommands)
	}
	inTable := map[string]bool{}
	for _, c := range commands {
		full := runtime.FuncForPC(reflect.ValueOf(c.run).Pointer()).Name()
		inTable[full[strings.LastIndex(full, ".")+1:]] = true
	}
	for _, f := range commandFuncs(t) {
		if !inTable[f] {
			t.Errorf("%s has a command's signature but no entry in the command table: uaxai cannot run it, and help does not show it", f)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"-help"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || errb.Len() != 0 {
			t.Errorf("uaxai %s: exit %d, stderr %q; want 0 and nothing", args[0], code, errb.String())
		}
		for _, name := range wantCommands {
			// Each command is listed with its arguments: the forms of the
			// usage line, after "Usage: ".
			line := "  " + strings.TrimPrefix(wantUsage[name], "Usage: ")
			if !strings.Contains(out.String(), line) {
				t.Errorf("uaxai %s does not list %q (want a line %q):\n%s", args[0], name, line, out.String())
			}
		}
	}
	for _, args := range [][]string{{}, {"bogus"}, {"data"}, {"data", "bogus"}, {"slurm"}, {"recipe"}, {"help", "bogus"}, {"help", "data", "bogus"}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "'uaxai help COMMAND'") {
			t.Errorf("uaxai %q: exit %d, stdout %q, stderr %q; want exit 2 and the overview on stderr", args, code, out.String(), errb.String())
		}
		if len(args) > 0 && !strings.Contains(errb.String(), "accepted:") {
			t.Errorf("uaxai %q: stderr %q, want the accepted commands", args, errb.String())
		}
	}
	for _, args := range [][]string{{"data", "-h"}, {"help", "data"}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 0 || !strings.Contains(out.String(), "uaxai data generate") || !strings.Contains(out.String(), "uaxai data import") || strings.Contains(out.String(), "uaxai train") {
			t.Errorf("uaxai %q: exit %d, stdout %q; want the data commands only", args, code, out.String())
		}
	}
	for _, name := range wantCommands {
		var h, herr, help, helperr bytes.Buffer
		code := run(append(strings.Fields(name), "-h"), &h, &herr)
		code2 := run([]string{"help", name}, &help, &helperr)
		if code != 0 || code2 != 0 || h.String() != help.String() || h.Len() == 0 {
			t.Errorf("%s: -h (exit %d) and help %s (exit %d) differ or are empty:\n%s\n---\n%s%s", name, code, name, code2, h.String(), help.String(), helperr.String())
		}
	}
}

// TestCommandUsage: every command's -h prints, on stdout, a Usage line
// with its positional arguments, its summary, and its flags.
func TestCommandUsage(t *testing.T) {
	for _, name := range wantCommands {
		var out, errb bytes.Buffer
		code := run(append(strings.Fields(name), "-h"), &out, &errb)
		if code != 0 || errb.Len() != 0 {
			t.Errorf("uaxai %s -h: exit %d, stderr %q; want 0 and nothing", name, code, errb.String())
		}
		first, _, _ := strings.Cut(out.String(), "\n")
		if want := wantUsage[name]; !strings.HasPrefix(first, want) {
			t.Errorf("uaxai %s -h: first line %q, want %q", name, first, want)
		}
		if c := find(name); c == nil || !strings.Contains(out.String(), c.summary) {
			t.Errorf("uaxai %s -h: no summary:\n%s", name, out.String())
		}
		if name != "help" && name != "plugin serve" && name != "slurm status" && !strings.Contains(out.String(), "\nFlags:\n  -") {
			t.Errorf("uaxai %s -h: no flags:\n%s", name, out.String())
		}
	}
	// A flag error prints the usage to stderr, not stdout, and fails.
	var out, errb bytes.Buffer
	if code := run([]string{"merge", "--bogus"}, &out, &errb); code != 1 || out.Len() != 0 || !strings.Contains(errb.String(), "Usage: uaxai merge [flags] RUN_DIR") {
		t.Errorf("merge --bogus: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
