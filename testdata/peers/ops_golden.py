#!/usr/bin/python3
"""Writes testdata/golden/ops/: PyTorch's forward and backward of the ops of
sdk/nn/ops on fixed seeded inputs, and the output lengths of Conv1d,
MaxPool1d and AvgPool1d on a grid of sizes (0 where torch refuses).

    /usr/bin/python3 ops_golden.py --seed 24 --out ../golden/ops

Every case folder holds its tensors as headerless CSV (%.9g of float32, one
row per last-axis vector): the inputs, the upstream gradient dy (the loss is
sum(y * dy)), the output y and the gradients torch.autograd gives. The case
parameters are in manifest.json.
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn.functional as F


def save(folder, name, t):
    a = t.detach().cpu().numpy().astype(np.float32)
    a = a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
    with open(os.path.join(folder, name + ".csv"), "w") as f:
        for row in a:
            f.write(",".join("%.9g" % v for v in row) + "\n")


def run(out, name, params, inputs, fn, manifest):
    """inputs: dict name -> tensor (leaves get gradients). fn(**inputs) -> y."""
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    leaves = {k: v.clone().requires_grad_(v.dtype.is_floating_point) for k, v in inputs.items()}
    y = fn(**leaves)
    dy = torch.randn(y.shape)
    (y * dy).sum().backward()
    for k, v in leaves.items():
        save(folder, k, v)
        if v.grad is not None:
            save(folder, "d" + k, v.grad)
    save(folder, "y", y)
    save(folder, "dy", dy)
    manifest["cases"][name] = dict(params, shapes={k: list(v.shape) for k, v in inputs.items()}, yshape=list(y.shape))


def conv_case(out, man, name, B, cin, cout, k, s, d, g, pl, pr, T, bias):
    x = torch.randn(B, cin, T)
    w = torch.randn(cout, cin // g, k) / np.sqrt(cin // g * k)
    inputs = dict(x=x, w=w)
    if bias:
        inputs["b"] = torch.randn(cout)

    def fn(x, w, b=None):
        return F.conv1d(F.pad(x, (pl, pr)), w, b, stride=s, dilation=d, groups=g)

    run(out, name, dict(op="conv1d", cin=cin, cout=cout, kernel=k, stride=s, dilation=d, groups=g,
                        padl=pl, padr=pr, T=T, bias=bias), inputs, fn, man)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    man = {"seed": a.seed, "torch": torch.__version__, "numpy": np.__version__, "cases": {}}
    out = a.out
    os.makedirs(out, exist_ok=True)

    conv_case(out, man, "conv_same", 2, 3, 4, 5, 1, 1, 1, 2, 2, 17, True)
    conv_case(out, man, "conv_s2_d2_g2_asym", 2, 4, 6, 3, 2, 2, 2, 1, 3, 20, True)
    conv_case(out, man, "conv_depthwise_s3", 2, 4, 4, 7, 3, 1, 4, 3, 3, 22, False)
    conv_case(out, man, "conv_d3_s2_valid", 2, 2, 3, 4, 2, 3, 1, 0, 0, 23, True)
    conv_case(out, man, "conv_g3_mult2_asym", 1, 3, 6, 2, 1, 1, 3, 0, 1, 9, True)

    x = torch.randn(2, 3, 7)
    run(out, "pad", dict(op="pad", left=2, right=3, value=0.5, T=7), dict(x=x),
        lambda x: F.pad(x, (2, 3), mode="constant", value=0.5), man)

    # pooling inputs rounded to 0.5 so that windows hold ties
    for name, k, s, p, T in [("k3_s2_p1", 3, 2, 1, 15), ("k4_s3_p2", 4, 3, 2, 16), ("k2_s2_p0", 2, 2, 0, 11)]:
        x = torch.round(torch.randn(2, 3, T) * 2) / 2
        run(out, "maxpool_" + name, dict(op="maxpool", kernel=k, stride=s, pad=p, T=T), dict(x=x),
            lambda x: F.max_pool1d(x, k, s, p), man)
        x = torch.randn(2, 3, T)
        run(out, "avgpool_" + name, dict(op="avgpool", kernel=k, stride=s, pad=p, T=T), dict(x=x),
            lambda x: F.avg_pool1d(x, k, s, p), man)

    x = torch.randn(2, 3, 13)
    run(out, "globalavg", dict(op="globalavg", T=13), dict(x=x), lambda x: F.adaptive_avg_pool1d(x, 1), man)
    run(out, "meantime", dict(op="globalavg", T=13), dict(x=x), lambda x: x.mean(-1), man)
    run(out, "globalmax", dict(op="globalmax", T=13), dict(x=x), lambda x: F.adaptive_max_pool1d(x, 1), man)

    x = torch.randn(2, 3, 9) * 3
    x[0, 0, :3] = torch.tensor([0.0, 12.0, -12.0])
    acts = {
        "relu": F.relu,
        "leakyrelu": lambda x: F.leaky_relu(x, 0.1),
        "gelu": F.gelu,
        "silu": F.silu,
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
    }
    for n, f in acts.items():
        run(out, "act_" + n, dict(op="act", act=n, slope=0.1), dict(x=x), lambda x, f=f: f(x), man)

    run(out, "softmax_ct", dict(op="softmax", C=5, T=3), dict(x=torch.randn(2, 5, 3) * 2),
        lambda x: F.softmax(x, dim=1), man)
    run(out, "softmax_vec", dict(op="softmax", C=6, T=1), dict(x=torch.randn(4, 6) * 2),
        lambda x: F.softmax(x, dim=1), man)

    run(out, "add", dict(op="add"), dict(a=torch.randn(2, 3, 5), b=torch.randn(2, 3, 5)),
        lambda a, b: a + b, man)
    run(out, "concat", dict(op="concat", chans=[1, 2, 3], T=4),
        dict(a=torch.randn(2, 1, 4), b=torch.randn(2, 2, 4), c=torch.randn(2, 3, 4)),
        lambda a, b, c: torch.cat([a, b, c], dim=1), man)

    run(out, "linear", dict(op="linear", inf=7, outf=4),
        dict(x=torch.randn(5, 7), w=torch.randn(4, 7) / np.sqrt(7), b=torch.randn(4)),
        lambda x, w, b: F.linear(x, w, b), man)

    C, T = 3, 9
    rm, rv = torch.randn(C), torch.rand(C) + 0.5
    run(out, "batchnorm_eval", dict(op="batchnorm", C=C, T=T, eps=1e-5),
        dict(x=torch.randn(2, C, T), gamma=torch.randn(C), beta=torch.randn(C), mean=rm, var=rv),
        lambda x, gamma, beta, mean, var: F.batch_norm(x, mean.detach(), var.detach(), gamma, beta,
                                                       training=False, eps=1e-5), man)

    # output lengths; 0 where torch raises
    with open(os.path.join(out, "conv_shapes.csv"), "w") as f:
        f.write("T,kernel,stride,pad,dilation,out\n")
        for T in (1, 2, 5, 8, 13):
            for k in (1, 2, 3, 7):
                for s in (1, 2, 3):
                    for p in (0, 1, 3):
                        for d in (1, 2, 4):
                            try:
                                n = F.conv1d(torch.zeros(1, 1, T), torch.zeros(1, 1, k), stride=s, padding=p, dilation=d).shape[-1]
                            except RuntimeError:
                                n = 0
                            f.write("%d,%d,%d,%d,%d,%d\n" % (T, k, s, p, d, n))
    with open(os.path.join(out, "pool_shapes.csv"), "w") as f:
        f.write("T,kernel,stride,pad,maxout,avgout\n")
        for T in (1, 2, 5, 8, 13):
            for k in (1, 2, 3, 4, 7):
                for s in (1, 2, 3):
                    for p in (0, 1, 2, 3):
                        res = []
                        for pool in (F.max_pool1d, F.avg_pool1d):
                            try:
                                res.append(pool(torch.zeros(1, 1, T), k, s, p).shape[-1])
                            except RuntimeError:
                                res.append(0)
                        f.write("%d,%d,%d,%d,%d,%d\n" % (T, k, s, p, res[0], res[1]))

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
