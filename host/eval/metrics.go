package eval

import (
	"fmt"
	"math"
	"slices"
)

// Abs sets dst[n] = |r[n]| and returns dst: the nonnegative relevance of a
// signed attribution map. dst may be nil (allocated) or r itself;
// otherwise len(dst) must equal len(r).
func Abs(dst, r []float64) []float64 {
	if dst == nil {
		dst = make([]float64, len(r))
	}
	if len(dst) != len(r) {
		panic(fmt.Sprintf("eval: Abs: len(dst) = %d, len(r) = %d", len(dst), len(r)))
	}
	for n, v := range r {
		dst[n] = math.Abs(v)
	}
	return dst
}

// AbsMaps returns |m_s| for each map of m (new slices) when abs is true,
// else m itself: the maps as a run that scores |R| compares them.
func AbsMaps(m [][]float64, abs bool) [][]float64 {
	if !abs {
		return m
	}
	out := make([][]float64, len(m))
	for s, r := range m {
		out[s] = Abs(nil, r)
	}
	return out
}

// RMA returns the relevance mass accuracy (eq:rma) of the nonnegative map r
// against mask:
//
//	RMA = sum_{n : mask[n]} r[n] / sum_{n=1..N} r[n]  in [0, 1].
//
// ok is false, and the value 0, when RMA is undefined: the mask is empty
// (L = 0, e.g. the normal class), sum r = 0, or the sums are not finite
// (r holds NaN or +Inf). RMA panics if the lengths differ or r holds a
// negative value (a signed map: apply Abs first).
func RMA(r []float64, mask []bool) (rma float64, ok bool) {
	if len(r) != len(mask) {
		panic(fmt.Sprintf("eval: RMA: len(r) = %d, len(mask) = %d", len(r), len(mask)))
	}
	var in, all float64
	l := 0
	for n, v := range r {
		if v < 0 {
			panic(fmt.Sprintf("eval: RMA: r[%d] = %v is negative; apply Abs to a signed map", n, v))
		}
		all += v
		if mask[n] {
			in += v
			l++
		}
	}
	if l == 0 || all == 0 || math.IsNaN(all) || math.IsInf(all, 0) {
		return 0, false
	}
	return min(in/all, 1), true // in <= all exactly; min guards rounding
}

