#!/usr/bin/env python3
"""torch_ref.py -- PyTorch + Captum reference ("peer") harness.

Used to compare another implementation (Go) side by side against
PyTorch + Captum on the same model, the same inputs and the same explainers,
both for speed (`bench`) and for numerical agreement (`export`, `explain`).

Setup (see README.md next to this file):
    apt-get install -y python3-torch python3-numpy python3-scipy \
        python3-matplotlib python3-sklearn          # Debian 12: torch 1.13.1
    captum 0.8.0 (tag v0.8.0) work tree on PYTHONPATH, e.g. $CAPTUM_DIR
    PYTHONPATH=$CAPTUM_DIR /usr/bin/python3 torch_ref.py bench ...

MODEL (exact shapes; B = batch, one input = 1 channel x 640 samples)
  --padding valid (DEFAULT; the paper's Table 4: no padding anywhere)
    input                                        (B, 1, 640)
    conv1    Conv1d(1, 8, k=3, stride=1, padding=0) + ReLU   -> (B, 8, 638)
    conv2    Conv1d(8, 8, k=3, stride=1, padding=0) + ReLU   -> (B, 8, 636)
    maxpool1 MaxPool1d(k=3, stride=1, padding=0)             -> (B, 8, 634)
    bn1      BatchNorm1d(8)   (eps=1e-5)                     -> (B, 8, 634)
    conv3    Conv1d(8, 16, k=3, stride=1, padding=0) + ReLU  -> (B, 16, 632)
    conv4    Conv1d(16, 16, k=3, stride=1, padding=0) + ReLU -> (B, 16, 630)
    maxpool2 global max over time: MaxPool1d(k=630), implemented as
             AdaptiveMaxPool1d(1) (same values, same first-argmax gradient)
                                                             -> (B, 16, 1)
    bn2      BatchNorm1d(16)  (eps=1e-5)                     -> (B, 16, 1)
    flatten                                                  -> (B, 16)
    fc1      Linear(16, 64) + ReLU                           -> (B, 64)
    bn3      BatchNorm1d(64)  (eps=1e-5)                     -> (B, 64)
    dropout  Dropout(p)  optional, p=--dropout (default 0 = off; use 0.2
             for MC-dropout).  It acts on fc2's INPUT (after bn3):
             train mode: h * m / (1 - p), m_j ~ Bernoulli(1 - p) drawn per
             row and unit; eval mode: identity.  No parameters.  One draw
             with a fixed mask m is the deterministic network whose fc2
             weight columns are scaled by m_j / (1 - p).
    fc2      Linear(64, 16)                                  -> (B, 16) logits
    softmax over the 16 classes                              -> (B, 16) probs
  conv "valid": out[o, t] = b[o] + sum_i sum_{k=0..2} w[o, i, k] x[i, t + k],
  t = 0 .. L_in - 3 (PyTorch Conv1d is cross-correlation, no kernel flip).
  maxpool1: out[c, t] = max(x[c, t], x[c, t+1], x[c, t+2]).
  --padding same (the harness's earlier variant, kept for comparison):
    every conv gets padding=1 (one zero on each side), so conv1..conv2 keep
    640, maxpool1 gives 638, conv3..conv4 keep 638 and maxpool2 is the
    global max over 638.  Everything else is identical; the parameter shapes and
    the random init do not depend on --padding (the BN running statistics do,
    since they are calibrated through the network).
  Every subcommand takes --padding; export/golden record it in the
  safetensors __metadata__ and in manifest.json, and explain refuses a
  weights file whose metadata names the other padding.
  The ReLUs are functional (not modules), so the state_dict has exactly
  these names:
    conv{1..4}.weight (out, in, 3), conv{1..4}.bias (out,)
    bn{1,2,3}.weight, .bias, .running_mean, .running_var  (C,)
    fc1.weight (64, 16), fc1.bias (64,), fc2.weight (16, 64), fc2.bias (16,)
  (bn*.num_batches_tracked, an int64 scalar, is NOT exported: it does not
  affect eval-mode inference.)
  Random init (no training): torch.manual_seed(seed), PyTorch's default
  init for conv/linear (kaiming-uniform); BN affine parameters from a
  seeded generator (weight ~ U(0.75, 1.25), bias ~ 0.1 N(0,1)).  BN running
  statistics, --bn-init:
    calibrated (default): the batch mean / unbiased variance of 512 synthetic
      labelled waveforms (one train-mode forward, momentum=None).  Without
      this the random net is almost blind to its input (probabilities vary
      by ~2e-4 between waveforms, Grad-CAM of class 0 is negative
      everywhere, so ReLU(cam) is all zero); with it occlusion drops are
      ~1e-2 and the maps are non-trivial.
    random: running_mean ~ 0.1 N(0,1), running_var ~ U(0.5, 1.5).
    default: PyTorch's (weight 1, bias 0, mean 0, var 1).
  Whatever the choice, export writes the exact numbers to model.safetensors.
  The model is used in eval mode for all explanations (BN uses running
  statistics, dropout is off), so explanations are per-example independent.
  BatchNorm: eval y = (x - running_mean) / sqrt(running_var + eps) * weight
  + bias per channel; train mode uses the batch mean and the biased batch
  variance over (B, L) (bn1) or B (bn2, bn3) and then updates
  running = 0.9 running + 0.1 batch_stat (momentum 0.1; running_var takes
  the unbiased batch variance, n / (n - 1) times the biased one).

EXPLAINERS (all explain the softmax probability of --target, default 0)
  (a) occlusion_captum: captum.attr.Occlusion(model) with
      sliding_window_shapes=(1, 60), strides=1, baselines=0 on input (1,1,640)
      -> 581 windows (start s = 0..580 covers samples s..s+59).
      attr[t] = mean over windows covering t of (p(x) - p(x with window = 0)).
      Timed with perturbations_per_eval 1, 64, 581.
  (b) occlusion_torch: the same computed by hand: x and its 581 occluded
      copies in ONE forward of batch 582, then the drops are summed over the
      windows covering each sample and divided by the number of such windows
      (conv1d of the drops with a ones(60) kernel).  Same semantics as (a);
      the harness reports the max |difference| to Captum.  --occ-chunks also
      times the same code with the 581 copies in forwards of 64 (batch=64 in
      the JSON), because one batch of 582 (~24 MB per activation) is slower
      and noisier on this CPU.
  (c) gradcam: captum.attr.LayerGradCam(model, model.conv4).  The hooked
      layer is the nn.Conv1d module conv4, i.e. its output BEFORE the ReLU,
      shape (1, 16, L) with L = 630 (valid) or 638 (same).  Captum:
      alpha_c = mean_t dp/dA_c(t) (mean over the L positions);
      cam(t) = sum_c alpha_c A_c(t)  -> (1, 1, L) ("gradcam_raw").
      Because maxpool2 is a global max, dp/dA_c(t) is non-zero only at the
      first argmax t* of ReLU(A_c), and only if A_c(t*) > 0.
      The reported map is ReLU(cam) (relu_attributions=True) upsampled to 640
      with captum.attr.LayerAttribution.interpolate(cam, (640,), "linear"),
      i.e. torch.nn.functional.interpolate(mode="linear",
      align_corners=False):  src = max(0, (t + 0.5) * L/640 - 0.5),
      i0 = floor(src), i1 = min(i0 + 1, L - 1), w = src - i0,
      out[t] = (1 - w) cam[i0] + w cam[i1].
  (d) lime: captum.attr.Lime(model, interpretable_model=M) with
      n_samples=128, feature_mask = 40 contiguous features of width 16
      (feature j = samples 16j .. 16j+15), baselines=0, default perturb
      function (Bernoulli(0.5) per feature, torch RNG) and the default
      similarity kernel (exp(-d^2 / 2) with d = 1 - cosine(x, x_perturbed),
      kernel width 1).  M: linreg = SkLearnLinearRegression (weighted least
      squares with intercept; the exported reference, lime.csv), or
      lasso = SkLearnLasso(alpha=0.01), Captum's default, which on these
      small probability differences returns all-zero coefficients
      (lime_lasso.csv).  bench times both (--lime-models).
      Timed with perturbations_per_eval 1 (Captum's default) and 128.
  (e) train: one epoch, 12960 synthetic labelled waveforms (class k -> a
      sinusoid of about 3 + 4k cycles per 640 samples, random phase and
      amplitude, noise), shuffled, batch 64 (202 full batches + one of 32),
      Adam(lr=1e-2, weight_decay=1e-4), cross-entropy on the logits, model
      in train mode (BN batch statistics, dropout if --dropout > 0).
  (f) mc_dropout (only with --dropout > 0): model in eval mode but the
      dropout module (on fc2's input) in train mode; --mc-samples
      stochastic passes batched in one forward (each row draws its own
      mask); mean and std of the probabilities.

SUBCOMMANDS
  bench    time the explainers on N sinusoid-plus-noise waveforms; one JSON
           line per measurement:
           {"op","n","seconds","per_item_ms","median_item_ms",
            "median_item_cpu_ms" (the process's CPU time, every thread),
            "threads", ...extras}
           after a first line {"op": "environment", "torch", "threads",
           "blas" (the library mapped, from /proc/self/maps: blasinfo.py),
           "blas_path", "blas_build" (torch's BLAS_INFO, only the build's
           setting), "mkldnn" (oneDNN available), "glibc_tunables"}.
  export   write model.safetensors (plain numpy + json writer), the test
           waveforms (.npy and .csv), and reference outputs (probs, logits,
           occlusion, gradcam, gradcam_raw, lime, lime_lasso, lime_samples)
           as CSV, plus manifest.json.
  explain  load weights (safetensors) and waveforms (CSV, one waveform per
           line, 640 comma-separated values) and write occlusion.csv and
           gradcam.csv (and gradcam_raw.csv).
  occlusion  --weights W --waveforms X.csv --targets T --out F.csv: the
           occlusion maps of (b) for every waveform of a CSV (torch only,
           --batch occluded copies a forward), one CSV line a map: the
           PyTorch side of timing `uaxai explain --explainer occlusion`.
  golden   --seed S --out DIR: the golden set for a port (paper-1dcnn):
           16 PQD-like waveforms with labels, forward outputs, input
           gradients, train/eval parameter gradients, one (and two) Adam
           steps with the BN running-stat update, occlusion, raw Grad-CAM,
           LIME samples with WLS / Lasso surrogates, and an MC-dropout fold
           check.  Every file is described in DIR/README.md (written by the
           command), settings and versions in DIR/manifest.json.  Ends with
           an independent float64 numpy re-derivation (verify_golden.py)
           whose max |diff| go into manifest.json and README.md.
  golden3  --seed S --out DIR: the three-channel golden set
           (paper-1dcnn-3ch): the same network with in_channels 3, 8
           three-phase waveforms (channel-major, one event each), targets,
           probabilities, Saliency (abs=False), raw LayerGradCam on conv4,
           and Captum Occlusion per channel (window (1, w)) and across the
           channels (window (3, w)), w = 60 and 5, stride 1, baseline 0.
           DIR/README.md (written by the command) gives the formulas.
  All subcommands take --padding valid|same (default valid, see MODEL).

Threads: --threads T sets OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and
MKL_NUM_THREADS (before torch is imported) and torch.set_num_threads(T).
Debian's torch otherwise starts with 1 intra-op thread while OpenBLAS would
start one thread per core.
"""

import argparse
import copy
import json
import os
import re
import struct
import sys
import time

# ---------------------------------------------------------------------------
# Threads must be fixed before torch / numpy (OpenBLAS, OpenMP) are imported.


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
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blasinfo  # noqa: E402  (which BLAS is loaded, from /proc/self/maps)

LENGTH = 640
N_CLASSES = 16
WINDOW = 60
N_FEATURES = 40
FEATURE_WIDTH = 16
LIME_SAMPLES = 128
TRAIN_SAMPLES = 12960
TRAIN_BATCH = 64
CALIB_N = 512

STATE_NAMES = [
    "conv1.weight", "conv1.bias",
    "conv2.weight", "conv2.bias",
    "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
    "conv3.weight", "conv3.bias",
    "conv4.weight", "conv4.bias",
    "bn2.weight", "bn2.bias", "bn2.running_mean", "bn2.running_var",
    "fc1.weight", "fc1.bias",
    "bn3.weight", "bn3.bias", "bn3.running_mean", "bn3.running_var",
    "fc2.weight", "fc2.bias",
]


# ---------------------------------------------------------------------------
# Model


PADDINGS = ("valid", "same")


def layer_lengths(padding, length=LENGTH):
    """Time length after conv1, conv2, maxpool1, conv3, conv4 (see header)."""
    if padding not in PADDINGS:
        raise ValueError(f"padding must be one of {PADDINGS}, not {padding!r}")
    shrink = 2 if padding == "valid" else 0
    l1 = length - shrink
    l2 = l1 - shrink
    l3 = l2 - 2  # maxpool1, k=3, stride 1, never padded
    l4 = l3 - shrink
    l5 = l4 - shrink
    return {"conv1": l1, "conv2": l2, "maxpool1": l3, "conv3": l4, "conv4": l5}


