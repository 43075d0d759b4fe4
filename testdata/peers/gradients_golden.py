#!/usr/bin/env python3
"""Captum's gradient-family maps on the golden networks, for plugins/explainer/gradients.

For each network of ../golden/archs (by its archs.py class and model.safetensors): Captum 0.8's
IntegratedGradients on the class probability (the module's softmax output) of each of its 8 waveforms
for its target, from a zero baseline, with the Gauss-Legendre rule of 50 points and the trapezoid rule
of 20, and its convergence deltas; written as float32 CSV (one map a line, C x 640 values,
channel-major) to OUT/<network>/ig_gausslegendre_50.csv, ig_riemann_trapezoid_20.csv and deltas.csv.

With --noisy it writes, for fcn and resnet1d-3ph, Captum's NoiseTunnel(Saliency) maps (abs=True,
nt_samples=4, stdevs=0.1) of the first 2 waveforms for each nt_type (nt_<type>.csv, each call from
torch's generator seeded 0, so the three draw the same points) and GradientShap's (n_samples=4,
stdevs=0, a zero baseline, seeded 1: gradient_shap.csv), with the points the module was called on
(points_noise_tunnel.csv, points_gradient_shap.csv: 8 rows, record-major), so that a test can give the
same points to uaxai's explainers.

With --noisegrad it writes NoiseGrad's map on fcn's first 2 waveforms as its authors' algorithm
computes it (noisegrad.csv), with the factors each of its 4 noisy networks multiplied its parameters
by (noisegrad_factors_<s>.safetensors): see noisegrad().

With --bench it times, per map, Captum's IntegratedGradients (50 Gauss-Legendre steps) and
NoiseTunnel(Saliency) SmoothGrad (50 samples, stdev 0.1) on ResNet1D's 8 waveforms, 2 threads,
and prints the medians of --reps runs.

Usage, from the repository's root (Captum's source on PYTHONPATH, Debian's torch):
  PYTHONPATH=/path/to/captum-0.8.0 /usr/bin/python3 testdata/peers/gradients_golden.py --out testdata/golden/gradients
  PYTHONPATH=/path/to/captum-0.8.0 /usr/bin/python3 testdata/peers/gradients_golden.py --bench --reps 5
"""
import argparse, importlib.util, os, sys, time

import numpy as np
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "sdk", "python")]
from uaxai_plugin.torchmodel import load_state_dict  # noqa: E402

ARCHS = os.path.join(ROOT, "testdata", "golden", "archs")
NETS = [("fcn", "FCN", {}, 1), ("resnet1d", "ResNet1D", {}, 1), ("stridednet", "StridedNet", {}, 1),
        ("resnet1d-3ph", "ResNet1D", {"cin": 3}, 3)]


