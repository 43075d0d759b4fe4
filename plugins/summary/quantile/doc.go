// Package quantile is the UA-RAO summary "summary.quantile": the
// coordinatewise alpha-quantile of the explanation draws, the order
// statistic
//
//	q_alpha[n] = r_(k)[n],  k = ceil(alpha S),
//
// the kth smallest (1-based) of R^(1)[n], ..., R^(S)[n] (sdk/stat's
// Quantile). The rank k is computed exactly (see stat.Rank), so that
// alpha = 0.07 with S = 100 gives k = 7.
//
// Configuration: "alpha", the level, 0 < alpha < 1; default 0.5 (the lower
// median r_(ceil(S/2))).
package quantile
