package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/internal/filelock"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// Cache is a directory of fitted posteriors. With Refit, Get always
// misses, so that every posterior is fitted again and its entry replaced.
type Cache struct {
	Dir   string
	Refit bool
}

// format names the layout of an entry; entries of another format are set
// aside and fitted again.
const format = "uaxai-artifact-2"

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

// Lock takes the lock of an entry (posteriors/<key>.lock, an flock that
// dies with its holder), waiting while another process holds it; onWait
// is called once if it does. A process that fits a posterior holds it
// from its Get to its Put, so that processes sharing the cache, on one
// machine or on several over a shared file system, fit each entry once.
//
// A read-only cache (a shared cache made read-only, a read-only mount)
// has lock files this process cannot open for writing, as a lock needs.
// When the lock cannot be opened for that reason and the directory is not
// writable either, an entry that exists is read without the lock, which
// is safe: an entry is only ever written whole to a temporary file and
// renamed into place, and set aside by a rename, so a reader sees the
// whole entry or none, never part of one. What the lock adds, that the
// processes sharing the cache fit an entry once, concerns writers, and
// nobody can write there. (A writer with more rights may still replace
// the entry meanwhile: the reader then has the old whole entry or the new
// one, each checked by its checksum.) An entry that does not exist there
// is an error naming the directory: its fit could never be stored.
func (c Cache) Lock(ctx context.Context, key string, onWait func()) (func(), error) {
	unlock, err := filelock.Lock(ctx, filepath.Join(c.Dir, "posteriors", key+".lock"), onWait)
	if err == nil || !readOnly(err, c.Dir) {
		return unlock, err
	}
	if _, serr := os.Stat(c.path(key)); serr == nil && !c.Refit {
		return func() {}, nil
	}
	what := "has no entry " + filepath.Base(c.path(key))
	if c.Refit {
		what = "cannot take the fits of --refit"
	}
	return nil, fmt.Errorf("the cache directory %s is read-only (%w) and %s: accepted: a cache directory this user can write (--cache or UAXAI_CACHE), a read-only cache that holds every fit of the recipe, or --no-cache", c.Dir, err, what)
}

// readOnly reports whether err, from taking a lock in the cache dir, is
// a refusal to write (a permission, a read-only file system) and the
// directory that holds the lock files (posteriors/, or dir if it has none)
// may not be written by this process either.
func readOnly(err error, dir string) bool {
	if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EROFS) {
		return false
	}
	d := filepath.Join(dir, "posteriors")
	if _, serr := os.Stat(d); serr != nil {
		d = dir
	}
	return unix.Access(d, unix.W_OK) != nil
}

func (c Cache) path(key string) string {
	return filepath.Join(c.Dir, "posteriors", key+".safetensors")
}

// Get returns the artifact stored under key. A missing entry is a miss
// (false, nil); so is every entry with Refit. An entry that does not read
// back whole, or is not a regular file (a FIFO there is refused at once,
// not waited on), is set aside and reported: the error names it and where
// it went, and the caller fits again.
func (c Cache) Get(key string) (sdk.Artifact, bool, error) {
	if c.Refit {
		return sdk.Artifact{}, false, nil
	}
	p := c.path(key)
	b, err := atomicfile.ReadRegular(p, atomicfile.AnySize)
	if errors.Is(err, fs.ErrNotExist) {
		return sdk.Artifact{}, false, nil
	}
	var a sdk.Artifact
	if err == nil {
		var f *safetensors.File
		if f, err = safetensors.Decode(b, p); err == nil {
			a, err = Decode(f, p)
		}
	}
	if err != nil {
		aside, rerr := setAside(p)
		if rerr != nil {
			return sdk.Artifact{}, false, fmt.Errorf("cache entry %s is corrupt (%v), and could not be set aside: %w", p, err, rerr)
		}
		return sdk.Artifact{}, false, fmt.Errorf("cache entry %s is corrupt (%v): set aside as %s", p, err, filepath.Base(aside))
	}
	return a, true, nil
}

