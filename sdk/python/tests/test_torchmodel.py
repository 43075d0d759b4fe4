"""The model server over torch modules (uaxai_plugin.torchmodel), through
the kit's own client of the service (Model.from_service): every method
on the six networks of testdata/golden/archs against the files PyTorch
wrote there (probabilities, Saliency, raw LayerGradCam, Captum
Occlusion), the perturbation methods against plain forward passes of the
perturbed inputs, per-channel windows against the baseline signal that
occludes one channel, logits against probabilities, and the checks of bad
requests (status code and what the message says is accepted)."""

import json
import os
import sys
import tempfile
import unittest

import require  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import grpc  # noqa: E402
import numpy as np  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError as e:  # pragma: no cover
    require.missing("torch", e)
    torch = None

from uaxai_plugin import Model, ServiceError  # noqa: E402
from uaxai_plugin._pb import plugin_pb2, plugin_pb2_grpc  # noqa: E402

if torch is not None:
    from uaxai_plugin import torchmodel as tm  # noqa: E402

GOLDEN = os.path.join(HERE, "..", "..", "..", "testdata", "golden", "archs")
ARCHS = {  # folder: (class, input channels, Grad-CAM layer)
    "fcn": ("FCN", 1, "conv3"),
    "resnet1d": ("ResNet1D", 1, "block3"),
    "inceptiontime": ("InceptionTime", 1, "inc3"),
    "stridednet": ("StridedNet", 1, "conv3"),
    "resnet1d-3ph": ("ResNet1D", 3, "block3"),
    "lstm": ("LSTMNet", 1, "lstm"),
}
T = 640


def load(name):
    cls, cin, _ = ARCHS[name]
    m = tm.load_module(os.path.join(GOLDEN, "archs.py") + ":" + cls, {"cin": cin})
    m.load_state_dict(tm.load_state_dict(os.path.join(GOLDEN, name, "model.safetensors")))
    return m


def csv(name, f):
    return np.loadtxt(os.path.join(GOLDEN, name, f), delimiter=",", dtype=np.float32, ndmin=2)


def rel(got, want):
    """The largest |got - want| of each row over that row's largest |want|."""
    got, want = np.reshape(got, (len(want), -1)), np.reshape(want, (len(want), -1))
    return float(np.max(np.abs(got - want) / np.abs(want).max(axis=1, keepdims=True)))


def accumulate(p0, pw, starts, width, n):
    """Captum's Occlusion map of one channel: the mean of p0 - pw over the windows covering each sample."""
    s, c = np.zeros(n), np.zeros(n)
    for j, st in enumerate(starts):
        s[st:st + width] += p0 - pw[j]
        c[st:st + width] += 1
    return np.where(c > 0, s / np.maximum(c, 1), 0)


