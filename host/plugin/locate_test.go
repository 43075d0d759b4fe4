package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocateStartsNothing: Locate says what would serve an ID (a
// built-in, else the first binary or plugin directory of the plugin
// directories, as start picks) and fails as starting would (a bad
// manifest, an unknown ID naming the directories), running nothing: each
// executable here writes a marker file when it runs.
func TestLocateStartsNothing(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	sh := []byte(fmt.Sprintf("#!/bin/sh\necho \"$0\" >> '%s'\nexit 1\n", marker))
	d1, d2 := filepath.Join(dir, "d1"), filepath.Join(dir, "d2")
	for _, d := range []string{d1, d2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string) {
		if err := os.WriteFile(path, sh, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(d1, "uaxai-explainer-nice"))
	write(filepath.Join(d2, "uaxai-explainer-nice"))         // shadowed by d1's
	write(filepath.Join(d1, "uaxai-explainer-builtin-echo")) // shadowed by the built-in
	piped := filepath.Join(d2, "uaxai-summary-piped")
	if err := os.Mkdir(piped, 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(piped, "run"))
	if err := os.WriteFile(filepath.Join(piped, ManifestName), []byte("command = \"run\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badm := filepath.Join(d2, "uaxai-summary-badm")
	if err := os.Mkdir(badm, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(badm, ManifestName), []byte("comand = \"run\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewManager(testRegistry(), Options{Dirs: []string{d1, d2}, Logger: quietLogger(t)})
	t.Cleanup(m.Close)
	for _, c := range []struct {
		id      string
		builtin bool
		source  string
	}{
		{"explainer.builtin-echo", true, "built-in"},
		{"explainer.nice", false, filepath.Join(d1, "uaxai-explainer-nice")},
		{"summary.piped", false, piped},
	} {
		b, src, err := m.Locate(c.id)
		if err != nil || b != c.builtin || src != c.source {
			t.Errorf("Locate(%s) = %v, %q, %v; want %v, %q", c.id, b, src, err, c.builtin, c.source)
		}
	}
	for _, c := range []struct{ id, want string }{
		{"summary.badm", `unknown key "comand"`},
		{"explainer.nicer", `unknown plugin "explainer.nicer"`},
		{"nokind", "nokind"},
	} {
		_, _, err := m.Locate(c.id)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Locate(%s): %v; want an error with %q", c.id, err, c.want)
		}
		if c.id == "explainer.nicer" && (err == nil || !strings.Contains(err.Error(), d2)) {
			t.Errorf("Locate(%s): %v does not name the directories searched", c.id, err)
		}
	}
	if b, err := os.ReadFile(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Locate ran %q (%v)", b, err)
	}
	// Starting it does run it: the marker is the test's own check.
	if _, err := m.Explainer(t.Context(), "explainer.nice"); err == nil {
		t.Error("a shell script started as a plugin")
	}
	if b, err := os.ReadFile(marker); err != nil || !strings.Contains(string(b), filepath.Join(d1, "uaxai-explainer-nice")) {
		t.Errorf("starting explainer.nice: marker %q, %v", b, err)
	}
}
