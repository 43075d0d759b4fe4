package graph

import (
	"math/rand/v2"
	"testing"
)

// TestTrunkCacheExactLimit: an entry of exactly the limit's size is
// kept (the limit is what the cache may hold), and so are two entries
// that fill it exactly; a third drops the least recently used one.
func TestTrunkCacheExactLimit(t *testing.T) {
	n := randomNet(t, trunkSpecs()[1], 3)
	in := n.InShape()
	rng := rand.New(rand.NewPCG(5, 6))
	starts := []int{0, 2, 4, 6}
	xs := [][]float32{randVec(rng, in.Size()), randVec(rng, in.Size()), randVec(rng, in.Size())}
	// An entry: x, the starts, the pooled vectors of the windows and x,
	// and its bookkeeping (trunkCache.put's accounting).
	one := int64(4*in.Size() + 8*len(starts) + 4*(len(starts)+1)*n.PooledLen() + 160)
	for _, c := range []struct {
		limit   int64
		entries int
	}{{one, 1}, {2 * one, 2}} {
		tc := NewTrunkCache(c.limit)
		look := func(x []float32) bool {
			h0, _ := tc.Stats()
			if _, _, err := n.WindowProbsCached(make([]float32, len(starts)), x, nil, starts, 3, 0, 0, tc); err != nil {
				t.Fatal(err)
			}
			h, _ := tc.Stats()
			return h > h0
		}
		for _, x := range xs[:c.entries] {
			look(x)
		}
		// The most recent first, so that a miss does not evict the others.
		for k := c.entries - 1; k >= 0; k-- {
			if !look(xs[k]) {
				t.Errorf("limit %d (an entry %d): entry %d of %d was not kept", c.limit, one, k, c.entries)
			}
		}
		if c.entries == 2 {
			look(xs[2]) // drops xs[1], the least recently used
			if look(xs[1]) {
				t.Errorf("limit %d: a third entry kept all three", c.limit)
			}
		}
	}
}
