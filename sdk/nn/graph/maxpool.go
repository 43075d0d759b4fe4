package graph

// This file is the global-max shortcut of the incremental path
// (window.go). A node whose op has MaxOverTime (globalmaxpool) reduces
// each channel's row to its first maximum. When a copy's input to it is
// stored as a window [slo, slo+W) of recomputed steps, the rest of the
// row being the unperturbed input's, its maximum is that of three parts
// in time order: the unperturbed row's prefix before slo, the window, and
// the unperturbed row's suffix from slo+W. winBase keeps the prefix and
// suffix maxima of the unperturbed row, so a copy costs the window's
// steps instead of the whole row, and gives the bits of the scan over the
// whole row (the first maximum of parts taken in order is the first
// maximum of the whole).

// firstMax is the first maximum of a, earlier in time, and b, later, as
// ops.GlobalMaxPool's scan picks it: b when it is greater, or NaN while a
// is not.
func firstMax(a, b float32) float32 {
	if a != a {
		return a
	}
	if b > a || b != b {
		return b
	}
	return a
}

// prefixSuffixMax writes pre[c*T+t], the first maximum of row c of x over
// steps 0..t, and suf[c*T+t], over steps t..T-1, for the C = len(x)/T
// rows of x.
func prefixSuffixMax(pre, suf, x []float32, T int) {
	for c := 0; c < len(x)/T; c++ {
		row, p, s := x[c*T:(c+1)*T], pre[c*T:(c+1)*T], suf[c*T:(c+1)*T]
		p[0] = row[0]
		for t := 1; t < T; t++ {
			p[t] = firstMax(p[t-1], row[t])
		}
		s[T-1] = row[T-1]
		for t := T - 2; t >= 0; t-- {
			s[t] = firstMax(row[t], s[t+1])
		}
	}
}

// maxBase keeps the prefix and suffix maxima of node i's unperturbed
// input (node i's op has MaxOverTime).
func (n *Net) maxBase(i int) {
	w := n.win
	u := n.nodes[i].inputs[0]
	s := n.shapes[u]
	if w.pre[i] == nil {
		w.pre[i], w.suf[i] = make([]float32, s.Size()), make([]float32, s.Size())
	}
	prefixSuffixMax(w.pre[i], w.suf[i], w.base[u], s.T)
}

// maxShortcut reports whether node i's B copies are computed by maxWindows:
// its op has MaxOverTime and its input is stored as windows narrower than
// the input.
func (n *Net) maxShortcut(i int) bool {
	nd := &n.nodes[i]
	return nd.op.MaxOverTime && n.win.w[nd.inputs[0]] < nd.in[0].T
}

// maxWindows writes node i's output for B copies whose input is stored as
// windows (maxShortcut): per channel, the first maximum of the unperturbed
// prefix before the window, the window's steps and the unperturbed suffix
// after it.
func (n *Net) maxWindows(B, i int) {
	w := n.win
	u := n.nodes[i].inputs[0]
	s := n.shapes[u]
	W := w.w[u]
	out := n.winVal(i+1, B)
	var stored []float32
	if W > 0 {
		stored = n.winVal(u, B)
	}
	pre, suf := w.pre[i], w.suf[i]
	for j := 0; j < B; j++ {
		lo := w.slo[u][j]
		if W == 0 {
			lo = s.T // no window: the whole row's maximum, suf[c*T]
		}
		for c := 0; c < s.C; c++ {
			var v float32
			first := true
			take := func(x float32) {
				if first {
					v, first = x, false
					return
				}
				v = firstMax(v, x)
			}
			if lo > 0 && W > 0 {
				take(pre[c*s.T+lo-1])
			}
			if W > 0 {
				for _, x := range stored[(j*s.C+c)*W : (j*s.C+c+1)*W] {
					take(x)
				}
			}
			if W == 0 {
				take(suf[c*s.T])
			} else if lo+W < s.T {
				take(suf[c*s.T+lo+W])
			}
			out[j*s.C+c] = v
		}
	}
}
