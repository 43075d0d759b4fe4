package runner

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/store"
)

// TestReadOnlyCache: a cache populated by a run, then made read-only
// (chmod -R a-w, as a shared cache may be), serves a run of the same
// recipe, which writes the same results; a run of a recipe whose fits it
// lacks fails with an error naming the cache directory. Root writes
// read-only directories, so the test skips as root.
func TestReadOnlyCache(t *testing.T) {
	dir := t.TempDir()
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), "")), dir)
	if err != nil {
		t.Fatal(err)
	}
	m := inProcess(t)
	cache := store.Cache{Dir: filepath.Join(dir, "cache")}
	first, err := Run(context.Background(), r, Options{Plugins: m, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(cache.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			files = append(files, p)
		}
		return err
	})
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			os.Chmod(f, fi.Mode().Perm()&^0o222)
		}
	}
	t.Cleanup(func() {
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil {
				os.Chmod(f, fi.Mode().Perm()|0o200)
			}
		}
	})
	if unix.Access(cache.Dir, unix.W_OK) == nil {
		t.Skip("this process writes a directory of mode a-w (root): the test needs an ordinary user")
	}
	again, err := Run(context.Background(), r, Options{Plugins: m, Cache: cache})
	if err != nil {
		t.Fatalf("a run that the read-only cache holds: %v", err)
	}
	sameFiles(t, "from the read-only cache", again.Dir, first.Dir)
	other, err := recipe.Parse("tiny.toml", []byte(strings.Replace(tinyRecipe(filepath.Join(dir, "runs"), ""), "seed = 7", "seed = 8", 1)), dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), other, Options{Plugins: m, Cache: cache})
	t.Logf("a miss: %v", err)
	if err == nil || !strings.Contains(err.Error(), cache.Dir) || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a run whose fits the read-only cache lacks: %v; want an error naming the directory", err)
	}
}
