// Package engine computes explanation distributions and scores them: for
// every posterior q it draws theta_1..theta_S, applies every explainer to
// every test record under every draw (the Monte Carlo estimate of the
// push-forward Q_x = (tau_x)#q of the paper's def:1), summarises the S maps
// of each record with every summary, and scores the summaries against the
// ground-truth masks (host/eval).
//
// Work is split into fixed batches of records, handed to a worker pool; a
// batch's results go to fixed slots, and every random stream is keyed by
// (seed, purpose, split, record, draw), so results are the same bytes for
// any number of workers.
//
// The engine knows plugins only through
// engine.Plugins, and hands what it gives beside Results to two interfaces
// of the plan: Sink (predictive probabilities, set and band records) and
// Analysis (every explained batch, its distortions and repeats, each
// draw's probability of the predicted class Batch.DrawProbs, and what it
// keeps of a unit's records). step.go is the explain step, the one place
// an explainer is called (a run's maps, repeats, distortions, uaxai
// explain, the recipe trial), with the one seed derivation ExplainerSeed.
//
// # The flow
//
// For each test input x, each posterior q draws S networks
// theta_1..theta_S; each explainer (attribution operator tau) maps
// (theta_s, x) to a relevance map R_s; each summary Phi maps the S maps to
// one map, set or band; the summary's map is scored against the ground-
// truth mask of x (RMA, top-L IoU) and averaged per class, per group
// (all-15, disc-7) and over test splits. The S maps are the Monte Carlo
// estimate of the push-forward (tau_x)#q of the paper's Definition 1.
//
//	cmd/uaxai run R.toml
//	  host/recipe   strict TOML -> Recipe (errors name key, line, accepted values)
//	  host/runner   data (host/data), plugin checks, cache keys, run directory
//	  host/engine   the run's units (engine.Units), each kept in the run
//	                directory (host/rundir) as it is done:
//	                  fit unit: a posterior's Fit (cached, host/store; a post-hoc
//	                    posterior after its base), or one part of a parted fit
//	                    (a deep ensemble's member)
//	                  explain unit: a block of records of one split under one
//	                    (posterior, explainer) pair: Sample S draws (once a
//	                    process) and Load them into the explainer (once a pair);
//	                    for each batch of the block (worker pool, fixed slots):
//	                      predict: argmax of the mean of the S draws' probabilities
//	                      explain step: S maps of each record with a non-empty mask
//	                        (engine.Explaining.Explain, step.go)
//	                      score step:   every summary, RMA and IoU (host/eval)
//	                      metric step:  with Plan.Metrics, every draw's map under its
//	                        network and every map summary's under the posterior
//	                        predictive, into Batch.DrawScores/SummaryScores (metrics.go)
//	                      analyse step: the batch's maps (and its distortions'
//	                        and explainer repeats', by the same explain step)
//	                        to the plan's Analysis (host/analysis)
//	                merge: read every unit in plan order, aggregate the rows;
//	                  predictive probabilities and set/band records go to the
//	                  plan's Sink (the runner's run directory writer)
//	  host/analysis the recipe's analysis tables from the per-record results
//	  host/report   tables (tablewriter; the paper's layouts with host/paper's
//	                values), results.json, records.csv, tables.md, report.html
//
// # The data model: (N, C, T)
//
// A record is C channels of T samples, channel-major (value (c, t) at
// index c*T + t), from the data: a generator's Channels() and
// fs/f0*cycles, a file's shape (.npy/safetensors (N, C, T), a CSV line of
// C x T values), a recording's chosen channels. Every map an explainer
// returns, every mask and every summary has the input's C x T values, so
// the engine, the units, the summaries and the whole-map scores (RMA,
// top-L IoU with L the mask's size over all channels) need no C; what
// needs it reads engine.TestSplit.Channels (the per-channel scores,
// host/eval channels.go; the figures) or the network's Arch().InChannels
// (explainers: occlusion's windows per channel, LIME's (channel, segment)
// features, Grad-CAM's time map shared by the channels). The classes are
// named by the data (Split.Classes, the plan's ClassNames, every table and
// record); nil names are the one-phase PQD's 16, so one-channel one-phase
// runs are byte for byte what they were. A built-in architecture, or a
// graph architecture of [model] graph/onnx, takes C, T and its classes
// from a generated source, or from [model] in_channels, in_len, classes
// (recipe.Recipe.Arch, nn.Arch.Reshaped); explain/predict take them from
// the input and the weights. A [model] torch module (a user's PyTorch
// network) is an nn.Arch known by its shape only (ShapeOnly: no layers;
// Outputs, its classes), from the same source or keys; its draws are
// served by posterior.torch (see "Served draws"), posteriors that build
// sdk/nn networks are refused for it (host/runner check.go), and the
// recipe's explainer trial is skipped (no network to try them on).
//
// # Post-hoc posteriors
//
// A posterior whose Info.Base names another posterior is fitted on top of
// that base's fit (posterior.laplace on posterior.deterministic). The
// engine (host/engine/fit.go) builds the base's step (engine.BaseStep: the
// base's ID, and as its table the keys Info.BaseKeys of the post-hoc
// table) and fits it through the same path as any posterior, under the
// base's own cache key, so that a recipe's own deterministic table with
// the same seed, in this run or an earlier one, is the network reused; an
// artifact that two fits of the plan share is also kept for the run, so a
// base is fitted at most once per run even without a cache. The base's
// artifact reaches the post-hoc Fit as FitRequest.Base. The post-hoc
// posterior's own cache key is engine.PostHocKey(own, base), so a new base
// version or seed is a new entry; its own entry hit, the base is not even
// loaded. engine.ResolveBase refuses a base that is not available or that
// has a base of its own: the engine before fitting anything, and
// host/runner's check at the line of the table's use, where it also runs
// the base's Check on the forwarded keys. Notes say when the base was
// reused or came from the cache.
//
// An artifact's Meta is reported with every row of its posterior
// (results.json fit, e.g. Laplace's scale and delta), and a note entry
// goes to the run's notes.
//
// # Units, shards, merge and resume
//
// A run is a list of units (engine.Units, fixed by the recipe alone): one
// fit unit a posterior (one a part for a posterior that implements
// sdk.Parted: the deep ensemble's members, each trained on its own), then
// one explain unit a block of Plan.UnitRecords records (256 by default, a
// multiple of the batch) of one split under one (posterior, explainer)
// pair. A unit's output is a gob payload in units/<name>.unit, carrying
// the run's fingerprint (the canonical recipe, plugin versions, script
// digests) and written atomically with its SHA-256.
//
// A unit carries its own identity, inside what the checksum covers, at two
// levels: the file (uaxai-unit-2: magic, SHA-256, the unit's name, the
// payload) holds the name, and host/rundir compares it with the name the
// file is read under; the payload holds the engine.UnitID (name, kind,
// posterior, part, explainer, split, records B0..B1), and the engine
// compares it with the unit it reads. A file copied or renamed onto
// another unit's name (fit-00.unit onto fit-01.unit, split 0's explain
// unit onto split 1's) therefore fails as a cut-short file does: --resume
// sets it aside as .corrupt, notes it and does the unit again; merge
// refuses, naming the file, the unit it holds and the unit expected. A
// version 1 file (no name) is corrupt too, so units of an older uaxai are
// done again, never trusted. A unit file (or plan.json) that is not a
// regular file (a FIFO, a device, a directory) is refused at once, without
// blocking (atomicfile.OpenRegular: Stat, open O_NONBLOCK, Fstat), and is
// corrupt likewise.
//
//   - engine.RunUnits does one shard's units (--shard i/n: those whose
//     index is i mod n, among every unit or among one kind's with --units
//     fit|explain). A unit already done is skipped; a unit file that does
//     not read back (cut short by a power cut, changed) is set aside as
//     .corrupt, noted, and done again. An explain unit whose posterior is
//     not fitted yet fits it first, under the fit unit's lock; a process
//     that finds the lock held waits for it, so no fit is done twice. The
//     fit goes through the cache under the cache entry's own lock as well,
//     so that separate runs sharing a cache fit an entry once.
//   - engine.Merge reads every unit in plan order and builds the Results
//     exactly as one run does: the explain units' records go to the same
//     slots, the analysis's per-record results come back through
//     Analysis.Put (a shard hands them over with Analysis.Take and forgets
//     them), predictive probabilities are reassembled per split, and a
//     parted fit's artifact is the union of its parts (engine.JoinParts).
//     A missing unit is an error that names it.
//   - engine.Run (tests) is RunUnits over every unit into memory, then
//     Merge. runner.Run is the same into the run directory, so that an
//     interrupted run (Ctrl-C, SIGKILL, a power cut) is finished by uaxai
//     run --resume DIR, which does only what is missing. Its result bytes
//     are those of an uninterrupted run: a unit's batches are the batches
//     of the whole split, and every random stream is keyed by (seed,
//     purpose, split, record, draw).
//   - Shards write shards/<kind>-<i>-of-<n>.json (status, host, pid, unit
//     times); uaxai merge DIR writes results.json, records.csv, tables.md,
//     the analysis files and manifest.json (with every unit's wall time,
//     units_s).
//
// # Replicates
//
// A recipe's [replicates] count = R repeats the experiment with
// independent training seeds (issue 21). The runner builds one plan in
// which each posterior appears once a replicate (engine.Step.Replicate,
// Replicated; Plan.ReplicateSeeds holds each replicate's seed), so a
// replicated run is units like any other: the same cache, shards, resume,
// merge and Slurm, and the same bytes for any number of workers. A fit of
// replicate r gets FitRequest.Seed = the replicate's seed and
// FitRequest.Replicate = r; the plugin maps each of its training seeds
// through sdk.ReplicateSeed (replicate 0: unchanged). The engine refuses a
// posterior (or post-hoc base) whose Info.Replicates is false in a
// replicate r >= 1, since its replicates would be the same networks. The
// in-run dedup key (runKey) and the cache key include the replicate
// (replicate 0 keeps the key of a plain run of its seed, so the two share
// entries). Test splits and explainer seeds (ExplainerSeed) do not depend
// on the replicate, unless resample_splits: then the steps of replicate r
// >= 1 carry test splits of their own (Step.Tests, the recipe's data
// generated with the replicate's seed), and the engine explains and scores
// a posterior on Plan.testsOf(step) (units, blocks, accuracies, the
// predictive quality). The merge gives R x P x E x S rows; the runner
// files them by replicate (results.json replicates) and shows their
// aggregate (host/runner/replicates.go: every statistic over the
// replicates' means).
//
// # Determinism
//
// Every random number comes from sdk/rng keyed by (recipe seed, purpose,
// split, record, draw). Work is split into fixed batches whose results go
// to fixed slots, so results.json and records.csv are the same bytes for
// any number of workers (tested in host/engine with fakes and in
// host/runner through real plugin processes). Posterior fits are cached
// under a hash of the architecture, the training protocol, the data, the
// seed and the plugin's ID, version and config (host/store); a post-hoc
// posterior's key also covers its base's. The Laplace posterior's Fisher
// diagonal is summed over fixed chunks of records added in chunk order,
// and its calibration draws share one keyed normal vector each for every
// scale tried.
//
// # Tests
//
//   - host/engine/engine_test.go: fakes whose draws, records and seeds can
//     be told apart: draw s uses model s, seeds keyed by (record, draw),
//     the predictive mean over every draw, the same bytes for any workers.
//   - host/engine/posthoc_test.go: post-hoc fakes: the base fitted once
//     with the deterministic table in either order, its table the BaseKeys
//     subset, the post-hoc key following the base's, a missing base an
//     error before any fit.
//   - Units, shards and resume: host/engine/units_test.go (fakes: 1-5
//     shards in shuffled orders merge to Run's Results; lost and corrupt
//     units redone, the others not; a parted fit's parts fitted once each;
//     concurrent runs through a locked cache fit once);
//     host/runner/shard_test.go (the tiny recipe with every analysis
//     table, sharded and merged, byte for byte, figures and safetensors
//     included; a unit cut short, then Resume); cmd/uaxai/shard_test.go
//     (the binary SIGKILLed halfway, a unit file cut short, uaxai run
//     --resume; four shards and uaxai merge); host/rundir (every byte cut
//     or flipped is caught); internal/filelock (a SIGKILLed holder frees
//     its lock).
package engine
