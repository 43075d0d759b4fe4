package ops

import (
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// Linear is a dense layer (PyTorch's nn.Linear on (B, In)) with weights
// w of (Out, In), row-major, and an optional bias:
//
//	y[b,o] = bias[o] + sum_i w[o,i] x[b,i].
type Linear struct{ In, Out int }

// Forward writes y (dst, B*Out) from x (B*In); bias may be nil.
func (l Linear) Forward(dst, x, w, bias []float32) { linearForward(l, dst, x, w, bias) }

// Backward writes dx[b,i] = sum_o w[o,i] dy[b,o] and adds
// dw[o,i] += sum_b dy[b,o] x[b,i] and db[o] += sum_b dy[b,o]; any of dx, dw,
// db may be nil. Sample by sample in order, on sdk/nn's kernels: db by
// additions, dw by kern.Ger (fused multiply-adds on AVX2), dx by
// kern.GemvT (summed in increasing o).
func (l Linear) Backward(dx, dw, db, dy, x, w []float32) {
	B := l.batch(len(x), len(dy), len(w))
	needOpt("linear dx", dx, len(x))
	needOpt("linear dw", dw, len(w))
	needOpt("linear db", db, l.Out)
	for b := 0; b < B; b++ {
		g := dy[b*l.Out : (b+1)*l.Out]
		if db != nil {
			for o, v := range g {
				db[o] += v
			}
		}
		if dw != nil {
			kern.Ger(dw, l.In, g, x[b*l.In:(b+1)*l.In])
		}
		if dx != nil {
			kern.GemvT(dx[b*l.In:(b+1)*l.In], w, l.In, g)
		}
	}
}

// batch checks the sizes of a call on B samples, x of nx values, y (the
// output or its gradient) of ny, w of nw, and returns B.
func (l Linear) batch(nx, ny, nw int) int {
	positive("linear In", l.In)
	positive("linear Out", l.Out)
	B := nx / l.In
	need("linear x", nx, B*l.In)
	need("linear y", ny, B*l.Out)
	need("linear w", nw, l.Out*l.In)
	return B
}

// ForwardDot is Forward summed as sdk/nn's dot kernel sums,
//
//	y[b,o] = bias[o] + kern.Dot(w[o,:], x[b,:])
//
// (fused multiply-adds in 4 x 8 partial sums on AVX2): a training pass's
// arithmetic, the layer-list engine's. bias may be nil (0).
func (l Linear) ForwardDot(dst, x, w, bias []float32) {
	B := l.batch(len(x), len(dst), len(w))
	needOpt("linear bias", bias, l.Out)
	for b := 0; b < B; b++ {
		xb := x[b*l.In : (b+1)*l.In]
		for o := 0; o < l.Out; o++ {
			var b0 float32
			if bias != nil {
				b0 = bias[o]
			}
			dst[b*l.Out+o] = b0 + kern.Dot(w[o*l.In:(o+1)*l.In], xb)
		}
	}
}

func linearForward[F Float](l Linear, dst, x, w, bias []F) {
	B := l.batch(len(x), len(dst), len(w))
	needOptF("linear bias", bias, l.Out)
	for b := 0; b < B; b++ {
		xb := x[b*l.In : (b+1)*l.In]
		for o := 0; o < l.Out; o++ {
			v := dot(w[o*l.In:(o+1)*l.In], xb)
			if bias != nil {
				v += bias[o]
			}
			dst[b*l.Out+o] = v
		}
	}
}

func linearBackward[F Float](l Linear, dx, dw, db, dy, x, w []F) {
	B := l.batch(len(x), len(dy), len(w))
	needOptF("linear dx", dx, len(x))
	needOptF("linear dw", dw, len(w))
	needOptF("linear db", db, l.Out)
	if dx != nil {
		clear(dx)
	}
	for b := 0; b < B; b++ {
		xb := x[b*l.In : (b+1)*l.In]
		for o := 0; o < l.Out; o++ {
			g := dy[b*l.Out+o]
			if db != nil {
				db[o] += g
			}
			if dw != nil {
				axpy(dw[o*l.In:(o+1)*l.In], xb, g)
			}
			if dx != nil {
				axpy(dx[b*l.In:(b+1)*l.In], w[o*l.In:(o+1)*l.In], g)
			}
		}
	}
}

// BatchNorm1D is PyTorch's BatchNorm1d in eval mode on (B, C, T): with the
// running mean mu and variance v of each channel,
//
//	y[b,c,t] = (x[b,c,t] - mu[c]) r[c] gamma[c] + beta[c],  r[c] = 1/sqrt(v[c] + Eps),
//
// r computed in float64. gamma (beta) nil stands for ones (zeros), as
// affine=False. The float32 Forward rounds x - mu, its product with r (r
// rounded to float32), the product with gamma and the sum with beta each
// to float32 (sdk/nn's Normalize kernel). Eps is PyTorch's eps (1e-5 by default).
type BatchNorm1D struct {
	C   int
	Eps float64
}

// Check reports whether the batchnorm is valid: C >= 1, Eps >= 0.
func (n BatchNorm1D) Check() error {
	if n.C < 1 || !(n.Eps >= 0) || math.IsInf(n.Eps, 0) {
		return fmt.Errorf("batchnorm1d: %d channels, eps %g; need channels >= 1 and a finite eps >= 0", n.C, n.Eps)
	}
	return nil
}

// Forward writes y (dst) from x (both B*C*T values).
func (n BatchNorm1D) Forward(dst, x, gamma, beta, mean, variance []float32, T int) {
	bnForward32(n, dst, x, gamma, beta, mean, variance, T)
}

// Backward writes dx[b,c,t] = dy[b,c,t] gamma[c] r[c] and adds
// dgamma[c] += sum_{b,t} dy[b,c,t] (x[b,c,t] - mu[c]) r[c] and
// dbeta[c] += sum_{b,t} dy[b,c,t] (sums in float64); any of dx, dgamma,
// dbeta may be nil. The running statistics are constants here.
func (n BatchNorm1D) Backward(dx, dgamma, dbeta, dy, x, gamma, mean, variance []float32, T int) {
	bnBackward(n, dx, dgamma, dbeta, dy, x, gamma, mean, variance, T)
}

func (n BatchNorm1D) dims(x, mean, variance int, T int) int {
	if err := n.Check(); err != nil {
		panic("ops: " + err.Error())
	}
	positive("batchnorm T", T)
	B := x / (n.C * T)
	need("batchnorm x", x, B*n.C*T)
	need("batchnorm mean", mean, n.C)
	need("batchnorm variance", variance, n.C)
	return B
}

func bnForward[F Float](n BatchNorm1D, dst, x, gamma, beta, mean, variance []F, T int) {
	B := n.dims(len(x), len(mean), len(variance), T)
	need("batchnorm dst", len(dst), len(x))
	needOptF("batchnorm gamma", gamma, n.C)
	needOptF("batchnorm beta", beta, n.C)
	for c := 0; c < n.C; c++ {
		scale := 1 / math.Sqrt(float64(variance[c])+n.Eps)
		if gamma != nil {
			scale *= float64(gamma[c])
		}
		var shift float64
		if beta != nil {
			shift = float64(beta[c])
		}
		mu := float64(mean[c])
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			for t := row; t < row+T; t++ {
				dst[t] = F((float64(x[t])-mu)*scale + shift)
			}
		}
	}
}

