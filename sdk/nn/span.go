package nn

import (
	"math"
	"math/bits"
	"sync"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// This file computes the global-max-pool features of span-perturbed
// inputs: x with some time spans (every channel) set to a baseline, as
// occlusion's windows and LIME's masked features are. For a network that
// is a local stack (layers 0..L-1, each output position t depending on
// input positions t..t+k-1) followed by a global max pool at layer L, the
// activation of level l (level 0 is the input, level l+1 the output of
// layer l) at position t depends only on the input samples t..t+R_l-1,
// R_l its receptive field. So at the last level a position is
//
//   - pure (the unperturbed activation) when its field misses every span,
//   - constant (the activation of the all-baseline input, the same at
//     every position) when its field lies inside one span,
//   - dirty otherwise: the R-1 positions left of each boundary b between
//     kept and replaced samples, R = R_L.
//
// When every span and every kept gap between two spans is at least R-1
// samples long, the dirty positions of a boundary see only that boundary:
// the input is x on [b-R+1, b) and the baseline on [b, b+R-1) (a falling
// boundary, the start of a span) or the reverse (a rising one, its end).
// Their values depend on b and the direction only, so each boundary's
// maximum per channel is computed once per input x, and for many
// boundaries at a time: the activations at offset d from the boundary
// form a plane of C rows of one value a boundary, and a layer maps the
// planes d..d+k-1 of its input level to the plane d of its output level
// by one call of the row kernels (a conv1d is a 1-tap convolution over
// k*C rows). The global max of a perturbed input is then the maximum of
// its pure ranges (prefix, suffix and range maxima of the unperturbed
// activations), its boundaries' maxima and, if a span holds R samples or
// more, the constant.
//
// Every value is that of the network's own layers at that position, up to
// float32 rounding (the 1-tap form sums a convolution's terms in another
// order), and the maximum of a set of values does not depend on how the
// set is split.

// Span is the half-open range [Lo, Hi) of time positions.
type Span struct{ Lo, Hi int }

// edgePlan is what spanPooled needs of the local stack, built once per
// model.
type edgePlan struct {
	L  int   // the global max pool's layer index = number of local layers
	r  []int // r[l]: receptive field of level l in input samples, r[0] = 1
	k  []int // k[l]: window of layer l (1 for per-position layers)
	wr [][]float32
	pw [][]float32 // conv layer l: weights as (O, k*C, 1), wr[l][o*k*C+j*C+c] = w[o,c,j], and packed
}

// newEdgePlan builds the plan on top of the window plan.
func (m *Inference) newEdgePlan(g int) *edgePlan {
	net := m.net
	e := &edgePlan{L: g, r: make([]int, g+1), k: make([]int, g), wr: make([][]float32, g), pw: make([][]float32, g)}
	e.r[0] = 1
	for l := 0; l < g; l++ {
		ly := net.arch.Layers[l]
		e.k[l] = 1
		if ly.Kind == KindConv1D || ly.Kind == KindMaxPool1D {
			e.k[l] = ly.Kernel
		}
		e.r[l+1] = e.r[l] + e.k[l] - 1
		if ly.Kind != KindConv1D {
			continue
		}
		C, K, O := net.ins[l].C, ly.Kernel, ly.Out
		o := net.offs[l]
		w := m.folded[o.w : o.w+O*C*K]
		wr := make([]float32, O*K*C)
		for oo := 0; oo < O; oo++ {
			for c := 0; c < C; c++ {
				for j := 0; j < K; j++ {
					wr[oo*K*C+j*C+c] = w[(oo*C+c)*K+j]
				}
			}
		}
		e.wr[l] = wr
		e.pw[l] = make([]float32, kern.PackedLen(O, K*C, 1))
		kern.PackConv(e.pw[l], wr, O, K*C, 1)
	}
	return e
}

// R is the receptive field of the last local level.
func (e *edgePlan) R() int { return e.r[e.L] }

// edgeChunk is the number of boundaries whose planes are computed at a
// time (the planes of two levels then stay in the core's cache).
const edgeChunk = 64

// edgeScratch holds the buffers of one spanPooled call.
type edgeScratch struct {
	planes [2][]float32 // plane buffers of two consecutive levels
	pos    []int        // boundary positions of the chunk
	fall   []float32    // per falling boundary position (T+1 of them), C_L maxima
	rise   []float32
	need   []int8 // per position: 1 falling boundary needed, 2 rising, 3 both
	pre    []float32
	suf    []float32
	st     [][]float32 // sparse table of range maxima, built when needed
	zst    [][]float32 // the same, of the all-baseline input's last level
	tmp    []float32   // maxima of one chunk of boundaries
	acc    []float32   // the same, (C, n)
}

// edgePool holds the scratch of spanPooled calls, of any model.
var edgePool = sync.Pool{New: func() any { return &edgeScratch{} }}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// consts returns the activation of every local level (0..L) for the input
// that is baseline everywhere: one value a channel, computed once per
// model and baseline.
func (m *Inference) consts(baseline float32) [][]float32 {
	key := math.Float32bits(baseline)
	m.constMu.Lock()
	defer m.constMu.Unlock()
	if c, ok := m.constAt[key]; ok {
		return c
	}
	net, plan := m.net, m.plan
	x := make([]float32, net.in.Size())
	for i := range x {
		x[i] = baseline
	}
	ws := m.pool.Get().(*Workspace)
	defer m.pool.Put(ws)
	net.forward(ws, m.folded, x, false, nil, plan.g-1)
	c := make([][]float32, plan.g+1)
	c[0] = make([]float32, net.in.C)
	for i := range c[0] {
		c[0][i] = baseline
	}
	for l := 0; l < plan.g; l++ {
		sh := net.shapes[l]
		a := ws.Act(l)
		c[l+1] = make([]float32, sh.C)
		for ch := range sh.C {
			c[l+1][ch] = a[ch*sh.T] // every position holds the same value
		}
	}
	if m.constAt == nil {
		m.constAt = map[uint32][][]float32{}
	}
	m.constAt[key] = c
	return c
}

// level returns the shape of level l (0: the input).
func (m *Inference) level(l int) Shape {
	if l == 0 {
		return m.net.in
	}
	return m.net.shapes[l-1]
}

// planes returns the offsets [lo, hi) from a boundary whose values are
// kept at level l: at the last level its R-1 dirty positions left of the
// boundary, below it those that the next layer's dirty positions read.
func (e *edgePlan) planes(l int) (lo, hi int) {
	if l == e.L {
		return 1 - e.R(), 0
	}
	return 2 - e.r[l] - e.k[l], e.k[l] - 1
}

// edgeMaxima writes, for each boundary position b in pos (sorted, 0 < b <
// T), out[j*C+c] = the maximum over the dirty positions t = b-R+1..b-1
// inside the last level (0 <= t < T_L) of channel c's activation, for a
// falling boundary (x before b, baseline from b on) or a rising one
// (rise). base[l] is level l of the unperturbed input (base[0] = x); the
// replaced side reads cst, the all-baseline constants, or, when zb is not
// nil, zb[l], level l of the all-baseline input (zb[0] = z, the baseline
// signal), at the same position.
func (m *Inference) edgeMaxima(out []float32, base, cst, zb [][]float32, pos []int, rise bool, sc *edgeScratch) {
	net, e := m.net, m.edge
	L := e.L
	n := len(pos)
	contiguous := pos[n-1]-pos[0] == n-1
	// fill writes plane d of level l where it is pure or constant.
	fill := func(dst []float32, l, d int) {
		sh := m.level(l)
		pure := d+e.r[l] <= 0
		if rise {
			pure = d >= 0
		}
		lv := base[l]
		if !pure && zb != nil {
			lv = zb[l]
		}
		for c := 0; c < sh.C; c++ {
			row := dst[c*n : (c+1)*n]
			if !pure && zb == nil {
				v := cst[l][c]
				for j := range row {
					row[j] = v
				}
				continue
			}
			src := lv[c*sh.T : (c+1)*sh.T]
			if t0 := pos[0] + d; contiguous && t0 >= 0 && t0+n <= sh.T {
				copy(row, src[t0:t0+n])
				continue
			}
			for j, b := range pos {
				if t := b + d; t >= 0 && t < sh.T {
					row[j] = src[t]
				} else {
					row[j] = 0 // outside the level: read only by positions outside it
				}
			}
		}
	}
	dirty := func(l, d int) bool { return d < 0 && d+e.r[l] > 0 }
	prev, cur := sc.planes[0], sc.planes[1]
	lo, hi := e.planes(0)
	C0 := m.level(0).C
	for d := lo; d < hi; d++ {
		fill(prev[(d-lo)*C0*n:], 0, d)
	}
	for l := 0; l < L; l++ {
		ly := net.arch.Layers[l]
		is, os := m.level(l), m.level(l+1)
		plo := lo
		lo, hi = e.planes(l + 1)
		o := net.offs[l]
		for d := lo; d < hi; d++ {
			dst := cur[(d-lo)*os.C*n : (d-lo+1)*os.C*n]
			if !dirty(l+1, d) {
				fill(dst, l+1, d)
				continue
			}
			in := prev[(d-plo)*is.C*n:]
			switch ly.Kind {
			case KindConv1D:
				kern.ConvMultiBias(dst, nil, n, in, n, e.wr[l], e.pw[l], m.folded[o.b:o.b+ly.Out], ly.Out, ly.Kernel*is.C, 1, n)
			case KindReLU:
				kern.Relu(dst, in[:os.C*n])
			case KindMaxPool1D:
				copy(dst, in[:os.C*n])
				for j := 1; j < ly.Kernel; j++ {
					maxTo(dst, in[j*is.C*n:(j+1)*is.C*n])
				}
			case KindBatchNorm1D:
				g, bt, rm, rv := m.folded[o.w:], m.folded[o.b:], m.folded[o.rm:], m.folded[o.rv:]
				for c := 0; c < os.C; c++ {
					mu, istd := float32(rm[c]), float32(1/math.Sqrt(float64(rv[c])+BNEps))
					for j := 0; j < n; j++ {
						h := float32(in[c*n+j]-mu) * istd
						dst[c*n+j] = float32(h*g[c]) + bt[c]
					}
				}
			case KindDropout:
				copy(dst, in[:os.C*n])
			}
		}
		prev, cur = cur, prev
	}
	// prev holds level L, planes d in [1-R, 0), every one dirty. The
	// boundaries whose position b+d lies in the level are pos[j0:j1]
	// (pos is sorted).
	sh := m.level(L)
	sc.acc = grow(sc.acc, n*sh.C)
	acc := sc.acc // (C, n): acc[c*n+j]
	for i := range acc {
		acc[i] = float32(math.Inf(-1))
	}
	for d := lo; d < hi; d++ {
		j0, j1 := 0, n
		for j0 < n && pos[j0]+d < 0 {
			j0++
		}
		for j1 > j0 && pos[j1-1]+d >= sh.T {
			j1--
		}
		pl := prev[(d-lo)*sh.C*n:]
		for c := 0; c < sh.C; c++ {
			maxTo(acc[c*n+j0:c*n+j1], pl[c*n+j0:c*n+j1])
		}
	}
	for c := 0; c < sh.C; c++ {
		for j, v := range acc[c*n : (c+1)*n] {
			out[j*sh.C+c] = v
		}
	}
}

// maxTo sets dst[i] = x[i] where x[i] > dst[i], i < len(dst).
func maxTo(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		if v > dst[i] {
			dst[i] = v
		}
	}
}

