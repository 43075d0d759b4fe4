package recipe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk/rng"
)

// TestReplicates: [replicates] decodes, round-trips through the canonical
// form, enters the hash only when given, and its seeds are the recipe's
// seed for replicate 0 and keyed streams of it after (or the table's).
func TestReplicates(t *testing.T) {
	plain, err := Parse("r.toml", []byte(minimal), "")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Replicates != nil || plain.Replicates.N() != 1 {
		t.Fatalf("no [replicates]: %+v, N %d", plain.Replicates, plain.Replicates.N())
	}
	if c, _ := plain.Canonical(); strings.Contains(string(c), "replicates") {
		t.Errorf("the canonical form of a recipe without [replicates] has it:\n%s", c)
	}
	r, err := Parse("r.toml", []byte(minimal+"\n[replicates]\ncount = 3\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Replicates.N() != 3 {
		t.Fatalf("N %d, want 3", r.Replicates.N())
	}
	checkCanonical(t, r, "")
	if r.Hash() == plain.Hash() {
		t.Error("[replicates] does not change the hash")
	}
	if r.Hash(FitParts...) != plain.Hash(FitParts...) {
		t.Error("[replicates] changes the hash of the fit parts (a replicate's fits are keyed by their own seeds)")
	}
	seen := map[uint64]bool{}
	for i := range 3 {
		want := r.Seed
		if i > 0 {
			want = rng.Key(r.Seed, "replicate", "", i, 0)
		}
		if got := r.Replicates.Seed(r.Seed, i); got != want || seen[got] {
			t.Errorf("replicate %d: seed %d, want %d, distinct from the others", i, got, want)
		}
		seen[want] = true
	}
	given, err := Parse("r.toml", []byte(minimal+"\n[replicates]\ncount = 2\nseeds = [11, 7]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	checkCanonical(t, given, "")
	if a, b := given.Replicates.Seed(given.Seed, 0), given.Replicates.Seed(given.Seed, 1); a != 11 || b != 7 {
		t.Errorf("given seeds: %d, %d; want 11, 7", a, b)
	}
	// The least accepted: one replicate, and a seed of 0.
	one, err := Parse("r.toml", []byte(minimal+"\n[replicates]\ncount = 1\n"), "")
	if err != nil || one.Replicates.N() != 1 || one.Replicates.Seed(one.Seed, 0) != one.Seed {
		t.Errorf("count = 1: %v, %+v", err, one)
	}
	zero, err := Parse("r.toml", []byte(minimal+"\n[replicates]\ncount = 2\nseeds = [0, 3]\n"), "")
	if err != nil || zero.Replicates.Seed(zero.Seed, 0) != 0 || zero.Replicates.Seed(zero.Seed, 1) != 3 {
		t.Errorf("seeds = [0, 3]: %v", err)
	}
	for _, c := range []struct{ text, want string }{
		{"[replicates]\n", `needs count`},
		{"[replicates]\ncount = 0\n", `key "count" in [replicates]: 0 is less than 1`},
		{"[replicates]\ncount = 1001\n", `1001 is above the bound 1000`},
		{"[replicates]\ncount = 2\nseeds = [1]\n", `has 1 entries, count = 2`},
		{"[replicates]\ncount = 2\nseeds = [1, -1]\n", `-1 is not a seed`},
		{"[replicates]\ncount = 2\nseeds = [5, 5]\n", `5 is also the seed of replicate 0`},
		{"[replicates]\ncount = 2\nseeds = 5\n", `want an array of integers`},
		{"[replicates]\ncount = 2\nresample = true\n", `unknown key`},
		{"[replicates]\ncount = 2\n[calibration]\n", `[calibration] cannot be combined with [replicates]`},
		{"[replicates]\ncount = 2\n[paper]\ntables = [\"tab:bnn_results\"]\n", `[paper] cannot be combined with [replicates]`},
	} {
		text := minimal + "\n" + c.text
		_, err := Parse("bad.toml", []byte(text), "")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.toml") {
			t.Errorf("%q: %v; want an error naming the file and %q", c.text, err, c.want)
		}
	}
	// Files are the same test splits in every replicate.
	dir := t.TempDir()
	for _, f := range []string{"waveforms.csv", "labels.csv"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := "name = \"f\"\n[data]\nsource = \"files\"\ntrain = \".\"\ntest = [\".\"]\n" + strings.SplitN(minimal, "[data]", 2)[0][len("name = \"mini\"\n"):]
	_, err = Parse("files.toml", []byte(files+"\n[replicates]\ncount = 2\nresample_splits = true\n"), dir)
	if err == nil || !strings.Contains(err.Error(), `key "resample_splits" in [replicates]: needs [data] source = "pqd"`) {
		t.Errorf("resample_splits with files: %v", err)
	}
	if r, err := Parse("files.toml", []byte(files+"\n[replicates]\ncount = 2\n"), dir); err != nil || r.Replicates.ResampleSplits {
		t.Errorf("files without resample_splits: %v", err)
	}
}
