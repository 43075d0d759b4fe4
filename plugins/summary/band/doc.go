// Package band holds two UA-RAO band summaries of the explanation draws.
//
// "summary.band" is the finite-sample order-statistic explanation band: at
// every coordinate n,
//
//	lower[n] = r_(k)[n],  upper[n] = r_(l)[n],  1 <= k < l <= S,
//
// the kth and lth smallest (1-based) of R^(1)[n], ..., R^(S)[n] (sdk/stat's
// Band). If a new draw R^(S+1) is exchangeable with the S draws and ties
// have probability zero, P(lower[n] <= R^(S+1)[n] <= upper[n]) =
// (l-k)/(S+1), and at least that with ties (the band is closed). k = 1, l = S is the min-max band.
// Configuration: "k" and "l", required integers with 1 <= k < l; l <= S is
// checked when summarising, since S is known only then.
//
// "summary.iband" is the interpolated band at level beta: lower and upper
// are the linearly interpolated sample quantiles (Hyndman and Fan type 7,
// numpy.quantile's default method "linear"; see sdk/stat's LinearQuantile
// and InterpolatedBand) at the levels (1-beta)/2 and (1+beta)/2, both
// computed in float64 as written, so that the band equals
// numpy.quantile(r, [(1-beta)/2, (1+beta)/2], axis=0) bit for bit. It has no exact finite-sample coverage: for a new exchangeable
// draw it lies between those of the order-statistic bands that its
// interpolation points straddle. Configuration: "beta", 0 < beta < 1;
// default 0.9.
//
// In both, a coordinate with a NaN draw gives NaN bounds.
package band
