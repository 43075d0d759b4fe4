"""The model an explainer is handed: one posterior draw.

It comes in one of two modes, chosen by the explainer's Info.wants_model:

* params mode (wants_model False, the default, as in Go): what the host's
  Load sent, the architecture, the flat float32 parameters and each
  layer's output shape (see shapes); the explainer computes with them
  itself.
* service mode (wants_model True): the host keeps the network and serves
  it (the protocol's service Model, on a unix socket whose path the Load
  names); the Model is a client of that service, and probs, input_grad,
  layer, layer_shape and windows compute with the host's network
  (sdk/nn), so an explainer needs no network code of its own and gets the
  very numbers a Go explainer would. params is None.

Every method takes and returns numpy arrays (float32 on the wire, as
little-endian bytes). The inputs are checked here, before any call, with
ValueErrors that say what was wrong and what is accepted; an error of the
service becomes a ServiceError (a uaxai_plugin.Error) "model service:
<Method>: <details>", so that it reaches the host with its message.

Inside an Explain call the explainer gets the model bound to that call: a
service call then runs under the Explain's deadline and is cancelled when
the Explain ends (the host cancelled it or its deadline passed), so a
hung host call never outlives the Explain.
"""

import copy
import math
import threading

import grpc
import numpy as np

from . import wire
from .errors import CallTimeoutError, Error, ServiceError
from ._pb import plugin_pb2, plugin_pb2_grpc


# The bounds of one model-service request (Go's sdk/internal/proto,
# service.go: MaxServiceInputs, MaxServiceValues, MaxServiceStarts,
# MaxServiceWindows, MaxServicePerturbations, MaxServicePairs). The host
# refuses a request beyond one; the methods below split a batch into as
# many requests as they take.
MAX_SERVICE_INPUTS = 1 << 16
MAX_SERVICE_VALUES = 1 << 21
MAX_SERVICE_STARTS = 1 << 20
MAX_SERVICE_WINDOWS = 1 << 22
MAX_SERVICE_PERTURBATIONS = 1 << 16
MAX_SERVICE_PAIRS = 1 << 20


class ArchError(ValueError):
    """An architecture the kit cannot read."""


def shapes(arch):
    """The (channels, length) output shape of each layer of a draw's
    architecture, or of each node of a graph architecture up to its
    output node, as a list of int pairs, the last the logits (classes,
    1). The kit has no shape rules: the host computes the shapes
    (nn.Arch.OutputShapes, from sdk/nn's one table of layer and op kinds)
    and sends them with the draw's parameters (the Load's
    Params.layers), and Model.from_wire puts them in the arch dict it
    hands the explainer, under "shapes", as [[channels, length], ...].

    arch is such a dict (a params-mode Model's arch). The shapes are
    checked, not recomputed: a non-empty list of [channels, length]
    pairs of integers >= 1, the last flat (length 1), one a node of the
    "graph" up to its output node (the node named "output" or its last;
    a list of layers comes as its graph, node i layer i); an ArchError says
    what is wrong and what is accepted. A service-mode Model's arch has
    none (ask the service: Model.layer_shape)."""
    if not isinstance(arch, dict):
        raise ArchError("arch is a %s, want the architecture dict of a Model (nn.Arch with the host's \"shapes\")"
                        % type(arch).__name__)
    name = arch.get("name", "")
    _pos_int(arch, "in_channels", name)
    _pos_int(arch, "in_len", name)
    if "shapes" not in arch:
        raise ArchError("arch %r has no \"shapes\": the host sends the layers' output shapes with a draw's parameters "
                        "(Params.layers) and Model.from_wire puts them there; a model of the model service has none "
                        "(ask Model.layer_shape)" % name)
    s = arch["shapes"]
    if not isinstance(s, (list, tuple)) or not s:
        raise ArchError("arch %r: shapes is %r, want a non-empty list of [channels, length] pairs, one a layer"
                        % (name, s))
    out = []
    for i, sh in enumerate(s):
        if (not isinstance(sh, (list, tuple)) or len(sh) != 2
                or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in sh)):
            raise ArchError("arch %r: shapes[%d] is %r, want [channels, length], two integers >= 1" % (name, i, sh))
        out.append((sh[0], sh[1]))
    if out[-1][1] != 1:
        raise ArchError("arch %r: the last shape (the logits) is %d x %d, want classes x 1"
                        % (name, out[-1][0], out[-1][1]))
    graph = arch.get("graph")
    if graph is None:
        raise ArchError("arch %r has no graph: a model known by its shape only has no layer shapes (the host sends "
                        "every sdk/nn network as a graph, a list of layers too)" % name)
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    if not isinstance(nodes, list) or not nodes:
        raise ArchError("arch %r: graph has no nodes, want a graph dict with a list of nodes" % name)
    want, what = len(nodes), "node"
    output = graph.get("output") or ""
    if output:
        idx = [j for j, nd in enumerate(nodes) if isinstance(nd, dict) and nd.get("name") == output]
        if not idx:
            raise ArchError("arch %r: the graph's output %r is not one of its nodes" % (name, output))
        want, what = idx[0] + 1, "node up to the output node %r" % output
    if len(out) != want:
        raise ArchError("arch %r: %d shapes, want %d, one a %s" % (name, len(out), want, what))
    return out