class WaveNet(nn.Module):
    def __init__(self, n_classes=N_CLASSES, dropout=0.0, padding="valid", in_channels=1):
        super().__init__()
        lens = layer_lengths(padding)
        pad = 0 if padding == "valid" else 1
        self.padding = padding
        self.conv1 = nn.Conv1d(in_channels, 8, kernel_size=3, stride=1, padding=pad)
        self.conv2 = nn.Conv1d(8, 8, kernel_size=3, stride=1, padding=pad)
        self.maxpool1 = nn.MaxPool1d(kernel_size=3, stride=1)
        self.bn1 = nn.BatchNorm1d(8)
        self.conv3 = nn.Conv1d(8, 16, kernel_size=3, stride=1, padding=pad)
        self.conv4 = nn.Conv1d(16, 16, kernel_size=3, stride=1, padding=pad)
        # the paper's max_pooling_2 (kernel 1 x 630) is a global max over time.
        # AdaptiveMaxPool1d(1) gives the same values and routes the gradient
        # to the same (first) argmax as MaxPool1d(kernel_size=630), but torch
        # 1.13's MaxPool1d inference path is ~4x slower on (582, 16, 630).
        self.maxpool2 = nn.AdaptiveMaxPool1d(1)
        self.conv4_length = lens["conv4"]
        self.bn2 = nn.BatchNorm1d(16)
        self.fc1 = nn.Linear(16, 64)
        self.bn3 = nn.BatchNorm1d(64)
        self.dropout = nn.Dropout(p=dropout)  # on fc2's input (after bn3)
        self.fc2 = nn.Linear(64, n_classes)

    def fc2_input(self, x):
        """Everything up to bn3's output (= fc2's input before dropout)."""
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = self.maxpool1(x)
        x = self.bn1(x)
        x = F.relu(self.conv3(x))
        x = F.relu(self.conv4(x))
        x = self.maxpool2(x)
        x = self.bn2(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.bn3(x)

    def logits(self, x):
        return self.fc2(self.dropout(self.fc2_input(x)))

    def forward(self, x):
        return F.softmax(self.logits(x), dim=1)


def build_model(seed, dropout=0.0, bn_init="calibrated", padding="valid", in_channels=1):
    torch.manual_seed(seed)
    model = WaveNet(dropout=dropout, padding=padding, in_channels=in_channels)
    bns = (model.bn1, model.bn2, model.bn3)
    if bn_init in ("random", "calibrated"):
        g = torch.Generator().manual_seed(seed + 7)
        with torch.no_grad():
            for bn in bns:
                c = bn.num_features
                bn.weight.copy_(0.75 + 0.5 * torch.rand(c, generator=g))
                bn.bias.copy_(0.1 * torch.randn(c, generator=g))
                bn.running_mean.copy_(0.1 * torch.randn(c, generator=g))
                bn.running_var.copy_(0.5 + torch.rand(c, generator=g))
    elif bn_init != "default":
        raise ValueError("bn_init must be 'calibrated', 'random' or 'default'")
    if bn_init == "calibrated":
        # running stats := batch statistics of CALIB_N labelled synthetic
        # waveforms (one train-mode forward, momentum=None = plain average;
        # running_var is the unbiased variance, as PyTorch stores it).  Done
        # in float64 on a copy, then rounded to float32, so the exported bits
        # do not depend on --threads (OpenBLAS splits fc1's sgemm by thread).
        if in_channels == 1:
            xc, _ = make_training_set(CALIB_N, seed + 5)
        elif in_channels == 3:
            xc, _, _ = make_three_phase(CALIB_N, seed + 5)
        else:
            raise ValueError("calibrated BN statistics need in_channels 1 or 3")
        xc = torch.from_numpy(xc).view(-1, in_channels, LENGTH).double()
        calib = copy.deepcopy(model).double()
        for bn in (calib.bn1, calib.bn2, calib.bn3):
            bn.reset_running_stats()
            bn.momentum = None
        calib.train()
        calib.dropout.eval()
        with torch.no_grad():
            calib.logits(xc)
            for name in ("bn1", "bn2", "bn3"):
                src, dst = getattr(calib, name), getattr(model, name)
                dst.running_mean.copy_(src.running_mean.float())
                dst.running_var.copy_(src.running_var.float())
    model.eval()
    return model


def model_tensors(model):
    sd = model.state_dict()
    return {name: sd[name].detach().cpu().numpy().astype(np.float32) for name in STATE_NAMES}


def load_model_tensors(tensors, dropout=0.0, padding="valid", in_channels=1):
    missing = [n for n in STATE_NAMES if n not in tensors]
    if missing:
        raise SystemExit("weights file lacks: " + ", ".join(missing))
    model = WaveNet(dropout=dropout, padding=padding, in_channels=in_channels)
    sd = model.state_dict()
    new_sd = {}
    for name, ref in sd.items():
        if name.endswith("num_batches_tracked"):
            new_sd[name] = ref
            continue
        arr = tensors[name]
        if tuple(arr.shape) != tuple(ref.shape):
            raise SystemExit(f"{name}: shape {arr.shape}, expected {tuple(ref.shape)}")
        new_sd[name] = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32))
    model.load_state_dict(new_sd)
    model.eval()
    return model


# ---------------------------------------------------------------------------
# safetensors, plain numpy + json
# layout: u64 little-endian header length N | N bytes of JSON header (padded
# with spaces to a multiple of 8) | raw little-endian tensor bytes.  Header:
# {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]},
#  ..., "__metadata__": {str: str}}; offsets are relative to the byte buffer
# that follows the header and cover it without holes.


def write_safetensors(path, tensors, metadata=None):
    header = {}
    blobs = []
    offset = 0
    for name, arr in tensors.items():
        a = np.ascontiguousarray(arr, dtype="<f4")
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise SystemExit(f"{path}: too short for safetensors")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise SystemExit(f"{path}: header length {n} past end of file")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = memoryview(raw)[8 + n:]
    meta = header.pop("__metadata__", {})
    dtypes = {"F32": "<f4", "F64": "<f8", "F16": "<f2"}
    out = {}
    for name, info in header.items():
        dt = info["dtype"]
        if dt not in dtypes:
            if name in STATE_NAMES:
                raise SystemExit(f"{name}: unsupported dtype {dt}")
            continue  # e.g. an I64 bn*.num_batches_tracked written by another tool
        b, e = info["data_offsets"]
        shape = tuple(info["shape"])
        arr = np.frombuffer(data[b:e], dtype=dtypes[dt])
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise SystemExit(f"{name}: {arr.size} values for shape {shape}")
        out[name] = arr.reshape(shape).astype(np.float32)
    return out, meta


# ---------------------------------------------------------------------------
# Data


def make_waveforms(n, seed, length=LENGTH):
    """Sinusoids with noise: 1-3 components, 2-60 cycles per 640 samples,
    amplitude 0.3-1.0, random phase, plus N(0, 0.1) noise.  float32 (n, 640)."""
    rng = np.random.default_rng(seed)
    t = np.arange(length, dtype=np.float64) / length
    out = np.empty((n, length), dtype=np.float32)
    for i in range(n):
        w = np.zeros(length)
        for _ in range(int(rng.integers(1, 4))):
            f = rng.uniform(2.0, 60.0)
            a = rng.uniform(0.3, 1.0)
            ph = rng.uniform(0.0, 2 * np.pi)
            w += a * np.sin(2 * np.pi * f * t + ph)
        w += rng.normal(0.0, 0.1, length)
        out[i] = w
    return out


def make_training_set(n, seed, length=LENGTH):
    """Labelled synthetic set: class k -> sinusoid of (3 + 4k +- 1) cycles."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, N_CLASSES, size=n)
    t = np.arange(length, dtype=np.float64) / length
    f = 3.0 + 4.0 * y + rng.uniform(-1.0, 1.0, size=n)
    a = rng.uniform(0.5, 1.5, size=n)
    ph = rng.uniform(0.0, 2 * np.pi, size=n)
    x = a[:, None] * np.sin(2 * np.pi * f[:, None] * t[None, :] + ph[:, None])
    x += rng.normal(0.0, 0.2, size=x.shape)
    return x.astype(np.float32), y.astype(np.int64)


def read_waveforms_csv(path):
    arr = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    if arr.shape[1] != LENGTH:
        raise SystemExit(f"{path}: {arr.shape[1]} values per line, expected {LENGTH}")
    return arr.astype(np.float32)


def write_csv(path, rows, fmt="%.9g"):
    rows = np.asarray(rows)
    if rows.ndim == 1:
        rows = rows[None, :]
    np.savetxt(path, rows, delimiter=",", fmt=fmt)


# ---------------------------------------------------------------------------
# Explainers


def _captum(optional=False):
    try:
        import captum
        from captum.attr import LayerAttribution, LayerGradCam, Lime, Occlusion
        from captum._utils.models.linear_model import SkLearnLasso, SkLearnLinearRegression
        from captum.attr._core.lime import default_perturb_func
    except ImportError as e:  # pragma: no cover
        if optional:
            print(f"# captum not importable ({e}): captum ops skipped", file=sys.stderr)
            return None
        raise SystemExit(
            f"cannot import captum ({e}); set PYTHONPATH to a captum work tree, "
            "e.g. PYTHONPATH=$CAPTUM_DIR (see README.md)")
    return dict(version=captum.__version__, Occlusion=Occlusion,
                LayerGradCam=LayerGradCam, LayerAttribution=LayerAttribution,
                Lime=Lime, SkLearnLasso=SkLearnLasso,
                SkLearnLinearRegression=SkLearnLinearRegression,
                default_perturb_func=default_perturb_func)


def occlusion_captum(C, model, x, target=0, ppe=581, window=WINDOW):
    occ = C["Occlusion"](model)
    return occ.attribute(x, sliding_window_shapes=(1, window), strides=1,
                         baselines=0, target=target,
                         perturbations_per_eval=ppe)


class TorchOcclusion:
    """Hand-batched occlusion with Captum's semantics (see header, (b))."""

    def __init__(self, model, length=LENGTH, window=WINDOW):
        self.model = model
        self.window = window
        self.n_win = length - window + 1
        keep = torch.ones(self.n_win, 1, length)
        for s in range(self.n_win):
            keep[s, 0, s:s + window] = 0.0
        self.keep = keep
        ones = torch.ones(1, 1, window)
        self.ones = ones
        cnt = F.conv1d(F.pad(torch.ones(1, 1, self.n_win), (window - 1, window - 1)), ones)
        self.count = cnt.view(1, 1, length)

    def __call__(self, x, target=0, chunk=0):
        """chunk=0: x and all 581 occluded copies in ONE forward (batch 582);
        chunk=k: the occluded copies in forwards of k (for comparison)."""
        with torch.inference_mode():
            if chunk <= 0:
                batch = torch.cat([x, x * self.keep], dim=0)  # baseline 0
                p = self.model(batch)[:, target]
                p0, pw = p[0], p[1:]
            else:
                p0 = self.model(x)[0, target]
                pw = torch.cat([self.model(x * self.keep[i:i + chunk])[:, target]
                                for i in range(0, self.n_win, chunk)])
            drops = (p0 - pw).view(1, 1, self.n_win)
            s = F.conv1d(F.pad(drops, (self.window - 1, self.window - 1)), self.ones)
            return s / self.count


def gradcam_raw(C, model, x, target=0):
    gc = C["LayerGradCam"](model, model.conv4)
    return gc.attribute(x, target=target, relu_attributions=False)


def gradcam_map(C, model, x, target=0, raw=None):
    if raw is None:
        raw = gradcam_raw(C, model, x, target)
    cam = F.relu(raw)
    return C["LayerAttribution"].interpolate(cam, (LENGTH,), interpolate_mode="linear")


def feature_mask():
    return torch.arange(N_FEATURES).repeat_interleave(FEATURE_WIDTH).view(1, 1, LENGTH)


def make_lime(C, model, kind="linreg", record=None):
    if kind == "linreg":
        im = C["SkLearnLinearRegression"]()
    elif kind == "lasso":
        im = C["SkLearnLasso"](alpha=0.01)
    else:
        raise ValueError(kind)
    kw = {}
    if record is not None:
        dpf = C["default_perturb_func"]

        def perturb(original_inp, **kwargs):
            s = dpf(original_inp, **kwargs)
            record.append(s.detach().clone())
            return s
        kw["perturb_func"] = perturb
    return C["Lime"](model, interpretable_model=im, **kw)


def lime_attr(lime, x, fmask, target=0, ppe=1, n_samples=LIME_SAMPLES):
    return lime.attribute(x, baselines=0, target=target, feature_mask=fmask,
                          n_samples=n_samples, perturbations_per_eval=ppe)


def train_epoch(model, xs, ys, seed, batch=TRAIN_BATCH):
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(xs.shape[0], generator=g)
    total, steps = 0.0, 0
    for i in range(0, xs.shape[0], batch):
        idx = perm[i:i + batch]
        xb, yb = xs[idx], ys[idx]
        opt.zero_grad()
        loss = loss_fn(model.logits(xb), yb)
        loss.backward()
        opt.step()
        total += float(loss.detach())
        steps += 1
    model.eval()
    return total / steps, steps


def mc_dropout(model, x, samples):
    model.eval()
    model.dropout.train()
    try:
        with torch.inference_mode():
            p = model(x.expand(samples, -1, -1))
        return p.mean(0), p.std(0)
    finally:
        model.dropout.eval()


# ---------------------------------------------------------------------------
# bench


def _emit(rec):
    print(json.dumps(rec), flush=True)


def _time_items(fn, xs, budget_s, warmup=1):
    """Run fn on each waveform (after `warmup` untimed calls); stop early
    once budget_s is used up.  Returns (n, total seconds, median ms of
    wall time, median ms of this process's CPU time: every thread's, so
    above the wall time when torch's threads run in parallel, and hardly
    moved by other processes' load)."""
    for i in range(min(warmup, len(xs))):
        fn(xs[i])
    times, cpu = [], []
    t0 = time.perf_counter()
    for x in xs:
        t1, c1 = time.perf_counter(), time.process_time()
        fn(x)
        times.append(time.perf_counter() - t1)
        cpu.append(time.process_time() - c1)
        if time.perf_counter() - t0 > budget_s:
            break
    total = time.perf_counter() - t0
    return len(times), total, 1000.0 * float(np.median(times)), 1000.0 * float(np.median(cpu))


def environment():
    """What this process runs on: torch's version and threads, the BLAS
    library actually loaded (from /proc/self/maps: the build string
    BLAS_INFO says only what the build was configured with), whether oneDNN
    (mkldnn, which runs torch's batched CPU convolutions) is available, and
    GLIBC_TUNABLES (the malloc tuning `uaxai bench` sets)."""
    try:
        with open("/proc/self/maps") as f:
            kind, path = blasinfo.loaded_blas(f.read())
    except OSError:
        kind, path = "unknown (no /proc/self/maps)", ""
    m = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    return {"torch": torch.__version__, "threads": torch.get_num_threads(),
            "blas": kind, "blas_path": path,
            "blas_build": m.group(1) if m else "unknown",
            "mkldnn": bool(torch.backends.mkldnn.is_available()),
            "glibc_tunables": os.environ.get("GLIBC_TUNABLES", "")}


def cmd_bench(args):
    threads = torch.get_num_threads()
    env = environment()
    _emit({"op": "environment", **env})
    C = _captum(optional=True)
    base = {"threads": threads, "padding": args.padding,
            "torch": torch.__version__, "captum": C["version"] if C else None}
    model = build_model(args.seed, dropout=args.dropout, bn_init=args.bn_init,
                        padding=args.padding)
    wav = make_waveforms(args.n, args.seed + 1)
    xs = [torch.from_numpy(w).view(1, 1, LENGTH) for w in wav]
    ops = args.ops.split(",")
    tgt = args.target

    def emit(op, n, secs, median_ms=None, median_cpu_ms=None, **extra):
        rec = {"op": op, "n": n, "seconds": round(secs, 6),
               "per_item_ms": round(1000.0 * secs / max(n, 1), 4), "threads": threads}
        if median_ms is not None:
            rec["median_item_ms"] = round(median_ms, 4)
        if median_cpu_ms is not None:
            rec["median_item_cpu_ms"] = round(median_cpu_ms, 4)
        rec.update(extra)
        rec.update(base)
        _emit(rec)

    if C is None:
        ops = [o for o in ops if o not in ("occlusion_captum", "gradcam", "lime")]
    ref_occ = None
    if "occlusion_captum" in ops or "occlusion_torch" in ops:
        ref_occ = (occlusion_captum(C, model, xs[0], tgt, 581) if C is not None
                   else TorchOcclusion(model)(xs[0], tgt, 0))

    if "occlusion_captum" in ops:
        for ppe in [int(v) for v in args.ppe.split(",")]:
            n, s, med, cpu = _time_items(lambda x: occlusion_captum(C, model, x, tgt, ppe), xs, args.budget)
            emit("occlusion_captum", n, s, med, cpu, ppe=ppe)

    if "occlusion_torch" in ops:
        occ = TorchOcclusion(model)
        for chunk in [int(v) for v in args.occ_chunks.split(",")]:
            diff = float((occ(xs[0], tgt, chunk) - ref_occ).abs().max())
            n, s, med, cpu = _time_items(lambda x: occ(x, tgt, chunk), xs, args.budget)
            emit("occlusion_torch", n, s, med, cpu, batch=chunk if chunk > 0 else 582,
                 max_abs_diff_vs_captum=diff)

    if "gradcam" in ops:
        n, s, med, cpu = _time_items(lambda x: gradcam_map(C, model, x, tgt), xs, args.budget)
        emit("gradcam", n, s, med, cpu, layer="conv4", upsample="linear")

    if "lime" in ops:
        fm = feature_mask()
        for kind in args.lime_models.split(","):
            lime = make_lime(C, model, kind)
            for ppe in [int(v) for v in args.lime_ppe.split(",")]:
                torch.manual_seed(args.seed + 1000)
                n, s, med, cpu = _time_items(lambda x: lime_attr(lime, x, fm, tgt, ppe), xs, args.budget)
                emit("lime", n, s, med, cpu, ppe=ppe, n_samples=LIME_SAMPLES,
                     interpretable_model=kind)

    if "train" in ops:
        xtr, ytr = make_training_set(TRAIN_SAMPLES, args.seed + 2)
        xtr = torch.from_numpy(xtr).view(-1, 1, LENGTH)
        ytr = torch.from_numpy(ytr)
        tmodel = build_model(args.seed, dropout=args.dropout, bn_init=args.bn_init,
                             padding=args.padding)
        for ep in range(args.epochs):
            t0, c0 = time.perf_counter(), time.process_time()
            loss, steps = train_epoch(tmodel, xtr, ytr, args.seed + 3 + ep)
            s = time.perf_counter() - t0
            emit("train_epoch", TRAIN_SAMPLES, s, epoch=ep, steps=steps,
                 cpu_seconds=round(time.process_time() - c0, 6),
                 batch=TRAIN_BATCH, mean_loss=round(loss, 5), dropout=args.dropout)

    if "mc_dropout" in ops:
        if args.dropout <= 0:
            print("# mc_dropout skipped: needs --dropout > 0", file=sys.stderr)
        else:
            n, s, med, cpu = _time_items(lambda x: mc_dropout(model, x, args.mc_samples), xs, args.budget)
            emit("mc_dropout", n, s, med, cpu, samples=args.mc_samples, dropout=args.dropout)


