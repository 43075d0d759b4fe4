"""The kit's server: model reading, batch checks and error mapping as the
Go side does them, the gRPC services over a real socket, and serve() as a
process (handshake line, stdout kept clean, clean exits)."""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
KIT = os.path.join(HERE, "..")
sys.path.insert(0, KIT)
sys.path.insert(0, HERE)

import grpc  # noqa: E402
from google.protobuf import empty_pb2  # noqa: E402
import numpy as np  # noqa: E402

import uaxai_plugin as kit  # noqa: E402
from uaxai_plugin import server, wire  # noqa: E402

import archs  # noqa: E402
from uaxai_plugin._pb import goplugin_pb2, goplugin_pb2_grpc, health_pb2, health_pb2_grpc  # noqa: E402
from uaxai_plugin._pb import plugin_pb2, plugin_pb2_grpc  # noqa: E402

# host/plugin's test network: 8 samples -> conv1 (2 channels, kernel 3)
# -> globalmaxpool -> flatten -> dense fc (3 classes); 2*1*3+2 + 3*2+3
# parameters. Its architecture and layer shapes as the host sends them
# (archs: testdata/archs.json, written by Go).
TINY = archs.arch("tiny")
TINY_SIZE = 2 * 1 * 3 + 2 + 3 * 2 + 3


def tiny_params():
    return archs.params("tiny", np.arange(TINY_SIZE) * 0.1)


