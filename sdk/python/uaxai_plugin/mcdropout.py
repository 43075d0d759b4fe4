"""uaxai_plugin.mcdropout: MC dropout of a torch.nn.Module, one thinned
network a draw (imported on its own: it needs PyTorch). posterior.torch
(mc_dropout = true) and the model server's --mc-dropout-seeds (uaxai
explain and predict --mc-dropout S) make their draws with it:

    from uaxai_plugin import mcdropout, torchmodel as tm

    net = mcdropout.fixed(module, seed)             # a copy: one draw
    draw = tm.TorchDraw(net, in_channels, in_len)
    mcdropout.check(draw)                           # one network in every call

A draw samples these dropouts of the module, each with a mask that is a
fixed function of the draw's seed, the dropout's index among the sampled
dropouts (in named_modules order) and the shape of one input's
activation:

  * every torch.nn.Dropout module (of that exact type): its input times
    the mask, value by value;
  * the attention dropout of every torch.nn.MultiheadAttention with
    dropout > 0 (in a TransformerEncoderLayer or TransformerDecoderLayer
    its self_attn and multihead_attn): the attention weights (heads,
    target length, source length) of one input, after the softmax, times
    the mask, as F.multi_head_attention_forward applies F.dropout to them
    in training. The module computes its attention here (_FixedAttention:
    the same projections, masks, scaling, softmax and output projection),
    so that the mask is the draw's.

mask = (U >= p) / (1 - p), U uniform from a torch.Generator seeded with
the first 8 bytes (little-endian, the top bit cleared) of
SHA-256("<seed>:<index>:<shape>"), the shape's sizes joined by "x" (a
Linear's input of 64 features: "64"; two heads of 40 tokens: "2x40x40").
The mask covers one input, position by position, and is the same for
every input of a batch: a draw is one thinned network, a deterministic
function of its input whose batch items do not interact (as the model
service needs), and the same seed gives the same network in any process
and in every call.

One network in every call. PyTorch >= 1.12 gives an eval-mode
torch.nn.TransformerEncoderLayer (and the TransformerEncoder of such
layers) a fast path, torch._transformer_encoder_layer_fwd, that it takes
under torch.no_grad() (the service's Probs, Windows and Spans) and not
with gradients (InputGrad and Layer: input gradients, Grad-CAM); the
fast path runs no dropout module. So a draw's every
TransformerEncoderLayer keeps training = True (its train() and eval()
leave it so): the flag is the fast path's first condition, and the
layer's own forward reads it nowhere else (its submodules keep their own
flags: eval). check runs a draw's two paths on a probe input and refuses
a module whose probabilities differ between them (another module with a
fast path that skips its dropout, or a forward that draws its own random
numbers).

Not sampled: F.dropout in a module's own forward (off in eval mode;
refused by check if it is on, as a draw that changes between calls).
Refused, naming the layer: torch.nn.Dropout1d/2d/3d, AlphaDropout and
FeatureAlphaDropout modules; a subclass of MultiheadAttention with
dropout > 0 (its own forward would not apply the draw's mask); a
MultiheadAttention with dropout > 0 and bias_k/bias_v or add_zero_attn.
A module none of whose sampled dropouts has p > 0 is refused too: every
draw would be the same network.
"""

import hashlib
import math
import sys
import threading

try:
    import torch
    import torch.nn.functional as F
except ImportError as _e:
    raise ImportError("uaxai_plugin.mcdropout needs PyTorch, which the interpreter %s lacks (%s); on Debian: "
                      "apt-get install python3-torch, and run with /usr/bin/python3" % (sys.executable, _e)) from None

from .errors import Error

# PROBE_TOL is the most the probabilities of check's probe input may
# differ between a draw's no_grad and gradient passes: float32 rounding of
# one network's probabilities, far below any dropout mask's effect.
PROBE_TOL = 1e-5


def mask(p, seed, index, shape):
    """The mask of the module's doc: a float32 tensor of shape,
    (U >= p) / (1 - p) (all zeros for p = 1)."""
    key = "%d:%d:%s" % (seed, index, "x".join(str(n) for n in shape))
    s = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little") & ((1 << 63) - 1)
    u = torch.rand(tuple(shape), generator=torch.Generator().manual_seed(s))
    if p >= 1:
        return torch.zeros(tuple(shape))
    return (u >= p).float() / (1.0 - p)


