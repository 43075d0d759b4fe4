"""The architectures of the kit's tests as the host sends them with a
draw's parameters: testdata/archs.json, written from sdk/nn by the Go
test sdk/python/kit_test.go (TestArchsGolden; `go test ./sdk/python
-run TestArchsGolden -update` rewrites it), which holds each
architecture's JSON (nn.Arch) and the layers' output shapes of its Load
(Params.layers, wire.LoadParams). The kit has no shape rules, so a test
takes its networks' shapes from here, where Go computed them."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from uaxai_plugin import Model, wire  # noqa: E402
from uaxai_plugin._pb import plugin_pb2  # noqa: E402

with open(os.path.join(HERE, "testdata", "archs.json")) as f:
    GOLDEN = json.load(f)


def params(name, data=()):
    """The Params message (a LoadRequest's model) the host sends for the
    architecture called name with the flat parameters data."""
    g = GOLDEN[name]
    return plugin_pb2.Params(
        arch_json=json.dumps(g["arch"], separators=(",", ":")).encode(), data=wire.float32_bytes(data),
        layers=[plugin_pb2.LayerInfo(name=ly["name"], channels=ly["channels"], length=ly["length"])
                for ly in g["layers"]])


def arch(name):
    """The architecture called name as a params-mode Model holds it (the
    arch dict with the host's "shapes")."""
    return Model.from_wire(params(name)).arch
