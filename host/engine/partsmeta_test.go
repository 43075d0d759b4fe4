package engine

import (
	"context"
	"reflect"
	"strconv"
	"testing"
)

// TestMergeJoinsEveryPart: Merge's rows carry the artifact joined from
// every part of a parted fit, not the first part's: each part's own Meta
// key (disjoint, so JoinParts takes their union) is in every row's Fit.
func TestMergeJoinsEveryPart(t *testing.T) {
	p := testPlan(30, 3, 2, 8)
	p.UnitRecords = 16
	p.Fingerprint = "test"
	f := newFakes(3)
	pf := partedFakes{f, &partedPosterior{fakePosterior: f.post, meta: func(k int) map[string]string {
		return map[string]string{"members": "3", "seed." + strconv.Itoa(k): strconv.Itoa(10 + k)}
	}}}
	if err := FitParts(context.Background(), &p, pf); err != nil {
		t.Fatal(err)
	}
	store := &countingStore{}
	for _, kind := range []string{FitUnit, ExplainUnit} {
		if _, _, err := RunUnits(context.Background(), p, pf, nil, store, Shard{N: 1, Kind: kind}, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err := Merge(context.Background(), p, pf, store)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"members": "3", "seed.0": "10", "seed.1": "11", "seed.2": "12"}
	if len(got.Rows) == 0 {
		t.Fatal("no rows")
	}
	for i, r := range got.Rows {
		if !reflect.DeepEqual(r.Fit, want) {
			t.Errorf("row %d: fit %v, want the three parts' Meta joined: %v", i, r.Fit, want)
		}
	}
}
