// Package cv is the UA-RAO summary "summary.cv": the coordinatewise
// coefficient of variation of the explanation draws,
//
//	cv[n] = s[n] / (|Rbar[n]| + kappa),
//
// where Rbar[n] = (1/S) sum_s R^(s)[n] is the mean and
// s[n] = sqrt((1/(S-1)) sum_s (R^(s)[n] - Rbar[n])²) the sample standard
// deviation (as in summary.variance), defined for S >= 2 (sdk/stat's CV).
// The stabiliser kappa > 0 bounds the denominator away from zero.
//
// Configuration: "kappa", kappa > 0; default 1e-8. The default only guards
// against division by zero: where the mean relevance is near zero (for
// instance ReLU-clipped maps) cv is then of the order s/1e-8, so set kappa
// to a scale that is negligible for the maps being summarised.
package cv
