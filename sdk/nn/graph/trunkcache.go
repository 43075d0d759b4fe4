package graph

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
	"sync"
)

// TrunkCache keeps the pooled vectors of perturbed copies of inputs
// (WindowProbsCached), so that another network with the same trunk
// (Net.TrunkDigest: the same ops and parameter bits up to the global max
// pool) reuses them and runs only its head. The draws of MC dropout are
// such networks: they differ only after the pool.
//
// An entry is found by the trunk's digest, the input's bits, the window
// starts, the width and the baseline (a constant's bits, or every value
// of a baseline signal), all compared in full. A hit returns the very
// bytes a miss computes and stores. The least recently used entries are
// dropped beyond the size limit. It is safe for concurrent use.
type TrunkCache struct {
	mu           sync.Mutex
	limit, used  int64
	lru          list.List // of *trunkEntry, most recent first
	index        map[uint64][]*list.Element
	hits, misses int64
}

// trunkKey is what an entry is found by.
type trunkKey struct {
	digest   [sha256.Size]byte
	x, z     []float32 // z: the baseline signal, nil for a constant
	starts   []int
	width    int
	baseline uint32 // the constant's bits (0 with a signal)
}

type trunkEntry struct {
	key    trunkKey
	hash   uint64
	pooled []float32
	size   int64
}

// NewTrunkCache returns a cache that holds up to limit bytes of entries
// (an entry of the paper's network with 581 windows takes about 44 KB).
func NewTrunkCache(limit int64) *TrunkCache {
	return &TrunkCache{limit: limit, index: map[uint64][]*list.Element{}}
}

// Stats returns the number of lookups that hit and missed.
func (c *TrunkCache) Stats() (hits, misses int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// hash is FNV-1a over the key's 32- and 64-bit words (a word at a time,
// not a byte: the input's bits are hashed on every lookup); equal keys
// have equal hashes, and equal checks the rest.
func (k *trunkKey) hash() uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(v uint64) { h = (h ^ v) * prime }
	for i := 0; i < len(k.digest); i += 8 {
		mix(binary.LittleEndian.Uint64(k.digest[i:]))
	}
	for _, s := range [][]float32{k.x, k.z} {
		mix(uint64(len(s)))
		for _, v := range s {
			h = (h ^ uint64(math.Float32bits(v))) * prime
		}
	}
	for _, s := range k.starts {
		mix(uint64(s))
	}
	mix(uint64(k.width)<<32 | uint64(k.baseline))
	return h
}

func (k *trunkKey) equal(o *trunkKey) bool {
	return k.digest == o.digest && k.width == o.width && k.baseline == o.baseline && (k.z == nil) == (o.z == nil) &&
		slices.Equal(k.starts, o.starts) && sameBits(k.x, o.x) && sameBits(k.z, o.z)
}

// sameBits reports whether a and b have the same length and bits.
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i, v := range a {
		if math.Float32bits(v) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// get copies the pooled vectors of the entry of k into dst, if there is
// one.
func (c *TrunkCache) get(dst []float32, k trunkKey) bool {
	h := k.hash()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, el := range c.index[h] {
		e := el.Value.(*trunkEntry)
		if e.key.equal(&k) && len(e.pooled) == len(dst) {
			copy(dst, e.pooled)
			c.lru.MoveToFront(el)
			c.hits++
			return true
		}
	}
	c.misses++
	return false
}

// put stores a copy of pooled under k, unless an entry of k is there
// already, and drops least recently used entries beyond the limit.
func (c *TrunkCache) put(pooled []float32, k trunkKey) {
	k.x, k.z, k.starts = slices.Clone(k.x), slices.Clone(k.z), slices.Clone(k.starts)
	e := &trunkEntry{key: k, hash: k.hash(), pooled: slices.Clone(pooled)}
	e.size = int64(4*len(k.x)+4*len(k.z)+8*len(k.starts)+4*len(pooled)) + 160
	if e.size > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, el := range c.index[e.hash] {
		if el.Value.(*trunkEntry).key.equal(&k) {
			return // another goroutine stored it meanwhile
		}
	}
	c.index[e.hash] = append(c.index[e.hash], c.lru.PushFront(e))
	c.used += e.size
	for c.used > c.limit {
		el := c.lru.Back()
		old := el.Value.(*trunkEntry)
		c.lru.Remove(el)
		c.used -= old.size
		b := c.index[old.hash]
		i := slices.Index(b, el)
		b = slices.Delete(b, i, i+1)
		if len(b) == 0 {
			delete(c.index, old.hash)
		} else {
			c.index[old.hash] = b
		}
	}
}
