// Package laplace is the post-hoc posterior "posterior.laplace": a
// diagonal Laplace approximation after Ritter, Botev and Barber (2018),
// fitted around a trained network, the MAP estimate theta_MAP, which is
// the artifact of its base posterior "posterior.deterministic" (the host
// fits it, or takes it from its cache, and passes it as FitRequest.Base).
//
// Fit accumulates the diagonal of the empirical Fisher information over
// the training set at the MAP,
//
//	F_i = sum_n (d/d theta_i log p(y_n | x_n, theta_MAP))^2,
//
// from per-record gradients, with the network in eval mode: batchnorm
// normalises by its running statistics, so that each record's
// log-likelihood is the one the network predicts with, and does not
// depend on the other records of a batch. The precision is
//
//	Lambda = s F + delta I,
//
// F a sum over the N training records, so that s = 1 is the Laplace
// approximation of the whole likelihood under a Gaussian prior of
// precision delta, and each draw is theta = theta_MAP + Lambda^(-1/2) eps,
// eps standard normal from the stream of its seed (draw k of Seeds[k]
// alone). Only trainable parameters get a variance:
// batchnorm running statistics (buffers of the parameter vector, see
// nn.Layout) stay at their MAP values in every draw.
//
// The scale s is the recipe's "scale", or else calibrated: s is found by
// bisection on log s in [scale_min, scale_max] so that, within ConfTol,
// the mean confidence
// (the largest class probability) of the sampled predictive, the mean of
// softmax over calibration_draws draws, on the validation set equals the
// validation accuracy of the MAP network. The draws share their standard
// normal vectors for every s (common random numbers), so the confidence is
// a continuous function of s rather than a noisy one. The target is the MAP's
// accuracy, not the sampled predictive's: it is fixed while s moves (the
// predictive's own accuracy is a step function of s that, at small s,
// falls with its confidence towards chance, where the two meet again at a
// meaningless root). When the confidence minus the target has the same
// sign at both ends of the bracket there is no root: the end towards the
// target is taken (scale_max, the narrowest posterior, when even it is
// less confident than the target; scale_min when even the widest is more
// confident), and the artifact says so (Meta "calibration" and "note",
// which the host reports in the run's notes).
//
// Configuration: "seed", the training seed of the base network (the
// host forwards it to posterior.deterministic; default the recipe's);
// "delta", the prior precision delta > 0 (default 100); "scale", s > 0
// (default: calibrated); and, for the calibration only,
// "calibration_draws" (1..1000, default 20), "scale_min" and "scale_max"
// (0 < scale_min < scale_max, defaults 1e-4 and 1e4).
//
// Replicates (Info.Replicates): in replicate r >= 1 of an experiment
// (FitRequest.Replicate) the host fits the base with the same replicate,
// so posterior.deterministic trains it from sdk.ReplicateSeed(seed, req);
// the calibration's draws (CalibrationKey) come from
// sdk.ReplicateSeed(req.Seed, req). Replicate 0 is the fit without
// replicates, byte for byte.
//
// The artifact holds "map" (theta_MAP) and "fisher" (F, zero on buffers);
// its Meta records scale, delta, calibrated, how the calibration ended,
// and on the validation set the MAP's accuracy and mean confidence and the
// sampled predictive's at the scale (of calibration_draws draws, or 20
// for a given scale).
//
// # Tests
//
//   - plugins/posterior/laplace: the Fisher diagonal against finite
//     differences and softmax regression's closed form, draw variances
//     against 1/(s F + delta), calibration on a small trained network.
package laplace