@unittest.skipIf(torch is None, "uaxai_plugin.torchmodel needs PyTorch (Debian: python3-torch)")
class TorchServerCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = tm.ModelServer(threads=1, chunk=32)
        cls.handles, cls.modules = {}, {}
        for name in ARCHS:
            cls.modules[name] = load(name)
            cls.handles[name] = cls.srv.add(tm.TorchDraw(cls.modules[name], ARCHS[name][1], T))
        cls.addr = cls.srv.start()
        cls.stub = plugin_pb2_grpc.ModelStub(grpc.insecure_channel("unix:" + cls.addr))

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()

    def client(self, name):
        return Model.from_service(plugin_pb2.ModelService(address=self.addr, handle=self.handles[name]))

    def inputs(self, name):
        x = csv(name, "waveforms.csv")
        t = np.loadtxt(os.path.join(GOLDEN, name, "targets.csv"), dtype=np.int64)
        return x, t

    def test_describe(self):
        want = {"fcn": (16, 640), "resnet1d": (32, 640), "inceptiontime": (32, 640), "stridednet": (32, 79),
                "resnet1d-3ph": (32, 640), "lstm": (32, 160)}
        for name, (cls, cin, layer) in ARCHS.items():
            info = self.stub.Describe(plugin_pb2.ModelRef(handle=self.handles[name]))
            arch = json.loads(info.arch_json)
            self.assertEqual(arch, {"name": cls, "in_channels": cin, "in_len": T, "layers": []}, name)
            self.assertEqual((info.input_len, info.classes, info.pooled_len), (cin * T, 16, 0), name)
            layers = {ly.name: (ly.channels, ly.length) for ly in info.layers}
            self.assertEqual(layers[layer], want[name], name)
            self.assertNotIn("fc", layers, name)  # (B, classes): no positions in time
            m = self.client(name)
            self.assertEqual(m.layer_shape(layer), want[name])
        info = self.stub.Describe(plugin_pb2.ModelRef(handle=self.handles["inceptiontime"]))
        self.assertEqual({ly.name: (ly.channels, ly.length) for ly in info.layers}["inc3.convs.2"], (8, 640))
        info = self.stub.Describe(plugin_pb2.ModelRef(handle=self.handles["stridednet"]))
        self.assertNotIn("drop", [ly.name for ly in info.layers])

    def test_golden(self):
        """Probs, InputGrad, Layer (Grad-CAM) and Windows (occlusion, window 60, stride 20, baseline 0, one
        channel at a time) against PyTorch's files."""
        for name, (_, cin, layer) in ARCHS.items():
            with self.subTest(name):
                m = self.client(name)
                x, t = self.inputs(name)
                self.assertLess(np.abs(m.probs(x) - csv(name, "probs.csv")).max(), 1e-5)
                self.assertLess(rel(m.input_grad(x, t), csv(name, "input_grad.csv")), 1e-4)
                act, grad = m.layer(layer, x, t)
                cam = (grad.mean(axis=2, keepdims=True) * act).sum(axis=1)
                self.assertLess(rel(cam, csv(name, "gradcam_raw.csv")), 1e-4)
                starts = list(range(0, T - 60 + 1, 20))
                occ = np.zeros((8, cin, T))
                for ch in range(cin):
                    pw, p0 = m.windows(x, t, starts, 60, 0.0, unperturbed=True, channel=ch)
                    for b in range(8):
                        occ[b, ch] = accumulate(p0[b], pw[b], starts, 60, T)
                self.assertLess(rel(occ, csv(name, "occlusion.csv")), 1e-4)

    def test_windows_against_forward_passes(self):
        """A window of every channel, a constant baseline and a baseline signal: p_target of the occluded
        copies computed one forward pass each."""
        name = "resnet1d-3ph"
        m, mod = self.client(name), self.modules[name]
        x, t = self.inputs(name)
        x, t = x[:2], t[:2]
        z = np.random.default_rng(1).normal(size=x.shape).astype(np.float32)
        starts, w = [0, 7, 600], 40
        for base in (0.5, z):
            got = m.windows(x, t, starts, w, base)
            for b in range(2):
                for j, s in enumerate(starts):
                    xo = x[b].reshape(3, T).copy()
                    xo[:, s:s + w] = 0.5 if base is not z else z[b].reshape(3, T)[:, s:s + w]
                    with torch.no_grad():
                        want = mod(torch.from_numpy(xo[None]))[0, t[b]].item()
                    self.assertAlmostEqual(float(got[b, j]), want, delta=1e-6)

    def test_channel_is_the_one_channel_baseline(self):
        """Windows with channel c equals Windows with the baseline signal x with row c replaced by the
        constant (what Go's occlusion sends): the same perturbed inputs."""
        name = "resnet1d-3ph"
        m = self.client(name)
        x, t = self.inputs(name)
        starts = list(range(0, T - 60 + 1, 20))
        for ch in range(3):
            z = x.reshape(8, 3, T).copy()
            z[:, ch] = -0.25
            a = m.windows(x, t, starts, 60, -0.25, channel=ch)
            b = m.windows(x, t, starts, 60, z.reshape(8, -1))
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)

    def test_spans_against_forward_passes(self):
        name = "resnet1d-3ph"
        m, mod = self.client(name), self.modules[name]
        x, t = self.inputs(name)
        perts = [[], [(0, 10), (50, 90)], [(600, 640)]]
        cperts = [[(0, 100, 1), (50, 60, 2)], [(10, 20, -1)], []]
        for ps in (perts, cperts):
            got = m.spans(x[0], int(t[0]), ps, baseline=0.3)
            for j, p in enumerate(ps):
                xo = x[0].reshape(3, T).copy()
                for sp in p:
                    rows = slice(None) if len(sp) == 2 or sp[2] < 0 else sp[2]
                    xo[rows, sp[0]:sp[1]] = 0.3
                with torch.no_grad():
                    want = mod(torch.from_numpy(xo[None]))[0, t[0]].item()
                self.assertAlmostEqual(float(got[j]), want, delta=1e-6)

    def test_logits(self):
        """A module that returns logits, served with output = "logits", gives the softmax module's
        probabilities; served as "probs" it is refused with the key that fixes it."""
        mod = self.modules["fcn"]

        class Logits(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = mod

            def forward(self, x):
                return self.net.logits(x)

        d = tm.TorchDraw(Logits(), 1, T, output="logits")
        x, _ = self.inputs("fcn")
        np.testing.assert_allclose(d.probs(x, 4), csv("fcn", "probs.csv"), rtol=0, atol=1e-6)
        with self.assertRaisesRegex(ValueError, 'output = "logits"'):
            tm.TorchDraw(Logits(), 1, T)
        with self.assertRaisesRegex(ValueError, "want \"probs\""):
            tm.TorchDraw(mod, 1, T, output="softmax")

    def test_refusals(self):
        h = self.handles["resnet1d-3ph"]
        x1 = np.zeros(3 * T, np.float32)
        good = x1.tobytes()
        nan = x1.copy()
        nan[5] = np.nan
        cases = [
            ("Probs", plugin_pb2.ModelBatch(handle=h + 1, x=good), grpc.StatusCode.NOT_FOUND, "no model with handle"),
            ("Probs", plugin_pb2.ModelBatch(handle=h, x=good[:-4]), None, "want B*1920"),
            ("Probs", plugin_pb2.ModelBatch(handle=h, x=good[:-1]), None, "not a whole number of float32"),
            ("Probs", plugin_pb2.ModelBatch(handle=h, x=good, targets=[1]), None, "takes no targets"),
            ("Probs", plugin_pb2.ModelBatch(handle=h, x=nan.tobytes()), None, "value 5 (input 0, sample 5) is NaN"),
            ("InputGrad", plugin_pb2.ModelBatch(handle=h, x=good, targets=[16]), None, "out of range 0..15"),
            ("InputGrad", plugin_pb2.ModelBatch(handle=h, x=good), None, "0 targets for 1 inputs"),
            ("Layer", plugin_pb2.LayerRequest(handle=h, layer="fc"), None, "block3 (32 x 640)"),
            ("Layer", plugin_pb2.LayerRequest(handle=h, layer="x" * 300), None, "at most 256"),
            ("Windows", plugin_pb2.WindowsRequest(handle=h, x=good, targets=[0], starts=[0], width=641), None,
             "want 1..640"),
            ("Windows", plugin_pb2.WindowsRequest(handle=h, x=good, targets=[0], width=60), None, "no starts"),
            ("Windows", plugin_pb2.WindowsRequest(handle=h, x=good, targets=[0], starts=[590], width=60), None,
             "must lie in 0..640"),
            ("Windows", plugin_pb2.WindowsRequest(handle=h, x=good, targets=[0], starts=[0], width=60, channel=3),
             None, "want 0..2"),
            ("Windows", plugin_pb2.WindowsRequest(handle=h, x=good, targets=[0], starts=[0], width=60,
                                                  baseline=float("inf")), None, "baseline +Inf"),
            ("Windows", plugin_pb2.WindowsRequest(handle=h, x=good, targets=[0], starts=[0], width=60,
                                                  baseline_x=good[:8]), None, "want one baseline signal per input"),
            ("Spans", plugin_pb2.SpansRequest(handle=h, x=good + good, target=0, bounds=[0, 1], ends=[1]), None,
             "want one input"),
            ("Spans", plugin_pb2.SpansRequest(handle=h, x=good, target=0, bounds=[0, 10, 5, 20], ends=[2]), None,
             "want spans in order"),
            ("Spans", plugin_pb2.SpansRequest(handle=h, x=good, target=0, bounds=[0, 10], ends=[1], channels=[3]),
             None, "want -1 (every channel) or 0..2"),
            ("Spans", plugin_pb2.SpansRequest(handle=h, x=good, target=0, bounds=[0, 10], ends=[2]), None,
             "want the number of (lo, hi) pairs, 1"),
            ("Spans", plugin_pb2.SpansRequest(handle=h, x=good, target=0, bounds=[0, 641], ends=[1]), None,
             "want 0 <= lo < hi <= 640"),
        ]
        for method, req, code, want in cases:
            with self.subTest(method=method, want=want):
                with self.assertRaises(grpc.RpcError) as e:
                    getattr(self.stub, method)(req)
                self.assertEqual(e.exception.code(), code or grpc.StatusCode.INVALID_ARGUMENT)
                self.assertIn(want, e.exception.details())
        # The kit's client reports the service's refusal as a ServiceError.
        with self.assertRaisesRegex(ServiceError, "no layer 'nope'"):
            self.client("lstm").layer_shape("nope")

    def test_nonfinite_output_is_refused(self):
        class Bad(torch.nn.Module):
            def forward(self, x):
                p = torch.full((x.shape[0], 2), 0.5)
                p[:, 1] = torch.where(x.abs().amax(dim=(1, 2)) > 1, float("nan"), 0.5)
                return p

        d = tm.TorchDraw(Bad(), 1, 4)
        with self.assertRaisesRegex(ValueError, "class 1 of input 1 is nan"):
            d.probs(np.array([[0, 0, 0, 0], [0, 2, 0, 0]], np.float32), 8)

    def test_load_state_dict(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bad.safetensors")
            with open(p, "wb") as f:
                f.write(b"\x40\x00\x00\x00\x00\x00\x00\x00{}")
            with self.assertRaisesRegex(ValueError, "bad.safetensors: header of 64 bytes"):
                tm.load_state_dict(p)
        with self.assertRaisesRegex(ValueError, r"has no torch.nn.Module class 'Nope' \(it has: .*ResNet1D"):
            tm.load_module(os.path.join(GOLDEN, "archs.py") + ":Nope")


if __name__ == "__main__":
    unittest.main()
