"""uaxai_plugin.torchmodel: the model service (service Model of the
protocol) over PyTorch modules, so that every explainer, Go's or
Python's, computes with a user's own networks.

The host serves its sdk/nn networks itself (Go's sdk/driver.ModelService);
this module is the same service for torch.nn.Module draws, with the same
checks, bounds and error messages. A posterior plugin that holds torch
draws serves them so:

    from uaxai_plugin.torchmodel import ModelServer, TorchDraw, load_module, load_state_dict

    srv = ModelServer(threads=1)
    for path in weights:
        m = load_module("net.py:Net", {"cin": 1})     # or any nn.Module
        m.load_state_dict(load_state_dict(path))       # safetensors or .pt
        handle = srv.add(TorchDraw(m, in_channels=1, in_len=640, output="probs"))
    address = srv.start()            # a unix socket in a new private directory
    ...                              # hand (address, handle) to the host
    srv.close()

A draw (TorchDraw) is a module in eval mode, float32, that maps a batch
(B, in_channels, in_len) to (B, classes): the softmax (output="probs") or
the logits (output="logits", then the server applies the softmax). It
must be a deterministic function of its input whose batch items do not
interact (eval-mode BatchNorm does not mix them); for MC dropout,
uaxai_plugin.mcdropout.fixed makes a copy of the module a draw, its
masks fixed, and check that it is one network in every method. The
methods, for a draw:

* Describe: arch_json an nn.Arch with the draw's name, in_channels and
  in_len and no layers (the model is known by its shape only),
  input_len = in_channels * in_len, classes, pooled_len 0, and layers:
  the layers a Layer request may name, with their per-input output
  shapes. They are the module paths (named_modules: "block3",
  "inc3.convs.2") whose output, in one forward pass, is a tensor (B, C,
  L), called exactly once; a recurrent layer (nn.LSTM, nn.GRU, nn.RNN)
  contributes its output sequence as (hidden, steps).
* Probs: the probabilities, in no_grad forward passes of at most `chunk`
  inputs.
* InputGrad: d p_target / d x by autograd, and the probabilities.
* Layer: the layer's output A (a forward hook) and d p_target / d A.
* Windows: occlusion's inner loop; the occluded copies are built in
  torch and run in batched forward passes of at most `chunk` copies. A
  window replaces samples [s, s + width) of every channel (or of the
  request's `channel` alone) by the constant baseline or by the same
  samples of baseline_x. unperturbed is p_target(x) by a forward pass of
  x.
* Spans: the probabilities of copies of one input with sets of spans set
  to the baseline (every channel, or each span's channel when `channels`
  is given), in batched forward passes.

A request is checked whole before any computation, with Go's bounds
(sdk/internal/proto: MAX_SERVICE_*), and a bad one is INVALID_ARGUMENT
(NOT_FOUND for an unknown handle) with a message that says what would be
accepted; an output of the module that is not finite is INVALID_ARGUMENT
too, naming the input. The server computes one request at a time, with
torch.set_num_threads(threads) threads.

Run as a program, it serves modules loaded from files until its standard
input ends (see main):

    /usr/bin/python3 -m uaxai_plugin.torchmodel --module archs.py:ResNet1D \\
        --weights model.safetensors --in-channels 1 --in-len 640

It prints one JSON line {"address": ..., "handles": [...]} when it serves.
With --mc-dropout-seeds 11 12 13 and one weights file it serves one
MC-dropout draw of that network a seed instead (uaxai explain and predict
--mc-dropout S).
"""

import argparse
import importlib.util
import json
import math
import os
import secrets
import shutil
import struct
import sys
import tempfile
import threading
from concurrent import futures

import grpc
import numpy as np

try:
    import torch
except ImportError as _e:
    raise ImportError("uaxai_plugin.torchmodel needs PyTorch, which the interpreter %s lacks (%s); on Debian: "
                      "apt-get install python3-torch, and run with /usr/bin/python3" % (sys.executable, _e)) from None

from . import wire
from .errors import Error
from ._pb import plugin_pb2, plugin_pb2_grpc
from .model import (
    MAX_SERVICE_INPUTS,
    MAX_SERVICE_PAIRS,
    MAX_SERVICE_PERTURBATIONS,
    MAX_SERVICE_STARTS,
    MAX_SERVICE_VALUES,
    MAX_SERVICE_WINDOWS,
)

# The rest of Go's bounds (sdk/internal/proto, service.go).
MAX_SERVICE_LAYER_NAME = 256
MAX_SERVICE_MESSAGE = 2 * 4 * MAX_SERVICE_VALUES + (8 << 20)

# DEFAULT_CHUNK is the most inputs (or occluded copies) of one forward pass.
DEFAULT_CHUNK = 128

