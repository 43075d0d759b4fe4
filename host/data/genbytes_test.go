package data

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/uaxai/uaxai/internal/memtest"
)

// heldBy is the heap that the value make returns keeps alive: the live
// heap after a collection with it, less the live heap before.
func heldBy(t *testing.T, make func() any) int {
	t.Helper()
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	v := make()
	runtime.GC()
	runtime.ReadMemStats(&b)
	runtime.KeepAlive(v)
	return int(b.HeapAlloc) - int(a.HeapAlloc)
}

// TestGenerateBytesIsHeld: GenerateBytes is the memory the generated
// splits keep alive, measured by the runtime: for both generators, one
// split and the paper's splits, it is at least what they hold and at most
// a quarter more (its allowance for the parameters' maps).
func TestGenerateBytesIsHeld(t *testing.T) {
	for _, gen := range Generators() {
		for _, paper := range []bool{false, true} {
			opt := GenerateOptions{Generator: gen, Config: DefaultConfig(), Seed: 5, PerClass: 40, Paper: paper, Split: "s"}
			if paper {
				opt.Split = ""
				opt.ValFraction, opt.TestSplits, opt.TestPerClass = 0.1, 2, 10
			}
			want, records, ok := GenerateBytes(opt)
			if !ok {
				t.Fatalf("%s paper %v: GenerateBytes not ok", gen.Name(), paper)
			}
			nc := len(gen.Classes())
			if wantRec := 40*nc + 2*10*nc*boolInt(paper); records != wantRec {
				t.Errorf("%s paper %v: %d records, want %d", gen.Name(), paper, records, wantRec)
			}
			held := heldBy(t, func() any {
				if paper {
					ps, err := MakePaperSplitsOf(context.Background(), gen, opt.Config, opt.Seed, opt.PerClass, opt.ValFraction, opt.TestSplits, opt.TestPerClass)
					if err != nil {
						t.Fatal(err)
					}
					return &ps
				}
				s, err := MakeSplitOf(context.Background(), gen, opt.Config, opt.Seed, "s", opt.PerClass, nil)
				if err != nil {
					t.Fatal(err)
				}
				return &s
			})
			t.Logf("%s paper %v: GenerateBytes %d, held %d (%.3f)", gen.Name(), paper, want, held, float64(want)/float64(held))
			if want < held || float64(want) > 1.25*float64(held) {
				t.Errorf("%s paper %v: GenerateBytes = %d, and the splits hold %d (want within [1, 1.25] of it)", gen.Name(), paper, want, held)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestGenerateDirMemoryBound: a request whose records would hold more
// than MaxBytes (the issue's --source pqd-3phase --paper --per-class
// 100000: 40 GiB, and an overflowing one) is refused before anything is
// generated or written, with the bytes and the bound; MaxBytes equal to
// GenerateBytes is accepted and one byte less is not.
func TestGenerateDirMemoryBound(t *testing.T) {
	three, err := GeneratorByName("pqd-3phase")
	if err != nil {
		t.Fatal(err)
	}
	huge := GenerateOptions{Generator: three, Config: DefaultConfig(), Seed: 1, PerClass: 100000, Paper: true, ValFraction: 0.1, TestSplits: 5, TestPerClass: 100}
	over := huge
	over.PerClass, over.TestSplits, over.TestPerClass = 1<<62, 0, 0
	for _, c := range []struct {
		name string
		opt  GenerateOptions
		held string
	}{
		{"3-phase paper", huge, ""},
		{"overflow", over, "more than 2^63 bytes"},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		var got error
		alloc := memtest.Allocated(func() { _, got = GenerateDir(context.Background(), dir, c.opt) })
		var me *MemoryError
		if !errors.As(got, &me) {
			t.Fatalf("%s: %v, want a *MemoryError", c.name, got)
		}
		if c.held == "" {
			// what the records' arrays alone hold, X and D float64, Event
			nc := len(three.Classes())
			recs := 100000*nc + 5*100*nc
			if me.Records != recs || me.Bytes < recs*3*640*17 {
				t.Errorf("%s: %d records, %d bytes; want %d records, at least %d bytes", c.name, me.Records, me.Bytes, recs, recs*3*640*17)
			}
			c.held = fmt.Sprintf("hold %d bytes", me.Bytes)
		}
		bound := strings.Contains(got.Error(), "above the bound of 8589934592 bytes")
		if !bound || !strings.Contains(got.Error(), c.held) {
			t.Errorf("%s: %q, want the bytes held (%q) and the bound", c.name, got, c.held)
		}
		if alloc > 1<<20 {
			t.Errorf("%s: refusing allocated %d bytes", c.name, alloc)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the output directory exists after the refusal (%v)", c.name, err)
		}
	}
	small := GenerateOptions{Generator: three, Config: DefaultConfig(), Seed: 1, PerClass: 2, Format: FormatNPY, Split: "s"}
	need, _, _ := GenerateBytes(small)
	small.MaxBytes = need
	if _, err := GenerateDir(context.Background(), t.TempDir(), small); err != nil {
		t.Fatalf("MaxBytes = GenerateBytes: %v", err)
	}
	small.MaxBytes = need - 1
	var me *MemoryError
	if _, err := GenerateDir(context.Background(), t.TempDir(), small); !errors.As(err, &me) || me.Bytes != need || me.Bound != need-1 {
		t.Fatalf("MaxBytes = GenerateBytes-1: %v, want a *MemoryError of %d bytes, bound %d", err, need, need-1)
	}
}

// TestGenerateBytesEdges: no records hold nothing; the paper's mode adds
// to the records of its splits one Record and one mark a pool record (its
// train and validation slices); a count beyond int or a negative one, or
// an invalid config, is not ok, with -1 for what cannot be counted and
// the error saying so; the bound is checked from one record a class.
func TestGenerateBytesEdges(t *testing.T) {
	cfg := DefaultConfig()
	if b, r, ok := GenerateBytes(GenerateOptions{Config: cfg}); b != 0 || r != 0 || !ok {
		t.Errorf("no records: %d bytes, %d records, %v", b, r, ok)
	}
	one, _, _ := GenerateBytes(GenerateOptions{Config: cfg, PerClass: 10})
	paper, _, _ := GenerateBytes(GenerateOptions{Config: cfg, PerClass: 10, Paper: true})
	if pool := 10 * NumClasses; paper-one != pool*(int(unsafe.Sizeof(Record{}))+1) {
		t.Errorf("paper %d - split %d = %d bytes, want %d records x (a Record + 1)", paper, one, paper-one, pool)
	}
	bad := cfg
	bad.Fs = -1
	for _, c := range []struct {
		name    string
		opt     GenerateOptions
		records int
	}{
		{"invalid config", GenerateOptions{Config: bad, PerClass: 1}, -1},
		{"negative", GenerateOptions{Config: cfg, PerClass: -1}, -1},
		{"negative tests", GenerateOptions{Config: cfg, PerClass: 1, Paper: true, TestSplits: 1, TestPerClass: -1}, -1},
		{"records beyond int", GenerateOptions{Config: cfg, PerClass: 1, Paper: true, TestSplits: 1 << 40, TestPerClass: 1 << 40}, -1},
		{"bytes beyond int", GenerateOptions{Config: cfg, PerClass: 1 << 50}, NumClasses << 50},
		{"paper bytes beyond int", GenerateOptions{Config: cfg, PerClass: 1 << 50, Paper: true}, NumClasses << 50},
	} {
		b, r, ok := GenerateBytes(c.opt)
		if b != -1 || r != c.records || ok {
			t.Errorf("%s: %d bytes, %d records, %v; want -1, %d, false", c.name, b, r, ok, c.records)
		}
	}
	for _, c := range []struct {
		e    MemoryError
		want string
	}{
		{MemoryError{Records: -1, Channels: 1, Samples: 640, Bytes: -1, Bound: 1 << 30}, "data: more than 2^63 records of 1 channel(s) x 640 samples (each a float64 waveform and disturbance, an event mask, its parameters) hold more than 2^63 bytes in memory before they are written, above the bound of 1073741824 bytes (1.0 GiB)"},
		{MemoryError{Records: 7, Channels: 3, Samples: 64, Bytes: 3 << 29, Bound: 1 << 29}, "data: 7 records of 3 channel(s) x 64 samples (each a float64 waveform and disturbance, an event mask, its parameters) hold 1610612736 bytes (1.5 GiB) in memory before they are written, above the bound of 536870912 bytes (0.5 GiB)"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("%+v:\n got %s\nwant %s", c.e, got, c.want)
		}
	}
	need, _, _ := GenerateBytes(GenerateOptions{Config: cfg, PerClass: 1})
	var me *MemoryError
	if err := checkGenerateBytes(PQD{}, GenerateOptions{Config: cfg, PerClass: 1, MaxBytes: need - 1}); !errors.As(err, &me) || me.Records != NumClasses {
		t.Errorf("one record a class, bound %d below its %d bytes: %v", need-1, need, err)
	}
	if err := checkGenerateBytes(PQD{}, GenerateOptions{Config: cfg, PerClass: 0, MaxBytes: 1}); err != nil {
		t.Errorf("no records: %v, want the generator's own error later", err)
	}
}
