package eval

// Predictive quality of a posterior: its posterior-predictive
// probabilities p = (1/S) sum_s p_s per record, scored against the labels.

import (
	"errors"
	"fmt"
	"math"
)

// ProbFloor is the floor of the probability in the log of NLL: a record
// whose true class has probability p < ProbFloor (0 included) contributes
// -log(ProbFloor) ~ 27.6 nats, not +Inf.
const ProbFloor = 1e-12

// ECEBins is the number of equal-width confidence bins of the ECE.
const ECEBins = 15

// SumTolerance is how far a row of probabilities may sum from 1.
const SumTolerance = 1e-4

// PredictiveQuality scores predictive probabilities against labels; every
// field is a mean over the N records.
type PredictiveQuality struct {
	N        int     `json:"n"`        // records
	Accuracy float64 `json:"accuracy"` // (1/N) sum_i 1{argmax_c p_ic = y_i}
	NLL      float64 `json:"nll"`      // (1/N) sum_i -log max(p_{i,y_i}, ProbFloor), nats
	Brier    float64 `json:"brier"`    // (1/N) sum_i sum_c (p_ic - 1{c = y_i})^2, in [0, 2]
	ECE      float64 `json:"ece"`      // expected calibration error, 15 bins (see Predictive)
	Entropy  float64 `json:"entropy"`  // (1/N) sum_i -sum_c p_ic log p_ic (0 log 0 = 0), nats
}

// MeanProbs writes the posterior-predictive probabilities, the mean of the
// S draws' probabilities,
//
//	dst[j] = (1/S) sum_s draws[s][j],
//
// and returns dst (nil: allocated; else of the draws' length). Row-major
// draws (record i, class c at i*C + c) give row-major means. MeanProbs
// panics if there is no draw or the lengths differ.
func MeanProbs(dst []float64, draws [][]float64) []float64 {
	if len(draws) == 0 {
		panic("eval: MeanProbs: no draws")
	}
	if dst == nil {
		dst = make([]float64, len(draws[0]))
	}
	for s, d := range draws {
		if len(d) != len(dst) {
			panic(fmt.Sprintf("eval: MeanProbs: draw %d has length %d, want %d", s, len(d), len(dst)))
		}
	}
	for j := range dst {
		var sum float64
		for _, d := range draws {
			sum += d[j]
		}
		dst[j] = sum / float64(len(draws))
	}
	return dst
}

// eceEdge returns the ith bin edge of the ECE, numpy.linspace(0, 1, 16)'s
// value i * (1/15); the last, 15 * (1/15), rounds to 1 exactly.
func eceEdge(i int) float64 { return float64(i) * (1.0 / ECEBins) }

// eceBin returns the bin b of a confidence c, e_b < c <= e_{b+1} with the
// edges of eceEdge; c <= 0 goes to bin 0 and c > 1 to the last bin.
func eceBin(c float64) int {
	b := 0
	for b < ECEBins-1 && c > eceEdge(b+1) {
		b++
	}
	return b
}

// Predictive scores the predictive probabilities probs (row-major: record
// i, class c at probs[i*classes + c]) against labels (one per record, in
// [0, classes)):
//
//   - Accuracy of the prediction argmax_c p_ic (the lowest class among
//     ties, as engine.PredictMean);
//   - NLL = (1/N) sum_i -log max(p_{i,y_i}, ProbFloor): the floor keeps a
//     zero probability of the true class finite (27.6 nats), documented
//     here rather than returning +Inf;
//   - Brier = (1/N) sum_i sum_c (p_ic - 1{c = y_i})^2 (the multi-class
//     sum, in [0, 2]);
//   - ECE (Guo et al. 2017) with ECEBins = 15 equal-width bins on the
//     confidence conf_i = max_c p_ic,
//     ECE = sum_b (|B_b| / N) |acc(B_b) - conf(B_b)|,
//     B_b = {i : e_b < conf_i <= e_{b+1}}, e_b = b (1/15) (e_15 = 1, as
//     numpy.linspace(0, 1, 16)), acc and conf the bin's mean correctness
//     and mean confidence, empty bins left out. A valid row has
//     conf_i >= (1 - 1e-4)/C > 0, so the bins cover every record; a
//     confidence above 1 (allowed by the sum tolerance) is put in the last
//     bin;
//   - Entropy = (1/N) sum_i -sum_c p_ic log p_ic, nats, with 0 log 0 = 0.
//
// Uniform p_ic = 1/C gives NLL = Entropy = log C and Brier = 1 - 1/C; a
// correct one-hot predictor gives NLL = Brier = ECE = Entropy = 0.
//
// Errors name the record: no record; a label outside [0, classes); a
// probability that is NaN, infinite or negative; a row whose sum is
// farther than SumTolerance = 1e-4 from 1. Predictive panics if classes
// < 1 or len(probs) != len(labels) classes.
func Predictive(probs []float64, classes int, labels []int) (PredictiveQuality, error) {
	if classes < 1 {
		panic(fmt.Sprintf("eval: Predictive: classes = %d, want at least 1", classes))
	}
	if len(probs) != len(labels)*classes {
		panic(fmt.Sprintf("eval: Predictive: len(probs) = %d, want %d records x %d classes", len(probs), len(labels), classes))
	}
	if len(labels) == 0 {
		return PredictiveQuality{}, errors.New("eval: predictive: no records")
	}
	var (
		q                 = PredictiveQuality{N: len(labels)}
		correct           int
		binN, binOK       [ECEBins]int
		binConf           [ECEBins]float64
		nll, brier, entro float64
	)
	for i, y := range labels {
		if y < 0 || y >= classes {
			return PredictiveQuality{}, fmt.Errorf("eval: predictive: record %d: label %d out of range (accepted: 0 <= label < %d)", i, y, classes)
		}
		row := probs[i*classes : (i+1)*classes]
		var sum, h float64
		best := 0
		for c, p := range row {
			if !(p >= 0) || math.IsInf(p, 1) {
				return PredictiveQuality{}, fmt.Errorf("eval: predictive: record %d, class %d: probability %v (accepted: finite and >= 0)", i, c, p)
			}
			sum += p
			if p > row[best] {
				best = c
			}
			if p > 0 {
				h -= p * math.Log(p)
			}
			d := p
			if c == y {
				d = p - 1
			}
			brier += d * d
		}
		if math.Abs(sum-1) > SumTolerance {
			return PredictiveQuality{}, fmt.Errorf("eval: predictive: record %d: probabilities sum to %v (accepted: within %g of 1)", i, sum, SumTolerance)
		}
		entro += h
		nll -= math.Log(max(row[y], ProbFloor))
		conf := row[best]
		b := eceBin(conf)
		binN[b]++
		binConf[b] += conf
		if best == y {
			correct++
			binOK[b]++
		}
	}
	n := float64(len(labels))
	q.Accuracy = float64(correct) / n
	q.NLL = nll / n
	q.Brier = brier / n
	q.Entropy = entro / n
	for b, m := range binN {
		if m == 0 {
			continue
		}
		fm := float64(m)
		q.ECE += fm / n * math.Abs(float64(binOK[b])/fm-binConf[b]/fm)
	}
	return q, nil
}
