package metric

import (
	"context"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/rng"
)

// RandomLogit is Quantus's RandomLogit (Sixt et al. 2020): the map of the
// record's class y against the map of a class y_off != y drawn uniformly
// from the record's key,
//
//	score = similarity(â_y, â_{y_off})
//
// with similarity_func "ssim" (the structural similarity of the two maps
// as one vector: windows of 7, sample covariances, L the range of both
// maps, the mean over the windows inside the vector, as scikit-image's
// structural_similarity), "spearman" or "cosine". Lower: the map depends
// on the class it explains.
func RandomLogit() Entry {
	info := Info{
		ID: "metric.random_logit", Quantus: "RandomLogit", Category: Randomisation,
		Needs: Needs{Model: true, Explain: true}, Higher: false,
		Summary: "similarity of the map to the map of a random other class (lower: the map depends on the class)",
		Params: append([]Param{
			{Name: "num_classes", Default: nil, Doc: "classes the other class is drawn from (default: the model's)"},
			{Name: "similarity_func", Default: "ssim", Doc: `"ssim", "spearman" or "cosine"`},
		}, prepParamList(true, false)...),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		m := &randomLogit{info: info}
		var err error
		if m.prep, err = prepParams(cfg, true, false); err != nil {
			return nil, err
		}
		if _, ok := cfg["num_classes"]; ok {
			if m.classes, err = cfg.IntRange("num_classes", 0, 2, 1<<24); err != nil {
				return nil, err
			}
		}
		if m.sim, err = similarityParam(cfg, "ssim"); err != nil {
			return nil, err
		}
		return m, nil
	}}
}

type randomLogit struct {
	prep
	info    Info
	classes int // 0: the model's
	sim     similarity
}

func (m *randomLogit) Info() Info { return m.info }

func (m *randomLogit) Score(ctx context.Context, in *Input, dst []Score) error {
	if err := in.Check(m.info); err != nil {
		return err
	}
	K := m.classes
	if K == 0 {
		K = in.Model.Classes()
	}
	if K > in.Model.Classes() {
		return fmt.Errorf("%s: num_classes = %d, but the model has %d classes", m.info.ID, K, in.Model.Classes())
	}
	off := make([]int, in.N)
	for i, y := range in.Targets {
		if y >= K {
			return fmt.Errorf("%s: record %d: target %d is not below num_classes = %d", m.info.ID, i, y, K)
		}
		j := rng.For(in.key(i), m.info.ID, "", 0, 0).IntN(K - 1)
		if j >= y {
			j++ // the K-1 classes other than y, in order
		}
		off[i] = j
	}
	return m.scoreOff(ctx, in, off, dst)
}

// scoreOff scores the records against the maps of the classes off.
func (m *randomLogit) scoreOff(ctx context.Context, in *Input, off []int, dst []Score) error {
	n := in.Len()
	maps := make([]float64, in.N*n)
	if err := explainAll(ctx, in, in.X, off, maps); err != nil {
		return fmt.Errorf("%s: %w", m.info.ID, err)
	}
	a := m.maps(in)
	b := m.maps(&Input{N: in.N, C: in.C, T: in.T, Maps: maps})
	for i := range in.N {
		dst[i] = m.sim(a[i*n:(i+1)*n], b[i*n:(i+1)*n])
	}
	return nil
}

// similarity compares two maps.
type similarity func(a, b []float64) Score

// similarityParam reads similarity_func.
func similarityParam(cfg sdk.Config, def string) (similarity, error) {
	s, err := cfg.String("similarity_func", def)
	if err != nil {
		return nil, err
	}
	switch s {
	case "ssim":
		return ssim, nil
	case "spearman":
		return func(a, b []float64) Score { r, ok := spearman(a, b); return correlated(r, ok, "a map") }, nil
	case "cosine":
		return cosine, nil
	}
	return nil, fmt.Errorf(`similarity_func = %s: want "ssim", "spearman" or "cosine"`, sdk.Quote(s))
}

// ssim is the structural similarity of a and b as vectors (scikit-image's
// structural_similarity with win_size 7, uniform windows, sample
// covariances): with the means, variances and covariance mu, s^2, s_ab of
// the window around t, L = max(a, b) - min(a, b), C1 = (0.01 L)^2, C2 =
// (0.03 L)^2,
//
//	S_t = (2 mu_a mu_b + C1)(2 s_ab + C2) / ((mu_a^2 + mu_b^2 + C1)(s_a^2 + s_b^2 + C2))
//
// and the score is the mean of S_t over the windows inside the vector
// (t = 3 .. n-4). Undefined for vectors shorter than 7 or of zero range.
func ssim(a, b []float64) Score {
	const win, pad = 7, 3
	n := len(a)
	if n < win {
		return undefined(fmt.Sprintf("maps of %d values: SSIM needs %d", n, win), nil)
	}
	lo, hi := a[0], a[0]
	for j := range n {
		lo, hi = min(lo, a[j], b[j]), max(hi, a[j], b[j])
	}
	L := hi - lo
	if L == 0 {
		return undefined("both maps are one constant: no range", nil)
	}
	c1, c2 := (0.01*L)*(0.01*L), (0.03*L)*(0.03*L)
	const norm = float64(win) / (win - 1)
	var sum float64
	for t := pad; t < n-pad; t++ {
		var ma, mb, maa, mbb, mab float64
		for _, j := range [win]int{t - 3, t - 2, t - 1, t, t + 1, t + 2, t + 3} {
			ma += a[j]
			mb += b[j]
			maa += a[j] * a[j]
			mbb += b[j] * b[j]
			mab += a[j] * b[j]
		}
		ma, mb, maa, mbb, mab = ma/win, mb/win, maa/win, mbb/win, mab/win
		va, vb, vab := norm*(maa-ma*ma), norm*(mbb-mb*mb), norm*(mab-ma*mb)
		sum += (2*ma*mb + c1) * (2*vab + c2) / ((ma*ma + mb*mb + c1) * (va + vb + c2))
	}
	return Score{Value: sum / float64(n-2*pad)}
}

// cosine is a . b / (|a| |b|), undefined for a zero map.
func cosine(a, b []float64) Score {
	var ab, aa, bb float64
	for j := range a {
		ab += a[j] * b[j]
		aa += a[j] * a[j]
		bb += b[j] * b[j]
	}
	if aa == 0 || bb == 0 {
		return undefined("a map is zero: no cosine", nil)
	}
	return Score{Value: ab / math.Sqrt(aa*bb)}
}
