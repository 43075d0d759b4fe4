// Package stat holds the coordinatewise statistics of a set of S maps
// r[0], ..., r[S-1] (each of N values, r[s][n]) that the summary plugins
// compute and that the host computes too (host/eval, host/analysis): the
// mean, the sample variance, the coefficient of variation, order
// statistics (quantiles and bands) and the type-7 interpolated quantile.
// It imports the standard library only, so plugins and host alike can
// import it.
//
// The functions are written like gonum's: the output comes first (dst,
// or lower and upper), is written whole and returned; every map r[s] has
// at least len(dst) values, of which the first len(dst) are read. They
// do not allocate inside their loops, and they panic only when called
// wrongly (a level out of [0, 1], a rank out of range).
//
// The coordinatewise statistics of S maps, written like gonum (output
// first, the formula in the doc comment): Mean, Variance, MeanVariance
// (Welford), CV, the exact rank Rank (ceil(p S) of the decimal written),
// Sorted, Quantile, Band, LinearQuantile (type 7, numpy's bits) and
// InterpolatedBand; the summary plugins, host/eval and host/analysis
// import it (the host imports no plugin for its numbers).
package stat
