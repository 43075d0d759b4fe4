"""PyTorch's side of `uaxai bench --archs`: the golden networks of
testdata/golden/archs (archs.py, with their model.safetensors) timed on
the CPU, one JSON line a measurement on stdout.

    /usr/bin/python3 testdata/peers/archs_bench.py --threads 2 [--nets fcn,resnet1d,inceptiontime]
        [--reps 10] [--epoch-n 512]

Cases, for each network (input 1 x 640, 16 classes):

  forward64  the softmax of a batch of 64 inputs, under torch.no_grad();
  occlusion  one occlusion map as Captum's Occlusion computes it on the
             golden README's settings (window 60, stride 20, baseline 0):
             the input and its 30 occluded copies in one batch, under
             no_grad, and p(x) - p(occluded) of the target class spread
             over each window's samples;
  epoch      one training epoch of --epoch-n records in batches of 64:
             cross-entropy on the logits, Adam (lr 1e-3), from the golden
             weights, in train mode (batch statistics).

Each line: {"net", "case", "ms" (the best of the reps), "median",
"reps", "flops" (2 x the multiply-adds of the conv and linear layers of
one such unit of work, counted by forward hooks; an epoch counts its
forward passes x 3 for the backward's two products)}. A first line
{"op": "environment", ...} says which torch, how many threads, which BLAS
library is mapped (blasinfo.py: /proc/self/maps) and whether oneDNN is
available (torch's CPU convolutions run on it when it is).

--threads T sets OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS
before torch is imported, and torch.set_num_threads(T).
"""

import argparse
import importlib.util
import json
import os
import sys
import time


def _early_threads(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return None


_T = _early_threads(sys.argv[1:])
if _T is not None:
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = str(_T)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "testdata", "golden", "archs"))
import archs  # noqa: E402
from torch_ref import environment, read_safetensors  # noqa: E402

LENGTH = 640
BATCH = 64
WINDOW, STRIDE = 60, 20
CLASSES = {"fcn": "FCN", "resnet1d": "ResNet1D", "inceptiontime": "InceptionTime", "transformer": "TxNet"}


def transformer_module():
    """testdata/peers/transformer_golden.py, the golden Transformer's TxNet."""
    spec = importlib.util.spec_from_file_location("transformer_golden", os.path.join(ROOT, "testdata", "peers", "transformer_golden.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def load(name):
    if name == "transformer":
        model = transformer_module().TxNet()
        path = os.path.join(ROOT, "testdata", "golden", "transformer", "model.safetensors")
    else:
        model = getattr(archs, CLASSES[name])()
        path = os.path.join(ROOT, "testdata", "golden", "archs", name, "model.safetensors")
    tensors, _ = read_safetensors(path)
    state = model.state_dict()
    for k in state:
        if k.endswith("num_batches_tracked"):
            continue
        state[k] = torch.from_numpy(tensors[k].copy())
    model.load_state_dict(state)
    return model.eval()


def count_flops(model, x):
    """2 x the multiply-adds of the conv and linear layers on x, and of
    each nn.MultiheadAttention (batch first, self-attention of L tokens of
    E): its projections, L x (3E x E + E x E), and its two L x L x E
    products (its out_proj is not called as a module)."""
    total = [0]

    def hook(m, inp, out):
        if isinstance(m, nn.Conv1d):
            total[0] += 2 * out.numel() * (m.in_channels // m.groups) * m.kernel_size[0]
        elif isinstance(m, nn.MultiheadAttention):
            L, E = inp[0].shape[1], m.embed_dim
            total[0] += 2 * (L * (3 * E * E + E * E) + 2 * L * L * E) * inp[0].shape[0]
        elif isinstance(m, nn.Linear):
            total[0] += 2 * out.numel() * m.in_features

    kinds = (nn.Conv1d, nn.Linear, nn.MultiheadAttention)
    hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, kinds)]
    # an eval-mode TransformerEncoderLayer's fast path calls none of its
    # modules: count those layers in training mode (their dropout does not
    # change the work; no batchnorm statistics move)
    enc = [m for m in model.modules() if isinstance(m, nn.TransformerEncoderLayer) and not m.training]
    for m in enc:
        m.train()
    with torch.no_grad():
        model(x)
    for m in enc:
        m.eval()
    for h in hs:
        h.remove()
    return total[0]


def occlusion_map(model, x, target):
    """Captum's Occlusion (window, stride, baseline 0) of one input (1 x 1 x T)."""
    starts = list(range(0, LENGTH - WINDOW + 1, STRIDE))
    batch = x.repeat(len(starts) + 1, 1, 1)
    for j, s in enumerate(starts):
        batch[j + 1, :, s:s + WINDOW] = 0
    with torch.no_grad():
        p = model(batch)[:, target]
    attr = torch.zeros(LENGTH)
    count = torch.zeros(LENGTH)
    for j, s in enumerate(starts):
        attr[s:s + WINDOW] += p[0] - p[j + 1]
        count[s:s + WINDOW] += 1
    return attr / count.clamp(min=1), len(starts) + 1


def epoch(model, xs, ys):
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for i in range(0, xs.shape[0], BATCH):
        opt.zero_grad()
        loss = loss_fn(model.logits(xs[i:i + BATCH]), ys[i:i + BATCH])
        loss.backward()
        opt.step()
    model.eval()


def timed(fn, reps):
    fn()  # warm-up
    ms = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ms.append(1000.0 * (time.perf_counter() - t0))
    return min(ms), float(np.median(ms)), len(ms)


def emit(rec):
    print(json.dumps(rec), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nets", default="fcn,resnet1d,inceptiontime")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--epoch-n", type=int, default=512)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    x64 = torch.randn(BATCH, 1, LENGTH)
    emit({"op": "environment", **environment()})
    for name in args.nets.split(","):
        if name not in CLASSES:
            raise SystemExit(f"unknown network {name!r}; known: {', '.join(CLASSES)}")
        model = load(name)
        cin = next(m for m in model.modules() if isinstance(m, nn.Conv1d)).in_channels
        x64 = torch.randn(BATCH, cin, LENGTH)
        f1 = count_flops(model, x64[:1])

        def fwd():
            with torch.no_grad():
                model(x64)
        best, med, n = timed(fwd, args.reps)
        emit({"net": name, "case": "forward64", "ms": best, "median": med, "reps": n, "flops": BATCH * f1})

        x = x64[:1].clone()
        with torch.no_grad():
            target = int(model(x).argmax())
        _, rows = occlusion_map(model, x, target)
        best, med, n = timed(lambda: occlusion_map(model, x, target), args.reps)
        emit({"net": name, "case": "occlusion", "ms": best, "median": med, "reps": n, "flops": rows * f1})

        xs = torch.randn(args.epoch_n, cin, LENGTH)
        ys = torch.randint(0, archs.N_CLASSES, (args.epoch_n,))
        state = {k: v.clone() for k, v in model.state_dict().items()}
        best, med, n = timed(lambda: epoch(model, xs, ys), max(1, args.reps // 3))
        model.load_state_dict(state)
        emit({"net": name, "case": "epoch", "ms": best, "median": med, "reps": n, "records": args.epoch_n,
              "flops": 3 * args.epoch_n * f1})


if __name__ == "__main__":
    main()
