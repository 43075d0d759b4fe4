package graph

import (
	"fmt"

	"github.com/uaxai/uaxai/internal/checked"
)

// Bounds on what a Spec may ask for, whether it comes from TOML, JSON or
// ONNX: Compile refuses a spec beyond them before it allocates anything
// sized by its numbers, and every shape expression (spans, padded and
// output lengths, channel sums, sizes, parameter counts) is computed with
// overflow checks (internal/checked). They are far above what a
// time-series network uses (the golden archs have at most 40 nodes, 0.3 M
// parameters and 5 M values a sample) and keep one network's memory
// below a few GiB.
const (
	// MaxNodes bounds a spec's nodes (and a spec file's node tables),
	// the same bound as a recipe's [[model.nodes]].
	MaxNodes = 1024
	// MaxInputs bounds the inputs of one node (concat).
	MaxInputs = 256
	// MaxExtent bounds the lengths in time an attribute gives: kernel,
	// stride, dilation, padding (conv1d, pooling) and pad's left and
	// right. With it the dilated kernel, dilation*(kernel-1)+1, is
	// below 2^40.
	MaxExtent = 1 << 20
	// MaxOut bounds conv1d's and linear's out (and groups), as a recipe's
	// layers' out.
	MaxOut = 1 << 16
	// MaxParams bounds the parameters, 256 MiB as float32 (a recipe's
	// bound, recipe.MaxParams, is this one).
	MaxParams = 1 << 26
	// MaxValues bounds a sample's values: the input's C*T and every
	// node's output, added up (1 GiB as float32); a batch's buffers are
	// at most B times this.
	MaxValues = 1 << 28
)

// size is C*T, refused above MaxValues (or on overflow) with what of
// which shape.
func size(s Shape, what string) (int, error) {
	v, ok := checked.Mul(s.C, s.T)
	if !ok || v > MaxValues {
		return 0, fmt.Errorf("%s of %d x %d values is above the bound of %d values a sample (graph.MaxValues, %d MiB as float32)", what, s.C, s.T, MaxValues, MaxValues*4>>20)
	}
	return v, nil
}

// paramLen is the number of values of a parameter of the given shape, or
// an error naming it if the product overflows or is above MaxParams.
func paramLen(name string, shape []int) (int, error) {
	l, ok := checked.Prod(shape...)
	if !ok || l > MaxParams {
		return 0, fmt.Errorf("parameter %s of shape %v is above the bound of %d parameters (graph.MaxParams, %d MiB as float32)", name, shape, MaxParams, MaxParams*4>>20)
	}
	return l, nil
}
