#!/usr/bin/env python3
"""Occlusion maps of a PyTorch model in a plain torch loop: the baseline
against which uaxai's occlusion through posterior.torch (the model
service) is timed.

    /usr/bin/python3 scripts/torch_occlusion_loop.py --module recipes/torch/resnet1d.py:ResNet1D \\
        --weights /tmp/torchex-out/resnet-0.safetensors --input /tmp/torchex-data/test-0/waveforms.npy \\
        --records 64 --window 60 --stride 20 --output logits --threads 1 --out /tmp/maps.npy

The same computation as Go's explainer.occlusion with channels = "each"
and a constant baseline b, which is Captum's Occlusion with
sliding_window_shapes = (1, window), strides = (1, stride), baselines = b
on p_y: for a record x (C channels of T samples), y = argmax of the
model's probabilities p(x) (--targets predicted; or the classes of
--targets FILE.npy), windows starting at
s = 0, stride, 2 stride, ... with s + window <= T, and

    map[c, t] = (1 / |W_t|) sum_{s in W_t} (p_y(x) - p_y(x with samples s .. s+window-1 of channel c set to b))

W_t the windows covering t; a sample no window covers (a tail the stride
leaves) gets 0. p is the softmax of the module's output with
--output logits, the output itself with --output probs.

The occluded copies of a record (C x number of windows of them) go
through the model in no_grad forward passes of at most --chunk copies;
the model is in eval mode and torch uses --threads threads. It prints
one JSON line {"records", "ms_per_map", "threads", "chunk", "windows"} on
standard output (ms_per_map: the loop's wall time, targets included,
over the records; loading the model and the input is not timed) and
writes the maps, float32 (N, C, T), to --out.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

try:
    import torch
except ImportError as _e:
    sys.exit("torch_occlusion_loop.py: PyTorch is missing in %s (%s); on Debian: apt-get install python3-torch, and "
             "run with /usr/bin/python3" % (sys.executable, _e))

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sdk", "python"))

from uaxai_plugin.torchmodel import load_module, load_state_dict  # noqa: E402


def window_starts(T, window, stride):
    """The windows' first samples: 0, stride, ... while s + window <= T."""
    return list(range(0, T - window + 1, stride))


def probabilities(model, x, output):
    out = model(x)
    return torch.softmax(out, dim=1) if output == "logits" else out


def occlusion_maps(model, x, window, stride, baseline=0.0, output="logits", chunk=256, classes=None):
    """The occlusion maps (N, C, T) float32 of the records x (N, C, T)
    float32 (a numpy array), each for its predicted class (or for
    classes[n], integers, when given), and the targets; see the module's
    doc."""
    N, C, T = x.shape
    starts = window_starts(T, window, stride)
    pairs = [(c, s) for c in range(C) for s in starts]
    mask = torch.zeros(len(pairs), C, T, dtype=torch.bool)
    for j, (c, s) in enumerate(pairs):
        mask[j, c, s:s + window] = True
    cover = mask.double().sum(dim=0)  # (C, T): |W_t| of each channel
    base = torch.tensor(float(baseline))
    maps = np.zeros((N, C, T), np.float32)
    targets = np.zeros(N, np.int64)
    with torch.no_grad():
        for n in range(N):
            xn = torch.from_numpy(np.ascontiguousarray(x[n]))
            p = probabilities(model, xn[None], output)[0]
            y = int(p.argmax()) if classes is None else int(classes[n])
            targets[n] = y
            pw = torch.empty(len(pairs), dtype=torch.float32)
            for lo in range(0, len(pairs), chunk):
                xo = torch.where(mask[lo:lo + chunk], base, xn[None])
                pw[lo:lo + len(xo)] = probabilities(model, xo, output)[:, y]
            diff = (p[y] - pw).double()  # (pairs,)
            total = (diff[:, None, None] * mask).sum(dim=0)  # (C, T)
            maps[n] = torch.where(cover > 0, total / cover.clamp(min=1), torch.zeros(())).float().numpy()
    return maps, targets


def main(argv=None):
    ap = argparse.ArgumentParser(prog="torch_occlusion_loop.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--module", required=True, help="FILE.py:Class")
    ap.add_argument("--args", default="{}", help="keyword arguments of the class, a JSON object")
    ap.add_argument("--weights", default=None, help="a state_dict file (.safetensors or .pt)")
    ap.add_argument("--input", required=True, help="records, float32 .npy (N, C, T)")
    ap.add_argument("--records", type=int, default=0, help="only the first N records (default all)")
    ap.add_argument("--window", type=int, default=60)
    ap.add_argument("--stride", type=int, default=20)
    ap.add_argument("--baseline", type=float, default=0.0)
    ap.add_argument("--output", choices=("logits", "probs"), default="logits")
    ap.add_argument("--targets", default="predicted",
                    help="predicted (the argmax of the model's probabilities), or a .npy file of (N,) integer "
                         "classes to explain")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--out", required=True, help="the maps, float32 .npy (N, C, T)")
    a = ap.parse_args(argv)
    try:
        args = json.loads(a.args)
        if not isinstance(args, dict):
            raise ValueError("--args: %s is not a JSON object of keyword arguments" % a.args)
        x = np.load(a.input, allow_pickle=False)
        if x.ndim != 3 or x.dtype != np.float32:
            raise ValueError("--input %s: %s array of shape %s; want float32 (records, channels, samples)"
                             % (a.input, x.dtype, x.shape))
        if a.records > 0:
            x = x[:a.records]
        if not 1 <= a.window <= x.shape[2] or not 1 <= a.stride <= a.window:
            raise ValueError("--window %d --stride %d: want 1 <= window <= %d (the samples) and 1 <= stride <= window"
                             % (a.window, a.stride, x.shape[2]))
        classes = None
        if a.targets != "predicted":
            classes = np.load(a.targets, allow_pickle=False)
            if classes.shape != (len(x),) or classes.dtype.kind not in "iu":
                raise ValueError("--targets %s: %s array of shape %s; want integers of shape (%d,), one class a record, "
                                 "or --targets predicted" % (a.targets, classes.dtype, classes.shape, len(x)))
        if a.threads < 1 or a.chunk < 1:
            raise ValueError("--threads %d --chunk %d: want both >= 1" % (a.threads, a.chunk))
        model = load_module(a.module, args)
        if a.weights:
            model.load_state_dict(load_state_dict(a.weights))
    except (ValueError, OSError, RuntimeError) as e:
        print("torch_occlusion_loop.py: %s" % e, file=sys.stderr)
        return 2
    torch.set_num_threads(a.threads)
    model.float().eval()
    t0 = time.perf_counter()
    maps, _ = occlusion_maps(model, x, a.window, a.stride, a.baseline, a.output, a.chunk, classes)
    dt = time.perf_counter() - t0
    np.save(a.out, maps)
    print(json.dumps({"records": len(x), "ms_per_map": round(1e3 * dt / len(x), 3), "threads": a.threads,
                      "chunk": a.chunk, "windows": x.shape[1] * len(window_starts(x.shape[2], a.window, a.stride))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
