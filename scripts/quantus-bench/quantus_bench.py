#!/usr/bin/env python3
"""Times one Quantus 0.6.0 metric on N records tiled from the golden waveforms, and writes the same data for
`uaxai evaluate`, so that both sides score the very same inputs, maps and targets with the same parameters.

    QUANTUS_SRC=/tmp/quantus-0.6.0 /usr/bin/python3 quantus_bench.py prepare --n 256 --out DIR
    QUANTUS_SRC=/tmp/quantus-0.6.0 /usr/bin/python3 quantus_bench.py time --data DIR --metric region_perturbation
    /usr/bin/python3 quantus_bench.py go-args region_perturbation       # uaxai's --metric/--set for the same metric
    QUANTUS_SRC=... /usr/bin/python3 quantus_bench.py time --data DIR --metric M --compare GO_SCORES.csv

`time` prints one line, `quantus <metric> n=<N> seconds=<in-process seconds of the timed metric call>`, after a
warm-up call on the first 8 records. With --compare it also prints the largest relative difference between
Quantus's and uaxai's scores (curves for the curve metrics, values otherwise).

The data (testdata/golden/quantus/README.md): record i is golden waveform i % 8 of
testdata/golden/archs/<net>/waveforms.csv, its map the golden <method>/attributions.csv line i % 8 (what Quantus
was given), its target the golden targets.csv line i % 8. Quantus runs the whole set as one batch
(batch_size = N by default), so its batch normalisation divides by the max over all N maps, which is what
uaxai's normalise = "batch" does (with tiled data, also the max over any batch holding all 8 maps).
Quantus's source is imported from $QUANTUS_SRC (the v0.6.0 tree holding the quantus/ package), as
make_quantus_golden.py does. Nothing of Quantus is copied here.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
ARCHS = os.path.join(REPO, "testdata", "golden", "archs")
GOLDEN = os.path.join(REPO, "testdata", "golden", "quantus")

FIS = 20  # features_in_step (the golden's; Quantus's default 1 is 640 model calls a record)
NOISE_SAMPLES = 10  # nr_samples of the robustness metrics (the golden's; default 200)
WINDOW, STRIDE = 60, 20  # occlusion: Captum sliding_window_shapes=(1, 60), strides=(1, 20), baselines=0

# Each metric: the Quantus class and its constructor arguments, uaxai's metric ID and --set keys, and whether the
# uaxai side needs the explainer (robustness). normalise="batch" on uaxai's side is Quantus's normalisation
# (docs/metrics.md); it only matters for LocalLipschitzEstimate (the others are invariant to a map's scale or do
# not normalise) but is passed wherever normalise is on so that the two sides read the same numbers.
# "rowwise" = the golden's row-wise Pearson (Quantus 0.6.0's batched pearsonr needs scipy >= 1.13).
METRICS = {
    "region_perturbation": ("RegionPerturbation", dict(patch_size=20, order="morf", regions_evaluation=32),
                            dict(patch_size=20, regions_evaluation=32, order="morf", perturb_baseline="black",
                                 normalise="batch")),
    "pixel_flipping": ("PixelFlipping", dict(features_in_step=FIS),
                       dict(features_in_step=FIS, perturb_baseline="black", normalise="batch")),
    "selectivity": ("Selectivity", dict(patch_size=20),
                    dict(patch_size=20, perturb_baseline="black", normalise="batch")),
    "faithfulness_correlation": ("FaithfulnessCorrelation",
                                 dict(similarity_func="rowwise", nr_runs=100, subset_size=224, return_aggregate=False),
                                 dict(nr_runs=100, subset_size=224, perturb_baseline="black", normalise="batch")),
    "faithfulness_estimate": ("FaithfulnessEstimate", dict(similarity_func="rowwise", features_in_step=FIS),
                              dict(features_in_step=FIS, perturb_baseline="black", normalise="batch")),
    "monotonicity_correlation": ("MonotonicityCorrelation", dict(nr_samples=10, features_in_step=FIS),
                                 dict(nr_samples=10, features_in_step=FIS, perturb_baseline="uniform",
                                      normalise="batch")),
    # Quantus: 4-D input (B,1,1,T); n_perturb_samples=1 (the "black" replacement is deterministic: the default 10
    # repeats identical work). uaxai has no n_perturb_samples key (it computes it once).
    "infidelity": ("Infidelity", dict(perturb_patch_sizes=[1], n_perturb_samples=1),
                   dict(perturb_patch_sizes=[1], perturb_baseline="black")),
    "max_sensitivity": ("MaxSensitivity", dict(nr_samples=NOISE_SAMPLES, lower_bound=0.2),
                        dict(nr_samples=NOISE_SAMPLES, lower_bound=0.2)),
    "avg_sensitivity": ("AvgSensitivity", dict(nr_samples=NOISE_SAMPLES, lower_bound=0.2),
                        dict(nr_samples=NOISE_SAMPLES, lower_bound=0.2)),
    "local_lipschitz_estimate": ("LocalLipschitzEstimate", dict(nr_samples=NOISE_SAMPLES, perturb_std=0.1),
                                 dict(nr_samples=NOISE_SAMPLES, perturb_std=0.1, normalise="batch")),
}
ROBUSTNESS = {"max_sensitivity", "avg_sensitivity", "local_lipschitz_estimate"}
CURVES = {"region_perturbation", "pixel_flipping", "selectivity"}
# Scores that depend on random draws: Quantus draws from numpy's global generator, uaxai from a key of the
# record, so the two sides' values differ record by record (the distributions agree; the golden tests replay
# Quantus's saved draws through uaxai's code instead).
RANDOM = {"faithfulness_correlation", "monotonicity_correlation"} | ROBUSTNESS

NETS = {"fcn": ("FCN", 1, "fcn.toml"), "resnet1d": ("ResNet1D", 1, "resnet1d.toml")}


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return "[" + ",".join(toml_value(e) for e in v) + "]"
    return repr(v)


def go_args(metric, method):
    """uaxai evaluate's arguments for the metric: --metric ID --set k=v ... [--explainer ... --explainer-set ...]."""
    _, _, sets = METRICS[metric]
    args = ["--metric", metric]
    for k, v in sets.items():
        args += ["--set", f"{k}={toml_value(v)}"]
    if metric in ROBUSTNESS:
        if method != "occlusion":
            sys.exit(f"{metric}: uaxai has no saliency explainer; use --method occlusion")
        args += ["--explainer", "occlusion", "--explainer-set", f"window={WINDOW}",
                 "--explainer-set", f"stride={STRIDE}", "--explainer-set", "baseline=0"]
    return args


