package nn

import (
	"math"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// windowPlan is the split of a folded network into a local stack (layers
// whose output at t depends only on a window of their input around t:
// conv1d, relu, maxpool1d, batchnorm, dropout) ending in a global max pool,
// and a head that runs on the pooled vector.
type windowPlan struct {
	g    int  // index of the global max pool layer
	head *Net // layers g+1.. on a (C, 1) input
	hp   []float32
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
			switch l.Kind {
			case KindConv1D, KindReLU, KindMaxPool1D, KindBatchNorm1D, KindDropout:
			default:
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
	})
	return m.plan
}

// WindowProbs writes dst[j] = p_class(x with samples starts[j] ..
// starts[j]+width-1 of every channel set to baseline), for one input x.
//
// When the network is a local stack followed by a global max pool (as the
// paper's is), only the outputs inside each window's receptive field are
// recomputed, on top of the unperturbed pass, and the global max combines
// the recomputed range with prefix and suffix maxima of the unperturbed
// activations. Per position the arithmetic is that of the full pass, so
// the result equals it up to float32 rounding (exactly, with the portable
// kernels).
func (m *Inference) WindowProbs(dst, x []float32, starts []int, width int, baseline float32, class int) {
	n := m.InputLen()
	if len(x) != n || len(dst) < len(starts) {
		panic("nn: WindowProbs needs one input and a dst per window")
	}
	plan := m.planWindows()
	if plan == nil {
		m.windowProbsPlain(dst, x, starts, width, baseline, class)
		return
	}
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
	k := m.Classes()
	const hb = 64
	hws := plan.head.NewWorkspace(hb)
	pooled := make([]float32, hb*ls.C)
	probs := make([]float32, hb*k)
	for j0 := 0; j0 < len(starts); j0 += hb {
		j1 := min(j0+hb, len(starts))
		for j := j0; j < j1; j++ {
			s := starts[j]
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
			for c := 0; c < net.in.C; c++ {
				for t := lo; t < hi; t++ {
					xw[c*T0+t] = baseline
				}
			}
			in := xw
			for i := 0; i < plan.g; i++ {
				m.localRange(i, in, work[i], cur[i+1], idx)
				in = work[i]
			}
			lo, hi = cur[plan.g].lo, cur[plan.g].hi
			copy(prev, cur)
			// Global max per channel over unperturbed prefix, recomputed
			// range and unperturbed suffix.
			pv := pooled[(j-j0)*ls.C : (j-j0+1)*ls.C]
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
		nb := j1 - j0
		plan.head.Forward(hws, plan.hp, pooled[:nb*ls.C], false, nil)
		Softmax(probs[:nb*k], hws.Logits(), k)
		for j := j0; j < j1; j++ {
			dst[j] = probs[(j-j0)*k+class]
		}
	}
}

// span is the half-open range [lo, hi) of time positions.
type span struct{ lo, hi int }

// outRange maps the perturbed input range of local layer i to the range
// of its output that depends on it: [lo-k+1, hi) clipped, k the kernel.
func (m *Inference) outRange(i int, in span) span {
	l := m.net.arch.Layers[i]
	k := 1
	if l.Kind == KindConv1D || l.Kind == KindMaxPool1D {
		k = l.Kernel
	}
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
	net := m.net
	l := net.arch.Layers[i]
	is, os := net.ins[i], net.shapes[i]
	k := 1
	if l.Kind == KindConv1D || l.Kind == KindMaxPool1D {
		k = l.Kernel
	}
	a, b := r.lo, r.hi
	if a >= b {
		return
	}
	o := net.offs[i]
	switch l.Kind {
	case KindConv1D:
		w, bias := m.folded[o.w:o.w+l.Out*is.C*k], m.folded[o.b:o.b+l.Out]
		kern.ConvMultiBias(out[a:], nil, os.T, in[a:], is.T, w, nil, bias, l.Out, is.C, k, b-a)
	case KindReLU:
		for c := 0; c < os.C; c++ {
			kern.Relu(out[c*os.T+a:c*os.T+b], in[c*is.T+a:c*is.T+b])
		}
	case KindMaxPool1D:
		for c := 0; c < os.C; c++ {
			kern.MaxPool(out[c*os.T+a:c*os.T+b], idx[:b-a], in[c*is.T+a:c*is.T+b+k-1], k)
		}
	case KindBatchNorm1D:
		// kern.Normalize's arithmetic, without the xhat output.
		g, bt, rm, rv := m.folded[o.w:], m.folded[o.b:], m.folded[o.rm:], m.folded[o.rv:]
		for c := 0; c < os.C; c++ {
			mu, istd := float32(rm[c]), float32(1/math.Sqrt(float64(rv[c])+BNEps))
			for t := a; t < b; t++ {
				h := float32(in[c*is.T+t]-mu) * istd
				out[c*os.T+t] = float32(h*g[c]) + bt[c]
			}
		}
	case KindDropout:
		for c := 0; c < os.C; c++ {
			copy(out[c*os.T+a:c*os.T+b], in[c*is.T+a:c*is.T+b])
		}
	}
}

// windowProbsPlain is WindowProbs by full forward passes.
func (m *Inference) windowProbsPlain(dst, x []float32, starts []int, width int, baseline float32, class int) {
	n, k, T := m.InputLen(), m.Classes(), m.net.in.T
	const chunk = inferenceBatch
	buf := make([]float32, chunk*n)
	probs := make([]float32, chunk*k)
	for j0 := 0; j0 < len(starts); j0 += chunk {
		j1 := min(j0+chunk, len(starts))
		for j := j0; j < j1; j++ {
			row := buf[(j-j0)*n : (j-j0+1)*n]
			copy(row, x)
			for c := 0; c < m.net.in.C; c++ {
				for t := starts[j]; t < min(starts[j]+width, T); t++ {
					row[c*T+t] = baseline
				}
			}
		}
		m.Probs(probs[:(j1-j0)*k], buf[:(j1-j0)*n])
		for j := j0; j < j1; j++ {
			dst[j] = probs[(j-j0)*k+class]
		}
	}
}
