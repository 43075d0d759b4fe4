"""The example explainers under plugins/explainer/python-*, imported from
their scripts:

* python-occlusion against a reference written here as a plain loop over
  the windows (occluded copies through the closed-form network, baselines
  by np.mean and np.linalg.lstsq), for number, mean and fundamental
  baselines, both paths (the service's Windows and Probs of copies built
  by the plugin), a stride that leaves an uncovered tail and two
  channels; the Go operator's key checks and messages.
* python-kernelshap against closed forms: on a model additive over the
  features it recovers each feature's contribution exactly; with every
  coalition enumerated it equals the Shapley values computed by brute
  force; on a nonlinear model the efficiency constraint holds exactly and
  the seed decides the map.
"""

import importlib.machinery
import importlib.util
import itertools
import math
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import grpc  # noqa: E402
import numpy as np  # noqa: E402

import uaxai_plugin as kit  # noqa: E402
from uaxai_plugin import wire  # noqa: E402
from uaxai_plugin._pb import goplugin_pb2, goplugin_pb2_grpc, plugin_pb2, plugin_pb2_grpc  # noqa: E402

import fakemodel  # noqa: E402


def load_script(name):
    """Imports plugins/explainer/NAME/uaxai-explainer-NAME as a module."""
    path = os.path.join(ROOT, "plugins", "explainer", name, "uaxai-explainer-" + name)
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"), path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod, path


occlusion, OCCLUSION_PATH = load_script("python-occlusion")
kernelshap, KERNELSHAP_PATH = load_script("python-kernelshap")


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class TestScripts(unittest.TestCase):
    def test_runnable_as_plugins(self):
        for path in (OCCLUSION_PATH, KERNELSHAP_PATH):
            self.assertTrue(os.access(path, os.X_OK), path)
            with open(path) as f:
                self.assertEqual(f.readline(), "#!/usr/bin/env python3\n")

    def test_infos(self):
        i = occlusion.Occlusion().info()
        i.validate()
        self.assertEqual((i.id, i.needs, i.stochastic, i.wants_model),
                         ("explainer.python-occlusion", kit.NEEDS_PROBS, False, True))
        i = kernelshap.KernelSHAP().info()
        i.validate()
        self.assertEqual((i.id, i.needs, i.stochastic, i.wants_model),
                         ("explainer.python-kernelshap", kit.NEEDS_PROBS, True, True))


