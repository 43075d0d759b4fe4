#!/usr/bin/env python3
"""Trains the PyTorch networks of the worked example recipes/torch_resnet.toml
on uaxai's own power-quality data:

    go run ./cmd/uaxai data generate --paper --format npy --per-class 200 \\
        --test-per-class 20 --test-splits 1 --out /tmp/torchex-data
    /usr/bin/python3 scripts/train_torch_example.py --data /tmp/torchex-data --out /tmp/torchex-out

It reads DATA/train and DATA/val (waveforms.npy (N, C, T) float32,
labels.npy (N,) integers, classes.txt one class name a line) and trains
the module recipes/torch/resnet1d.py:ResNet1D (the same file the recipe
names) with Adam and the cross-entropy of its logits:

  * --members K networks without dropout (seeds seed, seed+1, ...),
    written OUT/resnet-0.safetensors .. resnet-{K-1}.safetensors: a deep
    ensemble;
  * one network with dropout p = --dropout before its linear layer (seed
    seed+K), written OUT/resnet-dropout.safetensors: MC dropout's network.

Each member keeps the weights of its epoch of best validation accuracy
(the first such epoch). The files hold the state_dict in the safetensors
format (an 8-byte little-endian header length, a JSON header of name ->
dtype, shape and data_offsets, then the tensors' bytes; F32 weights, I64
BatchNorm counters), written here without the safetensors package.
OUT/train.json records the arguments, the classes, and for each member its
file, seed, dropout, epochs, best epoch, validation accuracy, seconds and
the SHA-256 of its file.

A run is deterministic for a given seed and --threads (the same bytes);
another thread count may change the last bits of the sums. --quick trains
2 epochs on at most 8 records a class (seconds; for tests). One progress
line an epoch goes to standard error.
"""

import argparse
import copy
import hashlib
import importlib.util
import json
import os
import struct
import sys
import time

import numpy as np

try:
    import torch
except ImportError as _e:
    sys.exit("train_torch_example.py: PyTorch is missing in %s (%s); on Debian: apt-get install python3-torch, and "
             "run with /usr/bin/python3" % (sys.executable, _e))

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sdk", "python"))

from uaxai_plugin.torchmodel import save_state_dict  # noqa: E402  (the writer beside the kit's reader)
MODULE_FILE = os.path.normpath(os.path.join(HERE, "..", "recipes", "torch", "resnet1d.py"))
GENERATE = "uaxai data generate --paper --format npy --out DIR"


class DataError(ValueError):
    """Bad or missing training data; the message names the path."""


