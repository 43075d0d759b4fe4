// Package sdk is what a uaxai plugin author imports: the three plugin
// interfaces (Posterior, Explainer, Summary), their request and result
// types, Serve, and the network library in sdk/nn.
//
// A plugin is a Go value that implements one of the interfaces; each of
// them embeds Plugin, so every plugin describes itself with one Info. Its
// main function is one line:
//
//	func main() { sdk.Serve(myexplainer.New()) }
//
// The host runs it out of process over gRPC (hashicorp/go-plugin); the
// protocol is internal to this module. The host's side of it is package
// sdk/driver, which a plugin author never needs.
//
// What a plugin author imports: the interfaces, Info, Describe, Config,
// Serve.
//
// # The plugin contract
//
// Every plugin value satisfies sdk.Plugin: Info() sdk.Info. One Info type
// serves all kinds: ID (kind.name), Version, Summary, and the fields of
// its kind only (posterior: Finite; explainer: Needs, Stochastic; summary:
// Output, MinDraws). sdk.Describe(p) is the one function that reads a
// plugin's kind (from the interface it implements) and checks its Info:
// the ID's namespace matches the kind, the version is set, no field of
// another kind is set, a summary's output is map, set or band. sdk.Serve,
// the host's Registry.Add and sdktest all call it.
//
// The three kinds:
//
//   - sdk.Posterior: Check(cfg, draws) (draws is the S the recipe asks
//     for, so a finite posterior can refuse more than its members), Fit
//     (returns an Artifact the host caches), Sample (draw s depends only
//     on the artifact, the config and Seeds[s]; a finite posterior's draw
//     s is its member s). A posterior that serves its draws
//     (Info.ServesModels, see "Served draws" below) also implements
//     sdk.DrawSampler.
//   - sdk.Explainer: Check(cfg), Explain(ctx, m nn.Model, req): one map a
//     input of the batch, signed. A stochastic explainer gets one seed a
//     input, engine.ExplainerSeed(seed, split, record, draw, repeat)
//     (rng.Key(seed, "explainer", split, record, draw) at repeat 0).
//   - sdk.Summary: Check(cfg), Summarise(ctx, draws, cfg): a batch of
//     inputs, each with its S maps; one Result a input: a map, a set or a
//     band (Info.Output). The engine scores maps only. Set and band
//     summaries run on the same explained records; their results leave the
//     engine as Results.Outputs, handed block by block to the plan's
//     Sink.Output (the runner writes each to outputs/*.csv and the engine
//     drops the records, so memory does not grow with them).
//
// A posterior whose fit is made of parts that can be fitted on their own
// implements sdk.Parted: Parts(cfg) is their number K (K <= 1: not
// parted). FitRequest.Part/Parts ask for one part; the parts' artifacts
// are disjoint in their tensors, agree on the Meta keys they share, and
// their union is the whole fit's artifact bit for bit, whatever each fit's
// workers. posterior.ensemble is parted by member (part k is member.<k>
// and seed.<k>, trained from its seed in the whole fit);
// posterior.deterministic answers 1. The drivers answer Parts for every
// posterior (0 if not parted; an older plugin's Unimplemented is 0), check
// 0 <= K <= 100000 and 0 <= Part < Parts, and refuse a part of a posterior
// that is not parted. sdktest checks the contract part by part, in process
// and over gRPC.
//
// A fit may be one replicate of an experiment repeated over training seeds
// ([replicates]): FitRequest.Replicate r >= 0 (protocol field
// FitRequest.replicate), with FitRequest.Seed the replicate's seed;
// replicate 0 is the run without replicates. A posterior that honours it
// maps every training seed it uses, its table's included, through
// sdk.ReplicateSeed(seed, req): seed itself for r = 0 (today's networks,
// byte for byte), else rng.Key(seed, "replicate", decimal(req.Seed), r,
// -1), a bijection of seed for a given replicate, so distinct table seeds
// stay distinct. An older plugin ignores the field and, where its table
// fixes the seeds, fits replicate 0's networks again, which the host could
// not tell from the artifact; so a posterior says that it honours
// replicates with Info.Replicates (PosteriorInfo.replicates), and a host
// runs more than one replicate only with posteriors that set it. The
// built-in ensemble, deterministic, MC-dropout and Laplace posteriors set
// it (Laplace's own calibration draws come from
// sdk.ReplicateSeed(req.Seed, req); its base gets the same replicate);
// posterior.files, whose networks do not depend on a seed, does not, and
// refuses a replicate other than 0. The drivers and sdk.Serve refuse a
// negative replicate; sdktest checks that a posterior setting
// Info.Replicates fits another artifact in replicate 1, deterministically,
// and the same one over gRPC.
//
// The host drives plugins through sdk/driver, in process (driver.Local,
// used for tests) or over gRPC (driver.PluginSet, driver.DialOptions,
// driver.Handshake for a go-plugin client). Both paths apply the same
// checks (sdk/driver/checks.go, sdk/internal/check): requests are checked
// before they leave the host, answers before the host uses them (counts,
// lengths, finite values, lower <= upper), errors are prefixed <id>:
// <method>:, panics become errors, and a posterior's progress reports
// reach the host one at a time and never after Fit returns. A posterior
// and a summary are driven through their sdk interfaces; an explainer
// through driver.Explainer, whose Load(ctx, sdk.Draw) hands it one draw
// (parameters, or a served draw's reference) and returns a driver.Model
// that explains batches under that draw until Close. Over gRPC, Load sends
// the parameters once and gets a handle; every Explain batch carries only
// the handle; Close releases it. The engine loads the S draws before a
// (posterior, explainer) block and releases them after it.
package sdk
