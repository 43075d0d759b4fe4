"""posterior.torch (plugins/posterior/torch) and the kit's posterior
serving (uaxai_plugin.posterior), against independent facts:

* the served draws of the paper's network (a port of it in
  testdata/peers/torch_ref.py, loaded with testdata/golden/paper-1dcnn's
  weights) give PyTorch's probabilities written in that folder;
* Fit's digests are the files' SHA-256 (hashlib over the bytes), and a
  file changed after the fit is refused at Sample;
* a list of weights is an ensemble: draw s is member s (a second member
  whose fc2 bias is shifted gives softmax(logits + shift));
* an MC-dropout draw is the network with the documented fixed mask on
  fc2's input (softmax(fc2(m * h)) computed here from fc2_input), the
  same for the same seed in a fresh plugin, another for another seed;
* an MC-dropout draw of a Transformer classifier is one network in every
  call: Probs and Windows (no gradients, where PyTorch's encoder layer
  has a fast path without dropout) give InputGrad's probabilities, and
  each draw is PyTorch's training-mode pass with the documented masks on
  every dropout, the attention's included;
* the recipe errors users hit name the key and what is accepted;
* over gRPC, a Check error is INVALID_ARGUMENT with the message, Fit
  streams the artifact, Sample answers served references.

Skipped unless this python3 imports torch."""

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import unittest

import require  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(HERE, ".."))

import grpc  # noqa: E402
import numpy as np  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError as e:  # pragma: no cover
    require.missing("torch", e)
    torch = None

from uaxai_plugin import Error, wire  # noqa: E402
from uaxai_plugin import posterior as kp  # noqa: E402
from uaxai_plugin._pb import plugin_pb2, plugin_pb2_grpc  # noqa: E402

PLUGIN = os.path.join(ROOT, "plugins", "posterior", "torch", "uaxai-posterior-torch")
NET = os.path.join(ROOT, "testdata", "peers", "torch_ref.py")
GOLD = os.path.join(ROOT, "testdata", "golden", "paper-1dcnn")
WEIGHTS = os.path.join(GOLD, "model.safetensors")
ARCH = {"name": "paper-1dcnn", "in_channels": 1, "in_len": 640, "layers": []}


# TRANSFORMER is the small Transformer classifier (a file, as
# posterior.torch loads one): a Conv1d patch embedding, one
# TransformerEncoderLayer (batch first), the mean over tokens, a linear
# head, the softmax.
TRANSFORMER = """import torch


class Classifier(torch.nn.Module):
    def __init__(self, dropout=0.2):
        super().__init__()
        self.embed = torch.nn.Conv1d(1, 16, 16, stride=16)
        self.enc = torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=dropout, batch_first=True)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        return torch.softmax(self.head(self.enc(self.embed(x).transpose(1, 2)).mean(dim=1)), dim=1)
"""


def plugin():
    loader = importlib.machinery.SourceFileLoader("uaxai_posterior_torch", PLUGIN)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def csv(path):
    return np.loadtxt(path, delimiter=",", dtype=np.float32, ndmin=2)


def fit_request(cfg, arch=ARCH):
    b = json.dumps(arch).encode()
    return kp.FitRequest(arch_json=b, arch=arch, train=None, val=None, training={}, config=cfg, seed=1, workers=1,
                         part=0, parts=0, replicate=0)


def probs_at(ref, x):
    """The probabilities of x at a served draw, by the service's Probs."""
    with grpc.insecure_channel("unix:" + ref.address) as ch:
        r = plugin_pb2_grpc.ModelStub(ch).Probs(plugin_pb2.ModelBatch(handle=ref.handle, x=wire.float32_bytes(x)))
    return wire.float32s(r.probs).reshape(len(x), -1)