class TestAsPlugins(unittest.TestCase):
    """Each script as the host runs it: a process with the magic cookie,
    whose Info, Load (of a draw in a fake model service) and Explain go
    over its socket and give the maps of the in-process explainer."""

    def run_plugin(self, path, impl, cfg, seeds):
        rng = np.random.default_rng(4)
        net = fakemodel.Net.random(rng, 1, 48, 3)
        fake = fakemodel.Served({5: net})
        x = rng.normal(0, 1, (2, 48)).astype(np.float32)
        targets = np.array([2, 0])
        env = dict(os.environ, **{kit.MAGIC_COOKIE_KEY: kit.MAGIC_COOKIE_VALUE, "PLUGIN_UNIX_SOCKET_DIR": fake.dir.name})
        p = subprocess.Popen([sys.executable, path], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        try:
            line = p.stdout.readline().decode()
            addr = line.split("|")[3]
            with grpc.insecure_channel("unix:" + addr) as ch:
                ex = plugin_pb2_grpc.ExplainerStub(ch)
                info = ex.Info(plugin_pb2.InfoRequest(), timeout=10)
                self.assertEqual((info.info.id, info.wants_model), (impl.info().id, True))
                ex.Check(plugin_pb2.CheckRequest(config_json=wire.encode_config(cfg)), timeout=10)
                h = ex.Load(plugin_pb2.LoadRequest(service=fake.ref(5)), timeout=10).handle
                r = ex.Explain(plugin_pb2.ExplainRequest(model=h, x=wire.float32_bytes(x), targets=targets, seeds=seeds,
                                                         config_json=wire.encode_config(cfg), service=fake.ref(5)),
                               timeout=30)
                goplugin_pb2_grpc.GRPCControllerStub(ch).Shutdown(goplugin_pb2.Empty(), timeout=10)
            p.communicate(timeout=30)
            self.assertEqual(p.returncode, 0)
            want = impl.explain(kit.Model.from_service(fake.ref(5)), x, targets, np.array(seeds, dtype=np.uint64), cfg)
        finally:
            p.kill()
            p.wait()
            fake.close()
        for b in range(2):
            np.testing.assert_array_equal(wire.float64s(r.maps[b]), np.asarray(want[b], dtype=np.float64))

    def test_occlusion(self):
        self.run_plugin(OCCLUSION_PATH, occlusion.Occlusion(), {"window": 8, "stride": 3, "baseline": "mean"}, [])

    def test_kernelshap(self):
        self.run_plugin(KERNELSHAP_PATH, kernelshap.KernelSHAP(), {"samples": 40, "feature": 4}, [7, 8])


class TestOcclusion(unittest.TestCase):
    """python-occlusion through the kit's client of a fake model service."""

    C, T, K = 2, 40, 3

    def setUp(self):
        rng = np.random.default_rng(11)
        self.net = fakemodel.Net.random(rng, self.C, self.T, self.K, scale=0.4)
        self.fake = fakemodel.Served({1: self.net})
        self.model = kit.Model.from_service(self.fake.ref(1))
        t = np.arange(self.T)
        # Records with an offset, a sine of period 10 and noise, so that
        # every baseline differs from the record.
        self.x = np.stack([np.concatenate([a * np.sin(2 * np.pi * t / 10 + ph) + off + 0.3 * rng.normal(0, 1, self.T)
                                           for off in (0.5, -1.0)])
                           for a, ph in [(1.0, 0.0), (2.0, 1.0), (0.5, 2.0)]]).astype(np.float32)
        self.targets = np.array([0, 2, 1])

    def tearDown(self):
        self.fake.close()

    def p(self, rows):
        return softmax(np.asarray(rows, dtype=np.float64) @ self.net.w.T + self.net.b)

    def reference(self, window, stride, baseline, period=64.0, channels="each"):
        """The occlusion maps by the definition, one window at a time: with
        channels "each", a window of one channel at a time; with "all", of
        every channel, each row the same time map."""
        C, T = self.C, self.T
        out = np.zeros((len(self.x), C * T))
        for b, (xb, c) in enumerate(zip(self.x, self.targets)):
            rec = xb.reshape(C, T)
            if baseline == "mean":
                z = np.repeat(rec.astype(np.float64).mean(axis=1, keepdims=True), T, axis=1).astype(np.float32)
            elif baseline == "fundamental":
                t = np.arange(T)
                basis = np.stack([np.ones(T), np.sin(2 * np.pi * t / period), np.cos(2 * np.pi * t / period)], axis=1)
                coef = np.linalg.lstsq(basis, rec.astype(np.float64).T, rcond=None)[0]
                z = (basis @ coef).T.astype(np.float32)
            else:
                z = np.full((C, T), baseline, dtype=np.float32)
            p0 = self.p(xb[None])[0, c]
            for ch in range(C):
                rows = slice(None) if channels == "all" else slice(ch, ch + 1)
                total, count = np.zeros(T), np.zeros(T)
                s = 0
                while s + window <= T:
                    occ = rec.copy()
                    occ[rows, s:s + window] = z[rows, s:s + window]
                    diff = p0 - self.p(occ.reshape(1, -1))[0, c]
                    for t in range(s, s + window):
                        total[t] += diff
                        count[t] += 1
                    s += stride
                out[b, ch * T:(ch + 1) * T] = [total[t] / count[t] if count[t] else 0.0 for t in range(T)]
        return out

    def explain(self, cfg):
        return occlusion.Occlusion().explain(self.model, self.x, self.targets, np.array([], dtype=np.uint64), cfg)

    def test_against_the_definition(self):
        for cfg in [{"window": 7, "stride": 4},  # starts 0..32: samples 39 is in no window
                    {"window": 7, "stride": 4, "baseline": -0.75},
                    {"window": 10, "stride": 3, "baseline": "mean"},
                    {"window": 5, "stride": 2, "baseline": "fundamental", "period": 10},
                    {"window": 12, "baseline": "fundamental", "period": 13.5},
                    {"window": 40}]:
            for channels in ("each", "all"):
                want = self.reference(cfg["window"], cfg.get("stride", 1), cfg.get("baseline", 0.0),
                                      cfg.get("period", 64.0), channels)
                for path in ("windows", "probs"):
                    with self.subTest(cfg=cfg, path=path, channels=channels):
                        got = self.explain(dict(cfg, path=path, channels=channels))
                        self.assertEqual(got.shape, (3, self.C * self.T))
                        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
                        self.assertGreater(np.abs(got).max(), 1e-3, "a map that says nothing")

    def test_tail_and_channels(self):
        T = self.T
        for channels in ("each", "all"):
            got = self.explain({"window": 7, "stride": 4, "channels": channels})
            np.testing.assert_array_equal(got[:, T - 1], 0)  # no window covers t = 39
            np.testing.assert_array_equal(got[:, 2 * T - 1], 0)
            self.assertTrue(np.all(got[:, T - 2] != 0))
            if channels == "all":
                np.testing.assert_array_equal(got[:, :T], got[:, T:])
            else:  # the default: a row a channel, and they differ
                np.testing.assert_array_equal(got, self.explain({"window": 7, "stride": 4}))
                self.assertGreater(np.abs(got[:, :T] - got[:, T:]).max(), 1e-3)

    def test_paths_agree_and_windows_is_one_call(self):
        """path windows is one Windows call a channel (channels "each") or
        one in all ("all") and no Probs; path probs the occluded copies and
        x through Probs; the maps agree."""
        for cfg in [{"window": 9, "stride": 2, "channels": "all"}, {"window": 9, "baseline": "mean", "channels": "all"},
                    {"window": 9, "baseline": "fundamental", "channels": "all"}, {"window": 9, "stride": 2}]:
            each = cfg.get("channels", "each") == "each"
            calls = dict(self.fake.service.calls)
            a = self.explain(cfg)
            self.assertEqual(self.fake.service.calls.get("Windows", 0) - calls.get("Windows", 0), self.C if each else 1)
            # p(x) comes with the windows, by the same computation.
            self.assertEqual(self.fake.service.calls.get("Probs", 0) - calls.get("Probs", 0), 0)
            calls = dict(self.fake.service.calls)
            b = self.explain(dict(cfg, path="probs"))
            rows = 3 * len(range(0, self.T - 9 + 1, cfg.get("stride", 1)))
            chunks = math.ceil(rows / occlusion.CHUNK) * (self.C if each else 1)
            self.assertEqual(self.fake.service.calls["Probs"] - calls.get("Probs", 0), 1 + chunks)
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)

    def test_a_record_that_is_its_own_baseline(self):
        # A pure offset + fundamental record is its own fundamental
        # baseline, and a constant record its own mean: zero maps.
        t = np.arange(self.T)
        x = np.tile(np.concatenate([1.5 * np.sin(2 * np.pi * t / 10) + 0.25, np.cos(2 * np.pi * t / 10) - 2]), (3, 1))
        self.x = x.astype(np.float32)
        for path in ("windows", "probs"):
            np.testing.assert_allclose(self.explain({"window": 8, "baseline": "fundamental", "period": 10, "path": path}),
                                       0, atol=1e-6)
        self.x = np.full((3, self.C * self.T), 0.75, dtype=np.float32)
        np.testing.assert_array_equal(self.explain({"window": 8, "baseline": "mean"}), 0)

    def test_keys(self):
        A = 'a number, "mean", "fundamental"'
        for cfg, msg in [
            ({"windw": 3}, 'unknown key "windw" (accepted: baseline, channels, path, period, seed, stride, window)'),
            ({"window": 0}, 'key "window": 0 is out of range (accepted: 1..1048576)'),
            ({"window": 2.5}, 'key "window": want an integer, got 2.5'),
            ({"window": 4, "stride": 5}, 'key "stride": 5 is larger than the window (4), so the samples between '
                                         'windows would never be occluded (accepted: 1 <= stride <= window)'),
            ({"baseline": "median"}, 'key "baseline": "median" is not a baseline (accepted: %s)' % A),
            ({"baseline": "noise"}, 'key "baseline": "noise" is not offered by explainer.python-occlusion: it needs '
                                    "the random stream of Go's sdk/rng, which it does not reproduce (accepted: %s; "
                                    'explainer.occlusion has "noise")' % A),
            ({"baseline": True}, 'key "baseline": want %s, got bool true' % A),
            ({"baseline": [1]}, 'key "baseline": want %s, got []interface {} [1]' % A),
            ({"baseline": 1e39}, 'key "baseline": 1e+39 is beyond float32 (accepted: %s)' % A),
            ({"seed": 3}, 'key "seed" applies only to baseline = "noise", which explainer.python-occlusion does not '
                          'offer (the baseline is 0)'),
            ({"period": 10}, 'key "period" applies only to baseline = "fundamental" (the baseline is 0)'),
            ({"period": 10, "baseline": 0.1}, 'key "period" applies only to baseline = "fundamental" (the baseline is 0.1)'),
            ({"period": 10, "baseline": "mean"}, 'key "period" applies only to baseline = "fundamental" (the baseline is "mean")'),
            ({"period": 2, "baseline": "fundamental"}, 'key "period": 2 samples a cycle (accepted: 2 < period <= 1048576; '
                                                       'at 2 or less the sine is not resolved)'),
            ({"period": "x", "baseline": "fundamental"}, 'key "period": want a number, got string "x"'),
            ({"path": "fast"}, 'key "path" is "fast" (accepted: "windows", "probs")'),
            ({"path": 1}, 'key "path": want a string, got float64 1'),
            ({"channels": "every"}, 'key "channels": "every" is not a choice (accepted: "each", the default, or "all")'),
            ({"channels": 3}, 'key "channels": want "each" or "all", got float64 3'),
        ]:
            with self.subTest(cfg=cfg):
                with self.assertRaises(ValueError) as cm:
                    occlusion.Occlusion().check(cfg)
                self.assertEqual(str(cm.exception), msg)
        occlusion.Occlusion().check(None)
        occlusion.Occlusion().check({"window": 60.0, "stride": 60, "baseline": "fundamental", "period": 64, "path": "probs"})

    def test_explain_errors(self):
        with self.assertRaisesRegex(ValueError, r'^key "window": window 41 is longer than the input \(40 samples\)$'):
            self.explain({"window": 41})
        with self.assertRaisesRegex(ValueError, r'^key "period": a sine of 1\.048576e\+06 samples a cycle cannot be fitted '
                                                r'over 40 samples \(its Gram matrix is singular\)'):
            self.explain({"window": 4, "baseline": "fundamental", "period": 1 << 20})
        self.x[1, 45] = np.nan
        with self.assertRaisesRegex(ValueError, r"^input 1: sample 45 \(channel 1, t 5\) is NaN, so the record has no "
                                                r"mean baseline$"):
            self.explain({"window": 4, "baseline": "mean"})
        # A square wave of amplitude 3e38 has a fundamental of amplitude
        # about 4/pi 3e38, beyond float32 (a mean never is).
        self.x[1, 40:] = np.where(np.arange(40) % 10 < 5, 3e38, -3e38)
        with self.assertRaisesRegex(ValueError, r"^input 1: the fundamental baseline at sample 4[0-9] \(channel 1, t \d\) "
                                                r"overflows float32$"):
            self.explain({"window": 4, "baseline": "fundamental", "period": 10})