// setAside renames a corrupt entry to p.corrupt, or p.corrupt-N if that
// exists, and returns the new path.
func setAside(p string) (string, error) {
	for i := 1; ; i++ {
		q := p + ".corrupt"
		if i > 1 {
			q = fmt.Sprintf("%s.corrupt-%d", p, i)
		}
		if _, err := os.Lstat(q); errors.Is(err, fs.ErrNotExist) {
			return q, os.Rename(p, q)
		}
		if i > 1000 {
			return "", fmt.Errorf("%s: a thousand corrupt entries set aside already", p)
		}
	}
}

// Put stores a under key (atomically), with its checksum. An artifact
// with a non-finite value is refused.
func (c Cache) Put(key string, a sdk.Artifact) error {
	if err := finite(a); err != nil {
		return fmt.Errorf("cache entry %s not stored: %w", c.path(key), err)
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "posteriors"), 0o777); err != nil {
		return err
	}
	ts, meta, err := Encode(a)
	if err != nil {
		return err
	}
	return safetensors.WriteFile(c.path(key), ts, meta)
}

// finite reports the first non-finite value of a's tensors, in name order.
func finite(a sdk.Artifact) error {
	for _, n := range slices.Sorted(maps.Keys(a.Tensors)) {
		for j, v := range a.Tensors[n] {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("tensor %q value %d is %v (want finite values)", n, j, v)
			}
		}
	}
	return nil
}

// Checksum is the SHA-256 of an artifact as the cache stores it: its
// architecture, every metadata entry and every tensor (name, length and
// float32 bits, little-endian), in sorted order, each length-prefixed.
func Checksum(a sdk.Artifact) (string, error) {
	arch, err := json.Marshal(a.Arch)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field(arch)
	for _, k := range slices.Sorted(maps.Keys(a.Meta)) {
		field([]byte(k))
		field([]byte(a.Meta[k]))
	}
	buf := make([]byte, 0, 4096)
	for _, n := range slices.Sorted(maps.Keys(a.Tensors)) {
		field([]byte(n))
		t := a.Tensors[n]
		var l [8]byte
		binary.LittleEndian.PutUint64(l[:], uint64(len(t)))
		h.Write(l[:])
		for i := 0; i < len(t); {
			buf = buf[:0]
			for ; i < len(t) && len(buf) < cap(buf); i++ {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(t[i]))
			}
			h.Write(buf)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Encode turns an artifact into tensors (sorted by name) and metadata: the
// architecture as JSON under "arch", artifact metadata under "meta.<key>".
func Encode(a sdk.Artifact) ([]safetensors.Tensor, map[string]string, error) {
	arch, err := json.Marshal(a.Arch)
	if err != nil {
		return nil, nil, err
	}
	sum, err := Checksum(a)
	if err != nil {
		return nil, nil, err
	}
	meta := map[string]string{"arch": string(arch), "format": format, "sha256": sum}
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

// Decode is the inverse of Encode; name is used in errors. It checks the
// checksum and that every value is finite.
func Decode(f *safetensors.File, name string) (sdk.Artifact, error) {
	if f.Meta["format"] != format {
		return sdk.Artifact{}, fmt.Errorf("%s: not a uaxai artifact of this version (metadata format = %q, want %s)", name, f.Meta["format"], format)
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
	sum, err := Checksum(a)
	if err != nil {
		return sdk.Artifact{}, fmt.Errorf("%s: %w", name, err)
	}
	if want := f.Meta["sha256"]; sum != want {
		return sdk.Artifact{}, fmt.Errorf("%s: checksum mismatch: the contents hash to %s, the entry says %q", name, sum, want)
	}
	if err := finite(a); err != nil {
		return sdk.Artifact{}, fmt.Errorf("%s: %w", name, err)
	}
	return a, nil
}
