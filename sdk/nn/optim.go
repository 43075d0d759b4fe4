package nn

import (
	"math"
	"math/rand/v2"
)

// Softmax writes p_j = exp(z_j - max z) / sum_k exp(z_k - max z) for each
// row of classes values.
func Softmax(dst, z []float32, classes int) {
	for r := 0; r+classes <= len(z); r += classes {
		zr, pr := z[r:r+classes], dst[r:r+classes]
		m := zr[0]
		for _, v := range zr[1:] {
			m = max(m, v)
		}
		var s float64
		for j, v := range zr {
			e := math.Exp(float64(v - m))
			pr[j] = float32(e)
			s += e
		}
		inv := 1 / s
		for j := range pr {
			pr[j] = float32(float64(pr[j]) * inv)
		}
	}
}

// CrossEntropy returns the mean cross-entropy
// L = (1/B) sum_b [log sum_j exp z_bj - z_{b,y_b}] of a batch of logits, and
// writes dL/dz = (softmax(z_b) - e_{y_b}) / B into dz if it is not nil.
func CrossEntropy(dz, z []float32, y []int, classes int) float64 {
	b := len(y)
	var loss float64
	for r := 0; r < b; r++ {
		zr := z[r*classes : (r+1)*classes]
		m := zr[0]
		for _, v := range zr[1:] {
			m = max(m, v)
		}
		var s float64
		for _, v := range zr {
			s += math.Exp(float64(v - m))
		}
		lse := float64(m) + math.Log(s)
		loss += lse - float64(zr[y[r]])
		if dz != nil {
			dr := dz[r*classes : (r+1)*classes]
			for j, v := range zr {
				dr[j] = float32(math.Exp(float64(v)-lse) / float64(b))
			}
			dr[y[r]] -= float32(1 / float64(b))
		}
	}
	return loss / float64(b)
}

// Adam is torch.optim.Adam (amsgrad off) with weight decay added to the
// gradient (L2, not AdamW). At step t, for every trainable entry:
//
//	g' = g + wd θ
//	m = β1 m + (1-β1) g'
//	v = β2 v + (1-β2) g'²
//	θ = θ - (lr / (1-β1^t)) m / (sqrt(v)/sqrt(1-β2^t) + eps)
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	m, v                               []float32
	t                                  int
	mask                               []bool
}

// NewAdam returns an optimizer for a layout; buffers (running statistics)
// are never updated.
func NewAdam(l *Layout, cfg TrainConfig) *Adam {
	return &Adam{LR: cfg.LR, Beta1: cfg.Beta1, Beta2: cfg.Beta2, Eps: cfg.Eps, WeightDecay: cfg.WeightDecay,
		m: make([]float32, l.Size), v: make([]float32, l.Size), mask: l.TrainableMask()}
}

// Step applies one update to p with gradient g.
func (a *Adam) Step(p, g []float32) {
	a.t++
	b1, b2 := float32(a.Beta1), float32(a.Beta2)
	bc1 := 1 - math.Pow(a.Beta1, float64(a.t))
	bc2 := math.Sqrt(1 - math.Pow(a.Beta2, float64(a.t)))
	step := float32(a.LR / bc1)
	wd, eps, sb2 := float32(a.WeightDecay), float32(a.Eps), float32(bc2)
	for i, gi := range g {
		if !a.mask[i] {
			continue
		}
		gi += wd * p[i]
		a.m[i] = b1*a.m[i] + (1-b1)*gi
		a.v[i] = b2*a.v[i] + (1-b2)*gi*gi
		den := float32(math.Sqrt(float64(a.v[i])))/sb2 + eps
		p[i] -= step * a.m[i] / den
	}
}

// Init writes PyTorch's default initialisation into p: conv and dense
// weights and biases ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (kaiming_uniform
// with a = sqrt(5)), batchnorm weight 1, bias 0, running mean 0, running
// variance 1.
func Init(l *Layout, p []float32, rnd *rand.Rand) {
	for _, t := range l.Tensors {
		v := p[t.Offset : t.Offset+t.Size]
		switch {
		case hasSuffix(t.Name, ".running_var"):
			fill(v, 1)
		case hasSuffix(t.Name, ".running_mean"):
			fill(v, 0)
		case len(t.Shape) == 1 && isBN(l, t.Name):
			if hasSuffix(t.Name, ".weight") {
				fill(v, 1)
			} else {
				fill(v, 0)
			}
		default:
			w, _ := l.Lookup(t.Name[:len(t.Name)-len(suffix(t.Name))] + ".weight")
			fanIn := 1
			for _, d := range w.Shape[1:] {
				fanIn *= d
			}
			bound := 1 / math.Sqrt(float64(fanIn))
			for i := range v {
				v[i] = float32((2*rnd.Float64() - 1) * bound)
			}
		}
	}
}

func isBN(l *Layout, name string) bool {
	_, ok := l.Lookup(name[:len(name)-len(suffix(name))] + ".running_mean")
	return ok
}

func suffix(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			return name[i:]
		}
	}
	return ""
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

func fill(v []float32, x float32) {
	for i := range v {
		v[i] = x
	}
}
