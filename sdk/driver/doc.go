// Package driver is the host's side of the uaxai plugin contract: it
// drives plugins, in process (Local) or in a plugin process over gRPC
// (PluginSet, for a hashicorp/go-plugin client), so that both behave the
// same: every request and answer is checked, every error names the plugin
// and the method, and a panic becomes an error.
//
// Plugin authors never import it: they implement an interface of package
// sdk and call sdk.Serve. The split follows terraform-plugin-go's, whose
// provider-facing types and server are apart from the host's client.
//
// A posterior and a summary are driven through their sdk interfaces. An
// explainer is driven through Explainer: each model draw is loaded once
// (over gRPC, its parameters cross once) and batches then name it.
//
// The host's side of the plugin protocol (authors never import it).
//
// # The model service
//
// An explainer whose Info.WantsModel is set never receives parameters: the
// host computes its network. driver.ModelService (one per plugin.Manager,
// closed with it) listens on a unix socket in a private 0700 temp
// directory from the first such Load. The explainer client's Load builds
// the draw's nn.GraphModel in the host, registers it under a random 64-bit
// handle and sends LoadRequest{service: {address, handle}}; every
// ExplainRequest carries the same ModelService; Close releases the
// plugin's handle and then unregisters the draw. service Model of the
// protocol answers, in batches: Describe (arch JSON, input length,
// classes, pooled length), Probs, InputGrad (gradient and probabilities),
// Layer (a layer's shape, or its activations and gradient), Windows
// (occlusion's inner loop: the class probability of every occluded copy of
// each input, every channel's window or, with channel set, one channel's,
// and of the input itself by the same computation) and Spans
// (LIME/KernelSHAP's: copies with sets of spans set to a baseline; a span
// covers every channel, or, with channels, one input channel each:
// ChannelSpanProbs). Windows and Spans take the model's incremental paths
// (nn.Perturbed: the graph's receptive-field recomputation, trunk and
// boundary plans), so a plugin in another language
// is not held to a forward pass a window. An explainer that does not want
// the service gets the draw's parameters, for a graph network as for one
// of layers, with each node's output shape (wire.LoadParams): a Go plugin
// builds the graph itself (nn.Open), and the Captum bridge rebuilds it in
// torch (build_graph, node by node, the op table's semantics in torch
// modules; sdk/python/tests' TestRebuildGraph/test_graph_golden_maps
// against the golden archs' probabilities, input gradients and Grad-CAM,
// and TestPythonCaptumBridge against nn.GraphModel's input gradient on
// graphtest.EveryOp, a graph of every op kind, through the host).
//
// The service checks every request before computing: a known handle, whole
// inputs, finite values, targets in range, a known layer, windows and
// spans inside the input and in order. A rejection is InvalidArgument or
// NotFound with what would have been accepted; nothing a plugin sends
// makes the host panic (the handler turns a panic into Internal).
//
// Bounded before it allocates (sdk/driver/servicelimits.go, bounds in
// sdk/internal/proto/service.go). The service registers its own handlers
// (not the generated ones, which decode first) so that, for each call:
//
//  1. it takes one of GOMAXPROCS turns *before a byte of the message is
//     read* (a waiting call holds only its 256 KiB flow-control window in
//     the transport; a connection has at most 8 calls open, the service
//     at most 32 connections, the 33rd closed at once);
//  2. the message is read only up to MaxServiceMessage (24 MiB: x and
//     baseline_x at 2^21 float32 values each, and 8 MiB of indices), gRPC
//     refusing a larger one from its header;
//  3. a codec hands over the raw bytes, and checkRaw counts every field
//     on the wire (packed varints become 8-byte ints when decoded)
//     against its bound: x and baseline_x 8 MiB, targets 2^16, starts
//     2^20, span pairs 2^20, perturbations 2^16, a layer name 256 bytes;
//     only then is the message decoded;
//  4. answers are bounded too (a batch's probabilities and a layer's
//     activations at 2^21 values; windows at 2^22), checked before the
//     arrays are made. An admitted call thus holds a few times 24 MiB at
//     most, and the host's memory is bounded by GOMAXPROCS of those,
//     whatever the plugins send: TestModelServiceBoundsMemory sends 16 of
//     the largest legal requests at once from another process, and the
//     host's heap grows by 66 MiB (2 cores). The Go client
//     (sdk/servicemodel.go) and the Python kit split a batch into as many
//     requests as the bounds take, so an explainer never sees them;
//     TestPythonKitHasTheServiceBounds keeps the Python copy of the
//     numbers equal to Go's.
//
// Served draws. A posterior may compute its own draws' networks (a PyTorch
// module in a Python plugin) and serve them through the same service Model
// from its own process. It sets Info.ServesModels
// (PosteriorInfo.serves_models) and implements sdk.DrawSampler:
// SampleDraws returns one sdk.Draw a seed, {Served: &sdk.ModelRef{Address,
// Handle}} instead of {Params}. The driver's posterior clients (local and
// gRPC) make a fresh 0700 directory inside the host's model-service
// directory (ModelService.DrawDir, removed with it) and send it as
// SampleRequest.socket_dir; the plugin listens there (Go:
// driver.NewModelServiceIn(dir)) and answers SampleResponse.served (a
// ModelService{address, handle} a seed) in place of draws. Before use, the
// driver checks every reference: one a seed, never mixed with parameters,
// the address a socket directly inside socket_dir of at most 107 bytes, a
// handle not 0, and a Describe that answers, with one input length and
// class count for all draws; the engine also checks them against the run's
// architecture. Errors name the posterior, the draw, the reference and
// what failed. The host never sees a served draw's parameters (the cache
// keeps the posterior's Fit artifact as for any posterior). Routing
// (driver.SampleDraws, driver.OpenDraw): the engine's predictions call the
// draw's Probs at its service (sdk.OpenModel's ServedModel.Call turns a
// failed call into an error); an in-process Go explainer gets an nn.Model
// that is a client of the posterior's service; an out-of-process
// explainer, Go or Python, gets LoadRequest{service: {address, handle}} of
// the posterior's socket, whether it set WantsModel or not, and its model
// calls go straight to the posterior's process. A posterior process that
// dies mid-run fails the next call, named (Unavailable).
//
// Every request of the host to a served draw has a deadline,
// limits.model_call (default 5m): sdk.OpenModel(ctx, ref, sdk.CallLimit)
// takes it (no caller can omit it), and each request of the client
// (Describe, and each batch of Probs, InputGrad, Layer, Windows, Spans)
// runs under its own context.WithTimeout; past it the request fails with
// an *sdk.CallTimeoutError (Probs of 64 inputs: no answer within 5m
// (limits.model_call)), also when the server's copy of the deadline ends
// it first, not when the caller's own context does. The driver's
// ModelCalls carries the limit and what stops the server (Expired):
// host/plugin's posteriors are driver.DrawServers whose Expired kills the
// posterior's process group (as a call past its limit does) and names the
// plugin (posterior.torch (path, pid N): model service at ..., handle H:
// Probs of 64 inputs: no answer within 5m (limits.model_call); killed its
// process group). The engine opens its draws with
// driver.ModelCallsOf(posterior) (its predictions, an analysis's draw
// probabilities), the Sample's checks and an explainer's Load Describe
// with driver.Options.ModelCall, and a Load that failed so stops the
// posterior too; uaxai predict/explain --model bound the PyTorch server's
// draws the same way (TorchServer.ModelCalls kills its group). --limit
// key=duration (run, predict, explain) sets any duration key of [limits]
// over the recipe's or the defaults. The model calls an out-of-process
// explainer makes itself, straight to the draw's socket, have the limit
// too: the protocol's messages have no field for it, so the driver sends
// it in the gRPC metadata of the Load and each Explain of a served draw
// (sdk.WithCallLimit: uaxai-model-call-ms, uaxai-model-call-key), the Go
// sdk's and the Python kit's clients bound each request by it (the nearer
// of it and the call's own deadline), and a request past it ends the
// Explain with DeadlineExceeded and the same message; the driver marks
// that answer (modelCallError), and the engine and uaxai explain hand it
// to the draw's Expired, so the posterior (or the PyTorch server) is
// killed and the explainer, which is not hung, is kept. TestModelCallLimit
// (sdk/driver) holds every request kind against a service that hangs and
// ignores its context, TestModelCallLimitInExplainer an explainer's
// requests over gRPC, test_hung_call_past_the_hosts_limit
// (sdk/python/tests) the Python kit's; TestModelCallHangs (cmd/uaxai) a
// PyTorch module that sleeps on its second call, through predict, explain
// (the host's calls and occlusion's) and run. TestServedDrawsSameRun
// (host/engine) runs occlusion, Grad-CAM, LIME and gradient x input on the
// same networks served and as parameters and gets the same maps,
// predictions and rows.
//
// The socket's directory is uaxai-models-<pid>-*: a new service removes
// those of this user whose process is gone (a SIGKILLed host runs no
// Close), and a TMPDIR too long for a unix socket path (107 bytes) is
// named as the cause with what to do.
//
// The Python kit (sdk/python/uaxai_plugin/model.py) and the Go side
// (sdk/servicemodel.go: serviceModel, an nn.Model, with occlusion's and
// LIME's fast-path interfaces, whose calls panic with a serviceFailure
// that the explainer server turns into the Explain's error) are its two
// clients. A Go explainer works either way and gives the same bytes:
// sdktest.Explainer runs every explainer over gRPC twice, with parameters
// and with the service (driver.Options{Models, ServeModels: true}),
// against the in-process maps.
//
// Models that are not sdk/nn networks. The Python kit's
// uaxai_plugin.torchmodel is a server of the same service Model over
// PyTorch modules (ModelServer, one TorchDraw a draw: a module in eval
// mode, float32, returning the softmax or, with output = "logits", the
// logits), with the same checks, bounds and messages as the host's. Such a
// draw is described by its shape only: Describe's arch_json is an nn.Arch
// with a name, in_channels and in_len and no layers, pooled_len is 0, and
// ModelInfo.layers lists the layers a Layer request may name (module paths
// such as block3 or inc3.convs.2, those whose output is (B, C, L) and that
// run once a forward pass; an LSTM's output sequence as hidden x steps)
// with their shapes. Layer takes the module's output by a forward hook and
// its gradient by autograd; Windows and Spans build the perturbed copies
// in torch and run them in forward passes of at most chunk (128) copies.
// The Go client takes such a model as any other (sdk.DialModel dials one
// directly; LayerShape answers from the listed layers), so occlusion,
// gradient x input, LIME and Grad-CAM run on it; Grad-CAM's receptive-
// field alignment needs sdk/nn layers or a graph (Arch.Graph: each sample
// takes the layer position whose field, from graph.Net.LayerSpan, is
// centred nearest, so strided layers map back by receptive field), and on
// an Arch with neither only align = "none" (the raw map, zero past the
// layer's positions), "linear" and "nearest" (the positions resampled to
// the input's length as PyTorch's F.interpolate) are accepted.
// internal/torchgolden runs Go's occlusion, Grad-CAM and input gradients
// through the Python server on the six networks of testdata/golden/archs
// against PyTorch's maps (1e-4 of each map's largest value).
//
// posterior.torch (plugins/posterior/torch, on the kit's
// uaxai_plugin.posterior) is that server's posterior: the user's module
// (file, module, args) with one or several state_dict files (weights: draw
// s is member s) or with mc_dropout (uaxai_plugin.mcdropout: each
// torch.nn.Dropout and the attention dropout of each
// torch.nn.MultiheadAttention masked, in a copy a draw, by a mask that is
// a fixed function of the draw's seed, the layer and the activation's
// shape, shared by the inputs of a batch, with no TransformerEncoderLayer
// fast path: a draw is one thinned network, the same in the no_grad and
// the gradient calls). Fit loads everything and records the
// files' SHA-256; Sample loads each member once a process and registers
// the draws in a ModelServer listening on a socket inside socket_dir (all
// servers of the process share one compute lock).
// TestTorchPosteriorSameNetworkTwoRoutes (host/runner) runs the paper's
// network as posterior.files parameters and as a torch module with the
// same weights file: the occlusion and gradient x input maps agree within
// 1e-4 of each map's largest value (5e-6 measured) and the predictions are
// equal.
//
// # Tests
//
//   - The model service: sdk/driver/modelservice_test.go (every call
//     against the local network's bytes and against forward passes of the
//     perturbed inputs built in the test; every malformed request refused
//     with what would be accepted; the bounds accepted),
//     servicelimits_test.go (the hostile requests of issue 20 sent as raw
//     wire bytes from a process of their own, refused before decoding, the
//     heap measured; waiting calls not read; connections bounded; stale
//     socket directories removed), sdk/servicemodel_test.go (the Go
//     client's every method and fast path, failures as the Explain's
//     error), host/plugin TestModelServiceOutOfProcess, host/runner
//     TestPythonExplainersInARecipe (python-occlusion scores as the Go
//     occlusion under all four posteriors; 1 and 2 workers give the same
//     bytes), sdk/python/tests (the kit against a fake service in Python
//     with closed forms; KernelSHAP against brute-force Shapley values, of
//     (channel, segment) players too, a zero-weight channel a null player;
//     python-occlusion against a plain-loop reference), host/plugin
//     TestPythonHostile (raise, hang, chatter, die) and
//     TestPythonCaptumBridge; the choice of interpreter in
//     host/plugin/interpreter_test.go (a python3 without numpy first on
//     PATH, none that works, $UAXAI_PYTHON, the manifest's python, an
//     interpreter that hangs) and host/runner TestShippedRecipesCheck
//     (recipes/python_explainers.toml with that python3 first on PATH;
//     .ci/run runs the Python tests once more so).
package driver
