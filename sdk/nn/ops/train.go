package ops

import (
	"math"
	"math/rand/v2"
)

// TrainForward is batchnorm in training mode (PyTorch's BatchNorm1d in
// train()): with the statistics of each channel c over the batch and
// time, N = B*T values,
//
//	mu[c] = (1/N) sum_{b,t} x[b,c,t],  var[c] = (1/N) sum_{b,t} (x[b,c,t] - mu[c])^2,
//	r[c] = 1/sqrt(var[c] + Eps),       y[b,c,t] = (x[b,c,t] - mu[c]) r[c] gamma[c] + beta[c],
//
// it writes y to dst, mu to mean and r to inv (C values each, for
// TrainBackward), and updates the running statistics in place with
// momentum m:
//
//	runMean[c] = (1 - m) runMean[c] + m mu[c]
//	runVar[c]  = (1 - m) runVar[c]  + m var[c] N/(N-1)   (N > 1; unchanged for N = 1)
//
// Sums are in float64. gamma (beta) nil stands for ones (zeros).
func (n BatchNorm1D) TrainForward(dst, mean, inv, x, gamma, beta, runMean, runVar []float32, T int, m float64) {
	B := n.dims(len(x), len(runMean), len(runVar), T)
	need("batchnorm dst", len(dst), len(x))
	need("batchnorm mean", len(mean), n.C)
	need("batchnorm inv", len(inv), n.C)
	needOpt("batchnorm gamma", gamma, n.C)
	needOpt("batchnorm beta", beta, n.C)
	N := float64(B * T)
	for c := 0; c < n.C; c++ {
		var s float64
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			for _, v := range x[row : row+T] {
				s += float64(v)
			}
		}
		mu := s / N
		var q float64
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			for _, v := range x[row : row+T] {
				d := float64(v) - mu
				q += d * d
			}
		}
		v := q / N
		r := 1 / math.Sqrt(v+n.Eps)
		mean[c], inv[c] = float32(mu), float32(r)
		scale, shift := r, 0.0
		if gamma != nil {
			scale *= float64(gamma[c])
		}
		if beta != nil {
			shift = float64(beta[c])
		}
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			for t := row; t < row+T; t++ {
				dst[t] = float32((float64(x[t])-mu)*scale + shift)
			}
		}
		runMean[c] = float32((1-m)*float64(runMean[c]) + m*mu)
		if N > 1 {
			runVar[c] = float32((1-m)*float64(runVar[c]) + m*v*N/(N-1))
		}
	}
}

// TrainBackward is the gradient of TrainForward through the batch
// statistics: with xhat = (x - mu) r and the channel means over the N =
// B*T values of dy and dy xhat,
//
//	dx[b,c,t] = gamma[c] r[c] (dy[b,c,t] - mean(dy) - xhat[b,c,t] mean(dy xhat)),
//	dgamma[c] += sum dy xhat,  dbeta[c] += sum dy,
//
// mean and inv as TrainForward wrote them; any of dx, dgamma, dbeta may
// be nil.
func (n BatchNorm1D) TrainBackward(dx, dgamma, dbeta, dy, x, gamma, mean, inv []float32, T int) {
	B := n.dims(len(x), len(mean), len(inv), T)
	need("batchnorm dy", len(dy), len(x))
	needOpt("batchnorm dx", dx, len(x))
	needOpt("batchnorm gamma", gamma, n.C)
	needOpt("batchnorm dgamma", dgamma, n.C)
	needOpt("batchnorm dbeta", dbeta, n.C)
	N := float64(B * T)
	for c := 0; c < n.C; c++ {
		mu, r := float64(mean[c]), float64(inv[c])
		var sd, sdx float64
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			for t := row; t < row+T; t++ {
				d := float64(dy[t])
				sd += d
				sdx += d * (float64(x[t]) - mu) * r
			}
		}
		if dgamma != nil {
			dgamma[c] += float32(sdx)
		}
		if dbeta != nil {
			dbeta[c] += float32(sd)
		}
		if dx == nil {
			continue
		}
		g := 1.0
		if gamma != nil {
			g = float64(gamma[c])
		}
		md, mdx := sd/N, sdx/N
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			for t := row; t < row+T; t++ {
				xh := (float64(x[t]) - mu) * r
				dx[t] = float32(g * r * (float64(dy[t]) - md - xh*mdx))
			}
		}
	}
}

// DropoutMask writes inverted dropout's mask of probability p: each
// value is 0 with probability p and 1/(1-p) otherwise, drawn from rnd in
// order (0 <= p < 1; p = 0 gives ones without drawing).
func DropoutMask(mask []float32, p float64, rnd *rand.Rand) {
	if p == 0 {
		for i := range mask {
			mask[i] = 1
		}
		return
	}
	keep := float32(1 / (1 - p))
	for i := range mask {
		if rnd.Float64() < p {
			mask[i] = 0
		} else {
			mask[i] = keep
		}
	}
}

// Mul writes dst[i] = x[i] m[i] (dropout's forward and backward with its
// mask m).
func Mul(dst, x, m []float32) {
	need("mul x", len(x), len(dst))
	need("mul m", len(m), len(dst))
	for i := range dst {
		dst[i] = x[i] * m[i]
	}
}
