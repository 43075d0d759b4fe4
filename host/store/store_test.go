package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

func TestRoundTrip(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	a := sdk.Artifact{Arch: nn.PaperArch(), Tensors: map[string][]float32{"member.1": {1, 2}, "member.0": {3, -4.5}}, Meta: map[string]string{"members": "2"}}
	key, err := Key("x", 1, sdk.Config{"members": int64(2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Get(key); ok || err != nil {
		t.Fatalf("empty cache: ok=%v err=%v", ok, err)
	}
	if err := c.Put(key, a); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Get(key)
	if err != nil || !ok {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	if !reflect.DeepEqual(got, a) {
		t.Errorf("got %+v, want %+v", got, a)
	}
	// Keys depend on every part and on their order.
	k2, _ := Key("x", 1, sdk.Config{"members": int64(3)})
	k3, _ := Key(1, "x", sdk.Config{"members": int64(2)})
	if k2 == key || k3 == key {
		t.Error("different parts give the same key")
	}
}

func TestCorruptEntryIsAnError(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(c.Dir, "posteriors"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.path("k"), []byte("not safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ok, err := c.Get("k")
	if ok || err == nil || !strings.Contains(err.Error(), "k.safetensors") {
		t.Errorf("corrupt entry: ok=%v err=%v; want an error naming the file", ok, err)
	}
}

func testArtifact() sdk.Artifact {
	return sdk.Artifact{Arch: nn.PaperArch(), Tensors: map[string][]float32{"map": {1, 2, 3, 4}, "fisher": {0.5, 0.25}},
		Meta: map[string]string{"scale": "3", "delta": "100"}}
}

// stored puts testArtifact under key and returns the entry's bytes.
func stored(t *testing.T, c Cache, key string) []byte {
	t.Helper()
	if err := c.Put(key, testArtifact()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.path(key))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCorruptEntriesAreSetAside: every way an entry can be damaged is
// detected on read, reported with the entry's path, and the entry is
// renamed aside (never deleted); the next Get misses, so the caller fits
// again, and a second corrupt entry does not overwrite the first.
func TestCorruptEntriesAreSetAside(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	good := stored(t, c, "k")
	f, err := safetensors.Decode(good, "k")
	if err != nil {
		t.Fatal(err)
	}
	// The tensor data follow the header; flip one bit of the last value.
	flip := slices.Clone(good)
	flip[len(flip)-1] ^= 0x01
	// A valid entry whose metadata were edited: "scale" 3 -> 4.
	edited := bytes.Replace(slices.Clone(good), []byte(`"meta.scale":"3"`), []byte(`"meta.scale":"4"`), 1)
	if bytes.Equal(edited, good) {
		t.Fatal("the header has no meta.scale to edit")
	}
	// A NaN whose checksum is right: a Put of old code would store it.
	nan := testArtifact()
	nan.Tensors["map"][2] = float32(math.NaN())
	ts, meta, err := Encode(nan)
	if err != nil {
		t.Fatal(err)
	}
	nanEntry, err := safetensors.Encode(ts, meta)
	if err != nil {
		t.Fatal(err)
	}
	old := maps.Clone(f.Meta)
	old["format"] = "uaxai-artifact-1"
	delete(old, "sha256")
	oldEntry, err := safetensors.Encode(f.Tensors, old)
	if err != nil {
		t.Fatal(err)
	}
	for i, c2 := range []struct {
		name  string
		entry []byte
		want  string
	}{
		{"a flipped bit", flip, "checksum mismatch"},
		{"edited metadata", edited, "checksum mismatch"},
		{"truncated", good[:len(good)-5], "safetensors"},
		{"NaN", nanEntry, `tensor "map" value 2 is NaN`},
		{"older format", oldEntry, `format = "uaxai-artifact-1", want uaxai-artifact-2`},
	} {
		if err := os.WriteFile(c.path("k"), c2.entry, 0o644); err != nil {
			t.Fatal(err)
		}
		aside := c.path("k") + ".corrupt"
		if i > 0 {
			aside = fmt.Sprintf("%s.corrupt-%d", c.path("k"), i+1)
		}
		_, ok, err := c.Get("k")
		if ok || err == nil || !strings.Contains(err.Error(), "cache entry "+c.path("k")+" is corrupt") ||
			!strings.Contains(err.Error(), c2.want) || !strings.HasSuffix(err.Error(), "set aside as "+filepath.Base(aside)) {
			t.Errorf("%s: ok=%v err=%v; want an error naming the entry, %q and %s", c2.name, ok, err, c2.want, filepath.Base(aside))
		}
		if b, err := os.ReadFile(aside); err != nil || !bytes.Equal(b, c2.entry) {
			t.Errorf("%s: the entry was not set aside unchanged as %s: %v", c2.name, aside, err)
		}
		if _, ok, err := c.Get("k"); ok || err != nil {
			t.Errorf("%s: after setting aside: ok=%v err=%v, want a miss", c2.name, ok, err)
		}
	}
	// The good entry reads back.
	if err := os.WriteFile(c.path("k"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	if a, ok, err := c.Get("k"); !ok || err != nil || !reflect.DeepEqual(a, testArtifact()) {
		t.Errorf("good entry: %+v %v %v", a, ok, err)
	}
}

// TestPutRefusesNonFinite: a fit with a NaN or Inf is never stored.
func TestPutRefusesNonFinite(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
		a := testArtifact()
		a.Tensors["fisher"][1] = v
		err := c.Put("k", a)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(`not stored: tensor "fisher" value 1 is %v`, v)) {
			t.Errorf("Put of %v: %v", v, err)
		}
		if _, err := os.Stat(c.path("k")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Put of %v left an entry: %v", v, err)
		}
	}
}

// TestRefit: with Refit, a present entry is a miss and Put replaces it.
func TestRefit(t *testing.T) {
	dir := t.TempDir()
	stored(t, Cache{Dir: dir}, "k")
	r := Cache{Dir: dir, Refit: true}
	if _, ok, err := r.Get("k"); ok || err != nil {
		t.Errorf("Refit Get: ok=%v err=%v, want a miss", ok, err)
	}
	b := testArtifact()
	b.Meta["scale"] = "7"
	if err := r.Put("k", b); err != nil {
		t.Fatal(err)
	}
	if a, ok, err := (Cache{Dir: dir}).Get("k"); !ok || err != nil || a.Meta["scale"] != "7" {
		t.Errorf("after a refit: %+v %v %v, want the new entry", a.Meta, ok, err)
	}
}

// TestChecksum: the checksum changes with every part of an artifact and
// with nothing else.
func TestChecksum(t *testing.T) {
	base, err := Checksum(testArtifact())
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Checksum(testArtifact())
	if again != base || len(base) != 64 {
		t.Fatalf("checksum %q then %q", base, again)
	}
	for name, edit := range map[string]func(*sdk.Artifact){
		"a tensor bit":   func(a *sdk.Artifact) { a.Tensors["map"][0] = math.Nextafter32(1, 2) },
		"negative zero":  func(a *sdk.Artifact) { a.Tensors["fisher"] = []float32{0.5, 0.25, float32(math.Copysign(0, -1))} },
		"a tensor name":  func(a *sdk.Artifact) { a.Tensors["map2"] = a.Tensors["map"]; delete(a.Tensors, "map") },
		"a split tensor": func(a *sdk.Artifact) { a.Tensors["map"] = []float32{1, 2}; a.Tensors["mapx"] = []float32{3, 4} },
		"a meta value":   func(a *sdk.Artifact) { a.Meta["delta"] = "10" },
		"a meta key":     func(a *sdk.Artifact) { a.Meta["deltax"] = a.Meta["delta"]; delete(a.Meta, "delta") },
		"meta moved":     func(a *sdk.Artifact) { a.Meta = map[string]string{"scale3": "", "delta": "100"} },
		"the arch":       func(a *sdk.Artifact) { a.Arch.Name += "x" },
	} {
		a := testArtifact()
		edit(&a)
		if sum, _ := Checksum(a); sum == base {
			t.Errorf("%s: same checksum", name)
		}
	}
}

// TestNonRegularEntry: a FIFO in an entry's place (with no writer, so
// that reading it would block) is refused at once: Get reports it, naming
// it and saying "not a regular file", sets it aside and misses; a
// directory there is treated the same way.
func TestNonRegularEntry(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(c.Dir, "posteriors"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(c.path("fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Mkdir(c.path("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, key := range []string{"fifo", "dir"} {
			_, ok, err := c.Get(key)
			if ok || err == nil || !strings.Contains(err.Error(), c.path(key)) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("entry %s: ok=%v err=%v; want an error naming it, not a regular file", key, ok, err)
			}
			if _, err := os.Lstat(c.path(key) + ".corrupt"); err != nil {
				t.Errorf("entry %s not set aside: %v", key, err)
			}
			if _, ok, err := c.Get(key); ok || err != nil {
				t.Errorf("entry %s after it was set aside: ok=%v err=%v; want a miss", key, ok, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Get still blocked on a FIFO after a minute")
	}
}

// readOnlyDir makes dir and everything in it read-only for the test
// (chmod -R a-w), and writable again when it ends. It skips when the
// process can write there anyway (root ignores modes).
func readOnlyDir(t *testing.T, dir string) {
	t.Helper()
	chmod := func(mask fs.FileMode, set bool) {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := os.Lstat(p)
			if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
				return err
			}
			m := fi.Mode().Perm() &^ mask
			if set {
				m = fi.Mode().Perm() | mask
			}
			return os.Chmod(p, m)
		})
	}
	chmod(0o222, false)
	t.Cleanup(func() { chmod(0o200, true) })
	if unix.Access(dir, unix.W_OK) == nil {
		t.Skip("this process writes a directory of mode a-w (root): the test needs an ordinary user")
	}
}

// TestReadOnlyCache: a populated cache made read-only (chmod -R a-w)
// still serves its entries: Lock, which cannot open the lock file for
// writing, lets an existing entry be read, and Get reads it whole; an
// entry it lacks is an error naming the directory, from Lock, before any
// fit is made that could not be stored; so is Refit.
func TestReadOnlyCache(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	stored(t, c, "k")
	unlock, err := c.Lock(context.Background(), "k", nil) // a lock file, as a writer leaves it
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	stored(t, c, "nolock") // an entry without a lock file
	readOnlyDir(t, c.Dir)
	for _, key := range []string{"k", "nolock"} {
		unlock, err := c.Lock(context.Background(), key, nil)
		if err != nil {
			t.Fatalf("Lock(%s) in a read-only cache holding it: %v", key, err)
		}
		a, ok, err := c.Get(key)
		unlock()
		if err != nil || !ok || !reflect.DeepEqual(a, testArtifact()) {
			t.Errorf("Get(%s) in a read-only cache: ok=%v err=%v", key, ok, err)
		}
	}
	_, err = c.Lock(context.Background(), "missing", nil)
	if err == nil || !strings.Contains(err.Error(), c.Dir) || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), "missing.safetensors") {
		t.Errorf("Lock of an entry a read-only cache lacks: %v; want an error naming the directory and the entry", err)
	}
	refit := Cache{Dir: c.Dir, Refit: true}
	if _, err := refit.Lock(context.Background(), "k", nil); err == nil || !strings.Contains(err.Error(), c.Dir) {
		t.Errorf("Refit in a read-only cache: %v; want an error naming the directory", err)
	}
}
