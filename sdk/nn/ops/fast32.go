package ops

import (
	"math"
	"sync"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// Float32 paths of the other ops that profile hot in the graph networks
// (ReLU, batchnorm, stride-1 max pooling, global average pooling), on the
// vector kernels of sdk/nn. The generic loops stay the float64 reference.

// relu32: dst = max(x, 0) with NaN passed on (kern.Relu).
func relu32(dst, x []float32) {
	need("activation dst", len(dst), len(x))
	kern.Relu(dst, x)
}

// reluBackward32: dx = dy where x > 0 or x is NaN, else 0 (kern.ReluGrad
// with the input in place of the output: the two have the same sign).
func reluBackward32(dx, dy, x []float32) {
	need("activation dy", len(dy), len(x))
	need("activation dx", len(dx), len(x))
	kern.ReluGrad(dx, dy, x)
}

type rowScratch struct{ buf []float32 }

// rows is the scratch as k rows of T values, grown if need be.
func (s *rowScratch) rows(T, k int) []float32 {
	if cap(s.buf) < k*T {
		s.buf = make([]float32, k*T)
	}
	return s.buf[:k*T]
}

var rowPool = sync.Pool{New: func() any { return new(rowScratch) }}

// bnForward32 is BatchNorm1D.Forward with kern.NormalizeY on each row:
// xh = (x - mu) r, y = xh gamma + beta, each operation rounded to
// float32 (r = 1/sqrt(v + Eps) computed in float64, then rounded).
func bnForward32(n BatchNorm1D, dst, x, gamma, beta, mean, variance []float32, T int) {
	B := n.dims(len(x), len(mean), len(variance), T)
	need("batchnorm dst", len(dst), len(x))
	needOpt("batchnorm gamma", gamma, n.C)
	needOpt("batchnorm beta", beta, n.C)
	for c := 0; c < n.C; c++ {
		r := float32(1 / math.Sqrt(float64(variance[c])+n.Eps))
		g, sh := affine(gamma, beta, c)
		for b := 0; b < B; b++ {
			row := (b*n.C + c) * T
			kern.NormalizeY(dst[row:row+T], x[row:row+T], mean[c], r, g, sh, false)
		}
	}
}

// maxPoolForward32 is MaxPool1D.Forward with kern.MaxPool on the steps
// whose window lies inside the input, for stride 1. kern.MaxPool skips a
// NaN that is not first in its window, where PyTorch propagates it, so a
// row whose sum is not finite (a NaN, or infinities) takes the generic
// loop.
func maxPoolForward32(m MaxPool1D, dst []float32, idx []int32, x []float32, T int) {
	if m.Stride != 1 {
		maxPoolForward(m, dst, idx, x, T)
		return
	}
	L := mustPool(m.Kernel, m.Stride, m.Pad, T)
	rows := len(x) / T
	need("maxpool x", len(x), rows*T)
	need("maxpool dst", len(dst), rows*L)
	need("maxpool idx", len(idx), rows*L)
	one := MaxPool1D{Kernel: m.Kernel, Stride: 1, Pad: m.Pad}
	// interior: t - Pad >= 0 and t - Pad + Kernel <= T
	lo, hi := m.Pad, min(L, T-m.Kernel+m.Pad+1)
	for r := 0; r < rows; r++ {
		xr, yr, ir := x[r*T:(r+1)*T], dst[r*L:(r+1)*L], idx[r*L:(r+1)*L]
		if s := kern.Sum(xr); hi <= lo || s-s != 0 {
			maxPoolForward(one, yr, ir, xr, T)
			continue
		}
		kern.MaxPool(yr[lo:hi], ir[lo:hi], xr, m.Kernel)
		for t := 0; t < L; t++ {
			if t == lo {
				t = hi - 1
				continue
			}
			a, b := max(t-m.Pad, 0), min(t-m.Pad+m.Kernel, T)
			best, at := xr[a], a
			for u := a + 1; u < b; u++ {
				if xr[u] > best {
					best, at = xr[u], u
				}
			}
			yr[t], ir[t] = best, int32(at)
		}
	}
}

// globalAvg32: dst[r] = (sum_t x[r,t]) / T, the sum in float64
// (kern.Sum64).
func globalAvg32(dst, x []float32, T int) {
	positive("global pool T", T)
	need("global pool x", len(x), len(dst)*T)
	for r := range dst {
		dst[r] = float32(kern.Sum64(x[r*T:(r+1)*T]) / float64(T))
	}
}

// affine is channel c's scale and shift: gamma[c] and beta[c], or 1 and 0
// where gamma or beta is nil.
func affine(gamma, beta []float32, c int) (g, sh float32) {
	g, sh = 1, 0
	if gamma != nil {
		g = gamma[c]
	}
	if beta != nil {
		sh = beta[c]
	}
	return g, sh
}