# ---------------------------------------------------------------------------
# export / explain


def compute_maps(C, model, wav, target, occ_impl="captum", ppe=581):
    occ_rows, gc_rows, raw_rows = [], [], []
    torch_occ = TorchOcclusion(model) if occ_impl == "torch" else None
    for w in wav:
        x = torch.from_numpy(np.ascontiguousarray(w)).view(1, 1, LENGTH)
        if torch_occ is not None:
            o = torch_occ(x, target)
        else:
            o = occlusion_captum(C, model, x, target, ppe)
        occ_rows.append(o.detach().reshape(-1).numpy())
        raw = gradcam_raw(C, model, x, target)
        raw_rows.append(raw.detach().reshape(-1).numpy())
        gc_rows.append(gradcam_map(C, model, x, target, raw=raw).detach().reshape(-1).numpy())
    return np.stack(occ_rows), np.stack(gc_rows), np.stack(raw_rows)


def cmd_export(args):
    C = _captum()
    out = args.out_dir
    os.makedirs(out, exist_ok=True)
    model = build_model(args.seed, dropout=args.dropout, bn_init=args.bn_init,
                        padding=args.padding)
    tensors = model_tensors(model)
    meta = {"arch": "WaveNet 1x640 -> 16 (see torch_ref.py header)",
            "padding": args.padding,
            "seed": args.seed, "bn_init": args.bn_init, "torch": torch.__version__}
    st_path = os.path.join(out, "model.safetensors")
    write_safetensors(st_path, tensors, meta)

    wav = make_waveforms(args.n, args.seed + 1)
    np.save(os.path.join(out, "waveforms.npy"), wav)
    write_csv(os.path.join(out, "waveforms.csv"), wav)
    # CSV round trip is exact at %.9g for float32
    assert np.array_equal(read_waveforms_csv(os.path.join(out, "waveforms.csv")), wav)

    # the harness re-reads its own file so the reference numbers come from it
    loaded, _ = read_safetensors(st_path)
    model2 = load_model_tensors(loaded, padding=args.padding)
    x_all = torch.from_numpy(wav).view(-1, 1, LENGTH)
    with torch.inference_mode():
        logits = model2.logits(x_all)
        probs = F.softmax(logits, dim=1)
        assert torch.equal(probs, model(x_all)), "safetensors round trip changed the model"
    write_csv(os.path.join(out, "logits.csv"), logits.numpy())
    write_csv(os.path.join(out, "probs.csv"), probs.numpy())

    tgt = args.target
    occ, gc, raw = compute_maps(C, model2, wav, tgt, "captum", 581)
    occ_t, _, _ = compute_maps(C, model2, wav, tgt, "torch")
    write_csv(os.path.join(out, "occlusion.csv"), occ)
    write_csv(os.path.join(out, "gradcam.csv"), gc)
    write_csv(os.path.join(out, "gradcam_raw.csv"), raw)

    # LIME, fixed seed per waveform; the sampled masks are exported so that a
    # port can reuse them (torch's Bernoulli stream cannot be reproduced).
    fm = feature_mask()
    lime_rows, lasso_rows, sample_rows = [], [], []
    for i, w in enumerate(wav):
        x = torch.from_numpy(np.ascontiguousarray(w)).view(1, 1, LENGTH)
        rec = []
        torch.manual_seed(args.seed + 1000 + i)
        a = lime_attr(make_lime(C, model2, "linreg", record=rec), x, fm, tgt, ppe=LIME_SAMPLES)
        lime_rows.append(a.detach().reshape(-1).numpy())
        torch.manual_seed(args.seed + 1000 + i)
        a2 = lime_attr(make_lime(C, model2, "lasso"), x, fm, tgt, ppe=LIME_SAMPLES)
        lasso_rows.append(a2.detach().reshape(-1).numpy())
        masks = torch.cat(rec).float()  # (128, 40)
        xp = masks[:, fm.view(-1)].view(-1, 1, LENGTH) * x  # baseline 0
        with torch.inference_mode():
            out_p = model2(xp)[:, tgt]
        cos = F.cosine_similarity(x.view(1, -1), xp.view(LIME_SAMPLES, -1), dim=1)
        sim = torch.exp(-((1 - cos) ** 2) / 2.0)
        for k in range(LIME_SAMPLES):
            sample_rows.append([i, k, float(sim[k]), float(out_p[k])]
                               + [int(v) for v in masks[k].tolist()])
    write_csv(os.path.join(out, "lime.csv"), np.stack(lime_rows))
    write_csv(os.path.join(out, "lime_lasso.csv"), np.stack(lasso_rows))
    with open(os.path.join(out, "lime_samples.csv"), "w") as f:
        f.write("wave,sample,weight,output," + ",".join(f"m{j}" for j in range(N_FEATURES)) + "\n")
        for r in sample_rows:
            f.write(f"{r[0]},{r[1]},{r[2]:.9g},{r[3]:.9g}," + ",".join(str(v) for v in r[4:]) + "\n")

    manifest = {
        "torch": torch.__version__, "captum": C["version"], "numpy": np.__version__,
        "seed": args.seed, "n": args.n, "target": tgt, "bn_init": args.bn_init,
        "padding": args.padding, "conv4_length": layer_lengths(args.padding)["conv4"],
        "model": "see torch_ref.py header; state_dict names as in model.safetensors",
        "files": {
            "model.safetensors": "F32 tensors, PyTorch state_dict names (no num_batches_tracked)",
            "waveforms.npy": f"float32 ({args.n}, {LENGTH}), seed {args.seed + 1}",
            "waveforms.csv": "same, one waveform per line, %.9g",
            "logits.csv": "fc2 output, one row per waveform (16)",
            "probs.csv": "softmax(logits), one row per waveform (16)",
            "occlusion.csv": "Captum Occlusion, window (1,60), stride 1, baseline 0, prob of target, 640 per row",
            "gradcam.csv": "Captum LayerGradCam(conv4 pre-ReLU output), ReLU, linear interp "
                           f"{layer_lengths(args.padding)['conv4']}->640",
            "gradcam_raw.csv": f"Captum LayerGradCam(conv4) without ReLU, {layer_lengths(args.padding)['conv4']} per row",
            "lime.csv": "Captum Lime, 128 samples, 40 features x 16, SkLearnLinearRegression (WLS + intercept), coefficient per sample (640)",
            "lime_lasso.csv": "same samples, Captum default SkLearnLasso(alpha=0.01)",
            "lime_samples.csv": "the Bernoulli masks used (m_j = 1 keeps feature j), cosine-kernel weight and model output per sample",
        },
        "lime_seed": "torch.manual_seed(seed + 1000 + wave_index) before each waveform",
        "checks": {
            "occlusion_torch_vs_captum_max_abs_diff": float(np.abs(occ - occ_t).max()),
            "occlusion_max_abs": float(np.abs(occ).max()),
            "gradcam_max": float(gc.max()),
            "lime_max_abs": float(np.abs(np.stack(lime_rows)).max()),
            "lime_lasso_max_abs": float(np.abs(np.stack(lasso_rows)).max()),
        },
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    print(json.dumps({"exported": out, **manifest["checks"]}))


def cmd_explain(args):
    C = _captum()
    tensors, meta = read_safetensors(args.weights)
    if meta.get("padding", args.padding) != args.padding:
        raise SystemExit(f"{args.weights} was written with padding={meta['padding']!r} "
                         f"(__metadata__), but --padding is {args.padding!r}; "
                         f"pass --padding {meta['padding']}")
    model = load_model_tensors(tensors, padding=args.padding)
    wav = read_waveforms_csv(args.waveforms)
    os.makedirs(args.out_dir, exist_ok=True)
    t0 = time.perf_counter()
    occ, gc, raw = compute_maps(C, model, wav, args.target, args.occlusion_impl, args.ppe)
    secs = time.perf_counter() - t0
    write_csv(os.path.join(args.out_dir, "occlusion.csv"), occ)
    write_csv(os.path.join(args.out_dir, "gradcam.csv"), gc)
    write_csv(os.path.join(args.out_dir, "gradcam_raw.csv"), raw)
    print(json.dumps({"explained": len(wav), "out_dir": args.out_dir, "seconds": round(secs, 4),
                      "threads": torch.get_num_threads(), "padding": args.padding}))


def read_targets(spec, n):
    """--targets: a class (an integer) for every waveform, or a file of one
    class a line, one line a waveform (as `uaxai explain --target FILE`)."""
    try:
        return [int(spec)] * n
    except ValueError:
        pass
    with open(spec) as f:
        t = [int(line) for line in f if line.strip()]
    if len(t) != n:
        raise SystemExit(f"{spec}: {len(t)} targets for {n} waveforms")
    return t


def cmd_occlusion(args):
    """Occlusion maps (window --window, stride 1, baseline 0) of every
    waveform of a CSV, written as CSV: the torch side of timing
    `uaxai explain --explainer occlusion` as a whole command. No Captum."""
    tensors, meta = read_safetensors(args.weights)
    model = load_model_tensors(tensors, padding=meta.get("padding", args.padding))
    wav = read_waveforms_csv(args.waveforms)
    targets = read_targets(args.targets, len(wav))
    occ = TorchOcclusion(model, window=args.window)
    t0 = time.perf_counter()
    rows = [occ(torch.from_numpy(np.ascontiguousarray(w)).view(1, 1, LENGTH), t, args.batch).reshape(-1).numpy()
            for w, t in zip(wav, targets)]
    secs = time.perf_counter() - t0
    write_csv(args.out, np.stack(rows))
    print(json.dumps({"explained": len(wav), "out": args.out, "seconds": round(secs, 4),
                      "batch": args.batch if args.batch > 0 else LENGTH - args.window + 2,
                      **environment()}))


# ---------------------------------------------------------------------------
# golden: a fixed reference set for a port (see DIR/README.md, written below)

PQD_CLASSES = [
    "normal", "sag", "swell", "interruption", "impulsive_transient",
    "oscillatory_transient", "harmonics", "flicker", "notch", "spike",
    "sag_harmonics", "swell_harmonics", "interruption_harmonics",
    "flicker_harmonics", "flicker_sag", "flicker_swell",
]
GOLDEN_FS = 3200.0      # Hz, 64 samples a cycle at 50 Hz
GOLDEN_F0 = 50.0        # Hz, 10 cycles in 640 samples
GOLDEN_NOISE = 0.01     # std of the additive N(0, sigma^2) noise, p.u.
GOLDEN_ADAM = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-4)
GOLDEN_LASSO_ALPHA = 1e-4
GOLDEN_LASSO_TOL = 1e-12
GOLDEN_LASSO_MAX_ITER = 1000000
GOLDEN_MC_P = 0.2
ZERO_GRAD_REL = 1e-9    # |g64| <= this * max|g64| of the tensor: an exact zero


