package eval

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Statistics across replicates: the experiment run R times with
// independent training seeds (the networks differ) on the same K test
// splits. For one method, one class group and one metric, a run has the
// matrix y[r][s], replicate r = 0..R-1, split s = 0..K-1 (the group's
// GroupAgg.Splits[s].IoU, or RMA, of replicate r's row). Every function
// here wants a rectangular matrix of finite values and says which
// replicate and split is not; none returns NaN or Inf.

// Estimate is a mean with its Student t interval, where one is defined.
// It is an Interval with a flag: Defined is false when N < 2 (a t interval
// over one value has no degrees of freedom), and then Lo = Hi = Mean and
// Stderr = 0, which a reader must not take for an interval of width 0.
type Estimate struct {
	Interval
	Defined bool `json:"defined"`
}

// tEstimate is the mean of xs with its t interval at level,
//
//	mean = (1/n) sum_i x_i,  se = sd(x) / sqrt(n)
//	[mean - t_{(1+level)/2, n-1} se,  mean + t_{(1+level)/2, n-1} se]
//
// sd as MeanSD; undefined (Defined false, Lo = Hi = mean) for n = 1. xs is
// not empty and finite, level in (0, 1): the callers check.
func tEstimate(xs []float64, level float64) Estimate {
	mean, sd := MeanSD(xs)
	n := len(xs)
	if n < 2 {
		return Estimate{Interval: Interval{Mean: mean, Lo: mean, Hi: mean, Level: level, N: n}}
	}
	se := sd / math.Sqrt(float64(n))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile((1 + level) / 2)
	return Estimate{Interval: Interval{Mean: mean, Lo: mean - t*se, Hi: mean + t*se, Level: level, N: n, Stderr: se}, Defined: true}
}

// checkMatrix checks that y is a rectangular R x K matrix of finite values
// with R >= minR and K >= minK, and returns R and K. Errors name what
// (the function and the argument), the replicate and the split.
func checkMatrix(what string, y [][]float64, minR, minK int) (R, K int, err error) {
	R = len(y)
	if R < minR {
		return 0, 0, fmt.Errorf("%s: %d replicate(s), want at least %d", what, R, minR)
	}
	K = len(y[0])
	for r, row := range y {
		if len(row) != K {
			return 0, 0, fmt.Errorf("%s: replicate %d has %d split(s), replicate 0 has %d (want the same splits in every replicate)", what, r, len(row), K)
		}
	}
	if K < minK {
		return 0, 0, fmt.Errorf("%s: %d split(s), want at least %d", what, K, minK)
	}
	for r, row := range y {
		for s, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, 0, fmt.Errorf("%s: replicate %d, split %d is %v, want a finite value", what, r, s, v)
			}
		}
	}
	return R, K, nil
}

func checkLevel(what string, level float64) error {
	if !(level > 0 && level < 1) {
		return fmt.Errorf("%s: level %v, want 0 < level < 1", what, level)
	}
	return nil
}

// finite reports an error naming the first of the named values that is
// not finite (a sum of finite values can overflow).
func finite(what string, names []string, vals ...float64) error {
	for i, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: %s is %v (the values overflow float64)", what, names[i], v)
		}
	}
	return nil
}

// ReplicateSummary is one method's metric across replicates and splits.
type ReplicateSummary struct {
	Replicates int `json:"replicates"` // R
	Splits     int `json:"splits"`     // K
	// PerReplicate[r] is replicate r's mean over its splits,
	// m_r = (1/K) sum_s y[r][s], with the t interval over its K splits (the
	// paper's protocol, the network fixed); N = K, undefined for K = 1.
	PerReplicate []Estimate `json:"per_replicate"`
	// Across is the mean of the replicate means, (1/R) sum_r m_r, which is
	// the grand mean (1/(RK)) sum_rs y[r][s], with the t interval across
	// the R replicate means; N = R, undefined for R = 1.
	Across Estimate `json:"across"`
	// SD is the sample standard deviation of the replicate means m_r
	// (0 for R = 1).
	SD float64 `json:"sd"`
}

