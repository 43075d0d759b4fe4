#!/usr/bin/env python3
"""The facts sdk/onnx's tests compare its ONNX import with, read by the onnx Python package and PyTorch.

For each network of testdata/golden/archs that keeps its model.onnx, from onnx.load (the official reader):
the opset, the graph inputs and outputs (shape, -1 for a named or missing dimension), the initializers
(shape), and the nodes left once every node whose inputs are all constants is folded (constants: the
initializers and the outputs of folded nodes; a Shape also folds when its input is a graph input of fixed
shape); the folded set is the one of sdk/onnx (Constant, ConstantOfShape, Shape, Gather, Unsqueeze,
Squeeze, Concat, Slice, Reshape, Transpose, Cast, Range, Identity, Add, Sub, Mul, Div). From PyTorch
(archs.py): model.named_modules() and the padding of every nn.ConstantPad1d; per module, its type and
hyper-parameters ("torch_modules": Conv1d kernel, stride, dilation, groups, padding, out, bias; pools kernel,
stride, padding, ceil_mode, count_include_pad; BatchNorm1d eps; Linear out, bias; ConstantPad1d padding,
value); and "fx", the model's forward as torch.fx traces it, read as the graph ops an evaluation export
computes ("op", "module" for a module call, key attributes): a Conv1d whose output only a BatchNorm1d reads
takes the BatchNorm in (as torch.onnx.export folds it; "fused_bn" names it), a ConstantPad1d of zeros that only a Conv1d reads
becomes part of the convolution's padding, Dropout (absent from an evaluation export) is left out, and
x.mean(dim=2) is globalavgpool.

Usage, from the repository's root:
    /usr/bin/python3 testdata/peers/onnx_ops.py > testdata/golden/archs/onnx_import.json
Needs Debian's python3-onnx (1.12) and python3-torch (1.13).
"""
import json, os, sys

import operator

import onnx
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "archs")
sys.path[:0] = [ROOT]
import archs  # noqa: E402

FOLD = {"Constant", "ConstantOfShape", "Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Reshape",
        "Transpose", "Cast", "Range", "Identity", "Add", "Sub", "Mul", "Div"}


def shape(vi):
    return [d.dim_value if d.HasField("dim_value") else -1 for d in vi.type.tensor_type.shape.dim]


def hyper(mod):
    """A module's type and hyper-parameters, or None for containers and modules without any."""
    t = type(mod).__name__
    if isinstance(mod, nn.Conv1d):
        p = mod.padding if isinstance(mod.padding, str) else [mod.padding[0], mod.padding[0]]
        return {"type": t, "kernel": mod.kernel_size[0], "stride": mod.stride[0], "dilation": mod.dilation[0],
                "groups": mod.groups, "padding": p, "out": mod.out_channels, "bias": mod.bias is not None}
    if isinstance(mod, (nn.MaxPool1d, nn.AvgPool1d)):
        one = lambda v: v if isinstance(v, int) else v[0]
        h = {"type": t, "kernel": one(mod.kernel_size), "stride": one(mod.stride), "padding": one(mod.padding),
             "ceil_mode": bool(mod.ceil_mode)}
        if isinstance(mod, nn.AvgPool1d):
            h["count_include_pad"] = bool(mod.count_include_pad)
        return h
    if isinstance(mod, nn.BatchNorm1d):
        return {"type": t, "eps": mod.eps}
    if isinstance(mod, nn.Linear):
        return {"type": t, "out": mod.out_features, "bias": mod.bias is not None}
    if isinstance(mod, nn.ConstantPad1d):
        return {"type": t, "padding": list(mod.padding), "value": mod.value}
    return None


FUNCS = {F.relu: "relu", torch.relu: "relu", F.gelu: "gelu", F.silu: "silu", torch.tanh: "tanh",
         torch.sigmoid: "sigmoid", F.softmax: "softmax", torch.cat: "concat", operator.add: "add"}


def fx_ops(module):
    """The graph ops of an evaluation export of module, from its torch.fx trace."""
    g = torch.fx.symbolic_trace(module).graph
    mods = dict(module.named_modules())
    users = {n: list(n.users) for n in g.nodes}
    is_mod = lambda n, cls: n.op == "call_module" and isinstance(mods[n.target], cls)
    ops, skip = [], set()
    for n in g.nodes:
        if n in skip or n.op in ("placeholder", "output"):
            continue
        if n.op == "call_module":
            mod, h = mods[n.target], hyper(mods[n.target])
            e = {"op": None, "module": n.target}
            if isinstance(mod, nn.Conv1d):
                pad = list(h["padding"])
                src = n.args[0]
                if is_mod(src, nn.ConstantPad1d) and mods[src.target].value == 0 and len(users[src]) == 1:
                    pad = [pad[0] + mods[src.target].padding[0], pad[1] + mods[src.target].padding[1]]
                bias = h["bias"]
                if len(users[n]) == 1 and is_mod(users[n][0], nn.BatchNorm1d):
                    skip.add(users[n][0])
                    bias = True
                    e["fused_bn"] = users[n][0].target
                e.update(op="conv1d", kernel=h["kernel"], stride=h["stride"], dilation=h["dilation"], groups=h["groups"],
                         out=h["out"], padding=pad, bias=bias)
            elif isinstance(mod, nn.ConstantPad1d):
                if mod.value == 0 and len(users[n]) == 1 and is_mod(users[n][0], nn.Conv1d):
                    continue
                e.update(op="pad", left=mod.padding[0], right=mod.padding[1], value=mod.value)
            elif isinstance(mod, (nn.MaxPool1d, nn.AvgPool1d)):
                e.update(op="maxpool1d" if isinstance(mod, nn.MaxPool1d) else "avgpool1d",
                         kernel=h["kernel"], stride=h["stride"], padding=h["padding"])
            elif isinstance(mod, nn.BatchNorm1d):
                e.update(op="batchnorm1d", eps=mod.eps)
            elif isinstance(mod, nn.Linear):
                e.update(op="linear", out=h["out"], bias=h["bias"])
            elif isinstance(mod, nn.Dropout):
                continue
            else:
                raise ValueError("no graph op for module %s (%s)" % (n.target, type(mod).__name__))
            ops.append(e)
        elif n.op == "call_function" and n.target in FUNCS:
            ops.append({"op": FUNCS[n.target], "module": ""})
        elif n.op == "call_method" and n.target == "mean" and n.kwargs.get("dim", n.args[1] if len(n.args) > 1 else None) in (2, -1):
            ops.append({"op": "globalavgpool", "module": ""})
        else:
            raise ValueError("no graph op for %s %s" % (n.op, n.target))
    return ops


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
            "torch_modules": {n: hyper(mod) for n, mod in module.named_modules() if hyper(mod) is not None},
        }
        if a["class"] != "LSTMNet":
            out[name]["fx"] = fx_ops(module.eval())
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
