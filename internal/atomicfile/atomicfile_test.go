package atomicfile

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFile: the content arrives with mode 0644, replaces an existing
// file, and no temporary file is left.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	for _, want := range []string{"first\n", "second\n"} {
		if err := WriteFile(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", st.Mode().Perm(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestTempFailure: a failing writer leaves neither a temporary file nor a
// change to the target, and its error comes back.
func TestTempFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	tmp, err := Temp(dir, "f", func(w *bufio.Writer) error { w.WriteString("partial"); return boom })
	if !errors.Is(err, boom) || tmp != "" {
		t.Errorf("Temp = %q, %v; want \"\", boom", tmp, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("target changed to %q", b)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir"), nil); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

// A set whose second file fails replaces none, and leaves no temp file.
func TestWriteSet(t *testing.T) {
	dir := t.TempDir()
	put := func(s string) func(w *bufio.Writer) error {
		return func(w *bufio.Writer) error { _, err := w.WriteString(s); return err }
	}
	if err := WriteSet(dir, []Named{{"a", put("1")}, {"b", put("2")}}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteSet(dir, []Named{{"a", put("3")}, {"b", func(*bufio.Writer) error { return boom }}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), filepath.Join(dir, "b")) {
		t.Errorf("error %v", err)
	}
	for name, want := range map[string]string{"a": "1", "b": "2"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s = %q, want %q (untouched)", name, b, want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d entries, want 2 (no temp file left)", len(ents))
	}
}
