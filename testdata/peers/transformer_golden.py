#!/usr/bin/env python3
"""A small Transformer encoder classifier, exported to ONNX, with PyTorch's outputs and Captum 0.8's maps.

Writes OUT (testdata/golden/transformer) for sdk/onnx's import of a Transformer and the explainers on it
(internal/graphgolden): the module `TxNet` below (a patch convolution, a learned position embedding,
torch.nn.TransformerEncoder of two batch_first layers with GELU, a mean over the tokens, LayerNorm and a
linear head), briefly trained (Adam, 80 steps) on three-phase sines whose class is their frequency band,
then in eval mode:

  model.onnx         torch.onnx.export, opset 13, a FIXED batch of 8 (the attention block's shape
                     arithmetic is folded at import), output `probs` (the softmax)
  model.safetensors  state_dict(), for the graph spec recipes/archs/transformer.toml
  waveforms.csv      8 x (3*640) inputs, channel-major
  targets.csv        the model's own prediction for each
  logits.csv, probs.csv   8 x 16
  input_grad.csv     d p_target / d x (Captum Saliency, abs=False)
  gradcam_raw.csv    Captum LayerGradCam on `patch` (20 tokens), relu_attributions=False, no interpolation
  train_*            PyTorch's training from model.safetensors, dropout off (train_curve)
  gradcam_tokens.csv Grad-CAM over the tokens of `enc`'s output by autograd (Captum would take the tokens as channels)
  occlusion.csv      Captum Occlusion, sliding_window_shapes=(1, 60), strides=(1, 20), baselines=0
  ig.csv             Captum IntegratedGradients, zero baseline, n_steps=50, method="gausslegendre"
  attention1.onnx    OneHead below (untrained, seed 11): nn.MultiheadAttention of ONE head, whose inner
                     (batch*heads, tokens, features) values have the shape of its input, exported with
                     a fixed batch of 2 on 2 x 16 inputs; attention1_x.csv and attention1_probs.csv its
                     inputs and probabilities

Usage, from the repository's root (Captum's source on PYTHONPATH, Debian's torch and python3-onnx):
  PYTHONPATH=/path/to/captum-0.8.0 /usr/bin/python3 testdata/peers/transformer_golden.py --out testdata/golden/transformer
"""
import argparse, os, sys

import numpy as np
import torch
import torch.nn as nn

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "sdk", "python")]
from uaxai_plugin.torchmodel import load_state_dict, save_state_dict  # noqa: E402

C, T, K, D, PATCH = 3, 640, 16, 16, 32


class Pos(nn.Module):
    """A learned position embedding added to the tokens (state_dict name pos.bias)."""

    def __init__(self, tokens, d):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(tokens, d) * 0.1)

    def forward(self, h):
        return h + self.bias


