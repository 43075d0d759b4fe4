package rundir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/internal/filelock"
)

// magic starts every unit file. The SHA-256 (hex) of the rest of the file
// follows on its own line, then the unit's name on its own line, then the
// payload. The name is the unit's identity as far as the run directory
// knows it: Load compares it with the name the file is read under, so a
// file copied or renamed onto another unit's name is corrupt, not that
// unit's output. Version 1 files (which held no name) are corrupt too, so
// that they are done again rather than trusted.
const magic = "uaxai-unit-2\n"

// ErrCorrupt marks a unit file that does not read back whole: cut short
// by a crash, changed, another unit's file under this unit's name, or not
// a regular file at all.
var ErrCorrupt = errors.New("corrupt unit file")

// Dir is a run directory.
type Dir struct{ Path string }

// UnitPath is the file of a finished unit.
func (d Dir) UnitPath(name string) string { return filepath.Join(d.Path, "units", name+".unit") }

// LockPath is the lock file of a unit.
func (d Dir) LockPath(name string) string { return filepath.Join(d.Path, "units", name+".lock") }

// Save writes a unit's payload atomically, with its name and checksum.
func (d Dir) Save(name string, payload []byte) error {
	if name == "" || strings.ContainsAny(name, "\n/") {
		return fmt.Errorf("unit %q: a unit name is one line without a slash", name)
	}
	if err := os.MkdirAll(filepath.Join(d.Path, "units"), 0o755); err != nil {
		return fmt.Errorf("unit %s: %w", name, err)
	}
	body := make([]byte, 0, len(name)+1+len(payload))
	body = append(append(append(body, name...), '\n'), payload...)
	sum := sha256.Sum256(body)
	b := make([]byte, 0, len(magic)+65+len(body))
	b = append(b, magic...)
	b = append(b, hex.EncodeToString(sum[:])...)
	b = append(b, '\n')
	b = append(b, body...)
	if err := atomicfile.WriteFile(d.UnitPath(name), b); err != nil {
		return fmt.Errorf("unit %s: %w", name, err)
	}
	return nil
}

