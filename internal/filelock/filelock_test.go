package filelock

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperHold is a child process that takes the lock named by
// UAXAI_LOCK, says so on stdout, and holds it until it is killed.
func TestHelperHold(t *testing.T) {
	p := os.Getenv("UAXAI_LOCK")
	if p == "" {
		t.Skip("helper process of TestKilledHolder")
	}
	if _, err := Lock(context.Background(), p, nil); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString("held\n")
	time.Sleep(10 * time.Minute) // the test kills it; until then the lock is held for sure
}

// TestKilledHolder: a lock held by another process is seen as held and
// waited for; once that process is killed with SIGKILL, the lock is free.
func TestKilledHolder(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperHold$")
	cmd.Env = append(os.Environ(), "UAXAI_LOCK="+p)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || !strings.HasPrefix(string(buf), "held") {
		t.Fatalf("helper: %q %v", buf, err)
	}
	if held, err := Held(p); err != nil || !held {
		t.Fatalf("Held = %v, %v while another process holds it", held, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	waited := false
	_, err = Lock(ctx, p, func() { waited = true })
	cancel()
	if err == nil || !waited {
		t.Fatalf("Lock while held: err %v, waited %v; want a timeout after waiting", err, waited)
	}
	done := make(chan error, 1)
	go func() {
		unlock, err := Lock(context.Background(), p, nil)
		if err == nil {
			unlock()
		}
		done <- err
	}()
	time.Sleep(150 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the lock of a killed process was not released")
	}
	if held, err := Held(p); err != nil || held {
		t.Fatalf("Held = %v, %v after release", held, err)
	}
}

// TestExclusive: within one process, a second Lock of the same path
// waits for the first to be released (flock locks belong to open files).
func TestExclusive(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	if held, err := Held(p); err != nil || held {
		t.Fatalf("Held of a missing file = %v, %v", held, err)
	}
	unlock, err := Lock(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		u, err := Lock(context.Background(), p, nil)
		if err == nil {
			got <- time.Now()
			u()
		}
	}()
	time.Sleep(250 * time.Millisecond)
	released := time.Now()
	unlock()
	select {
	case at := <-got:
		if at.Before(released) {
			t.Fatal("the second Lock returned while the first was held")
		}
	case <-time.After(time.Minute):
		t.Fatal("the second Lock never returned")
	}
}

// TestLockFileModeFollowsUmask: a lock file (and the directory made for
// it) gets 0666 (0777) less the umask, as a shared directory's other
// files do: under a group's umask 002 the group may open it for writing,
// as every process sharing the lock must.
func TestLockFileModeFollowsUmask(t *testing.T) {
	for _, mask := range []int{0o002, 0o022, 0o077} {
		old := syscall.Umask(mask)
		p := filepath.Join(t.TempDir(), "sub", "x.lock")
		unlock, err := Lock(context.Background(), p, nil)
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
		for _, c := range []struct {
			path string
			want os.FileMode
		}{{p, 0o666 &^ os.FileMode(mask)}, {filepath.Dir(p), 0o777 &^ os.FileMode(mask)}} {
			fi, err := os.Stat(c.path)
			if err != nil || fi.Mode().Perm() != c.want {
				t.Errorf("umask %03o: %s has mode %v, %v; want %v", mask, c.path, fi.Mode().Perm(), err, c.want)
			}
		}
	}
}