class TxNet(nn.Module):
    def __init__(self, cin=C, n=K, d=D, patch=PATCH, length=T, heads=2, layers=2, dropout=0.1):
        super().__init__()
        self.patch = nn.Conv1d(cin, d, patch, stride=patch)
        self.pos = Pos(length // patch, d)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=2 * d, dropout=dropout, activation="gelu", batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, n)

    def logits(self, x):
        h = self.pos(self.patch(x).transpose(1, 2))
        h = self.enc(h)
        return self.head(self.norm(h.mean(dim=1)))

    def forward(self, x):
        return torch.softmax(self.logits(x), dim=1)


class OneHead(nn.Module):
    """Patches of 4 samples (8 features), self-attention of one head, the mean over tokens, 3 classes."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv1d(2, 8, 4, stride=4)
        self.attn = nn.MultiheadAttention(8, 1, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        h = self.patch(x).transpose(1, 2)
        h, _ = self.attn(h, h, h, need_weights=False)
        return torch.softmax(self.head(h.mean(dim=1)), dim=1)


def signals(n, g):
    """n three-phase sines; class k has the frequency band k (cycles per record 4 + 2k + U(0, 1))."""
    y = torch.randint(0, K, (n,), generator=g)
    f = 4 + 2 * y.double() + torch.rand(n, generator=g, dtype=torch.float64)
    t = torch.arange(T, dtype=torch.float64) / T
    ph = torch.tensor([0, -2 * np.pi / 3, 2 * np.pi / 3], dtype=torch.float64)
    x = torch.sin(2 * np.pi * f[:, None, None] * t[None, None, :] + ph[None, :, None])
    x = x + 0.05 * torch.randn(x.shape, generator=g, dtype=torch.float64)
    return x.float(), y


def csv(path, a):
    a = np.asarray(a, dtype=np.float32).reshape(len(a), -1)
    with open(path, "w") as f:
        for row in a:
            f.write(",".join("%.9g" % v for v in row) + "\n")


def token_cam(m, x, t, path):
    """Grad-CAM over the tokens of the encoder's output (batch, tokens, features), by autograd:
    alpha_e = mean_l dp_t/dA[l, e], cam[l] = sum_e alpha_e A[l, e] (the features are the channels)."""
    keep = {}
    h = m.enc.register_forward_hook(lambda mod, inp, out: keep.__setitem__("a", out))
    p = m(x)
    h.remove()
    a = keep["a"]
    g = torch.autograd.grad(p[torch.arange(len(t)), t].sum(), a)[0]
    csv(path, (g.mean(dim=1, keepdim=True) * a).sum(dim=2).detach().numpy())


def train_curve(out, steps=8, batch=8, batches=4, lr=1e-3, wd=1e-4):
    """PyTorch's training of the golden network with its dropout off, from model.safetensors:
    Adam (lr 1e-3, weight decay 1e-4 as L2), mean cross-entropy on the logits, `batches` fixed
    batches of `batch` (train_x.csv, train_y.csv) taken in order, `steps` steps. Writes the loss
    before each step (train_losses.csv) and the parameters after the last (train_final.safetensors)."""
    torch.manual_seed(3)
    g = torch.Generator().manual_seed(99)
    m = TxNet(dropout=0.0)
    m.load_state_dict(load_state_dict(os.path.join(out, "model.safetensors")))
    m.train()
    xs, ys = [], []
    for _ in range(batches):
        x, y = signals(batch, g)
        xs.append(x)
        ys.append(y)
    csv(os.path.join(out, "train_x.csv"), torch.cat(xs).numpy())
    with open(os.path.join(out, "train_y.csv"), "w") as f:
        f.write("".join("%d\n" % v for v in torch.cat(ys).tolist()))
    opt = torch.optim.Adam(m.parameters(), lr=lr, weight_decay=wd)
    losses = []
    for k in range(steps):
        loss = nn.functional.cross_entropy(m.logits(xs[k % batches]), ys[k % batches])
        losses.append([loss.item()])
        opt.zero_grad()
        loss.backward()
        opt.step()
    csv(os.path.join(out, "train_losses.csv"), np.array(losses))
    save_state_dict(os.path.join(out, "train_final.safetensors"), m.state_dict())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--token-cam-only", action="store_true",
                    help="write gradcam_tokens.csv alone, from --out's model.safetensors, waveforms.csv and targets.csv")
    ap.add_argument("--train-only", action="store_true",
                    help="write the training curve's files alone (train_curve), from --out's model.safetensors")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.train_only:
        train_curve(a.out)
        return
    if a.token_cam_only:
        m = TxNet()
        m.load_state_dict(load_state_dict(os.path.join(a.out, "model.safetensors")))
        m.eval()
        x = torch.from_numpy(np.loadtxt(os.path.join(a.out, "waveforms.csv"), delimiter=",", dtype=np.float32).reshape(-1, C, T))
        t = torch.from_numpy(np.loadtxt(os.path.join(a.out, "targets.csv"), dtype=np.int64))
        token_cam(m, x, t, os.path.join(a.out, "gradcam_tokens.csv"))
        return
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(a.seed)
    m = TxNet()
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    for _ in range(80):
        x, y = signals(32, g)
        loss = nn.functional.cross_entropy(m.logits(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    x, _ = signals(8, g)
    os.makedirs(a.out, exist_ok=True)
    with torch.no_grad():
        logits = m.logits(x)
        probs = torch.softmax(logits, dim=1)
    t = probs.argmax(dim=1)
    print("loss %.3f, max prob %.3f" % (loss.item(), probs.max().item()), file=sys.stderr)
    save_state_dict(os.path.join(a.out, "model.safetensors"), m.state_dict())
    torch.onnx.export(m, x, os.path.join(a.out, "model.onnx"), opset_version=13, input_names=["x"], output_names=["probs"])
    csv(os.path.join(a.out, "waveforms.csv"), x.numpy())
    with open(os.path.join(a.out, "targets.csv"), "w") as f:
        f.write("".join("%d\n" % v for v in t.tolist()))
    csv(os.path.join(a.out, "logits.csv"), logits.numpy())
    csv(os.path.join(a.out, "probs.csv"), probs.numpy())
    from captum.attr import IntegratedGradients, LayerGradCam, Occlusion, Saliency
    csv(os.path.join(a.out, "input_grad.csv"), Saliency(m).attribute(x, target=t, abs=False).detach().numpy())
    cam = LayerGradCam(m, m.patch).attribute(x, target=t, relu_attributions=False)
    csv(os.path.join(a.out, "gradcam_raw.csv"), cam.detach().numpy())
    token_cam(m, x, t, os.path.join(a.out, "gradcam_tokens.csv"))
    train_curve(a.out)
    occ = Occlusion(m).attribute(x, sliding_window_shapes=(1, 60), strides=(1, 20), baselines=0.0, target=t)
    csv(os.path.join(a.out, "occlusion.csv"), occ.detach().numpy())
    ig = IntegratedGradients(m).attribute(x, baselines=0.0, target=t, n_steps=50, method="gausslegendre")
    csv(os.path.join(a.out, "ig.csv"), ig.detach().numpy())
    torch.manual_seed(11)
    one = OneHead().eval()
    x1 = torch.randn(2, 2, 16)
    torch.onnx.export(one, x1, os.path.join(a.out, "attention1.onnx"), opset_version=13, input_names=["x"], output_names=["probs"])
    csv(os.path.join(a.out, "attention1_x.csv"), x1.numpy())
    with torch.no_grad():
        csv(os.path.join(a.out, "attention1_probs.csv"), one(x1).numpy())


if __name__ == "__main__":
    main()
