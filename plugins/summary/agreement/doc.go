// Package agreement is the UA-RAO summary "summary.agreement": the
// agreement set of the explanation draws,
//
//	E[eta, delta] = {n : rho[n] >= eta},  rho[n] = (1/S) sum_s 1{R^(s)[n] > delta},
//
// the coordinates whose relevance exceeds delta (strictly) in at least a
// fraction eta of the draws. The comparison rho[n] >= eta is made exactly,
// as count[n] >= ceil(eta S) in integer arithmetic with eta read as the
// decimal the recipe wrote (see sdk/stat's Rank), so that eta = 0.07 with
// S = 100 asks for 7 draws (the float64 product 0.07*100 exceeds 7).
//
// Configuration: "eta", the agreement fraction, 0 <= eta <= 1, default 0.5
// (a majority, ties included); "delta", the relevance threshold, any finite
// real, default 0 (positive relevance). A NaN draw never exceeds delta.
package agreement
