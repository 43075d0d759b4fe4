package stat

import "math"

// Mean writes the coordinatewise mean
//
//	dst[n] = (1/S) sum_s r[s][n]
//
// and returns dst.
func Mean(dst []float64, r [][]float64) []float64 {
	clear(dst)
	for _, row := range r {
		for n, v := range row[:len(dst)] {
			dst[n] += v
		}
	}
	inv := 1 / float64(len(r))
	for n := range dst {
		dst[n] *= inv
	}
	return dst
}

// Variance writes the coordinatewise sample variance
//
//	dst[n] = (1/(S-1)) sum_s (r[s][n] - mean[n])²
//
// computed with Welford's update for accuracy (see MeanVariance), and
// returns dst. It needs S >= 2.
func Variance(dst []float64, r [][]float64) []float64 {
	MeanVariance(make([]float64, len(dst)), dst, r)
	return dst
}

// MeanVariance writes the coordinatewise mean and sample variance
//
//	mean[n]     = (1/S) sum_s r[s][n],
//	variance[n] = (1/(S-1)) sum_s (r[s][n] - mean[n])²,
//
// in one pass of Welford's update: for s = 1..S, with v = r[s-1][n],
// d = v - mean[n], mean[n] += d/s, M2[n] += d (v - mean[n]); then
// variance[n] = M2[n]/(S-1). mean and variance have equal lengths. It
// needs S >= 2.
func MeanVariance(mean, variance []float64, r [][]float64) {
	clear(mean)
	clear(variance)
	for s, row := range r {
		k := float64(s + 1)
		for n, v := range row[:len(variance)] {
			d := v - mean[n]
			mean[n] += d / k
			variance[n] += d * (v - mean[n])
		}
	}
	inv := 1 / float64(len(r)-1)
	for n := range variance {
		variance[n] *= inv
	}
}

// CV writes the coordinatewise coefficient of variation
//
//	dst[n] = sqrt(variance[n]) / (|mean[n]| + kappa),
//
// with mean and the sample variance (S-1 denominator) from MeanVariance,
// and returns dst. It needs S >= 2 and kappa > 0.
func CV(dst []float64, r [][]float64, kappa float64) []float64 {
	mean := make([]float64, len(dst))
	MeanVariance(mean, dst, r)
	for n := range dst {
		dst[n] = math.Sqrt(dst[n]) / (math.Abs(mean[n]) + kappa)
	}
	return dst
}