class SpansByProbs:
    """model.spans for a fake with probs: the perturbed copies built here
    (every span of a perturbation set to the baseline), through probs."""

    def spans(self, x, target, perturbations, baseline=0.0):
        C = self.arch["in_channels"]
        rows = np.repeat(np.asarray(x, dtype=np.float32).reshape(1, C, -1), len(perturbations), axis=0)
        for j, pert in enumerate(perturbations):
            for sp in pert:
                ch = slice(None) if len(sp) == 2 or sp[2] == -1 else sp[2]
                rows[j, ch, sp[0]:sp[1]] = np.float32(baseline)
        return self.probs(rows.reshape(len(perturbations), -1))[:, target]


class Additive(SpansByProbs):
    """A fake model (probs only) additive over the features of width w:
    p_1(x) = c + sum_j a_j mean(x over feature j), in float64, no softmax;
    class 0 is 1 - p_1. calls counts the probs calls."""

    def __init__(self, n, w, a, c):
        self.input_len, self.classes, self.arch = n, 2, {"in_channels": 1, "in_len": n}
        self.w, self.a, self.c = w, np.asarray(a, dtype=np.float64), c
        self.calls = 0

    def means(self, x):
        x = np.asarray(x, dtype=np.float64)
        F = len(self.a)
        return np.stack([x[:, j * self.w:(j + 1) * self.w].mean(axis=1) for j in range(F)], axis=1)

    def probs(self, x):
        self.calls += 1
        p1 = self.c + self.means(x) @ self.a
        return np.stack([1 - p1, p1], axis=1)


