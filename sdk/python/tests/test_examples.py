"""The example explainers under plugins/explainer/python-*, imported from
their scripts:

* python-occlusion against a reference written here as a plain loop over
  the windows (occluded copies through the closed-form network, baselines
  by np.mean and np.linalg.lstsq), for number, mean and fundamental
  baselines, both paths (the service's Windows and Probs of copies built
  by the plugin), a stride that leaves an uncovered tail and two
  channels; the Go operator's key checks and messages.
"""

import importlib.machinery
import importlib.util
import itertools
import math
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import uaxai_plugin as kit  # noqa: E402

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


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class TestScripts(unittest.TestCase):
    def test_runnable_as_plugins(self):
        for path in (OCCLUSION_PATH,):
            self.assertTrue(os.access(path, os.X_OK), path)
            with open(path) as f:
                self.assertEqual(f.readline(), "#!/usr/bin/env python3\n")

    def test_infos(self):
        i = occlusion.Occlusion().info()
        i.validate()
        self.assertEqual((i.id, i.needs, i.stochastic, i.wants_model),
                         ("explainer.python-occlusion", kit.NEEDS_PROBS, False, True))


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

    def reference(self, window, stride, baseline, period=64.0):
        """The occlusion maps by the definition, one window at a time."""
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
            total, count = np.zeros(T), np.zeros(T)
            s = 0
            while s + window <= T:
                occ = rec.copy()
                occ[:, s:s + window] = z[:, s:s + window]
                diff = p0 - self.p(occ.reshape(1, -1))[0, c]
                for t in range(s, s + window):
                    total[t] += diff
                    count[t] += 1
                s += stride
            row = np.array([total[t] / count[t] if count[t] else 0.0 for t in range(T)])
            out[b] = np.tile(row, C)
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
            want = self.reference(cfg["window"], cfg.get("stride", 1), cfg.get("baseline", 0.0), cfg.get("period", 64.0))
            for path in ("windows", "probs"):
                with self.subTest(cfg=cfg, path=path):
                    got = self.explain(dict(cfg, path=path))
                    self.assertEqual(got.shape, (3, self.C * self.T))
                    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
                    self.assertGreater(np.abs(got).max(), 1e-3, "a map that says nothing")

    def test_tail_and_channels(self):
        got = self.explain({"window": 7, "stride": 4})
        T = self.T
        np.testing.assert_array_equal(got[:, T - 1], 0)  # no window covers t = 39
        np.testing.assert_array_equal(got[:, 2 * T - 1], 0)
        self.assertTrue(np.all(got[:, T - 2] != 0))
        np.testing.assert_array_equal(got[:, :T], got[:, T:])

    def test_paths_agree_and_windows_is_one_call(self):
        for cfg in [{"window": 9, "stride": 2}, {"window": 9, "baseline": "mean"}, {"window": 9, "baseline": "fundamental"}]:
            calls = dict(self.fake.service.calls)
            a = self.explain(cfg)
            self.assertEqual(self.fake.service.calls.get("Windows", 0) - calls.get("Windows", 0), 1)
            self.assertEqual(self.fake.service.calls.get("Probs", 0) - calls.get("Probs", 0), 1)
            calls = dict(self.fake.service.calls)
            b = self.explain(dict(cfg, path="probs"))
            rows = 3 * len(range(0, self.T - 9 + 1, cfg.get("stride", 1)))
            self.assertEqual(self.fake.service.calls["Probs"] - calls["Probs"], 1 + math.ceil(rows / occlusion.CHUNK))
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
            ({"windw": 3}, 'unknown key "windw" (accepted: baseline, path, period, seed, stride, window)'),
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



if __name__ == "__main__":
    unittest.main()