# The longest unix socket path Linux binds.
_MAX_SOCKET_PATH = 107

_RECURRENT = (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN)

# PENULTIMATE is the layer name of a model's penultimate features: the
# input of the last torch.nn.Linear of a forward pass whose output is the
# class scores (the host's out-of-distribution check reads them; Go's
# nn.PenultimateLayer). Its shape is (features, 1).
PENULTIMATE = "@penultimate"


class InvalidRequest(ValueError):
    """A request the service refuses: code and a message saying what
    would be accepted."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def _invalid(fmt, *args):
    return InvalidRequest(grpc.StatusCode.INVALID_ARGUMENT, fmt % args if args else fmt)


def max_service_batch(n):
    """The most inputs of n values one request may carry (Go's
    proto.MaxServiceBatch)."""
    return min(MAX_SERVICE_INPUTS, MAX_SERVICE_VALUES // n)


def _pos_int(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError("%s is %r, want an integer >= 1" % (name, v))
    return int(v)


class TorchDraw:
    """One draw: a torch module mapping (B, in_channels, in_len) float32
    inputs to (B, classes) probabilities (output="probs") or logits
    (output="logits"). The constructor puts the module in eval mode and
    float32, runs one forward pass of two zero inputs to learn the classes
    and the layers (see the module's doc), and checks that a "probs"
    module gives probabilities (non-negative rows summing to 1 within
    1e-3): a module that returns logits needs output="logits".

    device ("cpu", "cuda", "cuda:1", ...) is where the module computes
    (it is moved there); requests and answers stay on the CPU.

    Attributes: module, name, in_channels, in_len, input_len, classes,
    output, device, layers (a dict: module path -> (channels, length))."""

    def __init__(self, module, in_channels, in_len, output="probs", name=None, device="cpu"):
        if not isinstance(module, torch.nn.Module):
            raise ValueError("module is a %s, want a torch.nn.Module" % type(module).__name__)
        self.in_channels = _pos_int("in_channels", in_channels)
        self.in_len = _pos_int("in_len", in_len)
        if output not in ("probs", "logits"):
            raise ValueError("output is %r, want \"probs\" (the module returns the softmax) or \"logits\"" % (output,))
        self.output = output
        self.input_len = self.in_channels * self.in_len
        # The module computes on device; inputs go there in _forward and
        # every answer comes back to the CPU.
        self.device = torch.device(device)
        self.module = module.float().eval().to(self.device)
        self.name = name or type(module).__name__
        self.layers = {}
        self.classes = 0
        calls, shapes, hooks, linears = {}, {}, [], []
        mods = dict(module.named_modules())
        for path, sub in mods.items():
            if not path:
                continue

            def hook(mod, inp, out, path=path):
                calls[path] = calls.get(path, 0) + 1
                a = _layer_output(mod, out)
                shapes[path] = None if a is None else tuple(_as_channels_by_length(mod, a).shape)
                if isinstance(mod, torch.nn.Linear) and inp and isinstance(inp[0], torch.Tensor):
                    linears.append((path, tuple(inp[0].shape), tuple(out.shape) if isinstance(out, torch.Tensor) else None))

            hooks.append(sub.register_forward_hook(hook))
        try:
            with torch.no_grad():
                p = self._forward(torch.zeros(2, self.in_channels, self.in_len), "the first forward pass (two zero inputs)")
        finally:
            for h in hooks:
                h.remove()
        self.classes = int(p.shape[1])
        if output == "probs":
            s = p.sum(dim=1)
            if bool((p < 0).any()) or not bool(torch.allclose(s, torch.ones_like(s), atol=1e-3)):
                raise ValueError("module %s: output \"probs\", but its output rows sum to %s (want non-negative rows "
                                 "summing to 1): if it returns logits, set output = \"logits\""
                                 % (self.name, ", ".join("%.6g" % v for v in s.tolist())))
        for path in mods:
            sh = shapes.get(path)
            if calls.get(path) == 1 and sh is not None and len(sh) == 3 and sh[0] == 2 and sh[1] >= 1 and sh[2] >= 1:
                self.layers[path] = (int(sh[1]), int(sh[2]))
        # the penultimate features: the input of the last linear layer, run
        # once, that maps (2, D) to the class scores
        self.penultimate = None
        if linears:
            path, ins, outs = linears[-1]
            if calls.get(path) == 1 and len(ins) == 2 and ins[0] == 2 and outs == (2, self.classes):
                self.penultimate = path
                self.layers[PENULTIMATE] = (int(ins[1]), 1)

    def _forward(self, x, what):
        """The probabilities of a batch x (B, C, T) CPU tensor, as a CPU
        tensor (the forward pass on the draw's device; gradients flow
        through the copies)."""
        out = self.module(x.to(self.device))
        if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != x.shape[0] or out.shape[1] < 1:
            desc = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise _invalid("module %s: %s gave %s; want a tensor (%d, classes)", self.name, what, desc, x.shape[0])
        if self.classes and out.shape[1] != self.classes:
            raise _invalid("module %s: %s gave %d classes, then %d", self.name, what, self.classes, out.shape[1])
        out = out.float().cpu()
        if self.output == "logits":
            out = torch.softmax(out, dim=1)
        bad = ~torch.isfinite(out)
        if bool(bad.any()):
            b, j = (int(v) for v in bad.nonzero()[0])
            raise _invalid("module %s: %s: the probability of class %d of input %d is %s; the model must give finite "
                           "outputs (is the input far outside what it was trained on?)", self.name, what, j, b,
                           float(out[b, j]))
        return out

    def describe(self):
        arch = {"name": self.name, "in_channels": self.in_channels, "in_len": self.in_len, "layers": []}
        return plugin_pb2.ModelInfo(
            arch_json=json.dumps(arch, separators=(",", ":")).encode(), input_len=self.input_len,
            classes=self.classes, pooled_len=0,
            layers=[plugin_pb2.LayerInfo(name=n, channels=c, length=t) for n, (c, t) in self.layers.items()])

    def probs(self, x, chunk):
        """x (B, input_len) float32 numpy -> (B, classes) float32."""
        out = np.empty((len(x), self.classes), np.float32)
        with torch.no_grad():
            for lo in range(0, len(x), chunk):
                xs = torch.from_numpy(x[lo:lo + chunk]).view(-1, self.in_channels, self.in_len)
                out[lo:lo + len(xs)] = self._forward(xs, "Probs").numpy()
        return out

    def input_grad(self, x, t, chunk):
        """d p_t / d x and the probabilities, each as float32 numpy."""
        g = np.empty_like(x)
        p = np.empty((len(x), self.classes), np.float32)
        for lo in range(0, len(x), chunk):
            xs = torch.from_numpy(x[lo:lo + chunk].copy()).view(-1, self.in_channels, self.in_len).requires_grad_(True)
            with torch.enable_grad():
                pr = self._forward(xs, "InputGrad")
                sel = pr[torch.arange(len(xs)), torch.from_numpy(t[lo:lo + chunk])]
                (gx,) = torch.autograd.grad(sel.sum(), xs)
            g[lo:lo + len(xs)] = gx.reshape(len(xs), -1).numpy()
            p[lo:lo + len(xs)] = pr.detach().numpy()
        return g, p

    def layer(self, name, x, t, chunk):
        """The layer's output and d p_t / d output, each (B, C*L) float32."""
        c, n = self.layers[name]
        features = name == PENULTIMATE
        mod = dict(self.module.named_modules())[self.penultimate if features else name]
        act = np.empty((len(x), c * n), np.float32)
        grad = np.empty_like(act)
        for lo in range(0, len(x), chunk):
            xs = torch.from_numpy(x[lo:lo + chunk]).view(-1, self.in_channels, self.in_len)
            got = []

            def hook(m, inp, out):
                if features:  # the linear layer's input, (B, D)
                    got.append(inp[0] if inp and isinstance(inp[0], torch.Tensor) else None)
                    return
                got.append(_layer_output(m, out))

            h = mod.register_forward_hook(hook)
            try:
                with torch.enable_grad():
                    pr = self._forward(xs, "Layer")
                    sel = pr[torch.arange(len(xs)), torch.from_numpy(t[lo:lo + chunk])]
                    if len(got) != 1 or got[0] is None:
                        raise _invalid("Layer: module %s's layer %r ran %d times in a forward pass; want once",
                                       self.name, name, len(got))
                    a = got[0]
                    if a.requires_grad:
                        (ga,) = torch.autograd.grad(sel.sum(), a, allow_unused=True)
                    else:
                        ga = None
            finally:
                h.remove()
            ga = torch.zeros_like(a) if ga is None else ga
            if features:  # (B, D) as (B, D, 1)
                a, ga = a.unsqueeze(-1), ga.unsqueeze(-1)
            else:
                a, ga = _as_channels_by_length(mod, a), _as_channels_by_length(mod, ga)
            if tuple(a.shape[1:]) != (c, n):
                raise _invalid("Layer: module %s's layer %r gave %s; it was %d x %d", self.name, name,
                               tuple(a.shape[1:]), c, n)
            act[lo:lo + len(xs)] = a.detach().reshape(len(xs), -1).cpu().numpy()
            grad[lo:lo + len(xs)] = ga.detach().reshape(len(xs), -1).cpu().numpy()
        return act, grad

    def windows(self, x, t, starts, width, base, z, ch, chunk):
        """out[b, j] = p_t[b](x_b with samples starts[j] .. +width-1 of
        channel ch (every channel if ch < 0) replaced by base or z_b's)."""
        C, T = self.in_channels, self.in_len
        B, S = len(x), len(starts)
        out = np.empty((B, S), np.float32)
        st = torch.from_numpy(np.asarray(starts, np.int64))
        pos = torch.arange(T)
        rows = torch.ones(C, dtype=torch.bool) if ch < 0 else (torch.arange(C) == ch)
        with torch.no_grad():
            for b in range(B):
                xb = torch.from_numpy(x[b]).view(C, T)
                zb = torch.full((C, T), float(base)) if z is None else torch.from_numpy(z[b]).view(C, T)
                for lo in range(0, S, chunk):
                    s = st[lo:lo + chunk]
                    win = (pos[None, :] >= s[:, None]) & (pos[None, :] < s[:, None] + width)  # (k, T)
                    mask = win[:, None, :] & rows[None, :, None]  # (k, C, T)
                    xo = torch.where(mask, zb[None], xb[None])
                    out[b, lo:lo + len(s)] = self._forward(xo, "Windows")[:, int(t[b])].numpy()
        p0 = self.probs(x, chunk)[np.arange(B), t]
        return out, p0

    def spans(self, x, target, perts, base, chunk):
        """out[j] = p_target(x with the (channel, lo, hi) spans of
        perturbation j set to base; channel -1 is every channel)."""
        C, T = self.in_channels, self.in_len
        xb = torch.from_numpy(x).view(C, T)
        out = np.empty(len(perts), np.float32)
        with torch.no_grad():
            for lo in range(0, len(perts), chunk):
                part = perts[lo:lo + chunk]
                mask = torch.zeros(len(part), C, T, dtype=torch.bool)
                for j, sp in enumerate(part):
                    for c, a, b in sp:
                        if c < 0:
                            mask[j, :, a:b] = True
                        else:
                            mask[j, c, a:b] = True
                xo = torch.where(mask, torch.tensor(float(base)), xb[None])
                out[lo:lo + len(part)] = self._forward(xo, "Spans")[:, target].numpy()
        return out


def _layer_output(mod, out):
    """The tensor a layer's forward hook names: a recurrent layer's output
    sequence (the first of its outputs), else the output if it is a tensor."""
    if isinstance(mod, _RECURRENT) and isinstance(out, tuple) and isinstance(out[0], torch.Tensor):
        a = out[0]
        if a.dim() != 3:
            return None
        return a if mod.batch_first else a.transpose(0, 1)  # (B, steps, H)
    return out if isinstance(out, torch.Tensor) else None


def _as_channels_by_length(mod, a):
    """A recurrent layer's (B, steps, H) as (B, H, steps); others as they are."""
    if isinstance(mod, _RECURRENT):
        return a.transpose(1, 2)
    return a


def load_module(spec, args=None):
    """Builds a module from "file.py:Class" (the file imported under a
    private name) with the keyword arguments args (a dict or None)."""
    path, sep, cls = spec.rpartition(":")
    if not sep or not path or not cls:
        raise ValueError("module %r: want \"file.py:Class\"" % (spec,))
    if not os.path.isfile(path):
        raise ValueError("module %r: no file %s" % (spec, path))
    name = "uaxai_torch_user_%s" % secrets.token_hex(4)
    sp = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(sp)
    sp.loader.exec_module(mod)
    c = getattr(mod, cls, None)
    if c is None or not isinstance(c, type) or not issubclass(c, torch.nn.Module):
        found = sorted(k for k, v in vars(mod).items() if isinstance(v, type) and issubclass(v, torch.nn.Module)
                       and v.__module__ == name)
        raise ValueError("module %r: %s has no torch.nn.Module class %r (it has: %s)" % (spec, path, cls, ", ".join(found) or "none"))
    try:
        return c(**(args or {}))
    except TypeError as e:
        raise ValueError("module %r: %s(**%r): %s" % (spec, cls, args or {}, e)) from None


_ST_DTYPES = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "I8": "i1", "U8": "u1", "I16": "<i2", "I32": "<i4",
              "I64": "<i8", "BOOL": "?"}


