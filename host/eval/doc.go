// Package eval holds the paper's localisation metrics (Section 4,
// "Evaluation Framework") and their aggregation over test splits
// (Section 5, Tables tab:bnn_results and tab:perclass_*).
//
// A saliency map r in R^N is scored against a ground-truth disturbance mask
// m in {0,1}^N, I = {n : m[n]}, L = |I|:
//
//	RMA(r) = sum_{n in I} r[n] / sum_n r[n]                          (eq:rma)
//	IoU(r) = |T_L(r) ∩ I| / |T_L(r) ∪ I|                            (eq:iou)
//
// where T_L(r) is the index set of the L largest values of r (eq:topL).
// The metrics take nonnegative maps; signed maps (Grad-CAM) go through Abs
// first, as the paper does.
//
// Functions follow gonum's conventions: an output slice dst is either nil
// (then it is allocated) or of the right length; mismatched lengths and
// other programmer errors panic. RMA, IoU and TopL allocate nothing (TopL
// only when dst is nil).
//
// RMA, top-L IoU (ties: larger value first, then lower index), per-class
// and group aggregation; for C x T maps (channels.go) per-channel RMA and
// IoU (each row against its own mask row), phase localisation PL (the
// share of relevance on the disturbed channels D) with its chance level
// |D|/C, the top channel and whether it is in D (ScoreChannels),
// aggregated like RMA (AggregateChannels); the measures of the other
// experiments: Pearson, W1 and coordinatewise W1, top-L stability,
// circular alignment, band self-coverage (split, partition reference, LOO
// min-max), agreement-set precision/recall/F1, the total-variance split,
// the cor:meanmap term, predictive quality (NLL, ECE, Brier, entropy), the
// paired t-interval.
package eval