class _Masks:
    """The masks of one sampled dropout, made once a shape."""

    def __init__(self, p, seed, index):
        self.p, self.seed, self.index = float(p), int(seed), int(index)
        self._masks = {}
        self._mu = threading.Lock()

    def get(self, shape, like):
        with self._mu:
            m = self._masks.get(shape)
            if m is None:
                m = mask(self.p, self.seed, self.index, shape)
                self._masks[shape] = m
        return m.to(like.device, like.dtype)


class FixedDropout(torch.nn.Module):
    """A torch.nn.Dropout of one draw: x times the draw's mask of one
    input's shape, x.shape[1:]."""

    def __init__(self, p, seed, index):
        super().__init__()
        self.p, self.seed, self.index = float(p), int(seed), int(index)
        self._fixed = _Masks(p, seed, index)

    def forward(self, x):
        return x * self._fixed.get(tuple(x.shape[1:]), x)

    def extra_repr(self):
        return "p=%g, seed=%d, index=%d" % (self.p, self.seed, self.index)


class _FixedAttention(torch.nn.MultiheadAttention):
    """A torch.nn.MultiheadAttention (its class swapped in place: the same
    parameters, names and attributes) whose attention dropout is the
    draw's mask on one input's (heads, target, source) weights. forward is
    F.multi_head_attention_forward's computation written out, with the
    mask where F.dropout would be; its attention weights (need_weights)
    are the masked ones, as torch's in training."""

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        batched = query.dim() == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        L, B, E = query.shape
        H = self.num_heads
        d = E // H
        if self._qkv_same_embed_dim:
            wq, wk, wv = self.in_proj_weight.chunk(3)
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        bq = bk = bv = None
        if self.in_proj_bias is not None:
            bq, bk, bv = self.in_proj_bias.chunk(3)
        q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)
        S = k.shape[0]
        if attn_mask is None and is_causal:
            attn_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).triu(1)
        # the additive mask (a bool mask is -inf where True), broadcast
        # over (B * H, L, S) as torch's: attn_mask (L, S) or (B * H, L, S),
        # key_padding_mask (B, S)
        bias = None
        if attn_mask is not None:
            if attn_mask.dim() == 2:
                attn_mask = attn_mask.unsqueeze(0)
            if tuple(attn_mask.shape) not in ((1, L, S), (B * H, L, S)):
                raise RuntimeError("attn_mask has shape %s; want (%d, %d) or (%d, %d, %d)"
                                   % (tuple(attn_mask.shape), L, S, B * H, L, S))
            bias = _additive(attn_mask, q.dtype)
        if key_padding_mask is not None:
            kpm = _additive(key_padding_mask.view(B, 1, 1, S).expand(-1, H, -1, -1).reshape(B * H, 1, S), q.dtype)
            bias = kpm if bias is None else bias + kpm
        q = q.contiguous().view(L, B * H, d).transpose(0, 1)
        k = k.contiguous().view(S, B * H, d).transpose(0, 1)
        v = v.contiguous().view(S, B * H, d).transpose(0, 1)
        qs = q / math.sqrt(d)
        if bias is not None:
            w = torch.baddbmm(bias, qs, k.transpose(-2, -1))
        else:
            w = torch.bmm(qs, k.transpose(-2, -1))
        w = torch.softmax(w, dim=-1)
        w = (w.view(B, H, L, S) * self._uaxai_masks.get((H, L, S), w)).view(B * H, L, S)
        out = torch.bmm(w, v).transpose(0, 1).contiguous().view(L * B, E)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias).view(L, B, E)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        w = w.view(B, H, L, S)
        if average_attn_weights:
            w = w.sum(dim=1) / H
        return out, (w if batched else w.squeeze(0))


def _additive(m, dtype):
    """A mask as the scores' summand: a bool (or uint8) mask is -inf where
    it is set and 0 elsewhere; a float mask is itself."""
    if m.dtype in (torch.bool, torch.uint8):
        return torch.zeros(m.shape, dtype=dtype, device=m.device).masked_fill(m.to(torch.bool), float("-inf"))
    return m.to(dtype)


_ALWAYS_TRAINING = {}


def _always_training(cls):
    """A subclass of cls (a TransformerEncoderLayer) whose train() and
    eval() leave its own training flag True, named as cls."""
    sub = _ALWAYS_TRAINING.get(cls)
    if sub is None:
        def train(self, mode=True):
            cls.train(self, mode)
            self.training = True  # the fast path's first condition (see the module's doc)
            return self

        sub = type(cls.__name__, (cls,), {"train": train, "__module__": cls.__module__,
                                          "__qualname__": cls.__qualname__, "_uaxai_always_training": True})
        _ALWAYS_TRAINING[cls] = sub
    return sub


