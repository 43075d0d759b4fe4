// Package recipe decodes, completes and validates uaxai TOML recipes.
//
// A recipe is one TOML file per experiment. Decoding is strict: an unknown
// key in a host table is an error that names the key, its line and the
// accepted keys. The plugin tables ([[posterior]], [[explainer]],
// [[summary]]) are split: the host keys (use, label, draws, target, script)
// are decoded here, every other key goes to the plugin as its sdk.Config,
// and the plugin's Check validates it (KeyLine and PluginError give such
// errors a line number).
//
// # Schema
//
// Every key, its type, default and accepted values (REFERENCE.md beside
// this file says the same with examples):
//
//	name     string  required; [a-z0-9_-]+; names the run directory runs/<name>-<time>/
//	seed     integer default 2026; >= 0; base seed of every random stream
//	workers  integer default 0 (all cores); >= 0
//	out      string  default "runs"; run directory root, relative to the working directory
//
//	[data]
//	source           string  "pqd" (default; the built-in generator) or "files"
//	val_fraction     float   default 0.1; in (0, 1); pqd, or files without val
//	classes          array   default [] (all 16 classes); class names (strings) or
//	                         indices 0..15 (integers), no duplicates
//	# source = "pqd" only:
//	train_per_class  integer default 900; >= 1 (training pool per class, before the val split)
//	test_splits      integer default 5; >= 1
//	test_per_class   integer default 100; >= 1 (per class and split)
//	f0               float   default 50.0; > 0 (nominal frequency, Hz)
//	fs               float   default 3200.0; > 0 (sampling rate, Hz)
//	cycles           integer default 10; >= 1; fs/f0*cycles must be an integer (the waveform length)
//	noise            bool    default true
//	snr_db           [min, max] floats, default [20.0, 50.0]; min <= max; equal values fix the SNR
//	phase            "random" (default) or a number (radians)
//	# source = "files" only (paths relative to the recipe's directory):
//	train            string  required; a directory with waveforms.csv and labels.csv (+ disturbance.csv)
//	val              string  optional; as train; without it val_fraction of train is held out
//	test             array of strings, required, >= 1 directory, one per test split
//
//	[model]
//	arch             string  default "paper-1dcnn"; a built-in (nn.LookupArch), or the
//	                         name of the inline architecture given by the keys below
//	in_channels      integer inline only; >= 1
//	in_len           integer inline only; >= 1 (with source pqd it must equal fs/f0*cycles)
//	[[model.layers]] inline only; keys of nn.Layer: kind, name, out, kernel, p
//	torch            string  a PyTorch module instead ("file.py:Name" or "package.module:Name"),
//	                         known by its shape only; args (table) and output ("probs"|"logits")
//	                         go with it to the posterior.torch tables that name no module
//
//	[train]          nn.TrainConfig, defaults nn.PaperTrainConfig()
//	epochs           integer default 100; >= 1
//	batch            integer default 64; >= 1
//	lr               float   default 0.01; > 0
//	weight_decay     float   default 1e-4; >= 0
//	step_every       integer default 10; >= 1 (epochs between learning-rate decays)
//	step_gamma       float   default 0.5; in (0, 1]
//	beta1, beta2     float   default 0.9, 0.999; in [0, 1)
//	eps              float   default 1e-8; > 0
//
//	[[posterior]]    one or more
//	use              string  required; plugin ID, the "posterior." prefix is optional
//	label            string  default the ID; unique among the posteriors
//	draws            integer default 1; 1..10000 (S, the number of draws; bounds.go has every bound)
//	(other keys)     the plugin's own config
//
//	[[explainer]]    one or more
//	use              string  required; plugin ID, the "explainer." prefix is optional
//	label            string  default the ID; unique among the explainers
//	target           string  "true" (default) or "predicted": the class explained
//	(other keys)     the plugin's own config
//
//	[[summary]]      one or more
//	use              string  plugin ID, the "summary." prefix is optional; or
//	script           string  a yaegi script (host/script), relative to the recipe's directory
//	label            string  default the ID (a script: "summary.script.<file base name>"); unique
//	(other keys)     the plugin's (or script's) own config
//
//	[replicates]     optional; the experiment repeated with independent training seeds
//	count            integer required; 1..1000 (R; each replicate fits every posterior again)
//	seeds            array   optional; R distinct integers >= 0, replicate r's seed; default:
//	                         the recipe's seed for replicate 0, rng.Key(seed, "replicate", "", r, 0) after
//	resample_splits  bool    default false; replicates r >= 1 get test splits of their own (source pqd)
//
//	[evaluate]
//	mask             string  "amplitude" (default; |d| > eps, paper Def. 4.1) or "event"
//	eps              float   default 0.001; > 0
//	groups           array   default ["all", "disc-7"]; each "all" or "disc-7", no duplicates
//	abs              bool    default true; score |R| (the paper does)
//
//	[limits]         never change a result; a plugin that exceeds one is killed
//	handshake        duration default "1m"; start a plugin until it says what it is
//	check            duration default "1m"; each Check
//	fit              duration default "6h"; each posterior Fit
//	sample           duration default "30m"; each Sample (all S draws)
//	load             duration default "5m"; each draw loaded into an explainer, or released
//	explain_batch    duration default "10m"; each Explain call (a batch of records, one draw)
//	summarise_batch  duration default "10m"; each Summarise call (a batch of records)
//	model_call       duration default "5m"; each call of a served draw's model service (a batch), e.g. posterior.torch's
//	script_memory    size     default "2GiB"; >= 256MiB; memory of a script's process
//	plugin_memory    size     default "auto" (half the host's memory); >= 256MiB; memory of each plugin process
//
//	[slurm]          never changes a result; `uaxai slurm submit` (host/slurm); flags override it
//	shards           integer  >= 1; explain array tasks (default: host/slurm's)
//	partition        string   --partition; letters, digits, . _ - +, comma-separated
//	time             string   --time in Slurm's format ("90", "1:30:00", "2-12", "UNLIMITED")
//	cpus_per_task    integer  >= 1; --cpus-per-task and each task's workers (default 1)
//	mem              string   --mem, "4G", "500M" (default: not asked for)
//	account          string   --account
//	sbatch_args      array of strings, each one sbatch option ("--qos=long"), none that uaxai sets
//
// Nested tables inside a plugin table ([posterior.prior] after a
// [[posterior]], or an inline table) are plugin config like any other key,
// passed on as map[string]any; arrays arrive as []any.
//
// Decoding and validating recipes (one file a table: decode_data.go,
// decode_model.go, decode_train.go, decode_plugins.go,
// decode_evaluate.go), canonical form, REFERENCE.md; [model] graph/onnx
// read the spec or ONNX file at decode time into Model.GraphSpec
// (Recipe.Arch: reshaped to the data as a built-in); bounds.go: the bounds
// (REFERENCE.md's Bounds), and the size of a network they measure defined
// once (ArchSize, GraphSize: parameters and a sample's values, the input
// and every layer's or node's output; SizeBounds, DefaultSizeBounds:
// in_len, parameters, batch x values), which predict and explain check too
// with the bounds their flags give.
package recipe
