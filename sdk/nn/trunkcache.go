package nn

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"slices"
	"sync"
)

// TrunkCache keeps the pooled vectors of occluded inputs (WindowPooled)
// so that another model whose trunk, the layers up to and including the
// global max pool, has the same parameters reuses them and runs only the
// layers after the pool. The draws of MC dropout are such models: they
// differ only in the last dense layer's weights.
//
// An entry is found by the trunk's SHA-256 (of its layers and the bits of
// its folded parameters, computed once per model), the input's bits, the
// window starts, the width and the baseline's bits (a constant's, or
// every value of a baseline signal's), all compared in full but the trunk,
// which is compared by its digest. A hit returns the very
// bytes a miss computes and stores, and the layers after the pool run on
// them either way, so a map does not depend on whether the cache hit. The
// least recently used entries are dropped beyond the size limit. It is
// safe for concurrent use.
type TrunkCache struct {
	mu           sync.Mutex
	limit, used  int64
	lru          list.List // of *trunkEntry, most recent first
	index        map[uint64][]*list.Element
	hits, misses int64
}

type trunkEntry struct {
	key      uint64
	trunk    [sha256.Size]byte
	x        []float32
	starts   []int
	width    int
	baseline uint32
	z        []float32 // the baseline signal, nil for a constant baseline
	pooled   []float32 // (P, len(starts)+1): the windows' and x's pooled vectors as columns
	size     int64
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

// trunkDigest is the SHA-256 of the model's input shape, its layers up to
// the global max pool (their JSON, names left out) and the bits of their
// folded parameters.
func (m *Inference) trunkDigest() [sha256.Size]byte {
	if m.planWindows() == nil {
		panic("nn: trunkDigest needs a network with a global max pool after a local stack")
	}
	m.digestOnce.Do(func() {
		net, g := m.net, m.plan.g
		h := sha256.New()
		var b [8]byte
		put := func(v uint64) {
			binary.LittleEndian.PutUint64(b[:], v)
			h.Write(b[:])
		}
		put(uint64(net.in.C))
		put(uint64(net.in.T))
		// Every field of the layers but their names (which do not change
		// what they compute), so that a field added to Layer is in the
		// digest without a line here.
		trunk := make([]Layer, g+1)
		for i, l := range net.arch.Layers[:g+1] {
			l.Name = ""
			trunk[i] = l
		}
		spec, err := json.Marshal(trunk)
		if err != nil {
			panic("nn: trunkDigest: " + err.Error()) // a Layer of plain fields always marshals
		}
		put(uint64(len(spec)))
		h.Write(spec)
		end := 0
		for _, t := range net.layout.Tensors {
			if i, ok := net.tensorLayer(t.Name); ok && i < g {
				end = max(end, t.Offset+t.Size)
			}
		}
		put(uint64(end))
		for _, v := range m.folded[:end] {
			binary.LittleEndian.PutUint32(b[:4], math.Float32bits(v))
			h.Write(b[:4])
		}
		copy(m.digest[:], h.Sum(nil))
	})
	return m.digest
}

// tensorLayer returns the index of the layer a tensor belongs to.
func (n *Net) tensorLayer(name string) (int, bool) {
	for i, l := range n.arch.Layers {
		if l.Name != "" && len(name) > len(l.Name) && name[:len(l.Name)] == l.Name && name[len(l.Name)] == '.' {
			return i, true
		}
	}
	return 0, false
}

func trunkKey(d [sha256.Size]byte, x []float32, starts []int, width int, baseline uint32, z []float32) uint64 {
	h := fnv.New64a()
	h.Write(d[:])
	var b [8]byte
	for _, v := range x {
		binary.LittleEndian.PutUint32(b[:4], math.Float32bits(v))
		h.Write(b[:4])
	}
	for _, v := range z {
		binary.LittleEndian.PutUint32(b[:4], math.Float32bits(v))
		h.Write(b[:4])
	}
	for _, s := range starts {
		binary.LittleEndian.PutUint64(b[:], uint64(s))
		h.Write(b[:])
	}
	binary.LittleEndian.PutUint64(b[:], uint64(width)<<32|uint64(baseline))
	h.Write(b[:])
	return h.Sum64()
}

func (e *trunkEntry) matches(d [sha256.Size]byte, x []float32, starts []int, width int, baseline uint32, z []float32) bool {
	if e.trunk != d || e.width != width || e.baseline != baseline || !slices.Equal(e.starts, starts) || (e.z == nil) != (z == nil) {
		return false
	}
	return sameBits(e.x, x) && sameBits(e.z, z)
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

// get copies the pooled vectors of a matching entry into dst.
func (c *TrunkCache) get(dst []float32, key uint64, d [sha256.Size]byte, x []float32, starts []int, width int, baseline uint32, z []float32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, el := range c.index[key] {
		e := el.Value.(*trunkEntry)
		if e.matches(d, x, starts, width, baseline, z) {
			copy(dst, e.pooled)
			c.lru.MoveToFront(el)
			c.hits++
			return true
		}
	}
	c.misses++
	return false
}

// put stores a copy of pooled, unless an equal entry is there already,
// and drops least recently used entries beyond the limit.
func (c *TrunkCache) put(pooled []float32, key uint64, d [sha256.Size]byte, x []float32, starts []int, width int, baseline uint32, z []float32) {
	e := &trunkEntry{key: key, trunk: d, x: slices.Clone(x), starts: slices.Clone(starts), width: width, baseline: baseline, z: slices.Clone(z), pooled: slices.Clone(pooled)}
	e.size = int64(4*len(e.x)+4*len(e.z)+8*len(e.starts)+4*len(e.pooled)) + 128
	if e.size > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, el := range c.index[key] {
		if el.Value.(*trunkEntry).matches(d, x, starts, width, baseline, z) {
			return // another goroutine stored it meanwhile
		}
	}
	c.index[key] = append(c.index[key], c.lru.PushFront(e))
	c.used += e.size
	for c.used > c.limit {
		el := c.lru.Back()
		old := el.Value.(*trunkEntry)
		c.lru.Remove(el)
		c.used -= old.size
		b := c.index[old.key]
		i := slices.Index(b, el)
		b = slices.Delete(b, i, i+1)
		if len(b) == 0 {
			delete(c.index, old.key)
		} else {
			c.index[old.key] = b
		}
	}
}

// WindowProbsCached is WindowProbs with the pooled vectors of the windows
// taken from c when a model with the same trunk has computed them for the
// same input, windows and baseline, and stored in c otherwise; c == nil
// computes them. It returns p_class(x), the class probability of the
// unperturbed input, by the same layers after the pool (it equals Probs's
// up to float32 rounding). The result is the same bytes whether c hits or
// not. The network must have a global max pool after a local stack
// (PooledLen() > 0).
func (m *Inference) WindowProbsCached(dst, x []float32, starts []int, width int, baseline float32, class int, c *TrunkCache) float32 {
	return m.windowProbsCached(dst, x, starts, width, baseFill{v: baseline}, class, c)
}

// WindowProbsCachedSignal is WindowProbsCached with the occluded samples
// taken from the baseline signal z, as WindowProbsSignal takes them; an
// entry of c serves only the same z (bit for bit). For MC-dropout draws to
// share the pooled vectors, z must be the same for every draw of an input.
func (m *Inference) WindowProbsCachedSignal(dst, x, z []float32, starts []int, width int, class int, c *TrunkCache) float32 {
	if len(z) != m.InputLen() {
		panic("nn: WindowProbsCachedSignal needs a baseline signal of the input's length")
	}
	return m.windowProbsCached(dst, x, starts, width, baseFill{z: z}, class, c)
}

func (m *Inference) windowProbsCached(dst, x []float32, starts []int, width int, f baseFill, class int, c *TrunkCache) float32 {
	if m.planWindows() == nil {
		panic("nn: WindowProbsCached needs a network with a global max pool after a local stack")
	}
	if len(x) != m.InputLen() || len(dst) < len(starts) {
		panic("nn: WindowProbsCached needs one input and a dst per window")
	}
	P, N := m.PooledLen(), len(starts)+1 // the windows', then x's
	cols := make([]float32, P*N)         // (P, N): vector j in column j
	var d [sha256.Size]byte
	var key uint64
	bl := math.Float32bits(f.v)
	if c != nil {
		d = m.trunkDigest()
		key = trunkKey(d, x, starts, width, bl, f.z)
	}
	if c == nil || !c.get(cols, key, d, x, starts, width, bl, f.z) {
		pooled := make([]float32, P*N)
		m.windowPooled(pooled, x, starts, width, f, true)
		for j := 0; j < N; j++ {
			for i := 0; i < P; i++ {
				cols[i*N+j] = pooled[j*P+i]
			}
		}
		if c != nil {
			c.put(cols, key, d, x, starts, width, bl, f.z)
		}
	}
	out := make([]float32, N)
	if m.plan.rows != nil {
		m.headProbsCols(out, cols, class)
	} else {
		pooled := make([]float32, P*N)
		for j := 0; j < N; j++ {
			for i := 0; i < P; i++ {
				pooled[j*P+i] = cols[i*N+j]
			}
		}
		m.HeadProbs(out, pooled, class)
	}
	copy(dst, out[:len(starts)])
	return out[len(starts)]
}
