package ops

import "math"

// The pointwise activations below take dst and x of the same length; dst
// may be x. Their backward passes write dx[j] = dy[j] f'(x[j]) from the
// forward input x; dx may be dy. Each value is computed in float64 and
// rounded once.

// ReLU: y = max(x, 0); a NaN passes (PyTorch's relu), -0 may stay -0.
func ReLU(dst, x []float32) { relu32(dst, x) }

// ReLUBackward: dx = dy if x > 0 or x is NaN, else 0 (PyTorch's
// threshold_backward: no gradient at 0).
func ReLUBackward(dx, dy, x []float32) { reluBackward32(dx, dy, x) }

// LeakyReLU: y = x if x > 0, else slope*x.
func LeakyReLU(dst, x []float32, slope float32) { leakyForward(dst, x, float64(slope)) }

// LeakyReLUBackward: dx = dy if x > 0, else slope*dy (PyTorch's convention
// at 0).
func LeakyReLUBackward(dx, dy, x []float32, slope float32) {
	leakyBackward(dx, dy, x, float64(slope))
}

// GELU is the exact GELU (PyTorch's approximate='none'; ONNX's Erf form):
// y = x Phi(x) = x (1 + erf(x/sqrt 2)) / 2.
func GELU(dst, x []float32) { pointwise(dst, x, gelu) }

// GELUBackward: dx = dy (Phi(x) + x phi(x)), phi(x) = exp(-x^2/2)/sqrt(2 pi).
func GELUBackward(dx, dy, x []float32) { pointwiseGrad(dx, dy, x, geluGrad) }

// SiLU: y = x sigmoid(x).
func SiLU(dst, x []float32) { pointwise(dst, x, silu) }

// SiLUBackward: dx = dy s (1 + x (1 - s)), s = sigmoid(x).
func SiLUBackward(dx, dy, x []float32) { pointwiseGrad(dx, dy, x, siluGrad) }

// Sigmoid: y = 1 / (1 + exp(-x)).
func Sigmoid(dst, x []float32) { pointwise(dst, x, sigmoid) }

// SigmoidBackward: dx = dy s (1 - s), s = sigmoid(x).
func SigmoidBackward(dx, dy, x []float32) { pointwiseGrad(dx, dy, x, sigmoidGrad) }

// Tanh: y = tanh(x).
func Tanh(dst, x []float32) { pointwise(dst, x, math.Tanh) }

// TanhBackward: dx = dy (1 - tanh(x)^2).
func TanhBackward(dx, dy, x []float32) { pointwiseGrad(dx, dy, x, tanhGrad) }

func relu(x float64) float64 {
	if x > 0 || x != x {
		return x
	}
	return 0
}

func reluGrad(x float64) float64 {
	if x > 0 || x != x {
		return 1
	}
	return 0
}

func gelu(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

func geluGrad(x float64) float64 {
	return 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func sigmoidGrad(x float64) float64 { s := sigmoid(x); return s * (1 - s) }

func silu(x float64) float64 { return x * sigmoid(x) }

func siluGrad(x float64) float64 { s := sigmoid(x); return s * (1 + x*(1-s)) }

func tanhGrad(x float64) float64 { t := math.Tanh(x); return 1 - t*t }

func pointwise[F Float](dst, x []F, f func(float64) float64) {
	need("activation dst", len(dst), len(x))
	for j, v := range x {
		dst[j] = F(f(float64(v)))
	}
}

func pointwiseGrad[F Float](dx, dy, x []F, f func(float64) float64) {
	need("activation dy", len(dy), len(x))
	need("activation dx", len(dx), len(x))
	for j, v := range x {
		dx[j] = F(float64(dy[j]) * f(float64(v)))
	}
}

func leakyForward[F Float](dst, x []F, slope float64) {
	need("activation dst", len(dst), len(x))
	for j, v := range x {
		if v > 0 {
			dst[j] = v
		} else {
			dst[j] = F(slope * float64(v))
		}
	}
}

func leakyBackward[F Float](dx, dy, x []F, slope float64) {
	need("activation dy", len(dy), len(x))
	need("activation dx", len(dx), len(x))
	for j, v := range x {
		if v > 0 {
			dx[j] = dy[j]
		} else {
			dx[j] = F(slope * float64(dy[j]))
		}
	}
}

// Softmax over the C channels of every (sample, step), in float64:
//
//	y[b,c,t] = exp(x[b,c,t] - m) / sum_j exp(x[b,j,t] - m),  m = max_j x[b,j,t].
//
// x and dst hold B*C*T values (T = 1 for a vector of logits per sample).
func Softmax(dst, x []float32, C, T int) { softmaxForward(dst, x, C, T) }

// SoftmaxBackward writes, from the forward OUTPUT y,
//
//	dx[b,c,t] = y[b,c,t] (dy[b,c,t] - sum_j dy[b,j,t] y[b,j,t]).
func SoftmaxBackward(dx, dy, y []float32, C, T int) { softmaxBackward(dx, dy, y, C, T) }

func softmaxForward[F Float](dst, x []F, C, T int) {
	positive("softmax C", C)
	positive("softmax T", T)
	B := len(x) / (C * T)
	need("softmax x", len(x), B*C*T)
	need("softmax dst", len(dst), len(x))
	for b := 0; b < B; b++ {
		base := b * C * T
		for t := 0; t < T; t++ {
			m := math.Inf(-1)
			for c := 0; c < C; c++ {
				m = max(m, float64(x[base+c*T+t]))
			}
			var s float64
			for c := 0; c < C; c++ {
				s += math.Exp(float64(x[base+c*T+t]) - m)
			}
			for c := 0; c < C; c++ {
				dst[base+c*T+t] = F(math.Exp(float64(x[base+c*T+t])-m) / s)
			}
		}
	}
}

func softmaxBackward[F Float](dx, dy, y []F, C, T int) {
	positive("softmax C", C)
	positive("softmax T", T)
	B := len(y) / (C * T)
	need("softmax y", len(y), B*C*T)
	need("softmax dy", len(dy), len(y))
	need("softmax dx", len(dx), len(y))
	for b := 0; b < B; b++ {
		base := b * C * T
		for t := 0; t < T; t++ {
			var s float64
			for c := 0; c < C; c++ {
				s += float64(dy[base+c*T+t]) * float64(y[base+c*T+t])
			}
			for c := 0; c < C; c++ {
				j := base + c*T + t
				dx[j] = F(float64(y[j]) * (float64(dy[j]) - s))
			}
		}
	}
}
