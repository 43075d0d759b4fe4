#!/usr/bin/env python3
"""Golden references for standard 1-D time-series classifiers beyond the paper's network.

For each architecture: a seeded PyTorch model with non-trivial BatchNorm statistics, its state_dict as
safetensors (PyTorch names, I64 num_batches_tracked included), an ONNX export (opset 13), 8 inputs, and the
model's logits, softmax, input gradient, raw Grad-CAM on a named layer and occlusion maps, all float32.

Usage: /usr/bin/python3 testdata/peers/archs_golden.py --seed 5 --out testdata/golden/archs [--threads 1] [--only fcn,lstm]
Needs Debian's python3-torch (1.13) and python3-onnx; uses torch_ref.py (beside it) for the inputs.
"""
import argparse, inspect, json, os, struct, sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here]
import torch_ref  # noqa: E402  (beside this file)

T = 640
N_CLASSES = 16


class FCN(nn.Module):
    """Wang et al. (2017) fully convolutional network, narrowed: 3 x (conv 'same' + BN + ReLU), GAP, linear."""

    def __init__(self, cin=1, n=N_CLASSES):
        super().__init__()
        self.pad1 = nn.ConstantPad1d((3, 4), 0.0)  # 'same' for an even kernel, as Keras ports write it
        self.conv1, self.bn1 = nn.Conv1d(cin, 16, 8), nn.BatchNorm1d(16)
        self.conv2, self.bn2 = nn.Conv1d(16, 32, 5, padding=2), nn.BatchNorm1d(32)
        self.conv3, self.bn3 = nn.Conv1d(32, 16, 3, padding=1), nn.BatchNorm1d(16)
        self.fc = nn.Linear(16, n)

    def logits(self, x):
        x = F.relu(self.bn1(self.conv1(self.pad1(x))))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        return self.fc(x.mean(dim=2))

    def forward(self, x):
        return F.softmax(self.logits(x), dim=1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.pad1 = nn.ConstantPad1d((3, 4), 0.0)
        self.conv1, self.bn1 = nn.Conv1d(cin, cout, 8), nn.BatchNorm1d(cout)
        self.conv2, self.bn2 = nn.Conv1d(cout, cout, 5, padding=2), nn.BatchNorm1d(cout)
        self.conv3, self.bn3 = nn.Conv1d(cout, cout, 3, padding=1), nn.BatchNorm1d(cout)
        self.short = nn.Sequential(nn.Conv1d(cin, cout, 1), nn.BatchNorm1d(cout)) if cin != cout else nn.BatchNorm1d(cout)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(self.pad1(x))))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + self.short(x))


class ResNet1D(nn.Module):
    """Wang et al. (2017) ResNet for time series, narrowed: 3 residual blocks (8/5/3 'same' convs), GAP, linear."""

    def __init__(self, cin=1, n=N_CLASSES):
        super().__init__()
        self.block1, self.block2, self.block3 = ResBlock(cin, 16), ResBlock(16, 32), ResBlock(32, 32)
        self.fc = nn.Linear(32, n)

    def logits(self, x):
        return self.fc(self.block3(self.block2(self.block1(x))).mean(dim=2))

    def forward(self, x):
        return F.softmax(self.logits(x), dim=1)


