#!/usr/bin/python3
"""PyTorch reference for TestPaperTrainingAccuracy (paper_test.go).

Trains the paper's network (torch_ref.WaveNet from the repository's
testdata/peers/) with the paper's protocol on the splits that
`uaxai data generate --paper` writes, and prints the test accuracy of the
checkpoint with the lowest validation loss on each test split:

    go run ./cmd/uaxai data generate --paper --out /tmp/pqd
    /usr/bin/python3 host/runner/testdata/torch_train.py --data /tmp/pqd --seed 2026

Protocol (tb:hyper): Adam lr 1e-2, weight decay 1e-4 (L2, PyTorch's Adam),
x0.5 every 10 epochs, batch 64, 100 epochs, cross-entropy. The seed drives
torch.manual_seed (initialisation) and the shuffling generator; the streams
differ from the Go trainer's, so compare distributions over seeds, not one
seed's number.
"""
import argparse
import copy
import glob
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn


def load(d):
    x = np.loadtxt(os.path.join(d, "waveforms.csv"), delimiter=",", dtype=np.float32, ndmin=2)
    y = np.loadtxt(os.path.join(d, "labels.csv"), dtype=np.int64, ndmin=1)
    return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="directory written by `uaxai data generate --paper`")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peers", default=os.path.join(here, "..", "..", "..", "testdata", "peers"),
                    help="directory holding torch_ref.py")
    a = ap.parse_args()
    sys.path.insert(0, a.peers)
    import torch_ref  # noqa: E402  (the golden files' reference network)

    torch.set_num_threads(a.threads)
    xs, ys = load(os.path.join(a.data, "train"))
    xv, yv = load(os.path.join(a.data, "val"))
    tests = sorted(glob.glob(os.path.join(a.data, "test-*")), key=lambda p: int(p.rsplit("-", 1)[1]))
    if not tests:
        sys.exit(f"{a.data}: no test-* split")
    torch.manual_seed(a.seed)
    model = torch_ref.WaveNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, 10, 0.5)
    lossf = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(a.seed)
    best, best_state, best_epoch = float("inf"), None, 0
    t0 = time.time()
    for e in range(a.epochs):
        model.train()
        perm = torch.randperm(xs.shape[0], generator=g)
        for i in range(0, xs.shape[0], 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            lossf(model.logits(xs[idx]), ys[idx]).backward()
            opt.step()
        sched.step()
        model.eval()
        with torch.no_grad():
            z = model.logits(xv)
            vl = float(lossf(z, yv))
            va = float((z.argmax(1) == yv).float().mean())
        if vl < best:
            best, best_state, best_epoch = vl, copy.deepcopy(model.state_dict()), e + 1
        print(f"epoch {e + 1} val_loss {vl:.4f} val_acc {va:.4f}", file=sys.stderr, flush=True)
    model.load_state_dict(best_state)
    model.eval()
    accs = []
    with torch.no_grad():
        for d in tests:
            x, y = load(d)
            accs.append(float((model.logits(x).argmax(1) == y).float().mean()))
    print(json.dumps({"seed": a.seed, "best_epoch": best_epoch, "test_acc": accs,
                      "mean": float(np.mean(accs)), "sd": float(np.std(accs, ddof=1)) if len(accs) > 1 else 0.0,
                      "seconds": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    main()
