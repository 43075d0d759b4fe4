"""uaxai_plugin: write a uaxai explainer plugin in Python.

A plugin is an executable named uaxai-explainer-NAME in a plugin
directory, whose main calls serve with an explainer:

    from uaxai_plugin import Info, serve

    class Abs:
        def info(self):
            return Info(id="explainer.abs", version="1.0.0", summary="|x|")
        def check(self, config):
            if config:
                raise ValueError("unknown keys %s" % sorted(config))
        def explain(self, model, x, targets, seeds, config):
            return [abs(row) for row in x]

    serve(Abs())

explain gets the loaded draw (a Model: arch, params, input_len,
classes, and shapes(model.arch), each layer's output shape as the host
computed it; with Info(wants_model=True) a client of the host's model
service instead, whose probs, input_grad, layer, layer_shape and windows
compute with the host's network, see model.py), x as a float32 array of
shape (B, model.input_len), targets (int64) and seeds (uint64, empty or
one per input) as numpy arrays and the recipe's table (a dict, or None);
it returns one map of input_len values per input. Raise ValueError or uaxai_plugin.Error to reject a request:
the host reports "<plugin ID>: <Method>: <message>". A failed call of
the model service raises ServiceError (an Error), "model service:
<Method>: <details>"; uaxai_plugin.config reads a recipe table with the
Go side's sdk.Config checks and messages. plugins/explainer/python-*
hold complete examples (python-occlusion, python-kernelshap: model
service; python-echo: no model).

uaxai_plugin.torchmodel (imported on its own: it needs PyTorch) is the
other side of that service for PyTorch modules: a posterior plugin that
holds torch draws serves them with its ModelServer, so that every
explainer computes with them (see its docstring); uaxai_plugin.mcdropout
(torch too) makes MC-dropout draws of a module, one thinned network a
seed, the same in every call.

The kit needs only Debian's python3-grpcio, python3-protobuf and
python3-numpy (and python3-torch for torchmodel); the protocol stubs are
generated (generate.sh) and committed.
"""

import sys as _sys

try:
    import google.protobuf  # noqa: F401
    import grpc  # noqa: F401
    import numpy  # noqa: F401
except ImportError as _e:
    raise ImportError(
        "uaxai_plugin needs numpy, grpcio and protobuf, and the interpreter %s lacks %s (%s). On Debian: "
        "apt-get install python3-numpy python3-grpcio python3-protobuf, and run the plugin with /usr/bin/python3 "
        "(run by hand, a plugin's '#!/usr/bin/env python3' line takes the first python3 on PATH; uaxai itself "
        "takes the first of plugin.toml's python, $UAXAI_PYTHON, python3 on PATH and /usr/bin/python3 that has them)"
        % (_sys.executable, _e.name or "a module", _e)) from None

from .errors import CallTimeoutError, Error, ServiceError
from .model import ArchError, Model, service_channel, shapes
from .server import (
    MAGIC_COOKIE_KEY,
    MAGIC_COOKIE_VALUE,
    NEEDS_INPUT_GRAD,
    NEEDS_LAYER,
    NEEDS_PROBS,
    PROTOCOL_VERSION,
    Info,
    check_batch,
    error_status,
    handshake_line,
    serve,
)
from .wire import WireError

__all__ = [
    "ArchError", "CallTimeoutError", "Model", "ServiceError", "service_channel", "shapes", "MAGIC_COOKIE_KEY", "MAGIC_COOKIE_VALUE", "NEEDS_INPUT_GRAD",
    "NEEDS_LAYER", "NEEDS_PROBS", "PROTOCOL_VERSION", "Error", "Info", "check_batch", "error_status",
    "handshake_line", "serve", "WireError",
]
