// Package lime is the attribution operator "explainer.lime": LIME on
// contiguous features of an input of C channels of T samples (channel-major,
// x[c*T+t]). Segment k of a channel is its samples kw .. min((k+1)w, T)-1,
// K = ceil(T/w) of them; the key "features" makes the features
//
//   - "channel-segment" (the default): C*K features, feature c*K+k is
//     segment k of channel c only;
//   - "segment": K features, feature k is segment k of every channel;
//
// for C = 1 both are the K segments. Each of n interpretable samples m in
// {0,1}^F keeps every feature with probability 1/2 (one bit of the
// input's seed's stream a feature, in feature order, so a run gives the
// same maps for any worker count); the perturbed input is x'[i] = x[i]
// m[f(i)] (baseline 0), f(i) the feature of input value i, its output the
// target's probability, and its weight the exponential kernel on cosine
// distance over all C*T values,
//
//	w = exp(-d^2 / (2 width^2)),  d = 1 - <x, x'> / (|x| |x'|)  (d = 1 if x' = 0).
//
// A weighted linear surrogate out ≈ b + sum_j c_j m_j is fitted, and each
// coefficient c_j is spread over its feature's values: map[i] = c[f(i)].
// This is Captum's Lime with a feature_mask of shape (1, C, T) holding
// f(c*T+t) (testdata/golden/lime-3ch checks it for C = 3).
//
// Configuration: "samples" n (default 128), "feature" w (default 16, 40
// segments of the paper's 640 samples), "features" (above),
// "kernel_width" (default 1.0), "surrogate" "lasso" (default) or "ols",
// and "alpha", the lasso's penalty (default 1e-4).
//
// Surrogates (as scikit-learn with sample weights, in float64):
//   - "ols": weighted least squares with an intercept,
//     argmin sum_k w_k (out_k - b - m_k.c)^2 (the minimum-norm solution
//     when the design is rank deficient);
//   - "lasso": argmin (1/(2 sum_k w_k)) sum_k w_k (out_k - b - m_k.c)^2 +
//     alpha |c|_1, the intercept not penalised, by cyclic coordinate
//     descent on the weighted, centred data until no coefficient moves by
//     more than 1e-12 (at most 100,000 sweeps).
package lime