def make_pqd_waveforms(seed):
    """16 PQD-like waveforms, one per class of docs/spec/pqd-signals.md
    (simplified: fixed noise level, visible event sizes).  All randomness from
    numpy.random.default_rng(seed), classes generated in order 0..15, then the
    rows are put in a seeded random order (rng.permutation(16)), so that
    row index != label.  Returns float32 (16, 640), int64 labels (16,) and
    the drawn parameters per row."""
    rng = np.random.default_rng(seed)
    t = np.arange(LENGTH) / GOLDEN_FS
    T = 1.0 / GOLDEN_F0
    spc = int(round(GOLDEN_FS / GOLDEN_F0))  # 64 samples a cycle
    wt = 2.0 * np.pi * GOLDEN_F0 * t
    dur_total = LENGTH / GOLDEN_FS

    def event(lo_cycles, hi_cycles):
        dur = rng.uniform(lo_cycles * T, hi_cycles * T)
        t1 = rng.uniform(0.0, dur_total - dur)
        return {"t1": t1, "t2": t1 + dur}, ((t >= t1) & (t < t1 + dur)).astype(np.float64)

    def harmonic(phi, p):
        a = rng.uniform(0.05, 0.15, 3)
        th = rng.uniform(-np.pi, np.pi, 3)
        p.update(a3=a[0], a5=a[1], a7=a[2], th3=th[0], th5=th[1], th7=th[2])
        return (np.sin(wt + phi) + a[0] * np.sin(3 * (wt + phi) + th[0])
                + a[1] * np.sin(5 * (wt + phi) + th[1]) + a[2] * np.sin(7 * (wt + phi) + th[2]))

    def flicker(p):
        lam = rng.uniform(0.1, 0.2)
        beta = rng.uniform(5.0, 20.0)
        thf = rng.uniform(-np.pi, np.pi)
        p.update(lam=lam, beta=beta, thf=thf)
        return 1.0 + lam * np.sin(2 * np.pi * beta * t + thf)

    def amp_event(lo, hi, p):
        a = rng.uniform(lo, hi)
        ev, u = event(2, 5)
        p.update(a=a, **ev)
        return a, u

    def per_cycle(p):
        K = rng.uniform(0.2, 0.4)
        width = int(rng.integers(2, 5))       # 2..4 samples
        n1 = int(rng.integers(0, spc - width + 1))
        m = np.zeros(LENGTH)
        for c in range(LENGTH // spc):
            m[n1 + c * spc:n1 + c * spc + width] = 1.0
        p.update(K=K, width=width, n1=n1)
        return K, m

    rows, params = [], []
    for k in range(N_CLASSES):
        phi = rng.uniform(-np.pi, np.pi)
        p = {"label": k, "class": PQD_CLASSES[k], "phi": phi}
        x0 = np.sin(wt + phi)
        if k == 0:
            y = x0
        elif k in (1, 2, 3):
            lo, hi, sgn = {1: (0.3, 0.8, -1), 2: (0.2, 0.6, 1), 3: (0.9, 1.0, -1)}[k]
            a, u = amp_event(lo, hi, p)
            y = (1 + sgn * a * u) * x0
        elif k == 4:
            psi = rng.uniform(0.4, 1.0)
            s = 1.0 if rng.random() < 0.5 else -1.0
            tr = rng.uniform(0.05e-3, 0.2e-3)
            td = rng.uniform(0.5e-3, 2e-3)
            ta = rng.uniform(T, 9 * T)
            smax = np.log(td / tr) * td * tr / (td - tr)
            gmax = np.exp(-smax / td) - np.exp(-smax / tr)
            sd = t - ta
            g = np.where(sd >= 0, (np.exp(-np.maximum(sd, 0) / td) - np.exp(-np.maximum(sd, 0) / tr)) / gmax, 0.0)
            p.update(psi=psi, sign=s, tr=tr, td=td, ta=ta)
            y = x0 + s * psi * g
        elif k == 5:
            a = rng.uniform(0.3, 0.8)
            tau = rng.uniform(8e-3, 40e-3)
            fn = rng.uniform(300.0, 900.0)
            th = rng.uniform(-np.pi, np.pi)
            ev, u = event(0.5, 3)
            p.update(a=a, tau=tau, fn=fn, th=th, **ev)
            dt = t - ev["t1"]
            y = x0 + a * np.exp(-np.maximum(dt, 0) / tau) * np.sin(2 * np.pi * fn * dt + th) * u
        elif k == 6:
            y = harmonic(phi, p)
        elif k == 7:
            y = flicker(p) * x0
        elif k in (8, 9):
            K, m = per_cycle(p)
            y = x0 + (1 if k == 9 else -1) * np.sign(x0) * K * m
        elif k in (10, 11, 12):
            lo, hi, sgn = {10: (0.3, 0.8, -1), 11: (0.2, 0.6, 1), 12: (0.9, 1.0, -1)}[k]
            a, u = amp_event(lo, hi, p)
            y = (1 + sgn * a * u) * harmonic(phi, p)
        elif k == 13:
            y = flicker(p) * harmonic(phi, p)
        else:  # 14, 15
            f = flicker(p)
            lo, hi, sgn = {14: (0.3, 0.8, -1), 15: (0.2, 0.6, 1)}[k]
            a, u = amp_event(lo, hi, p)
            y = f * (1 + sgn * a * u) * x0
        y = y + rng.normal(0.0, GOLDEN_NOISE, LENGTH)
        rows.append(y)
        params.append({kk: (float(v) if isinstance(v, (float, np.floating)) else v) for kk, v in p.items()})
    order = rng.permutation(N_CLASSES)
    wav = np.stack(rows)[order].astype(np.float32)
    labels = order.astype(np.int64)
    return wav, labels, [params[j] for j in order]


def _st_meta(args, what):
    return {"what": what, "seed": args.seed, "padding": args.padding,
            "bn_init": args.bn_init, "torch": torch.__version__}


def cmd_golden(args):
    import warnings
    import platform
    import scipy
    import sklearn
    from sklearn.linear_model import Lasso, LinearRegression
    from captum.attr._core.lime import get_exp_kernel_similarity_function
    C = _captum()
    if torch.get_num_threads() != 1:
        print(f"# warning: golden runs with {torch.get_num_threads()} threads; "
              "the published sets use --threads 1", file=sys.stderr)
    out = args.out
    os.makedirs(out, exist_ok=True)
    os.makedirs(os.path.join(out, "mcdropout_fold"), exist_ok=True)
    seed, pad = args.seed, args.padding
    lens = layer_lengths(pad)
    L4 = lens["conv4"]
    checks = {}

    # a. model + waveforms ---------------------------------------------------
    model0 = build_model(seed, dropout=0.0, bn_init=args.bn_init, padding=pad)
    st_path = os.path.join(out, "model.safetensors")
    write_safetensors(st_path, model_tensors(model0), _st_meta(args, "model"))
    loaded, _ = read_safetensors(st_path)
    model = load_model_tensors(loaded, padding=pad)
    model.eval()
    for name, v in model.state_dict().items():
        assert torch.equal(v, model0.state_dict()[name]), name

    wav, labels, wparams = make_pqd_waveforms(seed)
    n = wav.shape[0]
    write_csv(os.path.join(out, "waveforms.csv"), wav)
    assert np.array_equal(read_waveforms_csv(os.path.join(out, "waveforms.csv")), wav)
    with open(os.path.join(out, "labels.csv"), "w") as f:
        f.write("".join(f"{int(v)}\n" for v in labels))
    x_all = torch.from_numpy(wav).view(n, 1, LENGTH)
    y_all = torch.from_numpy(labels)
    tg = [int(v) for v in labels]

    # b. logits / probs (eval, one batch of 16) ----------------------------
    with torch.inference_mode():
        logits = model.logits(x_all)
        probs = F.softmax(logits, dim=1)
        single = torch.cat([model(x_all[i:i + 1]) for i in range(n)])
    checks["probs_batch16_vs_batch1_max_abs_diff"] = float((single - probs).abs().max())
    write_csv(os.path.join(out, "logits.csv"), logits.numpy())
    write_csv(os.path.join(out, "probs.csv"), probs.numpy())

    # c. d p_label / d x (eval, one waveform at a time) ---------------------
    grads_x = []
    for i in range(n):
        x = x_all[i:i + 1].clone().requires_grad_(True)
        p = model(x)[0, tg[i]]
        (g,) = torch.autograd.grad(p, x)
        grads_x.append(g.reshape(-1).numpy())
    write_csv(os.path.join(out, "input_grad.csv"), np.stack(grads_x))

    # d, e. train-mode loss: grads, one Adam step, BN running update --------
    pnames = [nm for nm, _ in model.named_parameters()]
    tm = copy.deepcopy(model)
    tm.train()
    opt = torch.optim.Adam(tm.parameters(), **GOLDEN_ADAM)
    opt.zero_grad(set_to_none=True)
    loss_train = F.cross_entropy(tm.logits(x_all), y_all)
    loss_train.backward()
    g_train = {nm: p.grad.detach().clone().numpy() for nm, p in tm.named_parameters()}
    opt.step()
    after1 = {nm: p.detach().clone().numpy() for nm, p in tm.named_parameters()}
    run_names = [f"{b}.{s}" for b in ("bn1", "bn2", "bn3") for s in ("running_mean", "running_var")]
    sd1 = tm.state_dict()
    running1 = {nm: sd1[nm].detach().clone().numpy() for nm in run_names}
    # extra: a second step on the same batch (exercises the moment averages)
    opt.zero_grad(set_to_none=True)
    loss_train2 = F.cross_entropy(tm.logits(x_all), y_all)
    loss_train2.backward()
    g_train2 = {nm: p.grad.detach().clone().numpy() for nm, p in tm.named_parameters()}
    opt.step()
    after2 = {nm: p.detach().clone().numpy() for nm, p in tm.named_parameters()}
    # the same train-mode gradients in float64 (torch), to separate float32
    # rounding from real differences: entries that are 0 in exact arithmetic
    # (dead units, and biases feeding a train-mode BN through ReLUs that are
    # active wherever it matters: BN removes the batch mean, so the loss does
    # not depend on them) hold float32 noise only.  Their masks are written.
    def grads64(params32):
        """train-mode gradients in float64 (torch) at the given float32 params"""
        dm = copy.deepcopy(model).double()
        with torch.no_grad():
            for nm, p in dm.named_parameters():
                p.copy_(torch.from_numpy(params32[nm]).double())
        dm.train()
        F.cross_entropy(dm.logits(x_all.double()), y_all).backward()
        return {nm: p.grad.detach().numpy() for nm, p in dm.named_parameters()}

    def zero_mask(g):
        return {nm: np.abs(g[nm]) <= ZERO_GRAD_REL * np.abs(g[nm]).max() for nm in pnames}

    def grad_stats(g32, g64, zm, tag):
        keep = {nm: ~zm[nm] for nm in pnames}
        checks[f"{tag}_float32_vs_float64_torch_max_rel_nonzero"] = {
            nm: float(np.abs(g32[nm] - g64[nm])[keep[nm]].max(initial=0.0)
                      / max(np.abs(g64[nm])[keep[nm]].max(initial=0.0), 1e-300)) for nm in pnames}
        checks[f"{tag}_zero_mask_counts"] = {nm: int(zm[nm].sum()) for nm in pnames if zm[nm].any()}
        checks[f"{tag}_zero_mask_nonzero_in_float32"] = {
            nm: int((g32[nm][zm[nm]] != 0).sum()) for nm in pnames if (g32[nm][zm[nm]] != 0).any()}
        checks[f"{tag}_zero_mask_max_abs_float32"] = float(max(
            np.abs(g32[nm][zm[nm]]).max(initial=0.0) for nm in pnames))

    theta0 = {nm: p.detach().numpy() for nm, p in model.named_parameters()}
    g64 = grads64(theta0)
    zm1 = zero_mask(g64)
    grad_stats(g_train, g64, zm1, "param_grads")
    g64_2 = grads64(after1)
    zm2 = zero_mask(g64_2)
    grad_stats(g_train2, g64_2, zm2, "param_grads_step2")
    # eval-mode loss grads (BN with running statistics)
    em = copy.deepcopy(model)
    em.eval()
    loss_eval = F.cross_entropy(em.logits(x_all), y_all)
    loss_eval.backward()
    g_eval = {nm: p.grad.detach().clone().numpy() for nm, p in em.named_parameters()}
    # the reference model itself must be untouched
    for name, v in model.state_dict().items():
        assert torch.equal(v, model0.state_dict()[name]), name
    write_safetensors(os.path.join(out, "param_grads.safetensors"), g_train,
                      {**_st_meta(args, "d mean CE / d param, train mode"), "loss": repr(float(loss_train))})
    write_safetensors(os.path.join(out, "param_grads_eval.safetensors"), g_eval,
                      {**_st_meta(args, "d mean CE / d param, eval mode"), "loss": repr(float(loss_eval))})
    adam_meta = {k: str(v) for k, v in GOLDEN_ADAM.items()}
    write_safetensors(os.path.join(out, "adam_step.safetensors"), after1,
                      {**_st_meta(args, "params after 1 Adam step"), **adam_meta})
    write_safetensors(os.path.join(out, "adam_step2.safetensors"), after2,
                      {**_st_meta(args, "params after 2 Adam steps, same batch"), **adam_meta})
    write_safetensors(os.path.join(out, "param_grads_zero_mask.safetensors"),
                      {nm: zm1[nm].astype(np.float32) for nm in pnames},
                      {**_st_meta(args, "1 where the float64 train-mode gradient of param_grads is 0 "
                                        f"(abs <= {ZERO_GRAD_REL} * tensor max)")})
    write_safetensors(os.path.join(out, "param_grads_step2_zero_mask.safetensors"),
                      {nm: zm2[nm].astype(np.float32) for nm in pnames},
                      {**_st_meta(args, "the same for param_grads_step2 (at the params of adam_step)")})
    write_safetensors(os.path.join(out, "param_grads_step2.safetensors"), g_train2,
                      {**_st_meta(args, "d mean CE / d param, train mode, at the params of adam_step"),
                       "loss": repr(float(loss_train2))})
    write_safetensors(os.path.join(out, "bn_running_after_step.safetensors"), running1,
                      {**_st_meta(args, "BN running stats after the train-mode forward"),
                       "momentum": "0.1"})
    with open(os.path.join(out, "loss.csv"), "w") as f:
        f.write("mode,loss\n")
        f.write(f"train,{float(loss_train):.9g}\n")
        f.write(f"eval,{float(loss_eval):.9g}\n")
        f.write(f"train_step2,{float(loss_train2):.9g}\n")

    # f, g. occlusion + raw Grad-CAM, target = label -------------------------
    occ_rows, occ_t_rows, cam_rows = [], [], []
    tocc = TorchOcclusion(model)
    for i in range(n):
        x = x_all[i:i + 1]
        occ_rows.append(occlusion_captum(C, model, x, tg[i], 581).detach().reshape(-1).numpy())
        occ_t_rows.append(tocc(x, tg[i], 64).reshape(-1).numpy())
        cam_rows.append(gradcam_raw(C, model, x, tg[i]).detach().reshape(-1).numpy())
    occ = np.stack(occ_rows)
    cam = np.stack(cam_rows)
    assert cam.shape == (n, L4), cam.shape
    checks["occlusion_torch_vs_captum_max_abs_diff"] = float(np.abs(occ - np.stack(occ_t_rows)).max())
    write_csv(os.path.join(out, "occlusion.csv"), occ)
    write_csv(os.path.join(out, "gradcam_raw.csv"), cam)

    # h. LIME ------------------------------------------------------------------
    fm = feature_mask()
    dpf = C["default_perturb_func"]
    base_sim = get_exp_kernel_similarity_function("cosine", 1.0)
    sample_rows = []
    ols_c, lasso_c, ols64, lasso64, icpt = [], [], [], [], []
    diff_skl32 = 0.0
    diff_ols_skl64 = 0.0
    lasso_iters = []
    for i in range(n):
        x = x_all[i:i + 1]
        runs = {}
        for kind in ("linreg", "lasso"):
            rec = {"mask": [], "sim": [], "out": []}

            def perturb(original_inp, **kw):
                s = dpf(original_inp, **kw)
                rec["mask"].append(s.detach().clone())
                return s

            def sim(orig, pert, interp, **kw):
                v = base_sim(orig, pert, interp, **kw)
                rec["sim"].append(v)
                return v

            def fwd(inp):
                o = model(inp)
                rec["out"].append(o.detach().clone())
                return o

            im = (C["SkLearnLinearRegression"]() if kind == "linreg"
                  else C["SkLearnLasso"](alpha=GOLDEN_LASSO_ALPHA))
            lime = C["Lime"](fwd, interpretable_model=im, similarity_func=sim, perturb_func=perturb)
            torch.manual_seed(seed * 1000 + i)
            coef = lime.attribute(x, baselines=0, target=tg[i], feature_mask=fm,
                                  n_samples=LIME_SAMPLES, perturbations_per_eval=LIME_SAMPLES,
                                  return_input_shape=False)
            masks = torch.cat(rec["mask"]).numpy().astype(np.int64)       # (128, 40)
            weights = np.array([np.float32(v) for v in rec["sim"]], dtype=np.float32)
            outs = torch.cat(rec["out"])[:, tg[i]].numpy().astype(np.float32)
            runs[kind] = (coef.detach().reshape(-1).numpy(), masks, weights, outs, im)
        c_ols, M, wts, ys, _ = runs["linreg"]
        c_las, M2, wts2, ys2, _ = runs["lasso"]
        assert np.array_equal(M, M2) and np.array_equal(wts, wts2) and np.array_equal(ys, ys2)
        assert M.shape == (LIME_SAMPLES, N_FEATURES)
        ols_c.append(c_ols)
        lasso_c.append(c_las)
        # the recorded float32 data reproduce Captum's own fit exactly
        skl32 = LinearRegression().fit(M.astype(np.float32), ys, sample_weight=wts)
        diff_skl32 = max(diff_skl32, float(np.abs(skl32.coef_.astype(np.float32) - c_ols).max()))
        # float64 references from the values as written to lime_samples.csv
        X = M.astype(np.float64)
        y = ys.astype(np.float64)
        w = wts.astype(np.float64)
        A = np.hstack([X, np.ones((LIME_SAMPLES, 1))])
        sw = np.sqrt(w)
        sol, _, rank, _ = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)
        assert rank == N_FEATURES + 1, f"LIME design of waveform {i} has rank {rank}"
        skl64 = LinearRegression().fit(X, y, sample_weight=w)
        diff_ols_skl64 = max(diff_ols_skl64, float(np.abs(skl64.coef_ - sol[:-1]).max()))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            las = Lasso(alpha=GOLDEN_LASSO_ALPHA, fit_intercept=True, tol=GOLDEN_LASSO_TOL,
                        max_iter=GOLDEN_LASSO_MAX_ITER).fit(X, y, sample_weight=w)
        lasso_iters.append(int(las.n_iter_))
        ols64.append(sol[:-1])
        lasso64.append(las.coef_.copy())
        icpt.append((sol[-1], float(las.intercept_)))
        for k in range(LIME_SAMPLES):
            # float32 values written EXACTLY (repr of the float64 that holds
            # them), so that a float64 parse gives the very numbers fitted
            sample_rows.append(f"{i},{k},{float(wts[k])!r},{float(ys[k])!r}," + ",".join(str(int(v)) for v in M[k]))
    checks["lime_captum_ols_vs_sklearn_float32_refit_max_abs_diff"] = diff_skl32
    checks["lime_ols_lstsq_vs_sklearn_float64_max_abs_diff"] = diff_ols_skl64
    checks["lime_ols_captum_vs_float64_max_abs_diff"] = float(np.abs(np.stack(ols_c) - np.stack(ols64)).max())
    checks["lime_lasso_captum_vs_float64_max_abs_diff"] = float(np.abs(np.stack(lasso_c) - np.stack(lasso64)).max())
    checks["lime_lasso_float64_n_iter_max"] = max(lasso_iters)
    checks["lime_lasso_nonzero_per_waveform"] = [int((np.abs(c) > 0).sum()) for c in lasso64]
    with open(os.path.join(out, "lime_samples.csv"), "w") as f:
        f.write("wave,sample,weight,output," + ",".join(f"m{j}" for j in range(N_FEATURES)) + "\n")
        f.write("\n".join(sample_rows) + "\n")
    with open(os.path.join(out, "lime_ols.csv"), "w") as f:
        f.writelines(",".join(repr(float(v)) for v in r) + "\n" for r in ols64)
    with open(os.path.join(out, "lime_lasso.csv"), "w") as f:
        f.writelines(",".join(repr(float(v)) for v in r) + "\n" for r in lasso64)
    with open(os.path.join(out, "lime_intercepts.csv"), "w") as f:
        f.write("ols,lasso\n")
        f.writelines(f"{a!r},{b!r}\n" for a, b in ((float(a), float(b)) for a, b in icpt))
    write_csv(os.path.join(out, "lime_ols_captum.csv"), np.stack(ols_c))
    write_csv(os.path.join(out, "lime_lasso_captum.csv"), np.stack(lasso_c))

    # i. MC-dropout draw == deterministic network ------------------------------
    p_drop = GOLDEN_MC_P
    mc_seed = seed * 1000 + 777
    torch.manual_seed(mc_seed)
    keep = torch.empty(1, 64).bernoulli_(1.0 - p_drop)          # m_j ~ Bernoulli(1 - p)
    mask = keep.view(-1)
    dmodel = load_model_tensors(loaded, dropout=p_drop, padding=pad)
    dmodel.eval()
    dmodel.dropout.train()                                        # one MC draw, BN in eval mode
    scale = mask / (1.0 - p_drop)                                 # m_j / (1 - p): 0 or 1.25
    with torch.inference_mode():
        via_module, manual1 = [], []
        for i in range(n):  # same seed before each row -> the same mask for every row
            torch.manual_seed(mc_seed)
            via_module.append(dmodel.logits(x_all[i:i + 1]))
            manual1.append(model.fc2(model.fc2_input(x_all[i:i + 1]) * scale))
        via_module = torch.cat(via_module)
        manual1 = torch.cat(manual1)
        h = model.fc2_input(x_all)
        mc_logits = model.fc2(h * scale)
        mc_probs = F.softmax(mc_logits, dim=1)
        w_fold = model.fc2.weight * scale[None, :]
        fold_logits = F.linear(h, w_fold, model.fc2.bias)
    assert float(scale.max()) == 1.25
    checks["mcdropout_module_vs_manual_logits_max_abs_diff"] = float((via_module - manual1).abs().max())
    checks["mcdropout_batch16_vs_batch1_logits_max_abs_diff"] = float((manual1 - mc_logits).abs().max())
    checks["mcdropout_folded_vs_manual_logits_max_abs_diff"] = float((fold_logits - mc_logits).abs().max())
    checks["mcdropout_kept_units"] = int(mask.sum())
    md = os.path.join(out, "mcdropout_fold")
    with open(os.path.join(md, "mask.csv"), "w") as f:
        f.write(",".join(str(int(v)) for v in mask.tolist()) + "\n")
    write_csv(os.path.join(md, "logits.csv"), mc_logits.numpy())
    write_csv(os.path.join(md, "probs.csv"), mc_probs.numpy())
    write_safetensors(os.path.join(md, "fc2_folded.safetensors"),
                      {"fc2.weight": w_fold.numpy(), "fc2.bias": model.fc2.bias.detach().numpy()},
                      {**_st_meta(args, "fc2 with m/(1-p) folded into its weight columns"), "p": str(p_drop)})

    # manifest + README ---------------------------------------------------------
    manifest = {
        "name": "paper-1dcnn", "seed": seed, "command":
            f"torch_ref.py golden --seed {seed} --out DIR --threads {torch.get_num_threads()}"
            + (f" --padding {pad}" if pad != "valid" else ""),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "captum": C["version"], "numpy": np.__version__, "scipy": scipy.__version__,
                     "scikit-learn": sklearn.__version__},
        "threads": torch.get_num_threads(),
        "dtype": "float32 model and inputs; float64 for lime_ols.csv, lime_lasso.csv, lime_intercepts.csv",
        "model": {"arch": "paper-1dcnn (Table 4), see README.md", "padding": pad,
                  "layer_lengths": {"input": LENGTH, **lens, "maxpool2": 1},
                  "bn_init": args.bn_init, "bn_eps": 1e-5, "bn_momentum": 0.1,
                  "init": f"torch.manual_seed({seed}); PyTorch default conv/linear init; "
                          f"BN affine from torch.Generator().manual_seed({seed + 7}); "
                          f"BN running stats calibrated on make_training_set(512, seed={seed + 5}) in float64",
                  "state_dict_names": STATE_NAMES},
        "waveforms": {"n": n, "fs_hz": GOLDEN_FS, "f0_hz": GOLDEN_F0, "noise_std": GOLDEN_NOISE,
                      "generator": f"make_pqd_waveforms(seed={seed}) in torch_ref.py",
                      "labels": tg, "classes": PQD_CLASSES, "rows": wparams},
        "loss": {"reduction": "mean over the 16 waveforms", "train": float(loss_train),
                 "eval": float(loss_eval), "train_step2": float(loss_train2)},
        "adam": {"lr": GOLDEN_ADAM["lr"], "betas": list(GOLDEN_ADAM["betas"]), "eps": GOLDEN_ADAM["eps"],
                 "weight_decay": GOLDEN_ADAM["weight_decay"], "amsgrad": False,
                 "weight_decay_kind": "L2 added to the gradient (torch.optim.Adam, not AdamW)",
                 "steps": "adam_step: 1, adam_step2: 2 (same 16-waveform batch, train mode)"},
        "occlusion": {"impl": "captum.attr.Occlusion", "sliding_window_shapes": [1, WINDOW], "strides": 1,
                      "baselines": 0, "target": "label", "perturbations_per_eval": 581,
                      "windows": LENGTH - WINDOW + 1, "output": "softmax probability"},
        "gradcam": {"impl": "captum.attr.LayerGradCam", "layer": "conv4 (module output, before ReLU)",
                    "relu_attributions": False, "target": "label", "length": L4, "interpolation": None},
        "lime": {"impl": "captum.attr.Lime", "n_samples": LIME_SAMPLES, "n_features": N_FEATURES,
                 "feature_width": FEATURE_WIDTH, "baselines": 0, "target": "label",
                 "perturbations_per_eval": LIME_SAMPLES,
                 "perturb": "captum default_perturb_func: Bernoulli(0.5) per feature (torch RNG)",
                 "torch_seed": "torch.manual_seed(seed * 1000 + wave) before each waveform",
                 "similarity": "captum get_exp_kernel_similarity_function('cosine', kernel_width=1.0)",
                 "ols": "float64 weighted least squares with intercept (numpy.linalg.lstsq), "
                        "checked against sklearn LinearRegression(fit_intercept=True) with sample_weight",
                 "lasso": {"estimator": "sklearn.linear_model.Lasso", "alpha": GOLDEN_LASSO_ALPHA,
                           "fit_intercept": True, "tol": GOLDEN_LASSO_TOL,
                           "max_iter": GOLDEN_LASSO_MAX_ITER, "dtype": "float64",
                           "sample_weight": "lime_samples.csv weight column",
                           "scikit-learn": sklearn.__version__},
                 "captum_files": "lime_ols_captum.csv / lime_lasso_captum.csv: Captum's own fits "
                                 "(SkLearnLinearRegression / SkLearnLasso(alpha=1e-4), float32 data, "
                                 "sklearn defaults tol=1e-4, max_iter=1000)"},
        "mcdropout_fold": {"p": p_drop, "mask": "torch.manual_seed(seed * 1000 + 777); "
                           "torch.empty(1, 64).bernoulli_(0.8)", "applied_to": "fc2 input (bn3 output)",
                           "scale": "m / (1 - p) = 0 or 1.25", "mode": "eval otherwise"},
        "checks": checks,
    }
    try:
        import verify_golden as V
        # float64 torch vs the float64 numpy re-derivation (train-mode grads)
        Wn, _ = V.read_safetensors(st_path)
        ft = V.forward(Wn, wav.astype(np.float64), pad == "same", train=True)
        _, dz = V.ce_loss(ft, labels)
        gn, _, _ = V.backward(Wn, ft, dz)
        checks["param_grads_float64_numpy_vs_float64_torch_max_rel"] = float(max(
            np.abs(gn[nm] - g64[nm]).max() / max(np.abs(g64[nm]).max(), 1e-300) for nm in pnames))
        ver = V.verify(out, manifest=manifest)
    except Exception as e:  # pragma: no cover
        print(f"# float64 re-derivation failed: {e!r}", file=sys.stderr)
        raise
    manifest["float64_check"] = ver
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(golden_readme(manifest))
    print(json.dumps({"golden": out, "seed": seed, **checks}))



