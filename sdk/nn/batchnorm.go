package nn

import (
	"math"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// BNEps is the batchnorm epsilon (PyTorch's default).
const BNEps = 1e-5

// BNMomentum is the batchnorm running-statistics momentum (PyTorch's default).
const BNMomentum = 0.1

// trainBN reports whether layer i is a batchnorm that needs batch
// statistics: the layers between two of them run sample by sample.
func (n *Net) trainBN(ws *Workspace, i int) bool {
	return ws.train && n.defs[i].batchStats
}

// bnStats stores the mean and the centred sum of squares of every channel
// of sample s's input to batchnorm layer i.
func (n *Net) bnStats(ws *Workspace, i, s int) {
	C, T := n.ins[i].C, n.ins[i].T
	in := n.input(ws, i, s)
	mu, m2 := ws.sa[i][s*C:(s+1)*C], ws.sb[i][s*C:(s+1)*C]
	for ch := 0; ch < C; ch++ {
		row := in[ch*T : (ch+1)*T]
		m := kern.Sum64(row) / float64(T)
		mu[ch], m2[ch] = m, kern.SqDev64(row, m)
	}
}

// bnReduceStats combines the per-sample statistics of batchnorm layer i in
// sample order (Chan et al.: with equal counts T, the batch mean is the
// mean of the sample means mu_s and the centred sum of squares is
// sum_s [M2_s + T (mu_s - mu)^2]), sets mu and istd = 1/sqrt(s2 + eps) with
// s2 the biased variance, and updates the running statistics:
// running_mean <- (1-m) running_mean + m mu and
// running_var <- (1-m) running_var + m s2 n/(n-1).
func (n *Net) bnReduceStats(ws *Workspace, p []float32, i int) {
	b := ws.b
	C, T := n.ins[i].C, n.ins[i].T
	o := n.offs[i]
	rm, rv := p[o.rm:o.rm+C], p[o.rv:o.rv+C]
	sa, sb := ws.sa[i], ws.sb[i]
	cnt := float64(b * T)
	for ch := 0; ch < C; ch++ {
		var sum float64
		for s := 0; s < b; s++ {
			sum += sa[s*C+ch]
		}
		mu := sum / float64(b)
		var ss float64
		for s := 0; s < b; s++ {
			d := sa[s*C+ch] - mu
			ss += sb[s*C+ch] + float64(T)*d*d
		}
		v := ss / cnt
		ws.mean[i][ch] = mu
		ws.istd[i][ch] = 1 / math.Sqrt(v+BNEps)
		unb := v
		if cnt > 1 {
			unb = ss / (cnt - 1)
		}
		rm[ch] = float32((1-BNMomentum)*float64(rm[ch]) + BNMomentum*mu)
		rv[ch] = float32((1-BNMomentum)*float64(rv[ch]) + BNMomentum*unb)
	}
}

// bnForward for sample s: xhat = (x - mu_c) istd_c and
// y = xhat gamma_c + beta_c, in float32, with (mu, 1/istd^2 - eps) the
// batch mean and biased variance over (batch, time) in train mode, or the
// running statistics in eval mode.
func (n *Net) bnForward(ws *Workspace, i int, p, in, out []float32, s int) {
	C, T := n.ins[i].C, n.ins[i].T
	o := n.offs[i]
	gamma, beta := p[o.w:o.w+C], p[o.b:o.b+C]
	mean, istd := ws.mean[i], ws.istd[i]
	xh := ws.xhat[i][s*C*T : (s+1)*C*T]
	for ch := 0; ch < C; ch++ {
		r := ch * T
		kern.Normalize(xh[r:r+T], out[r:r+T], in[r:r+T], float32(mean[ch]), float32(istd[ch]), gamma[ch], beta[ch])
	}
}

// bnGradSums stores sum_t dy and sum_t dy xhat of every channel of sample
// s at batchnorm layer i, dout being its output gradient.
func (n *Net) bnGradSums(ws *Workspace, i, s int, dout []float32) {
	C, T := n.ins[i].C, n.ins[i].T
	xh := ws.xhat[i][s*C*T : (s+1)*C*T]
	sd, sdx := ws.sa[i][s*C:(s+1)*C], ws.sb[i][s*C:(s+1)*C]
	for ch := 0; ch < C; ch++ {
		sd[ch], sdx[ch] = kern.SumDot64(dout[ch*T:(ch+1)*T], xh[ch*T:(ch+1)*T])
	}
}

// bnReduceGrad sums the per-sample sums of batchnorm layer i in sample
// order, adds dgamma = sum dy xhat and dbeta = sum dy to dParams (if not
// nil), and sets the train-mode backward coefficients gamma istd, mean(dy)
// and mean(dy xhat).
func (n *Net) bnReduceGrad(ws *Workspace, p, dParams []float32, i int) {
	b := ws.b
	C, T := n.ins[i].C, n.ins[i].T
	o := n.offs[i]
	cnt := float64(b * T)
	for ch := 0; ch < C; ch++ {
		var sd, sdx float64
		for s := 0; s < b; s++ {
			sd += ws.sa[i][s*C+ch]
			sdx += ws.sb[i][s*C+ch]
		}
		if dParams != nil {
			dParams[o.w+ch] += float32(sdx)
			dParams[o.b+ch] += float32(sd)
		}
		ws.gk[i][ch] = float32(float64(p[o.w+ch]) * ws.istd[i][ch])
		ws.gk[i][C+ch] = float32(sd / cnt)
		ws.gk[i][2*C+ch] = float32(sdx / cnt)
	}
}

// bnBackward for sample s. Eval mode: dx = dy gamma istd. Train mode (batch
// statistics): dx = gamma istd (dy - mean(dy) - xhat mean(dy xhat)), means
// over (batch, time) per channel, in float32. In both modes dgamma =
// sum dy xhat and dbeta = sum dy; in eval mode (where no batch-wide step
// computed them) their per-sample terms are stored when sums is set.
func (n *Net) bnBackward(ws *Workspace, i int, p, dout, din []float32, sums bool, s int) {
	C, T := n.ins[i].C, n.ins[i].T
	if !ws.train {
		if sums {
			n.bnGradSums(ws, i, s, dout)
		}
		if din == nil {
			return
		}
		o := n.offs[i]
		for ch := 0; ch < C; ch++ {
			k := float32(float64(p[o.w+ch]) * ws.istd[i][ch])
			r := ch * T
			copy(din[r:r+T], dout[r:r+T])
			kern.Scale(din[r:r+T], k)
		}
		return
	}
	if din == nil {
		return
	}
	xh := ws.xhat[i][s*C*T : (s+1)*C*T]
	gk := ws.gk[i]
	for ch := 0; ch < C; ch++ {
		r := ch * T
		kern.NormalizeGrad(din[r:r+T], dout[r:r+T], xh[r:r+T], gk[ch], gk[C+ch], gk[2*C+ch])
	}
}