class Inception(nn.Module):
    def __init__(self, cin, nf=8):
        super().__init__()
        self.bottleneck = nn.Conv1d(cin, nf, 1, bias=False)
        self.convs = nn.ModuleList([nn.Conv1d(nf, nf, k, padding=k // 2, bias=False) for k in (9, 19, 39)])
        self.pool = nn.MaxPool1d(3, stride=1, padding=1)
        self.pconv = nn.Conv1d(cin, nf, 1, bias=False)
        self.bn = nn.BatchNorm1d(4 * nf)

    def forward(self, x):
        b = self.bottleneck(x)
        y = torch.cat([c(b) for c in self.convs] + [self.pconv(self.pool(x))], dim=1)
        return F.relu(self.bn(y))


class InceptionTime(nn.Module):
    """Ismail Fawaz et al. (2020) InceptionTime, one network of the ensemble, narrowed: 3 modules, one shortcut."""

    def __init__(self, cin=1, n=N_CLASSES):
        super().__init__()
        self.inc1, self.inc2, self.inc3 = Inception(cin), Inception(32), Inception(32)
        self.short = nn.Sequential(nn.Conv1d(cin, 32, 1, bias=False), nn.BatchNorm1d(32))
        self.fc = nn.Linear(32, n)

    def logits(self, x):
        y = self.inc3(self.inc2(self.inc1(x)))
        y = F.relu(y + self.short(x))
        return self.fc(y.mean(dim=2))

    def forward(self, x):
        return F.softmax(self.logits(x), dim=1)


class StridedNet(nn.Module):
    """Strides, dilation, depthwise convolution, average pooling, GELU/SiLU/tanh, dropout (MC dropout at p=0.2)."""

    def __init__(self, cin=1, n=N_CLASSES, p=0.2):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv1d(cin, 16, 7, stride=2, padding=3), nn.BatchNorm1d(16)
        self.conv2 = nn.Conv1d(16, 16, 3, dilation=2, padding=2)
        self.dw = nn.Conv1d(16, 16, 5, padding=2, groups=16)
        self.pw = nn.Conv1d(16, 32, 1)
        self.pool = nn.AvgPool1d(2, stride=2)
        self.conv3 = nn.Conv1d(32, 32, 3, stride=2)
        self.drop = nn.Dropout(p)
        self.fc1, self.fc2 = nn.Linear(32, 32), nn.Linear(32, n)

    def logits(self, x):
        x = F.gelu(self.bn1(self.conv1(x)))
        x = F.silu(self.conv2(x))
        x = torch.tanh(self.pw(self.dw(x)))
        x = self.pool(x)
        x = F.relu(self.conv3(x))
        x = x.mean(dim=2)
        return self.fc2(self.drop(F.relu(self.fc1(x))))

    def forward(self, x):
        return F.softmax(self.logits(x), dim=1)


class LSTMNet(nn.Module):
    """A one-layer LSTM over the samples (input 4 samples a step), last hidden state, linear. Not a convnet."""

    def __init__(self, cin=1, n=N_CLASSES):
        super().__init__()
        self.step = 4
        self.lstm = nn.LSTM(cin * self.step, 32, batch_first=True)
        self.fc = nn.Linear(32, n)

    def logits(self, x):
        b, c, t = x.shape
        seq = x.view(b, c, t // self.step, self.step).permute(0, 2, 1, 3).reshape(b, t // self.step, c * self.step)
        out, _ = self.lstm(seq)
        return self.fc(out[:, -1])

    def forward(self, x):
        return F.softmax(self.logits(x), dim=1)


# name -> (class, input channels, Grad-CAM layer (a module path), whether ONNX export is expected to import natively)
ARCHS = {
    "fcn": (FCN, 1, "conv3"),
    "resnet1d": (ResNet1D, 1, "block3"),
    "inceptiontime": (InceptionTime, 1, "inc3"),
    "stridednet": (StridedNet, 1, "conv3"),
    "resnet1d-3ph": (ResNet1D, 3, "block3"),
    "lstm": (LSTMNet, 1, "lstm"),
}


def seeded(cls, cin, seed, x=None):
    """A seeded model with non-trivial BatchNorm affine parameters, briefly trained (see below)."""
    torch.manual_seed(seed)
    m = cls(cin=cin)
    g = torch.Generator().manual_seed(seed + 7)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm1d):
                c = mod.num_features
                mod.weight.copy_(0.75 + 0.5 * torch.rand(c, generator=g))
                mod.bias.copy_(0.1 * torch.randn(c, generator=g))
                mod.running_mean.copy_(0.1 * torch.randn(c, generator=g))
                mod.running_var.copy_(0.5 + torch.rand(c, generator=g))
                mod.num_batches_tracked.fill_(int(torch.randint(1, 1000, (1,), generator=g)))
    # A short training run (Adam, 300 steps of 32) on torch_ref's labelled sinusoids (class k: 3 + 4k cycles)
    # plus the PQD-like inputs' own distribution, so that outputs depend on the input and are confident.
    xs, ys = torch_ref.make_training_set(4800, seed + 3)
    xs = torch.from_numpy(np.repeat(xs[:, None, :], cin, axis=1).astype(np.float32))
    ys = torch.from_numpy(ys.astype(np.int64))
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed + 11)
    m.train()
    for _ in range(300):
        i = torch.randint(0, len(xs), (32,), generator=gen)
        opt.zero_grad()
        F.cross_entropy(m.logits(xs[i]), ys[i]).backward()
        opt.step()
    return m.eval()


def inputs(cin, seed):
    """8 records of cin channels: PQD-like waveforms of the paper's classes (torch_ref.make_pqd_waveforms),
    channel c of record r is row (r + 5c) mod 16 of one golden set, so channels differ."""
    w, labels, _ = torch_ref.make_pqd_waveforms(seed)
    x = np.stack([np.stack([w[(r + 5 * c) % 16] for c in range(cin)]) for r in range(8)]).astype(np.float32)
    return x, labels[:8].astype(np.int64)


def write_st(path, tensors):
    hdr, blobs, off = {}, [], 0
    for k in sorted(tensors):
        a = np.ascontiguousarray(tensors[k])
        dt = {np.dtype("<f4"): "F32", np.dtype("<i8"): "I64"}[a.dtype]
        raw = a.tobytes()
        hdr[k] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def csv(path, rows):
    np.savetxt(path, np.asarray(rows).reshape(len(rows), -1), fmt="%.9g", delimiter=",")


def module(m, path):
    for p in path.split("."):
        m = getattr(m, p)
    return m


def gradcam_raw(m, layer, x, targets):
    """Captum LayerGradCam semantics, relu_attributions=False, no interpolation: A = the layer's output
    (for an LSTM, its output sequence transposed to (B, H, steps)); w_c = mean over positions of
    d p_target / d A_c; cam = sum_c w_c A_c."""
    acts = {}

    def hook(_, __, out):
        acts["a"] = out[0] if isinstance(out, tuple) else out

    h = module(m, layer).register_forward_hook(hook)
    p = m(x)
    h.remove()
    sel = p[torch.arange(len(targets)), torch.from_numpy(targets)]
    a = acts["a"]
    g = torch.autograd.grad(sel.sum(), a)[0]
    if isinstance(module(m, layer), nn.LSTM):
        a, g = a.transpose(1, 2), g.transpose(1, 2)
    return (g.mean(dim=2, keepdim=True) * a).sum(dim=1).detach().numpy()


def occlusion(m, x, targets, window=60, stride=20):
    """Captum Occlusion semantics with sliding_window_shapes=(1, window), strides=(1, stride), baselines=0:
    each window of one channel is set to 0; every sample of it gets p(x) - p(x occluded), averaged over the
    windows that cover it (positions that no window covers get 0)."""
    b, c, t = x.shape
    starts = list(range(0, t - window + 1, stride))
    out = np.zeros((b, c, t), np.float32)
    cnt = np.zeros((c, t), np.float32)
    with torch.no_grad():
        p0 = m(x)[torch.arange(b), torch.from_numpy(targets)]
        for ch in range(c):
            for s in starts:
                xo = x.clone()
                xo[:, ch, s:s + window] = 0
                d = (p0 - m(xo)[torch.arange(b), torch.from_numpy(targets)]).numpy()
                out[:, ch, s:s + window] += d[:, None]
                cnt[ch, s:s + window] += 1
    return np.where(cnt > 0, out / np.maximum(cnt, 1), 0).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    man = {"torch": torch.__version__, "seed": a.seed, "archs": {}}
    for k, (name, (cls, cin, layer)) in enumerate(ARCHS.items()):
        if a.only and name not in a.only.split(","):
            continue
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        x_np, y = inputs(cin, a.seed * 100 + k)
        m = seeded(cls, cin, a.seed * 100 + k, x_np)
        x = torch.from_numpy(x_np)
        with torch.no_grad():  # the targets are the model's own predictions, so p(target) is not tiny
            y = m(x).argmax(dim=1).numpy().astype(np.int64)
        sd = {n: t.detach().numpy() for n, t in m.state_dict().items()}
        write_st(os.path.join(d, "model.safetensors"),
                 {n: (v.astype("<i8") if v.dtype == np.int64 else v.astype("<f4")) for n, v in sd.items()})
        with torch.no_grad():
            logits = m.logits(x).numpy()
            probs = m(x).numpy()
        xg = x.clone().requires_grad_(True)
        pg = m(xg)[torch.arange(8), torch.from_numpy(y)]
        ig = torch.autograd.grad(pg.sum(), xg)[0].numpy()
        cam = gradcam_raw(m, layer, x, y)
        occ = occlusion(m, x, y)
        csv(os.path.join(d, "waveforms.csv"), x_np)
        np.savetxt(os.path.join(d, "targets.csv"), y, fmt="%d")
        csv(os.path.join(d, "logits.csv"), logits)
        csv(os.path.join(d, "probs.csv"), probs)
        csv(os.path.join(d, "input_grad.csv"), ig)
        csv(os.path.join(d, "gradcam_raw.csv"), cam)
        csv(os.path.join(d, "occlusion.csv"), occ)
        onnx_ok = True
        try:
            torch.onnx.export(m, x[:1], os.path.join(d, "model.onnx"), opset_version=13, input_names=["x"],
                              output_names=["probs"], dynamic_axes={"x": {0: "batch"}, "probs": {0: "batch"}})
            import onnx
            onnx.checker.check_model(onnx.load(os.path.join(d, "model.onnx")))
            ops = sorted({n.op_type for n in onnx.load(os.path.join(d, "model.onnx")).graph.node})
        except Exception as e:  # noqa: BLE001
            onnx_ok, ops = False, [f"export failed: {e}"]
        man["archs"][name] = {"class": cls.__name__, "in_channels": cin, "length": T, "classes": N_CLASSES,
                              "model_seed": a.seed * 100 + k, "gradcam_layer": layer,
                              "gradcam_length": int(cam.shape[1]), "onnx_opset": 13 if onnx_ok else None,
                              "onnx_ops": ops, "params": int(sum(p.numel() for p in m.parameters())),
                              "max_prob": float(probs.max()), "min_prob": float(probs.min())}
        print(name, man["archs"][name]["params"], "params;", "onnx ops:", ",".join(ops))
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    with open(os.path.join(a.out, "archs.py"), "w") as f:
        f.write('"""The PyTorch modules of this golden set (forward() returns the softmax; logits() the logits)."""\n'
                "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\nN_CLASSES = 16\n")
        for cls in (FCN, ResBlock, ResNet1D, Inception, InceptionTime, StridedNet, LSTMNet):
            f.write("\n\n" + inspect.getsource(cls))


if __name__ == "__main__":
    main()
