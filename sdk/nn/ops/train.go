package ops

import (
	"math"
	"math/rand/v2"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// TrainForward is batchnorm in training mode (PyTorch's BatchNorm1d in
// train()): with the statistics of each channel c over the batch and
// time, N = B*T values,
//
//	mu[c] = (1/N) sum_{b,t} x[b,c,t],  var[c] = (1/N) sum_{b,t} (x[b,c,t] - mu[c])^2,
//	r[c] = 1/sqrt(var[c] + Eps),       xh[b,c,t] = (x[b,c,t] - mu[c]) r[c],
//	y[b,c,t] = xh[b,c,t] gamma[c] + beta[c],
//
// it writes y to dst, or with relu set max(y, 0) (a ReLU that follows
// it, fused: the same bits as ReLU of y, one pass over memory fewer), and
// keeps mu (rounded to float32) in stats[:C], r rounded in stats[C:2C]
// and r's float64 bits in stats[2C:4C] (StatsLen: 4C values) for
// TrainBackward, which recomputes xh from x rather than keeping B*C*T
// values. It updates the running statistics in place with momentum m:
//
//	runMean[c] = (1 - m) runMean[c] + m mu[c]
//	runVar[c]  = (1 - m) runVar[c]  + m var[c] N/(N-1)   (N > 1; unchanged for N = 1)
//
// The sums are in float64 (row by row, rows in sample order), y in
// float32 (kern.NormalizeY, the ReLU in the same pass). gamma (beta) nil
// stands for ones (zeros).
func (n BatchNorm1D) TrainForward(dst, stats, x, gamma, beta, runMean, runVar []float32, T int, m float64, relu bool) {
	n.TrainForwardChannels(0, n.C, dst, stats, x, gamma, beta, runMean, runVar, T, m, relu)
}

// TrainForwardChannels is TrainForward of channels c0..c1-1 only (each
// channel's statistics are its own, so disjoint ranges may run at once).
func (n BatchNorm1D) TrainForwardChannels(c0, c1 int, dst, stats, x, gamma, beta, runMean, runVar []float32, T int, m float64, relu bool) {
	B := n.dims(len(x), len(runMean), len(runVar), T)
	if c0 < 0 || c1 > n.C || c0 > c1 {
		panic("ops: batchnorm channel range out of [0, C]")
	}
	need("batchnorm dst", len(dst), len(x))
	need("batchnorm stats", len(stats), n.StatsLen())
	needOpt("batchnorm gamma", gamma, n.C)
	needOpt("batchnorm beta", beta, n.C)
	N := float64(B * T)
	for c := c0; c < c1; c++ {
		var s float64
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			s += kern.Sum64(x[row : row+T])
		}
		mu := s / N
		var q float64
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			q += kern.SqDev64(x[row:row+T], mu)
		}
		v := q / N
		r := 1 / math.Sqrt(v+n.Eps)
		stats[c], stats[n.C+c] = float32(mu), float32(r)
		rb := math.Float64bits(r)
		stats[2*n.C+c], stats[3*n.C+c] = math.Float32frombits(uint32(rb>>32)), math.Float32frombits(uint32(rb))
		g, sh := affine(gamma, beta, c)
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			kern.NormalizeY(dst[row:row+T], x[row:row+T], float32(mu), float32(r), g, sh, relu)
		}
		runMean[c] = float32((1-m)*float64(runMean[c]) + m*mu)
		if N > 1 {
			runVar[c] = float32((1-m)*float64(runVar[c]) + m*v*N/(N-1))
		}
	}
}

// TrainBackward is the gradient of TrainForward through the batch
// statistics: with the channel means over the N = B*T values of dy and
// dy xh,
//
//	dx[b,c,t] = gamma[c] r[c] (dy[b,c,t] - mean(dy) - xh[b,c,t] mean(dy xh)),
//	dgamma[c] += sum dy xh,  dbeta[c] += sum dy,
//
// where xh is recomputed from x and stats as TrainForward wrote them (the
// same bits it had there); with z not nil the forward pass had relu set
// and z is its output: the dy above is then dz where z > 0 or z is NaN,
// else 0 (ReLUBackward's mask, fused: the same bits as ReLUBackward
// before an unfused call). Sums in float64, dx in float32
// (kern.NormalizeGrad); any of dx, dgamma, dbeta may be nil.
func (n BatchNorm1D) TrainBackward(dx, dgamma, dbeta, dy, x, z, gamma, stats []float32, T int) {
	n.TrainBackwardChannels(0, n.C, dx, dgamma, dbeta, dy, x, z, gamma, stats, T)
}

