package script

import (
	"os"
	"strings"
	"testing"
)

// FuzzLoad: no script source panics the loader's static checks (the Go
// parser, the import allow-list, go statements, the declarations), which
// run before any interpretation. The interpreter itself is not fuzzed in
// process: yaegi overflows its stack on some sources (FuzzLoad found
// "package A\nfunc A(A[]A,c[]y)(k,)", kept in testdata/fuzz), a fatal
// error that would end the fuzzer; in uaxai it ends only the script's
// child process, which host/plugin's TestFuzzedScriptOutOfProcess checks.
func FuzzLoad(f *testing.F) {
	for _, p := range []string{"../../recipes/scripts/trimmed_mean.go"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("package s\n\nimport \"os\"\n"))
	f.Add([]byte("package s\n\nconst Output = sdk.OutputMap\n\nfunc Summarise(d [][][]float64, c map[string]any) ([]sdk.Result, error) { return nil, nil }\n"))
	f.Add([]byte("package s\nfunc init() { go func(){}() }\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		s := &Script{path: "fuzz.go", source: src}
		d, err := s.inspect()
		if err != nil {
			if !strings.HasPrefix(err.Error(), "script fuzz.go") {
				t.Fatalf("an error that does not name the script: %v", err)
			}
			return
		}
		for name, kind := range d {
			switch kind {
			case "func", "const", "var", "type":
			default:
				t.Fatalf("declaration %q of kind %q", name, kind)
			}
		}
	})
}
