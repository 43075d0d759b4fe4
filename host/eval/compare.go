package eval

// Sensitivity measures (Section 5, tab:sensitivity; Corollary cor:input):
// how much an explanation changes when its input or its posterior does.
// Pearson and TopLStability compare two maps; W1 and CoordW1 compare two
// sets of explanation draws as distributions; AlignShift maps the
// explanation of a circularly shifted input back onto the input's grid.

import (
	"fmt"
	"math"
	"slices"
)

// Pearson returns the Pearson correlation of x and y, computed as
// scipy.stats.pearsonr (scipy 1.10):
//
//	xm = x - mean(x),  ym = y - mean(y),
//	r  = sum_n (xm[n] / ||xm||) (ym[n] / ||ym||),  clipped to [-1, 1],
//
// ||.|| the Euclidean norm, with every sum compensated (Neumaier), so
// that r is within a few 1e-16 of the exact value of the formula, as
// scipy's is (numpy's pairwise sums and BLAS dot products cannot be
// matched bit for bit). For two points, r = sign(x1 - x0) sign(y1 - y0),
// as scipy has it. ok is false, and r = 0, when r is undefined: fewer
// than two points, a constant x or y (every value equal to the first, the
// test scipy makes before it returns NaN), a NaN or infinite value, or a
// sum of squares that overflows (deviations beyond ~1e150). Pearson
// panics if the lengths differ. It allocates nothing.
func Pearson(x, y []float64) (r float64, ok bool) {
	if len(x) != len(y) {
		panic(fmt.Sprintf("eval: Pearson: len(x) = %d, len(y) = %d", len(x), len(y)))
	}
	n := len(x)
	if n < 2 || !allFinite(x) || !allFinite(y) || constant(x) || constant(y) {
		return 0, false
	}
	if n == 2 {
		// Neither is constant: x1 != x0 and y1 != y0.
		if (x[1] > x[0]) == (y[1] > y[0]) {
			return 1, true
		}
		return -1, true
	}
	// Compensated (Neumaier) sums: a plain running sum of 640 terms is
	// off by a few 1e-15, numpy's pairwise sums and BLAS by far less.
	var mx, my ksum
	for i := range x {
		mx.add(x[i])
		my.add(y[i])
	}
	xbar, ybar := mx.sum()/float64(n), my.sum()/float64(n)
	var sx, sy ksum
	for i := range x {
		dx, dy := x[i]-xbar, y[i]-ybar
		sx.add(dx * dx)
		sy.add(dy * dy)
	}
	nx, ny := math.Sqrt(sx.sum()), math.Sqrt(sy.sum())
	if !(nx > 0 && nx <= math.MaxFloat64 && ny > 0 && ny <= math.MaxFloat64) {
		// Not constant, yet every deviation from the rounded mean
		// squares to 0 (values within ~1e-162 of each other), or the
		// squares overflow (Inf, or NaN from the compensation term).
		return 0, false
	}
	var dot ksum
	for i := range x {
		dot.add(((x[i] - xbar) / nx) * ((y[i] - ybar) / ny))
	}
	r = dot.sum()
	return max(-1, min(r, 1)), true
}

// ksum is a Neumaier (improved Kahan-Babuska) compensated sum: the
// rounding error of every addition is kept in c, so the error of the sum
// is about one rounding of the result, growing with the number of terms
// only at second order (n eps^2).
type ksum struct{ s, c float64 }

func (k *ksum) add(x float64) {
	t := k.s + x
	if math.Abs(k.s) >= math.Abs(x) {
		k.c += (k.s - t) + x
	} else {
		k.c += (x - t) + k.s
	}
	k.s = t
}

func (k *ksum) sum() float64 { return k.s + k.c }

// constant reports whether every value of x equals x[0].
func constant(x []float64) bool {
	for _, v := range x[1:] {
		if v != x[0] {
			return false
		}
	}
	return true
}

