"""The model an explainer is handed: one posterior draw, as the host's Load
call sent it (its architecture and flat float32 parameters).

The seam for the model service: the protocol does not yet offer one (the
host computing probabilities, input gradients and a layer's activations
with sdk/nn, issue 12's item 1). Model carries what Load carries today.
When the service exists, the server will give each Model a client for it
(built in Model.from_wire from what Load then carries), and Model gains
the methods probs(x), input_grad(x, targets) and layer(name, x, targets),
on numpy arrays; explainers keep their signature.
"""

import numpy as np

from . import wire


class ArchError(ValueError):
    """An architecture the kit cannot read."""


def shapes(arch):
    """The (channels, length) shape after each layer of an architecture
    dict (nn.Arch), as nn.Arch.Shapes computes it: conv1d (valid, stride
    1) gives (out, T - kernel + 1), maxpool1d (stride 1) (C, T - kernel +
    1), globalmaxpool (C, 1), flatten (C*T, 1), dense (out, 1); relu,
    batchnorm1d and dropout keep the shape. The last shape must be flat."""
    name = arch.get("name", "")
    cur = (_pos_int(arch, "in_channels", name), _pos_int(arch, "in_len", name))
    out = []
    for i, ly in enumerate(arch.get("layers") or []):
        kind = ly.get("kind")
        where = "arch %r layer %d (%s)" % (name, i, kind)
        k = ly.get("kernel", 0)
        if kind == "conv1d":
            if ly.get("out", 0) < 1 or k < 1 or cur[1] < k:
                raise ArchError("%s: needs out >= 1 and kernel in [1, %d], got out %r kernel %r" % (where, cur[1], ly.get("out"), k))
            cur = (ly["out"], cur[1] - k + 1)
        elif kind == "maxpool1d":
            if k < 1 or cur[1] < k:
                raise ArchError("%s: kernel must be in [1, %d], got %r" % (where, cur[1], k))
            cur = (cur[0], cur[1] - k + 1)
        elif kind == "globalmaxpool":
            cur = (cur[0], 1)
        elif kind in ("relu", "batchnorm1d", "dropout"):
            pass
        elif kind == "flatten":
            cur = (cur[0] * cur[1], 1)
        elif kind == "dense":
            if cur[1] != 1 or ly.get("out", 0) < 1:
                raise ArchError("%s: needs a flat input and out >= 1, got input %d x %d and out %r" % (where, cur[0], cur[1], ly.get("out")))
            cur = (ly["out"], 1)
        else:
            raise ArchError("%s: unknown kind (accepted: conv1d, relu, maxpool1d, globalmaxpool, batchnorm1d, flatten, dense, dropout)" % where)
        out.append(cur)
    if cur[1] != 1:
        raise ArchError("arch %r: the last layer must give a flat logit vector, got %d x %d" % (name, cur[0], cur[1]))
    return out


def _pos_int(arch, key, name):
    v = arch.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ArchError("arch %r: %s is %r, want an integer >= 1" % (name, key, v))
    return v


class Model:
    """One loaded model draw.

    Attributes:
      arch: the architecture (nn.Arch as a dict: name, in_channels,
        in_len, layers).
      params: the flat parameter vector (float32, read-only), in PyTorch
        state_dict order, as sdk/nn lays it out.
      input_len: values per input (in_channels * in_len).
      classes: the number of logits (the last layer's width).
    """

    def __init__(self, arch, params):
        self.arch = arch
        s = shapes(arch)
        self.input_len = arch["in_channels"] * arch["in_len"]
        self.classes = s[-1][0] if s else arch["in_channels"]
        p = np.asarray(params, dtype=np.float32)
        p.flags.writeable = False
        self.params = p

    @classmethod
    def from_wire(cls, m):
        """Builds a Model from a protocol Params message (a LoadRequest's
        model)."""
        if m is None or not m.arch_json:
            raise wire.WireError("missing model parameters")
        arch = wire.decode_arch(m.arch_json)
        try:
            params = wire.float32s(m.data)
        except wire.WireError as e:
            raise wire.WireError("parameters: %s" % e) from None
        return cls(arch, params)