GOLDEN_README = r"""# Golden set `paper-1dcnn`, seed @SEED@

Reference values for a port of the paper's 1-D CNN (Table 4, @CONVKIND@)
and its explainers, from PyTorch @TORCH@ + Captum @CAPTUM@
(numpy @NUMPY@, scipy @SCIPY@, scikit-learn @SKLEARN@, Python @PYTHON@),
written by

    PYTHONPATH=<captum v0.8.0 work tree> /usr/bin/python3 torch_ref.py golden --seed @SEED@ --out DIR --threads 1

(`torch_ref.py` is the peers harness, `../../peers/` beside this folder; its header and
README document it). One CPU thread, float32 model and inputs, padding
`@PADDING@`. Everything below can be recomputed from this folder alone:
`verify_golden.py DIR` (next to `torch_ref.py`) does it in float64 numpy, and
its results are in the last two sections.

Conventions:
* Every per-waveform CSV has 16 lines; line r belongs to waveform r (line r of
  `waveforms.csv`) and its target class is label r (line r of `labels.csv`).
* CSV files are comma-separated, without a header unless stated. float32
  values are written with `%.9g`: parse them as float32 to get the exact bits
  (a float64 parse is off by up to half a float32 ulp, harmless for the
  tolerances below; `verify_golden.py` rounds `waveforms.csv` to float32).
  float64 values, and the float32 `weight`/`output` columns of
  `lime_samples.csv`, are written with Python `repr` (17 significant digits at
  most, exact when parsed as float64).
* Every `.safetensors` file here: an 8-byte little-endian u64 header length N,
  N bytes of JSON header (padded with spaces to a multiple of 8), then the raw
  little-endian data; `data_offsets` are relative to the first data byte and
  cover the data without holes; every tensor is `F32`; `__metadata__` holds
  strings only. Tensor names are PyTorch `state_dict` names.

## Files

| file | shape | content |
|---|---|---|
| `model.safetensors` | 24 tensors | the float32 model (weights, biases, BN affine and running statistics) |
| `waveforms.csv` | 16 × 640 | inputs, float32 |
| `labels.csv` | 16 lines | target class of each waveform, 0..15 |
| `logits.csv`, `probs.csv` | 16 × 16 | eval-mode fc2 output and softmax |
| `input_grad.csv` | 16 × 640 | d p_label / d x, eval mode |
| `param_grads.safetensors` | 18 tensors | d (mean CE) / d param, train mode (BN batch statistics) |
| `param_grads_eval.safetensors` | 18 tensors | the same in eval mode |
| `adam_step.safetensors` | 18 tensors | parameters after one Adam step on the train-mode loss |
| `adam_step2.safetensors` | 18 tensors | extra: after a second step on the same batch |
| `param_grads_step2.safetensors` | 18 tensors | extra: the train-mode gradients used by that second step |
| `param_grads_zero_mask.safetensors`, `param_grads_step2_zero_mask.safetensors` | 18 tensors each | extra: 1 where the train-mode gradient is 0 in exact arithmetic (float32 noise in the files) |
| `bn_running_after_step.safetensors` | 6 tensors | BN running_mean / running_var after that train-mode forward |
| `loss.csv` | header + 3 rows | the loss values (train, eval, train at step 2) |
| `occlusion.csv` | 16 × 640 | Captum Occlusion, window 60, stride 1, baseline 0 |
| `gradcam_raw.csv` | 16 × @L4@ | Captum LayerGradCam on conv4 (pre-ReLU), no ReLU, no interpolation |
| `lime_samples.csv` | header + 2048 × 44 | LIME masks, kernel weights, model outputs |
| `lime_ols.csv` | 16 × 40 | weighted least squares surrogate, float64 |
| `lime_lasso.csv` | 16 × 40 | scikit-learn Lasso(alpha=1e-4) surrogate, float64 |
| `lime_intercepts.csv` | header + 16 × 2 | the two surrogates' intercepts, float64 |
| `lime_ols_captum.csv`, `lime_lasso_captum.csv` | 16 × 40 each | Captum's own (float32) fits of the same samples |
| `mcdropout_fold/mask.csv` | 1 × 64 | MC-dropout keep mask m (0/1) on fc2's input |
| `mcdropout_fold/logits.csv`, `probs.csv` | 16 × 16 | the network with that dropout draw |
| `mcdropout_fold/fc2_folded.safetensors` | 2 tensors | fc2 with m/(1-p) folded into its weight columns |
| `manifest.json` | | versions, settings, drawn waveform parameters, checks |

## Model (`model.safetensors`)

| layer | operation | output (batch B) |
|---|---|---|
| input | | (B, 1, 640) |
| conv1 | Conv1d(1 -> 8, k=3, stride 1, padding @PADNUM@) + ReLU | (B, 8, @L1@) |
| conv2 | Conv1d(8 -> 8, k=3, stride 1, padding @PADNUM@) + ReLU | (B, 8, @L2@) |
| maxpool1 | MaxPool1d(k=3, stride 1) | (B, 8, @L3@) |
| bn1 | BatchNorm1d(8), eps 1e-5 | (B, 8, @L3@) |
| conv3 | Conv1d(8 -> 16, k=3, stride 1, padding @PADNUM@) + ReLU | (B, 16, @L4M@) |
| conv4 | Conv1d(16 -> 16, k=3, stride 1, padding @PADNUM@) + ReLU | (B, 16, @L4@) |
| maxpool2 | max over all @L4@ time steps (MaxPool1d(k=@L4@)) | (B, 16, 1) |
| bn2 | BatchNorm1d(16), eps 1e-5 | (B, 16, 1) |
| flatten | | (B, 16) |
| fc1 | Linear(16 -> 64) + ReLU | (B, 64) |
| bn3 | BatchNorm1d(64), eps 1e-5 | (B, 64) |
| fc2 | Linear(64 -> 16) | (B, 16) logits |
| softmax | over the 16 classes | (B, 16) |

* conv: `u[b,o,t] = bias[o] + sum_i sum_{k=0..2} weight[o,i,k] * x[b,i,t+k]`
  (cross-correlation, as PyTorch; @CONVRANGE@).
* ReLU `max(u, 0)`; its gradient at u = 0 is 0.
* maxpool1: `m[t] = max(r[t], r[t+1], r[t+2])`; maxpool2: `max_t r[t]`. Both
  send the gradient to the FIRST maximal position (PyTorch's tie rule).
* BatchNorm, eval mode: `y = (x - running_mean[c]) / sqrt(running_var[c] + 1e-5) * weight[c] + bias[c]`.
  Train mode: see `param_grads.safetensors`.
* Linear: `y = x @ weight.T + bias`, weight (out, in).
* softmax `p_j = exp(z_j - max z) / sum_k exp(z_k - max z)`.

Tensors: `conv1.weight` (8,1,3), `conv1.bias` (8), `conv2.weight` (8,8,3),
`conv2.bias` (8), `bn1.{weight,bias,running_mean,running_var}` (8),
`conv3.weight` (16,8,3), `conv3.bias` (16), `conv4.weight` (16,16,3),
`conv4.bias` (16), `bn2.*` (16), `fc1.weight` (64,16), `fc1.bias` (64),
`bn3.*` (64), `fc2.weight` (16,64), `fc2.bias` (16). There is no
`num_batches_tracked`. The 18 parameters (tensors with gradients, in PyTorch's
`named_parameters()` order) are `conv1.weight, conv1.bias, conv2.weight,
conv2.bias, bn1.weight, bn1.bias, conv3.weight, conv3.bias, conv4.weight,
conv4.bias, bn2.weight, bn2.bias, fc1.weight, fc1.bias, bn3.weight, bn3.bias,
fc2.weight, fc2.bias`; the six `bn*.running_*` are buffers.

The values are a random initialisation, not a trained model:
`torch.manual_seed(@SEED@)` and PyTorch's default conv/linear init; BN
`weight ~ U(0.75, 1.25)`, `bias ~ 0.1 N(0, 1)` from
`torch.Generator().manual_seed(@SEED7@)`; BN running statistics "calibrated":
the batch mean and the unbiased batch variance of 512 synthetic sinusoids
(`make_training_set(512, seed=@SEED5@)` in `torch_ref.py`), from one
train-mode forward in float64, rounded to float32. Without calibration the
random network barely reacts to its input.

## `waveforms.csv`, `labels.csv`

16 PQD-like waveforms, 640 float32 values each: 3200 Hz, 50 Hz, 10 cycles,
amplitude 1 p.u., one waveform per class of `docs/spec/pqd-signals.md`
(simplified generator `make_pqd_waveforms(seed)` in `torch_ref.py`, numpy
`default_rng(@SEED@)`, N(0, 0.01^2) noise on every waveform), then put in a
seeded random row order, so that the label of row r is line r of
`labels.csv` and not r. Labels by row: `@LABELS@`. Classes: 0 normal, 1 sag,
2 swell, 3 interruption, 4 impulsive transient, 5 oscillatory transient,
6 harmonics, 7 flicker, 8 notch, 9 spike, 10 sag+harmonics,
11 swell+harmonics, 12 interruption+harmonics, 13 flicker+harmonics,
14 flicker+sag, 15 flicker+swell. Every drawn parameter (phase, depth, event
times, ...) is in `manifest.json` under `waveforms.rows`. The model is
untrained, so the labels are only targets; the predicted classes mean nothing.

## b. `logits.csv`, `probs.csv` (16 × 16)

Eval mode (BN with the running statistics). `logits` = fc2 output z,
`probs = softmax(z)`. Computed as one batch of 16; computing the rows one at
a time changes them by at most @CHK_BATCH@.

## c. `input_grad.csv` (16 × 640)

`G[r, t] = d p_{y_r}(x_r) / d x_r[t]`, y_r = label r, eval mode, one waveform
at a time (batch 1), by autograd. Through the softmax,
`d p_y / d z = p_y (e_y - p)`; then back through the network with the
max-pool and ReLU rules above.

## d. `param_grads.safetensors`, `param_grads_eval.safetensors` (18 tensors each)

Loss over the 16 waveforms as ONE batch, mean cross-entropy on the logits
(`torch.nn.functional.cross_entropy`, reduction mean):
`L = (1/16) sum_r [ log sum_j exp z_rj - z_{r, y_r} ]`. The files hold `dL/dθ`
for the 18 parameters, same names and shapes as the parameters.

* `param_grads.safetensors`: TRAIN mode. Every BN normalises with the
  statistics of this batch: per channel c, `mu_c` and the BIASED variance
  `s2_c` over (batch, time) = 16 × @L3@ = @NBN1@ values for bn1 and over the
  batch (16 values) for bn2 and bn3; `y = (x - mu_c) / sqrt(s2_c + 1e-5) * weight[c] + bias[c]`,
  and the gradient flows through mu and s2 as well (standard BN backward:
  `dx = weight/sqrt(s2+eps) * (dy - mean(dy) - xhat * mean(dy * xhat))`).
  There is no dropout. Computed on a deep copy of the model, because the
  train-mode forward also updates the running statistics (see e).
  The loss value is `loss.csv` row `train`.
* `param_grads_eval.safetensors`: EVAL mode; every BN is the fixed affine map
  of its running statistics (`loss.csv` row `eval`).

## e. `adam_step.safetensors`, `adam_step2.safetensors`, `bn_running_after_step.safetensors`, `loss.csv`

`torch.optim.Adam(params, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-4)`
(amsgrad off), started from `model.safetensors`, on the train-mode loss of d.
One step, for every one of the 18 parameters (biases and BN affine included):

    g' = g + 1e-4 * θ                       (weight decay = L2 term added to the gradient, not AdamW)
    m_t = 0.9 * m_{t-1} + 0.1 * g'          (m_0 = 0)
    v_t = 0.999 * v_{t-1} + 0.001 * g'^2    (v_0 = 0)
    θ_t = θ_{t-1} - (lr / (1 - 0.9^t)) * m_t / (sqrt(v_t) / sqrt(1 - 0.999^t) + 1e-8)

`adam_step.safetensors` holds the 18 parameters after step t = 1. At t = 1
this is `θ - lr * g' / (|g'| + 1e-8)`, about `θ - 0.01 sign(g')`, so it mostly
tests the sign of every gradient and the weight-decay term;
`adam_step2.safetensors` (an extra, added for that reason) holds them
after a second step on the same 16 waveforms: a new train-mode forward with
the stepped parameters (its loss is `loss.csv` row `train_step2`), new
gradients (`param_grads_step2.safetensors`), t = 2 with the moments of step 1.
With `param_grads.safetensors` and `param_grads_step2.safetensors` an
optimizer can be checked on exactly torch's gradients (see the caveats).

`param_grads_zero_mask.safetensors` and `param_grads_step2_zero_mask.safetensors`
(same names and shapes as the parameters, F32 0/1): 1 where the train-mode
gradient of `param_grads.safetensors` (resp. `param_grads_step2.safetensors`,
at the parameters of `adam_step.safetensors`) is zero in exact arithmetic,
found by recomputing it in float64 with torch: `|g| <= 1e-9 * max |g|` over
the tensor. The float32 files hold rounding noise at some of these entries,
and Adam amplifies it (see the caveats), so leave them out of element-wise
comparisons or compare them with an absolute tolerance.

`bn_running_after_step.safetensors`: `bn{1,2,3}.running_mean` and
`.running_var` after the step-1 train-mode forward (the optimizer step does
not touch them): `running_mean <- 0.9 * running_mean + 0.1 * mu` and
`running_var <- 0.9 * running_var + 0.1 * s2 * n / (n - 1)` (momentum 0.1,
UNBIASED variance), n = @NBN1@ for bn1 and 16 for bn2, bn3.

`loss.csv`: header `mode,loss`, rows `train`, `eval`, `train_step2` (%.9g).

## f. `occlusion.csv` (16 × 640)

`captum.attr.Occlusion(model).attribute(x, sliding_window_shapes=(1, 60), strides=1, baselines=0, target=label, perturbations_per_eval=581)`
on the softmax probabilities, eval mode. Window s = 0..580 sets x[s..s+59] to 0;
`d_s = p_y(x) - p_y(x with window s zeroed)`;
`A[t] = (sum of d_s over the windows with s <= t <= s+59) / (their number)`,
the number being `min(t, 580) - max(0, t - 59) + 1`.

## g. `gradcam_raw.csv` (16 × @L4@)

`captum.attr.LayerGradCam(model, model.conv4).attribute(x, target=label, relu_attributions=False)`:
A = output of the conv4 MODULE, i.e. before its ReLU, shape (16, @L4@);
`alpha_c = (1/@L4@) sum_t d p_y / d A_c(t)`; `cam(t) = sum_c alpha_c A_c(t)`.
No ReLU and no interpolation. As maxpool2 is a global max,
`d p_y / d A_c(t)` is non-zero only at the first argmax t* of ReLU(A_c), and
only if `A_c(t*) > 0`, so `alpha_c` is that single value divided by @L4@.

## h. LIME: `lime_samples.csv`, `lime_ols.csv`, `lime_lasso.csv`, `lime_intercepts.csv`, `lime_*_captum.csv`

`lime_samples.csv` has the header `wave,sample,weight,output,m0,...,m39` and
16 × 128 = 2048 rows (wave 0..15, sample 0..127):
* `m0..m39`: the interpretable sample m in {0,1}^40, feature j = input
  samples 16j .. 16j+15. Drawn by Captum's `default_perturb_func`
  (Bernoulli(0.5) per feature, torch's RNG, `torch.manual_seed(@SEED@*1000 + wave)`
  before each waveform). The perturbed input is `x'[t] = x[t] * m[floor(t/16)]`
  (baseline 0).
* `weight`: Captum's default similarity
  `get_exp_kernel_similarity_function("cosine", kernel_width=1.0)`:
  `w = exp(-d^2 / (2 * 1.0^2))`, `d = 1 - cos(x, x')`,
  `cos = <x, x'> / (|x| |x'|)` over the 640 samples (torch
  `CosineSimilarity(dim=0)` in float32; 0 when m is all zeros). Captum
  computes d in float32, `math.exp` in double and stores w as float32; the
  column is exactly that float32 value.
* `output`: `p_y(x')`, eval mode, float32, from one forward of the 128
  perturbed inputs (`perturbations_per_eval=128`).

`weight` and `output` are float32 numbers written exactly (Python `repr` of
their float64 value). These three columns are exactly what Captum handed to
its surrogate fit
(refitting scikit-learn on them in float32 reproduces Captum's WLS
coefficients, max |diff| @CHK_SKL32@). To check a port's surrogate, read them
(as float64) and fit; do not resample.

`lime_ols.csv` (16 × 40, float64): weighted least squares with intercept,
`(c, b) = argmin sum_k w_k (out_k - b - sum_j c_j m_kj)^2`, solved in float64
with `numpy.linalg.lstsq` on the sqrt(w)-scaled system [M, 1], from the
columns of `lime_samples.csv` as float64. For every
waveform the 128 × 41 design has full rank 41, so the solution is unique; it
equals scikit-learn's `LinearRegression(fit_intercept=True).fit(M, out, sample_weight=w)`
in float64 to @CHK_OLS64@. Intercepts b: `lime_intercepts.csv` column `ols`.

`lime_lasso.csv` (16 × 40, float64): scikit-learn @SKLEARN@
`Lasso(alpha=1e-4, fit_intercept=True, tol=1e-12, max_iter=1000000)` (other
arguments default: precompute=False, positive=False, selection="cyclic")
`.fit(M, out, sample_weight=w)` on the same float64 arrays. Its objective (scikit-learn
rescales sample_weight to sum to the number of samples, which makes this
exact):
`(1 / (2 sum_k w_k)) sum_k w_k (out_k - b - m_k . c)^2 + 1e-4 * sum_j |c_j|`,
intercept b not penalised (`lime_intercepts.csv` column `lasso`). The
minimiser is unique here; `verify_golden.py` recomputes it independently
(coordinate descent, then the exact solve on the active set and a KKT
check). Non-zero coefficients per waveform: @LASSO_NNZ@. Captum's default
`SkLearnLasso(alpha=0.01)` returns all zeros on these small probability
differences, hence alpha = 1e-4.

`lime_ols_captum.csv`, `lime_lasso_captum.csv` (16 × 40, float32): what
Captum itself returned for the same samples,
`Lime(model, interpretable_model=SkLearnLinearRegression())` and
`SkLearnLasso(alpha=1e-4)`, `n_samples=128, perturbations_per_eval=128, return_input_shape=False`.
Captum fits on float32 arrays (so scikit-learn solves in float32) and its
Lasso keeps scikit-learn's defaults tol=1e-4, max_iter=1000, so these differ
from the float64 files (last section). Test a port against `lime_ols.csv`
and `lime_lasso.csv`; the `_captum` files show what Captum reports.

## i. `mcdropout_fold/`

One MC-dropout draw is a deterministic network. p = 0.2; the keep mask
m in {0,1}^64 on fc2's INPUT (the bn3 output h) is `mask.csv` (one line, 64
values, @KEPT@ kept), drawn as `torch.manual_seed(@SEED@*1000 + 777); torch.empty(1, 64).bernoulli_(0.8)`.
The network is in eval mode everywhere (BN running statistics) except that
fc2 sees `h * m / (1 - p)` (h * 1.25 where kept, 0 where dropped):
`z = fc2.weight @ (h * m / (1 - p)) + fc2.bias` -> `logits.csv`,
`probs.csv = softmax(z)` (16 × 16, one row per waveform, the same m for every
row). Equivalently `z = W' @ h + fc2.bias` with
`W'[:, j] = fc2.weight[:, j] * m_j / (1 - p)`: `fc2_folded.safetensors` holds
W' as `fc2.weight` (16, 64, float32) and `fc2.bias` (16). `logits.csv` is the
product h * m / (1 - p) computed for the 16 waveforms as one batch. Checks made
when the set was written: torch's own `nn.Dropout(0.2)` in train mode on fc2's
input (the same torch seed before each waveform, hence the same mask, one
waveform at a time) gives the same logits as that product computed one
waveform at a time, max |diff| @CHK_MC_MOD@; batch 16 against batch 1 differ by
@CHK_MC_BATCH@ (float32 summation order), and the folded weights change the
logits by @CHK_MC_FOLD@ (W * 1.25 is rounded to float32 when folded).

## Float64 re-derivation (`verify_golden.py`)

`verify_golden.py DIR` reads only this folder, recomputes every file in
float64 numpy (hand-written forward and backward, no torch, no Captum, no
scikit-learn) and compares. The largest absolute differences:

| reference | max abs diff | max abs value |
|---|---|---|
@VERIFY_TABLE@

## Tolerances and caveats

@CAVEATS@
"""