func bnBackward[F Float](n BatchNorm1D, dx, dgamma, dbeta, dy, x, gamma, mean, variance []F, T int) {
	B := n.dims(len(x), len(mean), len(variance), T)
	need("batchnorm dy", len(dy), len(x))
	needOptF("batchnorm dx", dx, len(x))
	needOptF("batchnorm gamma", gamma, n.C)
	needOptF("batchnorm dgamma", dgamma, n.C)
	needOptF("batchnorm dbeta", dbeta, n.C)
	for c := 0; c < n.C; c++ {
		r := 1 / math.Sqrt(float64(variance[c])+n.Eps)
		g := 1.0
		if gamma != nil {
			g = float64(gamma[c])
		}
		mu := float64(mean[c])
		var sg, sb float64
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			for t := row; t < row+T; t++ {
				d := float64(dy[t])
				sb += d
				sg += d * (float64(x[t]) - mu) * r
				if dx != nil {
					dx[t] = F(d * g * r)
				}
			}
		}
		if dgamma != nil {
			dgamma[c] += F(sg)
		}
		if dbeta != nil {
			dbeta[c] += F(sb)
		}
	}
}

// ForwardColumns is Forward on n inputs laid out as the columns of x (In
// x n, input j in column j), writing the outputs as the columns of dst
// (Out x n), with the bits of Forward: each output is summed in dot's
// order (kern.DotCols), many columns at a time instead of one input at a
// time, then the bias added.
func (l Linear) ForwardColumns(dst, x, w, bias []float32, n int) {
	l.columns(len(x), len(dst), len(w), n)
	needOptF("linear bias", bias, l.Out)
	for o := 0; o < l.Out; o++ {
		y := dst[o*n : (o+1)*n]
		kern.DotCols(y, x, n, w[o*l.In:(o+1)*l.In])
		if bias != nil {
			for j := range y {
				y[j] += bias[o]
			}
		}
	}
}

// columns checks the sizes of a call on n columns: x of nx values, dst
// of nd, w of nw.
func (l Linear) columns(nx, nd, nw, n int) {
	positive("linear In", l.In)
	positive("linear Out", l.Out)
	need("linear x", nx, l.In*n)
	need("linear dst", nd, l.Out*n)
	need("linear w", nw, l.Out*l.In)
}

// ForwardColumnsFMA is ForwardColumns up to float32 rounding: the
// outputs of many columns at a time by the convolution kernel of one tap
// (kern.ConvMultiBias, fused multiply-adds in its order, the bias
// first), not in dot's order. Callers that need Forward's bits use
// ForwardColumns.
func (l Linear) ForwardColumnsFMA(dst, x, w, bias []float32, n int) {
	l.columns(len(x), len(dst), len(w), n)
	needOptF("linear bias", bias, l.Out)
	if n == 0 {
		return
	}
	if bias == nil {
		clear(dst[:l.Out*n])
		kern.ConvMulti(dst, n, x, n, w, l.Out, l.In, 1, n)
		return
	}
	kern.ConvMultiBias(dst, nil, n, x, n, w, nil, bias, l.Out, l.In, 1, n)
}
