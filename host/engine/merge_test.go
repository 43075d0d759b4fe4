package engine

import (
	"fmt"
	"strings"
	"testing"
)

// TestAllDone: Merge's check of the units a store holds names the first
// 8 missing units in plan order and counts the rest, and says how to
// finish them; a store that holds every unit passes.
func TestAllDone(t *testing.T) {
	var units []Unit
	for i := range 12 {
		units = append(units, Unit{Name: fmt.Sprintf("u%02d", i)})
	}
	for _, c := range []struct {
		missing int
		want    string
	}{
		{0, ""},
		{1, "1 of 12 units are not done: u11 (finish"},
		{8, "8 of 12 units are not done: u04, u05, u06, u07, u08, u09, u10, u11 (finish"},
		{9, "9 of 12 units are not done: u03, u04, u05, u06, u07, u08, u09, u10 and 1 more (finish"},
		{12, "12 of 12 units are not done: u00, u01, u02, u03, u04, u05, u06, u07 and 4 more (finish them with uaxai run --resume, or the shards that own them)"},
	} {
		s := &memStore{}
		for _, u := range units[:len(units)-c.missing] {
			if err := s.Save(u.Name, nil); err != nil {
				t.Fatal(err)
			}
		}
		err := allDone(units, s)
		if c.want == "" {
			if err != nil {
				t.Errorf("every unit done: %v", err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%d missing: %v, want %q...", c.missing, err, c.want)
		}
	}
}
