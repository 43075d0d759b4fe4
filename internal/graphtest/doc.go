// Package graphtest holds small graph networks (sdk/nn/graph specs) that
// tests of several packages train and explain. It imports only
// sdk/nn/graph, so sdk/nn's own tests may use it.
package graphtest