// planeLen is the length of one plane buffer for n boundaries.
func (m *Inference) planeLen(n int) int {
	e := m.edge
	most := 0
	for l := 0; l <= e.L; l++ {
		lo, hi := e.planes(l)
		most = max(most, (hi-lo)*m.level(l).C*n)
	}
	return most
}

// validSpans reports whether the sorted spans of one perturbed input can
// take the boundary path: each span and each gap between two spans holds
// at least R-1 samples, and the spans are in order inside [0, T).
func validSpans(sp []Span, R, T int) bool {
	for i, s := range sp {
		if s.Lo < 0 || s.Hi > T || s.Hi-s.Lo < R-1 {
			return false
		}
		if i > 0 && s.Lo-sp[i-1].Hi < R-1 {
			return false
		}
	}
	return true
}

// spanPooled writes the global-max-pool output of each perturbed input j,
// x with the samples of spans[ends[j-1]:ends[j]] (ends[-1] = 0) set to the
// baseline f in every channel, to pooled[j*C:(j+1)*C]. Inputs whose spans
// break validSpans take full forward passes.
//
// With a baseline signal (f.z), the last level inside a span of R samples
// or more is no longer one constant but the all-z input's activations
// there, so its maximum is a range maximum of those: positions
// [s.Lo, s.Hi-R+1), whose fields lie inside the span.
func (m *Inference) spanPooled(pooled, x []float32, spans []Span, ends []int, f baseFill) {
	net, e := m.net, m.edge
	L, R := e.L, e.R()
	T := net.in.T
	sh := m.level(L)
	C := sh.C
	ws := m.pool.Get().(*Workspace)
	defer m.pool.Put(ws)
	net.forward(ws, m.folded, x, false, nil, L-1)
	base := make([][]float32, L+1)
	base[0] = x
	for l := 0; l < L; l++ {
		base[l+1] = ws.Act(l)
	}
	var cst, zb [][]float32
	if f.z == nil {
		cst = m.consts(f.v)
	} else {
		zws := m.pool.Get().(*Workspace)
		defer m.pool.Put(zws)
		net.forward(zws, m.folded, f.z, false, nil, L-1)
		zb = make([][]float32, L+1)
		zb[0] = f.z
		for l := 0; l < L; l++ {
			zb[l+1] = zws.Act(l)
		}
	}
	sc := edgePool.Get().(*edgeScratch)
	defer edgePool.Put(sc)
	// Which boundaries the valid inputs need.
	need := sc.need
	if cap(need) < T+1 {
		need = make([]int8, T+1)
	}
	need = need[:T+1]
	clear(need)
	sc.need = need
	valid := func(j int) []Span {
		lo := 0
		if j > 0 {
			lo = ends[j-1]
		}
		sp := spans[lo:ends[j]]
		if !validSpans(sp, R, T) {
			return nil
		}
		return sp
	}
	anyMiddle := false
	for j := range ends {
		sp := valid(j)
		for i, s := range sp {
			if s.Lo > 0 {
				need[s.Lo] |= 1
			}
			if s.Hi < T {
				need[s.Hi] |= 2
			}
			if i > 0 {
				anyMiddle = true
			}
		}
	}
	sc.fall = grow(sc.fall, (T+1)*C)
	sc.rise = grow(sc.rise, (T+1)*C)
	for _, dir := range [2]int8{1, 2} {
		out := sc.fall
		if dir == 2 {
			out = sc.rise
		}
		pos := sc.pos[:0]
		flush := func() {
			if len(pos) == 0 {
				return
			}
			pl := m.planeLen(len(pos))
			sc.planes[0] = grow(sc.planes[0], pl)
			sc.planes[1] = grow(sc.planes[1], pl)
			tmp := grow(sc.tmp, len(pos)*C)
			sc.tmp = tmp
			m.edgeMaxima(tmp, base, cst, zb, pos, dir == 2, sc)
			for j, b := range pos {
				copy(out[b*C:(b+1)*C], tmp[j*C:(j+1)*C])
			}
			pos = pos[:0]
		}
		for b := 1; b < T; b++ {
			if need[b]&dir == 0 {
				continue
			}
			pos = append(pos, b)
			if len(pos) == edgeChunk {
				flush()
			}
		}
		flush()
		sc.pos = pos
	}
	// Pure ranges of the last level: prefix, suffix and, for inputs with
	// several spans, inner ranges.
	TL := sh.T
	last := base[L]
	sc.pre = grow(sc.pre, C*TL)
	sc.suf = grow(sc.suf, C*TL)
	for c := 0; c < C; c++ {
		row := last[c*TL : (c+1)*TL]
		pr, sf := sc.pre[c*TL:(c+1)*TL], sc.suf[c*TL:(c+1)*TL]
		pr[0] = row[0]
		for t := 1; t < TL; t++ {
			pr[t] = pr[t-1]
			if row[t] > pr[t] {
				pr[t] = row[t]
			}
		}
		sf[TL-1] = row[TL-1]
		for t := TL - 2; t >= 0; t-- {
			sf[t] = sf[t+1]
			if row[t] > sf[t] {
				sf[t] = row[t]
			}
		}
	}
	if anyMiddle {
		sc.st = buildSparse(sc.st, last, C, TL, TL)
	}
	if zb != nil {
		// Only the interiors of the spans are asked for.
		most := 1
		for j := range ends {
			for _, s := range valid(j) {
				most = max(most, s.Hi-s.Lo-R+1)
			}
		}
		sc.zst = buildSparse(sc.zst, zb[L], C, TL, most)
	}
	var bad []int
	for j := range ends {
		pv := pooled[j*C : (j+1)*C]
		sp := valid(j)
		lo := 0
		if j > 0 {
			lo = ends[j-1]
		}
		if sp == nil && ends[j] > lo {
			bad = append(bad, j)
			continue
		}
		for c := range pv {
			pv[c] = float32(math.Inf(-1))
		}
		if len(sp) == 0 { // nothing replaced
			for c := range pv {
				pv[c] = sc.suf[c*TL]
			}
			continue
		}
		up := func(v []float32) {
			for c, u := range v {
				if u > pv[c] {
					pv[c] = u
				}
			}
		}
		// prefix [0, s0.Lo-R+1), suffix [sn.Hi, TL)
		if a := sp[0].Lo - R + 1; a > 0 {
			for c := range pv {
				if u := sc.pre[c*TL+a-1]; u > pv[c] {
					pv[c] = u
				}
			}
		}
		if b := sp[len(sp)-1].Hi; b < TL {
			for c := range pv {
				if u := sc.suf[c*TL+b]; u > pv[c] {
					pv[c] = u
				}
			}
		}
		deep := false
		for i, s := range sp {
			if s.Lo > 0 {
				up(sc.fall[s.Lo*C : (s.Lo+1)*C])
			}
			if s.Hi < T {
				up(sc.rise[s.Hi*C : (s.Hi+1)*C])
			}
			if s.Hi-s.Lo >= R {
				deep = true
				if zb != nil {
					for c := range pv {
						if u := rangeMax(sc.zst, c, TL, s.Lo, s.Hi-R+1); u > pv[c] {
							pv[c] = u
						}
					}
				}
			}
			if i > 0 {
				if a, b := sp[i-1].Hi, s.Lo-R+1; b > a {
					for c := range pv {
						if u := rangeMax(sc.st, c, TL, a, b); u > pv[c] {
							pv[c] = u
						}
					}
				}
			}
		}
		if deep && zb == nil {
			up(cst[L])
		}
	}
	if len(bad) > 0 {
		m.pooledPlain(pooled, x, spans, ends, f, bad, ws)
	}
}

