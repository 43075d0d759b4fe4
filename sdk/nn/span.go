package nn

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
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
		e.k[l] = LayerWindow(net.arch.Layers[l])
		e.r[l+1] = e.r[l] + e.k[l] - 1
		if d := net.defs[l]; d.edgePrep != nil {
			d.edgePrep(m, e, l)
		}
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
		is, os := m.level(l), m.level(l+1)
		plo := lo
		lo, hi = e.planes(l + 1)
		for d := lo; d < hi; d++ {
			dst := cur[(d-lo)*os.C*n : (d-lo+1)*os.C*n]
			if !dirty(l+1, d) {
				fill(dst, l+1, d)
				continue
			}
			in := prev[(d-plo)*is.C*n:]
			net.defs[l].plane(m, e, l, dst, in, n)
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

// AllChannels is the channel of a ChannelSpan that covers every input
// channel.
const AllChannels = -1

// ChannelSpan is the half-open range [Lo, Hi) of time positions of input
// channel Ch, or of every channel when Ch is AllChannels.
type ChannelSpan struct{ Ch, Lo, Hi int }

// maxStateChannels is the most input channels whose perturbations the
// boundary path of channelSpanPooled takes (a state is a bit set of the
// replaced channels in a uint64); wider inputs take forward passes.
const maxStateChannels = 64

// edgeCost is the cost of one dirty position of a boundary in forward
// positions, for channelSpanPooled's choice of path.
const edgeCost = 8

// region is a maximal run [lo, next region's lo or T) of time positions
// whose replaced channels are the same: bit c of s set when channel c is
// replaced there.
type region struct {
	lo int
	s  uint64
}

// regions appends to dst the regions of the perturbation spans of an
// input of C channels and T positions (position (c, t) is replaced when a
// span covers it; spans may overlap) and returns it. cnt is scratch of
// C+1 counters.
func regions(dst []region, spans []ChannelSpan, C, T int, cnt []int) []region {
	type event struct{ t, ch, d int }
	ev := make([]event, 0, 2*len(spans))
	for _, s := range spans {
		if s.Lo >= s.Hi {
			continue
		}
		ch := s.Ch
		if ch == AllChannels {
			ch = C
		}
		ev = append(ev, event{s.Lo, ch, 1}, event{s.Hi, ch, -1})
	}
	slices.SortFunc(ev, func(a, b event) int { return a.t - b.t })
	clear(cnt)
	all := uint64(1)<<C - 1
	if C == 64 {
		all = ^uint64(0)
	}
	state := func() uint64 {
		if cnt[C] > 0 {
			return all
		}
		var s uint64
		for c := 0; c < C; c++ {
			if cnt[c] > 0 {
				s |= 1 << c
			}
		}
		return s
	}
	start := len(dst)
	dst = append(dst, region{0, 0})
	for i := 0; i < len(ev); {
		t := ev[i].t
		for ; i < len(ev) && ev[i].t == t; i++ {
			cnt[ev[i].ch] += ev[i].d
		}
		if t >= T {
			break
		}
		s := state()
		last := &dst[len(dst)-1]
		switch {
		case s == last.s:
		case last.lo == t: // the run starting at t changes state at once
			last.s = s
			if k := len(dst) - 1; k > start && dst[k-1].s == s {
				dst = dst[:k]
			}
		default:
			dst = append(dst, region{t, s})
		}
	}
	return dst
}

// validRegions reports whether the boundary path can take the regions of
// one perturbed input: every region but the first and the last holds at
// least R-1 positions, so the dirty positions of a boundary see that
// boundary only.
func validRegions(rg []region, R int) bool {
	for i := 1; i+1 < len(rg); i++ {
		if rg[i+1].lo-rg[i].lo < R-1 {
			return false
		}
	}
	return true
}

// ChannelSpanPooled is SpanPooled for spans of single channels: dst gets,
// at dst[j*P:(j+1)*P] (P = PooledLen()), the global max pool's output for
// x with x[c*T+t] set to baseline for every span s of spans[j] and every
// t in [s.Lo, s.Hi), c = s.Ch, or every channel c when s.Ch is
// AllChannels. The spans of one input may come in any order and overlap.
//
// An input whose runs of equally replaced channels (its regions) hold at
// least R-1 positions each, but the first and the last, takes the
// boundary path: its pooled vector is the maximum, per channel, of
//
//   - the interior of each region [a, e) of replaced channels S: the last
//     local level of x_S (x with the channels of S replaced everywhere) at
//     positions [a, e-R+1), by range maxima;
//   - each boundary b between regions S and S': the R-1 dirty positions
//     b-R+1..b-1, computed from x_S left of b and x_S' from b on, once per
//     (b, S, S') and input x;
//
// which needs one pass of the local stack per state S that occurs (at
// most 2^C). Other inputs, and every input when C > 64, take a forward
// pass; so do all of them when the distinct boundaries (b, S, S'), times
// R-1 dirty positions and edgeCost, outnumber the valid inputs' T
// positions (few inputs of many features: the boundaries are then dearer
// than forward passes). The values equal the forward passes' up to
// float32 rounding.
func (m *Inference) ChannelSpanPooled(dst, x []float32, spans [][]ChannelSpan, baseline float32) {
	if m.planWindows() == nil {
		panic("nn: ChannelSpanPooled needs a network with a global max pool after a local stack")
	}
	if len(x) != m.InputLen() || len(dst) < len(spans)*m.PooledLen() {
		panic("nn: ChannelSpanPooled needs one input and PooledLen values a perturbed input")
	}
	m.checkChannelSpans(spans)
	m.channelSpanPooled(dst, x, spans, baseline, false)
}

// ChannelSpanProbs writes dst[j] = p_class(x with the spans of spans[j]
// set to baseline, each in its channel, see ChannelSpanPooled):
// ChannelSpanPooled and HeadProbs, or forward passes of the perturbed
// inputs when the network has no global max pool after a local stack.
func (m *Inference) ChannelSpanProbs(dst, x []float32, spans [][]ChannelSpan, baseline float32, class int) {
	if len(x) != m.InputLen() || len(dst) < len(spans) {
		panic("nn: ChannelSpanProbs needs one input and a dst per perturbed input")
	}
	m.checkChannelSpans(spans)
	if m.planWindows() == nil || !m.boundariesPay(spans) {
		n, k := m.InputLen(), m.Classes()
		buf := make([]float32, inferenceBatch*n)
		probs := make([]float32, inferenceBatch*k)
		for j0 := 0; j0 < len(spans); j0 += inferenceBatch {
			j1 := min(j0+inferenceBatch, len(spans))
			for j := j0; j < j1; j++ {
				m.channelPerturbed(buf[(j-j0)*n:(j-j0+1)*n], x, spans[j], baseline)
			}
			m.probs(probs[:(j1-j0)*k], buf[:(j1-j0)*n])
			for j := j0; j < j1; j++ {
				dst[j] = probs[(j-j0)*k+class]
			}
		}
		return
	}
	pooled := make([]float32, len(spans)*m.PooledLen())
	m.channelSpanPooled(pooled, x, spans, baseline, true)
	m.HeadProbs(dst[:len(spans)], pooled, class)
}

// checkChannelSpans panics on a span outside the input: a channel other
// than AllChannels or 0..C-1, or positions outside 0 <= Lo <= Hi <= T.
func (m *Inference) checkChannelSpans(spans [][]ChannelSpan) {
	C, T := m.net.in.C, m.net.in.T
	for j, sp := range spans {
		for _, s := range sp {
			if s.Ch != AllChannels && (s.Ch < 0 || s.Ch >= C) || s.Lo < 0 || s.Lo > s.Hi || s.Hi > T {
				panic(fmt.Sprintf("nn: perturbation %d: span %+v outside the input's %d channels and %d positions", j, s, C, T))
			}
		}
	}
}

// boundariesPay reports whether the boundary path of channelSpanPooled
// is worth taking for spans (see ChannelSpanPooled): the distinct
// boundaries (b, S, S') of the valid inputs, times R-1 and edgeCost, are
// at most the valid inputs' T positions each. m has a window plan.
func (m *Inference) boundariesPay(spans [][]ChannelSpan) bool {
	C0, T, R := m.net.in.C, m.net.in.T, m.edge.R()
	if C0 > maxStateChannels {
		return false
	}
	type edgeKey struct {
		b    int
		l, r uint64
	}
	seen := map[edgeKey]bool{}
	cnt := make([]int, C0+1)
	var rg []region
	valid := 0
	for _, sp := range spans {
		rg = regions(rg[:0], sp, C0, T, cnt)
		if !validRegions(rg, R) {
			continue
		}
		valid++
		for i := 1; i < len(rg); i++ {
			seen[edgeKey{rg[i].lo, rg[i-1].s, rg[i].s}] = true
		}
	}
	return len(seen)*(R-1)*edgeCost <= valid*T
}

// channelPerturbed writes x with the spans set to v, each in its channel,
// to row.
func (m *Inference) channelPerturbed(row, x []float32, spans []ChannelSpan, v float32) {
	C, T := m.net.in.C, m.net.in.T
	copy(row, x)
	for _, s := range spans {
		c0, c1 := s.Ch, s.Ch+1
		if s.Ch == AllChannels {
			c0, c1 = 0, C
		}
		for c := c0; c < c1; c++ {
			r := row[c*T+s.Lo : c*T+s.Hi]
			for t := range r {
				r[t] = v
			}
		}
	}
}

// channelSpanPooled is ChannelSpanPooled on checked arguments; with
// always, the valid inputs take the boundary path even when it does not
// pay.
func (m *Inference) channelSpanPooled(pooled, x []float32, spans [][]ChannelSpan, v float32, always bool) {
	net, e := m.net, m.edge
	L, R := e.L, e.R()
	C0, T := net.in.C, net.in.T
	sh := m.level(L)
	C, TL := sh.C, sh.T
	var bad []int
	if C0 > maxStateChannels {
		bad = make([]int, len(spans))
		for j := range bad {
			bad[j] = j
		}
		m.channelPlain(pooled, x, spans, v, bad)
		return
	}
	// The regions of every input, input j's at rg[ends[j-1]:ends[j]]; an
	// input that breaks validRegions gets none and a forward pass.
	var rg []region
	ends := make([]int, len(spans))
	cnt := make([]int, C0+1)
	for j, sp := range spans {
		n0 := len(rg)
		rg = regions(rg, sp, C0, T, cnt)
		if !validRegions(rg[n0:], R) {
			rg = rg[:n0]
			bad = append(bad, j)
		}
		ends[j] = len(rg)
	}
	// The boundaries the inputs need, by their pair of states.
	type pair struct{ l, r uint64 }
	type edgeKey struct {
		b    int
		l, r uint64
	}
	at := map[edgeKey]int{}
	byPair := map[pair][]int{}
	for j := range spans {
		lo := 0
		if j > 0 {
			lo = ends[j-1]
		}
		for i := lo + 1; i < ends[j]; i++ {
			k := edgeKey{rg[i].lo, rg[i-1].s, rg[i].s}
			if _, ok := at[k]; ok {
				continue
			}
			at[k] = -1
			p := pair{k.l, k.r}
			byPair[p] = append(byPair[p], k.b)
		}
	}
	// A boundary costs about edgeCost forward positions a dirty position
	// (measured on the paper's network with three channels); when the
	// boundaries cost more than the valid inputs' forward passes, those
	// are cheaper and exact by definition.
	if !always && len(at)*(R-1)*edgeCost > (len(spans)-len(bad))*T {
		bad = bad[:0]
		for j := range spans {
			bad = append(bad, j)
		}
		m.channelPlain(pooled, x, spans, v, bad)
		return
	}
	// One pass of the local stack per state that occurs.
	levels := map[uint64][][]float32{}
	ws := m.pool.Get().(*Workspace)
	defer m.pool.Put(ws)
	xs := make([]float32, len(x))
	for _, r := range rg {
		if _, ok := levels[r.s]; ok {
			continue
		}
		copy(xs, x)
		for c := 0; c < C0; c++ {
			if r.s&(1<<c) != 0 {
				row := xs[c*T : (c+1)*T]
				for t := range row {
					row[t] = v
				}
			}
		}
		net.forward(ws, m.folded, xs, false, nil, L-1)
		lv := make([][]float32, L+1)
		lv[0] = append([]float32(nil), xs...)
		for l := 0; l < L; l++ {
			lv[l+1] = append([]float32(nil), ws.Act(l)[:m.level(l+1).Size()]...)
		}
		levels[r.s] = lv
	}
	tables := make(map[uint64][][]float32, len(levels))
	for s, lv := range levels {
		tables[s] = buildSparse(nil, lv[L], C, TL, TL)
	}
	maxima := make([]float32, len(at)*C)
	sc := edgePool.Get().(*edgeScratch)
	defer edgePool.Put(sc)
	next := 0
	for p, pos := range byPair {
		slices.Sort(pos)
		for p0 := 0; p0 < len(pos); p0 += edgeChunk {
			chunk := pos[p0:min(p0+edgeChunk, len(pos))]
			pl := m.planeLen(len(chunk))
			sc.planes[0] = grow(sc.planes[0], pl)
			sc.planes[1] = grow(sc.planes[1], pl)
			out := maxima[next*C : (next+len(chunk))*C]
			m.edgeMaxima(out, levels[p.l], nil, levels[p.r], chunk, false, sc)
			for i, b := range chunk {
				at[edgeKey{b, p.l, p.r}] = next + i
			}
			next += len(chunk)
		}
	}
	for j := range spans {
		lo := 0
		if j > 0 {
			lo = ends[j-1]
		}
		if lo == ends[j] {
			continue // a forward pass
		}
		pv := pooled[j*C : (j+1)*C]
		for c := range pv {
			pv[c] = float32(math.Inf(-1))
		}
		for i := lo; i < ends[j]; i++ {
			a, end := rg[i].lo, T
			if i+1 < ends[j] {
				end = rg[i+1].lo
			}
			if b := end - R + 1; b > a {
				st := tables[rg[i].s]
				for c := range pv {
					if u := rangeMax(st, c, TL, a, b); u > pv[c] {
						pv[c] = u
					}
				}
			}
			if i > lo {
				q := at[edgeKey{a, rg[i-1].s, rg[i].s}]
				for c, u := range maxima[q*C : (q+1)*C] {
					if u > pv[c] {
						pv[c] = u
					}
				}
			}
		}
	}
	if len(bad) > 0 {
		m.channelPlain(pooled, x, spans, v, bad)
	}
}

// channelPlain computes the pooled output of the perturbed inputs idx by
// full forward passes up to the global max pool.
func (m *Inference) channelPlain(pooled, x []float32, spans [][]ChannelSpan, v float32, idx []int) {
	net, plan := m.net, m.plan
	n := net.in.Size()
	C := net.shapes[plan.g].C
	ws := m.pool.Get().(*Workspace)
	defer m.pool.Put(ws)
	buf := make([]float32, inferenceBatch*n)
	for i0 := 0; i0 < len(idx); i0 += inferenceBatch {
		i1 := min(i0+inferenceBatch, len(idx))
		for i := i0; i < i1; i++ {
			m.channelPerturbed(buf[(i-i0)*n:(i-i0+1)*n], x, spans[idx[i]], v)
		}
		net.forward(ws, m.folded, buf[:(i1-i0)*n], false, nil, plan.g)
		out := ws.Act(plan.g)
		for i := i0; i < i1; i++ {
			copy(pooled[idx[i]*C:(idx[i]+1)*C], out[(i-i0)*C:(i-i0+1)*C])
		}
	}
}