@unittest.skipIf(torch is None, "posterior.torch needs PyTorch: apt-get install python3-torch (skipped)")
class TorchPosteriorTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="uaxai-pt-")
        self.sock = tempfile.mkdtemp(prefix="s", dir="/tmp")
        self.pm = plugin()
        self.x = csv(os.path.join(GOLD, "waveforms.csv"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        shutil.rmtree(self.sock, ignore_errors=True)

    def cfg(self, **kw):
        c = {"file": NET, "module": "WaveNet", "weights": WEIGHTS}
        c.update(kw)
        return c

    def sample(self, p, cfg, seeds):
        a = p.fit(fit_request(cfg))
        return a, p.sample(a, kp.SampleRequest(seeds=seeds, config=cfg, socket_dir=self.sock))

    def test_served_draw_is_pytorchs_network(self):
        p = self.pm.TorchPosterior()
        _, refs = self.sample(p, self.cfg(), [7])
        self.assertEqual(len(refs), 1)
        self.assertEqual(os.path.dirname(refs[0].address), self.sock)
        got = probs_at(refs[0], self.x)
        want = csv(os.path.join(GOLD, "probs.csv"))
        self.assertLess(float(np.abs(got - want).max()), 1e-5)

    def test_fit_records_digests_and_sample_refuses_a_changed_file(self):
        w = os.path.join(self.tmp, "w.safetensors")
        shutil.copy(WEIGHTS, w)
        cfg = self.cfg(weights=[w, WEIGHTS])
        p = self.pm.TorchPosterior()
        a = p.fit(fit_request(cfg))
        for key, path in (("sha256.file", NET), ("sha256.weights.0", w), ("sha256.weights.1", WEIGHTS)):
            with open(path, "rb") as f:
                self.assertEqual(a.meta[key], hashlib.sha256(f.read()).hexdigest(), key)
        self.assertEqual((a.meta["in_channels"], a.meta["in_len"], a.meta["classes"]), ("1", "640", "16"))
        with open(w, "r+b") as f:  # one byte of the last tensor's data
            f.seek(-1, os.SEEK_END)
            b = f.read(1)
            f.seek(-1, os.SEEK_END)
            f.write(bytes([b[0] ^ 1]))
        with self.assertRaisesRegex(Error, 'key "weights" entry 0 .*changed since the fit'):
            p.sample(a, kp.SampleRequest(seeds=[1], config=cfg, socket_dir=self.sock))

    def test_ensemble_draw_s_is_member_s(self):
        from uaxai_plugin import torchmodel as tm
        sd = tm.load_state_dict(WEIGHTS)
        shift = torch.arange(16, dtype=torch.float32) * 0.1
        sd["fc2.bias"] = sd["fc2.bias"] + shift
        w1 = os.path.join(self.tmp, "member1.pt")
        torch.save(sd, w1)
        p = self.pm.TorchPosterior()
        _, refs = self.sample(p, self.cfg(weights=[WEIGHTS, w1]), [3, 4])
        logits = csv(os.path.join(GOLD, "logits.csv"))
        for s, want_logits in enumerate((logits, logits + shift.numpy())):
            want = torch.softmax(torch.from_numpy(want_logits).double(), 1).numpy()
            self.assertLess(float(np.abs(probs_at(refs[s], self.x) - want).max()), 1e-5, "draw %d" % s)

    def test_mc_dropout_draw_is_the_documented_mask(self):
        cfg = self.cfg(args={"dropout": 0.2}, mc_dropout=True)
        p = self.pm.TorchPosterior()
        _, refs = self.sample(p, cfg, [11, 12])
        # The mask of the module's doc, computed here: SHA-256 of
        # "<seed>:<index>:<shape>", a generator, U >= p over 1 - p.
        from uaxai_plugin import torchmodel as tm
        net = tm.load_module(NET + ":WaveNet", {"dropout": 0.2})
        net.load_state_dict(tm.load_state_dict(WEIGHTS))
        net.eval()
        x = torch.from_numpy(self.x).view(-1, 1, 640)
        got = [probs_at(r, self.x) for r in refs]
        for s, seed in enumerate((11, 12)):
            k = int.from_bytes(hashlib.sha256(("%d:0:64" % seed).encode()).digest()[:8], "little") & ((1 << 63) - 1)
            m = (torch.rand((64,), generator=torch.Generator().manual_seed(k)) >= 0.2).float() / 0.8
            with torch.no_grad():
                want = torch.softmax(net.fc2(net.fc2_input(x) * m), 1).numpy()
            self.assertLess(float(np.abs(got[s] - want).max()), 1e-5, "seed %d" % seed)
        self.assertGreater(float(np.abs(got[0] - got[1]).max()), 1e-3, "seeds 11 and 12 give the same draw")
        # The same seed in a fresh plugin (another process's view): the same draw.
        _, again = self.sample(self.pm.TorchPosterior(), cfg, [12])
        np.testing.assert_array_equal(probs_at(again[0], self.x), got[1])

    def test_mc_dropout_transformer_is_one_network_in_every_call(self):
        # The classifier: an eval-mode TransformerEncoderLayer
        # under torch.no_grad() (Probs, Windows: probabilities, occlusion)
        # takes PyTorch's fast path, which runs no dropout, and with
        # gradients (InputGrad, Layer: input gradients, Grad-CAM) does
        # not. A draw must be one network in both.
        src = os.path.join(self.tmp, "tnet.py")
        with open(src, "w") as f:
            f.write(TRANSFORMER)
        from uaxai_plugin import torchmodel as tm
        torch.manual_seed(7)
        net = tm.load_module(src + ":Classifier", {"dropout": 0.2})
        w = os.path.join(self.tmp, "tnet.safetensors")
        tm.save_state_dict(w, net.state_dict())
        cfg = {"file": src, "module": "Classifier", "args": {"dropout": 0.2}, "weights": w, "mc_dropout": True}
        arch = {"name": "tnet", "in_channels": 1, "in_len": 64, "layers": []}
        p = self.pm.TorchPosterior()
        refs = p.sample(p.fit(fit_request(cfg, arch)), kp.SampleRequest(seeds=[3, 4], config=cfg, socket_dir=self.sock))
        x = np.random.RandomState(0).randn(6, 64).astype(np.float32)
        t = [0, 1, 2, 3, 0, 1]
        got = []
        for ref in refs:
            probs = probs_at(ref, x)
            with grpc.insecure_channel("unix:" + ref.address) as ch:
                st = plugin_pb2_grpc.ModelStub(ch)
                ig = st.InputGrad(plugin_pb2.ModelBatch(handle=ref.handle, x=wire.float32_bytes(x), targets=t))
                # occlusion's path: a window whose baseline is the input itself
                wr = st.Windows(plugin_pb2.WindowsRequest(handle=ref.handle, x=wire.float32_bytes(x), targets=t,
                                                          starts=[0], width=8, baseline_x=wire.float32_bytes(x)))
            graded = wire.float32s(ig.probs).reshape(6, -1)
            np.testing.assert_allclose(graded, probs, rtol=0, atol=1e-6, err_msg="draw at %s: Probs and InputGrad's "
                                       "forward pass are other networks" % ref.handle)
            np.testing.assert_allclose(wire.float32s(wr.probs), graded[np.arange(6), t], rtol=0, atol=1e-6,
                                       err_msg="Windows and InputGrad's forward pass are other networks")
            got.append(probs)
        self.assertGreater(float(np.abs(got[0] - got[1]).max()), 1e-3, "seeds 3 and 4 give the same draw")
        # each is PyTorch's training-mode pass with the documented masks
        # on every dropout, the attention's included (test_mcdropout)
        from test_mcdropout import ENCODER_ORDER, reference
        with torch.no_grad():
            for s, seed in enumerate((3, 4)):
                want = reference(net, seed, ENCODER_ORDER, {0: 2}, torch.from_numpy(x).view(6, 1, 64)).numpy()
                self.assertLess(float(np.abs(got[s] - want).max()), 1e-6, "seed %d" % seed)

    def test_check_errors(self):
        p = self.pm.TorchPosterior()
        bad_import = os.path.join(self.tmp, "broken.py")
        with open(bad_import, "w") as f:
            f.write("import torch\nraise RuntimeError('boom in user code')\n")
        cases = [
            ({"module": "net.py:Net", "weights": WEIGHTS}, 1, 'a Python file is named by key "file"'),
            ({"file": NET, "weights": WEIGHTS}, 1, 'no key "module"'),
            (self.cfg(weights=[WEIGHTS]), 2, 'draws <= 1, one draw a weights file, or mc_dropout = true'),
            (self.cfg(weights=[]), 1, 'key "weights" is'),
            (self.cfg(device="cuda"), 1, 'key "device"'),
            (self.cfg(output="softmax"), 1, 'key "output"'),
            (self.cfg(colour=1), 1, 'unknown key "colour"'),
            (self.cfg(module="Nope"), 1, 'has no class or function "Nope" .*WaveNet'),
            (self.cfg(file=bad_import), 1, '(?s)does not import: RuntimeError: boom in user code.*Traceback.*broken.py'),
        ]
        for cfg, draws, want in cases:
            with self.assertRaisesRegex((ValueError, Error), want, msg=json.dumps(cfg)):
                p.check(cfg, draws)
        p.check(self.cfg(mc_dropout=True), 50)

    def test_fit_errors(self):
        p = self.pm.TorchPosterior()
        net = os.path.join(self.tmp, "nets.py")
        with open(net, "w") as f:
            f.write("import torch\n"
                    "class Wide(torch.nn.Module):\n"
                    "    def __init__(self, width):\n"
                    "        super().__init__()\n"
                    "        self.fc = torch.nn.Linear(640, width)\n"
                    "    def forward(self, x):\n"
                    "        return self.fc(x.flatten(1))\n")
        wide = os.path.join(self.tmp, "wide.pt")
        torch.save({"fc.weight": torch.zeros(4, 640), "fc.bias": torch.zeros(4)}, wide)
        cases = [
            ({"file": net, "module": "Wide", "weights": wide}, r'key "args": Wide\(\*\*\{\}\) failed: .*width.*\(width\)'),
            ({"file": net, "module": "Wide", "args": {"width": 4}, "weights": WEIGHTS},
             'does not fit module Wide: missing: fc.weight, fc.bias; unexpected: .*conv1.weight'),
            ({"file": net, "module": "Wide", "args": {"width": 5}, "weights": wide},
             r'shapes differ: fc.weight: \[4, 640\] in the file, \[5, 640\] in the module'),
            ({"file": net, "module": "Wide", "args": {"width": 4}, "weights": wide},
             'output "probs", but its output rows sum to .*set output = "logits"'),
            (self.cfg(mc_dropout=True), 'every torch.nn.Dropout layer of module WaveNet has p = 0'),
            ({"file": net, "module": "Wide", "args": {"width": 4}, "weights": wide, "output": "logits",
              "mc_dropout": True}, 'module Wide has no torch.nn.Dropout layer'),
            (self.cfg(in_len=320), 'key "in_len" is 320, but the recipe\'s model takes 640'),
        ]
        for cfg, want in cases:
            with self.assertRaisesRegex((ValueError, Error), want, msg=json.dumps(cfg)):
                p.fit(fit_request(cfg))
        # output = "logits" makes the same module a valid draw: the softmax of its logits (0: uniform).
        cfg = {"file": net, "module": "Wide", "args": {"width": 4}, "weights": wide, "output": "logits"}
        _, refs = self.sample(p, cfg, [1])
        np.testing.assert_allclose(probs_at(refs[0], self.x[:2]), np.full((2, 4), 0.25, np.float32), atol=1e-7)

    def test_scalar_counters_as_one_element_vectors(self):
        # Exporters write BatchNorm's num_batches_tracked as shape [1];
        # torch's load_state_dict takes it for the scalar, and so does
        # the plugin's check. A vector of two is still a shape error.
        p = self.pm.TorchPosterior()
        net = os.path.join(self.tmp, "bn.py")
        with open(net, "w") as f:
            f.write("import torch\n"
                    "class BN(torch.nn.Module):\n"
                    "    def __init__(self):\n"
                    "        super().__init__()\n"
                    "        self.bn = torch.nn.BatchNorm1d(1)\n"
                    "        self.fc = torch.nn.Linear(640, 3)\n"
                    "    def forward(self, x):\n"
                    "        return self.fc(self.bn(x).flatten(1))\n")
        sd = {"bn.weight": torch.full((1,), 2.0), "bn.bias": torch.zeros(1), "bn.running_mean": torch.zeros(1),
              "bn.running_var": torch.ones(1), "bn.num_batches_tracked": torch.tensor([7]),
              "fc.weight": torch.zeros(3, 640), "fc.bias": torch.tensor([0.0, 1.0, 2.0])}
        w = os.path.join(self.tmp, "bn.pt")
        torch.save(sd, w)
        cfg = {"file": net, "module": "BN", "weights": w, "output": "logits"}
        _, refs = self.sample(p, cfg, [1])
        e = np.exp([0.0, 1.0, 2.0])
        np.testing.assert_allclose(probs_at(refs[0], self.x[:1]), (e / e.sum())[None, :].astype(np.float32), rtol=1e-6)
        sd["bn.num_batches_tracked"] = torch.tensor([7, 8])
        torch.save(sd, w)
        with self.assertRaisesRegex(Error, r"shapes differ: bn.num_batches_tracked: \[2\] in the file, \[\] in the module"):
            p.fit(fit_request(cfg))

    def test_device(self):
        # device names a torch device; one this torch does not have is an error of Check that says what is
        # accepted here; "cpu" is the default and what every other test computes on.
        p = self.pm.TorchPosterior()
        for dev in ("gpu", "cuda:x", "cuda:", "CPU"):
            with self.assertRaisesRegex(ValueError, r'key "device" is "%s" \(accepted: "cpu", "cuda" or "cuda:N"'
                                        % dev.replace(":", ":")):
                p.check(self.cfg(device=dev), 1)
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        with self.assertRaisesRegex(Error, r'key "device" is "cuda:%d", but torch .* has' % n):
            p.check(self.cfg(device="cuda:%d" % n), 1)
        p.check(self.cfg(device="cpu"), 1)

    def test_weights_file_cannot_run_code(self):
        # A .pt file is a pickle; one whose unpickling would run a
        # command is refused, and the command does not run.
        p = self.pm.TorchPosterior()
        mark = os.path.join(self.tmp, "ran")

        class Evil:
            def __reduce__(self):
                return (os.system, ("touch " + mark,))

        w = os.path.join(self.tmp, "evil.pt")
        torch.save({"conv1.weight": Evil()}, w)
        with self.assertRaisesRegex(Error, r'key "weights": .*evil.pt: not a state_dict file'):
            p.fit(fit_request(self.cfg(weights=w)))
        self.assertFalse(os.path.exists(mark), "unpickling the weights file ran its command")

    def test_over_grpc(self):
        p = self.pm.TorchPosterior()
        info = p.info()
        srv = kp.build_posterior_server(p, info, stop=__import__("threading").Event())
        addr = os.path.join(self.sock, "p.sock")
        srv.add_insecure_port("unix:" + addr)
        srv.start()
        try:
            with grpc.insecure_channel("unix:" + addr) as ch:
                st = plugin_pb2_grpc.PosteriorStub(ch)
                pi = st.Info(plugin_pb2.InfoRequest())
                self.assertTrue(pi.serves_models)
                self.assertEqual(list(pi.files), ["file", "weights"])
                with self.assertRaises(grpc.RpcError) as e:
                    st.Check(plugin_pb2.CheckRequest(config_json=wire.encode_config({"weights": WEIGHTS}), draws=1))
                self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                self.assertIn('no key "module"', e.exception.details())
                cj = wire.encode_config(self.cfg())
                evs = list(st.Fit(plugin_pb2.FitRequest(arch_json=json.dumps(ARCH).encode(), config_json=cj)))
                self.assertEqual(len(evs), 1)
                art = evs[0].artifact
                self.assertEqual(art.meta["members"], "1")
                r = st.Sample(plugin_pb2.SampleRequest(artifact=art, seeds=[5], config_json=cj, socket_dir=self.sock))
                self.assertEqual(len(r.served), 1)
                self.assertEqual(len(r.draws), 0)
                got = probs_at(r.served[0], self.x)
                self.assertLess(float(np.abs(got - csv(os.path.join(GOLD, "probs.csv"))).max()), 1e-5)
                with self.assertRaises(grpc.RpcError) as e:
                    st.Sample(plugin_pb2.SampleRequest(artifact=art, seeds=[5], config_json=cj))
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNKNOWN)
                self.assertIn("sent no socket_dir", e.exception.details())
        finally:
            srv.stop(None).wait()


if __name__ == "__main__":
    unittest.main()