// AcrossReplicates summarises y[r][s] (replicate r, test split s) at the
// confidence level (e.g. 0.95):
//
//	m_r       = (1/K) sum_s y[r][s]                     (replicate r's mean)
//	per r:    [m_r -+ t_{(1+level)/2, K-1} sd_s(y[r][.]) / sqrt(K)]
//	mean      = (1/R) sum_r m_r = (1/(RK)) sum_rs y[r][s]
//	se        = sd(m) / sqrt(R)
//	across:   [mean -+ t_{(1+level)/2, R-1} se]
//
// sd is the sample standard deviation (divisor n-1, as MeanSD). The
// across interval is for the mean over training seeds on these test
// splits: the splits are shared by the replicates, so their variability
// is common to every m_r and not in sd(m) (see VarianceComponents). A
// replicated run of count 1 still has a summary: R = 1 gives Across with
// N = 1 and Defined false; K = 1 does the same for each PerReplicate.
//
// Errors: no replicate, a replicate with no split or a different number
// of splits than replicate 0, a NaN or Inf (naming its replicate and
// split), level outside (0, 1).
func AcrossReplicates(y [][]float64, level float64) (ReplicateSummary, error) {
	const what = "eval: across replicates"
	R, K, err := checkMatrix(what, y, 1, 1)
	if err != nil {
		return ReplicateSummary{}, err
	}
	if err := checkLevel(what, level); err != nil {
		return ReplicateSummary{}, err
	}
	out := ReplicateSummary{Replicates: R, Splits: K, PerReplicate: make([]Estimate, R)}
	m := make([]float64, R)
	for r, row := range y {
		out.PerReplicate[r] = tEstimate(row, level)
		m[r] = out.PerReplicate[r].Mean
		if err := finiteEstimate(fmt.Sprintf("%s: replicate %d", what, r), out.PerReplicate[r]); err != nil {
			return ReplicateSummary{}, err
		}
	}
	out.Across = tEstimate(m, level)
	_, out.SD = MeanSD(m)
	if err := finiteEstimate(what+": across", out.Across); err != nil {
		return ReplicateSummary{}, err
	}
	if err := finite(what, []string{"the sd of the replicate means"}, out.SD); err != nil {
		return ReplicateSummary{}, err
	}
	return out, nil
}

func finiteEstimate(what string, e Estimate) error {
	return finite(what, []string{"mean", "lo", "hi", "stderr"}, e.Mean, e.Lo, e.Hi, e.Stderr)
}

// PairedReplicates is the paired difference of two methods, a - b, across
// replicates and splits.
type PairedReplicates struct {
	Replicates int `json:"replicates"` // R
	Splits     int `json:"splits"`     // K
	// PerReplicate[r] is replicate r's mean difference over its splits,
	// d_r = (1/K) sum_s (a[r][s] - b[r][s]), with the paired t interval
	// over its K splits (PairedT; N = K, undefined for K = 1).
	PerReplicate []Estimate `json:"per_replicate"`
	// Across is the mean of d_r with the t interval across the R
	// replicates (N = R, undefined for R = 1).
	Across Estimate `json:"across"`
	// Positive and Negative count the replicates with d_r > 0 and d_r < 0
	// (the rest have d_r = 0).
	Positive int `json:"positive"`
	Negative int `json:"negative"`
}

// PairedAcrossReplicates compares methods a and b on the same replicates
// and splits (a[r][s] and b[r][s]: the same network seed r, the same test
// split s), at the confidence level:
//
//	d_rs     = a[r][s] - b[r][s]
//	d_r      = (1/K) sum_s d_rs
//	per r:   [d_r -+ t_{(1+level)/2, K-1} sd_s(d_r.) / sqrt(K)]   (= PairedT(a[r], b[r], level))
//	mean     = (1/R) sum_r d_r,  se = sd(d_.) / sqrt(R)
//	across:  [mean -+ t_{(1+level)/2, R-1} se]
//
// and the number of replicates with d_r > 0 and with d_r < 0. Swapping a
// and b negates every mean and mirrors every interval. R = 1 or K = 1
// leave the across or per-replicate intervals undefined (Defined false),
// as AcrossReplicates.
//
// Errors: as AcrossReplicates for each of a and b, and a and b of
// different shapes (naming the replicate whose splits differ).
func PairedAcrossReplicates(a, b [][]float64, level float64) (PairedReplicates, error) {
	const what = "eval: paired across replicates"
	d, err := difference(what, a, b)
	if err != nil {
		return PairedReplicates{}, err
	}
	if err := checkLevel(what, level); err != nil {
		return PairedReplicates{}, err
	}
	R, K := len(d), len(d[0])
	out := PairedReplicates{Replicates: R, Splits: K, PerReplicate: make([]Estimate, R)}
	m := make([]float64, R)
	for r := range R {
		// The t interval of the differences d[r] is PairedT(a[r], b[r]),
		// bit for bit, and is also defined (as not defined) for K = 1.
		e := tEstimate(d[r], level)
		if err := finiteEstimate(fmt.Sprintf("%s: replicate %d", what, r), e); err != nil {
			return PairedReplicates{}, err
		}
		out.PerReplicate[r] = e
		m[r] = e.Mean
		if m[r] > 0 {
			out.Positive++
		} else if m[r] < 0 {
			out.Negative++
		}
	}
	out.Across = tEstimate(m, level)
	if err := finiteEstimate(what+": across", out.Across); err != nil {
		return PairedReplicates{}, err
	}
	return out, nil
}

