package graph

import (
	"slices"
	"testing"
)

// TestWindowCutsAllocatesOnce: windowCuts makes its copies and one
// backing array for all their boundaries (two windows' boundaries at
// most a window), whatever the number of windows; the copies' boundaries
// are a window's start and end inside (0, T), each in its own window.
func TestWindowCutsAllocatesOnce(t *testing.T) {
	n := randomNet(t, trunkSpecs()[1], 1)
	T := n.InShape().T
	for _, width := range []int{1, 5, T - 1} {
		var starts []int
		for s := 0; s+width <= T; s++ {
			starts = append(starts, s)
		}
		var cps []cutCopy
		if a := testing.AllocsPerRun(5, func() { cps = n.windowCuts(starts, width) }); a != 2 {
			t.Errorf("width %d, %d windows: %v allocations, want 2 (the copies and their boundaries)", width, len(starts), a)
		}
		for j, s := range starts {
			var want []int
			if s > 0 {
				want = append(want, s)
			}
			if s+width < T {
				want = append(want, s+width)
			}
			if !slices.Equal(cps[j].bnd, want) || cps[j].firstU != (s == 0) || cap(cps[j].bnd) != len(want) {
				t.Errorf("width %d, window at %d: %+v (capacity %d), want boundaries %v", width, s, cps[j], cap(cps[j].bnd), want)
			}
		}
	}
}
