#!/usr/bin/env python3
"""The facts sdk/onnx's tests compare its ONNX import with, read by the onnx Python package and PyTorch.

For each network of testdata/golden/archs that keeps its model.onnx, from onnx.load (the official reader):
the opset, the graph inputs and outputs (shape, -1 for a named or missing dimension), the initializers
(shape), and the nodes left once every node whose inputs are all constants is folded (constants: the
initializers and the outputs of folded nodes; a Shape also folds when its input is a graph input of fixed
shape); the folded set is the one of sdk/onnx (Constant, ConstantOfShape, Shape, Gather, Unsqueeze,
Squeeze, Concat, Slice, Reshape, Transpose, Cast, Range, Identity, Add, Sub, Mul, Div). From PyTorch
(archs.py): model.named_modules() and the padding of every nn.ConstantPad1d.

Usage, from the repository's root:
    /usr/bin/python3 testdata/peers/onnx_ops.py > testdata/golden/archs/onnx_import.json
Needs Debian's python3-onnx (1.12) and python3-torch (1.13).
"""
import json, os, sys

import onnx
import torch.nn as nn

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "archs")
sys.path[:0] = [ROOT]
import archs  # noqa: E402

FOLD = {"Constant", "ConstantOfShape", "Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Reshape",
        "Transpose", "Cast", "Range", "Identity", "Add", "Sub", "Mul", "Div"}


def shape(vi):
    return [d.dim_value if d.HasField("dim_value") else -1 for d in vi.type.tensor_type.shape.dim]


def main():
    man = json.load(open(os.path.join(ROOT, "manifest.json")))
    out = {}
    for name, a in man["archs"].items():
        path = os.path.join(ROOT, name, "model.onnx")
        if not os.path.exists(path):
            continue
        m = onnx.load(path)
        g = m.graph
        const = {t.name for t in g.initializer}
        static = {i.name for i in g.input if i.name not in const and all(d.HasField("dim_value") for d in i.type.tensor_type.shape.dim)}
        kept = []
        for n in g.node:
            ins = [i for i in n.input if i]
            if n.op_type in FOLD and all(i in const or (n.op_type == "Shape" and i in static) for i in ins):
                const.update(n.output)
            else:
                kept.append({"name": n.name, "op_type": n.op_type})
        module = getattr(archs, a["class"])(cin=a["in_channels"])
        out[name] = {
            "opset": [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")][0],
            "inputs": [{"name": i.name, "shape": shape(i)} for i in g.input if i.name not in {t.name for t in g.initializer}],
            "outputs": [{"name": o.name, "shape": shape(o)} for o in g.output],
            "initializers": {t.name: list(t.dims) for t in g.initializer},
            "nodes": kept,
            "modules": [n for n, _ in module.named_modules()],
            "pads": {n: list(mod.padding) for n, mod in module.named_modules() if isinstance(mod, nn.ConstantPad1d)},
        }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