def load_state_dict(path):
    """A state_dict from a file: safetensors (by its .safetensors suffix;
    read here, without the safetensors package: a little-endian u64
    header length, a JSON header of name -> dtype, shape and
    data_offsets, then the data) or a torch.save file (.pt) of tensors,
    read with torch.load(weights_only=True): a pickle that would run code
    or build other objects is refused."""
    if not path.endswith(".safetensors"):
        # weights_only: tensors and plain containers only, so that a
        # weights file cannot run code when it is read (a pickle can).
        sd = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(sd, dict):
            raise ValueError("%s: torch.load gave a %s, want a state_dict (a dict of tensors)" % (path, type(sd).__name__))
        return sd
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: %d bytes; a safetensors file starts with an 8-byte header length" % (path, len(raw)))
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError("%s: header of %d bytes in a file of %d" % (path, n, len(raw)))
    try:
        hdr = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError("%s: header: %s" % (path, e)) from None
    data = memoryview(raw)[8 + n:]
    sd = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        dt = _ST_DTYPES.get(v.get("dtype"))
        if dt is None:
            raise ValueError("%s: tensor %s: dtype %r (accepted: %s)" % (path, k, v.get("dtype"), ", ".join(_ST_DTYPES)))
        a, b = v.get("data_offsets", (0, -1))
        shape = v.get("shape", [])
        size = math.prod(shape) * np.dtype(dt).itemsize
        if not 0 <= a <= b <= len(data) or b - a != size:
            raise ValueError("%s: tensor %s: data_offsets %r for shape %r of %s; want %d bytes within the %d of data"
                             % (path, k, [a, b], shape, v.get("dtype"), size, len(data)))
        sd[k] = torch.from_numpy(np.frombuffer(data[a:b], dtype=dt).reshape(shape).copy())
    return sd


