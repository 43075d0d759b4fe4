// Package mcdropout is the MC-dropout posterior "posterior.mcdropout": one
// network trained with dropout of probability p on the input of its last
// dense layer (the paper's fc2), whose draws keep that dropout on when
// sampling. Draw s draws a keep mask m (each input unit kept with
// probability 1-p, from the stream of Seeds[s]) and folds m/(1-p) into the
// last layer's weight columns,
//
//	w'[o, i] = w[o, i] m_i / (1 - p),
//
// so that every draw is an ordinary network (nn.FoldDropout) and
// explainers never see dropout. It is continuous: any number of draws.
//
// Configuration: "p", the dropout probability, 0 < p < 1 (default 0.2);
// "seed", the training seed (default the recipe's seed). In replicate
// r >= 1 of an experiment (FitRequest.Replicate) the network trains from
// sdk.ReplicateSeed(seed, req) instead, which the artifact's Meta "seed"
// records (Info.Replicates).
package mcdropout
