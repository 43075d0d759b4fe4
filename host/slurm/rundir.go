package slurm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/uaxai/uaxai/host/rundir"
	"github.com/uaxai/uaxai/internal/atomicfile"
)

// Unit kinds, in the order they run.
const (
	KindFit     = "fit"
	KindExplain = "explain"
	KindMerge   = "merge" // the merge job; no units
)

// Kinds are the unit kinds of a plan, in the order they run.
var Kinds = []string{KindFit, KindExplain}

// Plan is DIR/units/plan.json, written by runner.Prepare.
type Plan struct {
	Recipe      string `json:"recipe"`
	Fingerprint string `json:"fingerprint"`
	Units       []Unit `json:"units"`
}

// Unit is one unit of a plan; Index is its position among the units of
// its kind.
type Unit struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Index int    `json:"index"`
}

// Count is the number of units of a kind.
func (p *Plan) Count(kind string) int {
	n := 0
	for _, u := range p.Units {
		if u.Kind == kind {
			n++
		}
	}
	return n
}

// PlanFile is the path of a run directory's plan.
func PlanFile(dir string) string { return filepath.Join(dir, "units", "plan.json") }

// ReadPlan reads and checks DIR/units/plan.json: known kinds, names that
// are file names, and each kind's indices exactly 0..count-1.
func ReadPlan(dir string) (*Plan, error) {
	path := PlanFile(dir)
	b, err := atomicfile.ReadRegular(path, atomicfile.AnySize) // the run directory's own file
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no plan: %s is not a prepared run directory (uaxai run R.toml --run-dir DIR --prepare, or uaxai slurm submit, writes it)", path, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	idx := map[string]map[int]bool{}
	for i, u := range p.Units {
		if u.Kind != KindFit && u.Kind != KindExplain {
			return nil, fmt.Errorf("%s: unit %d (%q): kind %q (accepted: %q, %q)", path, i, u.Name, u.Kind, KindFit, KindExplain)
		}
		if u.Name == "" || strings.ContainsAny(u.Name, "/\x00") || u.Name == "." || u.Name == ".." {
			return nil, fmt.Errorf("%s: unit %d: name %q is not a file name", path, i, u.Name)
		}
		if seen[u.Name] {
			return nil, fmt.Errorf("%s: unit %d: name %q appears twice", path, i, u.Name)
		}
		seen[u.Name] = true
		if idx[u.Kind] == nil {
			idx[u.Kind] = map[int]bool{}
		}
		if idx[u.Kind][u.Index] || u.Index < 0 {
			return nil, fmt.Errorf("%s: unit %d (%q): index %d is negative or taken by another %s unit", path, i, u.Name, u.Index, u.Kind)
		}
		idx[u.Kind][u.Index] = true
	}
	for kind, m := range idx {
		for i := range m {
			if i >= len(m) {
				return nil, fmt.Errorf("%s: the %d %s units have index %d (accepted: 0..%d, each once)", path, len(m), kind, i, len(m)-1)
			}
		}
	}
	return &p, nil
}

// UnitState is what the run directory says of a unit.
type UnitState int

// Unit states.
const (
	Missing UnitState = iota // no output, and no process holds its lock
	Running                  // a process holds its lock
	Done                     // its output file is there
)

func (s UnitState) String() string {
	switch s {
	case Done:
		return "done"
	case Running:
		return "running"
	}
	return "missing"
}

// StateOf reads a unit's state: Done when DIR/units/<name>.unit reads
// back whole (host/rundir checks its checksum), Running when a process
// holds flock(LOCK_EX) on DIR/units/<name>.lock (tested with LOCK_NB and
// released at once), else Missing.
func StateOf(dir, name string) (UnitState, error) {
	st, _, err := rundir.Dir{Path: dir}.State(name)
	if err != nil {
		return Missing, fmt.Errorf("unit %s: %w", name, err)
	}
	switch st {
	case rundir.Done:
		return Done, nil
	case rundir.Running:
		return Running, nil
	}
	// A unit file that does not read back whole (cut short, changed, not
	// a file) is as good as missing: the shard that runs again sets it
	// aside and does the unit again.
	return Missing, nil
}

// ShardStatus is DIR/shards/<kind>-<i>-of-<n>.json, a shard's own record.
type ShardStatus struct {
	Status string   `json:"status"` // running, complete, failed, interrupted
	Host   string   `json:"host"`
	PID    int      `json:"pid"`
	Error  string   `json:"error"`
	Units  []string `json:"units"`
}

// ShardFile is the path of the status file of shard i of n of a kind.
func ShardFile(dir, kind string, i, n int) string {
	return filepath.Join(dir, "shards", fmt.Sprintf("%s-%d-of-%d.json", kind, i, n))
}

// ReadShard reads a shard's status file; nil without error when there is
// none (the shard has not started).
func ReadShard(dir, kind string, i, n int) (*ShardStatus, error) {
	path := ShardFile(dir, kind, i, n)
	b, err := atomicfile.ReadRegular(path, atomicfile.AnySize) // the run directory's own file
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s ShardStatus
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// unitStates are the states of a plan's units, by kind and shard: for
// kind k run in n tasks, task t has the units whose index mod n == t.
type unitStates struct {
	byName map[string]UnitState
	plan   *Plan
}

func readStates(dir string, p *Plan) (*unitStates, error) {
	s := &unitStates{byName: map[string]UnitState{}, plan: p}
	for _, u := range p.Units {
		st, err := StateOf(dir, u.Name)
		if err != nil {
			return nil, err
		}
		s.byName[u.Name] = st
	}
	return s, nil
}

// Counts are numbers of units by state.
type Counts struct {
	Done, Running, Missing int
}

func (c *Counts) add(s UnitState) {
	switch s {
	case Done:
		c.Done++
	case Running:
		c.Running++
	default:
		c.Missing++
	}
}

// Total is the number of units counted.
func (c Counts) Total() int { return c.Done + c.Running + c.Missing }

// task counts the units of task t of n of a kind.
func (s *unitStates) task(kind string, t, n int) Counts {
	var c Counts
	for _, u := range s.plan.Units {
		if u.Kind == kind && u.Index%n == t {
			c.add(s.byName[u.Name])
		}
	}
	return c
}

// kind counts every unit of a kind.
func (s *unitStates) kind(kind string) Counts {
	var c Counts
	for _, u := range s.plan.Units {
		if u.Kind == kind {
			c.add(s.byName[u.Name])
		}
	}
	return c
}

// Merged reports whether DIR/results.json exists: the merge has run.
func Merged(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "results.json"))
	return err == nil && fi.Mode().IsRegular()
}
