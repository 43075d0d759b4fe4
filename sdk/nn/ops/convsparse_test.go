package ops

import (
	"math"
	"slices"
	"testing"
)

// TestSparseSteps: sparseSteps lists exactly the positions of the values
// that are not ±0 (a NaN among them) when there are at most
// len/sparseShare of them and the blocks scanned never hold more than
// their share plus sparseSlack; one value more either way gives up.
func TestSparseSteps(t *testing.T) {
	const n = 40 * sparseBlock
	budget := n / sparseShare
	set := func(pos []int) []float32 {
		dy := make([]float32, n)
		for i := range dy {
			dy[i] = float32(math.Copysign(0, -1)) // -0 is no nonzero
		}
		for k, p := range pos {
			dy[p] = float32(k + 1)
		}
		if len(pos) > 0 {
			dy[pos[0]] = float32(math.NaN())
		}
		return dy
	}
	spread := func(m int) []int { // m positions, evenly over dy
		pos := make([]int, m)
		for k := range pos {
			pos[k] = k * n / m
		}
		return pos
	}
	head := func(m int) []int { // m positions in the first block
		pos := make([]int, m)
		for k := range pos {
			pos[k] = 2 * k
		}
		return pos
	}
	for _, c := range []struct {
		name string
		pos  []int
		ok   bool
	}{
		{"none", nil, true},
		{"the budget, spread", spread(budget), true},
		{"one over the budget, spread", spread(budget + 1), false},
		{"the first block's share and slack", head(1 + sparseSlack), true},
		{"one over the first block's share and slack", head(2 + sparseSlack), false},
	} {
		var sc convScratch
		got, ok := sc.sparseSteps(set(c.pos))
		if ok != c.ok {
			t.Fatalf("%s: ok = %v, want %v", c.name, ok, c.ok)
		}
		if !ok {
			continue
		}
		want := make([]int32, len(c.pos))
		for k, p := range c.pos {
			want[k] = int32(p)
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%s: steps %v, want %v", c.name, got, want)
		}
	}
}
