package engine

import (
	"context"
	"fmt"
	"runtime"
)

// This file splits a run into units of work. A unit is a posterior's fit,
// or a block of consecutive records of one test split under one
// (posterior, explainer) pair: their predictions, maps, summaries, scores
// and analysis. A unit's output is a payload that a UnitStore keeps (a
// file of the run directory, host/rundir). RunUnits does the units of one
// shard; Merge reads every unit and builds the Results. Units are cut at
// the same batches as a run in one piece, and every random stream is keyed
// by (seed, purpose, split, record, draw), so the merged results are the
// same bytes for any number of shards, run in any order, on any machines,
// and however often they were interrupted and resumed.

// Unit kinds.
const (
	FitUnit     = "fit"
	ExplainUnit = "explain"
)

// DefaultUnitRecords is the records of an explain unit when
// Plan.UnitRecords is 0.
const DefaultUnitRecords = 256

// Unit is one unit of a plan's work.
type Unit struct {
	Name  string // fit-PP, explain-PP-EE-SS-BBBB
	Kind  string // FitUnit or ExplainUnit
	Index int    // position among the plan's units of its kind
	Post  int    // the posterior (index into Plan.Posteriors)
	Part  int    // fit units of a parted posterior: the part; else -1
	Exp   int    // explain units: the explainer
	Split int    // explain units: the test split
	B0    int    // explain units: records B0..B1-1 of the split
	B1    int
}

// UnitStore keeps the payloads of finished units (host/rundir.Dir).
type UnitStore interface {
	// Save stores a unit's payload atomically.
	Save(name string, payload []byte) error
	// Load returns a unit's payload; false when it has none; an error
	// when what it has does not read back whole.
	Load(name string) ([]byte, bool, error)
	// Has reports whether the unit has a payload, without reading it.
	Has(name string) bool
	// SetAside moves a payload that does not read back whole out of the
	// way, so that the unit is done again, and returns where it went.
	SetAside(name string) (string, error)
	// Lock takes the unit's lock, waiting while another process holds
	// it; onWait is called once if it does.
	Lock(ctx context.Context, name string, onWait func()) (func(), error)
}

// Shard selects units: those of Kind ("" for every kind) whose index
// (among the units of Kind, or in the whole list for "") is I mod N.
type Shard struct {
	I, N int
	Kind string
}

// String is "i/n", with the kind when there is one.
func (s Shard) String() string {
	if s.Kind == "" {
		return fmt.Sprintf("%d/%d", s.I, s.N)
	}
	return fmt.Sprintf("%s %d/%d", s.Kind, s.I, s.N)
}

// Units lists the plan's units in the order they are done: one fit a
// posterior, then for every posterior, explainer and split, blocks of
// UnitRecords records (a multiple of Batch, so that unit boundaries fall
// on batch boundaries).
func Units(p Plan) []Unit {
	p.defaults()
	var out []Unit
	nf := 0
	for pi := range p.Posteriors {
		if k := p.parts(pi); k > 1 {
			for part := range k {
				out = append(out, Unit{Name: partName(pi, part), Kind: FitUnit, Index: nf, Post: pi, Part: part})
				nf++
			}
			continue
		}
		out = append(out, Unit{Name: fitName(pi), Kind: FitUnit, Index: nf, Post: pi, Part: -1})
		nf++
	}
	n := 0
	for pi := range p.Posteriors {
		for ei := range p.Explainers {
			for si, ts := range p.testsOf(p.Posteriors[pi]) {
				for b, b0 := 0, 0; b0 < ts.Data.N; b, b0 = b+1, b0+p.UnitRecords {
					out = append(out, Unit{Name: fmt.Sprintf("explain-%02d-%02d-%02d-%04d", pi, ei, si, b), Kind: ExplainUnit, Index: n,
						Post: pi, Part: -1, Exp: ei, Split: si, B0: b0, B1: min(b0+p.UnitRecords, ts.Data.N)})
					n++
				}
			}
		}
	}
	return out
}

func fitName(pi int) string        { return fmt.Sprintf("fit-%02d", pi) }
func partName(pi, part int) string { return fmt.Sprintf("fit-%02d-%02d", pi, part) }

// parts is the number of parts of posterior pi's fit (1: not parted).
func (p *Plan) parts(pi int) int {
	if pi < len(p.Parts) {
		return max(p.Parts[pi], 1)
	}
	return 1
}

// Select returns the units of the shard.
func (s Shard) Select(units []Unit) ([]Unit, error) {
	if s.N <= 0 {
		s.N = 1
	}
	if s.I < 0 || s.I >= s.N {
		return nil, fmt.Errorf("shard %d/%d: accepted: 0 <= i < n", s.I, s.N)
	}
	if s.Kind != "" && s.Kind != FitUnit && s.Kind != ExplainUnit {
		return nil, fmt.Errorf("unit kind %q (accepted: %s, %s, or all)", s.Kind, FitUnit, ExplainUnit)
	}
	var out []Unit
	for i, u := range units {
		idx := i
		if s.Kind != "" {
			if u.Kind != s.Kind {
				continue
			}
			idx = u.Index
		}
		if idx%s.N == s.I {
			out = append(out, u)
		}
	}
	return out, nil
}

// UnitSize is the records of the plan's explain units: UnitRecords (or
// DefaultUnitRecords) rounded up to a multiple of Batch.
func UnitSize(p Plan) int {
	p.defaults()
	return p.UnitRecords
}

func (p *Plan) defaults() {
	if p.Batch <= 0 {
		p.Batch = 32
	}
	if p.Workers <= 0 {
		p.Workers = runtime.GOMAXPROCS(0)
	}
	if p.UnitRecords <= 0 {
		p.UnitRecords = DefaultUnitRecords
	}
	p.UnitRecords = (p.UnitRecords + p.Batch - 1) / p.Batch * p.Batch
}

// UnitID is what a unit is: everything that its name stands for
// (kind, posterior, part, explainer, split and records). Every payload
// carries the UnitID of the unit that wrote it, and a payload read under
// a unit's name must carry that unit's UnitID: a unit file copied or
// renamed onto another unit's name is not that unit's output.
type UnitID struct {
	Name, Kind             string
	Post, Part, Exp, Split int
	B0, B1                 int
}

// ID is the unit's identity (its position among the plan's units aside,
// which these fields determine).
func (u Unit) ID() UnitID {
	return UnitID{Name: u.Name, Kind: u.Kind, Post: u.Post, Part: u.Part, Exp: u.Exp, Split: u.Split, B0: u.B0, B1: u.B1}
}

// String names the unit and what it is.
func (id UnitID) String() string {
	switch {
	case id.Kind == ExplainUnit:
		return fmt.Sprintf("%s (explain unit: posterior %d, explainer %d, split %d, records %d..%d)", id.Name, id.Post, id.Exp, id.Split, id.B0, id.B1-1)
	case id.Kind == FitUnit && id.Part >= 0:
		return fmt.Sprintf("%s (fit unit: posterior %d, part %d)", id.Name, id.Post, id.Part)
	case id.Kind == FitUnit:
		return fmt.Sprintf("%s (fit unit: posterior %d)", id.Name, id.Post)
	}
	return fmt.Sprintf("%q (kind %q)", id.Name, id.Kind)
}