// allFinite reports whether x holds no NaN and no infinity.
func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// W1 returns the 1-Wasserstein distance between the empirical
// distributions of the samples u and v (sizes may differ), as
// scipy.stats.wasserstein_distance(u, v) computes it:
//
//	W1 = integral |U(t) - V(t)| dt
//	   = sum_{k=0}^{m-2} |U(z_k) - V(z_k)| (z_{k+1} - z_k),
//
// z_0 <= ... <= z_{m-1} the pooled sorted values (m = len(u) + len(v)),
// U(t) = #{i : u_i <= t} / len(u) and V likewise the right-continuous
// empirical CDFs. For equal sizes W1 = (1/S) sum_i |u_(i) - v_(i)| over
// the sorted samples. W1 is symmetric, 0 for two permutations of one
// sample, and |c| when v = u + c.
//
// scratch is nil (allocated) or of length at least len(u) + len(v); u and
// v are not changed. A NaN in u or v gives NaN (an infinity, Inf or
// NaN). W1 panics if u or v is
// empty or scratch is too short. O(m log m).
func W1(u, v []float64, scratch []float64) float64 {
	if len(u) == 0 || len(v) == 0 {
		panic(fmt.Sprintf("eval: W1: empty sample (len(u) = %d, len(v) = %d)", len(u), len(v)))
	}
	scratch = workspace(scratch, len(u)+len(v), "W1")
	us, vs := scratch[:len(u)], scratch[len(u):len(u)+len(v)]
	copy(us, u)
	copy(vs, v)
	return w1Sorting(us, vs)
}

// workspace returns scratch[:m], allocating it when scratch is nil.
func workspace(scratch []float64, m int, fn string) []float64 {
	if scratch == nil {
		return make([]float64, m)
	}
	if len(scratch) < m {
		panic(fmt.Sprintf("eval: %s: len(scratch) = %d, want at least %d", fn, len(scratch), m))
	}
	return scratch[:m]
}

// w1Sorting sorts us and vs in place and returns W1 of the two samples,
// NaN if one holds a NaN.
func w1Sorting(us, vs []float64) float64 {
	if !sortNoNaN(us) || !sortNoNaN(vs) {
		return math.NaN()
	}
	return w1Sorted(us, vs)
}

// sortNoNaN sorts x in ascending order and reports true, or reports false
// (x in any order) if x holds a NaN. Short samples (a coordinate's
// draws) take an insertion sort on plain comparisons, several times
// faster there than slices.Sort, whose comparison handles NaN.
func sortNoNaN(x []float64) bool {
	for _, v := range x {
		if v != v {
			return false
		}
	}
	if len(x) > 32 {
		slices.Sort(x)
		return true
	}
	for i := 1; i < len(x); i++ {
		v := x[i]
		j := i
		for ; j > 0 && x[j-1] > v; j-- {
			x[j] = x[j-1]
		}
		x[j] = v
	}
	return true
}

// w1Sorted is W1 of two sorted samples without NaN: a merge of the two,
// accumulating |U - V| times the gap to the next pooled value. At a run
// of equal pooled values the gaps inside the run are 0, and after its
// last member both counts include the whole run, so the term of each gap
// uses U(z_k) and V(z_k) as defined. The CDF difference is kept as the
// integer |i nv - j nu| and divided by nu nv once at the end.
func w1Sorted(us, vs []float64) float64 {
	nu, nv := len(us), len(vs)
	i, j := 0, 0
	z := math.Min(us[0], vs[0]) // the current pooled value
	var d float64
	for i < nu || j < nv {
		takeU := j == nv || (i < nu && us[i] <= vs[j])
		next := vs[min(j, nv-1)]
		if takeU {
			next = us[i]
		}
		// At the first step next = z: a zero gap.
		d += math.Abs(float64(i*nv-j*nu)) * (next - z)
		if takeU {
			i++
		} else {
			j++
		}
		z = next
	}
	return d / (float64(nu) * float64(nv))
}

