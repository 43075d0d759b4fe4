// Package checked is integer arithmetic that reports overflow instead of
// wrapping: every shape expression of the ONNX importer and of
// graph.Compile (spans, padded and output lengths, parameter counts,
// activation sizes) goes through it, so that an attribute such as
// dilations=[2^62] is refused instead of wrapping to a small number that
// passes the checks after it.
//
// The functions take and return int (64 bits on the platforms uaxai
// builds for; math/bits carries the arithmetic). ok is false when the
// exact result does not fit an int.
//
// Integer arithmetic that reports overflow (Add, Sub, Mul, Prod, Sum, by
// math/bits): every shape expression of the ONNX importer, graph.Compile
// and sdk/nn/ops' output lengths, data generate's byte count
// (data.GenerateBytes) and the recipe's network size (recipe.ArchSize).
package checked