class Softmax(SpansByProbs):
    """A nonlinear fake: fakemodel.Net's softmax of a linear map, float64."""

    def __init__(self, net):
        self.net, self.input_len, self.classes = net, net.c * net.t, net.k
        self.arch = {"in_channels": net.c, "in_len": net.t}

    def probs(self, x):
        return self.net.probs(x)


def brute_shapley(model, x, target, w, baseline, feat=None):
    """Shapley values by their definition, over every coalition:
    phi_j = sum_{S not containing j} |S|! (F-|S|-1)! / F! (v(S + j) - v(S)).
    feat, when given, is the feature of each input value (else i // w)."""
    n = len(x)
    if feat is None:
        feat = np.arange(n) // w
    F = int(feat.max()) + 1
    subsets = np.array(list(itertools.product([False, True], repeat=F)))
    xs = np.where(subsets[:, feat], x, np.float32(baseline)).astype(np.float32)
    v = {tuple(s): p for s, p in zip(subsets.tolist(), model.probs(xs)[:, target])}
    phi = np.zeros(F)
    for s in subsets.tolist():
        k = sum(s)
        for j in range(F):
            if not s[j]:
                with_j = list(s)
                with_j[j] = True
                phi[j] += math.factorial(k) * math.factorial(F - k - 1) / math.factorial(F) * (v[tuple(with_j)] - v[tuple(s)])
    return phi


