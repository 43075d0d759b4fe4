package script

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/uaxai/uaxai/sdk"
)

// FuzzLoad: no script source panics the loader (its static checks, the
// sandboxed interpreter and the reading of Info). A script it accepts
// describes itself validly, and its Check and Summarise return, with an
// error or an answer, on a tiny batch, within their time limit. The host
// runs scripts out of process (host/plugin), so even a crash of the
// interpreter costs only a child; this target keeps the loader itself
// from being that crash.
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
	dir := f.TempDir()
	path := filepath.Join(dir, "fuzz.go")
	f.Fuzz(func(t *testing.T, src []byte) {
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := Load(path, WithContext(ctx), WithTimeout(2*time.Second), WithOutput(discard{}))
		if err != nil {
			return
		}
		if err := s.Info().Validate(sdk.KindSummary); err != nil {
			t.Fatalf("a loaded script describes itself badly: %v", err)
		}
		if err := s.Check(sdk.Config{}); err != nil {
			return
		}
		_, _ = s.Summarise(ctx, [][][]float64{{{1, 2}, {3, 4}}}, sdk.Config{})
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
