package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLimitRefusesBeforeReading: a sparse file one byte over the bound
// (it costs no disk) is refused by OpenRegular itself, which returns no
// file, so nothing of it can have been read; the error names the path,
// its size, the bound, the kind of file and the key that raises it. A
// file of exactly the bound reads back whole.
func TestLimitRefusesBeforeReading(t *testing.T) {
	dir := t.TempDir()
	lim := Limit{Bytes: 1 << 40, What: "a test file", Raise: "--max-test"}
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(lim.Bytes + 1); err != nil {
		t.Skipf("a sparse file of %d bytes: %v", lim.Bytes+1, err)
	}
	f.Close()
	for _, open := range []func() (any, error){
		func() (any, error) { return OpenRegular(big, lim) },
		func() (any, error) { return ReadRegular(big, lim) },
	} {
		got, err := open()
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%v, %v: want ErrTooLarge", got, err)
		}
		if f, ok := got.(*os.File); ok && f != nil {
			t.Errorf("OpenRegular returned a file with its error")
		}
		if b, ok := got.([]byte); ok && b != nil {
			t.Errorf("ReadRegular returned %d bytes with its error", len(b))
		}
		for _, w := range []string{big, fmt.Sprintf("%d bytes, more than the %d accepted for a test file", lim.Bytes+1, lim.Bytes), "raise it with --max-test", "accepted: a regular file of at most"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: want it to say %q", err, w)
			}
		}
	}

	exact := filepath.Join(dir, "exact")
	if err := os.WriteFile(exact, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(exact, Limit{Bytes: 5}); err != nil || string(b) != "12345" {
		t.Errorf("a file of exactly the bound: %q, %v", b, err)
	}
	_, err = ReadRegular(exact, Limit{Bytes: 4})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "5 bytes, more than the 4 accepted for a file") || !strings.Contains(err.Error(), "no setting raises it") {
		t.Errorf("one byte over: %v", err)
	}
}

// TestReadRegularStopsAtTheBound: a file whose size says less than it
// holds (a kernel pseudo-file reports 0 bytes), or that grows while it is
// read, is read no further than the bound and one byte, then refused.
func TestReadRegularStopsAtTheBound(t *testing.T) {
	const p = "/proc/self/status"
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		t.Skipf("%s: %v, %v: want a regular file of size 0 that holds text", p, fi, err)
	}
	all, err := ReadRegular(p, AnySize)
	if err != nil || len(all) < 20 {
		t.Fatalf("%s read whole: %d bytes, %v", p, len(all), err)
	}
	b, err := ReadRegular(p, Limit{Bytes: 10})
	if !errors.Is(err, ErrTooLarge) || b != nil || !strings.Contains(err.Error(), "11 bytes or more (it grew while it was read)") {
		t.Errorf("%s under a bound of 10: %d bytes, %v", p, len(b), err)
	}
}

// TestDevZeroRefused: /dev/zero, which never ends, is refused as a device
// without being opened, whatever the bound.
func TestDevZeroRefused(t *testing.T) {
	for _, lim := range []Limit{AnySize, {Bytes: 1}} {
		returns(t, "/dev/zero", func() {
			b, err := ReadRegular("/dev/zero", lim)
			var pe *fs.PathError
			if !errors.Is(err, ErrNotRegular) || !errors.As(err, &pe) || pe.Path != "/dev/zero" ||
				!strings.Contains(err.Error(), "it is a device; accepted: a regular file") {
				t.Errorf("/dev/zero: %d bytes, %v", len(b), err)
			}
		})
	}
}
