// Package nn is the network library of uaxai and its plugins: the
// architectures, the parameters, the Model an explainer computes with,
// and training. One engine computes every network: the graph executor of
// sdk/nn/graph, with the explainers' fast paths as its plans (the trunk
// plan and its cache for MC dropout, the boundary plan on planes for
// occlusion's windows and LIME's spans, sparse backward passes through a
// global max pool).
//
// An Arch names an architecture: the built-in paper-1dcnn (LookupArch), a
// recipe's [model] in_channels, in_len and [[model.layers]], or a graph of
// ops (Arch.Graph: a recipe's [model] graph or onnx, --model, the ONNX
// members of posterior.files). The first two are a small front end
// (layers.go): they compile to a graph.Spec, a node a layer, so a network
// of layers and a graph are computed, trained and explained by the same
// code. Arch.Reshaped puts an
// architecture on C channels of T samples with K classes (the output
// linear's out); Arch.OutputShapes gives each node's named output shape up
// to the output, which the host sends with a Load's parameters. A graph
// architecture keeps its spec in canonical form: its layout, classes, JSON
// form (graph.Node's attributes decoded to the op table's types), and
// Same, architectures compared by that form.
//
// Parameters are one flat float32 vector with PyTorch's state_dict names
// (safetensors I/O in sdk/nn/safetensors). Open(params) is the one way to
// a Model: a compiled graph (GraphModel, a pool of nets, safe for
// concurrent use), or, for a served draw, the
// sdk's client of its model service. A Model's calls take a context and
// return errors; perturbed copies of an input are one Perturbation,
// computed by Perturbed: the model's own path (Perturber) or forward
// passes of explicit copies. Pass (NewPass) is a network's
// logits and parameter gradients under a parameter vector given each
// call: what Train (Adam, the paper's protocol), EvaluatePass and
// Laplace's Fisher compute with. FoldDropout and DropoutInputs fold a
// dropout node into its one linear or conv1d reader.
//
// Tensors are laid out as PyTorch lays them out: activations are (B, C, T)
// row-major, conv weights (out, in, kernel), linear weights (out, in).
package nn