class TestModel(unittest.TestCase):
    def test_tiny(self):
        m = kit.Model.from_wire(tiny_params())
        self.assertEqual((m.input_len, m.classes), (8, 3))
        # A valid convolution of kernel 3 leaves 8 - 3 + 1 = 6 samples.
        self.assertEqual(kit.shapes(m.arch), [(2, 6), (2, 1), (2, 1), (3, 1)])
        self.assertEqual(m.arch, TINY)
        np.testing.assert_array_equal(m.params, (np.arange(TINY_SIZE) * 0.1).astype(np.float32))
        self.assertFalse(m.params.flags.writeable)

    def test_paper_arch(self):
        # The paper's network with dropout (nn.PaperArchDropout), as the
        # paper gives its sizes: 640 -> conv 638 -> conv 636 -> maxpool
        # 634 -> bn -> conv 632 -> conv 630 -> global max -> bn -> dense 64
        # -> bn -> dense 16.
        m = kit.Model.from_wire(archs.params("paper-1dcnn-dropout"))
        s = kit.shapes(m.arch)
        self.assertEqual(len(s), len(m.arch["layers"]))  # a graph node a layer
        self.assertEqual([nd["name"] for nd in m.arch["graph"]["nodes"][:3]], ["conv1", "_1", "conv2"])
        self.assertEqual([t for _, t in s[:10:2]], [638, 636, 634, 632, 630])
        self.assertEqual(s[-1], (16, 1))
        self.assertEqual(m.classes, 16)

    def test_graph_arch(self):
        # A graph network (resnet1d of recipes/archs): a shape a node, the
        # last the logits; classes from it. A graph whose output node is
        # not its last node (res-output) has the shapes of the nodes up to
        # its output.
        m = kit.Model.from_wire(archs.params("resnet1d"))
        s = kit.shapes(m.arch)
        self.assertEqual(len(s), len(m.arch["graph"]["nodes"]))
        self.assertEqual((m.classes, m.input_len), (s[-1][0], 640))
        r = kit.Model.from_wire(archs.params("res-output"))
        nodes = [nd["name"] for nd in r.arch["graph"]["nodes"]]
        self.assertEqual(len(kit.shapes(r.arch)), nodes.index(r.arch["graph"]["output"]) + 1)
        self.assertLess(len(kit.shapes(r.arch)), len(nodes))
        self.assertEqual(r.classes, kit.shapes(r.arch)[-1][0])

    def test_bad_shapes(self):
        g = archs.arch("res-output")
        no_graph = {k: v for k, v in TINY.items() if k != "graph"}
        for arch, msg in [
            ([1, 2], r"arch is a list, want the architecture dict of a Model"),
            (dict(TINY, in_len=0), "in_len is 0, want an integer >= 1"),
            ({k: v for k, v in TINY.items() if k != "shapes"},
             r"arch 'tiny' has no \"shapes\": the host sends the layers' output shapes .*Params.layers"),
            (dict(TINY, shapes=[]), r"shapes is \[\], want a non-empty list of \[channels, length\] pairs"),
            (dict(TINY, shapes="2x6"), r"shapes is '2x6', want a non-empty list"),
            (dict(TINY, shapes=[[2, 6], [2], [2, 1], [3, 1]]),
             r"shapes\[1\] is \[2\], want \[channels, length\], two integers >= 1"),
            (dict(TINY, shapes=[[2, 6], [2, 0], [2, 1], [3, 1]]), r"shapes\[1\] is \[2, 0\]"),
            (dict(TINY, shapes=[[2, 6], [2, 1.0], [2, 1], [3, 1]]), r"shapes\[1\] is \[2, 1.0\]"),
            (dict(TINY, shapes=[[2, 6], [True, 1], [2, 1], [3, 1]]), r"shapes\[1\] is \[True, 1\]"),
            (dict(TINY, shapes=[[2, 6], [2, 1], [2, 1], [3, 2]]),
             r"the last shape \(the logits\) is 3 x 2, want classes x 1"),
            (dict(TINY, shapes=[[2, 1], [2, 1], [3, 1]]), r"arch 'tiny': 3 shapes, want 4, one a node up to the output node 'fc'$"),
            (dict(g, shapes=g["shapes"] + [[3, 1]]),
             r"arch 'res-output': 6 shapes, want 5, one a node up to the output node 'fc'"),
            (dict(g, graph=dict(g["graph"], output="nope")), r"the graph's output 'nope' is not one of its nodes"),
            (dict(g, graph={"nodes": []}), r"graph has no nodes"),
            (no_graph, r"has no graph: a model known by its shape only has no layer shapes"),
        ]:
            with self.assertRaisesRegex(kit.ArchError, msg):
                kit.shapes(arch)
        # A shape count that does not fit the layers fails the Load.
        p = archs.params("tiny")
        del p.layers[0]
        with self.assertRaisesRegex(kit.ArchError, r"3 shapes, want 4"):
            kit.Model.from_wire(p)

    def test_bad_wire(self):
        with self.assertRaisesRegex(wire.WireError, "^parameters: float32 array of 3 bytes"):
            p = archs.params("tiny")
            p.data = b"abc"
            kit.Model.from_wire(p)
        with self.assertRaisesRegex(wire.WireError, "^missing model parameters$"):
            kit.Model.from_wire(None)
        # Without the layers' shapes (a host that does not send them) the
        # kit cannot know them: it says so.
        p = archs.params("tiny")
        del p.layers[:]
        with self.assertRaisesRegex(wire.WireError, r"carry no layer shapes \(Params.layers\): the host computes"):
            kit.Model.from_wire(p)
        # The shapes must be the architecture's layers', named as they are.
        p = archs.params("tiny")
        p.layers[0].name = "conv2"
        with self.assertRaisesRegex(wire.WireError, r"Params.layers\[0\] is named 'conv2', the architecture's node 0 "
                                                    r"'conv1'"):
            kit.Model.from_wire(p)
        p = archs.params("resnet1d")
        p.layers[2].name = "x"
        with self.assertRaisesRegex(wire.WireError, r"Params.layers\[2\] is named 'x', the architecture's node 2"):
            kit.Model.from_wire(p)
        p = archs.params("tiny")
        p.arch_json = json.dumps(dict(json.loads(p.arch_json), shapes=[[3, 1]])).encode()
        with self.assertRaisesRegex(wire.WireError, r"has a key \"shapes\", which nn.Arch has not"):
            kit.Model.from_wire(p)