// Load returns a unit's payload: false when the unit has no file; an
// error wrapping ErrCorrupt, naming the file and what is wrong, when the
// file does not read back whole, holds another unit, or is not a regular
// file (a FIFO there is refused without blocking).
func (d Dir) Load(name string) ([]byte, bool, error) {
	p := d.UnitPath(name)
	b, err := atomicfile.ReadRegular(p, atomicfile.AnySize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if errors.Is(err, atomicfile.ErrNotRegular) {
		return nil, false, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err != nil {
		return nil, false, fmt.Errorf("unit %s: %w", name, err)
	}
	held, payload, err := verify(b)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w: %v", p, ErrCorrupt, err)
	}
	if held != name {
		return nil, false, fmt.Errorf("%s: %w: it holds unit %s, its file name says unit %s (a unit file copied or renamed onto another's name)", p, ErrCorrupt, held, name)
	}
	return payload, true, nil
}

// verify checks a unit file's header and checksum and returns the name
// of the unit it holds and its payload.
func verify(b []byte) (string, []byte, error) {
	if !bytes.HasPrefix(b, []byte(magic)) {
		return "", nil, fmt.Errorf("%d bytes without the header %q (a file cut short, or of an older uaxai)", len(b), magic[:len(magic)-1])
	}
	rest := b[len(magic):]
	if len(rest) < 65 || rest[64] != '\n' {
		return "", nil, fmt.Errorf("cut short in its header (%d bytes)", len(b))
	}
	want := string(rest[:64])
	body := rest[65:]
	sum := sha256.Sum256(body)
	if got := hex.EncodeToString(sum[:]); got != want {
		return "", nil, fmt.Errorf("checksum mismatch: %d bytes hash to %s, the header says %s (a file cut short or changed)", len(body), got[:12], want[:min(12, len(want))])
	}
	name, payload, ok := bytes.Cut(body, []byte{'\n'})
	if !ok {
		return "", nil, fmt.Errorf("no unit name after its checksum (%d bytes)", len(body))
	}
	return string(name), payload, nil
}

// Has reports whether a unit has a file (whole or not), without reading it.
func (d Dir) Has(name string) bool {
	_, err := os.Stat(d.UnitPath(name))
	return err == nil
}

// SetAside renames a corrupt unit file to <name>.unit.corrupt (replacing
// an older one), so that the unit is done again and the file can still be
// inspected. It returns the new path.
func (d Dir) SetAside(name string) (string, error) {
	p := d.UnitPath(name)
	q := p + ".corrupt"
	if err := os.Rename(p, q); err != nil {
		return "", fmt.Errorf("unit %s: setting aside: %w", name, err)
	}
	return q, nil
}

// Lock takes the lock of a unit, waiting while another process holds it
// (onWait is called once if it does).
func (d Dir) Lock(ctx context.Context, name string, onWait func()) (func(), error) {
	return filelock.Lock(ctx, d.LockPath(name), onWait)
}

// Unit is one entry of plan.json.
type Unit struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`  // "fit" or "explain"
	Index int    `json:"index"` // position among the units of its kind
	// Posterior is the label of the unit's posterior, Records an explain
	// unit's number of records: for reports and cost estimates.
	Posterior string `json:"posterior,omitempty"`
	Records   int    `json:"records,omitempty"`
}

// Plan is units/plan.json: the recipe's name, the fingerprint that every
// unit file of the run carries, and the units in order.
type Plan struct {
	Recipe      string `json:"recipe"`
	Fingerprint string `json:"fingerprint"`
	UnitRecords int    `json:"unit_records"` // records of an explain unit
	Units       []Unit `json:"units"`
}

func (d Dir) planPath() string { return filepath.Join(d.Path, "units", "plan.json") }

// WritePlan writes units/plan.json. An existing plan must be the same
// (the same fingerprint and units): a run directory holds one run.
func (d Dir) WritePlan(p Plan) error {
	b, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	old, err := atomicfile.ReadRegular(d.planPath(), atomicfile.AnySize)
	if err == nil {
		if bytes.Equal(old, b) {
			return nil
		}
		var o Plan
		if err := json.Unmarshal(old, &o); err != nil {
			return fmt.Errorf("run directory %s: %s: %w", d.Path, d.planPath(), err)
		}
		if o.Fingerprint != p.Fingerprint {
			return fmt.Errorf("run directory %s holds another run (recipe %s, fingerprint %.12s; this one is %s, %.12s): accepted: the same recipe, or another --run-dir", d.Path, o.Recipe, o.Fingerprint, p.Recipe, p.Fingerprint)
		}
		if !sameUnits(o.Units, p.Units) {
			return fmt.Errorf("run directory %s: %s lists other units than this run's (another unit size, or another uaxai version): use another --run-dir", d.Path, d.planPath())
		}
		return nil // the same units; the plan there may lack later fields
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(d.planPath()), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(d.planPath(), b)
}

// sameUnits reports whether two plans list the same units (names, kinds
// and indices, in order).
func sameUnits(a, b []Unit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Kind != b[i].Kind || a[i].Index != b[i].Index {
			return false
		}
	}
	return true
}

// ReadPlan reads units/plan.json.
func (d Dir) ReadPlan() (Plan, error) {
	b, err := atomicfile.ReadRegular(d.planPath(), atomicfile.AnySize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Plan{}, fmt.Errorf("%s is not a prepared run directory (no units/plan.json): start it with uaxai run RECIPE --run-dir %s", d.Path, d.Path)
		}
		return Plan{}, err
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return Plan{}, fmt.Errorf("%s: %w", d.planPath(), err)
	}
	return p, nil
}

// State of a unit.
const (
	Done    = "done"    // its file is present and whole
	Running = "running" // a process holds its lock
	Missing = "missing" // neither
	Corrupt = "corrupt" // its file does not read back whole (and nobody is redoing it)
)

// UnitState is a unit and its state.
type UnitState struct {
	Unit
	State  string
	Detail string // why a unit is corrupt
}

// State is a unit's state (Done, Running, Missing or Corrupt) and, for a
// corrupt unit, what is wrong with it. A file that does not read back
// whole while a process holds the unit's lock is being redone: Running.
func (d Dir) State(name string) (state, detail string, err error) {
	held, err := filelock.Held(d.LockPath(name))
	if err != nil {
		return "", "", err
	}
	_, ok, lerr := d.Load(name)
	switch {
	case lerr != nil && !held:
		return Corrupt, lerr.Error(), nil
	case ok:
		return Done, "", nil
	case held:
		return Running, "", nil
	}
	return Missing, "", nil
}

// States reports the state of every unit of the plan.
func (d Dir) States() ([]UnitState, error) {
	p, err := d.ReadPlan()
	if err != nil {
		return nil, err
	}
	out := make([]UnitState, len(p.Units))
	for i, u := range p.Units {
		out[i] = UnitState{Unit: u}
		if out[i].State, out[i].Detail, err = d.State(u.Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}
