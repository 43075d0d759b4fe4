// Package store is the cache of fitted posteriors: an sdk.Artifact is kept
// as one safetensors file named by a hash of everything that produced it
// (architecture, data, training protocol, plugin ID, version and config,
// seed). A corrupt entry is reported and fitted again, never used.
package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// Cache is a directory of fitted posteriors.
type Cache struct{ Dir string }

// DefaultDir is $UAXAI_CACHE, else the user cache directory's uaxai/
// folder, else .uaxai-cache in the working directory.
func DefaultDir() string {
	if d := os.Getenv("UAXAI_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "uaxai")
	}
	return ".uaxai-cache"
}

// Key hashes the parts (each JSON-encoded, in order) into a hex key.
func Key(parts ...any) (string, error) {
	h := sha256.New()
	for _, p := range parts {
		b, err := json.Marshal(p)
		if err != nil {
			return "", fmt.Errorf("cache key: %w", err)
		}
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (c Cache) path(key string) string {
	return filepath.Join(c.Dir, "posteriors", key+".safetensors")
}

// Get returns the artifact stored under key.
func (c Cache) Get(key string) (sdk.Artifact, bool, error) {
	p := c.path(key)
	if _, err := os.Stat(p); os.IsNotExist(err) {
		return sdk.Artifact{}, false, nil
	}
	f, err := safetensors.ReadFile(p)
	if err != nil {
		return sdk.Artifact{}, false, err
	}
	a, err := Decode(f, p)
	if err != nil {
		return sdk.Artifact{}, false, err
	}
	return a, true, nil
}

// Put stores a under key (atomically).
func (c Cache) Put(key string, a sdk.Artifact) error {
	if err := os.MkdirAll(filepath.Join(c.Dir, "posteriors"), 0o755); err != nil {
		return err
	}
	ts, meta, err := Encode(a)
	if err != nil {
		return err
	}
	return safetensors.WriteFile(c.path(key), ts, meta)
}

// Encode turns an artifact into tensors (sorted by name) and metadata: the
// architecture as JSON under "arch", artifact metadata under "meta.<key>".
func Encode(a sdk.Artifact) ([]safetensors.Tensor, map[string]string, error) {
	arch, err := json.Marshal(a.Arch)
	if err != nil {
		return nil, nil, err
	}
	meta := map[string]string{"arch": string(arch), "format": "uaxai-artifact-1"}
	for k, v := range a.Meta {
		meta["meta."+k] = v
	}
	names := make([]string, 0, len(a.Tensors))
	for n := range a.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	ts := make([]safetensors.Tensor, len(names))
	for i, n := range names {
		ts[i] = safetensors.Tensor{Name: n, DType: "F32", Shape: []int{len(a.Tensors[n])}, Data: a.Tensors[n]}
	}
	return ts, meta, nil
}

// Decode is the inverse of Encode; name is used in errors.
func Decode(f *safetensors.File, name string) (sdk.Artifact, error) {
	if f.Meta["format"] != "uaxai-artifact-1" {
		return sdk.Artifact{}, fmt.Errorf("%s: not a uaxai artifact (metadata format = %q, want uaxai-artifact-1)", name, f.Meta["format"])
	}
	var a sdk.Artifact
	if err := json.Unmarshal([]byte(f.Meta["arch"]), &a.Arch); err != nil {
		return sdk.Artifact{}, fmt.Errorf("%s: metadata arch: %w", name, err)
	}
	if err := a.Arch.Validate(); err != nil {
		return sdk.Artifact{}, fmt.Errorf("%s: %w", name, err)
	}
	a.Tensors = map[string][]float32{}
	a.Meta = map[string]string{}
	for _, t := range f.Tensors {
		if !t.IsFloat() {
			return sdk.Artifact{}, fmt.Errorf("%s: tensor %q has dtype %s, want F32", name, t.Name, t.DType)
		}
		a.Tensors[t.Name] = t.Data
	}
	for k, v := range f.Meta {
		if strings.HasPrefix(k, "meta.") {
			a.Meta[strings.TrimPrefix(k, "meta.")] = v
		}
	}
	return a, nil
}