# ----------------------------------------------------------------------------- data
def prepare(net, method, n, out):
    import numpy as np
    if net not in NETS:
        sys.exit(f"--net {net}: want one of {sorted(NETS)} (a network with a graph spec in recipes/archs)")
    _, cin, _ = NETS[net]
    x = np.loadtxt(os.path.join(ARCHS, net, "waveforms.csv"), delimiter=",", dtype=np.float32).reshape(8, -1)
    y = np.loadtxt(os.path.join(ARCHS, net, "targets.csv"), dtype=np.int64).reshape(-1)
    a = np.loadtxt(os.path.join(GOLDEN, net, method, "attributions.csv"), delimiter=",",
                   dtype=np.float32).reshape(8, -1)
    idx = np.arange(n) % 8
    os.makedirs(out, exist_ok=True)
    # float32 values in %.9g: they read back to the same float32 on both sides
    np.savetxt(os.path.join(out, "inputs.csv"), x[idx], fmt="%.9g", delimiter=",")
    np.savetxt(os.path.join(out, "maps.csv"), a[idx], fmt="%.9g", delimiter=",")
    np.savetxt(os.path.join(out, "targets.csv"), y[idx], fmt="%d")
    with open(os.path.join(out, "meta.txt"), "w") as f:
        f.write(f"net={net}\nmethod={method}\nn={n}\nchannels={cin}\n")
    print(f"wrote {out}/inputs.csv, maps.csv, targets.csv: {n} records tiled from the 8 golden {net}/{method} ones")


