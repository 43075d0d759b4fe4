"""A fake of the host's model service for the tests: a tiny numpy network
served over the protocol's service Model on a unix socket.

The network of a handle is the softmax of a linear map of the flattened
input, p = softmax(W x + b) with W (K, C*T) and b (K,), computed in
float64 and sent as float32. Its closed forms:

    d p_c / d x   = p_c (W_c - sum_k p_k W_k)
    d p_c / d z_k = p_c (delta_ck - p_k)          (z = W x + b, the logits)

It has two layers: "input" (C x T, the input itself, its gradient the
input gradient) and "logits" (K x 1). Windows builds each occluded copy
and runs the network on it. Errors mimic the host's: an unknown handle or
layer is NotFound naming it, a batch of the wrong length InvalidArgument.
"""

import json
import os
import tempfile
import threading
import time
from concurrent import futures

import grpc
import numpy as np

from uaxai_plugin import wire
from uaxai_plugin._pb import plugin_pb2, plugin_pb2_grpc


class Net:
    """softmax(W x + b) over inputs of C channels of T samples."""

    def __init__(self, w, b, channels, length):
        self.w = np.asarray(w, dtype=np.float64)
        self.b = np.asarray(b, dtype=np.float64)
        self.c, self.t = channels, length
        self.k = len(self.b)
        assert self.w.shape == (self.k, channels * length)

    @classmethod
    def random(cls, rng, channels, length, classes, scale=0.3):
        return cls(rng.normal(0, scale, (classes, channels * length)), rng.normal(0, 0.5, classes), channels, length)

    def arch(self):
        return {"name": "fake-linear", "in_channels": self.c, "in_len": self.t,
                "graph": {"name": "fake-linear", "in_channels": self.c, "in_len": self.t, "nodes": [
                    {"name": "flat", "op": "flatten"}, {"name": "logits", "op": "linear", "attrs": {"out": self.k}}]}}

    def logits(self, x):
        return np.asarray(x, dtype=np.float64) @ self.w.T + self.b

    def probs(self, x):
        z = self.logits(x)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def input_grad(self, x, targets):
        p = self.probs(x)
        t = np.asarray(targets)
        pc = p[np.arange(len(t)), t]
        return pc[:, None] * (self.w[t] - p @ self.w)

    def logit_grad(self, x, targets):
        p = self.probs(x)
        t = np.asarray(targets)
        pc = p[np.arange(len(t)), t]
        return pc[:, None] * (np.eye(self.k)[t] - p)


