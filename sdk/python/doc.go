// Package python holds the Go test of the Python kit (uaxai_plugin).
//
// The Python kit: serve(explainer) (and
// posterior.serve_posterior(posterior): the Posterior service, Info,
// Check, Parts, Fit, Sample with served draws) prints go-plugin's
// handshake line and serves the Explainer service, grpc.health ("plugin")
// and go-plugin's controller (Shutdown) and stdio on a unix socket; wire
// conversions as sdk/internal/wire; errors as the Go side's (ValueError a
// plain message, other exceptions Internal); committed stubs (_pb/,
// generate.sh); Debian's python3-grpcio/protobuf/numpy only. model is a
// client of the host's model service (wants_model=True) or the draw's
// architecture and parameters, with each layer's (or graph node's, up to
// the output) output shape as the host computed it (shapes(model.arch):
// the Load's Params.layers, from nn.Arch.OutputShapes, checked, never
// recomputed: the kit has no shape rules and no switch on layer kinds;
// sdk/python/kit_test.go checks them against Go's for the paper's network,
// every kind and resnet1d through the protocol's bytes, and writes
// tests/testdata/archs.json, the networks of the kit's Python tests).
package python