// CoordW1 returns the coordinatewise Wasserstein distance between two sets
// of explanation draws (members), a[s][n] (S_a members) and b[s][n] (S_b
// members) over the same N coordinates:
//
//	D_coord(a, b) = (1/N) sum_n W1({a_s[n]}_s, {b_s[n]}_s),
//
// W1 as in W1. D_coord is 0 when b is a permutation of the members of a,
// |c| when every b_s = a_s + c, and for S_a = S_b = S it equals
// (1/N) sum_n (1/S) sum_i |a_(i)[n] - b_(i)[n]| (order statistics per
// coordinate). A coordinate with a NaN draw makes the result NaN.
//
// scratch is nil (allocated) or of length at least S_a + S_b. CoordW1
// panics if a or b has no member, N = 0, or the members' lengths differ.
// It allocates nothing when scratch is given: O(N (S_a + S_b) log(S_a + S_b)).
func CoordW1(a, b [][]float64, scratch []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		panic(fmt.Sprintf("eval: CoordW1: no members (len(a) = %d, len(b) = %d)", len(a), len(b)))
	}
	N := len(a[0])
	if N == 0 {
		panic("eval: CoordW1: members of length 0")
	}
	for _, set := range [2][][]float64{a, b} {
		for s, m := range set {
			if len(m) != N {
				panic(fmt.Sprintf("eval: CoordW1: member %d has length %d, want %d", s, len(m), N))
			}
		}
	}
	scratch = workspace(scratch, len(a)+len(b), "CoordW1")
	us, vs := scratch[:len(a)], scratch[len(a):]
	var sum float64
	for n := range N {
		for s, m := range a {
			us[s] = m[n]
		}
		for s, m := range b {
			vs[s] = m[n]
		}
		sum += w1Sorting(us, vs)
	}
	return sum / float64(N)
}

// TopLStability returns the overlap of the top-L sets of two maps of one
// input (say the mean maps of two posteriors, or of an input and its
// perturbation),
//
//	IoU = |T_L(a) ∩ T_L(b)| / |T_L(a) ∪ T_L(b)| = k / (2L - k),  k = |T_L(a) ∩ T_L(b)|,
//
// with T_L and its tie rule as in TopL (lower index first among values
// tied at the boundary). It is 1 for maps with the same top-L set and 0
// for disjoint ones. ok is false, and the value 0, when L = 0 or a map
// holds a NaN. It panics if the lengths differ or L is out of [0, N]. It
// allocates nothing: two O(N) radix selects.
func TopLStability(a, b []float64, L int) (iou float64, ok bool) {
	if len(a) != len(b) {
		panic(fmt.Sprintf("eval: TopLStability: len(a) = %d, len(b) = %d", len(a), len(b)))
	}
	if L < 0 || L > len(a) {
		panic(fmt.Sprintf("eval: TopLStability: L = %d out of [0, %d]", L, len(a)))
	}
	if L == 0 || hasNaN(a) || hasNaN(b) {
		return 0, false
	}
	ka, needA := selectTop(a, L)
	kb, needB := selectTop(b, L)
	k := 0
	for n := range a {
		inA := top(orderKey(a[n]), ka, &needA)
		inB := top(orderKey(b[n]), kb, &needB)
		if inA && inB {
			k++
		}
	}
	return float64(k) / float64(2*L-k), true
}

// top is one step of forTop's index-order scan: whether the entry with
// key k is in the top set whose boundary is (kth, *need), taking one of
// the *need boundary places if it is on the boundary.
func top(k, kth uint64, need *int) bool {
	if k > kth {
		return true
	}
	if k == kth && *need > 0 {
		*need--
		return true
	}
	return false
}

// AlignShift undoes a circular shift by k samples: it sets
//
//	dst[n] = r[(n + k) mod N],  n = 0, ..., N-1,
//
// and returns dst. If x' = roll(x, k), i.e. x'[n] = x[(n - k) mod N]
// (numpy.roll), and r' is the explanation of x', then AlignShift(dst, r',
// k) is r' on the grid of x, comparable with the explanation of x
// coordinate by coordinate (Corollary cor:input's shifted input). k may be
// any integer, negative or beyond N. The map is a permutation of the
// coordinates, so it preserves every l_p distance.
//
// dst is nil (allocated), r itself (rotated in place), or a slice of
// length N that does not overlap r. AlignShift panics if the lengths
// differ. It allocates nothing when dst is given.
func AlignShift(dst, r []float64, k int) []float64 {
	if dst == nil {
		dst = make([]float64, len(r))
	}
	if len(dst) != len(r) {
		panic(fmt.Sprintf("eval: AlignShift: len(dst) = %d, len(r) = %d", len(dst), len(r)))
	}
	N := len(r)
	if N == 0 {
		return dst
	}
	m := (k%N + N) % N // in [0, N) for negative k too
	if &dst[0] == &r[0] {
		// In place: a left rotation by m is three reversals.
		slices.Reverse(dst[:m])
		slices.Reverse(dst[m:])
		slices.Reverse(dst)
		return dst
	}
	copy(dst, r[m:])
	copy(dst[N-m:], r[:m])
	return dst
}