def read_meta(data):
    meta = {}
    with open(os.path.join(data, "meta.txt")) as f:
        for line in f:
            k, v = line.strip().split("=", 1)
            meta[k] = v
    return meta


# ----------------------------------------------------------------------------- the Quantus side
def run_quantus(args):
    threads = args.threads
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    # libgomp's default spin-waiting makes torch with 2 threads 10-60x slower on small batches when the other
    # core is busy (measured here: RegionPerturbation on 8 records 5.0 s instead of 0.08 s); passive waiting
    # is torch at its best on a shared machine. Set OMP_WAIT_POLICY=ACTIVE to see the default.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    src = os.environ.get("QUANTUS_SRC")
    if not src or not os.path.isdir(os.path.join(src, "quantus")):
        sys.exit("QUANTUS_SRC must name the Quantus v0.6.0 source tree (the directory holding quantus/)")
    sys.path.insert(0, src)
    sys.path.insert(0, ARCHS)
    import warnings
    warnings.filterwarnings("ignore")
    import numpy as np
    import scipy.stats
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.set_num_threads(threads)
    import quantus  # noqa: E402
    import archs  # noqa: E402

    meta = read_meta(args.data)
    net_name, method, n = meta["net"], meta["method"], int(meta["n"])
    cls, cin, _ = NETS[net_name]
    C, T = cin, 640
    x = np.loadtxt(os.path.join(args.data, "inputs.csv"), delimiter=",", dtype=np.float32).reshape(n, C, T)
    a = np.loadtxt(os.path.join(args.data, "maps.csv"), delimiter=",", dtype=np.float32)
    a = a.astype(np.float64).reshape(n, C, T)  # float32 values given as float64, as the golden did
    y = np.loadtxt(os.path.join(args.data, "targets.csv"), dtype=np.int64).reshape(n)

    net = getattr(archs, cls)(cin=cin)
    state = load_safetensors(os.path.join(ARCHS, net_name, "model.safetensors"))
    net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    net.eval()

    class Logits(nn.Module):
        """What Quantus receives: forward = the logits; a 4-D (B, C, 1, T) input is viewed as (B, C, T)."""

        def __init__(self, m):
            super().__init__()
            self.net = m

        def forward(self, z):
            if z.dim() == 4:
                z = z.reshape(z.shape[0], z.shape[1], -1)
            return self.net.logits(z)

    model = Logits(net).eval()

    def explain(model, inputs, targets, **kw):
        """explain_func: the map of p_y = softmax(logits)_y as the golden's (Captum Saliency(abs=True) or
        Occlusion((1,60), (1,20), baseline 0)), written in plain torch, the occlusion windows batched (Captum is
        not a Debian package; a batched occlusion is faster than Captum's one window per forward)."""
        z = torch.as_tensor(np.asarray(inputs), dtype=torch.float32)
        shape = z.shape
        z = z.reshape(shape[0], shape[1], -1)
        t = torch.as_tensor(np.asarray(targets), dtype=torch.long)
        B, Cz, Tz = z.shape
        rows = torch.arange(B)
        if method == "saliency":
            z = z.clone().requires_grad_(True)
            p = F.softmax(model(z), dim=1)[rows, t].sum()
            (g,) = torch.autograd.grad(p, z)
            out = g.abs()
        else:
            starts = [(c, s) for c in range(Cz) for s in range(0, Tz - WINDOW + 1, STRIDE)]
            with torch.no_grad():
                base = F.softmax(model(z), dim=1)[rows, t]
                acc = torch.zeros_like(z)
                cnt = torch.zeros_like(z)
                per = max(1, args.occlusion_rows // B)  # windows a forward pass
                for w0 in range(0, len(starts), per):
                    chunk = starts[w0:w0 + per]
                    zz = z.unsqueeze(0).repeat(len(chunk), 1, 1, 1)
                    for k, (c, s) in enumerate(chunk):
                        zz[k, :, c, s:s + WINDOW] = 0
                    p = F.softmax(model(zz.reshape(-1, Cz, Tz)), dim=1).reshape(len(chunk), B, -1)
                    d = base[None, :] - p[:, rows, t]  # (windows, B)
                    for k, (c, s) in enumerate(chunk):
                        acc[:, c, s:s + WINDOW] += d[k][:, None]
                        cnt[:, c, s:s + WINDOW] += 1
                out = acc / cnt
        return out.reshape(shape).detach().numpy().astype(np.float64)

    def rowwise(a, b, batched=False, **kw):
        """= Quantus's correlation_pearson on Python < 3.10 (see make_quantus_golden.py)."""
        if batched:
            return np.array([scipy.stats.pearsonr(aa, bb)[0] for aa, bb in zip(a, b)])
        return scipy.stats.pearsonr(a, b)[0]

    qname, qkw, _ = METRICS[args.metric]
    qkw = dict(qkw)
    if qkw.get("similarity_func") == "rowwise":
        qkw["similarity_func"] = rowwise
    bs = args.batch_size or n

    def call(k):
        """One metric call on the first k records."""
        m = getattr(quantus, qname)(disable_warnings=True, display_progressbar=False, **qkw)
        xb, ab = x[:k], a[:k]
        if args.metric == "infidelity":  # Quantus's Infidelity needs 4-D input (pitfall 8)
            xb, ab = xb.reshape(k, C, 1, T) if C == 1 else xb.reshape(k, C, T, 1), \
                ab.reshape(k, C, 1, T) if C == 1 else ab.reshape(k, C, T, 1)
        kw = dict(model=model, x_batch=xb, y_batch=y[:k], a_batch=ab, channel_first=True, batch_size=bs)
        if args.metric in ROBUSTNESS:
            kw.update(explain_func=explain, explain_func_kwargs={})
        np.random.seed(5)
        t0 = time.perf_counter()
        s = m(**kw)
        return time.perf_counter() - t0, s

    call(min(n, 8))  # warm-up
    dt, scores = call(n)
    print(f"quantus {args.metric} n={n} seconds={dt:.4f}", flush=True)
    if args.scores_out:
        save_scores(args.scores_out, args.metric, scores)
    if args.compare:
        compare(args.metric, scores, args.compare, args.compare_records)


def load_safetensors(path):
    import json
    import struct
    import numpy as np
    raw = open(path, "rb").read()
    k = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + k])
    dt = {"F32": np.float32, "I64": np.int64, "F64": np.float64}
    return {name: np.frombuffer(raw[8 + k + v["data_offsets"][0]:8 + k + v["data_offsets"][1]], dt[v["dtype"]])
            .reshape(v["shape"]).copy() for name, v in hdr.items() if name != "__metadata__"}


