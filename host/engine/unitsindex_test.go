package engine

import (
	"context"
	"fmt"
	"testing"
)

// TestUnitIndexIsPositionInKind: every unit's Index is its position
// among the plan's units of its kind, parted fits' units included, and
// an explain unit's name numbers its batch of records from 0; a pair's
// explain units of a split tile its records.
func TestUnitIndexIsPositionInKind(t *testing.T) {
	p := testPlan(30, 3, 2, 8)
	p.UnitRecords = 16
	f := newFakes(3)
	pf := partedFakes{f, &partedPosterior{fakePosterior: f.post}}
	if err := FitParts(context.Background(), &p, pf); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, u := range Units(p) {
		if u.Index != seen[u.Kind] {
			t.Errorf("unit %s (%s): index %d, want %d (its position among the %s units)", u.Name, u.Kind, u.Index, seen[u.Kind], u.Kind)
		}
		seen[u.Kind]++
		// An explain unit is named by its pair, split and batch of records.
		if want := fmt.Sprintf("explain-%02d-%02d-%02d-%04d", u.Post, u.Exp, u.Split, u.B0/p.UnitRecords); u.Kind == ExplainUnit && u.Name != want {
			t.Errorf("unit %s of records %d..%d: want the name %s", u.Name, u.B0, u.B1, want)
		}
	}
	// A pair's explain units of a split tile its records in batches of at
	// most UnitRecords.
	next := map[[3]int]int{}
	for _, u := range Units(p) {
		if u.Kind != ExplainUnit {
			continue
		}
		k := [3]int{u.Post, u.Exp, u.Split}
		if u.B0 != next[k] || u.B1 <= u.B0 || u.B1-u.B0 > p.UnitRecords {
			t.Errorf("unit %s: records %d..%d, want from %d, at most %d", u.Name, u.B0, u.B1, next[k], p.UnitRecords)
		}
		next[k] = u.B1
	}
	for k, end := range next {
		if n := p.testsOf(p.Posteriors[k[0]])[k[2]].Data.N; end != n {
			t.Errorf("pair %d/%d split %d: units end at record %d of %d", k[0], k[1], k[2], end, n)
		}
	}
	if seen[FitUnit] != 3 || seen[ExplainUnit] == 0 {
		t.Errorf("units by kind %v; want 3 fit units (the parts) and explain units", seen)
	}
}