// StatsLen is the length of TrainForward's stats: 4C values.
func (n BatchNorm1D) StatsLen() int { return 4 * n.C }

// TrainBackwardChannels is TrainBackward of channels c0..c1-1 only.
func (n BatchNorm1D) TrainBackwardChannels(c0, c1 int, dx, dgamma, dbeta, dy, x, z, gamma, stats []float32, T int) {
	n.trainBackward(c0, c1, dx, dgamma, dbeta, dy, x, z, gamma, stats, T, bnKeepMax)
}

// bnKeepMax bounds the values TrainBackward keeps per channel between its
// two passes (xh and, with z, the masked dy of the channel's B rows): at
// most 1<<20 (4 MiB, a few times a core's L2); above it each row is
// recomputed in the second pass instead, with the same bits.
const bnKeepMax = 1 << 20

// trainBackward is TrainBackwardChannels keeping a channel's recomputed
// rows for the dx pass when they are at most keepMax values.
func (n BatchNorm1D) trainBackward(c0, c1 int, dx, dgamma, dbeta, dy, x, z, gamma, stats []float32, T, keepMax int) {
	if c0 < 0 || c1 > n.C || c0 > c1 {
		panic("ops: batchnorm channel range out of [0, C]")
	}
	if err := n.Check(); err != nil {
		panic("ops: " + err.Error())
	}
	positive("batchnorm T", T)
	B := len(x) / (n.C * T)
	need("batchnorm x", len(x), B*n.C*T)
	need("batchnorm stats", len(stats), n.StatsLen())
	need("batchnorm dy", len(dy), len(x))
	needOpt("batchnorm z", z, len(x))
	needOpt("batchnorm dx", dx, len(x))
	needOpt("batchnorm gamma", gamma, n.C)
	needOpt("batchnorm dgamma", dgamma, n.C)
	needOpt("batchnorm dbeta", dbeta, n.C)
	// The scratch holds per rows of xh and, with z, per rows of the
	// masked dy: a channel's B rows when they are kept for the dx pass
	// (at most keepMax values), else one.
	kinds := 1
	if z != nil {
		kinds = 2
	}
	per := 1
	if dx != nil && kinds*B*T <= keepMax {
		per = B
	}
	sc := rowPool.Get().(*rowScratch)
	defer rowPool.Put(sc)
	rows := sc.rows(T, kinds*per)
	N := float64(B * T)
	// stored is slot s's xh and the dy it goes with (with z, the masked
	// row of slot s; else row's own); recompute writes them for row.
	stored := func(row, s int) (d, xh []float32) {
		xh, d = rows[s*T:(s+1)*T], dy[row:row+T]
		if z != nil {
			d = rows[(per+s)*T : (per+s+1)*T]
		}
		return d, xh
	}
	recompute := func(row, s int, mu, r float32) (d, xh []float32) {
		d, xh = stored(row, s)
		kern.Center(xh, x[row:row+T], mu, r)
		if z != nil {
			kern.ReluGrad(d, dy[row:row+T], z[row:row+T])
		}
		return d, xh
	}
	for c := c0; c < c1; c++ {
		mu, r := stats[c], stats[n.C+c]
		var sd, sdx float64
		for b := 0; b < B; b++ {
			d, xh := recompute((b*n.C+c)*T, b%per, mu, r)
			a, e := kern.SumDot64(d, xh)
			sd += a
			sdx += e
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
		r64 := math.Float64frombits(uint64(math.Float32bits(stats[2*n.C+c]))<<32 | uint64(math.Float32bits(stats[3*n.C+c])))
		k, md, mdx := float32(g*r64), float32(sd/N), float32(sdx/N)
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			var d, xh []float32
			if per == B { // kept from the first pass (for B = 1 its one slot is this row's too)
				d, xh = stored(row, b)
			} else {
				d, xh = recompute(row, 0, mu, r)
			}
			kern.NormalizeGrad(dx[row:row+T], d, xh, k, md, mdx)
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