def _pos_int(arch, key, name):
    v = arch.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ArchError("arch %r: %s is %r, want an integer >= 1" % (name, key, v))
    return v


# One channel per model service address for the whole process: the host
# serves every draw of a run on one socket, and a gRPC channel multiplexes
# concurrent calls.
_channels = {}
_channels_mu = threading.Lock()


def service_channel(address):
    """The gRPC channel to the model service listening on the unix socket
    at address (a path), created on first use and shared afterwards. It
    sends and accepts messages up to wire.MAX_MESSAGE_SIZE (1 GiB)."""
    with _channels_mu:
        ch = _channels.get(address)
        if ch is None:
            ch = grpc.insecure_channel(
                "unix:" + address,
                options=[("grpc.max_receive_message_length", wire.MAX_MESSAGE_SIZE),
                         ("grpc.max_send_message_length", wire.MAX_MESSAGE_SIZE)])
            _channels[address] = ch
        return ch


_NO_SERVICE = ("the explainer did not ask for the model service (set wants_model=True in its Info); "
               "in params mode the model holds only arch and params")

_F32_MAX = float(np.finfo(np.float32).max)


class Model:
    """One loaded model draw.

    Attributes:
      arch: the architecture (nn.Arch as a dict: name, in_channels,
        in_len, graph), and in params mode the host's output
        shape of each layer, "shapes" (see shapes).
      params: the flat parameter vector (float32, read-only), in PyTorch
        state_dict order, as sdk/nn lays it out; None in service mode.
      input_len: values per input (in_channels * in_len).
      classes: the number of logits (the last layer's width).
      service: (address, handle) of the draw in the host's model service;
        None in params mode.

    In service mode (Model.from_service) the methods probs, input_grad,
    layer, layer_shape and windows call the host; in params mode they
    raise Error. A Model may be used from several threads at once.
    """

    def __init__(self, arch, params):
        self.arch = arch
        s = shapes(arch)
        self.input_len = arch["in_channels"] * arch["in_len"]
        self.classes = s[-1][0]
        p = np.asarray(params, dtype=np.float32)
        p.flags.writeable = False
        self.params = p
        self.service = None
        self._stub = None
        self._ctx = None
        self._shapes = {}

    @classmethod
    def from_wire(cls, m):
        """Builds a params-mode Model from a protocol Params message (a
        LoadRequest's model): its arch is the decoded architecture with
        the host's layer shapes (m.layers) under "shapes" (see shapes),
        whose names must be the graph's nodes'."""
        if m is None or not m.arch_json:
            raise wire.WireError("missing model parameters")
        arch = wire.decode_arch(m.arch_json)
        if "shapes" in arch:
            raise wire.WireError("the architecture JSON has a key \"shapes\", which nn.Arch has not; the layers' "
                                 "shapes travel in Params.layers")
        if not m.layers:
            raise wire.WireError("the draw's parameters carry no layer shapes (Params.layers): the host computes and "
                                 "sends them, and the kit has no shape rules of its own; use a host of the kit's "
                                 "release or later")
        arch["shapes"] = [[int(ly.channels), int(ly.length)] for ly in m.layers]
        try:
            params = wire.float32s(m.data)
        except wire.WireError as e:
            raise wire.WireError("parameters: %s" % e) from None
        model = cls(arch, params)  # checks the shapes (see shapes)
        items = arch["graph"]["nodes"]
        for i, ly in enumerate(m.layers):
            want = items[i].get("name", "") if isinstance(items[i], dict) else None
            if ly.name != want:
                raise wire.WireError("Params.layers[%d] is named %r, the architecture's node %d %r"
                                     % (i, ly.name, i, want))
        return model

    @classmethod
    def from_service(cls, ms, context=None):
        """Builds a service-mode Model from a protocol ModelService message
        (a LoadRequest's service): it dials the service at ms.address (one
        channel per address, see service_channel) and asks Describe once
        for the draw's architecture, input length and classes. context is
        the calling RPC's context (the Load's), whose deadline and
        cancellation the Describe honours. A service that cannot be
        reached, rejects the handle or describes a network that does not
        add up is an Error."""
        if ms is None or not ms.address:
            raise wire.WireError("the model service has no address")
        m = cls.__new__(cls)
        m.service = (ms.address, ms.handle)
        m._stub = plugin_pb2_grpc.ModelStub(service_channel(ms.address))
        m._ctx = context
        m._limit = call_limit(context)
        m._shapes = {}
        m.params = None
        info = m._call("Describe", plugin_pb2.ModelRef(handle=ms.handle))
        m._ctx, m._limit = None, None
        try:
            arch = wire.decode_arch(info.arch_json)
            c, t = _pos_int(arch, "in_channels", arch.get("name", "")), _pos_int(arch, "in_len", arch.get("name", ""))
        except ValueError as e:
            raise Error("model service: Describe: handle %d: %s" % (ms.handle, e)) from None
        if info.input_len != c * t or info.classes < 1:
            raise Error("model service: Describe: handle %d: input_len %d and classes %d do not fit the architecture "
                        "(want input_len = in_channels x in_len = %d x %d = %d, classes >= 1)"
                        % (ms.handle, info.input_len, info.classes, c, t, c * t))
        m.arch, m.input_len, m.classes = arch, int(info.input_len), int(info.classes)
        return m

    def bound(self, context):
        """This model for one call of the Explainer service: a copy whose
        service calls run under context's deadline and are cancelled when
        that call ends. The server hands explain the bound model."""
        b = copy.copy(self)
        b._ctx = context
        b._limit = call_limit(context)
        return b

    # --- the model service ------------------------------------------------

    def probs(self, x):
        """The softmax probabilities of a batch: x (B, input_len), any
        float32-able values, finite; returns (B, classes) float32."""
        self._need("probs")
        x = self._batch(x)
        b = len(x)
        if b == 0:
            return np.zeros((0, self.classes), dtype=np.float32)
        per, out = self._per_request("Probs"), []
        for lo in range(0, b, per):
            xs = x[lo:lo + per]
            r = self._call("Probs", plugin_pb2.ModelBatch(handle=self.service[1], x=wire.float32_bytes(xs)))
            out.append(self._decode("Probs", "probabilities", r.probs, (len(xs), self.classes)))
        return np.concatenate(out)

    def input_grad(self, x, targets):
        """d p_target / d x for each input: x (B, input_len), targets (B,)
        classes in [0, classes); returns (B, input_len) float32."""
        self._need("input_grad")
        x = self._batch(x)
        t = self._targets(targets, len(x))
        if len(x) == 0:
            return np.zeros((0, self.input_len), dtype=np.float32)
        per, out = self._per_request("InputGrad", self.input_len), []
        for lo in range(0, len(x), per):
            xs = x[lo:lo + per]
            r = self._call("InputGrad", plugin_pb2.ModelBatch(handle=self.service[1], x=wire.float32_bytes(xs),
                                                              targets=t[lo:lo + per]))
            out.append(self._decode("InputGrad", "gradient", r.grad, (len(xs), self.input_len)))
        return np.concatenate(out)

    def layer_shape(self, name):
        """The per-input shape (channels, length) of the output of the layer
        called name (nn.Arch's layer names), asked once and remembered."""
        self._need("layer_shape")
        name = self._layer_name(name)
        s = self._shapes.get(name)
        if s is None:
            r = self._call("Layer", plugin_pb2.LayerRequest(handle=self.service[1], layer=name))
            if r.channels < 1 or r.length < 1:
                raise Error("model service: Layer: layer %r has shape %d x %d, want both >= 1" % (name, r.channels, r.length))
            s = (int(r.channels), int(r.length))
            self._shapes[name] = s
        return s

    def layer(self, name, x, targets):
        """The output of the layer called name for each input and the
        gradient of p_target with respect to it: x (B, input_len), targets
        (B,); returns (act, grad), each (B, C, T) float32."""
        self._need("layer")
        name = self._layer_name(name)
        x = self._batch(x)
        t = self._targets(targets, len(x))
        if len(x) == 0:
            c, n = self.layer_shape(name)
            return np.zeros((0, c, n), dtype=np.float32), np.zeros((0, c, n), dtype=np.float32)
        c, n = self.layer_shape(name)
        per, acts, grads = self._per_request("Layer", c * n), [], []
        for lo in range(0, len(x), per):
            xs = x[lo:lo + per]
            r = self._call("Layer", plugin_pb2.LayerRequest(handle=self.service[1], layer=name, x=wire.float32_bytes(xs),
                                                            targets=t[lo:lo + per]))
            if (r.channels, r.length) != (c, n):
                raise Error("model service: Layer: layer %r has shape %d x %d, then %d x %d" % (name, c, n, r.channels, r.length))
            shape = (len(xs), c, n)
            acts.append(self._decode("Layer", "activations", r.act, shape))
            grads.append(self._decode("Layer", "gradients", r.grad, shape))
        return np.concatenate(acts), np.concatenate(grads)

    def windows(self, x, targets, starts, width, baseline=0.0, unperturbed=False, channel=None):
        """Occlusion's inner loop: out[b, j] = p_targets[b](x[b] with the
        samples [starts[j], starts[j] + width) of every channel replaced
        by the baseline; with channel an integer 0..in_channels-1, of
        that channel alone, as Captum's sliding_window_shapes = (1,
        width)), for x (B, input_len), targets (B,), starts
        (S,) with 0 <= s and s + width <= in_len (the samples a channel),
        width >= 1. baseline is a number (every occluded sample is it, as
        a float32) or an array (B, input_len) of baseline signals, one per
        input, whose samples the window takes. Returns (B, S) float32;
        with unperturbed, the pair (that, p0) with p0[b] =
        p_targets[b](x[b]) (B,) float32, computed by the same layers as
        the windows (it equals probs' up to float32 rounding, and is what
        Go's explainer.occlusion subtracts from)."""
        self._need("windows")
        x = self._batch(x)
        b = len(x)
        t = self._targets(targets, b)
        n_t = self.arch["in_len"]
        if isinstance(width, (bool, np.bool_)) or not isinstance(width, (int, np.integer)) or not 1 <= width <= n_t:
            raise ValueError("width is %r, want an integer in 1..%d (the samples of a channel)" % (width, n_t))
        width = int(width)
        st = _ints("starts", starts)
        if st.ndim != 1:
            raise ValueError("starts has shape %s, want (S,), one start per window" % (st.shape,))
        bad = np.flatnonzero((st < 0) | (st > n_t - width))
        if len(bad):
            j = bad[0]
            raise ValueError("starts[%d] is %d: with width %d a start must be in 0..%d (in_len %d)"
                             % (j, st[j], width, n_t - width, n_t))
        n_c = self.arch["in_channels"]
        if channel is not None and (isinstance(channel, (bool, np.bool_)) or not isinstance(channel, (int, np.integer))
                                    or not 0 <= channel < n_c):
            raise ValueError("channel is %r, want None (every channel) or an integer in 0..%d (the input's channels)"
                             % (channel, n_c - 1))
        zx, v = None, 0.0
        if np.ndim(baseline) == 0 and not isinstance(baseline, np.ndarray):
            if isinstance(baseline, (bool, np.bool_)) or not isinstance(baseline, (int, float, np.integer, np.floating)):
                raise ValueError("baseline is %r, want a number or an array (B, input_len) of baseline signals"
                                 % (baseline,))
            v = float(baseline)
            if not math.isfinite(v) or abs(v) > _F32_MAX:
                raise ValueError("baseline is %r, want a finite number within float32" % (baseline,))
        else:
            zx = self._batch(baseline, "baseline", b)
        if b == 0 or len(st) == 0:
            out = np.zeros((b, len(st)), dtype=np.float32)
            if unperturbed:
                return out, self.probs(x)[np.arange(b), t].astype(np.float32)
            return out
        # Requests of at most per inputs and step starts, within the
        # service's bounds on values, starts and windows.
        out, p0 = np.empty((b, len(st)), dtype=np.float32), np.empty(b, dtype=np.float32)
        per = self._per_request("Windows")
        for lo in range(0, b, per):
            hi = min(lo + per, b)
            step = max(1, min(MAX_SERVICE_STARTS, MAX_SERVICE_WINDOWS // (hi - lo)))
            for s0 in range(0, len(st), step):
                s1 = min(s0 + step, len(st))
                req = plugin_pb2.WindowsRequest(handle=self.service[1], x=wire.float32_bytes(x[lo:hi]), targets=t[lo:hi],
                                                starts=st[s0:s1].tolist(), width=width, baseline=v)
                if zx is not None:
                    req.baseline_x = wire.float32_bytes(zx[lo:hi])
                if channel is not None:
                    req.channel = int(channel)
                r = self._call("Windows", req)
                out[lo:hi, s0:s1] = self._decode("Windows", "probabilities", r.probs, (hi - lo, s1 - s0))
                if s0 == 0:
                    p0[lo:hi] = self._decode("Windows", "unperturbed probabilities", r.unperturbed, (hi - lo,))
        if unperturbed:
            return out, p0
        return out

    def spans(self, x, target, perturbations, baseline=0.0):
        """The inner loop of perturbation methods on contiguous features
        (LIME, KernelSHAP): out[j] = p_target(x with the samples of every
        span (lo, hi) of perturbations[j] set to baseline in every
        channel), for one input x (input_len,) and a class target. A
        perturbation is a list of half-open (lo, hi) spans of time
        positions, 0 <= lo < hi <= in_len, in order and not overlapping;
        an empty one is x itself. A span may also be a triple (lo, hi,
        channel): the samples of that input channel only (0..C-1, or -1
        for every channel); a perturbation list with any triple may have
        its spans in any order, overlapping (a value is replaced when a
        span covers it). The host takes sdk/nn's incremental path, which
        equals forward passes of the perturbed inputs up to float32
        rounding. Returns (J,) float32."""
        self._need("spans")
        xb = self._batch(np.reshape(x, (1, -1)) if np.ndim(x) == 1 else x, "x", 1)
        t = self._targets([target], 1)
        n_t = self.arch["in_len"]
        n_c = self.arch["in_channels"]
        bounds, ends, channels = [], [], []
        parsed = []
        for j, pert in enumerate(perturbations):
            spans = []
            for k, sp in enumerate(pert):
                try:
                    vals = [int(v) for v in sp]
                except (TypeError, ValueError):
                    vals = []
                if len(vals) not in (2, 3):
                    raise ValueError("perturbations[%d][%d] is %r, want a pair (lo, hi) or a triple (lo, hi, channel) "
                                     "of integers" % (j, k, sp))
                lo, hi = vals[0], vals[1]
                ch = vals[2] if len(vals) == 3 else None
                if not 0 <= lo < hi <= n_t:
                    raise ValueError("perturbations[%d][%d] is [%d, %d), want 0 <= lo < hi <= %d" % (j, k, lo, hi, n_t))
                if ch is not None and not -1 <= ch < n_c:
                    raise ValueError("perturbations[%d][%d] has channel %d, want -1 (every channel) or 0..%d"
                                     % (j, k, ch, n_c - 1))
                spans.append((lo, hi, ch))
            parsed.append(spans)
        per_channel = any(ch is not None for spans in parsed for _, _, ch in spans)
        for j, spans in enumerate(parsed):
            prev = 0
            for k, (lo, hi, ch) in enumerate(spans):
                if not per_channel and lo < prev:
                    raise ValueError("perturbations[%d][%d] [%d, %d) starts before the previous span ends (%d); "
                                     "want spans in order, not overlapping" % (j, k, lo, hi, prev))
                prev = hi
                bounds += (lo, hi)
                channels.append(-1 if ch is None else ch)
            ends.append(len(bounds) // 2)
        if not per_channel:
            channels = []
        if isinstance(baseline, (bool, np.bool_)) or not isinstance(baseline, (int, float, np.integer, np.floating)) \
                or not math.isfinite(float(baseline)) or abs(float(baseline)) > _F32_MAX:
            raise ValueError("baseline is %r, want a finite number within float32" % (baseline,))
        if not ends:
            return np.zeros(0, dtype=np.float32)
        # Requests of at most MAX_SERVICE_PERTURBATIONS perturbations and
        # MAX_SERVICE_PAIRS spans (a longer perturbation alone).
        out, lo = np.empty(len(ends), dtype=np.float32), 0
        while lo < len(ends):
            base = ends[lo - 1] if lo else 0
            hi = lo + 1
            while hi < len(ends) and hi - lo < MAX_SERVICE_PERTURBATIONS and ends[hi] - base <= MAX_SERVICE_PAIRS:
                hi += 1
            top = ends[hi - 1]
            r = self._call("Spans", plugin_pb2.SpansRequest(
                handle=self.service[1], x=wire.float32_bytes(xb), target=t[0], bounds=bounds[2 * base:2 * top],
                ends=[e - base for e in ends[lo:hi]], baseline=float(baseline),
                channels=channels[base:top]))
            out[lo:hi] = self._decode("Spans", "probabilities", r.probs, (hi - lo,))
            lo = hi
        return out

    # --- plumbing ---------------------------------------------------------

    def _need(self, method):
        if self._stub is None:
            raise Error("model.%s: %s" % (method, _NO_SERVICE))

    def _per_request(self, method, per=0):
        """The most inputs of one request whose answer has per values an
        input besides the probabilities: the service's bounds."""
        most = min(MAX_SERVICE_INPUTS, MAX_SERVICE_VALUES // self.input_len, MAX_SERVICE_VALUES // self.classes)
        if per:
            most = min(most, MAX_SERVICE_VALUES // per)
        if most < 1:
            raise Error("model service: %s: an input of %d values (answers of %d) is more than one request may carry "
                        "(%d values)" % (method, self.input_len, max(per, self.classes), MAX_SERVICE_VALUES))
        return most

    def _batch(self, x, name="x", rows=None):
        """x as a C-contiguous float32 array (B, input_len) of finite
        values (B = rows when given)."""
        try:
            with np.errstate(over="ignore"):  # a value beyond float32 becomes inf, reported below
                a = np.ascontiguousarray(x, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise ValueError("%s: %s, want an array (B, %d) of numbers" % (name, e, self.input_len)) from None
        want = "(%s, %d)" % ("B" if rows is None else rows, self.input_len)
        if a.ndim != 2 or a.shape[1] != self.input_len or (rows is not None and a.shape[0] != rows):
            raise ValueError("%s has shape %s, want %s (inputs of input_len %d)" % (name, a.shape, want, self.input_len))
        bad = ~np.isfinite(a)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError("%s[%d, %d] is %r as a float32, want finite values" % (name, i, j, float(a[i, j])))
        return a

    def _targets(self, targets, b):
        t = _ints("targets", targets)
        if t.shape != (b,):
            raise ValueError("targets has shape %s, want (%d,), one class per input" % (t.shape, b))
        bad = np.flatnonzero((t < 0) | (t >= self.classes))
        if len(bad):
            raise ValueError("targets[%d] is %d, want a class in 0..%d" % (bad[0], t[bad[0]], self.classes - 1))
        return t.tolist()

    @staticmethod
    def _layer_name(name):
        if not isinstance(name, str) or not name:
            raise ValueError("layer name is %r, want a layer's name in the architecture (a non-empty string)" % (name,))
        return name

    def _call(self, method, req):
        """Calls the service's method under the bound call's deadline,
        cancelled when that call ends; a failure is a ServiceError."""
        ctx = self._ctx
        timeout = None
        if ctx is not None:
            if not ctx.is_active():
                raise ServiceError(method, grpc.StatusCode.CANCELLED,
                                   "not called: the plugin's call has ended (cancelled or past its deadline)")
            timeout = ctx.time_remaining()
            if timeout is not None and not timeout < 1e9:  # no deadline: gRPC reports a huge or infinite time
                timeout = None
        # The host's limit of each request (limits.model_call), if it is
        # the nearer deadline: past it the request is a CallTimeoutError.
        limit = getattr(self, "_limit", None)
        limited = limit is not None and (timeout is None or limit[0] < timeout)
        if limited:
            timeout = limit[0]
        fut = getattr(self._stub, method).future(req, timeout=timeout)
        if ctx is not None and not ctx.add_callback(fut.cancel):
            fut.cancel()  # the call ended between is_active and add_callback
        try:
            return fut.result()
        except grpc.FutureCancelledError:
            raise ServiceError(method, grpc.StatusCode.CANCELLED,
                               "cancelled: the plugin's call ended (the host cancelled it or its deadline passed)") from None
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
            details = e.details() if hasattr(e, "details") else str(e)
            if limited and code == grpc.StatusCode.DEADLINE_EXCEEDED and (ctx is None or ctx.is_active()):
                raise CallTimeoutError(method, _what(method, req, getattr(self, "input_len", 0)), limit[1]) from None
            raise ServiceError(method, code, details) from None

    def _decode(self, method, what, b, shape):
        try:
            v = wire.float32s(b)
        except wire.WireError as e:
            raise Error("model service: %s: %s: %s" % (method, what, e)) from None
        if v.size != math.prod(shape):
            raise Error("model service: %s: the answer holds %d %s, want %d (%s)"
                        % (method, v.size, what, math.prod(shape), " x ".join(str(d) for d in shape)))
        return v.reshape(shape)


CALL_LIMIT_METADATA = "uaxai-model-call-ms"
CALL_LIMIT_KEY_METADATA = "uaxai-model-call-key"


def call_limit(context):
    """The host's limit of each model-service request of a call (the
    metadata of its Load or Explain, sdk.WithCallLimit): (seconds, "5m
    (limits.model_call)"), or None without one."""
    if context is None or not hasattr(context, "invocation_metadata"):
        return None
    ms, key = None, ""
    for k, v in context.invocation_metadata() or ():
        if k == CALL_LIMIT_METADATA:
            try:
                ms = int(v)
            except ValueError:
                return None
        elif k == CALL_LIMIT_KEY_METADATA and len(v) <= 64:
            key = v
    if ms is None or ms <= 0:
        return None
    text = _format_ms(ms)
    return ms / 1000.0, "%s (%s)" % (text, key) if key else text


def _format_ms(ms):
    """A duration in whole milliseconds as the host writes it: the largest
    of h, m, s, ms that divides it ("2s", "5m", "1500ms")."""
    for unit, size in (("h", 3600000), ("m", 60000), ("s", 1000)):
        if ms % size == 0:
            return "%d%s" % (ms // size, unit)
    return "%dms" % ms


def _what(method, req, input_len):
    """What a request carried, as the Go client says it: "64 inputs",
    "1 input, 5 windows", "1 input, 4 perturbations", "2 inputs at layer
    'x'", "layer 'x''s shape", "handle 7"."""
    def inputs(n):
        return "1 input" if n == 1 else "%d inputs" % n
    n = len(getattr(req, "x", b"")) // 4 // input_len if input_len else 0
    if method == "Describe":
        return "handle %d" % req.handle
    if method == "Windows":
        return "1 input, %d windows" % len(req.starts)
    if method == "Spans":
        return "1 input, %d perturbations" % len(req.ends)
    if method == "Layer":
        return "%s at layer \"%s\"" % (inputs(n), req.layer) if req.x else "layer \"%s\"'s shape" % req.layer
    return inputs(n)


def _ints(name, v):
    """v as an int64 array; integral floats are not accepted (an index is
    an integer)."""
    a = np.asarray(v)
    if a.size == 0 and a.dtype.kind == "f":
        a = a.astype(np.int64)
    if a.dtype.kind not in "iu":
        raise ValueError("%s has dtype %s, want integers" % (name, a.dtype))
    return a.astype(np.int64)
