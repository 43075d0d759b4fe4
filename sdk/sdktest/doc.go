// Package sdktest is the conformance kit a plugin author runs in their own
// tests. Each function runs a plugin both in process and over the real
// plugin protocol (served as sdk.Serve serves it, inside the test process,
// through go-plugin's gRPC transport) on a small case the author
// provides, and reports every broken rule with t.Errorf:
//
//   - Info: sdk.Describe accepts it (the ID is namespaced by the kind,
//     a version is set, only the kind's fields are set); the remote Info
//     equals the in-process one.
//   - Check accepts the case's config and rejects an unknown key with an
//     error that names it, in process and remotely.
//   - Answers have the right shape and finite values (the checks the
//     host applies, in sdk/driver).
//   - The plugin does not modify its inputs.
//   - Determinism: the same request gives the same bytes, whatever the
//     batch split (and, for posteriors, the number of workers).
//   - Seeds: a stochastic explainer's maps change with the seeds, a
//     deterministic one's do not; a continuous posterior's draws change
//     with the seeds, and draw s depends on Seeds[s] only (a finite
//     posterior's draw s is its member s).
//   - Parts: a parted posterior's (sdk.Parted) parts are disjoint in
//     their tensors, agree on their shared Meta keys, and join to the
//     whole fit's artifact, whatever the workers of each fit.
//   - Replicates: a posterior that sets Info.Replicates fits another
//     artifact in replicate 1 (FitRequest.Replicate) than in replicate 0,
//     deterministically, and the same one over the wire.
//   - The remote answer equals the in-process answer bit for bit. An
//     explainer is run remotely twice: with the draw's parameters sent to
//     the plugin (unless it wants the model service), and with the host's
//     model service computing its network (sdk.Info.WantsModel), which
//     must give the same maps and leave no draw served after its release.
//
// A typical test:
//
//	func TestConformance(t *testing.T) {
//		sdktest.Explainer(t, occlusion.New(), sdktest.ExplainerCase{
//			Model: params, X: x, Targets: []int{3, 7},
//			Config: sdk.Config{"window": int64(8)},
//		})
//	}
//
// The conformance kit: runs a plugin in process and over gRPC (an
// explainer both with its parameters and with the model service);
// ExplainerCommand runs the checks that need no in-process twin on an
// explainer executable in any language, on DefaultCase (the paper's
// network); a Python script (#! line naming python, or .py) runs as
// <interpreter> <script>, the interpreter chosen by internal/pyinterp as
// the host's (no plugin.toml), its error failing the test.
//
// # Tests
//
//   - sdk/sdktest: the contract a plugin promises (determinism, batch
//     independence, seeds, finite answers, remote = in process, with the
//     parameters and with the model service, a finite posterior's draw s
//     is its member s); its own tests feed it broken plugins, in Go and
//     (through ExplainerCommand) in Python, and run the README's Python
//     plugin.
package sdktest