// Difference is the cellwise difference a[r][s] - b[r][s] of two methods'
// matrices (replicate r, split s), e.g. for VarianceComponents of a
// difference of methods. Errors: a or b empty, ragged or not finite
// (naming the replicate and split), different shapes, or a difference
// that overflows.
func Difference(a, b [][]float64) ([][]float64, error) {
	return difference("eval: difference", a, b)
}

func difference(what string, a, b [][]float64) ([][]float64, error) {
	R, K, err := checkMatrix(what+": a", a, 1, 1)
	if err != nil {
		return nil, err
	}
	if len(b) != R {
		return nil, fmt.Errorf("%s: a has %d replicate(s), b has %d (want the same replicates)", what, R, len(b))
	}
	for r, row := range b {
		if len(row) != len(a[r]) {
			return nil, fmt.Errorf("%s: replicate %d: a has %d split(s), b has %d (want the same splits)", what, r, len(a[r]), len(row))
		}
	}
	if _, _, err := checkMatrix(what+": b", b, 1, 1); err != nil {
		return nil, err
	}
	d := make([][]float64, R)
	for r := range R {
		d[r] = make([]float64, K)
		for s := range K {
			d[r][s] = a[r][s] - b[r][s]
			if math.IsInf(d[r][s], 0) {
				return nil, fmt.Errorf("%s: replicate %d, split %d: a - b = %v - %v overflows float64", what, r, s, a[r][s], b[r][s])
			}
		}
	}
	return d, nil
}

// Components is the two-way random-effects decomposition of y[r][s]
// (replicate r, split s) by VarianceComponents.
type Components struct {
	Replicates int     `json:"replicates"` // R
	Splits     int     `json:"splits"`     // K
	Mean       float64 `json:"mean"`       // the grand mean ybar..
	// The ANOVA mean squares MS_R (between replicates), MS_S (between
	// splits) and MS_E (residual, the replicate x split interaction).
	MSSeed     float64 `json:"ms_seed"`
	MSSplit    float64 `json:"ms_split"`
	MSResidual float64 `json:"ms_residual"`
	// The variance components, truncated at 0: s2_seed, s2_split, s2_e.
	Seed     float64 `json:"seed"`
	Split    float64 `json:"split"`
	Residual float64 `json:"residual"`
	// SeedRaw and SplitRaw are the untruncated (unbiased, possibly
	// negative) estimates; SeedTruncated and SplitTruncated say that the
	// raw estimate was negative and Seed or Split is 0 in its place.
	SeedRaw        float64 `json:"seed_raw"`
	SplitRaw       float64 `json:"split_raw"`
	SeedTruncated  bool    `json:"seed_truncated"`
	SplitTruncated bool    `json:"split_truncated"`
	// Total = Seed + Split + Residual, and each component's share of it
	// (all three 0 when Total is 0: every cell equal).
	Total         float64 `json:"total"`
	SeedShare     float64 `json:"seed_share"`
	SplitShare    float64 `json:"split_share"`
	ResidualShare float64 `json:"residual_share"`
	// Plug-in variances of means under the model (from the truncated
	// components):
	//   VarGrandMean   = s2_seed/R + s2_split/K + s2_e/(RK): the grand mean
	//                    about mu, seeds and splits both drawn anew;
	//   VarAcrossSeeds = s2_seed/R + s2_e/(RK): the grand mean about its
	//                    value on these splits (what AcrossReplicates'
	//                    Across.Stderr^2 estimates);
	//   VarSingleSeed  = s2_seed + (s2_split + s2_e)/K: one replicate's
	//                    mean m_r about mu (a single-seed run's result);
	//   VarSplitOnly   = (s2_split + s2_e)/K: what the paper's protocol
	//                    (a t over the splits, the network fixed) takes
	//                    for VarSingleSeed, short of s2_seed.
	VarGrandMean   float64 `json:"var_grand_mean"`
	VarAcrossSeeds float64 `json:"var_across_seeds"`
	VarSingleSeed  float64 `json:"var_single_seed"`
	VarSplitOnly   float64 `json:"var_split_only"`
}

