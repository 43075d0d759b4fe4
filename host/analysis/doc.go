// Package analysis computes the experiments of a recipe's analysis tables
// ([sensitivity], [calibration], [agreement], [bound], [total_variance],
// [figures], [output]) from the maps of every explained record, as the
// engine hands them over batch by batch (engine.Analysis.Batch), and turns
// them into the paper's tables (tab:sensitivity, tab:calibration) and the
// tables the paper leaves to future work.
//
// Every per-record result is stored under its (split, record), and every
// aggregate is computed at the end in split and record order, so the
// bytes do not depend on the order in which workers finish batches.
//
// Aggregation follows the paper's tables: a measure is averaged over the
// records of each class in a split, the class means are averaged over a
// group's classes (the unweighted macro of "all-15" and "disc-7"), and
// the split macros give mean ± sd over the splits.
//
// The recipe's analysis tables ([sensitivity], [calibration], [agreement],
// [bound], [total_variance], [figures], [output]): the engine's
// distortions and repeats, one result a (split, record) from each
// engine.Batch, aggregated at the end in record order (tab:sensitivity,
// tab:calibration, the paired disc-7 difference, figures, safetensors of
// the maps); every run has one: explore.go keeps report.html's records
// (Explored: the first ExplorePerClass = 2 of each class a (posterior,
// explainer) pair in (split, record) order, each replicate of a replicated
// run a pair of its own (pairs are keyed by posterior label, replicate and
// explainer label), an unlabelled split's first ExploreWindows = 120, at
// most ExploreDraws = 32 draws' maps each), chosen the same whatever the
// workers and shards (a bounded held set a class, evicting the largest;
// the kept records travel in the units' payloads).
package analysis
