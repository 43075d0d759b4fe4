"""The kit's client of the model service against a fake service
(fakemodel: softmax of a linear map, whose probabilities and gradients
have closed forms): each method against the closed form (and the input
gradient against finite differences of the probabilities), the input
checks made before any call, the service's errors, params mode, and the
Load and Explain calls of a wants_model explainer, including that a hung
model call ends with the Explain."""

import json
import os
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import grpc  # noqa: E402
import numpy as np  # noqa: E402

import uaxai_plugin as kit  # noqa: E402
from uaxai_plugin import server, wire  # noqa: E402
from uaxai_plugin._pb import plugin_pb2, plugin_pb2_grpc  # noqa: E402

import archs  # noqa: E402
import fakemodel  # noqa: E402

C, T, K = 2, 12, 4  # channels, samples a channel, classes


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class ServiceCase(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(7)
        self.net = fakemodel.Net.random(rng, C, T, K)
        self.fake = fakemodel.Served({7: self.net})
        self.svc = self.fake.service
        self.m = kit.Model.from_service(self.fake.ref(7))
        self.x = rng.normal(0, 1, (3, C * T)).astype(np.float32)
        self.targets = np.array([0, 3, 1])

    def tearDown(self):
        self.fake.close()

    def want_probs(self, x):
        # The closed form, written here from W and b (not the fake's code).
        return softmax(x.astype(np.float64) @ self.net.w.T + self.net.b)


class TestClient(ServiceCase):
    def test_describe_once_and_one_channel(self):
        m = self.m
        self.assertEqual((m.input_len, m.classes, m.params), (C * T, K, None))
        self.assertEqual(m.arch["in_channels"], C)
        self.assertEqual(m.arch["in_len"], T)
        self.assertEqual(m.service, (self.fake.address, 7))
        self.assertEqual(self.svc.calls, {"Describe": 1})
        m.probs(self.x)
        m.probs(self.x)
        self.assertEqual(self.svc.calls, {"Describe": 1, "Probs": 2})
        m2 = kit.Model.from_service(self.fake.ref(7))
        self.assertIs(m2._stub.Probs._channel, m._stub.Probs._channel)
        self.assertIs(kit.service_channel(self.fake.address), kit.service_channel(self.fake.address))

    def test_probs(self):
        p = self.m.probs(self.x)
        self.assertEqual((p.shape, p.dtype), ((3, K), np.float32))
        np.testing.assert_allclose(p, self.want_probs(self.x), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(p.sum(axis=1), 1, atol=1e-6)
        # A list is float32-able too; no input, no call.
        np.testing.assert_array_equal(self.m.probs(self.x.tolist()), p)
        n = self.svc.calls["Probs"]
        self.assertEqual(self.m.probs(np.zeros((0, C * T))).shape, (0, K))
        self.assertEqual(self.svc.calls["Probs"], n)

    def test_input_grad(self):
        g = self.m.input_grad(self.x, self.targets)
        self.assertEqual((g.shape, g.dtype), ((3, C * T), np.float32))
        p = self.want_probs(self.x)
        w = self.net.w
        for b, c in enumerate(self.targets):
            np.testing.assert_allclose(g[b], p[b, c] * (w[c] - p[b] @ w), rtol=1e-5, atol=1e-7)
        # Central differences of the service's own probabilities (float32,
        # so a coarse step): independent of any gradient formula.
        h = 1e-2
        for i in (0, 5, C * T - 1):
            e = np.zeros(C * T, dtype=np.float32)
            e[i] = h
            up = self.m.probs(self.x + e).astype(np.float64)
            dn = self.m.probs(self.x - e).astype(np.float64)
            fd = (up - dn)[np.arange(3), self.targets] / (2 * h)
            np.testing.assert_allclose(g[:, i], fd, atol=2e-4)

    def test_layer(self):
        self.assertEqual(self.m.layer_shape("input"), (C, T))
        self.assertEqual(self.m.layer_shape("logits"), (K, 1))
        n = self.svc.calls["Layer"]
        self.assertEqual(self.m.layer_shape("logits"), (K, 1))
        self.assertEqual(self.svc.calls["Layer"], n, "the shape is asked once")
        act, grad = self.m.layer("logits", self.x, self.targets)
        self.assertEqual((act.shape, grad.shape, act.dtype, grad.dtype), ((3, K, 1), (3, K, 1), np.float32, np.float32))
        z = self.x.astype(np.float64) @ self.net.w.T + self.net.b
        np.testing.assert_allclose(act[:, :, 0], z, rtol=1e-5, atol=1e-6)
        p = softmax(z)
        for b, c in enumerate(self.targets):
            np.testing.assert_allclose(grad[b, :, 0], p[b, c] * (np.eye(K)[c] - p[b]), rtol=1e-5, atol=1e-7)
        # The input layer: the input, in (B, C, T) order, and its gradient.
        act, grad = self.m.layer("input", self.x, self.targets)
        np.testing.assert_array_equal(act, self.x.reshape(3, C, T))
        np.testing.assert_array_equal(grad, self.m.input_grad(self.x, self.targets).reshape(3, C, T))

    def occluded(self, x, s, width, z, channel=None):
        xo = x.reshape(C, T).copy()
        rows = slice(None) if channel is None else slice(channel, channel + 1)
        xo[rows, s:s + width] = z.reshape(C, T)[rows, s:s + width] if np.ndim(z) else z
        return xo.reshape(-1)

    def test_windows_one_channel(self):
        # channel c: the window of channel c alone is replaced (the request
        # carries the channel; the fake service honours it as the host does).
        starts = [0, 3, 7]
        z = np.random.default_rng(2).normal(0, 1, self.x.shape).astype(np.float32)
        for channel in range(C):
            for baseline in (0.5, z):
                got = self.m.windows(self.x, self.targets, starts, 5, baseline, channel=channel)
                for b in range(3):
                    rows = np.array([self.occluded(self.x[b], s, 5, baseline[b] if np.ndim(baseline) else baseline,
                                                   channel) for s in starts])
                    want = self.want_probs(rows)[:, self.targets[b]]
                    np.testing.assert_allclose(got[b], want, rtol=1e-6, atol=1e-7)

    def test_windows(self):
        starts = [0, 3, 4, 12 - 5]
        z = np.random.default_rng(1).normal(0, 1, self.x.shape).astype(np.float32)
        for baseline in (0.0, -1.5, 2, z):
            got = self.m.windows(self.x, self.targets, starts, 5, baseline)
            self.assertEqual((got.shape, got.dtype), ((3, 4), np.float32))
            for b in range(3):
                rows = np.array([self.occluded(self.x[b], s, 5, baseline[b] if np.ndim(baseline) else baseline)
                                 for s in starts])
                want = self.want_probs(rows)[:, self.targets[b]]
                np.testing.assert_allclose(got[b], want, rtol=1e-6, atol=1e-7)
        self.assertEqual(self.m.windows(self.x, self.targets, [], 5).shape, (3, 0))
        # unperturbed: p_target(x) by the same computation, with the windows.
        got, p0 = self.m.windows(self.x, self.targets, starts, 5, 0.0, unperturbed=True)
        np.testing.assert_array_equal(got, self.m.windows(self.x, self.targets, starts, 5, 0.0))
        self.assertEqual((p0.shape, p0.dtype), ((3,), np.float32))
        np.testing.assert_allclose(p0, self.want_probs(self.x)[np.arange(3), self.targets], rtol=1e-6, atol=1e-7)
        _, p0 = self.m.windows(self.x, self.targets, [], 5, unperturbed=True)
        np.testing.assert_allclose(p0, self.want_probs(self.x)[np.arange(3), self.targets], rtol=1e-6, atol=1e-7)

    def test_channel_spans(self):
        """Spans of single channels (lo, hi, channel), -1 every channel,
        in any order and overlapping, mixed with pairs (every channel)."""
        perts = [[], [(0, 4, 0)], [(9, 12, C - 1), (1, 5, 0), (3, 6, 0)], [(2, 4, -1), (0, 3)]]
        got = self.m.spans(self.x[1], 2, perts, baseline=0.5)
        self.assertEqual((got.shape, got.dtype), ((4,), np.float32))
        for j, pert in enumerate(perts):
            xo = self.x[1].reshape(C, T).copy()
            for sp in pert:
                rows = slice(None) if len(sp) == 2 or sp[2] == -1 else sp[2]
                xo[rows, sp[0]:sp[1]] = 0.5
            np.testing.assert_allclose(got[j], self.want_probs(xo.reshape(1, -1))[0, 2], rtol=1e-6, atol=1e-7)

    def test_spans(self):
        perts = [[], [(0, 4)], [(1, 3), (3, 5), (9, 12)], [(0, T)]]
        got = self.m.spans(self.x[1], 2, perts, baseline=0.5)
        self.assertEqual((got.shape, got.dtype), ((4,), np.float32))
        for j, pert in enumerate(perts):
            xo = self.x[1].reshape(C, T).copy()
            for lo, hi in pert:
                xo[:, lo:hi] = 0.5
            np.testing.assert_allclose(got[j], self.want_probs(xo.reshape(1, -1))[0, 2], rtol=1e-6, atol=1e-7)
        self.assertEqual(self.m.spans(self.x[0], 0, []).shape, (0,))
        before = dict(self.svc.calls)
        for call, msg in [
            (lambda: self.m.spans(self.x[0], 0, [[(0, T + 1)]]), r"perturbations\[0\]\[0\] is \[0, 13\), want 0 <= lo < hi <= 12"),
            (lambda: self.m.spans(self.x[0], 0, [[(3, 3)]]), r"is \[3, 3\)"),
            (lambda: self.m.spans(self.x[0], 0, [[], [(4, 6), (5, 7)]]), r"perturbations\[1\]\[1\] \[5, 7\) starts before the previous span ends \(6\)"),
            (lambda: self.m.spans(self.x[0], 0, [[(1,)]]), r"want a pair \(lo, hi\) or a triple \(lo, hi, channel\) of integers"),
            (lambda: self.m.spans(self.x[0], 0, [[(1, 2, C)]]), r"perturbations\[0\]\[0\] has channel %d, want -1 \(every channel\) or 0..%d" % (C, C - 1)),
            (lambda: self.m.spans(self.x[0], 9, [[]]), r"targets\[0\] is 9"),
            (lambda: self.m.spans(self.x[0], 0, [[]], baseline=np.nan), r"baseline is nan, want a finite number"),
            (lambda: self.m.spans(self.x[:2], 0, [[]]), r"x has shape \(2, 24\), want \(1, 24\)"),
        ]:
            with self.assertRaisesRegex(ValueError, msg):
                call()
        self.assertEqual(self.svc.calls, before, "a rejected call reached the service")

    def test_messages_beyond_grpcs_default(self):
        # gRPC's default limit is 4 MiB a message; the kit's channel takes
        # up to 1 GiB: a 5.8 MB gradient answer arrives.
        x = np.tile(self.x, (20000, 1))
        t = np.tile(self.targets, 20000)
        self.assertGreater(x.nbytes, 5 << 20)  # the gradient answer is as large
        g = self.m.input_grad(x, t)
        np.testing.assert_array_equal(g[-3:], self.m.input_grad(self.x, self.targets))

    def test_split_by_the_service_bounds(self):
        # Bounds so small that every call is split: the answers are those
        # of unsplit calls, and the service saw as many requests as the
        # bounds make.
        x = np.tile(self.x, (3, 1))  # 9 inputs of 24 values
        t = np.tile(self.targets, 3)
        starts = [0, 1, 2, 3, 4]
        perts = [[], [(0, 4)], [(1, 3), (3, 5), (9, 12)], [(0, T)], [(2, 3)]]
        want = (self.m.probs(x), self.m.input_grad(x, t), self.m.layer("input", x, t),
                self.m.windows(x, t, starts, 3, 0.5, unperturbed=True), self.m.spans(x[0], 1, perts))
        from uaxai_plugin import model as mod
        saved = {k: getattr(mod, k) for k in dir(mod) if k.startswith("MAX_SERVICE_")}
        try:
            mod.MAX_SERVICE_VALUES = 4 * C * T  # 4 inputs a request
            mod.MAX_SERVICE_STARTS, mod.MAX_SERVICE_WINDOWS = 3, 8  # 2 starts for 4 inputs, 3 for 1
            mod.MAX_SERVICE_PERTURBATIONS, mod.MAX_SERVICE_PAIRS = 2, 2
            before = dict(self.svc.calls)
            got = (self.m.probs(x), self.m.input_grad(x, t), self.m.layer("input", x, t),
                   self.m.windows(x, t, starts, 3, 0.5, unperturbed=True), self.m.spans(x[0], 1, perts))
            calls = {k: self.svc.calls[k] - before.get(k, 0) for k in self.svc.calls}
        finally:
            for k, v in saved.items():
                setattr(mod, k, v)
        for g, w in zip([got[0], got[1], *got[2], *got[3], got[4]], [want[0], want[1], *want[2], *want[3], want[4]]):
            np.testing.assert_array_equal(g, w)
        # 9 inputs: 4 + 4 + 1. Windows: inputs 4 + 4 (starts 2 + 2 + 1
        # each) + 1 (starts 3 + 2). Spans: perturbations {[], [(0,4)]},
        # {3 spans, alone}, {[(0,T)], [(2,3)]}.
        self.assertEqual((calls["Probs"], calls["InputGrad"], calls["Layer"], calls["Windows"], calls["Spans"]),
                         (3, 3, 3, 3 + 3 + 2, 3))

    def test_checks_before_calling(self):
        before = dict(self.svc.calls)
        m, x, t = self.m, self.x, self.targets
        for call, msg in [
            (lambda: m.probs(x[0]), r"x has shape \(24,\), want \(B, 24\)"),
            (lambda: m.probs(x[:, :5]), r"x has shape \(3, 5\), want \(B, 24\)"),
            (lambda: m.probs([["a"] * 24]), "want an array"),
            (lambda: m.probs(np.where(np.arange(24) == 9, np.nan, x)), r"x\[0, 9\] is nan"),
            (lambda: m.probs(np.full((1, 24), 1e39)), r"x\[0, 0\] is inf as a float32"),
            (lambda: m.input_grad(x, [0, 1]), r"targets has shape \(2,\), want \(3,\)"),
            (lambda: m.input_grad(x, [0, 4, 1]), r"targets\[1\] is 4, want a class in 0..3"),
            (lambda: m.input_grad(x, [0, -1, 1]), r"targets\[1\] is -1"),
            (lambda: m.input_grad(x, [0.0, 1.0, 2.0]), "targets has dtype float64, want integers"),
            (lambda: m.layer("", x, t), "layer name is ''"),
            (lambda: m.layer_shape(3), "layer name is 3"),
            (lambda: m.windows(x, t, [0, 8], 5), r"starts\[1\] is 8: with width 5 a start must be in 0..7"),
            (lambda: m.windows(x, t, [-1], 5), r"starts\[0\] is -1"),
            (lambda: m.windows(x, t, [[0]], 5), r"starts has shape \(1, 1\)"),
            (lambda: m.windows(x, t, [0], 0), "width is 0, want an integer in 1..12"),
            (lambda: m.windows(x, t, [0], 13), "width is 13"),
            (lambda: m.windows(x, t, [0], 2.0), "width is 2.0"),
            (lambda: m.windows(x, t, [0], 2, float("nan")), "baseline is nan, want a finite number"),
            (lambda: m.windows(x, t, [0], 2, 1e39), "within float32"),
            (lambda: m.windows(x, t, [0], 2, "mean"), "baseline is 'mean', want a number or an array"),
            (lambda: m.windows(x, t, [0], 2, x[:2]), r"baseline has shape \(2, 24\), want \(3, 24\)"),
            (lambda: m.windows(x, t, [0], 2, channel=C), r"channel is %d, want None \(every channel\) or an integer in 0..%d" % (C, C - 1)),
            (lambda: m.windows(x, t, [0], 2, channel=-1), r"channel is -1"),
            (lambda: m.windows(x, t, [0], 2, channel=True), r"channel is True"),
        ]:
            with self.assertRaisesRegex(ValueError, msg):
                call()
        self.assertEqual(self.svc.calls, before, "no call reaches the service")

    def test_service_errors(self):
        # The host released the draw: the service's error names the handle.
        del self.svc.nets[7]
        with self.assertRaises(kit.ServiceError) as cm:
            self.m.probs(self.x)
        e = cm.exception
        self.assertIsInstance(e, kit.Error)
        self.assertEqual(str(e), "model service: Probs: no model with handle 7 in the model service")
        self.assertEqual((e.method, e.code), ("Probs", grpc.StatusCode.NOT_FOUND))
        for call, method in [(lambda: self.m.input_grad(self.x, self.targets), "InputGrad"),
                             (lambda: self.m.layer("logits", self.x, self.targets), "Layer"),
                             (lambda: self.m.windows(self.x, self.targets, [0], 2), "Windows")]:
            with self.assertRaisesRegex(kit.Error, "^model service: %s: no model with handle 7" % method):
                call()
        self.svc.nets[7] = self.net
        with self.assertRaisesRegex(kit.Error, r"^model service: Layer: no layer 'conv9' \(layers: input, logits\)$"):
            self.m.layer("conv9", self.x, self.targets)
        with self.assertRaisesRegex(kit.Error, "^model service: Layer: no layer 'conv9'"):
            self.m.layer_shape("conv9")
        with self.assertRaisesRegex(kit.Error, "^model service: Describe: no model with handle 99 in the model service$"):
            kit.Model.from_service(self.fake.ref(99))

    def test_unreachable(self):
        with tempfile.TemporaryDirectory() as d:
            ref = plugin_pb2.ModelService(address=os.path.join(d, "none"), handle=1)
            with self.assertRaises(kit.ServiceError) as cm:
                kit.Model.from_service(ref)
        self.assertEqual(cm.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertTrue(str(cm.exception).startswith("model service: Describe: "), str(cm.exception))
        with self.assertRaisesRegex(wire.WireError, "has no address"):
            kit.Model.from_service(plugin_pb2.ModelService(handle=1))

    def test_describe_that_does_not_add_up(self):
        class Liar(fakemodel.Service):
            def Describe(self, request, context):
                return plugin_pb2.ModelInfo(arch_json=json.dumps(self.nets[7].arch()).encode(), input_len=5, classes=K)
        self.fake.server.stop(0).wait()
        srv = fakemodel.grpc.server(fakemodel.futures.ThreadPoolExecutor(max_workers=2))
        liar = Liar()
        liar.nets[7] = self.net
        plugin_pb2_grpc.add_ModelServicer_to_server(liar, srv)
        srv.add_insecure_port("unix:" + self.fake.address)
        srv.start()
        try:
            with self.assertRaisesRegex(kit.Error, r"input_len 5 and classes 4 do not fit the architecture "
                                                   r"\(want input_len = in_channels x in_len = 2 x 12 = 24"):
                kit.Model.from_service(self.fake.ref(7))
        finally:
            srv.stop(0).wait()


class TestParamsMode(unittest.TestCase):
    def test_methods_say_to_ask_for_the_service(self):
        m = kit.Model(archs.arch("lin"), np.zeros(24))
        x = np.zeros((1, 5))
        for name, call in [("probs", lambda: m.probs(x)), ("input_grad", lambda: m.input_grad(x, [0])),
                           ("layer", lambda: m.layer("a", x, [0])), ("layer_shape", lambda: m.layer_shape("a")),
                           ("windows", lambda: m.windows(x, [0], [0], 1))]:
            with self.assertRaises(kit.Error) as cm:
                call()
            self.assertIn("model.%s: the explainer did not ask for the model service (set wants_model=True in its Info)"
                          % name, str(cm.exception))
        self.assertIsNone(m.service)


class ProbsExplainer:
    """map[b] = p(x[b])[target] at every sample (and sleeps in the service
    when the fake hangs)."""

    def __init__(self, wants_model=True):
        self.wants_model = wants_model
        self.seen = []

    def info(self):
        return kit.Info(id="explainer.probs", version="1", needs=kit.NEEDS_PROBS, wants_model=self.wants_model)

    def check(self, config):
        pass

    def explain(self, model, x, targets, seeds, config):
        self.seen.append(model)
        p = model.probs(x)
        return [np.full(model.input_len, p[b, t], dtype=np.float64) for b, t in enumerate(targets)]


class TestServer(ServiceCase):
    """Load and Explain of the kit's server for a wants_model explainer, over
    real sockets: the plugin's server calling the fake host's service."""

    def setUp(self):
        super().setUp()
        self.dir = tempfile.TemporaryDirectory()
        self.stop = threading.Event()
        self.impl = ProbsExplainer()
        self.srv = server.build_server(self.impl, self.impl.info(), self.stop, workers=2)
        addr = "unix:" + os.path.join(self.dir.name, "p")
        self.srv.add_insecure_port(addr)
        self.srv.start()
        self.ch = grpc.insecure_channel(addr)
        self.ex = plugin_pb2_grpc.ExplainerStub(self.ch)

    def tearDown(self):
        self.svc.hang.clear()
        self.ch.close()
        self.srv.stop(0).wait()
        self.dir.cleanup()
        super().tearDown()

    def code_msg(self, call):
        with self.assertRaises(grpc.RpcError) as cm:
            call()
        return cm.exception.code(), cm.exception.details()

    def explain_req(self, handle, **kw):
        return plugin_pb2.ExplainRequest(model=handle, x=wire.float32_bytes(self.x), targets=self.targets, **kw)

    def test_info_load_explain(self):
        self.assertTrue(self.ex.Info(plugin_pb2.InfoRequest(), timeout=10).wants_model)
        h = self.ex.Load(plugin_pb2.LoadRequest(service=self.fake.ref(7)), timeout=10).handle
        r = self.ex.Explain(self.explain_req(h, service=self.fake.ref(7)), timeout=10)
        p = self.want_probs(self.x)
        for b in range(3):
            np.testing.assert_allclose(wire.float64s(r.maps[b]), p[b, self.targets[b]], rtol=1e-6)
        self.assertEqual(self.impl.seen[-1].service, (self.fake.address, 7))
        # Explain's service, if given, must be the Load's.
        code, msg = self.code_msg(lambda: self.ex.Explain(self.explain_req(h, service=self.fake.ref(8)), timeout=10))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("names model service %r handle 8, but model %d was loaded from %r handle 7"
                      % (self.fake.address, h, self.fake.address), msg)
        # A service error reaches the host with the method's name.
        del self.svc.nets[7]
        self.assertEqual(self.code_msg(lambda: self.ex.Explain(self.explain_req(h), timeout=10)),
                         (grpc.StatusCode.UNKNOWN, "model service: Probs: no model with handle 7 in the model service"))

    def test_load_without_what_was_asked(self):
        C_ = grpc.StatusCode
        params = plugin_pb2.Params(arch_json=json.dumps(self.net.arch()).encode(),
                                   data=wire.float32_bytes(np.zeros(K * C * T + K)))
        self.assertEqual(self.code_msg(lambda: self.ex.Load(plugin_pb2.LoadRequest(), timeout=10)),
                         (C_.INVALID_ARGUMENT, "building the model: explainer.probs wants the model service "
                                               "(Info.wants_model), but the Load carries neither a model service nor parameters"))
        self.assertEqual(self.code_msg(lambda: self.ex.Load(plugin_pb2.LoadRequest(model=params), timeout=10)),
                         (C_.INVALID_ARGUMENT, "building the model: explainer.probs wants the model service "
                                               "(Info.wants_model), but the Load carries parameters and no model service"))
        code, msg = self.code_msg(lambda: self.ex.Load(plugin_pb2.LoadRequest(service=self.fake.ref(99)), timeout=10))
        self.assertEqual((code, msg), (C_.INVALID_ARGUMENT,
                                       "building the model: model service: Describe: no model with handle 99 in the model service"))

    def test_params_explainer_refuses_a_service(self):
        impl = ProbsExplainer(wants_model=False)
        ex = server.ExplainerServicer(impl, impl.info())

        class Ctx:
            def abort(self, code, msg):
                raise RuntimeError((code, msg))

            def is_active(self):
                return True
        with self.assertRaises(RuntimeError) as cm:
            ex.Load(plugin_pb2.LoadRequest(service=self.fake.ref(7)), Ctx())
        code, msg = cm.exception.args[0]
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("carries a model service and no parameters, but explainer.probs did not ask for the service", msg)

    def test_hung_call_ends_with_the_deadline(self):
        h = self.ex.Load(plugin_pb2.LoadRequest(service=self.fake.ref(7)), timeout=10).handle
        self.svc.hang.set()
        code, _ = self.code_msg(lambda: self.ex.Explain(self.explain_req(h), timeout=1))
        self.assertEqual(code, grpc.StatusCode.DEADLINE_EXCEEDED)
        # The plugin's Probs call had the Explain's deadline: the host side
        # sees it end instead of waiting for ever.
        self.assertTrue(self.svc.ended.wait(10), "the model call outlived the Explain")

    def test_deadline_alone(self):
        # The deadline on its own (a context that never cancels): the
        # model call is made with the time that remains.
        class Ctx:
            def is_active(self):
                return True

            def time_remaining(self):
                return 0.3

            def add_callback(self, cb):
                return True
        self.svc.hang.set()
        with self.assertRaises(kit.ServiceError) as cm:
            self.m.bound(Ctx()).probs(self.x)
        self.assertEqual(cm.exception.code, grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertTrue(self.svc.ended.wait(10))

        class Ended(Ctx):
            def is_active(self):
                return False
        n = self.svc.calls["Probs"]
        with self.assertRaisesRegex(kit.ServiceError, "^model service: Probs: not called: the plugin's call has ended"):
            self.m.bound(Ended()).probs(self.x)
        self.assertEqual(self.svc.calls["Probs"], n)
        self.assertIsNone(self.m._ctx, "bound leaves the shared model alone")

    def test_hung_call_ends_with_a_cancel(self):
        h = self.ex.Load(plugin_pb2.LoadRequest(service=self.fake.ref(7)), timeout=10).handle
        self.svc.hang.set()
        fut = self.ex.Explain.future(self.explain_req(h))  # no deadline at all
        for _ in range(1000):  # wait (up to 10 s) for the plugin's Probs call to reach the fake
            if self.svc.calls.get("Probs", 0):
                break
            threading.Event().wait(0.01)
        fut.cancel()
        self.assertTrue(self.svc.ended.wait(10), "the model call outlived the cancelled Explain")

    def test_hung_call_past_the_hosts_limit(self):
        # The host's limit of each model call (limits.model_call) comes in
        # the Load's and the Explain's metadata; a hung Probs past it ends
        # the Explain with DEADLINE_EXCEEDED, naming the call, its batch
        # and the key, although the Explain itself has no deadline.
        md = (("uaxai-model-call-ms", "1000"), ("uaxai-model-call-key", "limits.model_call"))
        h = self.ex.Load(plugin_pb2.LoadRequest(service=self.fake.ref(7)), metadata=md, timeout=10).handle
        r = self.ex.Explain(self.explain_req(h), metadata=md, timeout=10)  # answered within the limit
        self.assertEqual(len(r.maps), 3)
        self.svc.hang.set()
        code, msg = self.code_msg(lambda: self.ex.Explain(self.explain_req(h), metadata=md, timeout=60))
        self.assertEqual((code, msg), (grpc.StatusCode.DEADLINE_EXCEEDED,
                                       "model service: Probs of 3 inputs: no answer within 1s (limits.model_call)"))
        self.assertTrue(self.svc.ended.wait(10), "the model call outlived its limit")

    def test_call_limit_metadata(self):
        class Ctx:
            def __init__(self, md):
                self.md = md

            def invocation_metadata(self):
                return self.md
        key = ("uaxai-model-call-key", "limits.model_call")
        for ms, want in (("2000", (2.0, "2s (limits.model_call)")), ("300000", (300.0, "5m (limits.model_call)")),
                         ("7200000", (7200.0, "2h (limits.model_call)")), ("1500", (1.5, "1500ms (limits.model_call)"))):
            self.assertEqual(kit.model.call_limit(Ctx((("uaxai-model-call-ms", ms), key))), want)
        for md in ((), (("uaxai-model-call-ms", "soon"), key), (("uaxai-model-call-ms", "0"), key), (key,)):
            self.assertIsNone(kit.model.call_limit(Ctx(md)), md)
        self.assertIsNone(kit.model.call_limit(None))
        self.assertEqual(kit.model.call_limit(Ctx((("uaxai-model-call-ms", "1000"),))), (1.0, "1s"))


if __name__ == "__main__":
    unittest.main()