def load_module_file(path=MODULE_FILE):
    """The Python module recipes/torch/resnet1d.py, imported from its file."""
    spec = importlib.util.spec_from_file_location("uaxai_example_resnet1d", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read_split(data, split):
    """(waveforms (N, C, T) float32, labels (N,) int64, classes) of
    data/split, checked: shapes agree, values finite, labels in
    0..len(classes)-1."""
    d = os.path.join(data, split)
    if not os.path.isdir(d):
        raise DataError("%s: no such directory; write the splits with: %s" % (d, GENERATE))
    paths = {f: os.path.join(d, f) for f in ("waveforms.npy", "labels.npy", "classes.txt")}
    for p in paths.values():
        if not os.path.isfile(p):
            raise DataError("%s: no such file; write the splits with: %s" % (p, GENERATE))
    try:
        x = np.load(paths["waveforms.npy"], allow_pickle=False)
        y = np.load(paths["labels.npy"], allow_pickle=False)
    except (ValueError, OSError) as e:
        raise DataError("%s: %s" % (d, e)) from None
    with open(paths["classes.txt"]) as f:
        classes = [line.strip() for line in f if line.strip()]
    if not classes:
        raise DataError("%s: no class names (want one a line)" % paths["classes.txt"])
    if x.ndim != 3 or x.shape[0] == 0 or x.dtype != np.float32:
        raise DataError("%s: %s array of shape %s; want float32 (records, channels, samples)"
                        % (paths["waveforms.npy"], x.dtype, x.shape))
    if y.ndim != 1 or y.shape[0] != x.shape[0] or y.dtype.kind not in "iu":
        raise DataError("%s: %s array of shape %s; want %d integer labels, one a record of %s"
                        % (paths["labels.npy"], y.dtype, y.shape, x.shape[0], paths["waveforms.npy"]))
    bad = np.flatnonzero((y < 0) | (y >= len(classes)))
    if len(bad):
        raise DataError("%s: record %d has label %d; %s lists %d classes (accepted: 0..%d)"
                        % (paths["labels.npy"], bad[0], y[bad[0]], paths["classes.txt"], len(classes), len(classes) - 1))
    nf = np.flatnonzero(~np.isfinite(x).all(axis=(1, 2)))
    if len(nf):
        raise DataError("%s: record %d has a value that is not finite" % (paths["waveforms.npy"], nf[0]))
    return x, y.astype(np.int64), classes


def first_per_class(x, y, k):
    """The first k records of each class, in their order."""
    keep = np.zeros(len(y), bool)
    for c in np.unique(y):
        keep[np.flatnonzero(y == c)[:k]] = True
    return x[keep], y[keep]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def accuracy(model, x, y, batch):
    model.eval()
    right = 0
    with torch.no_grad():
        for lo in range(0, len(x), batch):
            right += int((model(x[lo:lo + batch]).argmax(dim=1) == y[lo:lo + batch]).sum())
    return right / len(x)


def train_member(ResNet1D, name, seed, dropout, train, val, classes, a):
    """Trains one network; returns (best state_dict, its record)."""
    torch.manual_seed(seed)
    x, y = train
    model = ResNet1D(in_channels=x.shape[1], classes=classes, width=a.width, blocks=a.blocks, dropout=dropout)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    order = torch.Generator().manual_seed(seed)
    best, best_acc, best_epoch = None, -1.0, 0
    t0 = time.monotonic()
    for epoch in range(1, a.epochs + 1):
        model.train()
        perm = torch.randperm(len(x), generator=order)
        total = 0.0
        for lo in range(0, len(x), a.batch):
            i = perm[lo:lo + a.batch]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[i]), y[i])
            loss.backward()
            opt.step()
            total += float(loss) * len(i)
        acc = accuracy(model, val[0], val[1], 256)
        if acc > best_acc:
            best, best_acc, best_epoch = copy.deepcopy(model.state_dict()), acc, epoch
        print("%s: epoch %d/%d: train loss %.4f, val accuracy %.4f (best %.4f, epoch %d), %.1f s"
              % (name, epoch, a.epochs, total / len(x), acc, best_acc, best_epoch, time.monotonic() - t0),
              file=sys.stderr, flush=True)
    return best, {"seed": seed, "dropout": dropout, "epochs": a.epochs, "best_epoch": best_epoch,
                  "val_accuracy": best_acc, "seconds": round(time.monotonic() - t0, 3)}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="train_torch_example.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="directory with train/ and val/ (uaxai data generate --paper --format npy)")
    ap.add_argument("--out", required=True, help="directory for the .safetensors files and train.json")
    ap.add_argument("--members", type=int, default=3, help="ensemble members without dropout (default 3)")
    ap.add_argument("--dropout", type=float, default=0.2, help="p of the dropout member (default 0.2)")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--width", type=int, default=16, help="ResNet1D width (default 16)")
    ap.add_argument("--blocks", type=int, default=3, help="ResNet1D blocks (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--quick", action="store_true", help="2 epochs on at most 8 records a class (seconds)")
    a = ap.parse_args(argv)
    for k in ("members", "epochs", "batch", "width", "blocks", "threads"):
        if getattr(a, k) < 1:
            ap.error("--%s is %d; want >= 1" % (k, getattr(a, k)))
    if not 0 < a.dropout < 1:
        ap.error("--dropout is %g; want 0 < p < 1" % a.dropout)
    if a.quick:
        a.epochs = min(a.epochs, 2)
    try:
        xt, yt, classes = read_split(a.data, "train")
        xv, yv, cv = read_split(a.data, "val")
    except DataError as e:
        print("train_torch_example.py: %s" % e, file=sys.stderr)
        return 2
    if cv != classes or xv.shape[1:] != xt.shape[1:]:
        print("train_torch_example.py: %s and %s differ in their classes or record shape (%s vs %s); write both "
              "with one command: %s" % (os.path.join(a.data, "train"), os.path.join(a.data, "val"), xt.shape[1:],
                                        xv.shape[1:], GENERATE), file=sys.stderr)
        return 2
    if a.quick:
        xt, yt = first_per_class(xt, yt, 8)
        xv, yv = first_per_class(xv, yv, 8)
    torch.set_num_threads(a.threads)
    torch.use_deterministic_algorithms(True)
    ResNet1D = load_module_file().ResNet1D
    os.makedirs(a.out, exist_ok=True)
    train = (torch.from_numpy(xt), torch.from_numpy(yt))
    val = (torch.from_numpy(xv), torch.from_numpy(yv))
    jobs = [("resnet-%d" % k, a.seed + k, 0.0) for k in range(a.members)] + [("resnet-dropout", a.seed + a.members, a.dropout)]
    members, t0 = [], time.monotonic()
    for name, seed, p in jobs:
        sd, rec = train_member(ResNet1D, name, seed, p, train, val, len(classes), a)
        path = os.path.join(a.out, name + ".safetensors")
        save_state_dict(path, sd)
        members.append(dict(file=os.path.basename(path), sha256=sha256(path), **rec))
    info = {"module": "resnet1d.py:ResNet1D", "module_sha256": sha256(MODULE_FILE),
            "module_args": {"in_channels": int(xt.shape[1]), "classes": len(classes), "width": a.width, "blocks": a.blocks},
            "args": vars(a), "classes": classes, "train_records": len(yt), "val_records": len(yv),
            "torch": torch.__version__, "seconds": round(time.monotonic() - t0, 3), "members": members}
    with open(os.path.join(a.out, "train.json"), "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")
    print("train_torch_example.py: %d networks in %s (%.0f s)" % (len(members), a.out, info["seconds"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
