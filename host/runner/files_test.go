package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/store"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk"
)

// filesRecipeText explains a tiny test split with the networks of a
// posterior.files table (files is its key line, e.g. `weights = "w.safetensors"`).
func filesRecipeText(out, files string) string {
	return `name = "files"
seed = 5
out = "` + out + `"

[data]
train_per_class = 2
val_fraction = 0.5
test_splits = 1
test_per_class = 2

[train]
epochs = 1

[[posterior]]
use = "files"
label = "Files"
` + files + `

[[explainer]]
use = "occlusion"
window = 60
stride = 40

[[summary]]
use = "mean"
`
}

func copyFile(t *testing.T, dst, src string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFilesCacheKeyIsContents: the cache keys a posterior.files table by
// the bytes of its files. Overwritten in place, the file is read again and
// the run equals a run without the cache; unchanged, it is a cache hit;
// the same bytes under another path are the same entry (a documented
// choice: the artifact depends on the bytes only).
func TestFilesCacheKeyIsContents(t *testing.T) {
	dir := t.TempDir()
	cache := store.Cache{Dir: filepath.Join(dir, "cache")}
	weights := filepath.Join(dir, "w.safetensors")
	copyFile(t, weights, filepath.Join(golden.Dir(t, "paper-1dcnn"), "model.safetensors"))
	other, _ := paperWeights(t)
	m := inProcess(t)
	run := func(files string, useCache bool) ([]byte, int) {
		t.Helper()
		r, err := recipe.Parse("files.toml", []byte(filesRecipeText(filepath.Join(dir, "runs"), files)), dir)
		if err != nil {
			t.Fatal(err)
		}
		obs := &notes{}
		opt := Options{Plugins: m, Workers: 2, Observer: obs}
		if useCache {
			opt.Cache = cache
		}
		o, err := Run(context.Background(), r, opt)
		if err != nil {
			t.Fatal(err)
		}
		hits := 0
		for _, n := range obs.all {
			if strings.Contains(n, "from the cache") {
				hits++
			}
		}
		return read(t, filepath.Join(o.Dir, "results.json")), hits
	}
	const rel = `weights = "w.safetensors"`
	first, hits := run(rel, true)
	if hits != 0 {
		t.Fatalf("the first run hit an empty cache")
	}
	copyFile(t, weights, other) // overwritten in place: same path, new bytes
	second, hits := run(rel, true)
	if hits != 0 {
		t.Error("the overwritten file was served from the cache")
	}
	if bytes.Equal(first, second) {
		t.Error("the overwritten file gives the same results as the old one")
	}
	fresh, _ := run(rel, false)
	if !bytes.Equal(second, fresh) {
		t.Error("after the overwrite, the cached run differs from a run without the cache")
	}
	again, hits := run(rel, true)
	if hits != 1 || !bytes.Equal(again, second) {
		t.Errorf("unchanged file: %d cache hits (want 1), same results %v", hits, bytes.Equal(again, second))
	}
	copyFile(t, filepath.Join(dir, "sub", "moved.safetensors"), weights)
	moved, hits := run(`weights = "sub/moved.safetensors"`, true)
	if hits != 1 || !bytes.Equal(moved, second) {
		t.Errorf("the same bytes under another path: %d cache hits (want 1), same results %v", hits, bytes.Equal(moved, second))
	}
}

// TestFilesResolvedAtCheck: relative paths under a posterior's file keys
// are resolved against the recipe's folder, absolute ones are kept; a
// file that cannot be read is a check error at the key's line naming the
// key, the entry and the file.
func TestFilesResolvedAtCheck(t *testing.T) {
	dir := t.TempDir()
	weights, _ := paperWeights(t)
	copyFile(t, filepath.Join(dir, "a.safetensors"), weights)
	if err := os.Mkdir(filepath.Join(dir, "folder.safetensors"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := inProcess(t)
	parse := func(files string) (*recipe.Recipe, string) {
		t.Helper()
		text := filesRecipeText(filepath.Join(dir, "runs"), files)
		r, err := recipe.Parse("files.toml", []byte(text), dir)
		if err != nil {
			t.Fatal(err)
		}
		return r, text
	}
	r, _ := parse(`files = ["a.safetensors", "` + weights + `"]`)
	if err := Check(context.Background(), r, m); err != nil {
		t.Fatal(err)
	}
	got := r.Posteriors[0].Config["files"].([]any)
	if got[0] != filepath.Join(dir, "a.safetensors") || got[1] != weights {
		t.Errorf("files resolved to %v, want [%s %s]", got, filepath.Join(dir, "a.safetensors"), weights)
	}
	canon, err := r.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(canon), filepath.Join(dir, "a.safetensors")) {
		t.Errorf("the recipe as run does not hold the resolved path:\n%s", canon)
	}

	for _, c := range []struct {
		files string
		want  []string
	}{
		{`weights = "missing.safetensors"`, []string{`key "weights": cannot read ` + filepath.Join(dir, "missing.safetensors") + `: no such file or directory`, "resolved against the recipe's folder " + dir}},
		{`files = ["a.safetensors", "sub/missing.safetensors"]`, []string{`key "files" entry 1: cannot read ` + filepath.Join(dir, "sub", "missing.safetensors")}},
		{`files = ["missing.safetensors", "a.safetensors"]`, []string{`key "files" entry 0: cannot read ` + filepath.Join(dir, "missing.safetensors")}},
		{`weights = "folder.safetensors"`, []string{`key "weights": cannot read ` + filepath.Join(dir, "folder.safetensors") + `: not a regular file`}},
	} {
		r, text := parse(c.files)
		err := Check(context.Background(), r, m)
		if err == nil {
			t.Errorf("%s: no error", c.files)
			continue
		}
		want := append(c.want, fmt.Sprintf("files.toml: line %d:", lineOf(text, c.files)), "(posterior.files)")
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to contain %q", c.files, err, w)
			}
		}
	}
	// The plugin's own Check comes first: two keys are refused as such.
	r, _ = parse(`weights = "missing.safetensors"` + "\nfiles = [\"a.safetensors\"]")
	if err := Check(context.Background(), r, m); err == nil || !strings.Contains(err.Error(), "are both set") {
		t.Errorf("weights and files: %v", err)
	}
}

