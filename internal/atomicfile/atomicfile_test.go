package atomicfile

import (
	"bufio"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// returns runs fn and fails the test if it has not returned within a
// minute: a guard for reads that used to block for ever, not a measure of
// speed.
func returns(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: still blocked after a minute", what)
	}
}

// TestReadRegularRefusesOtherFiles: a FIFO (with no writer: opening it
// for reading would block), a symbolic link to one, a directory and a
// socket are refused at once, with an error naming the path, "not a
// regular file" and what it is; a regular file, and a link to one, read back; a missing
// file is fs.ErrNotExist.
func TestReadRegularRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	link := filepath.Join(dir, "link-to-fifo")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for p, kind := range map[string]string{fifo: "a FIFO", link: "a FIFO", sub: "a directory", sock: "a socket", "/dev/null": "a device"} {
		returns(t, p, func() {
			b, err := ReadRegular(p, AnySize)
			want := "not a regular file (it is " + kind + "; accepted: a regular file)"
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) {
				t.Errorf("ReadRegular(%s) = %d bytes, %v; want an error naming it, %s", p, len(b), err, want)
			}
		})
	}
	file := filepath.Join(dir, "file")
	if err := WriteFile(file, []byte("contents")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(dir, "link")} {
		if b, err := ReadRegular(p, AnySize); err != nil || string(b) != "contents" {
			t.Errorf("ReadRegular(%s) = %q, %v", p, b, err)
		}
	}
	if _, err := ReadRegular(filepath.Join(dir, "missing"), AnySize); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}