// orderKey maps a non-NaN float64 to a uint64 with the same order:
// x < y iff orderKey(x) < orderKey(y), and -0 and +0 map to one key.
func orderKey(x float64) uint64 {
	if x == 0 {
		x = 0 // -0 -> +0
	}
	b := math.Float64bits(x)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// selectTop finds the boundary of the top-L set of r under the tie rule
// of TopL: the top L are the entries with orderKey > kth, and the first
// need entries (in index order) with orderKey == kth. It is an MSB-first
// radix select, at most 8 passes over r with a 256-bin histogram on the
// stack, and stops early once the boundary bucket is taken whole: O(N), no
// allocation. It requires 1 <= L <= len(r) and no NaN.
func selectTop(r []float64, L int) (kth uint64, need int) {
	need = L
	for shift := 56; shift >= 0; shift -= 8 {
		var hist [256]int
		hi := ^uint64(0) << (shift + 8) // the bits already decided (none when shift = 56)
		for _, v := range r {
			k := orderKey(v)
			if k&hi == kth {
				hist[(k>>shift)&0xff]++
			}
		}
		b := 255
		for ; hist[b] < need; b-- {
			need -= hist[b]
		}
		kth |= uint64(b) << shift
		if hist[b] == need && shift > 0 {
			// The whole bucket is in the top set: the boundary is its
			// smallest key, and every entry equal to it is taken.
			lo, bucket := ^uint64(0), ^uint64(0)<<shift
			for _, v := range r {
				if k := orderKey(v); k&bucket == kth {
					lo = min(lo, k)
				}
			}
			return lo, len(r)
		}
	}
	return kth, need
}

// hasNaN reports whether r holds a NaN.
func hasNaN(r []float64) bool {
	for _, v := range r {
		if v != v {
			return true
		}
	}
	return false
}

// TopL returns the indices of the L largest values of r, T_L(r) of
// eq:topL, ordered by rank.
//
// Tie rule (deterministic): a larger value ranks first; equal values rank
// by index, lower index first, so T_L(r) holds the lowest indices among
// the values tied at the boundary. -0 and +0 are equal. For an all-equal
// map T_L = {0, ..., L-1}.
//
// r may hold any non-NaN values (TopL only uses their order). dst is nil
// (allocated) or of length L. TopL panics if L < 0, L > len(r) or r holds a
// NaN. It costs O(N + L log L): a radix select of the boundary value, then
// a sort of the L selected indices.
func TopL(dst []int, r []float64, L int) []int {
	if L < 0 || L > len(r) {
		panic(fmt.Sprintf("eval: TopL: L = %d out of [0, %d]", L, len(r)))
	}
	if dst == nil {
		dst = make([]int, L)
	}
	if len(dst) != L {
		panic(fmt.Sprintf("eval: TopL: len(dst) = %d, want L = %d", len(dst), L))
	}
	if hasNaN(r) {
		panic("eval: TopL: r holds NaN")
	}
	if L == 0 {
		return dst
	}
	i := 0
	forTop(r, L, func(n int) { dst[i] = n; i++ })
	// dst is in index order; sort by value, descending. The comparison is
	// a total order (index breaks ties), so any sort gives one result.
	slices.SortFunc(dst, func(a, b int) int {
		switch va, vb := r[a], r[b]; {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return a - b // equal, -0 == +0 included
	})
	return dst
}

// IoU returns the binarised intersection over union (eq:iou) of r against
// mask, with the top-L binarisation of eq:topL, L = |mask|:
//
//	IoU = |T_L(r) ∩ I| / |T_L(r) ∪ I| = k / (2L - k),  k = |T_L(r) ∩ I|,
//
// in [0, 1], with the tie rule of TopL (lower index first among equal
// values at the boundary). ok is false, and the value 0, when IoU is
// undefined: the mask is empty (L = 0) or r holds a NaN. IoU uses only the
// order of r, so it takes signed maps as well. It panics if the lengths
// differ. It allocates nothing: O(N) radix select.
func IoU(r []float64, mask []bool) (iou float64, ok bool) {
	if len(r) != len(mask) {
		panic(fmt.Sprintf("eval: IoU: len(r) = %d, len(mask) = %d", len(r), len(mask)))
	}
	L := 0
	for _, m := range mask {
		if m {
			L++
		}
	}
	if L == 0 || hasNaN(r) {
		return 0, false
	}
	k := 0
	forTop(r, L, func(n int) {
		if mask[n] {
			k++
		}
	})
	return float64(k) / float64(2*L-k), true
}

// forTop calls fn(n) for every n in T_L(r), in index order, with the tie
// rule of TopL. r holds no NaN and 1 <= L <= len(r).
func forTop(r []float64, L int, fn func(n int)) {
	kth, need := selectTop(r, L)
	for n, v := range r {
		k := orderKey(v)
		if k > kth || (k == kth && need > 0) {
			if k == kth {
				need--
			}
			fn(n)
		}
	}
}

// Skip says why a record is not scored.
type Skip uint8

const (
	// Scored: both metrics are defined.
	Scored Skip = iota
	// EmptyMask: the ground-truth mask is empty (L = 0): the normal class,
	// or a disturbance that never exceeds the threshold eps. RMA and IoU
	// are undefined.
	EmptyMask
	// ZeroMass: sum r = 0, so RMA is undefined (IoU would be the first L
	// indices by the tie rule, a meaningless score).
	ZeroMass
	// NonFinite: the map holds NaN or Inf.
	NonFinite
)

func (s Skip) String() string {
	switch s {
	case Scored:
		return "scored"
	case EmptyMask:
		return "empty mask"
	case ZeroMass:
		return "zero relevance mass"
	case NonFinite:
		return "non-finite map"
	}
	return fmt.Sprintf("Skip(%d)", uint8(s))
}

// Localise scores one nonnegative map: its RMA and IoU, or the reason it
// cannot be scored (then rma = iou = 0). A record is scored only when both
// metrics are defined, so that RMA and IoU average over the same records.
// It panics on mismatched lengths or a negative value (see RMA).
func Localise(r []float64, mask []bool) (rma, iou float64, why Skip) {
	if len(r) != len(mask) {
		panic(fmt.Sprintf("eval: Localise: len(r) = %d, len(mask) = %d", len(r), len(mask)))
	}
	L, sum := 0, 0.0
	for n, v := range r {
		if mask[n] {
			L++
		}
		sum += v
	}
	switch {
	case L == 0:
		return 0, 0, EmptyMask
	case math.IsNaN(sum) || math.IsInf(sum, 0):
		return 0, 0, NonFinite
	case sum == 0:
		// a negative value would be caught by RMA; check it here too.
		for n, v := range r {
			if v < 0 {
				panic(fmt.Sprintf("eval: Localise: r[%d] = %v is negative; apply Abs to a signed map", n, v))
			}
		}
		return 0, 0, ZeroMass
	}
	rma, _ = RMA(r, mask)
	iou, _ = IoU(r, mask)
	return rma, iou, Scored
}