def _fmt(v):
    return "%.2g" % v if isinstance(v, float) else str(v)


def golden_readme(man):
    chk = man["checks"]
    ver = man.get("float64_check", {})
    lens = man["model"]["layer_lengths"]
    seed = man["seed"]
    vals = {
        "SEED": str(seed), "SEED7": str(seed + 7), "SEED5": str(seed + 5),
        "TORCH": man["versions"]["torch"], "CAPTUM": man["versions"]["captum"],
        "NUMPY": man["versions"]["numpy"], "SCIPY": man["versions"]["scipy"],
        "SKLEARN": man["versions"]["scikit-learn"], "PYTHON": man["versions"]["python"],
        "PADDING": man["model"]["padding"],
        "PADNUM": "0" if man["model"]["padding"] == "valid" else "1",
        "CONVKIND": ("valid convolutions" if man["model"]["padding"] == "valid"
                     else "but with padding 1, --padding same"),
        "CONVRANGE": ('"valid": t = 0 .. L_in-3, no padding' if man["model"]["padding"] == "valid"
                      else '"same": x is padded with one zero on each side, t = 0 .. L_in-1'),
        "L1": str(lens["conv1"]), "L2": str(lens["conv2"]), "L3": str(lens["maxpool1"]),
        "L4M": str(lens["conv3"]), "L4": str(lens["conv4"]),
        "NBN1": str(16 * lens["maxpool1"]),
        "LABELS": ",".join(str(v) for v in man["waveforms"]["labels"]),
        "CHK_BATCH": _fmt(chk["probs_batch16_vs_batch1_max_abs_diff"]),
        "CHK_SKL32": _fmt(chk["lime_captum_ols_vs_sklearn_float32_refit_max_abs_diff"]),
        "CHK_OLS64": _fmt(chk["lime_ols_lstsq_vs_sklearn_float64_max_abs_diff"]),
        "LASSO_NNZ": ", ".join(str(v) for v in chk["lime_lasso_nonzero_per_waveform"]),
        "KEPT": str(chk["mcdropout_kept_units"]),
        "CHK_MC_MOD": _fmt(chk["mcdropout_module_vs_manual_logits_max_abs_diff"]),
        "CHK_MC_BATCH": _fmt(chk["mcdropout_batch16_vs_batch1_logits_max_abs_diff"]),
        "CHK_MC_FOLD": _fmt(chk["mcdropout_folded_vs_manual_logits_max_abs_diff"]),
    }
    rows = []
    for k, v in ver.items():
        if isinstance(v, dict):
            extra = ""
            if "max_rel_diff_per_tensor" in v:
                extra = f" (largest relative, per tensor: {_fmt(v['max_rel_diff_per_tensor'])} in `{v['worst_tensor']}`)"
            rows.append(f"| `{k}` | {_fmt(v['max_abs_diff'])}{extra} | {_fmt(v['max_abs_ref'])} |")
        else:
            rows.append(f"| {k} | {_fmt(v) if isinstance(v, float) else v} | |")
    vals["VERIFY_TABLE"] = "\n".join(rows)
    vals["CAVEATS"] = golden_caveats(man)
    text = GOLDEN_README
    for k, v in vals.items():
        text = text.replace("@" + k + "@", v)
    import re
    left = re.findall(r"@[A-Z0-9_]+@", text)
    assert not left, left
    return text