class Service(plugin_pb2_grpc.ModelServicer):
    """The fake model service; calls counts the calls of each method.
    With hang set, Probs waits until its call ends and then sets ended."""

    def __init__(self):
        self.nets = {}
        self.calls = {}
        self.hang = threading.Event()
        self.ended = threading.Event()
        self._mu = threading.Lock()

    def _count(self, method):
        with self._mu:
            self.calls[method] = self.calls.get(method, 0) + 1

    def _net(self, handle, context):
        n = self.nets.get(handle)
        if n is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "no model with handle %d in the model service" % handle)
        return n

    def _x(self, n, b, context, targets=None):
        x = wire.float32s(b)
        if len(x) == 0 or len(x) % (n.c * n.t):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "x has %d values, not a whole number of inputs of %d" % (len(x), n.c * n.t))
        x = x.reshape(-1, n.c * n.t)
        if targets is not None:
            if len(targets) != len(x):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "%d targets for %d inputs" % (len(targets), len(x)))
            for i, t in enumerate(targets):
                if not 0 <= t < n.k:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                  "input %d: target class %d out of range 0..%d" % (i, t, n.k - 1))
        return x

    def Describe(self, request, context):
        self._count("Describe")
        n = self._net(request.handle, context)
        return plugin_pb2.ModelInfo(arch_json=json.dumps(n.arch()).encode(), input_len=n.c * n.t, classes=n.k)

    def Probs(self, request, context):
        self._count("Probs")
        if self.hang.is_set():
            # Hang until the caller's call ends (or 20 s pass, so that a
            # client that never ends its calls fails a test, not hangs it).
            give_up = time.monotonic() + 20
            while context.is_active() and self.hang.is_set() and time.monotonic() < give_up:
                time.sleep(0.01)
            if not context.is_active():
                self.ended.set()
            context.abort(grpc.StatusCode.UNAVAILABLE, "hung for 20 s")
        n = self._net(request.handle, context)
        return plugin_pb2.ProbsResponse(probs=wire.float32_bytes(n.probs(self._x(n, request.x, context))))

    def InputGrad(self, request, context):
        self._count("InputGrad")
        n = self._net(request.handle, context)
        x = self._x(n, request.x, context, request.targets)
        return plugin_pb2.InputGradResponse(grad=wire.float32_bytes(n.input_grad(x, request.targets)),
                                            probs=wire.float32_bytes(n.probs(x)))

    def Layer(self, request, context):
        self._count("Layer")
        n = self._net(request.handle, context)
        shapes = {"input": (n.c, n.t), "logits": (n.k, 1)}
        if request.layer not in shapes:
            context.abort(grpc.StatusCode.NOT_FOUND, "no layer %r (layers: input, logits)" % request.layer)
        c, t = shapes[request.layer]
        if not request.x:
            return plugin_pb2.LayerResponse(channels=c, length=t)
        x = self._x(n, request.x, context, request.targets)
        if request.layer == "input":
            act, grad = x, n.input_grad(x, request.targets)
        else:
            act, grad = n.logits(x), n.logit_grad(x, request.targets)
        return plugin_pb2.LayerResponse(channels=c, length=t, act=wire.float32_bytes(act), grad=wire.float32_bytes(grad))

    def Windows(self, request, context):
        self._count("Windows")
        n = self._net(request.handle, context)
        x = self._x(n, request.x, context, request.targets)
        z = wire.float32s(request.baseline_x).reshape(-1, n.c * n.t) if request.baseline_x else None
        out = np.zeros((len(x), len(request.starts)), dtype=np.float32)
        for bi in range(len(x)):
            for j, s in enumerate(request.starts):
                if not (0 <= s and s + request.width <= n.t):
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, "window %d at %d of width %d" % (j, s, request.width))
                xo = x[bi].reshape(n.c, n.t).copy()
                rows = slice(None)
                if request.HasField("channel"):
                    if not 0 <= request.channel < n.c:
                        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "channel %d" % request.channel)
                    rows = slice(request.channel, request.channel + 1)
                if z is None:
                    xo[rows, s:s + request.width] = np.float32(request.baseline)
                else:
                    xo[rows, s:s + request.width] = z[bi].reshape(n.c, n.t)[rows, s:s + request.width]
                out[bi, j] = n.probs(xo.reshape(1, -1))[0, request.targets[bi]]
        p0 = n.probs(x)[np.arange(len(x)), list(request.targets)].astype(np.float32)
        return plugin_pb2.WindowsResponse(probs=wire.float32_bytes(out), unperturbed=wire.float32_bytes(p0))

    def Spans(self, request, context):
        self._count("Spans")
        n = self._net(request.handle, context)
        x = self._x(n, request.x, context, [request.target])
        b, ch = list(request.bounds), list(request.channels)
        out, prev = [], 0
        for e in request.ends:
            xo = x[0].reshape(n.c, n.t).copy()
            for i in range(prev, e):
                rows = slice(None) if not ch or ch[i] == -1 else ch[i]
                xo[rows, b[2 * i]:b[2 * i + 1]] = np.float32(request.baseline)
            out.append(n.probs(xo.reshape(1, -1))[0, request.target])
            prev = e
        return plugin_pb2.SpansResponse(probs=wire.float32_bytes(np.array(out, dtype=np.float32)))


class Served:
    """A Service on a unix socket in a temporary directory; close() stops
    it. address is the socket's path (what a ModelService carries)."""

    def __init__(self, nets):
        self.dir = tempfile.TemporaryDirectory()
        self.address = os.path.join(self.dir.name, "model.sock")
        self.service = Service()
        self.service.nets.update(nets)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                                  options=[("grpc.max_receive_message_length", wire.MAX_MESSAGE_SIZE),
                                           ("grpc.max_send_message_length", wire.MAX_MESSAGE_SIZE)])
        plugin_pb2_grpc.add_ModelServicer_to_server(self.service, self.server)
        if self.server.add_insecure_port("unix:" + self.address) == 0:
            raise RuntimeError("cannot listen on %s" % self.address)
        self.server.start()

    def ref(self, handle):
        return plugin_pb2.ModelService(address=self.address, handle=handle)

    def close(self):
        self.service.hang.clear()
        self.server.stop(0).wait()
        self.dir.cleanup()
