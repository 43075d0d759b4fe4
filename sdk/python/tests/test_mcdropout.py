"""uaxai_plugin.mcdropout, against PyTorch's own training-mode forward
passes: a draw of a module is that module in training mode with every
F.dropout call replaced by the documented mask (SHA-256 of
"<seed>:<index>:<shape>", a generator, U >= p over 1 - p, computed
here), the attention dropout of nn.MultiheadAttention included (torch's
F.multi_head_attention_forward applies F.dropout to the attention
weights; the mask of one input, heads x target x source, is tiled over
the batch). So the draw samples exactly the dropouts the module trained
with, in every form of attention (batch first or not, key and value
dimensions of their own, bool and float attention and key padding masks,
unbatched inputs, the returned weights). A TransformerEncoderLayer's
draw is the same network under torch.no_grad() as with gradients (its
fast path skips dropout), check refuses a module that is not, and the
dropouts that cannot be sampled are refused naming the layer.

Skipped unless this python3 imports torch."""

import hashlib
import os
import sys
import unittest
from unittest import mock

import require  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import numpy as np  # noqa: E402

try:
    import torch  # noqa: E402
    import torch.nn.functional as F  # noqa: E402
except ImportError as e:  # pragma: no cover
    require.missing("torch", e)
    torch = None

from uaxai_plugin import Error  # noqa: E402

if torch is not None:
    from uaxai_plugin import mcdropout  # noqa: E402
    from uaxai_plugin import torchmodel as tm  # noqa: E402


def documented_mask(p, seed, index, shape):
    """The mask of the module's doc, written out here."""
    key = "%d:%d:%s" % (seed, index, "x".join(str(n) for n in shape))
    k = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little") & ((1 << 63) - 1)
    return (torch.rand(shape, generator=torch.Generator().manual_seed(k)) >= p).float() / (1 - p)


def reference(module, seed, order, heads, *args, **kw):
    """module(*args, **kw) in training mode with its k-th F.dropout call
    (in call order) applying the documented mask of the dropout with
    index order[k]: torch's own forward pass, dropout by dropout. A call
    on attention weights ((B * heads, L, S)) gets the mask (heads, L, S)
    tiled over the batch, any other the mask of x.shape[1:]."""
    calls = []
    real = F.dropout

    def fake(x, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return real(x, p, training, inplace)
        idx = order[len(calls)]
        calls.append(idx)
        if idx in heads:
            h = heads[idx]
            shape = (h,) + tuple(x.shape[-2:])
            return (x.reshape(-1, *shape) * documented_mask(p, seed, idx, shape)).reshape(x.shape)
        return x * documented_mask(p, seed, idx, tuple(x.shape[1:]))

    module.train()
    with mock.patch.object(torch.nn.functional, "dropout", fake):
        out = module(*args, **kw)
    if len(calls) != len(order):
        raise AssertionError("the reference made %d dropout calls, want %d" % (len(calls), len(order)))
    return out


class Classifier(torch.nn.Module if torch is not None else object):
    """The issue's small Transformer: a Conv1d patch embedding, one
    TransformerEncoderLayer (batch first), the mean over tokens, a linear
    head; the softmax."""

    def __init__(self, cin=1, d=16, patch=16, classes=4, dropout=0.2, heads=2):
        super().__init__()
        self.embed = torch.nn.Conv1d(cin, d, patch, stride=patch)
        self.enc = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=32, dropout=dropout, batch_first=True)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, x):
        return torch.softmax(self.head(self.enc(self.embed(x).transpose(1, 2)).mean(dim=1)), dim=1)


# The TransformerEncoderLayer's dropouts in named_modules order: self_attn
# (0), dropout (1, the feed-forward's), dropout1 (2), dropout2 (3); in its
# forward pass they run self_attn, dropout1, dropout, dropout2.
ENCODER_ORDER = [0, 2, 1, 3]