def save_scores(path, metric, scores):
    with open(path, "w") as f:
        for i, s in enumerate(scores):
            vals = s if metric in CURVES else [s]
            f.write(f"{i}," + " ".join(repr(float(v)) for v in vals) + "\n")


def load_scores(path):
    """Scores written by --scores-out: one line a record, `input,v1 v2 ...`."""
    out = []
    with open(path) as f:
        for line in f:
            i, vals = line.rstrip("\n").split(",", 1)
            out.append([float(v) for v in vals.split()])
    return out


def compare(metric, scores, go_csv, records):
    """Prints the largest difference between Quantus's scores and uaxai's over the first `records` records:
    relative, |q - g| / max(|q|, |g|), and, for curves, also relative to the record's curve scale max |q|."""
    import csv
    import numpy as np
    go = {}
    with open(go_csv) as f:
        for row in csv.DictReader(f):
            if row["metric"] == "metric." + metric and row["draw"] == "0":
                if metric in CURVES:
                    go[int(row["input"])] = [float(v) for v in row["curve"].split()]
                else:
                    go[int(row["input"])] = [float(row["value"])] if row["value"] else [float("nan")]
    worst, worst_abs, worst_scale, where = 0.0, 0.0, 0.0, None
    k = min(records, len(scores))
    for i in range(k):
        q = np.asarray(scores[i] if metric in CURVES or np.ndim(scores[i]) else [scores[i]], dtype=float).ravel()
        g = np.asarray(go[i], dtype=float)
        if q.shape != g.shape:
            print(f"compare {metric}: record {i}: Quantus has {q.size} values, uaxai {g.size}")
            return
        d = np.abs(q - g)
        rel = d / np.maximum(np.maximum(np.abs(q), np.abs(g)), 1e-300)
        j = int(np.nanargmax(rel))
        if rel[j] > worst:
            worst, where = float(rel[j]), (i, j, q[j], g[j])
        worst_abs = max(worst_abs, float(np.nanmax(d)))
        worst_scale = max(worst_scale, float(np.nanmax(d) / max(np.nanmax(np.abs(q)), 1e-300)))
    note = ""
    if metric in RANDOM:
        qa = np.array([np.ravel(v)[0] for v in scores], dtype=float)
        ga = np.array([go[i][0] for i in range(len(scores))], dtype=float)
        note = (f" (random draws differ by design: not comparable value by value; mean over all {len(qa)} "
                f"records: quantus {np.nanmean(qa):.4g}, uaxai {np.nanmean(ga):.4g})")
    scale = f", relative to the curve's max |value| {worst_scale:.3g}" if metric in CURVES else ""
    print(f"compare {metric}: first {k} records: largest relative difference {worst:.3g}{scale}, largest "
          f"absolute {worst_abs:.3g}" + (f" (record {where[0]} point {where[1]}: quantus {where[2]!r}, uaxai "
                                         f"{where[3]!r})" if where else "") + note, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="write the tiled inputs.csv, maps.csv, targets.csv")
    p.add_argument("--net", default="fcn")
    p.add_argument("--method", default="occlusion", choices=["occlusion", "saliency"],
                   help="which golden maps (the robustness metrics need occlusion: uaxai has no saliency)")
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--out", required=True)
    t = sub.add_parser("time", help="time Quantus's metric on the prepared data")
    t.add_argument("--data", required=True)
    t.add_argument("--metric", required=True, choices=sorted(METRICS))
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--batch-size", type=int, default=0, help="Quantus batch_size (default: N, one batch)")
    t.add_argument("--occlusion-rows", type=int, default=2048, help="rows a forward pass of the batched occlusion")
    t.add_argument("--scores-out", default="", help="write Quantus's scores (input,values)")
    t.add_argument("--compare", default="", help="uaxai evaluate's output CSV on the same data: print the difference")
    t.add_argument("--compare-records", type=int, default=16)
    c = sub.add_parser("compare", help="compare Quantus's saved scores (--scores-out) with uaxai's output CSV")
    c.add_argument("--metric", required=True, choices=sorted(METRICS))
    c.add_argument("--quantus", required=True)
    c.add_argument("--go", required=True)
    c.add_argument("--records", type=int, default=16)
    g = sub.add_parser("go-args", help="print uaxai evaluate's arguments for the metric, one a line")
    g.add_argument("metric", choices=sorted(METRICS))
    g.add_argument("--method", default="occlusion")
    sub.add_parser("list", help="print the metrics")
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args.net, args.method, args.n, args.out)
    elif args.cmd == "time":
        run_quantus(args)
    elif args.cmd == "compare":
        compare(args.metric, load_scores(args.quantus), args.go, args.records)
    elif args.cmd == "go-args":
        print("\n".join(go_args(args.metric, args.method)))
    elif args.cmd == "list":
        print("\n".join(METRICS))


if __name__ == "__main__":
    main()