// VarianceComponents decomposes y[r][s] (replicate r = 0..R-1, test split
// s = 0..K-1, one value a cell) by the two-way random-effects model
// without replication,
//
//	y_rs = mu + a_r + b_s + e_rs,  a_r ~ (0, s2_seed), b_s ~ (0, s2_split), e_rs ~ (0, s2_e)
//
// (independent; a_r the training seed's effect, b_s the test split's,
// e_rs the seed x split interaction and noise), with the ANOVA
// (method-of-moments) estimators:
//
//	ybar_r. = (1/K) sum_s y_rs,  ybar_.s = (1/R) sum_r y_rs,  ybar.. = (1/(RK)) sum_rs y_rs
//	MS_R = K sum_r (ybar_r. - ybar..)^2 / (R-1)                      E = K s2_seed + s2_e
//	MS_S = R sum_s (ybar_.s - ybar..)^2 / (K-1)                      E = R s2_split + s2_e
//	MS_E = sum_rs (y_rs - ybar_r. - ybar_.s + ybar..)^2 / ((R-1)(K-1))   E = s2_e
//	s2_seed = max(0, (MS_R - MS_E)/K),  s2_split = max(0, (MS_S - MS_E)/R),  s2_e = MS_E
//
// The raw estimates (before max) are unbiased; the truncated ones are
// what the variances of Components use. The variance of the grand mean is
//
//	Var(ybar..) = s2_seed/R + s2_split/K + s2_e/(RK)
//
// while a t interval over the K splits of one replicate (the paper's
// protocol) estimates (s2_split + s2_e)/K, the variance of m_r with the
// network fixed; m_r about mu has s2_seed + (s2_split + s2_e)/K. The
// larger s2_seed is against (s2_split + s2_e)/K, the more a single-seed
// split interval understates. For a difference of two methods, decompose
// Difference(a, b).
//
// It needs R >= 2 and K >= 2 and finite values; errors name the replicate
// and split of a NaN or Inf, or the shape that is short or ragged.
func VarianceComponents(y [][]float64) (Components, error) {
	const what = "eval: variance components"
	R, K, err := checkMatrix(what, y, 2, 2)
	if err != nil {
		return Components{}, err
	}
	fR, fK := float64(R), float64(K)
	rowMean := make([]float64, R)
	colMean := make([]float64, K)
	var grand float64
	for r, row := range y {
		for s, v := range row {
			rowMean[r] += v
			colMean[s] += v
			grand += v
		}
	}
	for r := range rowMean {
		rowMean[r] /= fK
	}
	for s := range colMean {
		colMean[s] /= fR
	}
	grand /= fR * fK
	var ssR, ssS, ssE float64
	for _, m := range rowMean {
		ssR += (m - grand) * (m - grand)
	}
	for _, m := range colMean {
		ssS += (m - grand) * (m - grand)
	}
	for r, row := range y {
		for s, v := range row {
			e := v - rowMean[r] - colMean[s] + grand
			ssE += e * e
		}
	}
	c := Components{
		Replicates: R, Splits: K, Mean: grand,
		MSSeed:     fK * ssR / (fR - 1),
		MSSplit:    fR * ssS / (fK - 1),
		MSResidual: ssE / ((fR - 1) * (fK - 1)),
	}
	c.SeedRaw = (c.MSSeed - c.MSResidual) / fK
	c.SplitRaw = (c.MSSplit - c.MSResidual) / fR
	c.Seed, c.SeedTruncated = max(c.SeedRaw, 0), c.SeedRaw < 0
	c.Split, c.SplitTruncated = max(c.SplitRaw, 0), c.SplitRaw < 0
	c.Residual = c.MSResidual
	c.Total = c.Seed + c.Split + c.Residual
	if c.Total > 0 {
		c.SeedShare = c.Seed / c.Total
		c.SplitShare = c.Split / c.Total
		c.ResidualShare = c.Residual / c.Total
	}
	c.VarGrandMean = c.Seed/fR + c.Split/fK + c.Residual/(fR*fK)
	c.VarAcrossSeeds = c.Seed/fR + c.Residual/(fR*fK)
	c.VarSplitOnly = (c.Split + c.Residual) / fK
	c.VarSingleSeed = c.Seed + c.VarSplitOnly
	if err := finite(what, []string{"the grand mean", "MS_R", "MS_S", "MS_E", "the total", "the single-seed variance"},
		c.Mean, c.MSSeed, c.MSSplit, c.MSResidual, c.Total, c.VarSingleSeed); err != nil {
		return Components{}, err
	}
	return c, nil
}
