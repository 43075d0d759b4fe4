"""The Python side of the worked example recipes/torch_resnet.toml:
recipes/torch/resnet1d.py, scripts/train_torch_example.py and
scripts/torch_occlusion_loop.py.

* The training script's safetensors writer against the kit's reader
  (uaxai_plugin.torchmodel.load_state_dict): every tensor back bit for bit
  with its dtype, and the reloaded network gives the same logits.
* The plain occlusion loop against Captum's Occlusion maps in
  testdata/golden/archs (one and three channels), against a direct
  computation here (one occluded copy at a time, a stride that leaves a
  tail), chunks of 1 and 7 against 256 (within 1e-7: torch rounds
  another batch size differently), and a metamorphic relation: a model
  that ignores channel 1 gets a zero map there.
* The training script run twice with --quick on a tiny data set written
  here: the four files and train.json (SHA-256s that match the files),
  the same bytes for the same seed, files that posterior.torch's loader
  takes with output "logits".
* Bad data: a missing directory or file and a label beyond classes.txt
  are refused with the path and what would be accepted.
"""

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

import require  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))

import numpy as np  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError as e:  # pragma: no cover
    require.missing("torch", e)
    torch = None

TRAIN = os.path.join(ROOT, "scripts", "train_torch_example.py")
LOOP = os.path.join(ROOT, "scripts", "torch_occlusion_loop.py")
MODULE = os.path.join(ROOT, "recipes", "torch", "resnet1d.py")
GOLDEN = os.path.join(ROOT, "testdata", "golden", "archs")


