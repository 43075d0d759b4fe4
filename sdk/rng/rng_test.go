package rng

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"testing"
)

// TestSplitMix64Reference: splitmix64(x) is the first output of Vigna's
// reference SplitMix64 generator (prng.di.unimi.it/splitmix64.c) seeded
// with x, so its k-th output is splitmix64(x + (k-1)*gamma). The values are
// the published reference vectors for seeds 0 and 1234567 (the latter as on
// Rosetta Code, "Pseudo-random numbers/Splitmix64").
func TestSplitMix64Reference(t *testing.T) {
	const gamma = 0x9e3779b97f4a7c15
	for _, c := range []struct {
		seed uint64
		want []uint64
	}{
		{0, []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}},
		{1234567, []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423,
			4593380528125082431, 16408922859458223821}},
	} {
		for k, w := range c.want {
			if got := splitmix64(c.seed + uint64(k)*gamma); got != w {
				t.Errorf("seed %d: output %d = %#x, reference %#x", c.seed, k+1, got, w)
			}
		}
	}
}

// TestMixStringIsFNV1a checks the string hash against the standard
// library's FNV-1a (hash/fnv), which shares no code with mixString:
// mixString(h, s) = splitmix64(h ^ splitmix64(fnv1a64(s) ^ len(s))).
func TestMixStringIsFNV1a(t *testing.T) {
	for _, s := range []string{"", "a", "data", "posterior", "explainer", "occlusion", "a\x00b", "ünïcödé", string(make([]byte, 300))} {
		f := fnv.New64a()
		f.Write([]byte(s))
		want64 := binary.BigEndian.Uint64(f.Sum(nil))
		for _, h := range []uint64{0, 1, 0xdeadbeefcafef00d} {
			want := splitmix64(h ^ splitmix64(want64^uint64(len(s))))
			if got := mixString(h, s); got != want {
				t.Errorf("mixString(%#x, %q) = %#x, want %#x (FNV-1a %#x)", h, s, got, want, want64)
			}
		}
	}
}

// TestKeyDistinct: every component of the tuple changes the key, and -1
// ("does not apply") is a value of its own.
func TestKeyDistinct(t *testing.T) {
	seen := map[uint64]string{}
	add := func(name string, k uint64) {
		if prev, ok := seen[k]; ok {
			t.Errorf("Key(%s) = Key(%s) = %#x", name, prev, k)
		}
		seen[k] = name
	}
	for _, seed := range []uint64{0, 1, 2} {
		for _, p := range []string{"", "data", "init"} {
			for _, s := range []string{"", "train", "test"} {
				for _, r := range []int{-1, 0, 1} {
					for _, d := range []int{-1, 0, 1} {
						add(fmt.Sprintf("%d, %q, %q, %d, %d", seed, p, s, r, d), Key(seed, p, s, r, d))
					}
				}
			}
		}
	}
	// Concatenation is not confused: ("ab", "") differs from ("a", "b").
	if Key(1, "ab", "", -1, -1) == Key(1, "a", "b", -1, -1) {
		t.Error(`Key("ab", "") = Key("a", "b")`)
	}
}

// TestStreamsStable is a golden tripwire, not a property: seeds derived by
// Key are recorded in data sets (host/data writes each record's key and
// regenerates it with New(key)), and every recipe's data split, weight
// initialisation and explainer draw goes through Key and New, so the same
// recipe and seed give the same results.json only while these values stay
// put. They were recorded from this implementation; if the test fails, the
// change broke reproducibility of every earlier run and cached posterior —
// find out why rather than update the numbers.
func TestStreamsStable(t *testing.T) {
	for _, c := range []struct {
		seed       uint64
		purpose    string
		split      string
		record     int
		draw       int
		key, first uint64
	}{
		{0, "", "", -1, -1, 0x136bf2c26e8751f7, 0xea33be0331c24d49},
		{1, "data", "train", 0, -1, 0x1a76cc77cbaf81c0, 0xf7e78f09a3bd7761},
		{42, "explainer", "occlusion", 17, 3, 0xa73b0e3988739dea, 0xf3073bd76d457fc6},
		{7, "posterior", "ensemble", -1, 4, 0xf3e3319f34e126fd, 0x1e776e10f103b4ce},
		{1<<63 + 5, "init", "", -1, -1, 0xd13c4cb81ff209ad, 0xc48872ba8102ae17},
	} {
		k := Key(c.seed, c.purpose, c.split, c.record, c.draw)
		if k != c.key {
			t.Errorf("Key(%d, %q, %q, %d, %d) = %#x, recorded %#x", c.seed, c.purpose, c.split, c.record, c.draw, k, c.key)
		}
		if got := New(c.key).Uint64(); got != c.first {
			t.Errorf("New(%#x).Uint64() = %#x, recorded %#x", c.key, got, c.first)
		}
		a, b := For(c.seed, c.purpose, c.split, c.record, c.draw), New(k)
		for i := range 8 {
			if x, y := a.Uint64(), b.Uint64(); x != y {
				t.Fatalf("For and New(Key) differ at draw %d: %#x, %#x", i, x, y)
			}
		}
	}
}