class TestChecks(unittest.TestCase):
    def test_batch_messages(self):
        # check.Batch's messages, case by case.
        ok = dict(input_len=4, classes=3, n_x=8, targets=[0, 2], seeds=[], stochastic=False)
        kit.check_batch(**ok)
        kit.check_batch(**dict(ok, seeds=[1, 2], stochastic=True))
        for change, msg in [
            (dict(input_len=0), "bad request: model input length 0"),
            (dict(targets=[], n_x=0), "bad request: empty batch (no targets)"),
            (dict(n_x=7), "bad request: x has 7 values, want 8 (2 targets x input length 4)"),
            (dict(targets=[0, 3]), "bad request: input 1: target class 3 out of range 0..2"),
            (dict(targets=[-1, 0]), "bad request: input 0: target class -1 out of range 0..2"),
            (dict(stochastic=True), "bad request: a stochastic explainer needs one seed per input: 0 seeds for 2 inputs"),
            (dict(seeds=[1]), "bad request: 1 seeds for 2 inputs (want one per input, or none)"),
        ]:
            with self.assertRaises(kit.Error) as cm:
                kit.check_batch(**dict(ok, **change))
            self.assertEqual(str(cm.exception), msg)

    def test_error_status(self):
        C = grpc.StatusCode
        self.assertEqual(kit.error_status(ValueError("too long"), C.UNKNOWN), (C.UNKNOWN, "too long"))
        self.assertEqual(kit.error_status(kit.Error("bad"), C.INVALID_ARGUMENT), (C.INVALID_ARGUMENT, "bad"))
        self.assertEqual(kit.error_status(KeyError("k"), C.UNKNOWN),
                         (C.INTERNAL, "KeyError: 'k' (traceback in the plugin's log)"))

    def test_info(self):
        kit.Info(id="explainer.a-b_1", version="1").validate()
        for info, msg in [
            (kit.Info(id="occlusion", version="1"), "not of the form kind.name"),
            (kit.Info(id="summary.x", version="1"), "serves explainers"),
            (kit.Info(id="explainer.Big", version="1"), "lower-case letters"),
            (kit.Info(id="explainer.-a", version="1"), "starting with a letter or digit"),
            (kit.Info(id="explainer.a", version=""), "version is empty"),
            (kit.Info(id="explainer.a", version="1", needs=8), "needs is 8"),
        ]:
            with self.assertRaisesRegex(ValueError, msg):
                info.validate()

    def test_handshake_line(self):
        # go-plugin's client splits the line at '|': core protocol 1, the
        # app protocol (sdk/internal/proto.Version), network, address, grpc.
        line = kit.handshake_line("unix", "/tmp/d/plugin123")
        self.assertEqual(line, "1|2|unix|/tmp/d/plugin123|grpc\n")
        with open(os.path.join(KIT, "..", "internal", "proto", "proto.go")) as f:
            proto_go = f.read()
        self.assertIn("Version          = %d" % kit.PROTOCOL_VERSION, proto_go)
        self.assertIn('MagicCookieValue = "%s"' % kit.MAGIC_COOKIE_VALUE, proto_go)


class Scale:
    """An explainer for the tests: map = k * x + target; raises on request."""

    def __init__(self, stochastic=False):
        self.stochastic = stochastic
        self.calls = 0

    def info(self):
        return kit.Info(id="explainer.scale", version="1.2.3", summary="k x", needs=kit.NEEDS_PROBS,
                        stochastic=self.stochastic)

    def check(self, config):
        if config and set(config) - {"k", "raise", "bug", "print"}:
            raise ValueError("unknown key")

    def explain(self, model, x, targets, seeds, config):
        self.calls += 1
        config = config or {}
        assert x.shape == (len(targets), model.input_len) and x.dtype == np.float32
        if config.get("print"):
            print("printed by explain")
            os.write(1, b"written to fd 1 by explain\n")
        if "raise" in config:
            raise ValueError(config["raise"])
        if config.get("bug"):
            return {}["missing"]
        k = config.get("k", 1)
        extra = seeds.astype(np.float64) if len(seeds) else np.zeros(len(targets))
        return np.array([k * x[b].astype(np.float64) + targets[b] + extra[b] for b in range(len(targets))])


