"""explainer.captum-bridge (plugins/explainer/captum-bridge): the torch
rebuild of sdk/nn's network against the golden set's probabilities, the
bridge's machinery with a stand-in captum package against closed forms,
finite differences and the golden Grad-CAM, and its error messages.

Captum is not installed here (nor in Debian): the stand-in, written by
the test into a temporary directory put first on sys.path, provides the
few classes of captum.attr the test uses, with Captum's signatures and
definitions. The tests skip where torch is missing."""

import importlib.machinery
import importlib.util
import json
import os
import shutil
import struct
import sys
import tempfile
import textwrap
import unittest

import require  # noqa: E402
from unittest import mock

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import uaxai_plugin as kit  # noqa: E402

import archs  # noqa: E402

SCRIPT = os.path.join(REPO, "plugins", "explainer", "captum-bridge", "uaxai-explainer-captum-bridge")
GOLDEN = os.path.join(REPO, "testdata", "golden", "paper-1dcnn")


def load_bridge():
    """The bridge script as a module (its main guard keeps it from
    serving)."""
    loader = importlib.machinery.SourceFileLoader("captum_bridge", SCRIPT)
    spec = importlib.util.spec_from_loader("captum_bridge", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


bridge = load_bridge()

try:
    import torch
except ImportError as e:  # pragma: no cover - depends on the machine
    require.missing("torch", e)
    torch = None
    NO_TORCH = "the captum bridge's tests need torch (apt-get install python3-torch): %s" % e
else:
    NO_TORCH = ""

# nn.PaperArch (sdk/nn/arch.go), as the host sends it: with the layers'
# shapes, which Go computed (archs: testdata/archs.json).
PAPER = archs.arch("paper-1dcnn")

# The golden model's tensors in PyTorch state_dict order, as its README
# lists them ("Tensors: conv1.weight (8,1,3), conv1.bias (8), ...,
# bn1.{weight,bias,running_mean,running_var} (8), ..."): the order of
# sdk/nn's flat vector, written down independently of the bridge.
PAPER_TENSORS = [
    "conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
    "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
    "conv3.weight", "conv3.bias", "conv4.weight", "conv4.bias",
    "bn2.weight", "bn2.bias", "bn2.running_mean", "bn2.running_var",
    "fc1.weight", "fc1.bias", "bn3.weight", "bn3.bias", "bn3.running_mean", "bn3.running_var",
    "fc2.weight", "fc2.bias"]


def read_safetensors(path, only_f32=False):
    """{name: float32 array} of a safetensors file (the format the golden
    README describes: u64 header length, JSON header, raw data); with
    only_f32 other tensors (PyTorch's I64 num_batches_tracked) are
    left out."""
    with open(path, "rb") as f:
        b = f.read()
    (n,) = struct.unpack("<Q", b[:8])
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        if only_f32 and e["dtype"] != "F32":
            continue
        assert e["dtype"] == "F32", (name, e["dtype"])
        lo, hi = e["data_offsets"]
        out[name] = np.frombuffer(data[lo:hi], dtype="<f4").reshape(e["shape"])
    return out


def csv(name, dtype=np.float32):
    return np.loadtxt(os.path.join(GOLDEN, name), delimiter=",", dtype=dtype, ndmin=2)


def golden_model():
    """The golden model as the kit's Model: the flat vector packed in the
    README's order."""
    t = read_safetensors(os.path.join(GOLDEN, "model.safetensors"))
    assert sorted(t) == sorted(PAPER_TENSORS), sorted(t)
    flat = np.concatenate([t[n].reshape(-1) for n in PAPER_TENSORS])
    return kit.Model(PAPER, flat), t


# The golden graph networks (testdata/golden/archs: PyTorch modules with
# their state_dicts and Captum's maps), as the host sends them
# (archs.json: their recipes/archs specs, the node shapes Go computed).
ARCHS_GOLDEN = os.path.join(REPO, "testdata", "golden", "archs")
GRAPHS = ("fcn", "resnet1d", "inceptiontime", "stridednet", "resnet1d-3ph")
with open(os.path.join(ARCHS_GOLDEN, "manifest.json")) as f:
    ARCHS_MANIFEST = json.load(f)["archs"]


def graph_model(name):
    """A golden graph network as the kit's Model: its PyTorch state_dict
    packed in the order of the bridge's graph layout, whose names must be
    exactly the state_dict's float tensors."""
    arch = archs.arch(name)
    t = read_safetensors(os.path.join(ARCHS_GOLDEN, name, "model.safetensors"), only_f32=True)
    names = [n for _, _, n, _ in bridge.graph_layout(arch)]
    assert sorted(names) == sorted(t), (sorted(names), sorted(t))
    return kit.Model(arch, np.concatenate([t[n].reshape(-1) for n in names]))


def archs_csv(name, file, dtype=np.float32):
    return np.loadtxt(os.path.join(ARCHS_GOLDEN, name, file), delimiter=",", dtype=dtype, ndmin=2)


# The stand-in captum: captum.attr with Captum's signatures; Saliency is
# |d p_target / d x| (abs=True, Captum's default), NoisySaliency adds
# torch's normal noise (a random method), LayerGradCam is Captum's
# alpha_c = mean_t d p / d A_c(t), cam = sum_c alpha_c A_c(t) on the
# layer's output (attr_dim_summation, relu_attributions=False by
# default), LayerActivation takes no target.
STANDIN = '''
import torch


class Attribution:
    def __init__(self, forward_func):
        self.forward_func = forward_func

    def attribute(self, inputs, **kwargs):
        raise NotImplementedError


def _select(out, target):
    return out[torch.arange(out.shape[0]), target]


class Saliency(Attribution):
    def __init__(self, forward_func):
        self.forward_func = forward_func

    def attribute(self, inputs, target=None, abs=True, additional_forward_args=None):
        x = inputs.detach().clone().requires_grad_(True)
        g, = torch.autograd.grad(_select(self.forward_func(x), target).sum(), x)
        return g.abs() if abs else g


class NoisySaliency(Saliency):
    def attribute(self, inputs, target=None, stdevs=1.0):
        return super().attribute(inputs, target=target, abs=False) + stdevs * torch.randn(inputs.shape)


class LayerGradCam(Attribution):
    def __init__(self, forward_func, layer, device_ids=None):
        self.forward_func, self.layer = forward_func, layer

    def attribute(self, inputs, target=None, additional_forward_args=None, attribute_to_layer_input=False,
                  relu_attributions=False, attr_dim_summation=True):
        saved = []
        h = self.layer.register_forward_hook(lambda m, i, o: saved.append(o))
        try:
            out = self.forward_func(inputs)
        finally:
            h.remove()
        a = saved[0]
        g, = torch.autograd.grad(_select(out, target).sum(), a)
        alpha = g.mean(dim=2, keepdim=True)
        cam = (alpha * a).sum(dim=1, keepdim=True) if attr_dim_summation else alpha * a
        return torch.relu(cam) if relu_attributions else cam


class Occlusion(Attribution):
    """Stride 1 along time, a window over every channel (what the test
    uses): A[t] = mean over the windows s covering t of
    p(x) - p(x with samples s .. s+w-1 at the baseline)."""

    def attribute(self, inputs, sliding_window_shapes, strides=None, baselines=None, target=None,
                  additional_forward_args=None, perturbations_per_eval=1, show_progress=False):
        if not isinstance(sliding_window_shapes, tuple):
            raise TypeError("sliding_window_shapes must be a tuple, got %r" % (sliding_window_shapes,))
        c, w = sliding_window_shapes
        _, ci, t = inputs.shape
        assert c == ci and strides in (None, 1), (sliding_window_shapes, strides)
        base = 0.0 if baselines is None else float(baselines)
        with torch.no_grad():
            p0 = _select(self.forward_func(inputs), target)[0]
            n = t - w + 1
            xs = inputs.repeat(n, 1, 1)
            for s in range(n):
                xs[s, :, s:s + w] = base
            d = p0 - self.forward_func(xs)[:, target]
            total = torch.zeros(t, dtype=d.dtype)
            count = torch.zeros(t, dtype=d.dtype)
            for s in range(n):
                total[s:s + w] += d[s]
                count[s:s + w] += 1
        return (total / count).reshape(1, 1, t).expand(1, ci, t)


class LayerActivation(Attribution):
    def __init__(self, forward_func, layer, device_ids=None):
        self.forward_func, self.layer = forward_func, layer

    def attribute(self, inputs, additional_forward_args=None, attribute_to_layer_input=False):
        saved = []
        h = self.layer.register_forward_hook(lambda m, i, o: saved.append(o))
        try:
            self.forward_func(inputs)
        finally:
            h.remove()
        return saved[0].detach()
'''


class StandIn:
    """Puts the stand-in captum first on sys.path while in use."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="standin-captum")
        pkg = os.path.join(self.dir, "captum")
        os.makedirs(os.path.join(pkg, "attr"))
        with open(os.path.join(pkg, "__init__.py"), "w") as f:
            f.write("")
        with open(os.path.join(pkg, "attr", "__init__.py"), "w") as f:
            f.write(STANDIN)
        sys.path.insert(0, self.dir)
        self._drop()
        return self

    def __exit__(self, *exc):
        sys.path.remove(self.dir)
        self._drop()
        shutil.rmtree(self.dir)

    @staticmethod
    def _drop():
        for k in [k for k in sys.modules if k == "captum" or k.startswith("captum.")]:
            del sys.modules[k]


def probs64(net, x):
    """The probabilities of a float64 copy of net at x (B, C, T)."""
    with torch.no_grad():
        return net(torch.from_numpy(x)).numpy()


@unittest.skipIf(torch is None, NO_TORCH)
class TestRebuildGraph(unittest.TestCase):
    def test_golden_probabilities(self):
        # Each golden graph network rebuilt from its spec and flat
        # parameters gives PyTorch's probabilities (probs.csv) within 1e-5.
        for name in GRAPHS:
            with self.subTest(name):
                model = graph_model(name)
                net = bridge.build_graph(model.arch, model.params)
                x = archs_csv(name, "waveforms.csv")
                c = model.arch["in_channels"]
                with torch.no_grad():
                    p = net(torch.from_numpy(x.reshape(len(x), c, -1))).numpy()
                np.testing.assert_allclose(p, archs_csv(name, "probs.csv"), rtol=0, atol=1e-5)

    def test_transformer_golden(self):
        # The golden Transformer (testdata/golden/transformer) rebuilt from
        # recipes/archs/transformer.toml: the bridge's layout is its
        # state_dict's names, and the probabilities PyTorch's within 1e-5.
        arch = archs.arch("transformer")
        d = os.path.join(REPO, "testdata", "golden", "transformer")
        t = read_safetensors(os.path.join(d, "model.safetensors"), only_f32=True)
        names = [n for _, _, n, _ in bridge.graph_layout(arch)]
        self.assertEqual(sorted(names), sorted(t))
        net = bridge.build_graph(arch, np.concatenate([t[n].reshape(-1) for n in names]))
        x = np.loadtxt(os.path.join(d, "waveforms.csv"), delimiter=",", dtype=np.float32, ndmin=2)
        with torch.no_grad():
            p = net(torch.from_numpy(x.reshape(len(x), 3, -1))).numpy()
        want = np.loadtxt(os.path.join(d, "probs.csv"), delimiter=",", dtype=np.float32, ndmin=2)
        np.testing.assert_allclose(p, want, rtol=0, atol=1e-5)

    def test_token_ops_engine(self):
        # A graph of every token op (matmul of two values, broadcast
        # sub/div/mul, pow, sqrt, erf, gelu_tanh, softmax over the steps,
        # both reducemeans, affine, reshape, ...) rebuilt under random
        # parameters gives the probabilities Go's engine computed
        # (archs.json's check, kit_test.go) within 1e-5.
        arch = archs.arch("token-ops")
        chk = archs.GOLDEN["token-ops"]["check"]
        net = bridge.build_graph(arch, np.asarray(chk["params"], dtype=np.float32))
        x = np.asarray(chk["x"], dtype=np.float32).reshape(2, arch["in_channels"], arch["in_len"])
        with torch.no_grad():
            p = net(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(p.reshape(-1), np.asarray(chk["probs"], dtype=np.float32), rtol=0, atol=1e-5)

    def test_layout_errors(self):
        # An op the bridge does not rebuild, and a node after the output
        # with parameters, are refused by node, with what is accepted.
        arch = json.loads(json.dumps(archs.arch("resnet1d")))
        arch["graph"]["nodes"][1]["op"] = "lstm"
        with self.assertRaisesRegex(kit.Error, r"^arch 'resnet1d' node 1 'block1.conv1': op 'lstm' is not one the "
                                    r"bridge rebuilds in torch \(accepted: add, affine, attention, .*, tanh, transpose\)$"):
            bridge.graph_layout(arch)
        arch = json.loads(json.dumps(archs.arch("res-output")))
        nodes = arch["graph"]["nodes"]
        after = [i for i, nd in enumerate(nodes) if nd["name"] == arch["graph"]["output"]][0] + 1
        self.assertLess(after, len(nodes), "res-output has nodes after its output")
        # A node after the output without parameters, reading another
        # one after it, is laid out (it has nothing to lay out); one with
        # parameters is refused.
        nodes.append({"name": "late_relu", "op": "relu", "inputs": [nodes[-1]["name"]], "attrs": {}})
        if nodes[-2]["name"] in [nd["name"] for nd in nodes[:after]]:
            self.fail("the node read is before the output")
        self.assertEqual(bridge.graph_layout(arch), bridge.graph_layout(archs.arch("res-output")))
        nodes.append({"name": "late", "op": "linear", "inputs": ["late_relu"], "attrs": {"out": 2, "bias": True}})
        with self.assertRaisesRegex(kit.Error, r"node %d 'late': the channels of its input 'late_relu' are unknown"
                                    % (len(nodes) - 1)):
            bridge.graph_layout(arch)


@unittest.skipIf(torch is None, NO_TORCH)
class TestRebuild(unittest.TestCase):
    def test_layout_is_state_dict_order(self):
        # The bridge's layout is the README's order, each tensor is its
        # node's (the node named as the tensor's module) and holds the
        # golden file's values.
        self.assertEqual([n for n, _ in layout(PAPER)], PAPER_TENSORS)
        model, tensors = golden_model()
        net = bridge.build_graph(model.arch, model.params)
        for i, suffix, name, _ in bridge.graph_layout(PAPER):
            self.assertEqual(net.names[i] + "." + suffix, name)
            np.testing.assert_array_equal(getattr(net.nodes[i], suffix).detach().numpy(), tensors[name], err_msg=name)
        self.assertFalse(net.training)

    def test_golden_probabilities(self):
        # (a) The rebuilt network's probabilities equal the golden ones
        # (sdk/nn's reference, probs.csv) within 1e-5, one batch of 16.
        model, _ = golden_model()
        net = bridge.build_graph(model.arch, model.params)
        x = csv("waveforms.csv")
        want = csv("probs.csv", np.float64)
        with torch.no_grad():
            got = net(torch.from_numpy(x.reshape(16, 1, 640))).numpy()
        self.assertEqual(got.shape, (16, 16))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
        # The comparison can fail: with two tensors of the same shape
        # swapped in the flat vector (bn3's weight and bias) the network
        # is off by far more than the tolerance.
        t = read_safetensors(os.path.join(GOLDEN, "model.safetensors"))
        t["bn3.weight"], t["bn3.bias"] = t["bn3.bias"], t["bn3.weight"]
        p = np.concatenate([t[n].reshape(-1) for n in PAPER_TENSORS])
        with torch.no_grad():
            off = bridge.build_graph(PAPER, p)(torch.from_numpy(x.reshape(16, 1, 640))).numpy()
        self.assertGreater(np.abs(off - want).max(), 1e-3)

    def test_every_kind(self):
        # Two input channels, dropout, flatten of a (C, T) > 1 layer and a
        # dense layer straight after a global max pool: the network is the
        # formula of each kind, written here in numpy (float64).
        # "kinds" (sdk/python/kit_test.go): conv1d c (3 channels, kernel
        # 2), relu, maxpool1d 3, batchnorm1d bn, dropout 0.5, flatten,
        # dense d (4), relu r, globalmaxpool, dense out (3), on 2 x 9.
        arch = archs.arch("kinds")
        rng = np.random.default_rng(3)
        p = random_params(layout(arch), rng)
        t = unpack(layout(arch), p)
        x = rng.normal(size=(5, 2, 9))

        def ref(x):
            u = np.stack([[t["c.bias"][o] + sum(t["c.weight"][o, i, k] * x[i, s + k]
                                                for i in range(2) for k in range(2)) for s in range(8)]
                          for o in range(3)])
            u = np.maximum(u, 0)
            u = np.stack([u[:, s:s + 3].max(axis=1) for s in range(6)], axis=1)
            u = ((u - t["bn.running_mean"][:, None]) / np.sqrt(t["bn.running_var"][:, None] + 1e-5)
                 * t["bn.weight"][:, None] + t["bn.bias"][:, None])
            v = np.maximum(t["d.weight"] @ u.reshape(-1) + t["d.bias"], 0)
            z = t["out.weight"] @ v + t["out.bias"]
            e = np.exp(z - z.max())
            return e / e.sum()

        net = bridge.build_graph(arch, p)
        with torch.no_grad():
            got = net(torch.from_numpy(x.astype(np.float32))).numpy()
        for b in range(5):
            np.testing.assert_allclose(got[b], ref(x[b]), rtol=1e-5, atol=1e-6)
        self.assertIn("r", net.names)  # a node a layer, the unnamed ones "_<index>"
        self.assertEqual(net.names, [ly.get("name") or "_%d" % i for i, ly in enumerate(arch["layers"])])

    def test_bad_parameters(self):
        model, _ = golden_model()
        with self.assertRaisesRegex(kit.Error, r"arch 'paper-1dcnn': parameter vector has 5 values, want \d+"):
            bridge.build_graph(PAPER, np.zeros(5, np.float32))
        p = np.array(model.params)
        p[3] = np.nan
        with self.assertRaisesRegex(kit.Error, r"tensor conv1.weight element 3 is nan \(want a finite number\)"):
            bridge.build_graph(PAPER, p)

    def test_cache_per_model(self):
        model, _ = golden_model()
        other = kit.Model(PAPER, model.params)
        a, b = bridge.network(model), bridge.network(model)
        self.assertIs(a, b)
        self.assertIsNot(bridge.network(other), a)
        n = len(bridge._nets)
        del other
        import gc
        gc.collect()
        self.assertEqual(len(bridge._nets), n - 1, "a released model's network is kept")


def layout(arch):
    """The tensors of an architecture's flat parameter vector, in order,
    as [(name, shape)] (the bridge's graph_layout)."""
    return [(name, shape) for _, _, name, shape in bridge.graph_layout(arch)]


def random_params(lay, rng):
    """Normal float32 parameters for a layout, with positive running
    variances."""
    parts = []
    for name, shape in lay:
        v = rng.normal(scale=0.4, size=shape)
        if name.endswith("running_var"):
            v = np.abs(v) + 0.3
        parts.append(v.reshape(-1))
    return np.concatenate(parts).astype(np.float32)


def unpack(lay, p):
    """{name: float64 tensor} of a flat vector, for the references."""
    out, off = {}, 0
    for name, shape in lay:
        n = int(np.prod(shape))
        out[name] = p[off:off + n].reshape(shape).astype(np.float64)
        off += n
    assert off == p.size
    return out


def tiny_model(seed=3):
    """A small network with every kind that has a gradient path: two
    input channels of 12 samples, 3 classes."""
    # "tiny2" (sdk/python/kit_test.go): conv1d conv1 (3, kernel 3), relu,
    # maxpool1d 2, batchnorm1d bn, conv1d conv2 (4, kernel 3), relu,
    # flatten, dropout 0.3, dense fc (3).
    arch = archs.arch("tiny2")
    return kit.Model(arch, random_params(layout(arch), np.random.default_rng(seed)))


@unittest.skipIf(torch is None, NO_TORCH)
class TestMachinery(unittest.TestCase):
    def setUp(self):
        self.standin = StandIn().__enter__()

    def tearDown(self):
        self.standin.__exit__(None, None, None)

    def explain(self, model, x, targets, config, seeds=None):
        b = bridge.Bridge()
        b.check(config)
        if seeds is None:
            seeds = np.arange(1, len(targets) + 1, dtype=np.uint64)
        return b.explain(model, x.astype(np.float32), np.asarray(targets, np.int64), seeds, config)

    def test_saliency_finite_differences(self):
        # (b) Saliency's map is |d p_target / d x|: a central finite
        # difference of the rebuilt network's target probability, in
        # float64 (a copy of the network), at every input sample.
        model = tiny_model()
        rng = np.random.default_rng(7)
        x = rng.normal(size=(3, 24)).astype(np.float32)
        targets = [0, 2, 1]
        maps = self.explain(model, x, targets, {"method": "Saliency"})
        net64 = bridge.build_graph(model.arch, model.params).double()
        h = 1e-6
        for b in range(3):
            self.assertEqual(maps[b].dtype, np.float64)
            self.assertEqual(maps[b].shape, (24,))
            fd = np.empty(24)
            for i in range(24):
                xp, xm = x[b].astype(np.float64), x[b].astype(np.float64)
                xp[i] += h
                xm[i] -= h
                pp = probs64(net64, xp.reshape(1, 2, 12))[0, targets[b]]
                pm = probs64(net64, xm.reshape(1, 2, 12))[0, targets[b]]
                fd[i] = (pp - pm) / (2 * h)
            scale = np.abs(fd).max()
            self.assertGreater(scale, 1e-3, "a flat probability checks nothing")
            np.testing.assert_allclose(maps[b], np.abs(fd), rtol=0, atol=1e-4 * scale + 1e-7)
        # The attribute table reaches Captum: abs = false keeps the sign.
        signed = self.explain(model, x[:1], targets[:1], {"method": "Saliency", "attribute": {"abs": False}})
        np.testing.assert_array_equal(np.abs(signed[0]), maps[0])
        self.assertTrue((signed[0] < 0).any())

    def test_saliency_closed_form(self):
        # One dense layer: p = softmax(W x + b), so
        # d p_k / d x = p_k (W_k - sum_j p_j W_j).
        arch = archs.arch("lin")  # flatten, dense fc of 4
        rng = np.random.default_rng(2)
        w, bias = rng.normal(size=(4, 5)), rng.normal(size=4)
        model = kit.Model(arch, np.concatenate([w.reshape(-1), bias]).astype(np.float32))
        w, bias = w.astype(np.float32).astype(np.float64), bias.astype(np.float32).astype(np.float64)
        x = rng.normal(size=(4, 5)).astype(np.float32)
        maps = self.explain(model, x, [0, 1, 2, 3], {"method": "Saliency", "attribute": {"abs": False}})
        for k in range(4):
            z = w @ x[k].astype(np.float64) + bias
            p = np.exp(z - z.max())
            p /= p.sum()
            np.testing.assert_allclose(maps[k], p[k] * (w[k] - p @ w), rtol=1e-5, atol=1e-7)

    def test_golden_input_grad(self):
        # The golden input gradients (autograd in torch, input_grad.csv):
        # Saliency with abs = false on the golden model is them.
        model, _ = golden_model()
        x = csv("waveforms.csv")[:4]
        labels = csv("labels.csv", np.int64).reshape(-1)[:4]
        maps = self.explain(model, x, labels, {"method": "Saliency", "attribute": {"abs": False}})
        want = csv("input_grad.csv", np.float64)[:4]
        np.testing.assert_allclose(np.array(maps), want, rtol=0, atol=1e-6)

    def test_golden_gradcam(self):
        # LayerGradCam on conv4 (its output before the ReLU): with
        # align = "none" the first 630 values are the golden Captum map
        # (gradcam_raw.csv), the last 10 are 0; "centre" (the default) is
        # the same map shifted to the centres of the 11-sample receptive
        # fields, padded with its end values.
        model, _ = golden_model()
        x = csv("waveforms.csv")[:3]
        labels = csv("labels.csv", np.int64).reshape(-1)[:3]
        want = csv("gradcam_raw.csv", np.float64)[:3]
        none = self.explain(model, x, labels, {"method": "LayerGradCam", "layer": "conv4", "align": "none"})
        centre = self.explain(model, x, labels, {"method": "LayerGradCam", "layer": "conv4"})
        for b in range(3):
            # The README's float32 agreement is 5.2e-10 for values up to
            # 6.4e-4; about ten times that.
            np.testing.assert_allclose(none[b][:630], want[b], rtol=0, atol=5e-9)
            np.testing.assert_array_equal(none[b][630:], 0)
            np.testing.assert_array_equal(centre[b][5:635], none[b][:630])
            np.testing.assert_array_equal(centre[b][:5], none[b][0])
            np.testing.assert_array_equal(centre[b][635:], none[b][629])

    def test_golden_occlusion(self):
        # Occlusion with Captum's arguments from the attribute table (an
        # array becomes the tuple Captum wants) is the golden Captum map
        # (occlusion.csv: window 60, stride 1, baseline 0); the README's
        # float32 agreement is 1.1e-7, about ten times that.
        model, _ = golden_model()
        x = csv("waveforms.csv")[:2]
        labels = csv("labels.csv", np.int64).reshape(-1)[:2]
        maps = self.explain(model, x, labels, {"method": "Occlusion", "attribute": {
            "sliding_window_shapes": [1, 60], "strides": 1, "baselines": 0, "perturbations_per_eval": 581}})
        np.testing.assert_allclose(np.array(maps), csv("occlusion.csv", np.float64)[:2], rtol=0, atol=1e-6)

    def test_graph_golden_maps(self):
        # On each golden graph network: Saliency (abs = false) is the
        # golden input gradient, LayerGradCam on the README's layer (a
        # module path) is Captum's raw map in the first L values and 0
        # after (align "none", the default on graphs), both within 1e-4 of
        # each map's largest value (the README's float32 bound); "centre"
        # is refused, and an unknown layer lists the top-level modules.
        for name in GRAPHS:
            with self.subTest(name):
                model = graph_model(name)
                x = archs_csv(name, "waveforms.csv")[:3]
                targets = archs_csv(name, "targets.csv", np.int64).reshape(-1)[:3]
                sal = self.explain(model, x, targets, {"method": "Saliency", "attribute": {"abs": False}})
                want = archs_csv(name, "input_grad.csv", np.float64)[:3]
                layer, L = ARCHS_MANIFEST[name]["gradcam_layer"], ARCHS_MANIFEST[name]["gradcam_length"]
                cam = self.explain(model, x, targets, {"method": "LayerGradCam", "layer": layer})
                raw = archs_csv(name, "gradcam_raw.csv", np.float64)[:3]
                c = model.arch["in_channels"]
                for b in range(3):
                    np.testing.assert_allclose(sal[b], want[b], rtol=0, atol=1e-4 * np.abs(want[b]).max())
                    row = cam[b][:640]
                    np.testing.assert_allclose(row[:L], raw[b], rtol=0, atol=1e-4 * np.abs(raw[b]).max())
                    np.testing.assert_array_equal(row[L:], 0)
                    np.testing.assert_array_equal(cam[b], np.tile(row, c))
                with self.assertRaisesRegex(kit.Error, r'^key "align": "centre" needs the receptive fields'):
                    self.explain(model, x[:1], targets[:1], {"method": "LayerGradCam", "layer": layer, "align": "centre"})
                with self.assertRaisesRegex(kit.Error, r"^key \"layer\": arch '%s' has no layer 'nope' \(its top-level "
                                            r"modules: " % name):
                    self.explain(model, x[:1], targets[:1], {"method": "LayerGradCam", "layer": "nope"})

    def test_layer_channels_and_input_channels(self):
        # A layer attribution of several channels is summed over them, and
        # every input channel gets the map: LayerActivation (no target)
        # of conv2 (4 channels of 7 positions, R = 6 on 12 samples).
        model = tiny_model()
        x = np.random.default_rng(4).normal(size=(1, 24)).astype(np.float32)
        m = self.explain(model, x, [1], {"method": "LayerActivation", "layer": "conv2", "align": "none"})[0]
        net = bridge.build_graph(model.arch, model.params)
        with torch.no_grad():
            h = torch.from_numpy(x.reshape(1, 2, 12))
            for mod in net.nodes[:net.names.index("conv2") + 1]:
                h = mod(h)
        act = h.numpy()[0].sum(axis=0).astype(np.float64)
        self.assertEqual(act.shape, (7,))
        np.testing.assert_allclose(m[:7], act, rtol=1e-6)
        np.testing.assert_array_equal(m[7:12], 0)
        np.testing.assert_array_equal(m[12:], m[:12])
        # Aligned at the centres of the 6-sample receptive fields: position
        # t at sample t + 2, the ends padded with the end values.
        c = self.explain(model, x, [1], {"method": "LayerActivation", "layer": "conv2"})[0]
        np.testing.assert_array_equal(c[2:9], m[:7])
        np.testing.assert_array_equal(c[:2], m[0])
        np.testing.assert_array_equal(c[9:12], m[6])
        np.testing.assert_array_equal(c[12:], c[:12])

    def test_seeds(self):
        # A random method: a map depends on its input and seed only, not
        # on the rest of the batch; another seed gives another map.
        model = tiny_model()
        x = np.random.default_rng(5).normal(size=(3, 24)).astype(np.float32)
        cfg = {"method": "NoisySaliency", "attribute": {"stdevs": 0.5}}
        seeds = np.array([11, 12, 2**64 - 1], dtype=np.uint64)
        batch = self.explain(model, x, [0, 1, 2], cfg, seeds)
        for b in range(3):
            one = self.explain(model, x[b:b + 1], [b], cfg, seeds[b:b + 1])
            np.testing.assert_array_equal(one[0], batch[b])
        again = self.explain(model, x[:1], [0], cfg, np.array([13], np.uint64))
        self.assertFalse(np.array_equal(again[0], batch[0]))

    def test_info(self):
        i = bridge.Bridge().info()
        i.validate()
        self.assertEqual((i.id, i.stochastic, i.needs), ("explainer.captum-bridge", True, 0))
        self.assertFalse(getattr(i, "wants_model", False), "the bridge needs the parameters")

    def test_bad_tables(self):
        # (c) Every bad key is an Error that names it and what is accepted.
        b = bridge.Bridge()
        cases = [
            ({}, r'^key "method" is missing: name a class of captum.attr \(accepted: LayerActivation, '
                 r'LayerGradCam, NoisySaliency, Occlusion, Saliency\)$'),
            ({"method": "Salency"}, r"^key \"method\": 'Salency' is not an attribution class of captum.attr "
                                    r"\(accepted: LayerActivation, LayerGradCam, NoisySaliency, Occlusion, Saliency\)$"),
            ({"method": "Attribution"}, r"is not an attribution class"),
            ({"method": 3}, r'^key "method": 3 is not a string'),
            ({"method": "Saliency", "methd": 1}, r"^unknown key 'methd' \(accepted: method, init, attribute, layer, align\)$"),
            ({"method": "Saliency", "init": 3}, r"^key 'init': 3 is not a table"),
            ({"method": "Saliency", "init": {"eps": 1}},
             r"^key init.eps: the constructor of Saliency takes no argument 'eps' \(accepted: none\)$"),
            ({"method": "Saliency", "attribute": {"ab": True}},
             r"^key attribute.ab: Saliency.attribute takes no argument 'ab' \(accepted: abs, additional_forward_args\)$"),
            ({"method": "Saliency", "attribute": {"target": 1}}, r"^key attribute.target: the bridge sets target itself"),
            ({"method": "Saliency", "attribute": {"inputs": 1}}, r"^key attribute.inputs: the bridge sets inputs itself"),
            ({"method": "LayerGradCam", "init": {"layer": "conv1"}}, r"^key \"layer\" is missing"),
            ({"method": "LayerGradCam", "layer": "conv4", "init": {"layer": "conv1"}},
             r"^key init.layer: the bridge sets layer itself"),
            ({"method": "LayerGradCam", "layer": 4}, r'^key "layer": 4 is not a layer name'),
            ({"method": "LayerGradCam", "layer": "conv4", "align": "center"},
             r"^key \"align\": 'center' is not an alignment \(accepted: centre, none\)$"),
            ({"method": "Saliency", "layer": "conv4"}, r'^key "layer": Saliency takes no layer'),
            ({"method": "Saliency", "align": "none"}, r'^key "align": Saliency attributes to the input'),
            ({"method": "Saliency", "attribute": {"abs": None}}, r"^key attribute.abs: null is not a value"),
        ]
        for cfg, want in cases:
            with self.subTest(cfg=cfg):
                with self.assertRaisesRegex(kit.Error, want):
                    b.check(cfg)
        b.check({"method": "LayerGradCam", "layer": "conv4", "init": {"device_ids": [0]},
                 "attribute": {"relu_attributions": True}})
        # A layer the architecture does not have is found at Explain.
        model = tiny_model()
        with self.assertRaisesRegex(kit.Error, r"^key \"layer\": arch 'tiny2' has no layer 'conv4' "
                                               r"\(its top-level modules: conv1, _1, _2, bn, conv2, _5, _6, _7, fc \(or a node's module path, e.g. 'conv1'\)\)$"):
            self.explain(model, np.zeros((1, 24)), [0], {"method": "LayerGradCam", "layer": "conv4"})
        # Captum's own refusal reaches the host as an Error with its text.
        with self.assertRaisesRegex(kit.Error, r"^input 0: captum.attr.NoisySaliency.attribute\(stdevs='x', "
                                               r"target=0\): TypeError: "):
            self.explain(model, np.zeros((1, 24)), [0], {"method": "NoisySaliency", "attribute": {"stdevs": "x"}})


class TestMissing(unittest.TestCase):
    """(c) Without captum or torch the bridge starts and says what is
    missing at Check and at Explain."""

    def check(self, hide, want):
        with mock.patch.dict(sys.modules, {m: None for m in hide}):
            b = bridge.Bridge()
            b.info().validate()
            with self.assertRaises(kit.Error) as c:
                b.check({"method": "Saliency"})
            self.assertTrue(str(c.exception).startswith(want), str(c.exception))
            with self.assertRaises(kit.Error) as c:
                b.explain(kit.Model(PAPER, np.zeros(1, np.float32)), np.zeros((1, 640), np.float32),
                          np.zeros(1, np.int64), np.ones(1, np.uint64), {"method": "Saliency"})
            self.assertTrue(str(c.exception).startswith(want), str(c.exception))

    def test_served_draw(self):
        # A draw served by its posterior (service mode: no parameters) cannot be rebuilt: the error says why and
        # what is accepted, before torch or captum is needed.
        m = kit.Model.__new__(kit.Model)
        m.arch, m.params = {"name": "ResNet1D", "in_channels": 1, "in_len": 640, "layers": []}, None
        with self.assertRaisesRegex(kit.Error, r"model 'ResNet1D' is served by its posterior without them .*"
                                               r"accepted: a posterior of sdk/nn networks"):
            bridge.network(m)

    def test_no_captum(self):
        self.check(["captum", "captum.attr"], "captum is not installed: pip install captum; the bridge is optional")

    def test_no_torch(self):
        self.check(["torch", "captum", "captum.attr"],
                   "torch is not installed: apt-get install python3-torch (Debian) or pip install torch; "
                   "the bridge is optional")

    def test_broken_captum(self):
        # A captum that is there but fails to import (a release for another
        # torch) is told apart from a missing one.
        d = tempfile.mkdtemp(prefix="broken-captum")
        self.addCleanup(shutil.rmtree, d)
        os.makedirs(os.path.join(d, "captum", "attr"))
        open(os.path.join(d, "captum", "__init__.py"), "w").close()
        with open(os.path.join(d, "captum", "attr", "__init__.py"), "w") as f:
            f.write("raise AttributeError(\"module 'torch' has no attribute 'compiler'\")\n")
        sys.path.insert(0, d)
        self.addCleanup(sys.path.remove, d)
        self.addCleanup(StandIn._drop)
        if torch is None:
            self.skipTest(NO_TORCH)
        with self.assertRaisesRegex(kit.Error, r"^captum is installed but captum.attr does not import: "
                                               r"AttributeError: module 'torch' has no attribute 'compiler'"):
            bridge.Bridge().check({"method": "Saliency"})

    def test_docstring(self):
        doc = bridge.__doc__
        for want in ("THE BRIDGE IS OPTIONAL", "python3-torch", "pip install captum"):
            self.assertIn(want, doc)


if __name__ == "__main__":
    unittest.main()