def golden_caveats(man):
    v, c = man["float64_check"], man["checks"]

    def d(k):
        return _fmt(v[k]["max_abs_diff"])

    def r(k):
        return _fmt(v[k]["max_abs_ref"])

    rel32 = c["param_grads_float32_vs_float64_torch_max_rel_nonzero"]
    worst = max(rel32, key=rel32.get)
    rel32b = c["param_grads_step2_float32_vs_float64_torch_max_rel_nonzero"]
    worstb = max(rel32b, key=rel32b.get)
    zc = c["param_grads_zero_mask_counts"]
    zcs = ", ".join(f"{k} ({n})" for k, n in zc.items()) or "none"
    noisy = c["param_grads_zero_mask_nonzero_in_float32"]
    noisys = ", ".join(f"{k} ({n})" for k, n in noisy.items()) or "none"
    nz = sum(zc.values())
    a1 = "adam_step.safetensors"
    a2 = "adam_step2.safetensors"
    items = [
        f"""* Every difference in the table is float32 rounding in torch (the numpy side is
  float64 on the same float32 weights and inputs). Forward: {d("logits.csv")} on logits
  (values up to {r("logits.csv")}), {d("probs.csv")} on probabilities; occlusion
  {d("occlusion.csv")} (values up to {r("occlusion.csv")}); raw Grad-CAM
  {d("gradcam_raw.csv")} (up to {r("gradcam_raw.csv")}); input gradients
  {d("input_grad.csv")} (up to {r("input_grad.csv")}). A float32 port should
  stay within about ten times these. The set was made with one thread; other
  thread counts change the float32 results by about 1e-8.""",
        """* `input_grad.csv` is mostly exact zeros: the global max pool passes gradient
  to one conv4 position per channel, so only the 11-sample receptive fields of
  those 16 positions get a gradient.""",
        f"""* Train-mode parameter gradients are the least precise reference. Leaving out
  the zero-mask entries (next point), float32 torch differs from float64 torch
  by up to {_fmt(rel32[worst])} of a tensor's largest |value| (`{worst}`) at
  step 1 and {_fmt(rel32b[worstb])} (`{worstb}`) at step 2, while the float64
  numpy re-derivation agrees with float64 torch to
  {_fmt(c["param_grads_float64_numpy_vs_float64_torch_max_rel"])} (relative). Some
  bn2/bn3 channels have tiny batch variances (BN divides by sqrt(var + 1e-5)),
  which amplifies rounding. Compare per tensor with an absolute tolerance
  scaled by the tensor's largest |value| (about ten times the figures above),
  not element-wise relative. Eval-mode gradients are much tighter
  ({d("param_grads_eval.safetensors")} for values up to
  {r("param_grads_eval.safetensors")}).""",
        f"""* Exact zeros: `param_grads_zero_mask.safetensors` marks the {nz} entries
  whose train-mode gradient is 0 in exact arithmetic: {zcs}. Most belong to dead
  ReLU units and are exact zeros in the float32 file too. The others, {noisys},
  are biases that shift a channel before a train-mode BN through ReLUs that are
  active wherever it matters: BN subtracts the batch mean, so the loss does not
  depend on them, and the float32 file holds rounding noise there (up to
  {_fmt(c["param_grads_zero_mask_max_abs_float32"])}; at step 2 up to
  {_fmt(c["param_grads_step2_zero_mask_max_abs_float32"])}). A float32 port holds
  its own noise there.""",
        f"""* Adam divides every entry by its own magnitude, so that noise is amplified:
  the update of such an entry is about -lr * sign(noise + 1e-4 * theta), and it
  moves by 2 lr = 0.02 when the noise flips that sign. Step 1:
  {d(a1)} from the independent float64 gradients,
  {d(a1 + ", zero-mask entries left out")} with the zero-mask entries left out,
  {d(a1 + " (update formula on the stored grads)")} with the update applied to
  the stored gradients. Step 2, started from torch's step 1 (`adam_step` and the
  moments of `param_grads`) with float64 step-2 gradients:
  {d(a2 + " from adam_step + param_grads, own step-2 grads")}, or
  {d(a2 + ", same, zero-mask entries (either step) left out")} leaving out the
  zero-mask entries of either step; on the stored gradients
  {d(a2 + " (update formula on the stored grads)")}; the fully independent
  two-step chain {d(a2 + ", fully independent chain")} (one flipped sign at step 1
  changes the step-2 gradients everywhere). So check an optimizer on the stored
  gradients, check a float32 train step outside the zero masks, and start a
  second step from `adam_step.safetensors`, not from the port's own first
  step.""",
        f"""* BN running statistics: {d("bn_running_after_step.safetensors")} (values up to
  {r("bn_running_after_step.safetensors")}); the loss values agree to
  {d("loss.csv train")} (train) and {d("loss.csv eval")} (eval).""",
        f"""* LIME: the kernel weights recomputed in float64 from the waveform and the
  mask differ from the stored float32 ones by {d("lime_samples.csv weight")}, the
  model outputs by {d("lime_samples.csv output")}. Fitted on those recomputed
  float64 values instead of the stored columns, the coefficients (up to
  {r("lime_ols.csv")}) move by {d("lime_ols.csv from recomputed weights/outputs")} (WLS) and
  {d("lime_lasso.csv from recomputed weights/outputs")} (Lasso): the tolerance for a
  port that computes its own samples. Fitted on the stored columns, float64 WLS
  reproduces `lime_ols.csv` to {d("lime_ols.csv")} and the independent Lasso
  solver reproduces `lime_lasso.csv` to {d("lime_lasso.csv")} (KKT residual
  {_fmt(v["lime_lasso_kkt_residual_max"])}; same supports:
  {v["lime_lasso_support_matches_file"]}). Captum's own fits differ from the
  float64 ones by {d("lime_ols_captum.csv (float32 Captum fit)")} (WLS, float32
  lstsq) and {d("lime_lasso_captum.csv (float32, tol 1e-4)")} (Lasso, float32,
  tol 1e-4): a Lasso that stops at scikit-learn's default tolerance is only
  that close to the minimiser.""",
        f"""* MC dropout: the folded network reproduces `mcdropout_fold/probs.csv` to
  {d("mcdropout_fold/probs.csv via fc2_folded")}; the mask is the same for every row.""",
    ]
    return "\n".join(items)


# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# golden3: the three-channel golden set (see DIR/README.md, written below)

THREE_PHASE_KINDS = [
    "normal", "sag_a", "sag_b", "swell_c", "interruption_a",
    "harmonics_abc", "transient_b", "sag_ab",
]
GOLDEN3_WINDOWS = (60, 5)


def make_three_phase(n, seed):
    """n three-phase records (n, 3, 640) float32, channel k the phase
    sin(w t + phi - 2 pi k / 3) at 64 samples a cycle, with the event of
    kind i % 8 of THREE_PHASE_KINDS (row i), plus N(0, 0.01^2) noise.  All
    randomness from numpy.random.default_rng(seed), row by row.  Returns
    the records, the kinds (int64) and the drawn parameters."""
    rng = np.random.default_rng(seed)
    t = np.arange(LENGTH, dtype=np.float64)
    wt = 2.0 * np.pi * t / 64.0
    rows, kinds, params = [], [], []
    for i in range(n):
        k = i % len(THREE_PHASE_KINDS)
        phi = rng.uniform(-np.pi, np.pi)
        x = np.stack([np.sin(wt + phi - 2.0 * np.pi * c / 3.0) for c in range(3)])
        t1 = int(rng.integers(64, 384))
        t2 = t1 + int(rng.integers(128, 256))
        a = rng.uniform(0.3, 0.8)
        p = {"kind": THREE_PHASE_KINDS[k], "phi": phi, "t1": t1, "t2": t2, "a": a}
        u = ((t >= t1) & (t < t2)).astype(np.float64)
        if k in (1, 2):
            x[k - 1] *= 1.0 - a * u
        elif k == 3:
            x[2] *= 1.0 + a * u
        elif k == 4:
            x[0] *= 1.0 - u
        elif k == 5:
            for c in range(3):
                ph = wt + phi - 2.0 * np.pi * c / 3.0
                x[c] += 0.5 * a * np.sin(5.0 * ph) + 0.3 * a * np.sin(7.0 * ph)
        elif k == 6:
            g = np.where(t >= t1, np.exp(-np.maximum(t - t1, 0) / 8.0), 0.0)
            x[1] += 2.0 * a * g
        elif k == 7:
            x[0] *= 1.0 - a * u
            x[1] *= 1.0 - a * u
        x += rng.normal(0.0, 0.01, x.shape)
        rows.append(x)
        kinds.append(k)
        params.append(p)
    return np.stack(rows).astype(np.float32), np.array(kinds, dtype=np.int64), params


GOLDEN3_README = """# Golden set `paper-1dcnn-3ch`, seed @SEED@

Reference values for the paper's 1-D CNN with three input channels and its
explainers, from PyTorch @TORCH@ + Captum @CAPTUM@ (numpy @NUMPY@, Python
@PYTHON@), written by

    PYTHONPATH=<captum v0.8.0 work tree> /usr/bin/python3 testdata/peers/torch_ref.py golden3 --seed @SEED@ --out DIR --threads 1

(`torch_ref.py` is the peers harness; its header documents the network). One
CPU thread, float32 model and inputs, padding `valid`, eval mode.

## Files

| file | content |
|---|---|
| `model.safetensors` | the float32 model, PyTorch `state_dict` names; `conv1.weight` is (8, 3, 3) |
| `maps.safetensors` | the inputs and Captum's maps, F32 tensors (below) |
| `targets.csv` | one line a record: the class y_r explained, the argmax of the record's probabilities |
| `probs.csv` | 8 x 16: eval-mode softmax, `%.9g` |
| `manifest.json` | versions, the drawn record parameters, checks |

`maps.safetensors` (the layout of the golden `paper-1dcnn` folder's
safetensors files; tensors in record order r = 0..7):

| tensor | shape | content |
|---|---|---|
| `waveforms` | (8, 3, 640) | x_r: the records, channel-major (flat index c*640 + t) |
| `input_grad` | (8, 3, 640) | Captum `Saliency(abs=False)`: d p_y(x) / d x[c, t] |
| `gradcam_raw` | (8, 1, 630) | Captum `LayerGradCam(model, model.conv4)`, `relu_attributions=False`, no interpolation |
| `occlusion_each_w60`, `occlusion_each_w5` | (8, 3, 640) | Captum `Occlusion`, `sliding_window_shapes=(1, w)`, `strides=(1, 1)`, `baselines=0` |
| `occlusion_all_w60`, `occlusion_all_w5` | (8, 3, 640) | the same with `sliding_window_shapes=(3, w)` |

## Records

Record r has the event `kinds[r]` of manifest.json (r = 0..7: normal, sag
on channel a, sag on b, swell on c, interruption of a, 5th and 7th
harmonics on all three, a transient on b, sag on a and b), on the phases
x[c, t] = sin(2 pi t / 64 + phi - 2 pi c / 3), c = 0, 1, 2 (64 samples a
cycle, 10 cycles), plus N(0, 0.01^2) noise; the event spans samples
t1 <= t < t2 (manifest `params`), depth or height a.

## Formulas

p_y(x) is the softmax probability of class y = y_r of the network (the
paper's Table 4 with `conv1` = Conv1d(3 -> 8, k=3): u[o, t] = b[o] +
sum_{c=0..2} sum_{k=0..2} w[o, c, k] x[c, t + k]).

* `input_grad[r, c, t]` = d p_y(x_r) / d x_r[c, t] (the gradient routed
  to the first maximum of the global max pool).
* `gradcam_raw[r, 0, t]` = sum_k alpha_k A_k[t], A = conv4's output before
  its ReLU, (16, 630), alpha_k = (1/630) sum_t d p_y / d A_k[t]. One time
  map shared by the three channels (a Grad-CAM map for C channels is this
  map, interpolated to 640 samples, in every channel's row).
* `occlusion_each_w{w}[r, c, t]` = (1 / |W_t|) sum_{s in W_t} (p_y(x_r) -
  p_y(x_r with x[c, s..s+w-1] = 0)), W_t = {s : 0 <= s <= 640 - w,
  s <= t < s + w}: each channel's windows occlude that channel alone.
* `occlusion_all_w{w}[r, c, t]` = (1 / |W_t|) sum_{s in W_t} (p_y(x_r) -
  p_y(x_r with x[0..2, s..s+w-1] = 0)): the same for every c (manifest
  check `all_w{w}_channel_spread` = max |map[c] - map[0]| = 0).

Window 5 is narrower than the receptive field of conv4 (11 samples), window
60 wider, so the two exercise both of sdk/nn's incremental paths.
"""


