// Package builtin lists the plugins compiled into the uaxai binary. The host
// serves each one out of process by re-executing itself
// ("uaxai plugin serve <id>"), so built-ins speak the same protocol as a
// third-party plugin binary.
//
// The list of built-in plugins (the only place that names them).
//
// The built-in posteriors (ensemble, deterministic, mcdropout, files, and
// laplace, fitted post hoc on deterministic; each on a network of layers
// or a graph architecture alike: training through nn.Train, Laplace's
// Fisher through nn.Pass, MC dropout's node mc_dropout before a graph's
// output linear, files reading ONNX members of a graph), explainers
// (occlusion, gradcam, lime; gradinput is the third-party example), the
// Python plugins (explainer/python-*; posterior/torch, the user's PyTorch
// networks, served) and summaries (mean, variance, quantile, cv,
// agreement, band, iband); they import sdk, and the summaries compute with
// sdk/stat.
package builtin
