package torchserver

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestUnpackedKit: the embedded kit is unpacked in the repository's
// layout under $UAXAI_CACHE, every file the embedded bytes (the
// repository's own sdk/python and posterior.torch), the plugin
// executable; a damaged file is written again on the next call, and the
// kit's directory is what FindPythonKit's search would accept.
func TestUnpackedKit(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("UAXAI_CACHE", cache)
	kit, err := UnpackedKit()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(kit, pythonKitFile)); err != nil {
		t.Fatalf("the unpacked kit %s lacks %s: %v", kit, pythonKitFile, err)
	}
	repo := filepath.Join("..", "..")
	files, err := embeddedKit()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(filepath.Dir(kit))
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.rel)))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(f.rel)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the unpacked file differs from the repository's", f.rel)
		}
	}
	script := filepath.Join(root, "plugins", "posterior", "torch", "uaxai-posterior-torch")
	if st, err := os.Stat(script); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("posterior.torch unpacked as %v (%v); want an executable", st, err)
	}
	damaged := filepath.Join(kit, pythonKitFile)
	if err := os.WriteFile(damaged, []byte("raise SystemExit(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if again, err := UnpackedKit(); err != nil || again != kit {
		t.Fatalf("again: %s, %v; want %s", again, err, kit)
	}
	got, _ := os.ReadFile(damaged)
	want, _ := os.ReadFile(filepath.Join(repo, "sdk", "python", pythonKitFile))
	if !bytes.Equal(got, want) {
		t.Error("a damaged file of the unpacked kit was not written again")
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(damaged), ".unpack-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %q", left)
	}
}
