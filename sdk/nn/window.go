package nn

import (
	"context"
	"math"
	"sync"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// windowPlan is the split of a folded network into a local stack (layers
// whose output at t depends only on a window of their input around t:
// the kinds with a localRange in the table, today conv1d, relu,
// maxpool1d, batchnorm and dropout) ending in a global max pool, and a
// head that runs on the pooled vector.
type windowPlan struct {
	g    int  // index of the global max pool layer
	head *Net // layers g+1.. on a (C, 1) input
	hp   []float32
	// rows, when not nil, is the head as a chain of dense layers and
	// ReLUs run one pooled vector at a time (flatten and eval-mode dropout
	// are the identity there); nil when the head has other layers.
	rows  []headStep
	width int // the widest activation of rows
}

// headStep is a dense layer (w, packed as kern.PackConv packs a 1-tap
// convolution, and bias), followed by a ReLU if relu, or, with w nil, a
// ReLU alone.
type headStep struct {
	w, pw, bias []float32
	in, out     int
	relu        bool
}

// planWindows returns nil when the network has no local-stack + global-max
// structure; occlusion then falls back to full forward passes.
func (m *Inference) planWindows() *windowPlan {
	m.planOnce.Do(func() {
		a := m.net.arch
		g := -1
		for i, l := range a.Layers {
			if l.Kind == KindGlobalMaxPool {
				g = i
				break
			}
			if m.net.defs[i].localRange == nil {
				return
			}
		}
		if g < 0 {
			return
		}
		ha := Arch{Name: a.Name + "-head", InChannels: m.net.shapes[g].C, InLen: 1, Layers: a.Layers[g+1:]}
		head, err := NewNet(ha)
		if err != nil {
			return
		}
		head.Workers = 1
		hp := make([]float32, head.layout.Size)
		for _, t := range head.layout.Tensors {
			copy(hp[t.Offset:t.Offset+t.Size], m.net.layout.View(m.folded, t.Name))
		}
		m.plan = &windowPlan{g: g, head: head, hp: hp}
		m.plan.rows, m.plan.width = headRows(head, hp)
		m.edge = m.newEdgePlan(g)
		m.headPool.New = func() any { return head.NewWorkspace(headBatch) }
	})
	return m.plan
}

// headBufs holds HeadProbs's buffers, of any model.
var headBufs = sync.Pool{New: func() any { return new([]float32) }}

// headBatch is the batch of pooled vectors one head pass takes.
const headBatch = 64

// WindowProbs writes dst[j] = p_class(x with samples starts[j] ..
// starts[j]+width-1 of every channel set to baseline), for one input x.
//
// When the network is a local stack followed by a global max pool (as the
// paper's is), the pooled vector of every window is computed without a
// forward pass a window (see WindowPooled), and the layers after the pool
// run on those vectors. Per position the arithmetic is that of the local
// layers, so the result equals full forward passes up to float32 rounding.
func (m *Inference) WindowProbs(dst, x []float32, starts []int, width int, baseline float32, class int) {
	m.windowProbs(dst, x, starts, width, baseFill{v: baseline}, class)
}

// WindowProbsSignal is WindowProbs with the occluded samples taken from a
// baseline signal z of the input's layout (len(z) = InputLen()): dst[j] =
// p_class(x with x[c*T+t] replaced by z[c*T+t] for every channel c and
// starts[j] <= t < starts[j]+width). z is the same signal for every
// window, so sample t is replaced by the same value in every window that
// covers it; the boundary path stays exact (a boundary's dirty positions
// read x on one side and z on the other, whichever window it belongs to),
// with the all-z input's activations where the all-baseline constants were.
func (m *Inference) WindowProbsSignal(dst, x, z []float32, starts []int, width int, class int) {
	if len(z) != m.InputLen() {
		panic("nn: WindowProbsSignal needs a baseline signal of the input's length")
	}
	m.windowProbs(dst, x, starts, width, baseFill{z: z}, class)
}

func (m *Inference) windowProbs(dst, x []float32, starts []int, width int, f baseFill, class int) {
	n := m.InputLen()
	if len(x) != n || len(dst) < len(starts) {
		panic("nn: WindowProbs needs one input and a dst per window")
	}
	if m.planWindows() == nil {
		m.windowProbsPlain(dst, x, starts, width, f, class)
		return
	}
	pooled := make([]float32, len(starts)*m.PooledLen())
	m.windowPooled(pooled, x, starts, width, f, false)
	m.HeadProbs(dst[:len(starts)], pooled, class)
}

// baseFill is what occluded samples are set to: z[i] at index i of the input
// (the input's layout, channel-major) when z is not nil, else the constant v.
type baseFill struct {
	v float32
	z []float32
}

// set writes the baseline over positions [lo, hi) of each of the C rows of
// length T of row (row holds one input).
func (f baseFill) set(row []float32, C, T, lo, hi int) {
	lo, hi = max(lo, 0), min(hi, T)
	if lo >= hi {
		return
	}
	for c := 0; c < C; c++ {
		if f.z != nil {
			copy(row[c*T+lo:c*T+hi], f.z[c*T+lo:c*T+hi])
			continue
		}
		r := row[c*T+lo : c*T+hi]
		for t := range r {
			r[t] = f.v
		}
	}
}

// PooledLen is the length of the global max pool's output of one input
// (its channels), or 0 when the network has no local stack followed by a
// global max pool (then WindowPooled and HeadProbs panic).
func (m *Inference) PooledLen() int {
	if p := m.planWindows(); p != nil {
		return m.net.shapes[p.g].C
	}
	return 0
}

// WindowPooled writes to dst[j*P:(j+1)*P], P = PooledLen(), the global max
// pool's output for x with samples starts[j] .. starts[j]+width-1 of every
// channel set to baseline. It depends only on the layers up to the pool:
// two models whose parameters agree there give the same bytes.
//
// A window at least R-1 samples wide (R the receptive field of the last
// layer before the pool; 11 for the paper's network) takes the boundary
// path of SpanPooled; a narrower one recomputes each window's receptive
// field on top of the unperturbed pass.
func (m *Inference) WindowPooled(dst, x []float32, starts []int, width int, baseline float32) {
	if m.planWindows() == nil {
		panic("nn: WindowPooled needs a network with a global max pool after a local stack")
	}
	if len(x) != m.InputLen() || len(dst) < len(starts)*m.PooledLen() {
		panic("nn: WindowPooled needs one input and PooledLen values a window")
	}
	m.windowPooled(dst, x, starts, width, baseFill{v: baseline}, false)
}

// windowPooled is WindowPooled; with unperturbed, dst holds one more
// vector, after the windows': that of x itself.
func (m *Inference) windowPooled(dst, x []float32, starts []int, width int, f baseFill, unperturbed bool) {
	T := m.net.in.T
	if width >= m.edge.R()-1 {
		spans := make([]Span, len(starts))
		ends := make([]int, len(starts), len(starts)+1)
		for j, s := range starts {
			spans[j] = Span{s, min(s+width, T)}
			ends[j] = j + 1
		}
		if unperturbed {
			ends = append(ends, len(starts)) // no span
		}
		m.spanPooled(dst, x, spans, ends, f)
		return
	}
	m.windowPooledNarrow(dst, x, starts, width, f, unperturbed)
}

// SpanPooled is WindowPooled for inputs perturbed on several spans: dst
// gets the pooled vector of x with the samples of every span of spans[j]
// set to baseline in every channel. Spans of one input must be in order
// and apart. When every span and every gap between two spans of an input
// hold at least R-1 samples, its pooled vector comes from per-boundary
// maxima (see edges.go); otherwise from a forward pass.
func (m *Inference) SpanPooled(dst, x []float32, spans [][]Span, baseline float32) {
	if m.planWindows() == nil {
		panic("nn: SpanPooled needs a network with a global max pool after a local stack")
	}
	if len(x) != m.InputLen() || len(dst) < len(spans)*m.PooledLen() {
		panic("nn: SpanPooled needs one input and PooledLen values a perturbed input")
	}
	var flat []Span
	ends := make([]int, len(spans))
	for j, sp := range spans {
		flat = append(flat, sp...)
		ends[j] = len(flat)
	}
	m.spanPooled(dst, x, flat, ends, baseFill{v: baseline})
}

// SpanProbs writes dst[j] = p_class(x with the samples of every span of
// spans[j] set to baseline in every channel): SpanPooled and HeadProbs, or
// forward passes of the perturbed inputs when the network has no global
// max pool after a local stack.
func (m *Inference) SpanProbs(dst, x []float32, spans [][]Span, baseline float32, class int) {
	if len(x) != m.InputLen() || len(dst) < len(spans) {
		panic("nn: SpanProbs needs one input and a dst per perturbed input")
	}
	if m.planWindows() == nil {
		n, k, T := m.InputLen(), m.Classes(), m.net.in.T
		buf := make([]float32, inferenceBatch*n)
		probs := make([]float32, inferenceBatch*k)
		for j0 := 0; j0 < len(spans); j0 += inferenceBatch {
			j1 := min(j0+inferenceBatch, len(spans))
			for j := j0; j < j1; j++ {
				row := buf[(j-j0)*n : (j-j0+1)*n]
				copy(row, x)
				for _, s := range spans[j] {
					baseFill{v: baseline}.set(row, m.net.in.C, T, s.Lo, s.Hi)
				}
			}
			m.probs(probs[:(j1-j0)*k], buf[:(j1-j0)*n])
			for j := j0; j < j1; j++ {
				dst[j] = probs[(j-j0)*k+class]
			}
		}
		return
	}
	pooled := make([]float32, len(spans)*m.PooledLen())
	m.SpanPooled(pooled, x, spans, baseline)
	m.HeadProbs(dst[:len(spans)], pooled, class)
}

// HeadProbs writes dst[j] = p_class of the network's layers after the
// global max pool applied to the pooled vector pooled[j*P:(j+1)*P]
// (P = PooledLen()), for j < len(dst).
func (m *Inference) HeadProbs(dst, pooled []float32, class int) {
	plan := m.planWindows()
	if plan == nil {
		panic("nn: HeadProbs needs a network with a global max pool after a local stack")
	}
	P, k := m.PooledLen(), m.Classes()
	if len(pooled) < len(dst)*P {
		panic("nn: HeadProbs needs PooledLen values a dst")
	}
	if class < 0 || class >= k {
		panic("nn: HeadProbs: class out of range")
	}
	if plan.rows != nil {
		N := len(dst)
		cols := make([]float32, P*N)
		for j := 0; j < N; j++ {
			for i := 0; i < P; i++ {
				cols[i*N+j] = pooled[j*P+i]
			}
		}
		m.headProbsCols(dst, cols, class)
		return
	}
	hws := m.headPool.Get().(*Workspace)
	defer m.headPool.Put(hws)
	var probs [headBatch * 64]float32
	pr := probs[:]
	if headBatch*k > len(pr) {
		pr = make([]float32, headBatch*k)
	}
	for j0 := 0; j0 < len(dst); j0 += headBatch {
		j1 := min(j0+headBatch, len(dst))
		nb := j1 - j0
		plan.head.Forward(hws, plan.hp, pooled[j0*P:j1*P], false, nil)
		Softmax(pr[:nb*k], hws.Logits(), k)
		for j := j0; j < j1; j++ {
			dst[j] = pr[(j-j0)*k+class]
		}
	}
}

// windowPooledNarrow is WindowPooled for windows narrower than R-1: each
// window's receptive field is recomputed on top of the unperturbed pass,
// restoring only what the next window does not recompute, and the global
// max combines the recomputed range with prefix and suffix maxima of the
// unperturbed activations.
func (m *Inference) windowPooledNarrow(dst, x []float32, starts []int, width int, f baseFill, unperturbed bool) {
	plan := m.plan
	net := m.net
	T0 := net.in.T
	// Unperturbed pass, and working copies of every local activation.
	ws := m.pool.Get().(*Workspace)
	defer m.pool.Put(ws)
	net.forward(ws, m.folded, x, false, nil, plan.g-1)
	base := make([][]float32, plan.g)
	work := make([][]float32, plan.g)
	for i := 0; i < plan.g; i++ {
		base[i] = append([]float32(nil), ws.Act(i)...)
		work[i] = append([]float32(nil), base[i]...)
	}
	last := base[plan.g-1]
	ls := net.shapes[plan.g-1]
	// prefix[c][t] = max(last[c][0..t]); suffix[c][t] = max(last[c][t..]).
	prefix := make([]float32, ls.Size())
	suffix := make([]float32, ls.Size())
	for c := 0; c < ls.C; c++ {
		row := last[c*ls.T : (c+1)*ls.T]
		pr, sf := prefix[c*ls.T:(c+1)*ls.T], suffix[c*ls.T:(c+1)*ls.T]
		pr[0] = row[0]
		for t := 1; t < ls.T; t++ {
			pr[t] = max(pr[t-1], row[t])
		}
		sf[ls.T-1] = row[ls.T-1]
		for t := ls.T - 2; t >= 0; t-- {
			sf[t] = max(sf[t+1], row[t])
		}
	}
	xw := append([]float32(nil), x...)
	idx := make([]int32, ls.T+net.in.T)
	prev := make([]span, plan.g+1) // empty: nothing perturbed yet
	cur := make([]span, plan.g+1)
	for j, s := range starts {
		// The ranges this window perturbs, per layer (index 0 is the
		// input). Positions the previous window perturbed and this one
		// does not are restored; the others are recomputed anyway.
		lo, hi := s, min(s+width, T0)
		cur[0] = span{lo, hi}
		for i := 0; i < plan.g; i++ {
			cur[i+1] = m.outRange(i, cur[i])
		}
		restoreDiff(xw, x, net.in.C, T0, prev[0], cur[0])
		for i := 0; i < plan.g; i++ {
			restoreDiff(work[i], base[i], net.shapes[i].C, net.shapes[i].T, prev[i+1], cur[i+1])
		}
		f.set(xw, net.in.C, T0, lo, hi)
		in := xw
		for i := 0; i < plan.g; i++ {
			m.localRange(i, in, work[i], cur[i+1], idx)
			in = work[i]
		}
		lo, hi = cur[plan.g].lo, cur[plan.g].hi
		copy(prev, cur)
		// Global max per channel over unperturbed prefix, recomputed
		// range and unperturbed suffix.
		pv := dst[j*ls.C : (j+1)*ls.C]
		for c := 0; c < ls.C; c++ {
			v := float32(math.Inf(-1))
			if lo > 0 {
				v = prefix[c*ls.T+lo-1]
			}
			if hi < ls.T {
				v = max(v, suffix[c*ls.T+hi])
			}
			if hi > lo {
				u, _ := kern.ArgMax(work[plan.g-1][c*ls.T+lo : c*ls.T+hi])
				v = max(v, u)
			}
			pv[c] = v
		}
	}
	if unperturbed {
		pv := dst[len(starts)*ls.C : (len(starts)+1)*ls.C]
		for c := range pv {
			pv[c] = suffix[c*ls.T]
		}
	}
}

// headProbsCols is HeadProbs for the head of dense layers and ReLUs
// (plan.rows), on pooled vectors laid out as columns: cols is (P, N),
// N = len(dst), column j the vector of dst[j].
func (m *Inference) headProbsCols(dst, cols []float32, class int) {
	plan := m.plan
	P, k, N := m.PooledLen(), m.Classes(), len(dst)
	const nb = 2 * headBatch
	need := 2*plan.width*nb + 3*nb
	bp := headBufs.Get().(*[]float32)
	defer headBufs.Put(bp)
	if cap(*bp) < need {
		*bp = make([]float32, need)
	}
	buf := (*bp)[:need]
	a, b := buf[:plan.width*nb], buf[plan.width*nb:2*plan.width*nb]
	sm := buf[2*plan.width*nb:]
	mx, ec, e := sm[:nb], sm[nb:2*nb], sm[2*nb:3*nb]
	var sum [nb]float64
	for j0 := 0; j0 < N; j0 += nb {
		n := min(nb, N-j0)
		z := plan.headCols(cols[j0:(P-1)*N+j0+n], N, a, b, n)
		softmaxCols(dst[j0:j0+n], z, k, n, class, mx[:n], ec[:n], e[:n], sum[:n])
	}
}

// headRows returns the head as dense layers and ReLUs, or nil if it has
// other layers.
func headRows(head *Net, hp []float32) ([]headStep, int) {
	var rows []headStep
	width := head.in.Size()
	for i := range head.arch.Layers {
		switch d := head.defs[i]; {
		case d.evalIdentity:
		case d.headRow != nil:
			rows, width = d.headRow(head, hp, i, rows, width)
		default:
			return nil, 0
		}
	}
	return rows, width
}

// headCols writes the logits of the n pooled vectors x, laid out (P, n)
// (column j is vector j), to the (classes, n) block it returns, through
// the head's dense layers (a 1-tap convolution over the n columns:
// y[o,j] = bias[o] + sum_i w[o,i] x[i,j]) and ReLUs; a and b are buffers
// of plan.width*n values.
func (p *windowPlan) headCols(x []float32, xs int, a, b []float32, n int) []float32 {
	cur := x
	for _, st := range p.rows {
		if st.w == nil {
			if xs != n { // a ReLU first: work on a copy of the columns
				y := a[:p.rows[0].out*n]
				for i := 0; i < len(y)/n; i++ {
					copy(y[i*n:(i+1)*n], cur[i*xs:i*xs+n])
				}
				cur, xs = y, n
				a, b = b, a
			}
			kern.ReluInPlace(cur)
			continue
		}
		y := a[:st.out*n]
		if st.relu {
			// the ReLU's output is what the next layer reads
			kern.ConvMultiBias(b[:st.out*n], y, n, cur, xs, st.w, st.pw, st.bias, st.out, st.in, 1, n)
		} else {
			kern.ConvMultiBias(y, nil, n, cur, xs, st.w, st.pw, st.bias, st.out, st.in, 1, n)
		}
		cur, xs = y, n
		a, b = b, a
	}
	return cur
}

// softmaxCols writes dst[j] = Softmax(z[:, j])[class] for the n columns
// of the (k, n) block z, computed as Softmax computes it (the maximum
// subtracted in float32, the sum in float64 in class order) but with the
// float32 exponential kern.Exp (a relative difference of a few float32
// ulps); mx, ec and e are scratch of n values, s of n.
func softmaxCols(dst, z []float32, k, n, class int, mx, ec, e []float32, s []float64) {
	copy(mx, z[:n])
	for r := 1; r < k; r++ {
		row := z[r*n : (r+1)*n]
		for j, v := range row {
			mx[j] = max(mx[j], v)
		}
	}
	clear(s)
	for r := 0; r < k; r++ {
		row := z[r*n : (r+1)*n]
		for j, v := range row {
			e[j] = v - mx[j]
		}
		kern.Exp(e, e)
		if r == class {
			copy(ec, e)
		}
		for j, v := range e {
			s[j] += float64(v)
		}
	}
	for j := range dst[:n] {
		dst[j] = float32(float64(ec[j]) * (1 / s[j]))
	}
}

// span is the half-open range [lo, hi) of time positions.
type span struct{ lo, hi int }

// outRange maps the perturbed input range of local layer i to the range
// of its output that depends on it: [lo-k+1, hi) clipped, k the kernel.
func (m *Inference) outRange(i int, in span) span {
	k := m.net.defs[i].window(m.net.arch.Layers[i])
	a, b := max(0, in.lo-k+1), min(m.net.shapes[i].T, in.hi)
	if a >= b || in.lo >= in.hi {
		return span{a, a}
	}
	return span{a, b}
}

// restoreDiff copies base over the positions of prev that are not in cur,
// in each of the C rows of length T.
func restoreDiff(buf, base []float32, C, T int, prev, cur span) {
	for _, r := range [2]span{{prev.lo, min(prev.hi, cur.lo)}, {max(prev.lo, cur.hi), prev.hi}} {
		if r.lo >= r.hi {
			continue
		}
		for c := 0; c < C; c++ {
			copy(buf[c*T+r.lo:c*T+r.hi], base[c*T+r.lo:c*T+r.hi])
		}
	}
}

// localRange recomputes the output of local layer i on the positions out
// (see outRange), reading in, the layer's input.
func (m *Inference) localRange(i int, in, out []float32, r span, idx []int32) {
	if r.lo >= r.hi {
		return
	}
	m.net.defs[i].localRange(m, i, in, out, r.lo, r.hi, idx)
}

// windowProbsPlain is WindowProbs by full forward passes (Perturbed's).
func (m *Inference) windowProbsPlain(dst, x []float32, starts []int, width int, f baseFill, class int) {
	req := Perturbation{X: x, Class: class, Baseline: f.v, Signal: f.z, Starts: starts, Width: width, Channel: AllChannels}
	if err := forwardPerturbed(context.Background(), m, req, dst[:len(starts)]); err != nil {
		panic(err)
	}
}

// ChannelBaseline writes to dst the baseline signal that occludes channel
// ch of x alone, and returns dst: for the input x of C = len(x)/T channels
// of T samples,
//
//	dst[c*T+t] = x[c*T+t]    for c != ch,
//	dst[ch*T+t] = z[ch*T+t]  (or baseline, when z is nil).
//
// Occluding a window of every channel with dst (a Perturbation's
// Signal) occludes it in channel ch only,
// since the other channels are replaced by themselves:
//
//	dst[j] = p_class(x with samples starts[j] .. starts[j]+width-1 of channel ch set to the baseline)
//
// as Captum's Occlusion computes with sliding_window_shapes = (1, width).
// Every path stays incremental: the span path's all-baseline activations
// become those of x with channel ch replaced, one forward pass a channel,
// so C channels cost about C occlusions of a one-channel signal baseline.
func ChannelBaseline(dst, x, z []float32, baseline float32, T, ch int) []float32 {
	if T < 1 || len(x)%T != 0 || len(dst) != len(x) || (z != nil && len(z) != len(x)) || ch < 0 || ch >= len(x)/T {
		panic("nn: ChannelBaseline needs an input of whole channels, a dst (and z) of its length and a channel in range")
	}
	copy(dst, x)
	row := dst[ch*T : (ch+1)*T]
	if z != nil {
		copy(row, z[ch*T:(ch+1)*T])
		return dst
	}
	for t := range row {
		row[t] = baseline
	}
	return dst
}