def _refused():
    names = ("Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout")
    return tuple(getattr(torch.nn, n) for n in names if isinstance(getattr(torch.nn, n, None), type))


def fixed(module, seed, what='key "mc_dropout"'):
    """A copy of module, the draw of seed: its sampled dropouts (see the
    module's doc) apply masks fixed by seed, and its
    TransformerEncoderLayers take no fast path. An Error, its message
    starting with what (the setting that asked for MC dropout), for a
    module that has a dropout that cannot be sampled so, or none with
    p > 0."""
    import copy

    m = copy.deepcopy(module)
    refused = _refused()
    n, on = 0, 0
    for path, sub in list(m.named_modules()):
        name = path or "(the module itself)"
        if isinstance(sub, refused):
            raise Error("%s: layer %s is a %s; only torch.nn.Dropout layers and the attention dropout of "
                        "torch.nn.MultiheadAttention are sampled (accepted: torch.nn.Dropout)"
                        % (what, name, type(sub).__name__))
        if type(sub) is torch.nn.Dropout:
            fd = FixedDropout(sub.p, seed, n)
            if not path:
                m = fd
            else:
                parent_path, _, attr = path.rpartition(".")
                setattr(m.get_submodule(parent_path) if parent_path else m, attr, fd)
            n += 1
            on += sub.p > 0
        elif isinstance(sub, torch.nn.MultiheadAttention) and sub.dropout > 0:
            if type(sub) is not torch.nn.MultiheadAttention:
                raise Error("%s: layer %s is a %s, a subclass of torch.nn.MultiheadAttention with dropout %g: its own "
                            "forward would not apply a draw's fixed mask (accepted: torch.nn.MultiheadAttention "
                            "itself, or dropout = 0)" % (what, name, type(sub).__name__, sub.dropout))
            if sub.bias_k is not None or sub.add_zero_attn:
                raise Error("%s: layer %s is a torch.nn.MultiheadAttention with dropout %g and %s, whose attention "
                            "dropout is not sampled (accepted: a MultiheadAttention without add_bias_kv and "
                            "add_zero_attn, or dropout = 0)"
                            % (what, name, sub.dropout, "add_bias_kv" if sub.bias_k is not None else "add_zero_attn"))
            sub.__class__ = _FixedAttention
            sub._uaxai_masks = _Masks(sub.dropout, seed, n)
            n += 1
            on += 1
        if isinstance(sub, torch.nn.TransformerEncoderLayer) and not getattr(sub, "_uaxai_always_training", False):
            sub.__class__ = _always_training(type(sub))
            sub.training = True
    if n == 0:
        raise Error("%s: module %s has no torch.nn.Dropout layer and no torch.nn.MultiheadAttention with dropout > 0, "
                    "so every draw would be the same network (accepted: MC dropout of a module with dropout layers)"
                    % (what, type(m).__name__))
    if on == 0:
        raise Error("%s: every torch.nn.Dropout layer of module %s has p = 0, so every draw would be the same network "
                    "(accepted: MC dropout with a dropout probability above 0, e.g. through the module's arguments)"
                    % (what, type(m).__name__))
    return m


def check(draw, what='key "mc_dropout"'):
    """An Error, its message starting with what, unless draw (a
    torchmodel.TorchDraw over a module of fixed) gives the same
    probabilities, within PROBE_TOL, to a probe input (two inputs of
    standard normal values, generator seed 0) in the service's no_grad
    pass (Probs, Windows, Spans) and in its gradient pass (InputGrad,
    Layer): one network in every call."""
    import numpy as np

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, draw.input_len, generator=g).numpy().astype(np.float32)
    plain = draw.probs(x, 2)
    _, graded = draw.input_grad(x, np.zeros(2, np.int64), 2)
    diff = float(np.abs(plain - graded).max())
    if not diff <= PROBE_TOL:
        raise Error("%s: module %s computes another network under torch.no_grad() (probabilities, occlusion, LIME) "
                    "than with gradients (input gradients, Grad-CAM): the probabilities of a probe input differ by %.3g "
                    "(want at most %g): one of its layers takes a fast path that skips its dropout, or its forward "
                    "draws random numbers of its own (accepted: modules whose dropout is torch.nn.Dropout or "
                    "torch.nn.MultiheadAttention's, run in every forward pass)" % (what, draw.name, diff, PROBE_TOL))
