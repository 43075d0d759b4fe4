// Package files is the posterior "posterior.files": a finite posterior
// whose K members are networks read from K safetensors files with PyTorch
// state_dict names, trained anywhere (in PyTorch, by `uaxai train`, ...),
// or from K ONNX models of the run's graph architecture (Read).
// Draw s is the network of file s, so S <= K; nothing is trained.
//
// Configuration, exactly one of:
//   - "weights": one file (K = 1), weights = "w.safetensors";
//   - "files": a non-empty list of files, files = ["a.safetensors", "b.safetensors"].
//
// Both keys are listed in Info.Files, so the host resolves relative paths
// against the recipe's folder before Check and Fit, refuses a missing or
// unreadable file at check time, and keys its cache by the files'
// contents. Fit reads every file against FitRequest.Arch (every tensor of
// the architecture with its exact shape and finite values; see
// nn.ParamsFromFile) and records the SHA-256 of each file's bytes in the
// artifact's Meta ("sha256.<i>").
//
// Replicates: the networks are the files, the same in every replicate of
// an experiment repeated over training seeds, so their spread over
// replicates would be zero for want of training rather than measured.
// The plugin does not set Info.Replicates (the host runs more than one
// replicate only with posteriors that do), and Fit refuses a
// FitRequest.Replicate other than 0.
package files