class TestKernelSHAP(unittest.TestCase):
    def explain(self, model, x, targets, seeds, cfg):
        return np.array(kernelshap.KernelSHAP().explain(model, np.asarray(x, dtype=np.float32), np.asarray(targets),
                                                        np.asarray(seeds, dtype=np.uint64), cfg))

    def test_additive_model_exactly(self):
        # p = c + sum_j a_j mean_j(x): removing feature j (its samples set
        # to b) changes p by a_j (mean_j(x) - b) whatever else is present,
        # so phi_j = a_j (mean_j(x) - b), sampled or enumerated.
        rng = np.random.default_rng(5)
        for n, w, samples, baseline in [(40, 8, 64, 0.0),     # F = 5: every coalition (30 <= 64)
                                        (38, 4, 64, 0.0),     # F = 10, the last of 2 samples: sampled
                                        (38, 4, 40, -0.5),    # few: 20 pairs for 9 unknowns
                                        (30, 1, 100, 0.25),   # F = 30
                                        (40, 64, 2, 1.0),     # F = 1: the constraint alone
                                        (40, 20, 2, 0.0)]:    # F = 2: both coalitions
            F = -(-n // w)
            model = Additive(n, w, rng.normal(0, 1, F), 0.3)
            x = rng.normal(0, 1, (2, n)).astype(np.float32)
            maps = self.explain(model, x, [1, 0], [3, 4], {"samples": samples, "feature": w, "baseline": baseline})
            self.assertEqual(model.calls, 2, "one call per input")
            for b, sign in ((0, 1), (1, -1)):
                want = sign * model.a * (model.means(x[b:b + 1])[0] - np.float32(baseline))
                np.testing.assert_allclose(maps[b], want[np.arange(n) // w], rtol=0, atol=1e-9)

    def test_enumerated_is_shapley(self):
        rng = np.random.default_rng(6)
        model = Softmax(fakemodel.Net.random(rng, 1, 23, 3, scale=0.6))
        x = rng.normal(0, 1, (2, 23)).astype(np.float32)
        for w, baseline in [(5, 0.0), (4, 0.5)]:  # F = 5 and 6, the last feature shorter
            F = -(-23 // w)
            self.assertLessEqual(2 ** F - 2, 64)
            maps = self.explain(model, x, [2, 0], [1, 2], {"samples": 64, "feature": w, "baseline": baseline})
            for b, t in ((0, 2), (1, 0)):
                want = brute_shapley(model, x[b], t, w, baseline)
                np.testing.assert_allclose(maps[b], want[np.arange(23) // w], rtol=0, atol=1e-10)
                self.assertGreater(np.abs(want).max(), 1e-3)

    def test_channels_enumerated_is_shapley(self):
        # Three channels: "channel-segment" features (c, k) and "segment"
        # features k across channels are Shapley values of those players
        # (every coalition enumerated), through the service's Spans with
        # channels and through Probs alike; a channel with zero weights is
        # a null player, its features' values 0.
        rng = np.random.default_rng(13)
        C, T, w = 3, 10, 5  # K = 2: 6 (channel, segment) features
        net = fakemodel.Net.random(rng, C, T, 3, scale=0.6)
        net.w[:, T:2 * T] = 0  # channel 1 is ignored
        fake = fakemodel.Served({4: net})
        try:
            model = kit.Model.from_service(fake.ref(4))
            x = rng.normal(0, 1, (1, C * T)).astype(np.float32)
            t = np.arange(C * T)
            for features, feat in [("channel-segment", (t // T) * 2 + (t % T) // w), ("segment", (t % T) // w)]:
                want = brute_shapley(Softmax(net), x[0], 2, w, 0.0, feat=feat)
                self.assertGreater(np.abs(want).max(), 1e-3)
                cfg = {"samples": 64, "feature": w, "features": features}
                # In float64 (the local fake): the Shapley values.
                got = self.explain(Softmax(net), x, [2], [1], cfg)[0]
                np.testing.assert_allclose(got, want[feat], rtol=0, atol=1e-12)
                if features == "channel-segment":
                    np.testing.assert_allclose(got[T:2 * T], 0, rtol=0, atol=1e-15)
                # Through the service (float32 probabilities): Spans with
                # channels, one call, and Probs give the same values.
                maps = {}
                for path in ("spans", "probs"):
                    before = fake.service.calls.get("Spans", 0)
                    maps[path] = self.explain(model, x, [2], [1], dict(cfg, path=path))[0]
                    self.assertEqual(fake.service.calls.get("Spans", 0) - before, int(path == "spans"))
                np.testing.assert_allclose(maps["spans"], maps["probs"], rtol=0, atol=1e-9)
                np.testing.assert_allclose(maps["spans"], want[feat], rtol=0, atol=1e-6)
        finally:
            fake.close()

    def test_absent_spans_of_channels(self):
        # K = 3 segments [0, 4), [4, 8), [8, 10) a channel; feature c K + k.
        m = np.array([False, True, False, False, False, True])
        self.assertEqual(kernelshap.absent_spans(m, 4, 10, K=3), [[0, 4, 0], [8, 10, 0], [0, 8, 1]])

    def test_sampled_efficiency_and_seeds(self):
        rng = np.random.default_rng(8)
        model = Softmax(fakemodel.Net.random(rng, 2, 32, 4, scale=0.5))
        x = rng.normal(0, 1, (2, 64)).astype(np.float32)
        cfg = {"samples": 101, "feature": 4}  # F = 16: 65534 coalitions, 101 sampled
        a = self.explain(model, x, [1, 3], [10, 11], cfg)
        phi = a[:, ::4]
        full = model.probs(x)[[0, 1], [1, 3]]
        empty = model.probs(np.zeros((1, 64)))[0, [1, 3]]
        np.testing.assert_allclose(phi.sum(axis=1), full - empty, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(self.explain(model, x, [1, 3], [10, 11], cfg), a)
        c = self.explain(model, x, [1, 3], [10, 12], cfg)
        np.testing.assert_array_equal(c[0], a[0])  # each input's own seed
        self.assertGreater(np.abs(c[1] - a[1]).max(), 1e-4)

    def test_sampled_tends_to_shapley(self):
        # Drawn from the kernel's distribution, the estimate approaches
        # the Shapley values as samples grow (F = 10: 1022 coalitions).
        rng = np.random.default_rng(9)
        model = Softmax(fakemodel.Net.random(rng, 1, 20, 3, scale=0.8))
        x = rng.normal(0, 1, (1, 20)).astype(np.float32)
        want = brute_shapley(model, x[0], 1, 2, 0.0)
        errs = []
        for samples in (40, 1000):
            got = self.explain(model, x, [1], [21], {"samples": samples, "feature": 2})[0, ::2]
            errs.append(np.abs(got - want).max() / np.abs(want).max())
        self.assertLess(errs[1], 0.05, errs)
        self.assertLess(errs[1], errs[0], errs)

    def test_paths_agree_through_the_service(self):
        # The coalitions as spans of absent features (the service's Spans)
        # and as inputs built here (Probs) give the same maps.
        rng = np.random.default_rng(12)
        net = fakemodel.Net.random(rng, 1, 30, 3, scale=0.7)
        fake = fakemodel.Served({4: net})
        try:
            model = kit.Model.from_service(fake.ref(4))
            x = rng.normal(0, 1, (2, 30)).astype(np.float32)
            for cfg in [{"samples": 40, "feature": 4}, {"samples": 62, "feature": 5, "baseline": 0.5}]:
                before = dict(fake.service.calls)
                a = self.explain(model, x, [0, 2], [5, 6], cfg)
                self.assertEqual(fake.service.calls.get("Spans", 0) - before.get("Spans", 0), 2)
                self.assertEqual(fake.service.calls.get("Probs", 0) - before.get("Probs", 0), 0)
                b = self.explain(model, x, [0, 2], [5, 6], dict(cfg, path="probs"))
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
                self.assertGreater(np.abs(a).max(), 1e-3)
        finally:
            fake.close()

    def test_absent_spans(self):
        m = np.array([False, False, True, False, True, False])
        self.assertEqual(kernelshap.absent_spans(m, 4, 22), [[0, 8], [12, 16], [20, 22]])
        self.assertEqual(kernelshap.absent_spans(np.ones(3, dtype=bool), 4, 12), [])
        self.assertEqual(kernelshap.absent_spans(np.zeros(3, dtype=bool), 4, 11), [[0, 11]])

    def test_coalitions(self):
        z, w = kernelshap.coalitions(4, 14, seed=0)
        self.assertEqual(len(z), 14)
        self.assertEqual(len({tuple(r) for r in z.tolist()}), 14)
        np.testing.assert_allclose(w, [3 / (4 * 1 * 3) if s in (1, 3) else 3 / (6 * 2 * 2) for s in z.sum(axis=1)])
        z, w = kernelshap.coalitions(12, 301, seed=5)
        self.assertEqual(z.shape, (301, 12))
        np.testing.assert_array_equal(w, 1)
        sizes = z.sum(axis=1)
        self.assertTrue(np.all((sizes >= 1) & (sizes <= 11)))
        np.testing.assert_array_equal(z[151:], ~z[:150])  # paired: complements follow
        # The sizes follow q(s) ~ 1/(s (F - s)): chi-square against it.
        # (F = 16: 65534 coalitions, so 20000 are drawn; the first half
        # are the independent draws.)
        z, _ = kernelshap.coalitions(16, 20000, seed=6)
        s = np.arange(1, 16)
        q = 1 / (s * (16 - s))
        want = 10000 * q / q.sum()
        got = np.bincount(z[:10000].sum(axis=1), minlength=16)[1:]
        chi2 = ((got - want) ** 2 / want).sum()
        self.assertLess(chi2, 43, (got, want))  # 14 degrees of freedom: p < 1e-4
        # Within a size, every feature is as likely (uniform subsets).
        per = z[:10000].sum(axis=0)
        self.assertLess(np.abs(per - per.mean()).max() / per.mean(), 0.05, per)

    def test_documented_scheme(self):
        # The draws as the script's comment spells them, written as loops:
        # a user can reproduce the coalitions of a map from its seed.
        F, samples, seed = 7, 61, 12345
        rng = np.random.default_rng(seed)
        m = -(-samples // 2)
        q = [1 / (s * (F - s)) for s in range(1, F)]
        cum, acc = [], 0.0
        for v in q:
            acc += v / sum(q)
            cum.append(acc)
        cum[-1] = 1.0
        sizes = [1 + sum(1 for c in cum[:-1] if c <= u) for u in rng.random(m)]
        keys = rng.random((m, F))
        draws = []
        for i in range(m):
            order = sorted(range(F), key=lambda j: (keys[i, j], j))
            draws.append([j in order[:sizes[i]] for j in range(F)])
        want = (draws + [[not v for v in d] for d in draws])[:samples]
        z, w = kernelshap.coalitions(F, samples, seed)
        np.testing.assert_array_equal(z, np.array(want))

    def test_keys(self):
        for cfg, msg in [
            ({"samples": 1}, 'key "samples": 1 is out of range (accepted: 2..1048576)'),
            ({"feature": 0}, 'key "feature": 0 is out of range (accepted: 1..1073741824)'),
            ({"baseline": "mean"}, 'key "baseline": want a number, got string "mean"'),
            ({"baseline": -1e39}, 'key "baseline": -1e+39 is beyond float32 (accepted: a number within float32)'),
            ({"kernel_width": 1}, 'unknown key "kernel_width" (accepted: baseline, feature, features, path, samples)'),
            ({"path": "windows"}, 'key "path" is "windows" (accepted: "spans", "probs")'),
            ({"features": "channels"}, 'key "features" is "channels" (accepted: "channel-segment", "segment")'),
        ]:
            with self.subTest(cfg=cfg):
                with self.assertRaises(ValueError) as cm:
                    kernelshap.KernelSHAP().check(cfg)
                self.assertEqual(str(cm.exception), msg)
        model = Additive(64, 4, np.ones(16), 0)
        with self.assertRaisesRegex(ValueError, r'^key "samples": 29 coalitions cannot determine 16 features \(input '
                                                r'length 64, feature 4\) \(accepted: samples >= 30, twice the features '
                                                r'less one, as complements come in pairs\)$'):
            self.explain(model, np.zeros((1, 64)), [0], [1], {"samples": 29, "feature": 4})

    def test_undetermined_is_an_error(self):
        # Coalitions that leave a direction free: S and its complement
        # only, for F = 3.
        z = np.array([[True, False, False], [False, True, True]])
        phi, rank = kernelshap.shapley(z, np.ones(2), np.array([0.2, 0.5]), 0.1, 0.9)
        self.assertEqual(rank, 1)
        self.assertAlmostEqual(phi.sum(), 0.8, places=15)
        # Through explain: a model that ignores nothing, seeds whose draws
        # repeat (F = 3 has only 6 coalitions, 3 pairs; 4 samples draw 2).
        model = Additive(3, 1, [1.0, 2.0, 3.0], 0)
        fails = 0
        for seed in range(40):
            try:
                self.explain(model, np.ones((1, 3)), [1], [seed], {"samples": 4, "feature": 1})
            except ValueError as e:
                self.assertRegex(str(e), r"^input 0: the 4 coalitions drawn with seed %d determine only 2 of the 3 "
                                         r"features' values \(key \"samples\": draw more\)$" % seed)
                fails += 1
        self.assertGreater(fails, 0)
        self.assertLess(fails, 40)


if __name__ == "__main__":
    unittest.main()
