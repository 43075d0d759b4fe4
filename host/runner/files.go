package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/sdk"
)

// A posterior's Info.Files names the keys of its table that hold paths of
// files its Fit reads: a string, or a list of strings. The host
//
//   - resolves them against the recipe's folder (absolute paths pass
//     through) before Check and Fit, in the recipe itself, so that the
//     plugin process (whatever its working directory) and the run's
//     recipe.toml see absolute paths;
//   - refuses at check time a file that cannot be opened for reading,
//     naming the recipe line, the key and the file;
//   - keys its cache by the files' contents: the cache key holds the
//     SHA-256 of each file's bytes in place of its path. A file overwritten
//     in place gets a new key; the same bytes under another path, or the
//     recipe moved to another folder, hit the same entry (the artifact
//     depends on the bytes only).
//
// A value of another type is left as it is, for the plugin's Check to
// refuse.

// fileRef is one path under a file key: entry is its index in a list, or
// -1 for a plain string.
type fileRef struct {
	key   string
	entry int
	path  string
}

func (f fileRef) String() string {
	if f.entry < 0 {
		return fmt.Sprintf("key %q", f.key)
	}
	return fmt.Sprintf("key %q entry %d", f.key, f.entry)
}

// filePaths lists the paths under the file keys of cfg, in key order and
// list order.
func filePaths(cfg sdk.Config, keys []string) []fileRef {
	var out []fileRef
	for _, k := range keys {
		switch v := cfg[k].(type) {
		case string:
			out = append(out, fileRef{key: k, entry: -1, path: v})
		case []any:
			for i, e := range v {
				if s, ok := e.(string); ok {
					out = append(out, fileRef{key: k, entry: i, path: s})
				}
			}
		}
	}
	return out
}

// mapFiles returns a copy of cfg in which every path under the file keys
// is replaced by f(path); cfg itself is not changed.
func mapFiles(cfg sdk.Config, keys []string, f func(path string) (string, error)) (sdk.Config, error) {
	if len(filePaths(cfg, keys)) == 0 {
		return cfg, nil
	}
	out := cfg.Clone()
	for _, ref := range filePaths(cfg, keys) {
		v, err := f(ref.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		if ref.entry < 0 {
			out[ref.key] = v
		} else {
			out[ref.key].([]any)[ref.entry] = v
		}
	}
	return out, nil
}

// resolveFiles makes the paths under the file keys of cfg absolute
// against dir (the recipe's folder); absolute and empty paths are kept.
func resolveFiles(cfg sdk.Config, keys []string, dir string) sdk.Config {
	out, _ := mapFiles(cfg, keys, func(p string) (string, error) {
		if p == "" || filepath.IsAbs(p) {
			return p, nil
		}
		return filepath.Join(dir, p), nil
	})
	return out
}

// checkFiles checks that every file under ref's file keys opens for
// reading and is not a directory. The error is placed at the key's line.
func checkFiles(r *recipe.Recipe, ref recipe.PluginRef, keys []string) error {
	for _, f := range filePaths(ref.Config, keys) {
		if err := readable(f.path); err != nil {
			return r.PluginError(ref, fmt.Errorf("%s: cannot read %s: %w (accepted: a readable regular file; a relative path is resolved against the recipe's folder %s)", f, f.path, err, r.Dir))
		}
	}
	return nil
}

// readable opens path for reading and checks that it is a regular file
// (atomicfile.OpenRegular: a FIFO is refused, not waited on); the error
// is the bare reason (the caller names the file). The size is the
// plugin's to bound, as it reads the file.
func readable(path string) error {
	fh, err := atomicfile.OpenRegular(path, atomicfile.AnySize)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err
		}
		return err
	}
	return fh.Close()
}

// fileDigest returns "sha256:" and the hex SHA-256 of the file's bytes,
// which it streams (a regular file of any size).
func fileDigest(path string) (string, error) {
	fh, err := atomicfile.OpenRegular(path, atomicfile.AnySize)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// contentConfig is cfg as the cache key sees it: every path under the
// file keys replaced by the digest of the file's contents.
func contentConfig(cfg sdk.Config, keys []string) (sdk.Config, error) {
	return mapFiles(cfg, keys, fileDigest)
}
