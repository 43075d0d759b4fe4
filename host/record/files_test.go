package record

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uaxai/uaxai/internal/atomicfile"
)

// TestCOMTRADECompanionFiles: the .dat and .inf read beside a .cfg pass
// the same refusals as the .cfg: a FIFO in either's place is refused at
// once with an error naming the .cfg, the file and "accepted: a regular
// file" (the .inf, optional, is no longer skipped silently when it
// cannot be read); with a regular .dat and no .inf the recording reads.
func TestCOMTRADECompanionFiles(t *testing.T) {
	const cfg = "S,R,1999\n1,1A,0D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n50\n1\n4000,2\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n1\n"
	const dat = "1,0,5\n2,250,6\n"
	for _, fifo := range []string{"", "rec.dat", "rec.inf"} {
		dir := t.TempDir()
		for name, body := range map[string]string{"rec.cfg": cfg, "rec.dat": dat} {
			if name == fifo {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if fifo != "" {
			if err := syscall.Mkfifo(filepath.Join(dir, fifo), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}
		done := make(chan error, 1)
		go func() {
			rec, err := Read(filepath.Join(dir, "rec.cfg"), Options{})
			if err == nil && (len(rec.Samples) != 2 || rec.Samples[0] != 5 || rec.Samples[1] != 6) {
				err = errors.New("samples read wrong")
			}
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("a FIFO as %s: still blocked after a minute", fifo)
		}
		if fifo == "" {
			if err != nil {
				t.Errorf("a regular .dat and no .inf: %v", err)
			}
			continue
		}
		if !errors.Is(err, atomicfile.ErrNotRegular) {
			t.Errorf("a FIFO as %s: %v, want ErrNotRegular", fifo, err)
			continue
		}
		for _, w := range []string{filepath.Join(dir, "rec.cfg"), filepath.Join(dir, fifo), "it is a FIFO; accepted: a regular file"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("a FIFO as %s: %v\nwant it to say %q", fifo, err, w)
			}
		}
	}
}
