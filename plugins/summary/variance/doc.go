// Package variance is the UA-RAO summary "summary.variance": the
// coordinatewise sample variance of the explanation draws,
// s²[n] = (1/(S-1)) sum_s (R^(s)[n] - Rbar[n])², defined for S >= 2
// (sdk/stat's Variance).
package variance
