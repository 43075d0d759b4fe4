#!/usr/bin/env python3
"""Golden values of Quantus explanation-evaluation metrics on small 1-D PyTorch networks.

Reproduce (Debian python3, torch 1.13, numpy 1.24, scipy 1.10, scikit-image 0.19, scikit-learn 1.2):

    git --git-dir=<Quantus mirror> archive v0.6.0 quantus | tar -x -C /tmp/quantus/src
    PYTHONPATH=/tmp/quantus/src:/tmp/t4/captum /usr/bin/python3 make_quantus_golden.py \
        --archs testdata/golden/archs --out testdata/golden/quantus

Quantus v0.6.0 = commit 85bcf2c8e88f7b8f3334f552ee72f8a37e870e1a; Captum 0.8.0.
Needs the Debian packages python3-skimage, python3-opencv, python3-pandas, python3-cachetools
(Quantus imports them at start-up even where a metric does not use them).
Every metric is run on the 8 waveforms of a folder as ONE Quantus batch (batch_size=64).
See README.md next to this file for what each metric computes.
With --check, re-computes every metric of an existing golden folder from the README formulas (numpy + torch
only, no Quantus call) and compares with its results.json.
"""
import argparse
import functools
import inspect
import json
import os
import struct
import sys
import time
import warnings

import numpy as np
import scipy.stats
import torch
import torch.nn as nn
import torch.nn.functional as F

QUANTUS_TAG = "v0.6.0"
QUANTUS_COMMIT = "85bcf2c8e88f7b8f3334f552ee72f8a37e870e1a"
SEED = 5  # numpy global seed set right before every metric call (np.random.seed(SEED))

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

import quantus  # noqa: E402
from quantus.functions.perturb_func import noisy_linear_imputation  # noqa: E402
from quantus.helpers.model.pytorch_model import PyTorchModel  # noqa: E402
from captum.attr import Occlusion, Saliency  # noqa: E402
import captum  # noqa: E402

NETS = [("fcn", "FCN", 1), ("resnet1d", "ResNet1D", 1), ("resnet1d-3ph", "ResNet1D", 3)]
METHODS = ["saliency", "occlusion"]
FIS = 20  # features_in_step used instead of the default 1 (see README)
ROBUST_SAMPLES = 10
MASK_LO, MASK_HI = 200, 400  # localisation mask: samples [200, 400) of channel 0


# ----------------------------------------------------------------------------- I/O helpers
_ST_DT = {"F32": np.float32, "I64": np.int64, "F64": np.float64}


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        out[k] = np.frombuffer(body[s:e], dtype=_ST_DT[v["dtype"]]).reshape(v["shape"]).copy()
    return out


