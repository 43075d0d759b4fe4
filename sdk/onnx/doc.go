// Package onnx reads an ONNX model, as torch.onnx.export writes it, into a
// plain and validated description of its compute graph: the inputs and
// outputs with their shapes, the initializers (the weights, as float32 or
// int64 tensors) and the nodes in topological order, each with its
// operator, its named inputs and outputs and its attributes. It executes
// nothing.
//
// At import, every node whose inputs are all constants is evaluated and
// replaced by an initializer (constant folding, as onnx-simplifier does):
// torch writes F.pad as a subgraph of Constant, ConstantOfShape, Concat,
// Reshape, Slice, Transpose and Cast on constants, which becomes the Pad
// node's constant pads. What remains must use only the operators of
// SupportedOps; anything else is refused with the node's name, its
// operator and that list.
//
// Accepted: the default operator set (domain "" or "ai.onnx") at versions
// 13 to 17; tensors of FLOAT (float32) and INT64, their data in raw_data
// (little endian) or in the typed fields (float_data, int64_data), inside
// the file (external data is refused). Sizes are checked before anything
// is allocated: a tensor's data must match the product of its dims, and
// the elements of all tensors together are at most MaxElements (those the
// folding creates at most MaxFoldElements).
//
// Node names carry the PyTorch module path (see ModulePath), so a layer
// of the PyTorch model can be found in the graph (Model.ModuleOutput).
//
// ONNX import (for --model file.onnx, a recipe's [model] onnx and
// posterior.files's ONNX members): Read/Decode give a plain Model (opset
// 13-17, inputs and outputs with -1 for dynamic dims, float32/int64
// initializers, nodes in topological order with attributes); constant
// subgraphs (torch's F.pad) folded at import (exactly or refused: integer
// arithmetic and counts through internal/checked or unsigned, every
// tensor's shape bounded by MaxElements/MaxFoldElements with its zero
// dimensions taken as 1, so no stride wraps); operators outside
// SupportedOps refused by node name; ModulePath (a node's PyTorch module
// from its name) and Model.ModuleOutput; ToSpec/LoadSpec convert a model
// into an sdk/nn/graph Spec and its parameters by <node>.<suffix> (Conv,
// Pad merged into a following Conv/AveragePool when zero, pools, global
// pools/ReduceMean, BatchNormalization, Gemm or MatMul+Add, Erf-GELU,
// SiLU and LayerNorm patterns, activations, Add, Concat, Dropout; anything else refused
// by node, attribute and what is accepted), nodes named by module path
// (block1.conv1; block1.relu, block1.relu_2 where a module has several) so
// state_dict names and Grad-CAM layers resolve, in linear time (a base
// name's suffix resumes where it stopped; TestImportLinear counts the
// probes); every value at most MaxLen (2^24) samples and MaxElements
// values, and pads, kernel_shape, strides and dilations beyond MaxLen
// refused naming the attribute, shape arithmetic checked; Decode, each
// fold, ToSpec and each node's conversion recover a panic into an error
// naming the node, a last-resort net FuzzFold (seeded with the golden
// exports and a graph per folded operator) fails on if it ever catches
// one; schema sdk/internal/onnxpb (official onnx.proto 1.12, generated,
// committed).
package onnx