def load_script(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def direct_occlusion(model, x, window, stride, baseline, output):
    """The occlusion map of one record x (C, T), one occluded copy per
    forward pass: sum and count of p_y(x) - p_y(occluded) per sample."""
    C, T = x.shape
    with torch.no_grad():
        def prob(z):
            out = model(torch.from_numpy(z)[None])[0]
            return (torch.softmax(out, dim=0) if output == "logits" else out).double().numpy()

        p = prob(x)
        y = int(np.argmax(p))
        total, count = np.zeros((C, T)), np.zeros((C, T))
        for c in range(C):
            s = 0
            while s + window <= T:
                z = x.copy()
                z[c, s:s + window] = baseline
                total[c, s:s + window] += p[y] - prob(z)[y]
                count[c, s:s + window] += 1
                s += stride
    return np.where(count > 0, total / np.maximum(count, 1), 0.0), y


if torch is not None:
    class FirstChannelOnly(torch.nn.Module):
        """Logits from channel 0 alone: channel 1 never reaches the output."""

        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(1, 6, 5, padding=2)
            self.fc = torch.nn.Linear(6, 4)

        def forward(self, x):
            return self.fc(torch.tanh(self.conv(x[:, :1])).mean(dim=2))


@unittest.skipIf(torch is None, "the torch example needs PyTorch (Debian: apt-get install python3-torch)")
class TorchExampleCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.train = load_script(TRAIN, "uaxai_test_train_torch_example")
        cls.loop = load_script(LOOP, "uaxai_test_torch_occlusion_loop")
        from uaxai_plugin import torchmodel
        cls.tm = torchmodel

    def tiny_resnet(self, cin, seed):
        """A randomly initialised ResNet1D with BatchNorm statistics that are not the defaults."""
        torch.manual_seed(seed)
        m = self.train.load_module_file(MODULE).ResNet1D(in_channels=cin, classes=5, width=4, blocks=2, dropout=0.3)
        m.train()
        with torch.no_grad():
            m(torch.randn(8, cin, 50))
        return m.eval()

    def test_safetensors_round_trip(self):
        m = self.tiny_resnet(2, 1)
        sd = m.state_dict()
        sd["extra.f64"] = torch.randn(3, dtype=torch.float64)
        sd["extra.odd"] = torch.tensor([1, -2, 3], dtype=torch.int16)  # 6 bytes: the next tensor starts unaligned
        sd["extra.scalar"] = torch.tensor(7.5)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.safetensors")
            self.tm.save_state_dict(path, sd)
            back = self.tm.load_state_dict(path)
            with open(path, "rb") as f:
                n = int.from_bytes(f.read(8), "little")
        self.assertEqual(n % 8, 0, "header length")
        self.assertEqual(sorted(back), sorted(sd))
        for k, v in sd.items():
            self.assertEqual(back[k].dtype, v.dtype, k)
            self.assertEqual(tuple(back[k].shape), tuple(v.shape), k)
            self.assertEqual(back[k].numpy().tobytes(), v.numpy().tobytes(), k)
        self.assertEqual(sd["blocks.0.bn1.num_batches_tracked"].dtype, torch.int64)
        self.assertEqual(int(back["blocks.0.bn1.num_batches_tracked"]), 1)
        del back["extra.f64"], back["extra.odd"], back["extra.scalar"]
        m2 = self.tiny_resnet(2, 2)
        x = torch.randn(3, 2, 50)
        self.assertFalse(torch.equal(m(x), m2(x)))
        m2.load_state_dict(back)
        self.assertTrue(torch.equal(m(x), m2(x)))

    def test_loop_matches_captum_golden(self):
        for name, cin in (("resnet1d", 1), ("resnet1d-3ph", 3)):
            m = self.tm.load_module(os.path.join(GOLDEN, "archs.py") + ":ResNet1D", {"cin": cin})
            m.load_state_dict(self.tm.load_state_dict(os.path.join(GOLDEN, name, "model.safetensors")))
            m.eval()
            x = np.loadtxt(os.path.join(GOLDEN, name, "waveforms.csv"), delimiter=",", dtype=np.float32)
            want = np.loadtxt(os.path.join(GOLDEN, name, "occlusion.csv"), delimiter=",", dtype=np.float32)
            targets = np.loadtxt(os.path.join(GOLDEN, name, "targets.csv"), dtype=np.int64)
            got, y = self.loop.occlusion_maps(m, x.reshape(len(x), cin, 640), 60, 20, 0.0, "probs", 256)
            np.testing.assert_array_equal(y, targets)
            rel = np.abs(got.reshape(len(x), -1) - want) / np.abs(want).max(axis=1, keepdims=True)
            self.assertLess(float(rel.max()), 1e-4, name)  # the README's tolerance for a float32 port

    def test_loop_matches_direct_and_chunks(self):
        m = self.tiny_resnet(2, 3)
        rng = np.random.default_rng(4)
        x = rng.normal(size=(3, 2, 50)).astype(np.float32)
        for window, stride, base in ((12, 5, 0.0), (7, 1, 0.5), (50, 50, -1.0)):
            m256, y256 = self.loop.occlusion_maps(m, x, window, stride, base, "logits", 256)
            for chunk in (1, 7):
                mk, yk = self.loop.occlusion_maps(m, x, window, stride, base, "logits", chunk)
                np.testing.assert_array_equal(yk, y256)
                # torch's CPU convolutions round differently for another batch size: the maps agree to the last
                # bits of a float32 probability, not bit for bit
                np.testing.assert_allclose(mk, m256, rtol=0, atol=1e-7)
            for n in range(len(x)):
                want, y = direct_occlusion(m, x[n], window, stride, base, "logits")
                self.assertEqual(y256[n], y)
                np.testing.assert_allclose(m256[n], want, rtol=0, atol=1e-6)
            self.assertGreater(float(np.abs(m256).max()), 1e-4, "the maps are not all zero")
        # stride 5, window 12 over 50 samples: the last window starts at 35, so 47..49 are never occluded
        m256, _ = self.loop.occlusion_maps(m, x, 12, 5, 0.0, "logits", 256)
        self.assertTrue(np.all(m256[:, :, 47:] == 0))

    def test_loop_ignored_channel_is_zero(self):
        torch.manual_seed(5)
        m = FirstChannelOnly().eval()
        x = np.random.default_rng(6).normal(size=(4, 2, 40)).astype(np.float32)
        maps, _ = self.loop.occlusion_maps(m, x, 8, 2, 0.0, "logits", 16)
        self.assertTrue(np.all(maps[:, 1] == 0))
        self.assertGreater(float(np.abs(maps[:, 0]).max()), 1e-5)
        # the ignored channel's values do not change channel 0's map
        x2 = x.copy()
        x2[:, 1] = 3.0
        maps2, _ = self.loop.occlusion_maps(m, x2, 8, 2, 0.0, "logits", 16)
        np.testing.assert_array_equal(maps2, maps)

    def test_loop_command(self):
        m = self.tiny_resnet(1, 7)
        x = np.random.default_rng(8).normal(size=(2, 1, 50)).astype(np.float32)
        with tempfile.TemporaryDirectory() as d:
            w = os.path.join(d, "w.safetensors")
            self.tm.save_state_dict(w, m.state_dict())
            np.save(os.path.join(d, "x.npy"), x)
            out = io.StringIO()
            args = json.dumps({"in_channels": 1, "classes": 5, "width": 4, "blocks": 2, "dropout": 0.3})
            with contextlib.redirect_stdout(out):
                rc = self.loop.main(["--module", MODULE + ":ResNet1D", "--args", args, "--weights", w, "--input",
                                     os.path.join(d, "x.npy"), "--window", "10", "--stride", "4", "--out",
                                     os.path.join(d, "maps.npy")])
            self.assertEqual(rc, 0)
            line = json.loads(out.getvalue())
            self.assertEqual(line["records"], 2)
            self.assertEqual(line["windows"], len(range(0, 41, 4)))
            self.assertGreater(line["ms_per_map"], 0)
            got = np.load(os.path.join(d, "maps.npy"))
        want, _ = self.loop.occlusion_maps(m, x, 10, 4, 0.0, "logits", 256)
        self.assertEqual(got.dtype, np.float32)
        np.testing.assert_array_equal(got, want)

    def test_loop_given_classes(self):
        # --targets FILE.npy explains those classes: the predicted ones give the default's maps, others the
        # direct computation for that class; a file of the wrong shape is refused, naming it.
        m = self.tiny_resnet(1, 7)
        x = np.random.default_rng(10).normal(size=(3, 1, 50)).astype(np.float32)
        pred_maps, pred = self.loop.occlusion_maps(m, x, 10, 4, 0.0, "logits", 256)
        same, _ = self.loop.occlusion_maps(m, x, 10, 4, 0.0, "logits", 256, pred)
        np.testing.assert_array_equal(same, pred_maps)
        other = (pred + 1) % 5
        got, y = self.loop.occlusion_maps(m, x, 10, 4, 0.0, "logits", 256, other)
        np.testing.assert_array_equal(y, other)
        for n in range(len(x)):
            with torch.no_grad():
                p = torch.softmax(m(torch.from_numpy(x[n:n + 1])), dim=1)[0]
            want = np.zeros((1, 50))
            cover = np.zeros((1, 50))
            for s0 in range(0, 41, 4):
                xo = x[n].copy()
                xo[0, s0:s0 + 10] = 0.0
                with torch.no_grad():
                    po = torch.softmax(m(torch.from_numpy(xo[None])), dim=1)[0]
                want[0, s0:s0 + 10] += float(p[other[n]] - po[other[n]])
                cover[0, s0:s0 + 10] += 1
            np.testing.assert_allclose(got[n], np.where(cover > 0, want / np.maximum(cover, 1), 0), rtol=0, atol=1e-6)
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "x.npy"), x)
            np.save(os.path.join(d, "t.npy"), np.zeros(2, np.int64))
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = self.loop.main(["--module", MODULE + ":ResNet1D", "--args", json.dumps(
                    {"in_channels": 1, "classes": 5, "width": 4, "blocks": 2}), "--input", os.path.join(d, "x.npy"),
                    "--window", "10", "--stride", "4", "--targets", os.path.join(d, "t.npy"), "--out",
                    os.path.join(d, "m.npy")])
            self.assertEqual(rc, 2)
            self.assertIn("t.npy: int64 array of shape (2,); want integers of shape (3,)", err.getvalue())

    def write_data(self, d, classes=3, per_class=(6, 2), bad_label=False):
        rng = np.random.default_rng(9)
        t = np.arange(640) / 64.0
        for split, k in zip(("train", "val"), per_class):
            os.makedirs(os.path.join(d, split))
            y = np.repeat(np.arange(classes), k)
            x = (1 + 0.3 * y[:, None]) * np.sin(2 * np.pi * t)[None] + 0.05 * rng.normal(size=(len(y), 640))
            if bad_label and split == "val":
                y[1] = classes
            np.save(os.path.join(d, split, "waveforms.npy"), x[:, None].astype(np.float32))
            np.save(os.path.join(d, split, "labels.npy"), y.astype(np.int64))
            with open(os.path.join(d, split, "classes.txt"), "w") as f:
                f.write("".join("class%d\n" % c for c in range(classes)))

    def test_train_quick_deterministic(self):
        names = ["resnet-0", "resnet-1", "resnet-2", "resnet-dropout"]
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "data")
            self.write_data(data)
            runs = []
            for r in ("a", "b"):
                out = os.path.join(d, r)
                p = subprocess.run([sys.executable, TRAIN, "--data", data, "--out", out, "--quick", "--threads", "1",
                                    "--seed", "11"], capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("resnet-dropout: epoch 2/2", p.stderr)
                with open(os.path.join(out, "train.json")) as f:
                    info = json.load(f)
                files = {}
                for n in names:
                    with open(os.path.join(out, n + ".safetensors"), "rb") as f:
                        files[n] = f.read()
                runs.append((info, files))
            info, files = runs[0]
            self.assertEqual([mm["file"] for mm in info["members"]], [n + ".safetensors" for n in names])
            self.assertEqual([mm["seed"] for mm in info["members"]], [11, 12, 13, 14])
            self.assertEqual([mm["dropout"] for mm in info["members"]], [0.0, 0.0, 0.0, 0.2])
            for mm in info["members"]:
                self.assertEqual(mm["sha256"], hashlib.sha256(files[mm["file"][:-len(".safetensors")]]).hexdigest())
                self.assertIn(mm["best_epoch"], (1, 2))
                self.assertTrue(0 <= mm["val_accuracy"] <= 1)
            self.assertEqual(info["module_args"], {"in_channels": 1, "classes": 3, "width": 16, "blocks": 3})
            self.assertEqual(runs[1][1], files, "a second run with the same seed gives other bytes")
            self.assertNotEqual(files["resnet-0"], files["resnet-1"])
            # what posterior.torch does with the files: the module from the recipe's file, output "logits"
            for n in names:
                args = dict(info["module_args"], dropout=0.2 if n == "resnet-dropout" else 0.0)
                m = self.tm.load_module(MODULE + ":ResNet1D", args)
                m.load_state_dict(self.tm.load_state_dict(os.path.join(d, "a", n + ".safetensors")))
                draw = self.tm.TorchDraw(m, 1, 640, output="logits")
                self.assertEqual(draw.classes, 3)
                self.assertEqual(draw.layers["blocks.2"], (32, 640))

    def run_main(self, argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = self.train.main(argv)
        return rc, err.getvalue()

    def test_train_bad_data(self):
        with tempfile.TemporaryDirectory() as d:
            rc, err = self.run_main(["--data", os.path.join(d, "none"), "--out", os.path.join(d, "out")])
            self.assertEqual(rc, 2)
            self.assertIn(os.path.join(d, "none", "train") + ": no such directory", err)
            self.assertIn("uaxai data generate --paper --format npy --out DIR", err)

            data = os.path.join(d, "data")
            self.write_data(data)
            os.remove(os.path.join(data, "val", "classes.txt"))
            rc, err = self.run_main(["--data", data, "--out", os.path.join(d, "out")])
            self.assertEqual(rc, 2)
            self.assertIn(os.path.join(data, "val", "classes.txt") + ": no such file", err)

            bad = os.path.join(d, "bad")
            self.write_data(bad, bad_label=True)
            rc, err = self.run_main(["--data", bad, "--out", os.path.join(d, "out")])
            self.assertEqual(rc, 2)
            self.assertIn(os.path.join(bad, "val", "labels.npy") + ": record 1 has label 3", err)
            self.assertIn("accepted: 0..2", err)
            self.assertFalse(os.path.exists(os.path.join(d, "out")), "nothing is written for bad data")


if __name__ == "__main__":
    unittest.main()
