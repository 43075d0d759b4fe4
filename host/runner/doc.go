// Package runner executes a recipe end to end: it builds the data, resolves
// the plugins (out-of-process built-ins and binaries, or scripts), runs the
// engine and writes the run directory.
//
// One recipe end to end, a file a job: data.go (datasets: a generated
// source's data.Generator, or data.ReadDir of files; their channels, class
// names and channel names for the plan; ground-truth masks, masks, from
// |d[n]| > eps or the event interval, else the files' own masks; the
// scored classes and groups, scoredGroups: the paper's for the one-phase
// PQD's classes, else every class but normal in "all"; dataset hashes),
// input.go (the inputs of explain/predict: .npy (N, C, T) or CSV lines of
// C x T values, and the built-in network on them with the weights'
// classes; the bounds of recipe.SizeBounds, --max-in-len on a waveform
// checked in a .npy header or as a CSV line is read, --max-params and
// --max-batch-values on the built-in or graph network (netbounds.go, 64
// inputs a forward pass) once its shapes are known and before its
// workspace), plugins.go (the plugin manager with the recipe's [limits],
// plugin_dirs and scripts), check.go (plugin checks mapped to recipe
// lines) with files.go (a posterior's file keys) and trial.go, runner.go
// (orchestration: Run, Resume, Merge, Prepare, the plan and its cache
// keys), writer.go (the run directory: recipe.toml, plan, manifest,
// results; the engine's Sink) with html.go (report.html's content, its
// writing time in manifest.json's timings_s); Train, Predict (the mean of
// the S weights files' probabilities and its argmax) and Explain for uaxai
// train / predict / explain; modelsource.go (--model as a ModelSource:
// TorchModule, ONNXFile or GraphSpec, each case serving its own draws: a
// PyTorch module through host/torchserver's model-server process, a graph
// or ONNX network with --weights as nn.GraphModels served by a
// driver.ModelService of the host's own process, no Python) with
// served.go (the served draws' shapes and mean probabilities) and
// mcdropout.go (--mc-dropout S: S MC-dropout draws of one network, the
// kit's for a PyTorch module, the graph's own dropout nodes folded for a
// native network, seeded by --seed).
//
// # Recordings
//
// [recording]: a real recording (its channel, channels or phases) read and
// cut by host/record into one engine.TestSplit with Unlabelled set and
// Channels = C, the model's in_channels: the engine explains every window
// for its predicted class and scores nothing; windows.go the per-window
// answers (windows.csv) and the timeline of each posterior
// (figures/timeline-<posterior>.png); an occlusion table without baseline
// takes the fundamental one (host/recipe sets it at decode, so recipe.toml
// shows it: the zero baseline's blanked window wrecks any window's
// prediction, leaving flat maps).
//
// # uaxai paper
//
// uaxai paper: every recipe of a folder in the paper's order, one shared
// cache, REPORT.md (host/paperreport) rewritten after each part.
//
// # Posterior files
//
// A posterior's Info.Files names the keys of its table that hold file
// paths (posterior.files: weights, files). host/runner (files.go) resolves
// them against the recipe's folder in the recipe itself before Check (so
// the plugin process and the run's recipe.toml see absolute paths),
// refuses at check time a file it cannot open, at the key's line, and
// builds the cache key from the files' SHA-256 instead of their paths: a
// file overwritten in place is fitted (read) again, and the same bytes
// under another path hit the same entry.
//
// # uaxai explain
//
// uaxai explain (runner.Explain) drives one explainer and its summaries
// through the same plugin manager as a run, without the engine's units but
// with its explain step (engine.Explaining): the weights files are the
// draws, loaded into the explainer once each; inputs go in fixed batches
// of 8 (whatever the workers), one (batch, draw) task at a time on every
// core; the last draw of a batch to finish summarises it, and batches are
// written in input order, so the output is the same bytes for any number
// of workers.
//
// # Scripted summaries
//
// Scripted summaries (host/script) are served by a child process like
// every other plugin (Manager.Script, see the trust boundary below) and
// driven by the same gRPC client; host/runner resolves a step whose ID is
// one of the recipe's script paths to the manager's Script, every other ID
// to the manager's Summary. That resolver is the engine's engine.Plugins.
//
// # Trust model
//
// Two kinds of thing reach the host from outside, and they are trusted
// differently:
//
//   - Untrusted, and contained: data. Plugin answers (every map, artifact,
//     summary and Info a plugin sends back), cache entries, unit files of
//     a run directory, input files (recordings, CSV, weights) and the
//     recipe's own TOML. The host bounds and checks each before using it
//     (sdk/driver's result checks, checksummed cache entries and units,
//     strict decoding with errors at the line); a bad one is refused with
//     an error that names it.
//   - Code the user chose to run: plugins. The plugin binaries, Python
//     plugins and summary scripts that a recipe names (through
//     plugin_dirs, script, or the plugin directories of --plugins and
//     $UAXAI_PLUGIN_PATH). The host contains them (the boundary below:
//     processes of their own, deadlines, a script's memory limit and
//     import allow-list), but it does not sandbox them: they run with the
//     user's rights. A recipe with plugins is code, like a Makefile, and
//     running it is the user's decision.
//
// So the commands that look at a recipe without running it run none of
// that code. runner.CheckStatic (uaxai recipe check, and uaxai slurm
// submit --dry-run before it writes anything) starts the built-ins only,
// which are uaxai's own code: each checks its table and is tried on one
// input (trial.go), which is where most table errors show. Every other
// plugin is found without being started (plugin.Manager.Locate reads the
// plugin directories and the plugin.toml manifests as data), and a script
// is parsed with go/parser (script.Inspect), never given to yaegi, which
// runs a script's package initialisation as it loads it. What only such a
// plugin can say (its table's keys, its answer on the trial input, a
// script's constants and function types) is checked by runner.Check, which
// starts everything: recipe check --trial, and every run before it fits
// anything. A dry run of a recipe with plugins of its own stops after the
// check, writing nothing, since counting its units (a posterior's parts)
// and fingerprinting the run (every plugin's version) would start them.
package runner