def save_safetensors(path, tensors, metadata=None):
    inv = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64", np.dtype(np.float64): "F64"}
    hdr, blobs, off = {}, [], 0
    for k in sorted(tensors):
        a = np.ascontiguousarray(tensors[k])
        b = a.tobytes()
        hdr[k] = {"dtype": inv[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        hdr["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def savecsv(path, arr, fmt="%.9g"):
    np.savetxt(path, np.asarray(arr).reshape(len(arr), -1), fmt=fmt, delimiter=",")


def describe(obj):
    """JSON-able description of a Quantus parameter value."""
    if hasattr(obj, "golden_describe"):
        return obj.golden_describe()
    if isinstance(obj, functools.partial):
        return {"function": describe(obj.func), "keywords": {k: describe(v) for k, v in obj.keywords.items()}}
    if callable(obj) and hasattr(obj, "__qualname__"):
        return f"{getattr(obj, '__module__', '')}.{obj.__qualname__}"
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, (list, tuple)):
        return [describe(o) for o in obj]
    if isinstance(obj, dict):
        return {str(k): describe(v) for k, v in obj.items()}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return repr(obj)


def jsonable(x):
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if np.isnan(x) else x  # NaN -> null
    return x


# ----------------------------------------------------------------------------- model + explanations
class Logits(nn.Module):
    """What Quantus receives: forward() = the network's logits (no softmax module inside).
    A 4-D input (B, C, 1, T) or (B, C, T, 1) -- used for Infidelity and ROAD -- is viewed as (B, C, T)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        if x.dim() == 4:
            x = x.reshape(x.shape[0], x.shape[1], -1)
        return self.net.logits(x)


def explain(model, inputs, targets, method="saliency", **kwargs):
    """Quantus explain_func. Explains p_target = softmax(model(x))[target] (as the archs golden set)."""
    def prob(x):
        return F.softmax(model(x), dim=1)

    x = torch.as_tensor(np.asarray(inputs), dtype=torch.float32)
    t = torch.as_tensor(np.asarray(targets), dtype=torch.long)
    if method == "saliency":
        a = Saliency(prob).attribute(x, target=t, abs=True)
    elif method == "occlusion":
        a = Occlusion(prob).attribute(x, target=t, sliding_window_shapes=(1, 60), strides=(1, 20), baselines=0)
    else:
        raise ValueError(method)
    return a.detach().cpu().numpy().astype(np.float64)


EXPLAIN_DOC = {
    "saliency": "captum.attr.Saliency(softmax(logits)).attribute(x, target=y, abs=True): |d p_y / d x|",
    "occlusion": "captum.attr.Occlusion(softmax(logits)).attribute(x, target=y, sliding_window_shapes=(1,60), "
                 "strides=(1,20), baselines=0, perturbations_per_eval=1)",
}


def correlation_pearson_rowwise(a, b, batched=False, **kwargs):
    """= quantus.functions.similarity_func.correlation_pearson on Python < 3.10. Quantus 0.6.0 on Python >= 3.10
    calls scipy.stats.pearsonr(a, b, axis=1), which scipy < 1.13 (Debian 12: 1.10.1) does not accept."""
    if batched:
        return np.array([scipy.stats.pearsonr(aa, bb)[0] for aa, bb in zip(a, b)])
    return scipy.stats.pearsonr(a, b)[0]


class Recorder:
    """Wraps a Quantus perturb function (a functools.partial) and records what it did."""

    def __init__(self, fn, mode):
        self.fn, self.mode, self.calls = fn, mode, []
        self.keywords = getattr(fn, "keywords", {})  # Monotonicity reads perturb_func.keywords

    def __call__(self, arr, indices, **kw):
        out = self.fn(arr=arr, indices=indices, **kw)
        if self.mode == "indices":
            self.calls.append(np.array(indices, copy=True))
        elif self.mode == "value_at_first_index":
            idx = np.asarray(indices)
            self.calls.append(np.array(out[np.arange(out.shape[0]), idx[:, 0]], copy=True))
        elif self.mode == "output":
            self.calls.append(np.array(out, copy=True))
        return out

    def golden_describe(self):
        return describe(self.fn)


# ----------------------------------------------------------------------------- ties
def tie_at_cuts(a_proc, descending, cuts):
    """Per waveform: True when a sort-based cut splits a group of equal values (result depends on tie order)."""
    out = []
    for row in a_proc.reshape(len(a_proc), -1):
        v = np.sort(row)[::-1] if descending else np.sort(row)
        out.append(bool(any(0 < c < len(v) and v[c - 1] == v[c] for c in cuts)))
    return out


def processed(a, normalise, absolute):
    """What Metric.general_preprocess does to a_batch: normalise_by_max over ALL axes (batch included), then abs."""
    a = np.array(a, copy=True)
    if normalise and not np.all(a == 0):
        a = a / np.max(np.abs(a))
    if absolute:
        a = np.abs(a)
    return a


# ----------------------------------------------------------------------------- one (network, method)
def run_metric(name, metric, call_kwargs, category, record):
    np.random.seed(SEED)
    t0 = time.perf_counter()
    scores = metric(**call_kwargs)
    dt = time.perf_counter() - t0
    n = len(call_kwargs["x_batch"])
    params = {k: describe(v) for k, v in metric.get_params.items()
              if k not in ("explain_func", "explain_func_kwargs", "evaluation_scores")}
    call = {k: describe(v) for k, v in call_kwargs.items()
            if k not in ("model", "x_batch", "y_batch", "a_batch", "s_batch", "explain_func")}
    if "explain_func" in call_kwargs:
        call["explain_func"] = "make_quantus_golden.explain (see explanation)"
    sig = inspect.signature(type(metric).__call__).parameters  # record the call defaults we did not set
    for k in ("softmax", "device", "model_predict_kwargs", "explain_func_kwargs", "batch_size", "channel_first"):
        if k not in call and k in sig:
            call[k] = describe(sig[k].default)
    if call_kwargs.get("model") is None:
        call["model_output_used"] = "none (the metric does not call the model)"
    elif name in ("MPRT", "RandomLogit", "MaxSensitivity", "AvgSensitivity", "LocalLipschitzEstimate"):
        call["model_output_used"] = ("none: the model is only re-explained (explanations are of p_y); the "
                                     "softmax flag has no effect here")
    elif name == "ROAD":
        call["model_output_used"] = "argmax over classes only (the softmax flag has no effect)"
    else:
        call["model_output_used"] = "p_y = softmax(logits)_y" if call.get("softmax") else "logit f_y"
    entry = {"category": category, "init_params": params, "call_params": call,
             "seconds": round(dt, 3), "seconds_per_waveform": round(dt / n, 4)}
    record[name] = entry
    print(f"    {name:28s} {dt:7.2f} s", flush=True)
    return scores, entry


def evaluate(netname, method, net_logits, x, y, a, mask, outdir, drawdir, draws_state, quick=False):
    B, C, T = x.shape
    res = {}
    common = dict(model=net_logits, x_batch=x, y_batch=y, a_batch=a, channel_first=True, batch_size=64)
    explain_kw = {"method": method}
    kw_disable = dict(disable_warnings=True, display_progressbar=False)

    def shared_draw(key, arr, fname, meaning):
        """Draws that do not depend on the method are saved once per network; the second method must match."""
        path = os.path.join(drawdir, fname)
        if key in draws_state:
            same = np.array_equal(draws_state[key], arr)
            assert same, f"{key}: draws differ between methods"
        else:
            draws_state[key] = arr
            np.save(path, arr)
        return {"file": f"../draws/{fname}", "shape": list(arr.shape), "dtype": str(arr.dtype), "meaning": meaning}

    # ---------------- faithfulness
    # RegionPerturbation (MoRF, patch 20 -> 32 regions of 20 samples x all channels)
    m = quantus.RegionPerturbation(patch_size=20, order="morf", regions_evaluation=T // 20, **kw_disable)
    rec = Recorder(m.perturb_func, "indices")
    m.perturb_func = rec
    s, e = run_metric("RegionPerturbation", m, common, "faithfulness", res)
    # padded plane is (C, 20, T): flat index f -> column f % T -> region (f % T) // 20
    region_order = np.stack([(c[:, 0] % T) // 20 for c in rec.calls], 1).astype(np.uint16)
    np.save(os.path.join(outdir, "region_order.npy"), region_order)
    curves = np.array(s)
    e.update(scores=curves, score_kind="per waveform: curve of p_y(x) - p_y(x_k), k = 1..32 regions removed (MoRF)",
             order_file="region_order.npy",
             auc_trapz=np.trapz(curves, dx=1, axis=1), deterministic=True, draws=None)
    ap = processed(a, True, False)
    rs = ap.reshape(B, C, T // 20, 20).sum(axis=(1, 3))
    e["tie_sensitive"] = tie_at_cuts(rs, True, range(1, T // 20))

    # PixelFlipping
    m = quantus.PixelFlipping(features_in_step=FIS, **kw_disable)
    rec = Recorder(m.perturb_func, "indices")
    m.perturb_func = rec
    s, e = run_metric("PixelFlipping", m, common, "faithfulness", res)
    order_desc = np.argsort(-processed(a, True, False).reshape(B, -1), axis=1)
    assert np.array_equal(np.concatenate(rec.calls, 1), order_desc), "order differs from Quantus's"
    np.save(os.path.join(outdir, "order_desc.npy"), order_desc.astype(np.uint16))
    curves = np.array(s)
    e.update(scores=curves, score_kind="per waveform: curve of p_y(x_k) after k*20 features removed (MoRF), k=1..",
             order_file="order_desc.npy",
             auc_trapz=np.trapz(curves, dx=1, axis=1), deterministic=True, draws=None,
             tie_sensitive=tie_at_cuts(processed(a, True, False), True, range(FIS, C * T, FIS)))

    # FaithfulnessCorrelation (random subsets -> recorded)
    m = quantus.FaithfulnessCorrelation(similarity_func=correlation_pearson_rowwise, nr_runs=100, subset_size=224,
                                        return_aggregate=False, **kw_disable)
    rec = Recorder(m.perturb_func, "indices")
    m.perturb_func = rec
    s, e = run_metric("FaithfulnessCorrelation", m, common, "faithfulness", res)
    sub = np.stack(rec.calls, 1).astype(np.uint16)  # (B, nr_runs, subset_size)
    e.update(scores=np.array(s), score_kind="per waveform: Pearson r (Quantus default return_aggregate=True would "
             "return only their mean, given as quantus_default_output)", quantus_default_output=[float(np.mean(s))],
             deterministic="yes with the saved subsets",
             draws=shared_draw("fc_subsets", sub, "faithfulness_correlation_subsets.npy",
                               "[waveform, run, j]: flat feature index (channel*640+t) of the j-th feature in the "
                               "random subset of run r (np.random.choice(n_features, 224, replace=False))"))

    # FaithfulnessEstimate
    m = quantus.FaithfulnessEstimate(similarity_func=correlation_pearson_rowwise, features_in_step=FIS, **kw_disable)
    s, e = run_metric("FaithfulnessEstimate", m, common, "faithfulness", res)
    e.update(scores=np.array(s), score_kind="per waveform: Pearson r", deterministic=True, draws=None,
             order_file="order_desc.npy",
             tie_sensitive=tie_at_cuts(processed(a, True, False), True, range(FIS, C * T, FIS)))

    # Monotonicity (Arya)
    m = quantus.Monotonicity(features_in_step=FIS, **kw_disable)
    rec = Recorder(m.perturb_func, "indices")
    m.perturb_func = rec
    s, e = run_metric("Monotonicity", m, common, "faithfulness", res)
    order_asc = np.argsort(processed(a, True, True).reshape(B, -1), axis=1)
    assert np.array_equal(np.concatenate(rec.calls, 1), order_asc), "order differs from Quantus's"
    np.save(os.path.join(outdir, "order_asc_abs.npy"), order_asc.astype(np.uint16))
    e.update(scores=[bool(v) for v in s], score_kind="per waveform: bool", deterministic=True, draws=None,
             order_file="order_asc_abs.npy",
             tie_sensitive=tie_at_cuts(processed(a, True, True), False, range(FIS, C * T, FIS)),
             notes="Quantus 0.6.0 bug: the input starts all-'black' and the perturb function writes 'black' again, "
                   "so no feature is ever restored; predictions are constant and the score is always True.")

    # MonotonicityCorrelation (uniform baseline: one U(0,1) value per waveform per call -> recorded)
    m = quantus.MonotonicityCorrelation(nr_samples=10, features_in_step=FIS, **kw_disable)
    rec = Recorder(m.perturb_func, "value_at_first_index")
    m.perturb_func = rec
    s, e = run_metric("MonotonicityCorrelation", m, common, "faithfulness", res)
    steps = C * T // FIS
    vals = np.stack(rec.calls, 0).reshape(steps, 10, B).transpose(2, 0, 1).astype(np.float32)
    e.update(scores=np.array(s), score_kind="per waveform: Spearman rho", deterministic="yes with the saved draws",
             order_file="order_asc_abs.npy",
             tie_sensitive=tie_at_cuts(processed(a, True, True), False, range(FIS, C * T, FIS)),
             draws=shared_draw("mc_uniform", vals, "monotonicity_correlation_uniform.npy",
                               "[waveform, step, sample]: the value (float32) written into all 20 features of "
                               "that step for that sample (np.random.uniform(0,1) per waveform per call)"))

    # Selectivity
    m = quantus.Selectivity(patch_size=20, **kw_disable)
    s, e = run_metric("Selectivity", m, common, "faithfulness", res)
    curves = np.array(s)
    e.update(scores=curves, score_kind="per waveform: curve of p_y(x_k), k=1..32 regions removed (MoRF)",
             order_file="region_order.npy",
             auc_trapz=np.trapz(curves, dx=1, axis=1), deterministic=True, draws=None,
             tie_sensitive=tie_at_cuts(rs, True, range(1, T // 20)))

    # Infidelity: needs 4-D input; x viewed as (B, C, 1, T); only patch size 1 works (see README)
    # (B,1,1,T) for one channel; (B,C,T,1) for several (Quantus cannot infer the attribution axes of (B,3,1,T))
    shp4 = (B, C, 1, T) if C == 1 else (B, C, T, 1)
    c4 = dict(common, x_batch=x.reshape(shp4), a_batch=a.reshape(shp4))
    m = quantus.Infidelity(perturb_patch_sizes=[1], n_perturb_samples=1, **kw_disable)
    s, e = run_metric("Infidelity", m, c4, "faithfulness", res)
    e.update(scores=np.array(s), score_kind="per waveform: mean squared error", deterministic=True, draws=None,
             input_layout_4d=list(shp4),
             notes="input reshaped to 4-D (B,1,1,640) for one channel, (B,3,640,1) for three; either way the "
                   "patches are single time steps across all channels, taken left to right; perturb_patch_sizes=[1] (the only size that works for a "
                   "height-1 input); n_perturb_samples=1 because the 'black' replacement is deterministic and the "
                   "10 default repetitions are identical.")

    # SensitivityN
    m = quantus.SensitivityN(similarity_func=correlation_pearson_rowwise, features_in_step=FIS,
                             n_max_percentage=0.8, return_aggregate=False, **kw_disable)
    cap = {}
    orig_pp = m.custom_postprocess

    def pp(_orig=orig_pp, _m=m, **kw):
        cap["raw"] = _m.evaluation_scores[0]
        return _orig(**kw)

    m.custom_postprocess = pp
    s, e = run_metric("SensitivityN", m, common, "faithfulness", res)
    e.update(scores=np.array(s),
             score_kind="NOT per waveform: list over n = 1..max_features of the Pearson r ACROSS THE 8 WAVEFORMS "
                        "between att_sums[:, n] and pred_deltas[:, n]",
             quantus_default_output=[float(np.mean(s))],
             per_waveform_pred_deltas=cap["raw"]["pred_deltas"], per_waveform_att_sums=cap["raw"]["att_sums"],
             deterministic=True, draws=None, order_file="order_desc.npy",
             tie_sensitive=tie_at_cuts(processed(a, True, False), True, range(FIS, C * T, FIS)))

    # ROAD (1 channel only), 4-D view, position-indexed noise field
    if C == 1:
        if "road_z" not in draws_state:
            z = np.random.default_rng(1000 + SEED).standard_normal((B, C * T))
            draws_state["road_z"] = z
            np.save(os.path.join(drawdir, "road_noise_z.npy"), z)
        z = draws_state["road_z"]
        x4 = x.reshape(B, C, 1, T)
        keys = {xe.tobytes(): i for i, xe in enumerate(x4)}

        def road_perturb(arr, indices, _z=z, _keys=keys, **kw):
            i = _keys[arr.tobytes()]
            idx = np.asarray(indices)
            orig = np.random.randn
            np.random.randn = lambda *shape: _z[i][idx].reshape(shape)
            try:
                return noisy_linear_imputation(arr=arr, indices=indices, **kw)
            finally:
                np.random.randn = orig

        road_perturb.golden_describe = lambda: ("quantus.functions.perturb_func.noisy_linear_imputation with "
                                                "np.random.randn(1, k) replaced by z[waveform, indices]")
        m = quantus.ROAD(perturb_func=road_perturb, noise=0.01, **kw_disable)
        cap = {}
        orig_pp = m.custom_postprocess

        def pp2(_orig=orig_pp, _m=m, **kw):
            cap["raw"] = _m.evaluation_scores[0]
            return _orig(**kw)

        m.custom_postprocess = pp2
        s, e = run_metric("ROAD", m, dict(c4, x_batch=x4), "faithfulness", res)
        pcts = list(range(1, 100, 2))
        ap = processed(a, True, False)
        e.update(scores=cap["raw"], quantus_output=s,
                 score_kind="per waveform: [p] 1 if argmax f(x_p) == y else 0, p in percentages; quantus_output = "
                            "mean over the 8 waveforms per percentage (what Quantus returns)",
                 percentages=pcts, deterministic="yes with the saved noise field",
                 tie_sensitive=tie_at_cuts(ap, True, [int(C * T * p / 100) for p in pcts]),
                 order_file="order_desc.npy",
                 draws={"file": "../draws/road_noise_z.npy", "shape": [B, C * T], "dtype": "float64",
                        "meaning": "standard-normal field z[waveform, t]; the imputed value of a removed sample t is "
                                   "interp(t) + 0.01*z[waveform, t] (replaces Quantus's per-call np.random.randn)"})
    else:
        res["ROAD"] = {"category": "faithfulness", "skipped": True,
                       "reason": "noisy_linear_imputation treats the flattened indices as positions of one H x W "
                                 "plane shared by all channels; with 3 channels the indices (0..1919) overflow the "
                                 "640-long plane (IndexError). Quantus ROAD is image-only."}

    # ---------------- randomisation
    if method == "saliency":
        m = quantus.MPRT(**kw_disable)
        s, e = run_metric("MPRT", m, dict(common, explain_func=explain, explain_func_kwargs=explain_kw),
                          "randomisation", res)
        layers = [k for k in s.keys()]
        e.update(scores={k: np.array(v) for k, v in s.items()}, layer_order=layers,
                 score_kind="per layer (cascading, top_down), per waveform: Spearman rho between the original "
                            "explanation and the explanation of the model whose layers up to this one are "
                            "randomised; 'original' = rho(a_batch, re-explanation of the unchanged model)",
                 deterministic=True,
                 draws={"file": "../draws/mprt_randomised.safetensors",
                        "meaning": "the re-initialised parameters and buffers of every randomised module "
                                   "(torch.manual_seed(43); module.reset_parameters()); names as in "
                                   "model.safetensors. Cascade step l = original weights with modules "
                                   "layer_order[1..l] replaced by these."})

    m = quantus.RandomLogit(num_classes=16, seed=42, **kw_disable)
    seen = []

    def explain_rec(model, inputs, targets, **kw):
        seen.append(np.array(targets))
        return explain(model, inputs, targets, **kw)

    try:
        s, e = run_metric("RandomLogit", m, dict(common, explain_func=explain_rec, explain_func_kwargs=explain_kw),
                          "randomisation", res)
        e.update(scores=np.array(s), score_kind="per waveform: SSIM (skimage, win 7) between a(y) and a(y_off)",
                 deterministic=True)
    except AssertionError as ex:  # Quantus refuses a batch of explanations that are all negative
        e = res["RandomLogit"] = {"category": "randomisation", "failed": True,
                                  "error": f"AssertionError: {ex}",
                                  "reason": "quantus.helpers.asserts.assert_attributions rejects the re-computed "
                                            "explanations for y_off because every value of the whole batch is < 0 "
                                            "(occluding any window raises p_{y_off}); no score exists in Quantus"}
        print("    RandomLogit                  FAILED:", ex, flush=True)
    y_off = seen[0].astype(np.int64)
    e.update(random_logit_targets=y_off,
             draws={"file": "../draws/random_logit_targets.csv", "meaning": "y_off per waveform"})
    if "rl" not in draws_state:
        draws_state["rl"] = y_off
        np.savetxt(os.path.join(drawdir, "random_logit_targets.csv"), y_off, fmt="%d")
    assert np.array_equal(draws_state["rl"], y_off)

    # ---------------- robustness
    rkw = dict(common, explain_func=explain, explain_func_kwargs=explain_kw)
    for name, cls, mode in [("MaxSensitivity", quantus.MaxSensitivity, "uniform"),
                            ("AvgSensitivity", quantus.AvgSensitivity, "uniform"),
                            ("LocalLipschitzEstimate", quantus.LocalLipschitzEstimate, "gauss")]:
        m = cls(nr_samples=ROBUST_SAMPLES, **kw_disable)
        rec = Recorder(m.perturb_func, "output")
        m.perturb_func = rec
        s, e = run_metric(name, m, rkw, "robustness", res)
        xp = np.stack(rec.calls, 0).reshape(ROBUST_SAMPLES, B, C * T).astype(np.float32)
        if mode == "uniform":
            d = shared_draw("rob_uniform", xp, "robustness_uniform_x_perturbed.npy",
                            "[sample, waveform, feature]: the perturbed input x' = float32(x + U(-0.2, 0.2)) "
                            "(shared by MaxSensitivity and AvgSensitivity: same seed, same draws)")
        else:
            d = shared_draw("rob_gauss", xp, "robustness_gaussian_x_perturbed.npy",
                            "[sample, waveform, feature]: the perturbed input x' = float32(x + N(0, 0.1^2))")
        e.update(scores=np.array(s), score_kind="per waveform", deterministic="yes with the saved perturbed inputs",
                 draws=d)

    # ---------------- complexity
    for name, cls in [("Sparseness", quantus.Sparseness), ("Complexity", quantus.Complexity),
                      ("EffectiveComplexity", quantus.EffectiveComplexity)]:
        m = cls(**kw_disable)
        s, e = run_metric(name, m, dict(common, model=None), "complexity", res)
        e.update(scores=np.array(s), score_kind="per waveform", deterministic=True, draws=None)

    # ---------------- localisation (flattened to one channel for the 3-channel net)
    xf, af, sf = x.reshape(B, 1, C * T), a.reshape(B, 1, C * T), mask.reshape(B, 1, C * T)
    lkw = dict(model=None, x_batch=xf, y_batch=y, a_batch=af, s_batch=sf, channel_first=True, batch_size=64)
    for name, m in [("RelevanceMassAccuracy", quantus.RelevanceMassAccuracy(**kw_disable)),
                    ("RelevanceRankAccuracy", quantus.RelevanceRankAccuracy(**kw_disable)),
                    ("TopKIntersection", quantus.TopKIntersection(k=100, **kw_disable)),
                    ("PointingGame", quantus.PointingGame(**kw_disable)),
                    ("AUC", quantus.AUC(**kw_disable)),
                    ("AttributionLocalisation", quantus.AttributionLocalisation(**kw_disable))]:
        s, e = run_metric(name, m, lkw, "localisation", res)
        e.update(scores=np.array(s, dtype=float), score_kind="per waveform", deterministic=True, draws=None)
        if name in ("RelevanceRankAccuracy", "TopKIntersection"):
            e["order_file"] = "order_desc.npy (the 1-channel localisation view flattens the channels in the same order)"
        if name == "RelevanceRankAccuracy":
            e["tie_sensitive"] = tie_at_cuts(processed(a, True, False), True, [int(mask[0].sum())])
        if name == "TopKIntersection":
            e["tie_sensitive"] = tie_at_cuts(processed(a, True, False), True, [100])
    return res


# ----------------------------------------------------------------------------- --check: independent re-computation
# Re-computes every metric from the README formulas with numpy + torch only (no Quantus call), from the files of
# a golden folder, and compares with its results.json.

def _load_st(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    dt = {"F32": np.float32, "I64": np.int64}
    return {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], dt[v["dtype"]])
            .reshape(v["shape"]).copy() for k, v in hdr.items() if k != "__metadata__"}, hdr.get("__metadata__", {})


def pearson(a, b):
    a, b = a - a.mean(), b - b.mean()
    return float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))


def rankdata(v):
    order = np.argsort(v, kind="mergesort")
    r = np.empty(len(v))
    sv = v[order]
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and sv[j + 1] == sv[i]:
            j += 1
        r[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    return pearson(rankdata(a), rankdata(b))


def ssim1d(a, b, win=7, K1=0.01, K2=0.03):
    R = float(abs(max(a.max(), b.max()) - min(a.min(), b.min())))
    p = win // 2

    def filt(v):
        vp = np.pad(v, p, mode="symmetric")  # scipy.ndimage 'reflect'
        c = np.cumsum(np.concatenate([[0.0], vp]))
        return (c[win:] - c[:-win]) / win

    ux, uy = filt(a), filt(b)
    cov = win / (win - 1)
    vx, vy, vxy = cov * (filt(a * a) - ux * ux), cov * (filt(b * b) - uy * uy), cov * (filt(a * b) - ux * uy)
    C1, C2 = (K1 * R) ** 2, (K2 * R) ** 2
    S = (2 * ux * uy + C1) * (2 * vxy + C2) / ((ux ** 2 + uy ** 2 + C1) * (vx + vy + C2))
    return float(S[p:-p].mean())


def occlusion(prob, x, y):
    B, C, T = x.shape
    with torch.no_grad():
        base = prob(x)[np.arange(B), y]
        acc = torch.zeros_like(x, dtype=torch.float32)
        cnt = torch.zeros_like(x, dtype=torch.float32)
        for c in range(C):
            for s in range(0, T - 60 + 1, 20):
                xo = x.clone()
                xo[:, c, s:s + 60] = 0
                d = base - prob(xo)[np.arange(B), y]
                acc[:, c, s:s + 60] += d[:, None]
                cnt[:, c, s:s + 60] += 1
    return (acc / cnt).numpy().astype(np.float64)


def saliency(prob, x, y):
    x = x.clone().requires_grad_(True)
    p = prob(x)[np.arange(len(y)), y].sum()
    (g,) = torch.autograd.grad(p, x)
    return g.abs().numpy().astype(np.float64)



def check(ARCHS, GOLD):
    sys.path.insert(0, ARCHS)
    import archs  # noqa: E402

    worst, bad = {}, []


    def cmp(name, mine, ref, tol=1e-6):
        mine, ref = np.asarray(mine, dtype=float), np.asarray(ref, dtype=float)
        ok = np.allclose(mine, ref, rtol=tol, atol=tol, equal_nan=True)
        d = float(np.nanmax(np.abs(mine - ref))) if mine.size else 0.0
        worst[name] = max(worst.get(name, 0.0), d)
        if not ok:
            bad.append(name)
            print(f"   MISMATCH {name}: max abs diff {d:.3e}")
        return ok


    for folder, cls, cin in [("fcn", "FCN", 1), ("resnet1d", "ResNet1D", 1), ("resnet1d-3ph", "ResNet1D", 3)]:
        gdir = os.path.join(GOLD, folder)
        if not os.path.isdir(gdir):
            continue
        net = getattr(archs, cls)(cin=cin)
        sd, _ = _load_st(os.path.join(ARCHS, folder, "model.safetensors"))
        net.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})
        net.eval()
        x = np.loadtxt(os.path.join(ARCHS, folder, "waveforms.csv"), delimiter=",", dtype=np.float32).reshape(8, cin, 640)
        y = np.loadtxt(os.path.join(ARCHS, folder, "targets.csv"), dtype=np.int64)
        B, C, T = x.shape
        n = C * T
        xt = torch.from_numpy(x)

        def f(xx):  # logits of target
            with torch.no_grad():
                return net.logits(torch.from_numpy(np.ascontiguousarray(xx, dtype=np.float32)).reshape(B, C, T)).numpy()[np.arange(B), y].astype(np.float64)

        def p(xx):
            with torch.no_grad():
                return F.softmax(net.logits(torch.from_numpy(np.ascontiguousarray(xx, dtype=np.float32)).reshape(B, C, T)), 1).numpy()[np.arange(B), y].astype(np.float64)

        beta = x.reshape(B, -1).min(1)  # 'black'
        mask = np.loadtxt(os.path.join(gdir, "mask.csv"), delimiter=",").reshape(B, -1).astype(bool)
        D = os.path.join(gdir, "draws")
        for method in ["saliency", "occlusion"]:
            R = json.load(open(os.path.join(gdir, method, "results.json")))["metrics"]
            a = np.loadtxt(os.path.join(gdir, method, "attributions.csv"), delimiter=",").astype(np.float32).astype(np.float64).reshape(B, -1)
            an = a / np.abs(a).max()  # normalise over the whole batch
            od = np.load(os.path.join(gdir, method, "order_desc.npy")).astype(int)
            oa = np.load(os.path.join(gdir, method, "order_asc_abs.npy")).astype(int)
            ro = np.load(os.path.join(gdir, method, "region_order.npy")).astype(int)
            xf = x.reshape(B, -1)
            print(f"== {folder}/{method}")
            # RegionPerturbation / Selectivity
            xp, cur_rp, cur_sel = xf.copy(), [], []
            p0 = p(xf)
            for k in range(32):
                for i in range(B):
                    xp.reshape(B, C, T)[i, :, 20 * ro[i, k]:20 * ro[i, k] + 20] = beta[i]
                pk = p(xp)
                cur_rp.append(p0 - pk)
                cur_sel.append(pk)
            cmp("RegionPerturbation", np.stack(cur_rp, 1), R["RegionPerturbation"]["scores"])
            cmp("Selectivity", np.stack(cur_sel, 1), R["Selectivity"]["scores"])
            # PixelFlipping, SensitivityN (cumulative, MoRF, 20 per step)
            xp, pf, sn_d, sn_a = xf.copy(), [], [], []
            for k in range(n // 20):
                g = od[:, 20 * k:20 * k + 20]
                xp[np.arange(B)[:, None], g] = beta[:, None]
                pk = p(xp)
                pf.append(pk)
                sn_d.append(p0 - pk)
                sn_a.append(an[np.arange(B)[:, None], g].sum(1))
            cmp("PixelFlipping", np.stack(pf, 1), R["PixelFlipping"]["scores"])
            sn_d, sn_a = np.stack(sn_d, 1), np.stack(sn_a, 1)
            mf = int(0.8 * T // 20)
            cmp("SensitivityN", [pearson(sn_a[:, k], sn_d[:, k]) for k in range(mf)], R["SensitivityN"]["scores"])
            # FaithfulnessEstimate (non-cumulative, logits)
            f0 = f(xf)
            A, Dl = [], []
            for k in range(n // 20):
                g = od[:, 20 * k:20 * k + 20]
                xp = xf.copy()
                xp[np.arange(B)[:, None], g] = beta[:, None]
                Dl.append(f0 - f(xp))
                A.append(an[np.arange(B)[:, None], g].sum(1))
            A, Dl = np.stack(A, 1), np.stack(Dl, 1)
            cmp("FaithfulnessEstimate", [pearson(A[i], Dl[i]) for i in range(B)], R["FaithfulnessEstimate"]["scores"])
            # FaithfulnessCorrelation (random subsets, logits)
            S = np.load(os.path.join(D, "faithfulness_correlation_subsets.npy")).astype(int)
            A, Dl = [], []
            for r in range(S.shape[1]):
                g = S[:, r]
                xp = xf.copy()
                xp[np.arange(B)[:, None], g] = beta[:, None]
                Dl.append(f0 - f(xp))
                A.append(an[np.arange(B)[:, None], g].sum(1))
            A, Dl = np.stack(A, 1), np.stack(Dl, 1)
            cmp("FaithfulnessCorrelation", [pearson(A[i], Dl[i]) for i in range(B)], R["FaithfulnessCorrelation"]["scores"])
            # MonotonicityCorrelation
            U = np.load(os.path.join(D, "monotonicity_correlation_uniform.npy"))
            inv = np.where(np.abs(p0) >= 1e-5, 1 / np.abs(p0), 1.0) ** 2
            A, V = [], []
            for k in range(n // 20):
                g = oa[:, 20 * k:20 * k + 20]
                vs = []
                for s in range(U.shape[2]):
                    xp = xf.copy()
                    xp[np.arange(B)[:, None], g] = U[:, k, s][:, None]
                    vs.append((p(xp) - p0) ** 2)
                V.append(np.mean(vs, 0) * inv)
                A.append(np.abs(an)[np.arange(B)[:, None], g].sum(1))
            A, V = np.stack(A, 1), np.stack(V, 1)
            cmp("MonotonicityCorrelation", [spearman(A[i], V[i]) for i in range(B)], R["MonotonicityCorrelation"]["scores"])
            # Infidelity (cumulative per time step, all channels, logits, raw a)
            xp = x.copy()
            Dl, A = [], []
            for t in range(T):
                xp[:, :, t] = beta[:, None]
                Dl.append(f0 - f(xp))
                A.append((a * (x - xp).reshape(B, -1)).sum(1))
            Dl, A = np.stack(Dl, 1), np.stack(A, 1)
            cmp("Infidelity", ((Dl - A) ** 2).mean(1), R["Infidelity"]["scores"], tol=1e-5)
            # ROAD
            if "skipped" not in R["ROAD"]:
                Z = np.load(os.path.join(D, "road_noise_z.npy"))
                hits = []
                for pc in range(1, 100, 2):
                    k = int(n * pc / 100)
                    xp = xf.copy()
                    for i in range(B):
                        rem = np.zeros(T, bool)
                        rem[od[i, :k]] = True
                        keep = np.where(~rem)[0]
                        v = np.interp(np.arange(T), keep, xf[i, keep].astype(np.float64))  # linear, constant at ends
                        xp[i, rem] = (v[rem] + 0.01 * Z[i, rem]).astype(np.float32)
                    with torch.no_grad():
                        pred = net.logits(torch.from_numpy(xp).reshape(B, C, T)).argmax(1).numpy()
                    hits.append(pred == y)
                cmp("ROAD", np.stack(hits, 1).astype(int), R["ROAD"]["scores"])

            # explanations
            def prob_of(m):
                return lambda z: F.softmax(m.logits(z), 1)

            expl = (lambda m, xx, yy: saliency(prob_of(m), torch.from_numpy(np.asarray(xx, np.float32)).reshape(B, C, T), yy)) \
                if method == "saliency" else \
                (lambda m, xx, yy: occlusion(prob_of(m), torch.from_numpy(np.asarray(xx, np.float32)).reshape(B, C, T), yy))
            cmp("explanation", expl(net, xf, y).reshape(B, -1), a, tol=1e-6 * np.abs(a).max())
            # RandomLogit
            yo = np.loadtxt(os.path.join(D, "random_logit_targets.csv"), dtype=int)
            ao = expl(net, xf, yo).reshape(B, -1)
            if R["RandomLogit"].get("failed"):
                cmp("RandomLogit(all<0)", float(np.all(ao < 0)), 1.0)
            else:
                ao = ao / np.abs(ao).max()
                cmp("RandomLogit", [ssim1d(an[i], ao[i]) for i in range(B)], R["RandomLogit"]["scores"], tol=1e-5)
            # Robustness
            XU = np.load(os.path.join(D, "robustness_uniform_x_perturbed.npy"))
            rs = []
            for s in range(XU.shape[0]):
                ap = expl(net, XU[s], y).reshape(B, -1)
                rs.append(np.linalg.norm(a - ap, axis=1) / np.linalg.norm(a, axis=1))
            rs = np.stack(rs, 1)
            cmp("MaxSensitivity", rs.max(1), R["MaxSensitivity"]["scores"], tol=1e-5)
            cmp("AvgSensitivity", rs.mean(1), R["AvgSensitivity"]["scores"], tol=1e-5)
            XG = np.load(os.path.join(D, "robustness_gaussian_x_perturbed.npy"))
            ls = []
            for s in range(XG.shape[0]):
                ap = expl(net, XG[s], y).reshape(B, -1)
                ap = ap / np.abs(ap).max()
                dx = np.sqrt(((xf - XG[s]) ** 2).sum(1, dtype=np.float32))
                ls.append(np.linalg.norm(an - ap, axis=1) / (dx + 1e-10))
            cmp("LocalLipschitzEstimate", np.stack(ls, 1).max(1), R["LocalLipschitzEstimate"]["scores"], tol=1e-5)
            # MPRT (saliency only)
            if method == "saliency":
                rnd, meta = _load_st(os.path.join(D, "mprt_randomised.safetensors"))
                order = meta["layer_order_top_down"].split(",")
                cur = {k: v.copy() for k, v in sd.items()}
                net2 = getattr(archs, cls)(cin=cin)
                aa = np.abs(an)
                for l in order:
                    for k in rnd:
                        if k.startswith(l + "."):
                            cur[k] = rnd[k]
                    net2.load_state_dict({k: torch.from_numpy(v) for k, v in cur.items()})
                    net2.eval()
                    ar = expl(net2, xf, y).reshape(B, -1)
                    ar = np.abs(ar / np.abs(ar).max()) if np.abs(ar).max() > 0 else ar
                    cmp("MPRT", [spearman(aa[i], ar[i]) for i in range(B)], R["MPRT"]["scores"]["net." + l], tol=1e-6)
            # complexity
            aa = np.abs(an)
            v = np.sort(aa + 1e-7, axis=1)
            ii = np.arange(1, n + 1)
            cmp("Sparseness", ((2 * ii - n - 1) * v).sum(1) / (n * v.sum(1)), R["Sparseness"]["scores"])
            q = aa / aa.sum(1, keepdims=True)
            cmp("Complexity", -(q * np.log(q + 1e-12)).sum(1), R["Complexity"]["scores"])
            cmp("EffectiveComplexity", (aa > 1e-5).sum(1), R["EffectiveComplexity"]["scores"])
            # localisation
            cmp("RelevanceMassAccuracy", (an * mask).sum(1) / an.sum(1), R["RelevanceMassAccuracy"]["scores"])
            K = mask.sum(1)
            cmp("RelevanceRankAccuracy", [mask[i, od[i, :K[i]]].mean() for i in range(B)], R["RelevanceRankAccuracy"]["scores"])
            cmp("TopKIntersection", [mask[i, od[i, :100]].mean() for i in range(B)], R["TopKIntersection"]["scores"])
            cmp("PointingGame", [float(np.any(mask[i] & (an[i] == an[i].max()))) for i in range(B)], R["PointingGame"]["scores"])
            auc = []
            for i in range(B):  # Mann-Whitney form of the ROC AUC (ties count 1/2)
                r = rankdata(an[i])
                npos, nneg = mask[i].sum(), (~mask[i]).sum()
                auc.append((r[mask[i]].sum() - npos * (npos + 1) / 2) / (npos * nneg))
            cmp("AUC", auc, R["AUC"]["scores"])
            al = (aa * mask).sum(1) / (aa.sum(1) + 1e-9)
            cmp("AttributionLocalisation", np.where(al > 1, np.nan, al), R["AttributionLocalisation"]["scores"])
            cmp("Monotonicity", [True] * B, R["Monotonicity"]["scores"])

    print("largest abs differences:", json.dumps({k: float(f"{v:.3g}") for k, v in worst.items()}, indent=0))

    print("mismatches:", len(bad))
    return len(bad)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--archs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=None, help="comma-separated network folders")
    ap.add_argument("--check", action="store_true",
                    help="do not generate: re-compute the metrics of --out from the README formulas (no Quantus)")
    args = ap.parse_args()
    if args.check:
        sys.exit(1 if check(args.archs, args.out) else 0)
    sys.path.insert(0, args.archs)
    import archs  # noqa: E402

    os.makedirs(args.out, exist_ok=True)
    nets = [n for n in NETS if args.only is None or n[0] in args.only.split(",")]
    summary = {}
    for folder, clsname, cin in nets:
        d = os.path.join(args.archs, folder)
        net = getattr(archs, clsname)(cin=cin)
        sd = {k: torch.from_numpy(v) for k, v in load_safetensors(os.path.join(d, "model.safetensors")).items()}
        net.load_state_dict(sd)
        net.eval()
        model = Logits(net).eval()
        x = np.loadtxt(os.path.join(d, "waveforms.csv"), delimiter=",", dtype=np.float32).reshape(8, cin, 640)
        y = np.loadtxt(os.path.join(d, "targets.csv"), dtype=np.int64).reshape(-1)
        B, C, T = x.shape
        outnet = os.path.join(args.out, folder)
        drawdir = os.path.join(outnet, "draws")
        os.makedirs(drawdir, exist_ok=True)
        mask = np.zeros((B, C, T), dtype=np.float64)
        mask[:, 0, MASK_LO:MASK_HI] = 1
        savecsv(os.path.join(outnet, "mask.csv"), mask.reshape(B, -1), fmt="%d")

        # MPRT draws: the re-initialised modules, exactly as Quantus's generator makes them
        rnd = {}
        pm = PyTorchModel(model=model, channel_first=True, softmax=False)
        layer_names = []
        for lname, rmodel in pm.get_random_layer_generator(order="top_down", seed=42):
            layer_names.append(lname)
            mod = dict(rmodel.named_modules())[lname]
            for k, v in mod.state_dict().items():
                rnd[(lname + "." + k)[len("net."):]] = v.detach().cpu().numpy().copy()
        save_safetensors(os.path.join(drawdir, "mprt_randomised.safetensors"), rnd,
                         {"layer_order_top_down": ",".join(n[len("net."):] for n in layer_names)})

        draws_state = {}
        for method in METHODS:
            print(f"== {folder} / {method}", flush=True)
            outdir = os.path.join(outnet, method)
            os.makedirs(outdir, exist_ok=True)
            a = explain(model, x, y, method=method)  # float64 copy of Captum's float32 map
            savecsv(os.path.join(outdir, "attributions.csv"), a.astype(np.float32).reshape(B, -1))
            # check against the archs golden set
            ref = np.loadtxt(os.path.join(d, "input_grad.csv" if method == "saliency" else "occlusion.csv"),
                             delimiter=",")
            ref = np.abs(ref) if method == "saliency" else ref
            rel = float(np.max(np.abs(a.reshape(B, -1) - ref)) / np.max(np.abs(ref)))
            with torch.no_grad():
                logits = model(torch.from_numpy(x)).numpy()
            t0 = time.perf_counter()
            res = evaluate(folder, method, model, x, y, a, mask, outdir, drawdir, draws_state)
            doc = {
                "network": folder, "architecture": f"archs.{clsname}(cin={cin})", "method": method,
                "quantus": {"version": quantus.__version__, "tag": QUANTUS_TAG, "commit": QUANTUS_COMMIT},
                "captum": captum.__version__, "torch": torch.__version__, "numpy": np.__version__,
                "scipy": scipy.__version__,
                "numpy_seed_before_each_metric": SEED,
                "model_given_to_quantus": "Logits(net): forward = net.logits(x); Quantus appends nn.Softmax when a "
                                          "metric's softmax=True, else it sees logits",
                "explanation": EXPLAIN_DOC[method],
                "explanation_vs_archs_csv_max_rel_diff": rel,
                "attributions_file": "attributions.csv",
                "attributions_dtype": "float32 values (Captum), passed to Quantus as float64",
                "x_shape": [B, C, T], "x_dtype": "float32", "targets": y, "logits": logits,
                "mask_file": "../mask.csv",
                "batching": "all 8 waveforms in one Quantus batch (batch_size=64); normalise_by_max divides by the "
                            "max |a| over the WHOLE batch",
                "metrics": res,
            }
            with open(os.path.join(outdir, "results.json"), "w") as f:
                json.dump(jsonable(doc), f, indent=1)
            summary[(folder, method)] = {k: v.get("seconds_per_waveform") for k, v in res.items()}
            print(f"   total {time.perf_counter() - t0:.1f} s, attribution check rel diff {rel:.2e}", flush=True)
    print(json.dumps({f"{k[0]}/{k[1]}": v for k, v in summary.items()}, indent=1))


if __name__ == "__main__":
    main()