@unittest.skipIf(torch is None, "uaxai_plugin.mcdropout needs PyTorch (Debian: python3-torch)")
class MCDropoutTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(1)
        self.x = torch.randn(5, 1, 64)

    def test_transformer_draw_is_torchs_training_pass_with_the_masks(self):
        net = Classifier()
        for seed in (3, 4):
            d = mcdropout.fixed(net, seed).eval()
            with torch.no_grad():
                plain = d(self.x)
            with torch.enable_grad():
                graded = d(self.x.clone().requires_grad_(True))
            want = reference(net, seed, ENCODER_ORDER, {0: 2}, self.x)
            self.assertLess(float((plain - want).abs().max()), 1e-6, "seed %d, no_grad" % seed)
            self.assertLess(float((graded - want).abs().max()), 1e-6, "seed %d, with gradients" % seed)
        # the attention dropout is sampled: without it (p = 0 in the
        # attention alone) the draw is another network
        other = Classifier()
        other.load_state_dict(net.state_dict())
        other.enc.self_attn.dropout = 0.0
        with torch.no_grad():
            a, b = mcdropout.fixed(net, 3).eval()(self.x), mcdropout.fixed(other, 3).eval()(self.x)
        self.assertGreater(float((a - b).abs().max()), 1e-4, "the attention dropout's mask changes nothing")

    def test_encoder_layer_keeps_off_its_fast_path(self):
        net = mcdropout.fixed(Classifier(), 5)
        net.eval()
        self.assertTrue(net.enc.training, "the draw's TransformerEncoderLayer left training mode")
        self.assertFalse(net.enc.linear1.training or net.enc.norm1.training or net.enc.self_attn.training)
        self.assertEqual(type(net.enc).__name__, "TransformerEncoderLayer")
        self.assertIsInstance(net.enc, torch.nn.TransformerEncoderLayer)
        # a stack of such layers: the same network with and without gradients
        stack = torch.nn.Sequential(torch.nn.Conv1d(1, 8, 8, stride=8), Transpose(),
                                    torch.nn.TransformerEncoder(
                                        torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3, batch_first=True), 2),
                                    Pool(), torch.nn.Linear(8, 3), torch.nn.Softmax(dim=1))
        d = tm.TorchDraw(mcdropout.fixed(stack, 9), 1, 64)
        mcdropout.check(d)
        x = self.x.view(5, 64).numpy()
        p = d.probs(x, 8)
        _, q = d.input_grad(x, np.zeros(5, np.int64), 8)
        np.testing.assert_allclose(p, q, atol=1e-6)

    def test_attention_forms(self):
        torch.manual_seed(2)
        L, S, B, E = 5, 7, 3, 8
        cases = [
            ("batch first", dict(batch_first=True), lambda: ((torch.randn(B, L, E),) * 3, {})),
            ("sequence first, cross attention", dict(), lambda: ((torch.randn(L, B, E), torch.randn(S, B, E),
                                                                 torch.randn(S, B, E)), {})),
            ("kdim and vdim", dict(kdim=6, vdim=5), lambda: ((torch.randn(L, B, E), torch.randn(S, B, 6),
                                                             torch.randn(S, B, 5)), {})),
            ("no bias, bool masks", dict(bias=False, batch_first=True),
             lambda: ((torch.randn(B, L, E), torch.randn(B, S, E), torch.randn(B, S, E)),
                      {"attn_mask": torch.eye(L, S, dtype=torch.bool), "key_padding_mask": torch.tensor(
                          [[False] * (S - 1) + [True], [False] * S, [True] + [False] * (S - 1)])})),
            ("float attention mask a head, bool key padding", dict(),
             lambda: ((torch.randn(L, B, E), torch.randn(S, B, E), torch.randn(S, B, E)),
                      {"attn_mask": torch.randn(B * 2, L, S), "key_padding_mask": torch.tensor(
                          [[False] * (S - 1) + [True], [False] * S, [True] + [False] * (S - 1)])})),
            ("float key padding", dict(), lambda: ((torch.randn(L, B, E), torch.randn(S, B, E), torch.randn(S, B, E)),
                                                  {"key_padding_mask": torch.randn(B, S)})),
            ("unbatched, per-head weights", dict(), lambda: ((torch.randn(L, E), torch.randn(S, E),
                                                             torch.randn(S, E)), {"average_attn_weights": False})),
        ]
        for what, kw, make in cases:
            with self.subTest(what):
                att = torch.nn.MultiheadAttention(E, 2, dropout=0.4, **kw)
                args, call = make()
                d = mcdropout.fixed(att, 21).eval()
                with torch.no_grad():
                    got, gw = d(*args, **call)
                    want, ww = reference(att, 21, [0], {0: 2}, *args, **call)
                self.assertLess(float((got - want).abs().max()), 1e-5)
                self.assertLess(float((gw - ww).abs().max()), 1e-6)
                out, none = d(*args, need_weights=False, **{k: v for k, v in call.items() if k != "average_attn_weights"})
                self.assertIsNone(none)
                self.assertLess(float((out - want).abs().max()), 1e-5)

    def test_dropout_index_counts_attention_and_modules(self):
        # a Dropout after an attention has index 1: the attention is 0
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.att = torch.nn.MultiheadAttention(4, 1, dropout=0.5, batch_first=True)
                self.drop = torch.nn.Dropout(0.25)

            def forward(self, x):
                return self.drop(self.att(x, x, x, need_weights=False)[0])

        net = Net()
        x = torch.randn(2, 3, 4)
        with torch.no_grad():
            got = mcdropout.fixed(net, 8).eval()(x)
            want = reference(net, 8, [0, 1], {0: 1}, x)
        self.assertLess(float((got - want).abs().max()), 1e-6)

    def test_refusals(self):
        class Sub(torch.nn.MultiheadAttention):
            pass

        class NoisyForward(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc, self.drop = torch.nn.Linear(64, 3), torch.nn.Dropout(0.5)

            def forward(self, x):  # its own random numbers in every call
                return torch.softmax(self.drop(self.fc(F.dropout(x.flatten(1), 0.5, training=True))), dim=1)

        class SkipsWithoutGrad(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc, self.drop = torch.nn.Linear(64, 3), torch.nn.Dropout(0.5)

            def forward(self, x):  # a fast path of its own that skips the dropout
                h = self.fc(x.flatten(1))
                return torch.softmax(self.drop(h) if torch.is_grad_enabled() else h, dim=1)

        for what, module, want in [
            ("subclass", torch.nn.Sequential(Sub(4, 1, dropout=0.1)), "layer 0 is a Sub, a subclass of torch.nn."
                                                                      "MultiheadAttention with dropout 0.1"),
            ("bias_kv", torch.nn.Sequential(torch.nn.MultiheadAttention(4, 1, dropout=0.1, add_bias_kv=True)),
             "layer 0 is a torch.nn.MultiheadAttention with dropout 0.1 and add_bias_kv"),
            ("zero_attn", torch.nn.Sequential(torch.nn.MultiheadAttention(4, 1, dropout=0.1, add_zero_attn=True)),
             "and add_zero_attn"),
            ("Dropout2d", torch.nn.Sequential(torch.nn.Dropout2d(0.1)), "layer 0 is a Dropout2d"),
            ("none", torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.MultiheadAttention(2, 1)),
             "has no torch.nn.Dropout layer and no torch.nn.MultiheadAttention with dropout > 0"),
            ("p = 0", torch.nn.Sequential(torch.nn.Dropout(0.0)), "has p = 0"),
        ]:
            with self.subTest(what):
                with self.assertRaisesRegex(Error, "^--mc-dropout: .*" + _re(want)):
                    mcdropout.fixed(module, 1, "--mc-dropout")
        for what, module in [("noisy", NoisyForward()), ("skips", SkipsWithoutGrad())]:
            with self.subTest(what):
                d = tm.TorchDraw(mcdropout.fixed(module, 1), 1, 64)
                with self.assertRaisesRegex(Error, 'key "mc_dropout": module %s computes another network under '
                                                   r'torch.no_grad\(\) .* differ by' % type(module).__name__):
                    mcdropout.check(d)


class Transpose(torch.nn.Module if torch is not None else object):
    def forward(self, x):
        return x.transpose(1, 2)


class Pool(torch.nn.Module if torch is not None else object):
    def forward(self, x):
        return x.mean(dim=1)


def _re(s):
    import re
    return re.escape(s)


if __name__ == "__main__":
    unittest.main()