class ServerCase(unittest.TestCase):
    """The kit's services on a real unix socket, called through the stubs."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.stop = threading.Event()
        self.impl = Scale()
        self.srv = server.build_server(self.impl, self.impl.info(), self.stop, workers=2)
        addr = "unix:" + os.path.join(self.dir.name, "s")
        self.assertNotEqual(self.srv.add_insecure_port(addr), 0)
        self.srv.start()
        self.ch = grpc.insecure_channel(addr)
        self.ex = plugin_pb2_grpc.ExplainerStub(self.ch)

    def tearDown(self):
        self.ch.close()
        self.srv.stop(0).wait()
        self.dir.cleanup()

    def explain(self, handle, x, targets, seeds=(), config=None):
        return self.ex.Explain(plugin_pb2.ExplainRequest(
            model=handle, x=wire.float32_bytes(x), targets=targets, seeds=seeds,
            config_json=wire.encode_config(config)), timeout=10)

    def code_msg(self, call):
        with self.assertRaises(grpc.RpcError) as cm:
            call()
        return cm.exception.code(), cm.exception.details()

    def test_info_health_check(self):
        info = self.ex.Info(plugin_pb2.InfoRequest(), timeout=10)
        self.assertEqual((info.info.id, info.info.version, info.info.summary, info.needs, info.stochastic),
                         ("explainer.scale", "1.2.3", "k x", 1, False))
        h = health_pb2_grpc.HealthStub(self.ch).Check(health_pb2.HealthCheckRequest(service="plugin"), timeout=10)
        self.assertEqual(h.status, health_pb2.HealthCheckResponse.SERVING)
        self.ex.Check(plugin_pb2.CheckRequest(config_json=b'{"k":2}'), timeout=10)
        self.assertEqual(self.code_msg(lambda: self.ex.Check(plugin_pb2.CheckRequest(config_json=b'{"q":2}'), timeout=10)),
                         (grpc.StatusCode.INVALID_ARGUMENT, "unknown key"))
        self.assertEqual(self.code_msg(lambda: self.ex.Check(plugin_pb2.CheckRequest(config_json=b'[2]'), timeout=10)),
                         (grpc.StatusCode.INVALID_ARGUMENT, "decoding config: a JSON list, want an object"))

    def test_load_explain_release(self):
        h1 = self.ex.Load(plugin_pb2.LoadRequest(model=tiny_params()), timeout=10).handle
        h2 = self.ex.Load(plugin_pb2.LoadRequest(model=tiny_params()), timeout=10).handle
        self.assertNotEqual(h1, h2)
        x = np.linspace(-1, 1, 16, dtype=np.float32)
        r = self.explain(h1, x, [0, 2], config={"k": 3})
        self.assertEqual(len(r.maps), 2)
        for b in range(2):
            want = 3 * x[b * 8:(b + 1) * 8].astype(np.float64) + [0, 2][b]
            np.testing.assert_array_equal(wire.float64s(r.maps[b]), want)
        self.ex.Release(plugin_pb2.ReleaseRequest(handle=h1), timeout=10)
        self.assertEqual(self.code_msg(lambda: self.ex.Release(plugin_pb2.ReleaseRequest(handle=h1), timeout=10)),
                         (grpc.StatusCode.NOT_FOUND, "no model with handle %d is loaded" % h1))
        self.assertEqual(self.code_msg(lambda: self.explain(h1, x, [0, 2])),
                         (grpc.StatusCode.NOT_FOUND, "no model with handle %d is loaded (Load it first)" % h1))
        self.explain(h2, x, [1, 1])  # the other draw is still loaded

    def test_bad_requests(self):
        C = grpc.StatusCode
        bad = tiny_params()
        bad.arch_json = json.dumps(dict(json.loads(bad.arch_json), in_len=0)).encode()
        code, msg = self.code_msg(lambda: self.ex.Load(plugin_pb2.LoadRequest(model=bad), timeout=10))
        self.assertEqual(code, C.INVALID_ARGUMENT)
        self.assertIn("building the model: arch 'tiny': in_len is 0", msg)
        self.assertEqual(self.code_msg(lambda: self.ex.Load(plugin_pb2.LoadRequest(), timeout=10)),
                         (C.INVALID_ARGUMENT, "building the model: missing model parameters"))
        h = self.ex.Load(plugin_pb2.LoadRequest(model=tiny_params()), timeout=10).handle
        x = np.zeros(16, dtype=np.float32)
        self.assertEqual(self.code_msg(lambda: self.explain(h, x, [0, 3])),
                         (C.INVALID_ARGUMENT, "bad request: input 1: target class 3 out of range 0..2"))
        self.assertEqual(self.code_msg(lambda: self.ex.Explain(plugin_pb2.ExplainRequest(model=h, x=b"12345", targets=[0]), timeout=10)),
                         (C.INVALID_ARGUMENT, "x: float32 array of 5 bytes is not a multiple of 4"))
        self.assertEqual(self.impl.calls, 0)

    def test_errors_keep_the_server(self):
        C = grpc.StatusCode
        h = self.ex.Load(plugin_pb2.LoadRequest(model=tiny_params()), timeout=10).handle
        x = np.ones(8, dtype=np.float32)
        self.assertEqual(self.code_msg(lambda: self.explain(h, x, [0], config={"raise": "too long"})),
                         (C.UNKNOWN, "too long"))
        self.assertEqual(self.code_msg(lambda: self.explain(h, x, [0], config={"bug": True})),
                         (C.INTERNAL, "KeyError: 'missing' (traceback in the plugin's log)"))
        r = self.explain(h, x, [1], seeds=[5])
        np.testing.assert_array_equal(wire.float64s(r.maps[0]), np.full(8, 1 + 1 + 5.0))

    def test_shutdown(self):
        self.assertFalse(self.stop.is_set())
        goplugin_pb2_grpc.GRPCControllerStub(self.ch).Shutdown(goplugin_pb2.Empty(), timeout=10)
        self.assertTrue(self.stop.is_set())
        # The stdio stream ends once the server is stopping, with no data.
        stream = goplugin_pb2_grpc.GRPCStdioStub(self.ch).StreamStdio(empty_pb2.Empty(), timeout=10)
        self.assertEqual(list(stream), [])


PLUGIN = textwrap.dedent("""\
    import sys
    sys.path.insert(0, %r)
    sys.path.insert(0, %r)
    from test_server import Scale
    from uaxai_plugin import serve
    serve(Scale())
    """) % (KIT, HERE)


class TestServeProcess(unittest.TestCase):
    """serve() as the host starts it: a process with the magic cookie."""

    def start(self, env_extra):
        env = dict(os.environ, **env_extra)
        return subprocess.Popen([sys.executable, "-c", PLUGIN], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def test_without_cookie(self):
        p = self.start({kit.MAGIC_COOKIE_KEY: ""})
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(out, b"")
        self.assertIn(b"is a uaxai plugin", err)

    def handshake(self, p):
        line = p.stdout.readline().decode()
        m = re.fullmatch(r"1\|2\|unix\|(.+)\|grpc\n", line)
        self.assertIsNotNone(m, "handshake line %r" % line)
        return m.group(1)

    def test_shutdown_and_clean_stdout(self):
        with tempfile.TemporaryDirectory() as d:
            p = self.start({kit.MAGIC_COOKIE_KEY: kit.MAGIC_COOKIE_VALUE, "PLUGIN_UNIX_SOCKET_DIR": d})
            try:
                path = self.handshake(p)
                self.assertEqual(os.path.dirname(path), d)
                with grpc.insecure_channel("unix:" + path) as ch:
                    ex = plugin_pb2_grpc.ExplainerStub(ch)
                    h = ex.Load(plugin_pb2.LoadRequest(model=tiny_params()), timeout=10).handle
                    ex.Explain(plugin_pb2.ExplainRequest(model=h, x=wire.float32_bytes(np.ones(8)), targets=[0],
                                                         config_json=b'{"print":true}'), timeout=10)
                    goplugin_pb2_grpc.GRPCControllerStub(ch).Shutdown(goplugin_pb2.Empty(), timeout=10)
                out, err = p.communicate(timeout=30)
            finally:
                p.kill()
            self.assertEqual(p.returncode, 0, err)
            self.assertEqual(out, b"", "stdout after the handshake")
            self.assertIn(b"printed by explain", err)
            self.assertIn(b"written to fd 1 by explain", err)
            self.assertFalse(os.path.exists(path), "the socket is removed")

    def test_sigterm(self):
        with tempfile.TemporaryDirectory() as d:
            p = self.start({kit.MAGIC_COOKIE_KEY: kit.MAGIC_COOKIE_VALUE, "PLUGIN_UNIX_SOCKET_DIR": d})
            try:
                self.handshake(p)
                p.send_signal(signal.SIGTERM)
                p.communicate(timeout=30)
            finally:
                p.kill()
            self.assertEqual(p.returncode, 0)


if __name__ == "__main__":
    unittest.main()