// TestContentConfig: the cache's view of a table replaces each path under
// a file key by the digest of its bytes (in list order), keeps every other
// key and value, and leaves the table itself unchanged; a missing file is
// an error naming its key.
func TestContentConfig(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for p, body := range map[string]string{a: "abc", b: ""} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// SHA-256 test vectors of FIPS 180-2: "abc" and the empty message.
	const abc = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	const empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	cfg := sdk.Config{"one": a, "many": []any{b, a, int64(3)}, "n": int64(2)}
	got, err := contentConfig(cfg, []string{"one", "many", "absent"})
	if err != nil {
		t.Fatal(err)
	}
	if got["one"] != abc || got["n"] != int64(2) {
		t.Errorf("one = %v, n = %v", got["one"], got["n"])
	}
	if l := got["many"].([]any); l[0] != empty || l[1] != abc || l[2] != int64(3) {
		t.Errorf("many = %v", l)
	}
	if cfg["one"] != a || cfg["many"].([]any)[0] != b {
		t.Errorf("the table itself changed: %v", cfg)
	}
	same, err := contentConfig(cfg, nil)
	if err != nil || same["one"] != a {
		t.Errorf("no file keys: %v, %v", same, err)
	}
	_, err = contentConfig(sdk.Config{"many": []any{a, filepath.Join(dir, "gone")}}, []string{"many"})
	if err == nil || !strings.Contains(err.Error(), `key "many" entry 1`) || !strings.Contains(err.Error(), "gone") {
		t.Errorf("a missing file: %v", err)
	}
	rel := resolveFiles(sdk.Config{"one": "x/y", "abs": "/z", "many": []any{"", "/q", "r"}}, []string{"one", "abs", "many"}, "/base")
	if rel["one"] != "/base/x/y" || rel["abs"] != "/z" {
		t.Errorf("resolved %v", rel)
	}
	if l := rel["many"].([]any); l[0] != "" || l[1] != "/q" || l[2] != "/base/r" {
		t.Errorf("resolved many = %v", l)
	}
}