// buildSparse builds, in the buffers of st, the sparse table of range
// maxima of the C rows of length T of a: st[q][c*T+t] = max(a[c*T+t ..
// c*T+t+2^q-1]) for 2^q <= min(T, most), and returns it; rangeMax then
// answers ranges of up to most positions.
func buildSparse(st [][]float32, a []float32, C, T, most int) [][]float32 {
	Q := bits.Len(uint(min(T, most))) - 1
	for len(st) <= Q {
		st = append(st, nil)
	}
	st[0] = grow(st[0], C*T)
	copy(st[0], a[:C*T])
	for q := 1; q <= Q; q++ {
		h := 1 << (q - 1)
		st[q] = grow(st[q], C*T)
		prev, cur := st[q-1], st[q]
		for c := 0; c < C; c++ {
			for t := 0; t+2*h <= T; t++ {
				v, u := prev[c*T+t], prev[c*T+t+h]
				if u > v {
					v = u
				}
				cur[c*T+t] = v
			}
		}
	}
	return st
}

// rangeMax is the maximum of row c over [a, b), a < b, by the sparse
// table st of buildSparse.
func rangeMax(st [][]float32, c, T, a, b int) float32 {
	q := bits.Len(uint(b-a)) - 1
	row := st[q]
	v, u := row[c*T+a], row[c*T+b-(1<<q)]
	if u > v {
		v = u
	}
	return v
}

// pooledPlain computes the pooled output of the perturbed inputs idx by
// full forward passes up to the global max pool.
func (m *Inference) pooledPlain(pooled, x []float32, spans []Span, ends []int, f baseFill, idx []int, ws *Workspace) {
	net, plan := m.net, m.plan
	n, T := net.in.Size(), net.in.T
	C := net.shapes[plan.g].C
	buf := make([]float32, inferenceBatch*n)
	for i0 := 0; i0 < len(idx); i0 += inferenceBatch {
		i1 := min(i0+inferenceBatch, len(idx))
		for i := i0; i < i1; i++ {
			j := idx[i]
			row := buf[(i-i0)*n : (i-i0+1)*n]
			copy(row, x)
			lo := 0
			if j > 0 {
				lo = ends[j-1]
			}
			for _, s := range spans[lo:ends[j]] {
				f.set(row, net.in.C, T, s.Lo, s.Hi)
			}
		}
		net.forward(ws, m.folded, buf[:(i1-i0)*n], false, nil, plan.g)
		out := ws.Act(plan.g)
		for i := i0; i < i1; i++ {
			copy(pooled[idx[i]*C:(idx[i]+1)*C], out[(i-i0)*C:(i-i0+1)*C])
		}
	}
}