_ST_WRITE = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.int64: "I64", torch.int32: "I32",
           torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}


def save_state_dict(path, state_dict):
    """Writes a state_dict as safetensors, as load_state_dict reads it: u64 LE n, n bytes of JSON
    (name -> {dtype, shape, data_offsets [begin, end) into the data},
    names sorted, padded with spaces to a multiple of 8), the data."""
    header, blobs, off = {}, [], 0
    for name in sorted(state_dict):
        t = state_dict[name].detach().cpu().contiguous()
        if t.dtype not in _ST_WRITE:
            raise ValueError("%s: tensor %s has dtype %s (written: %s)" % (path, name, t.dtype, ", ".join(map(str, _ST_WRITE))))
        b = t.numpy().astype(t.numpy().dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _ST_WRITE[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


class ModelServer:
    """The model service over TorchDraws: add draws (each gets a random
    handle), start to serve on a unix socket, close to stop. It computes
    one request at a time with `threads` torch threads
    (torch.set_num_threads, process-wide), and forward passes of at most
    `chunk` inputs or occluded copies. Safe for concurrent use. Servers
    that share draws (the same modules) share a lock too (lock, a
    threading.Lock: one request at a time among them), so that a Layer
    request's forward hook never sees another request's forward pass."""

    def __init__(self, threads=1, chunk=DEFAULT_CHUNK, lock=None):
        self.threads = _pos_int("threads", threads)
        self.chunk = _pos_int("chunk", chunk)
        torch.set_num_threads(self.threads)
        self._draws = {}
        self._mu = threading.Lock()
        self._busy = threading.Lock() if lock is None else lock
        self._server = None
        self._dir = None
        self.address = None

    def add(self, draw):
        """Serves draw (a TorchDraw) and returns its handle: a random
        non-zero 64-bit integer, so that no plugin names another's draws
        by counting."""
        if not isinstance(draw, TorchDraw):
            raise ValueError("draw is a %s, want a TorchDraw" % type(draw).__name__)
        with self._mu:
            while True:
                h = secrets.randbits(64)
                if h and h not in self._draws:
                    break
            self._draws[h] = draw
        return h

    def remove(self, handle):
        """Forgets a handle; requests naming it fail from then on."""
        with self._mu:
            self._draws.pop(handle, None)

    def draw(self, handle):
        with self._mu:
            d = self._draws.get(handle)
        if d is None:
            raise InvalidRequest(grpc.StatusCode.NOT_FOUND,
                                 "no model with handle %d is served (a handle is valid from the Load that named it "
                                 "until its Release)" % handle)
        return d

    def start(self, address=None, workers=4):
        """Serves on the unix socket address (default: model.sock in a new
        private directory, removed by close) and returns the address."""
        if self._server is not None:
            return self.address
        if address is None:
            self._dir = tempfile.mkdtemp(prefix="uaxai-torch-")  # mode 0700
            address = os.path.join(self._dir, "model.sock")
        if len(address) > _MAX_SOCKET_PATH:
            raise ValueError("socket path %s has %d bytes; unix socket paths must fit in %d: set TMPDIR to a shorter "
                             "directory" % (address, len(address), _MAX_SOCKET_PATH))
        srv = grpc.server(futures.ThreadPoolExecutor(max_workers=workers),
                          options=[("grpc.max_receive_message_length", MAX_SERVICE_MESSAGE),
                                   ("grpc.max_send_message_length", MAX_SERVICE_MESSAGE)])
        plugin_pb2_grpc.add_ModelServicer_to_server(_Servicer(self), srv)
        if srv.add_insecure_port("unix:" + address) == 0:
            raise ValueError("cannot listen on the unix socket %s" % address)
        srv.start()
        self._server, self.address = srv, address
        return address

    def close(self):
        """Stops serving (ending calls under way) and removes the socket's
        directory if start made it. Closing twice is a no-op."""
        if self._server is not None:
            self._server.stop(None).wait()
            self._server = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # --- the requests, checked as Go's sdk/driver.ModelService checks them ---

    def _batch(self, d, method, xb, targets, with_targets):
        n, k = d.input_len, d.classes
        if len(xb) % 4:
            raise _invalid("%s: x has %d bytes, not a whole number of float32 values", method, len(xb))
        vals = len(xb) // 4
        if vals == 0 or vals % n:
            raise _invalid("%s: x has %d values; want B*%d (B >= 1 inputs of %d values)", method, vals, n, n)
        b = vals // n
        most = max_service_batch(n)
        if b > most:
            raise _invalid("%s: %d inputs of %d values in one request; at most %d are accepted (split the batch)",
                           method, b, n, most)
        if b * k > MAX_SERVICE_VALUES:
            raise _invalid("%s: %d inputs of %d classes would answer %d probabilities; at most %d are (send at most %d "
                           "inputs)", method, b, k, b * k, MAX_SERVICE_VALUES, MAX_SERVICE_VALUES // k)
        t = None
        if with_targets:
            if len(targets) != b:
                raise _invalid("%s: %d targets for %d inputs; want one per input", method, len(targets), b)
            t = np.asarray(list(targets), np.int64)
            for i, c in enumerate(t.tolist()):
                if c < 0 or c >= k:
                    raise _invalid("%s: input %d: target class %d out of range 0..%d", method, i, c, k - 1)
        elif len(targets):
            raise _invalid("%s takes no targets, got %d", method, len(targets))
        x = wire.float32s(xb).reshape(b, n)
        _finite(x, method, "x", "inputs")
        return x, t

    def describe(self, r):
        return self.draw(r.handle).describe()

    def probs_(self, r):
        d = self.draw(r.handle)
        x, _ = self._batch(d, "Probs", r.x, r.targets, False)
        return plugin_pb2.ProbsResponse(probs=wire.float32_bytes(d.probs(x, self.chunk)))

    def input_grad(self, r):
        d = self.draw(r.handle)
        x, t = self._batch(d, "InputGrad", r.x, r.targets, True)
        g, p = d.input_grad(x, t, self.chunk)
        return plugin_pb2.InputGradResponse(grad=wire.float32_bytes(g), probs=wire.float32_bytes(p))

    def layer(self, r):
        d = self.draw(r.handle)
        if len(r.layer.encode("utf-8")) > MAX_SERVICE_LAYER_NAME:
            raise _invalid("Layer: layer has %d bytes; at most %d are accepted in one request (split the request)",
                           len(r.layer.encode("utf-8")), MAX_SERVICE_LAYER_NAME)
        if r.layer not in d.layers:
            raise _invalid("Layer: model %s has no layer %r (accepted: %s)", d.name, r.layer,
                           ", ".join("%s (%d x %d)" % (n, c, t) for n, (c, t) in d.layers.items()) or "none: it has no "
                           "layer whose output is (channels, length)")
        c, n = d.layers[r.layer]
        out = plugin_pb2.LayerResponse(channels=c, length=n)
        if not r.x and not r.targets:
            return out
        x, t = self._batch(d, "Layer", r.x, r.targets, True)
        if len(t) * c * n > MAX_SERVICE_VALUES:
            raise _invalid("Layer: %d inputs of layer %r (%d x %d values each) would answer %d values; at most %d are "
                           "(send at most %d inputs)", len(t), r.layer, c, n, len(t) * c * n, MAX_SERVICE_VALUES,
                           max(MAX_SERVICE_VALUES // (c * n), 1))
        act, grad = d.layer(r.layer, x, t, self.chunk)
        out.act, out.grad = wire.float32_bytes(act), wire.float32_bytes(grad)
        return out

    def windows(self, r):
        d = self.draw(r.handle)
        x, t = self._batch(d, "Windows", r.x, r.targets, True)
        T, n = d.in_len, d.input_len
        w = r.width
        if w < 1 or w > T:
            raise _invalid("Windows: width %d; want 1..%d (the input's samples a channel)", w, T)
        ns = len(r.starts)
        if ns == 0:
            raise _invalid("Windows: no starts; want at least one window")
        if ns > MAX_SERVICE_STARTS:
            raise _invalid("Windows: starts has %d values; at most %d are accepted in one request (split the request)",
                           ns, MAX_SERVICE_STARTS)
        if len(t) * ns > MAX_SERVICE_WINDOWS:
            raise _invalid("Windows: %d inputs x %d windows in one request; at most %d windows are accepted (split the "
                           "batch)", len(t), ns, MAX_SERVICE_WINDOWS)
        starts = list(r.starts)
        for j, s in enumerate(starts):
            if s < 0 or s + w > T:
                raise _invalid("Windows: start %d (index %d): a window of width %d must lie in 0..%d", s, j, w, T)
        base = r.baseline
        if not math.isfinite(base):
            raise _invalid("Windows: baseline %s; want a finite number", _go_float(base))
        z = None
        if r.baseline_x:
            if len(r.baseline_x) != 4 * x.size:
                raise _invalid("Windows: baseline_x has %d bytes; want one baseline signal per input, %d float32 values "
                               "(%d bytes)", len(r.baseline_x), x.size, 4 * x.size)
            z = wire.float32s(r.baseline_x).reshape(x.shape)
            _finite(z, "Windows", "baseline_x", "baselines")
        ch = -1
        if r.HasField("channel"):
            if r.channel < 0 or r.channel >= d.in_channels:
                raise _invalid("Windows: channel %d; want 0..%d (the input's channels), or none for every channel",
                               r.channel, d.in_channels - 1)
            ch = r.channel
        del n
        out, p0 = d.windows(x, t, starts, w, base, z, ch, self.chunk)
        return plugin_pb2.WindowsResponse(probs=wire.float32_bytes(out), unperturbed=wire.float32_bytes(p0))

    def spans(self, r):
        d = self.draw(r.handle)
        if len(r.x) != 4 * d.input_len:
            raise _invalid("Spans: x has %d bytes; want one input of %d float32 values (%d bytes)", len(r.x),
                           d.input_len, 4 * d.input_len)
        x, t = self._batch(d, "Spans", r.x, [r.target], True)
        try:
            perts = _decode_spans(list(r.bounds), list(r.ends), list(r.channels), d.in_channels, d.in_len)
        except ValueError as e:
            raise _invalid("Spans: %s", e) from None
        if not math.isfinite(r.baseline):
            raise _invalid("Spans: baseline %s; want a finite number", _go_float(r.baseline))
        out = d.spans(x[0], int(t[0]), perts, r.baseline, self.chunk)
        return plugin_pb2.SpansResponse(probs=wire.float32_bytes(out))


def _go_float(v):
    """v as Go's %v prints a float32: NaN, +Inf, -Inf."""
    if math.isnan(v):
        return "NaN"
    return "+Inf" if v > 0 else "-Inf"


def _finite(a, method, name, what):
    bad = ~np.isfinite(a)
    if bad.any():
        n = a.shape[1]
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        raise _invalid("%s: %s: value %d (input %d, sample %d) is %s; %s must be finite", method, name, i, i // n,
                       i % n, _go_float(float(a.reshape(-1)[i])), what)


def _decode_spans(bounds, ends, channels, C, T):
    """The perturbations of a SpansRequest as lists of (channel, lo, hi)
    (channel -1: every channel), checked as Go's decodeSpans and
    decodeChannelSpans check them."""
    if len(bounds) % 2:
        raise ValueError("%d bounds; want (lo, hi) pairs" % len(bounds))
    pairs = len(bounds) // 2
    if channels and pairs > MAX_SERVICE_PAIRS:
        raise ValueError("%d (lo, hi) pairs; at most %d are accepted" % (pairs, MAX_SERVICE_PAIRS))
    if channels and len(channels) != pairs:
        raise ValueError("%d channels for %d (lo, hi) pairs; want one a pair, or none (every span covers every "
                         "channel)" % (len(channels), pairs))
    if len(ends) == 0 or len(ends) > MAX_SERVICE_PERTURBATIONS:
        raise ValueError("%d perturbations; want 1..%d" % (len(ends), MAX_SERVICE_PERTURBATIONS))
    if pairs > MAX_SERVICE_PAIRS:
        raise ValueError("%d (lo, hi) pairs; at most %d are accepted" % (pairs, MAX_SERVICE_PAIRS))
    if ends[-1] != pairs:
        raise ValueError("the last end is %d; want the number of (lo, hi) pairs, %d" % (ends[-1], pairs))
    out, prev = [], 0
    for j, e in enumerate(ends):
        if e < prev:
            raise ValueError("ends[%d] = %d is less than ends[%d] = %d; want non-decreasing ends" % (j, e, j - 1, prev))
        sp, last = [], 0
        for i in range(prev, e):
            lo, hi = bounds[2 * i], bounds[2 * i + 1]
            if lo < 0 or hi > T or lo >= hi:
                raise ValueError("perturbation %d: span [%d, %d); want 0 <= lo < hi <= %d" % (j, lo, hi, T))
            if channels:
                c = channels[i]
                if c < -1 or c >= C:
                    raise ValueError("perturbation %d: span [%d, %d) of channel %d; want -1 (every channel) or 0..%d"
                                     % (j, lo, hi, c, C - 1))
            else:
                c = -1
                if sp and lo < last:
                    raise ValueError("perturbation %d: span [%d, %d) starts before the previous one ends (%d); want "
                                     "spans in order, not overlapping" % (j, lo, hi, last))
                last = hi
            sp.append((c, lo, hi))
        out.append(sp)
        prev = e
    return out


class _Servicer(plugin_pb2_grpc.ModelServicer):
    """service Model over a ModelServer: one request at a time, refusals
    as their status codes."""

    def __init__(self, srv):
        self._srv = srv

    def _run(self, context, f, r):
        with self._srv._busy:
            try:
                return f(r)
            except InvalidRequest as e:
                context.abort(e.code, str(e))

    def Describe(self, r, context):
        return self._run(context, self._srv.describe, r)

    def Probs(self, r, context):
        return self._run(context, self._srv.probs_, r)

    def InputGrad(self, r, context):
        return self._run(context, self._srv.input_grad, r)

    def Layer(self, r, context):
        return self._run(context, self._srv.layer, r)

    def Windows(self, r, context):
        return self._run(context, self._srv.windows, r)

    def Spans(self, r, context):
        return self._run(context, self._srv.spans, r)


def main(argv=None):
    """Serves the modules of files: --module FILE.py:Class [--args JSON]
    --weights W [W ...] (one draw a file) --in-channels C --in-len T
    [--output probs|logits] [--threads N] [--chunk K] [--socket PATH].
    With --mc-dropout-seeds S1 S2 ... (and one weights file) the draws
    are instead MC-dropout draws of that network, one a seed
    (uaxai_plugin.mcdropout: the same seed, the same network). Prints
    {"address": ..., "handles": [...]} on one line, then serves until its
    standard input ends."""
    ap = argparse.ArgumentParser(prog="python3 -m uaxai_plugin.torchmodel", description=main.__doc__)
    ap.add_argument("--module", required=True)
    ap.add_argument("--args", default="{}")
    ap.add_argument("--weights", nargs="*", default=[])
    ap.add_argument("--in-channels", type=int, required=True)
    ap.add_argument("--in-len", type=int, required=True)
    ap.add_argument("--output", default="probs")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=DEFAULT_CHUNK)
    ap.add_argument("--socket", default=None)
    ap.add_argument("--mc-dropout-seeds", nargs="*", default=[])
    a = ap.parse_args(argv)
    try:
        args = json.loads(a.args)
        if not isinstance(args, dict):
            raise ValueError("--args: want a JSON object of keyword arguments, got %s" % a.args)
        seeds = _seeds(a.mc_dropout_seeds)
        if seeds and len(a.weights) != 1:
            raise ValueError("--mc-dropout-seeds with %d weights files; MC dropout samples the dropout of one network "
                             "(accepted: one weights file)" % len(a.weights))
        srv = ModelServer(threads=a.threads, chunk=a.chunk)
        handles = []
        for w in a.weights or [None]:
            m = load_module(a.module, args)
            if w is not None:
                try:
                    m.load_state_dict(load_state_dict(w))
                except RuntimeError as e:
                    raise ValueError("%s: %s" % (w, e)) from None
            if not seeds:
                handles.append(srv.add(TorchDraw(m, a.in_channels, a.in_len, output=a.output)))
                continue
            from . import mcdropout
            for seed in seeds:
                d = TorchDraw(mcdropout.fixed(m, seed, "--mc-dropout"), a.in_channels, a.in_len, output=a.output,
                              name=type(m).__name__)
                mcdropout.check(d, "--mc-dropout")
                handles.append(srv.add(d))
        address = srv.start(a.socket)
    except (ValueError, OSError, Error) as e:
        print("uaxai_plugin.torchmodel: %s" % e, file=sys.stderr)
        return 2
    print(json.dumps({"address": address, "handles": [str(h) for h in handles]}), flush=True)
    try:
        sys.stdin.read()
    finally:
        srv.close()
    return 0


def _seeds(args):
    """The seeds of --mc-dropout-seeds: integers 0..2^64-1, one an
    argument."""
    out = []
    for f in args:
        try:
            v = int(f)
        except ValueError:
            v = -1
        if not 0 <= v < 1 << 64:
            raise ValueError("--mc-dropout-seeds: %r is not a seed (accepted: integers 0..2^64-1, one an argument)" % f)
        out.append(v)
    return out


if __name__ == "__main__":
    sys.exit(main())