def golden3_readme(man):
    s = GOLDEN3_README
    for k, v in (("SEED", man["seed"]), ("TORCH", man["torch"]), ("CAPTUM", man["captum"]),
                 ("NUMPY", man["numpy"]), ("PYTHON", man["python"])):
        s = s.replace(f"@{k}@", str(v))
    return s


def cmd_golden3(args):
    import platform
    from captum.attr import LayerGradCam, Occlusion, Saliency
    C = _captum()
    if torch.get_num_threads() != 1:
        print(f"# warning: golden3 runs with {torch.get_num_threads()} threads; "
              "the published set uses --threads 1", file=sys.stderr)
    out, seed = args.out, args.seed
    os.makedirs(out, exist_ok=True)
    model0 = build_model(seed, bn_init="calibrated", in_channels=3)
    meta = {"what": "model", "seed": seed, "padding": "valid", "bn_init": "calibrated",
            "in_channels": 3, "torch": torch.__version__}
    st_path = os.path.join(out, "model.safetensors")
    write_safetensors(st_path, model_tensors(model0), meta)
    loaded, _ = read_safetensors(st_path)
    model = load_model_tensors(loaded, in_channels=3)
    model.eval()
    for name, v in model.state_dict().items():
        assert torch.equal(v, model0.state_dict()[name]), name

    wav, kinds, params = make_three_phase(8, seed)
    n = wav.shape[0]
    x = torch.from_numpy(wav)
    with torch.inference_mode():
        probs0 = model(x)
    # targets: the class the network ranks highest for each record, so the
    # maps explain a probability that is not tiny
    targets = [int(v) for v in probs0.argmax(dim=1)]
    with open(os.path.join(out, "targets.csv"), "w") as f:
        f.write("".join(f"{v}\n" for v in targets))
    write_csv(os.path.join(out, "probs.csv"), probs0.numpy())

    tg = torch.tensor(targets)
    sal = Saliency(model).attribute(x.clone(), target=tg, abs=False).detach()
    cam = LayerGradCam(model, model.conv4).attribute(x.clone(), target=tg,
                                                     relu_attributions=False).detach()
    occ = Occlusion(model)
    tensors = {"waveforms": wav, "input_grad": sal.numpy(), "gradcam_raw": cam.numpy()}
    for w in GOLDEN3_WINDOWS:
        with torch.no_grad():
            each = occ.attribute(x.clone(), sliding_window_shapes=(1, w), strides=(1, 1),
                                 baselines=0, target=tg, perturbations_per_eval=64)
            allc = occ.attribute(x.clone(), sliding_window_shapes=(3, w), strides=(1, 1),
                                 baselines=0, target=tg, perturbations_per_eval=64)
        tensors[f"occlusion_each_w{w}"] = each.numpy()
        tensors[f"occlusion_all_w{w}"] = allc.numpy()
    meta = {"what": "inputs and Captum maps", "seed": seed, "torch": torch.__version__,
            "captum": C["version"]}
    write_safetensors(os.path.join(out, "maps.safetensors"), tensors, meta)
    checks = {}
    # the "all" map is the same for the three channels (one window covers them)
    for w in GOLDEN3_WINDOWS:
        a = tensors[f"occlusion_all_w{w}"]
        checks[f"all_w{w}_channel_spread"] = float(np.abs(a - a[:, :1]).max())
    manifest = {"seed": seed, "torch": torch.__version__, "captum": C["version"],
                "numpy": np.__version__, "python": platform.python_version(),
                "threads": torch.get_num_threads(), "n": n, "kinds": [THREE_PHASE_KINDS[k] for k in kinds],
                "targets": targets, "windows": list(GOLDEN3_WINDOWS), "params": params, "checks": checks}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True, default=float)
        f.write("\n")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(golden3_readme(manifest))
    print(json.dumps({"golden3": out, "seed": seed, **checks}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("--threads", type=int, default=None,
                       help="torch.set_num_threads (and OMP/OpenBLAS/MKL env), default: leave as is")
        p.add_argument("--target", type=int, default=0)
        p.add_argument("--padding", choices=list(PADDINGS), default="valid",
                       help="conv padding: valid (paper, 640->630 before the global max; "
                            "default) or same (640->638)")

    def model_opts(p):
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--dropout", type=float, default=0.0,
                       help="dropout on fc2's input, after bn3 (0 = off; 0.2 for MC-dropout)")
        p.add_argument("--bn-init", choices=["calibrated", "random", "default"], default="calibrated")

    b = sub.add_parser("bench", help="time the explainers")
    common(b)
    model_opts(b)
    b.add_argument("--n", type=int, default=20, help="number of waveforms")
    b.add_argument("--ops", default="occlusion_captum,occlusion_torch,gradcam,lime,train,mc_dropout")
    b.add_argument("--ppe", default="1,64,581", help="Captum occlusion perturbations_per_eval list")
    b.add_argument("--occ-chunks", default="0,64",
                   help="hand-batched occlusion forward sizes: 0 = one forward of 582")
    b.add_argument("--lime-ppe", default="1,128", help="Captum Lime perturbations_per_eval list")
    b.add_argument("--lime-models", default="linreg,lasso")
    b.add_argument("--epochs", type=int, default=1)
    b.add_argument("--mc-samples", type=int, default=30)
    b.add_argument("--budget", type=float, default=120.0,
                   help="stop an op after this many seconds (n reports how many were done)")

    e = sub.add_parser("export", help="write weights, waveforms and reference attributions")
    common(e)
    model_opts(e)
    e.add_argument("--n", type=int, default=20)
    e.add_argument("--out-dir", default="ref_out")

    x = sub.add_parser("explain", help="occlusion + Grad-CAM from safetensors + CSV")
    common(x)
    x.add_argument("--weights", required=True)
    x.add_argument("--waveforms", required=True, help="CSV, one waveform (640 values) per line")
    x.add_argument("--out-dir", default="explain_out")
    x.add_argument("--occlusion-impl", choices=["captum", "torch"], default="captum")
    x.add_argument("--ppe", type=int, default=581)

    oc = sub.add_parser("occlusion", help="occlusion maps of a CSV of waveforms, torch only, as CSV")
    common(oc)
    oc.add_argument("--weights", required=True, help="safetensors, PyTorch state_dict names")
    oc.add_argument("--waveforms", required=True, help="CSV, one waveform (640 values) per line")
    oc.add_argument("--targets", default="0",
                    help="a class for every waveform, or a file of one class a line")
    oc.add_argument("--window", type=int, default=WINDOW)
    oc.add_argument("--batch", type=int, default=64,
                    help="occluded copies a forward; 0 = the input and all its copies in one forward")
    oc.add_argument("--out", required=True, help="output CSV, one map (640 values, %%.9g) a line")

    gd = sub.add_parser("golden", help="write a golden reference set (see DIR/README.md)")
    gd.add_argument("--threads", type=int, default=None,
                    help="torch.set_num_threads (and OMP/OpenBLAS/MKL env); the published sets use 1")
    gd.add_argument("--padding", choices=list(PADDINGS), default="valid")
    gd.add_argument("--seed", type=int, required=True)
    gd.add_argument("--out", required=True, help="output folder")
    gd.add_argument("--bn-init", choices=["calibrated", "random", "default"], default="calibrated")

    g3 = sub.add_parser("golden3", help="write the three-channel golden set (see DIR/README.md)")
    g3.add_argument("--threads", type=int, default=None,
                    help="torch.set_num_threads (and OMP/OpenBLAS/MKL env); the published set uses 1")
    g3.add_argument("--seed", type=int, required=True)
    g3.add_argument("--out", required=True, help="output folder")

    args = ap.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    {"bench": cmd_bench, "export": cmd_export, "explain": cmd_explain,
     "occlusion": cmd_occlusion, "golden": cmd_golden,
     "golden3": cmd_golden3}[args.cmd](args)


# ---------------------------------------------------------------------------
# golden_lime3: LIME on three channels (issue 22), testdata/golden/lime-3ch
#
#   PYTHONPATH=<captum v0.8.0 work tree> /usr/bin/python3 torch_ref.py golden_lime3 \
#       --seed 23 --out DIR --threads 1
#
# The paper's network with conv1 = Conv1d(3, 8, 3); three inputs of three
# channels of 640 samples; Captum's Lime with a feature_mask (1, 3, 640)
# giving segment k of channel c the id c*K + k (K = 640 / LIME3_WIDTH),
# recorded samples, outputs and weights, and the float64 OLS and lasso fits
# of those samples.  DIR/README.md holds the formulas.

LIME3_C = 3
LIME3_WIDTH = 32
LIME3_INPUTS = 3
LIME3_SAMPLES = 160


def build_model3(seed):
    """The paper's network on LIME3_C channels: torch.manual_seed(seed),
    WaveNet() as build_model draws it, then conv1 replaced by
    Conv1d(LIME3_C, 8, 3) drawn next from the same generator; BN affine and
    running statistics as build_model's "calibrated", the calibration batch
    being make_training_set(512 * LIME3_C, seed + 5) reshaped to
    (512, LIME3_C, 640) (row r's channel c is waveform r * LIME3_C + c)."""
    torch.manual_seed(seed)
    model = WaveNet()
    model.conv1 = nn.Conv1d(LIME3_C, 8, kernel_size=3, stride=1, padding=0)
    g = torch.Generator().manual_seed(seed + 7)
    with torch.no_grad():
        for bn in (model.bn1, model.bn2, model.bn3):
            c = bn.num_features
            bn.weight.copy_(0.75 + 0.5 * torch.rand(c, generator=g))
            bn.bias.copy_(0.1 * torch.randn(c, generator=g))
    xc, _ = make_training_set(CALIB_N * LIME3_C, seed + 5)
    xc = torch.from_numpy(xc).view(CALIB_N, LIME3_C, LENGTH).double()
    calib = copy.deepcopy(model).double()
    for bn in (calib.bn1, calib.bn2, calib.bn3):
        bn.reset_running_stats()
        bn.momentum = None
    calib.train()
    calib.dropout.eval()
    with torch.no_grad():
        calib.logits(xc)
        for name in ("bn1", "bn2", "bn3"):
            src, dst = getattr(calib, name), getattr(model, name)
            dst.running_mean.copy_(src.running_mean.float())
            dst.running_var.copy_(src.running_var.float())
    model.eval()
    return model


def cmd_golden_lime3(argv):
    import warnings
    from sklearn.linear_model import Lasso
    ap = argparse.ArgumentParser(prog="torch_ref.py golden_lime3")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    C = _captum()
    from captum.attr._core.lime import get_exp_kernel_similarity_function
    out = args.out
    os.makedirs(out, exist_ok=True)
    seed = args.seed
    model = build_model3(seed)
    write_safetensors(os.path.join(out, "model.safetensors"), model_tensors(model),
                      {"what": "paper network, 3 input channels", "seed": seed, "torch": torch.__version__})
    wav, labels, _ = make_pqd_waveforms(seed)
    x_all = torch.from_numpy(wav[:LIME3_INPUTS * LIME3_C].reshape(LIME3_INPUTS, LIME3_C, LENGTH).copy())
    tg = [int(labels[i * LIME3_C]) for i in range(LIME3_INPUTS)]
    write_csv(os.path.join(out, "waveforms.csv"), x_all.reshape(LIME3_INPUTS, -1).numpy())
    with open(os.path.join(out, "labels.csv"), "w") as f:
        f.writelines(f"{v}\n" for v in tg)
    K = LENGTH // LIME3_WIDTH
    F_ = LIME3_C * K
    fm = (torch.arange(LIME3_C).view(LIME3_C, 1) * K
          + (torch.arange(LENGTH) // LIME3_WIDTH).view(1, LENGTH)).view(1, LIME3_C, LENGTH)
    dpf = C["default_perturb_func"]
    base_sim = get_exp_kernel_similarity_function("cosine", 1.0)
    rows, ols64, lasso64, icpt, ols_c = [], [], [], [], []
    with torch.no_grad():
        probs = model(x_all).numpy()
    for i in range(LIME3_INPUTS):
        x = x_all[i:i + 1]
        rec = {"mask": [], "sim": [], "out": []}

        def perturb(original_inp, **kw):
            s = dpf(original_inp, **kw)
            rec["mask"].append(s.detach().clone())
            return s

        def sim(orig, pert, interp, **kw):
            v = base_sim(orig, pert, interp, **kw)
            rec["sim"].append(v)
            return v

        def fwd(inp):
            o = model(inp)
            rec["out"].append(o.detach().clone())
            return o

        lime = C["Lime"](fwd, interpretable_model=C["SkLearnLinearRegression"](),
                         similarity_func=sim, perturb_func=perturb)
        torch.manual_seed(seed * 1000 + i)
        coef = lime.attribute(x, baselines=0, target=tg[i], feature_mask=fm, n_samples=LIME3_SAMPLES,
                              perturbations_per_eval=LIME3_SAMPLES, return_input_shape=False)
        M = torch.cat(rec["mask"]).numpy().astype(np.int64)
        assert M.shape == (LIME3_SAMPLES, F_), M.shape
        wts = np.array([np.float32(v) for v in rec["sim"]], dtype=np.float32)
        ys = torch.cat(rec["out"])[:, tg[i]].numpy().astype(np.float32)
        ols_c.append(coef.detach().reshape(-1).numpy())
        X, y, w = M.astype(np.float64), ys.astype(np.float64), wts.astype(np.float64)
        A = np.hstack([X, np.ones((LIME3_SAMPLES, 1))])
        sw = np.sqrt(w)
        sol, _, rank, _ = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)
        assert rank == F_ + 1, f"LIME design of input {i} has rank {rank}"
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            las = Lasso(alpha=GOLDEN_LASSO_ALPHA, fit_intercept=True, tol=GOLDEN_LASSO_TOL,
                        max_iter=GOLDEN_LASSO_MAX_ITER).fit(X, y, sample_weight=w)
        ols64.append(sol[:-1])
        lasso64.append(las.coef_.copy())
        icpt.append((float(sol[-1]), float(las.intercept_)))
        for k in range(LIME3_SAMPLES):
            rows.append(f"{i},{k},{float(wts[k])!r},{float(ys[k])!r}," + ",".join(str(int(v)) for v in M[k]))
    with open(os.path.join(out, "lime_samples.csv"), "w") as f:
        f.write("input,sample,weight,output," + ",".join(f"m{j}" for j in range(F_)) + "\n")
        f.write("\n".join(rows) + "\n")
    with open(os.path.join(out, "lime_ols.csv"), "w") as f:
        f.writelines(",".join(repr(float(v)) for v in r) + "\n" for r in ols64)
    with open(os.path.join(out, "lime_lasso.csv"), "w") as f:
        f.writelines(",".join(repr(float(v)) for v in r) + "\n" for r in lasso64)
    with open(os.path.join(out, "lime_intercepts.csv"), "w") as f:
        f.write("ols,lasso\n")
        f.writelines(f"{a!r},{b!r}\n" for a, b in icpt)
    write_csv(os.path.join(out, "lime_ols_captum.csv"), np.stack(ols_c))
    write_csv(os.path.join(out, "probs.csv"), probs)
    print(json.dumps({"ols_captum_vs_float64_max_abs_diff": float(np.abs(np.stack(ols_c) - np.stack(ols64)).max()),
                      "ols_max_abs": float(np.abs(np.stack(ols64)).max()),
                      "lasso_nonzero": [int((np.abs(c) > 0).sum()) for c in lasso64],
                      "targets": tg}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["golden_lime3"]:
        cmd_golden_lime3(sys.argv[2:])
    else:
        main()
