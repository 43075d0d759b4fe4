// Package metric judges explanations without (and with) ground truth:
// faithfulness, randomisation, robustness, complexity and localisation
// metrics with Quantus 0.6.0's definitions and names, computed through
// nn.Model, so on every model uaxai runs (Go networks, graphs and ONNX,
// PyTorch through the model service), with the model's forward passes
// batched (ForwardBatch copies a call).
//
// A metric is a Registry Entry: its Info (ID metric.<Quantus class in
// snake case>, category, what it needs, its keys named as Quantus's
// constructor arguments with their defaults) and a constructor from an
// sdk.Config. Builtin returns a registry of uaxai's metrics; a program
// adds its own with Registry.Add. Metric.Score scores a batch of records
// (Input: N records of C channels x T samples, channel-major, a map and a
// target class each, optional masks) into one Score a record: a value,
// a curve for the curve metrics (the value is its area), or the reason
// it has none (Undefined) instead of a silent NaN.
//
// Where uaxai differs from Quantus on purpose:
//   - normalise divides each map by its own max |a| (Quantus: the batch's,
//     so a record's score depends on the other records); normalise =
//     "batch" reproduces Quantus.
//   - perturb_baseline keeps Quantus's strings with their meanings
//     ("black" is the record's minimum, not 0) and adds "zero",
//     "fundamental" (Input.Fundamental) and "train_mean" (Input.TrainMean).
//   - Sorting is stable (ties in index order); numpy's argsort is not.
//   - TopKIntersection's k defaults to 100 (Quantus's 1000 fails on
//     records shorter than that).
//   - Monotonicity restores the record's samples (Quantus 0.6.0 re-writes
//     the baseline, so its score is always true).
//   - SensitivityN is scored record by record (Ancona et al.'s random
//     subsets of each size); Quantus correlates across a batch's records.
//   - ROAD imputes each channel by itself; its value is the share of the
//     percentages that keep the prediction.
//   - A region of RegionPerturbation and Selectivity is patch_size steps
//     of all channels, the last region the remainder (Quantus pads).
//
// The golden tests replay Quantus's saved random draws
// (testdata/golden/quantus) through the same code as the records' own
// draws, and match its scores: the map metrics within 1e-9, the curves
// within 1e-6 of the probability scale, the correlations, robustness,
// SSIM and infidelity scores within 1e-5 (the networks' float32 outputs
// and gradients against PyTorch's), ROAD's hits exactly.
//
// Every random draw of a metric for record i comes from Input.Keys[i], so
// scores are the same bytes for any batch, number of workers or shards.
package metric
