package rundir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSaveLoad: a payload reads back as saved; a file cut short at any
// byte, or with any one byte changed, is reported as corrupt (never read
// as a payload), and SetAside moves it out of the way.
func TestSaveLoad(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	if _, ok, err := d.Load("u"); ok || err != nil {
		t.Fatalf("missing unit: %v %v", ok, err)
	}
	payload := []byte("the unit's payload, some bytes \x00\x01\x02")
	if err := d.Save("u", payload); err != nil {
		t.Fatal(err)
	}
	got, ok, err := d.Load("u")
	if err != nil || !ok || !bytes.Equal(got, payload) {
		t.Fatalf("Load = %q %v %v", got, ok, err)
	}
	whole, err := os.ReadFile(d.UnitPath("u"))
	if err != nil {
		t.Fatal(err)
	}
	bad := func(b []byte, what string) {
		t.Helper()
		if err := os.WriteFile(d.UnitPath("u"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, ok, err := d.Load("u")
		if ok || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), d.UnitPath("u")) {
			t.Errorf("%s: ok %v, err %v; want ErrCorrupt naming the file", what, ok, err)
		}
	}
	for n := 0; n < len(whole); n++ {
		bad(whole[:n], "cut short")
		c := bytes.Clone(whole)
		c[n] ^= 0x20
		bad(c, "changed")
	}
	// An empty payload is a payload.
	if err := d.Save("empty", nil); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := d.Load("empty"); err != nil || !ok || len(got) != 0 {
		t.Errorf("empty payload: %q %v %v", got, ok, err)
	}
	q, err := d.SetAside("u")
	if err != nil || !strings.HasSuffix(q, "u.unit.corrupt") {
		t.Fatalf("SetAside = %q, %v", q, err)
	}
	if _, ok, err := d.Load("u"); ok || err != nil {
		t.Errorf("after SetAside: %v %v", ok, err)
	}
}

// TestPlanAndStates: a plan is written once and must match after; the
// states follow the unit files and locks.
func TestPlanAndStates(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	if _, err := d.States(); err == nil || !strings.Contains(err.Error(), "plan.json") {
		t.Errorf("States of an empty directory: %v", err)
	}
	p := Plan{Recipe: "r", Fingerprint: "f1", Units: []Unit{{Name: "a", Kind: "fit"}, {Name: "b", Kind: "explain"}, {Name: "c", Kind: "explain", Index: 1}, {Name: "e", Kind: "explain", Index: 2}}}
	if err := d.WritePlan(p); err != nil {
		t.Fatal(err)
	}
	if err := d.WritePlan(p); err != nil {
		t.Errorf("the same plan again: %v", err)
	}
	q := p
	q.Fingerprint = "f2"
	if err := d.WritePlan(q); err == nil || !strings.Contains(err.Error(), "another run") {
		t.Errorf("another run's plan: %v", err)
	}
	q = p
	q.Units = append([]Unit(nil), p.Units...)
	q.Units[1].Records = 7 // a field an older plan lacks: the same units
	if err := d.WritePlan(q); err != nil {
		t.Errorf("the same units with more fields: %v", err)
	}
	q.Units[1].Index = 5
	if err := d.WritePlan(q); err == nil || !strings.Contains(err.Error(), "other units") {
		t.Errorf("another index: %v", err)
	}
	q.Units = q.Units[:1]
	if err := d.WritePlan(q); err == nil || !strings.Contains(err.Error(), "other units") {
		t.Errorf("other units: %v", err)
	}
	if err := d.Save("a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	unlock, err := d.Lock(context.Background(), "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.UnitPath("e"), []byte("uaxai-unit-2\ncut"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A lock held in this process is held for Held too: flock locks
	// belong to open files.
	st, err := d.States()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{Done, Running, Missing, Corrupt}
	for i, s := range st {
		if s.State != want[i] {
			t.Errorf("unit %s: %s, want %s", s.Name, s.State, want[i])
		}
	}
	if st[3].Detail == "" {
		t.Error("a corrupt unit without a detail")
	}
	unlock()
	if st, _ := d.States(); st[1].State != Missing {
		t.Errorf("unit b after unlock: %s", st[1].State)
	}
}

// TestUnitFileHoldsItsName: a unit file copied onto another unit's name
// is corrupt, and the error names the file, the unit it holds and the
// unit its name says; a file of the format before units held their name
// (uaxai-unit-1, whole and with a good checksum) is corrupt too, so that
// it is done again rather than trusted.
func TestUnitFileHoldsItsName(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	if err := d.Save("fit-00", []byte("posterior 0's fit")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(d.UnitPath("fit-00"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.UnitPath("fit-01"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, ok, err := d.Load("fit-01")
	if ok || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("fit-00's file as fit-01: ok %v, err %v; want ErrCorrupt", ok, err)
	}
	for _, s := range []string{d.UnitPath("fit-01"), "holds unit fit-00", "says unit fit-01"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if got, ok, err := d.Load("fit-00"); err != nil || !ok || string(got) != "posterior 0's fit" {
		t.Errorf("the original: %q %v %v", got, ok, err)
	}
	payload := []byte("an old unit")
	sum := sha256.Sum256(payload)
	old := append([]byte("uaxai-unit-1\n"+hex.EncodeToString(sum[:])+"\n"), payload...)
	if err := os.WriteFile(d.UnitPath("old"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := d.Load("old"); ok || !errors.Is(err, ErrCorrupt) {
		t.Errorf("a version 1 unit: ok %v, err %v; want ErrCorrupt", ok, err)
	}
	for _, name := range []string{"", "a/b", "a\nb"} {
		if err := d.Save(name, payload); err == nil {
			t.Errorf("Save(%q) accepted", name)
		}
	}
}

// TestNonRegularUnitFile: a FIFO in a unit file's place (or the plan's)
// is refused at once, not waited on: a unit there is corrupt (so that it
// is set aside and done again), the plan an error naming it; both say
// "not a regular file". A directory there is corrupt too.
func TestNonRegularUnitFile(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(d.Path, "units"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(d.UnitPath("fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Mkdir(d.UnitPath("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(d.planPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, name := range []string{"fifo", "dir"} {
			_, ok, err := d.Load(name)
			if ok || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), d.UnitPath(name)) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("unit %s: ok %v, err %v; want ErrCorrupt naming the file, not a regular file", name, ok, err)
			}
			if st, _, err := d.State(name); err != nil || st != Corrupt {
				t.Errorf("unit %s: state %s, %v; want %s", name, st, err, Corrupt)
			}
		}
		if _, err := d.ReadPlan(); err == nil || !strings.Contains(err.Error(), d.planPath()) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a FIFO plan: %v", err)
		}
		if err := d.WritePlan(Plan{Recipe: "r"}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("WritePlan over a FIFO plan: %v", err)
		}
		if q, err := d.SetAside("fifo"); err != nil || !strings.HasSuffix(q, ".corrupt") {
			t.Errorf("SetAside of the FIFO: %q, %v", q, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("still blocked on a FIFO after a minute")
	}
}