def archs_module():
    spec = importlib.util.spec_from_file_location("archs", os.path.join(ARCHS, "archs.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def load(name, cls, args, cin):
    m = getattr(archs_module(), cls)(**args)
    m.load_state_dict(load_state_dict(os.path.join(ARCHS, name, "model.safetensors")))
    m.eval()
    d = os.path.join(ARCHS, name)
    x = np.loadtxt(os.path.join(d, "waveforms.csv"), delimiter=",", dtype=np.float32, ndmin=2)
    t = np.loadtxt(os.path.join(d, "targets.csv"), delimiter=",", dtype=np.int64, ndmin=1)
    return m, torch.from_numpy(x).view(len(x), cin, -1), torch.from_numpy(t)


def csv(path, a):
    a = np.asarray(a, dtype=np.float32).reshape(len(a), -1)
    with open(path, "w") as f:
        for row in a:
            f.write(",".join(repr(float(v)) for v in row) + "\n")


def golden(out):
    from captum.attr import IntegratedGradients
    for name, cls, args, cin in NETS:
        m, x, t = load(name, cls, args, cin)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        ig = IntegratedGradients(m)
        deltas = []
        for method, n in [("gausslegendre", 50), ("riemann_trapezoid", 20)]:
            a, delta = ig.attribute(x, baselines=0.0, target=t, n_steps=n, method=method, return_convergence_delta=True)
            csv(os.path.join(d, "ig_%s_%d.csv" % (method, n)), a.detach().numpy())
            deltas.append(delta.detach().numpy())
        csv(os.path.join(d, "deltas.csv"), np.stack(deltas, axis=1))
        print(name, "done", file=sys.stderr)


def noisy(out):
    from captum.attr import GradientShap, NoiseTunnel, Saliency
    for name, cls, args, cin in [n for n in NETS if n[0] in ("fcn", "resnet1d-3ph")]:
        m, x, t = load(name, cls, args, cin)
        x, t = x[:2], t[:2]
        d = os.path.join(out, name)
        seen = []
        h = m.register_forward_pre_hook(lambda mod, inp: seen.append(inp[0].detach().clone()))
        nt = NoiseTunnel(Saliency(m))
        pts = None
        for typ in ("smoothgrad", "smoothgrad_sq", "vargrad"):
            seen.clear()
            torch.manual_seed(0)
            a = nt.attribute(x, nt_type=typ, nt_samples=4, stdevs=0.1, target=t, abs=True)
            assert len(seen) == 1 and seen[0].shape[0] == 8, [s.shape for s in seen]
            assert pts is None or torch.equal(pts, seen[0])
            pts = seen[0]
            csv(os.path.join(d, "nt_%s.csv" % typ), a.detach().numpy())
        csv(os.path.join(d, "points_noise_tunnel.csv"), pts.numpy())
        seen.clear()
        torch.manual_seed(1)
        a = GradientShap(m).attribute(x, baselines=torch.zeros_like(x[:1]), n_samples=4, stdevs=0.0, target=t)
        assert len(seen) == 1 and seen[0].shape[0] == 8, [s.shape for s in seen]
        csv(os.path.join(d, "gradient_shap.csv"), a.detach().numpy())
        csv(os.path.join(d, "points_gradient_shap.csv"), seen[0].numpy())
        h.remove()
        print(name, "noisy done", file=sys.stderr)


def noisegrad(out, n=4, sigma=0.2):
    """NoiseGrad (Bykov et al. 2022) as its authors' algorithm states it: n times, every parameter
    of the trained network (model.parameters(): not the batchnorm buffers) multiplied elementwise
    by factors drawn from N(1, sigma^2), the explanation (Captum's Saliency, abs=True, of the target's
    probability) of each noisy network, and their mean. On fcn's first 2 waveforms: the mean in
    noisegrad.csv, draw s's factors in noisegrad_factors_<s>.safetensors (by parameter name)."""
    from captum.attr import Saliency
    sys.path[:0] = [os.path.join(ROOT, "sdk", "python")]
    from uaxai_plugin.torchmodel import save_state_dict
    torch.manual_seed(2)
    name, cls, args, cin = next(nt for nt in NETS if nt[0] == "fcn")
    m, x, t = load(name, cls, args, cin)
    x, t = x[:2], t[:2]
    base = {k: v.clone() for k, v in m.state_dict().items()}
    normal = torch.distributions.normal.Normal(loc=1.0, scale=sigma)
    maps = []
    for s in range(n):
        m.load_state_dict(base)
        factors = {}
        with torch.no_grad():
            for pname, p in m.named_parameters():
                f = normal.sample(p.size())
                factors[pname] = f
                p.mul_(f)
        save_state_dict(os.path.join(out, name, "noisegrad_factors_%d.safetensors" % s), factors)
        maps.append(Saliency(m).attribute(x, target=t, abs=True).detach())
    m.load_state_dict(base)
    csv(os.path.join(out, name, "noisegrad.csv"), torch.stack(maps).mean(dim=0).numpy())


def bench(reps):
    from captum.attr import IntegratedGradients, NoiseTunnel, Saliency
    torch.set_num_threads(2)
    m, x, t = load("resnet1d", "ResNet1D", {}, 1)
    ig, nt = IntegratedGradients(m), NoiseTunnel(Saliency(m))
    cases = {
        "integrated_gradients_50": lambda: ig.attribute(x, baselines=0.0, target=t, n_steps=50, method="gausslegendre", internal_batch_size=len(x) * 50),
        "smoothgrad_50": lambda: nt.attribute(x, nt_type="smoothgrad", nt_samples=50, stdevs=0.1, target=t, abs=True),
    }
    for name, f in cases.items():
        f()  # warm
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f()
            ts.append((time.perf_counter() - t0) / len(x))
        print("%s %.6f" % (name, float(np.median(ts))))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.path.join(ROOT, "testdata", "golden", "gradients"))
    p.add_argument("--bench", action="store_true")
    p.add_argument("--noisy", action="store_true")
    p.add_argument("--noisegrad", action="store_true")
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    torch.manual_seed(0)
    if a.bench:
        bench(a.reps)
    elif a.noisy:
        noisy(a.out)
    elif a.noisegrad:
        noisegrad(a.out)
    else:
        golden(a.out)


if __name__ == "__main__":
    main()
