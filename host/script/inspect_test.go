package script

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"
)

// TestInspectRunsNothing: Inspect passes a script whose top-level var
// initialiser panics, which Load (which runs it) fails with that panic;
// it refuses, at their lines, what Load refuses before interpreting
// anything, and a script without Summarise or SummariseBand; the
// shipped example passes.
func TestInspectRunsNothing(t *testing.T) {
	const ran = "top-level code ran"
	loud := write(t, "loud.go", `package loud

var x = func() int { panic("`+ran+`") }()

func Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) { return nil, nil }
`)
	if err := Inspect(loud); err != nil {
		t.Errorf("Inspect: %v", err)
	}
	_, err := Load(loud, WithOutput(io.Discard))
	wantErr(t, err, ran)
	if err := Inspect(examplePath); err != nil {
		t.Errorf("Inspect %s: %v", examplePath, err)
	}
	for _, c := range []struct{ name, src, marker, want string }{
		{"import", "package p\n\nimport \"os\"\n\nfunc Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) { os.Exit(1); return nil, nil }\n", `"os"`, `import "os" is not allowed`},
		{"main", "package main\n\nfunc Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) { return nil, nil }\n", "package main", "package main is not accepted"},
		{"go", "package p\n\nfunc Summarise(d [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n\tgo func() {}()\n\treturn nil, nil\n}\n", "go func", "go statements are not allowed"},
		{"syntax", "package p\n\nfunc Summarise(d [][][]float64 {\n}\n", "func Summarise", "syntax error"},
	} {
		p := write(t, c.name+".go", c.src)
		err := Inspect(p)
		wantErr(t, err, c.want, fmt.Sprintf("script %s: line %d,", p, lineOf(t, c.src, c.marker)))
	}
	none := write(t, "none.go", "package p\n\nfunc Check(cfg map[string]interface{}) error { return nil }\n")
	wantErr(t, Inspect(none), "script "+none, "declares no function Summarise nor SummariseBand", sigSummarise)
	wantErr(t, Inspect(filepath.Join(t.TempDir(), "missing.go")), "missing.go")
}
