package torchserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/plugins/posterior/torch"
	"github.com/uaxai/uaxai/sdk/python"
)

// kitFile is one file of the unpacked kit: its path under the root (the
// repository's layout) and its bytes.
type kitFile struct {
	rel  string
	data []byte
	mode os.FileMode
}

// embeddedKit is the Python kit and posterior.torch as this binary holds
// them, in the repository's layout (sdk/python/uaxai_plugin/...,
// plugins/posterior/torch/uaxai-posterior-torch), in name order.
func embeddedKit() ([]kitFile, error) {
	var out []kitFile
	err := fs.WalkDir(python.Kit, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := python.Kit.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, kitFile{rel: path.Join("sdk", "python", p), data: b, mode: 0o644})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the embedded Python kit: %w", err)
	}
	out = append(out, kitFile{rel: path.Join("plugins", "posterior", "torch", torch.ScriptName), data: torch.Script, mode: 0o755})
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

// kitCacheDir is where the kit is unpacked: $UAXAI_CACHE (the posterior
// cache's directory), else the user's cache directory's uaxai.
func kitCacheDir() (string, error) {
	if d := os.Getenv("UAXAI_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "uaxai"), nil
}

// UnpackedKit writes the embedded Python kit and posterior.torch under
// the cache directory, in python-kit-<digest>/ (the digest of every
// file's name and bytes, so that two binaries' kits never mix), and
// returns the kit's directory (its sdk/python). Every file is checked on
// every call: one whose bytes differ from the embedded ones (damaged,
// edited, half written) is written again, atomically.
func UnpackedKit() (string, error) {
	files, err := embeddedKit()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.rel, len(f.data))
		h.Write(f.data)
	}
	base, err := kitCacheDir()
	if err != nil {
		return "", fmt.Errorf("unpacking the Python kit: no cache directory: %w", err)
	}
	root := filepath.Join(base, "python-kit-"+hex.EncodeToString(h.Sum(nil))[:16])
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f.rel))
		// a cache entry is untrusted: read as a regular file of at most the
		// embedded size, and compared
		if b, err := atomicfile.ReadRegular(p, atomicfile.Limit{Bytes: int64(len(f.data)) + 1, What: "a file of the unpacked Python kit"}); err == nil && bytes.Equal(b, f.data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("unpacking the Python kit: %w", err)
		}
		tmp, err := os.CreateTemp(filepath.Dir(p), ".unpack-*")
		if err != nil {
			return "", fmt.Errorf("unpacking the Python kit: %w", err)
		}
		_, werr := tmp.Write(f.data)
		cerr := tmp.Close()
		if err := firstErr(werr, cerr, os.Chmod(tmp.Name(), f.mode)); err != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("unpacking the Python kit: %s: %w", p, err)
		}
		if err := os.Rename(tmp.Name(), p); err != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("unpacking the Python kit: %w", err)
		}
	}
	return filepath.Join(root, "sdk", "python"), nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
