// Package mean is the UA-RAO summary "summary.mean": the coordinatewise
// mean of the explanation draws, Rbar[n] = (1/S) sum_s R^(s)[n] (sdk/stat's
// Mean).
package mean
