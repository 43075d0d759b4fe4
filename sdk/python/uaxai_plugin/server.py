"""The plugin side of the uaxai protocol for explainers written in Python:
the go-plugin handshake, the Explainer gRPC service, gRPC health and
go-plugin's controller, as sdk.Serve does them for a Go plugin.
"""

import datetime
import json
import os
import signal
import sys
import tempfile
import threading
import traceback
from concurrent import futures
from dataclasses import dataclass

import grpc
import numpy as np

from . import wire
from .errors import CallTimeoutError, Error
from .model import Model
from ._pb import goplugin_pb2, goplugin_pb2_grpc, health_pb2, health_pb2_grpc, plugin_pb2, plugin_pb2_grpc

# The go-plugin handshake (sdk/internal/proto): the host sets the magic
# cookie in the plugin's environment; the core protocol is go-plugin's,
# the app protocol uaxai's.
MAGIC_COOKIE_KEY = "UAXAI_PLUGIN"
MAGIC_COOKIE_VALUE = "uaxai-plugin-7f3c9a51e2d84b06"
CORE_PROTOCOL_VERSION = 1
PROTOCOL_VERSION = 2

MAX_MESSAGE_SIZE = wire.MAX_MESSAGE_SIZE

# sdk.Needs: what an explainer asks of the model (a bit set).
NEEDS_PROBS = 1
NEEDS_INPUT_GRAD = 2
NEEDS_LAYER = 4


@dataclass(frozen=True)
class Info:
    """sdk.Info of an explainer. id is "explainer.NAME" (NAME of lower-case
    letters, digits, '-' and '_'), version is not empty. wants_model asks
    the host for the model service (sdk.Info.WantsModel): Load then builds
    a Model that calls the host's network (probs, input_grad, layer,
    windows) and carries no parameters; without it (the default) the Model
    holds the draw's architecture and parameters."""

    id: str
    version: str
    summary: str = ""
    needs: int = 0
    stochastic: bool = False
    wants_model: bool = False

    def validate(self):
        """Raises ValueError for an Info the host would refuse
        (sdk.Info.Validate and sdk.ParseID)."""
        kind, dot, _ = self.id.partition(".")
        if not dot:
            raise ValueError("plugin ID %r is not of the form kind.name (e.g. explainer.occlusion)" % self.id)
        if kind != "explainer":
            raise ValueError("plugin ID %r: the Python kit serves explainers; use explainer.<name>" % self.id)
        check_id_name(self.id)
        if not self.version:
            raise ValueError("%s: Info.version is empty (want the plugin's version, e.g. \"1.0.0\")" % self.id)
        if not isinstance(self.needs, int) or not 0 <= self.needs < 8:
            raise ValueError("%s: Info.needs is %r (want a bit set of NEEDS_PROBS, NEEDS_INPUT_GRAD, NEEDS_LAYER)"
                             % (self.id, self.needs))
        if not isinstance(self.wants_model, bool):
            raise ValueError("%s: Info.wants_model is %r (want True or False)" % (self.id, self.wants_model))


def check_id_name(plugin_id):
    """Raises ValueError unless the name after the kind in plugin_id is
    one the host accepts (sdk.ParseID): lower-case letters, digits, '-'
    and '_', starting with a letter or digit."""
    name = plugin_id.partition(".")[2]
    ok = name != "" and all(
        "a" <= r <= "z" or "0" <= r <= "9" or (i > 0 and r in "-_") for i, r in enumerate(name))
    if not ok:
        raise ValueError("plugin ID %r: name %r may only hold lower-case letters, digits, '-' and '_', "
                         "starting with a letter or digit" % (plugin_id, name))


def _log(module, level, msg, **fields):
    """Writes one hclog JSON line to stderr, which the host's go-plugin
    client re-levels into its own log."""
    entry = {"@level": level, "@message": msg, "@module": module,
             "@timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    entry.update(fields)
    try:
        sys.stderr.write(json.dumps(entry, default=str) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def error_status(e, code):
    """The gRPC code and message for exception e raised by the plugin in a
    call whose error code is code (the Go side's toStatus and guard): the
    message of an Error or ValueError under code; for any other exception
    its type and message under INTERNAL, like a Go plugin's panic."""
    if isinstance(e, (Error, ValueError)):
        return code, str(e)
    return grpc.StatusCode.INTERNAL, "%s: %s (traceback in the plugin's log)" % (type(e).__name__, e)


def check_batch(input_len, classes, n_x, targets, seeds, stochastic):
    """Raises Error for a batch the Go side's check.Batch rejects, with its
    messages: n_x values for len(targets) inputs of input_len values,
    targets in [0, classes), one seed per input (or none, for a
    deterministic explainer)."""
    if input_len <= 0:
        raise Error("bad request: model input length %d" % input_len)
    b = len(targets)
    if b == 0:
        raise Error("bad request: empty batch (no targets)")
    if n_x != b * input_len:
        raise Error("bad request: x has %d values, want %d (%d targets x input length %d)"
                    % (n_x, b * input_len, b, input_len))
    for i, t in enumerate(targets):
        if t < 0 or t >= classes:
            raise Error("bad request: input %d: target class %d out of range 0..%d" % (i, t, classes - 1))
    if len(seeds) == b or (len(seeds) == 0 and not stochastic):
        return
    if stochastic:
        raise Error("bad request: a stochastic explainer needs one seed per input: %d seeds for %d inputs"
                    % (len(seeds), b))
    raise Error("bad request: %d seeds for %d inputs (want one per input, or none)" % (len(seeds), b))


def abort_call(context, plugin_id, method, e, code):
    """Ends a call that raised e with the status error_status gives (code
    for a plugin's own error), logging it: an Internal error with its
    traceback at error level, the others at debug."""
    code, msg = error_status(e, code)
    fields = {"method": method, "error": msg}
    if code == grpc.StatusCode.INTERNAL:
        fields["traceback"] = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    _log(plugin_id, "error" if code == grpc.StatusCode.INTERNAL else "debug", "call failed", **fields)
    context.abort(code, msg)


class ExplainerServicer(plugin_pb2_grpc.ExplainerServicer):
    """The Explainer service around a Python explainer (sdk.explainerServer).

    The explainer's methods may be called from several threads at once
    (the host runs batches of several draws concurrently)."""

    def __init__(self, impl, info):
        self.impl = impl
        self.info = info
        self._mu = threading.Lock()
        self._next = 0
        self._models = {}

    def _fail(self, context, method, e, code):
        abort_call(context, self.info.id, method, e, code)

    def Info(self, request, context):
        i = self.info
        return plugin_pb2.ExplainerInfo(
            info=plugin_pb2.Info(id=i.id, version=i.version, summary=i.summary),
            needs=i.needs, stochastic=i.stochastic, wants_model=i.wants_model)

    def Check(self, request, context):
        try:
            cfg = wire.decode_config(request.config_json)
        except wire.WireError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        try:
            self.impl.check(cfg)
        except Exception as e:  # noqa: BLE001 - every error of the plugin goes to the host
            self._fail(context, "Check", e, grpc.StatusCode.INVALID_ARGUMENT)
        return plugin_pb2.CheckResponse()

    def Load(self, request, context):
        # An explainer that wants the model service gets a ModelService
        # and no parameters; the others get parameters only. A Load
        # without what the explainer asked for is the host's mistake (or a
        # host that predates the model service): say which.
        has_model, has_service = request.HasField("model"), request.HasField("service")
        if self.info.wants_model and not has_service:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "building the model: %s wants the model service (Info.wants_model), but the Load carries %s"
                          % (self.info.id, "parameters and no model service" if has_model
                             else "neither a model service nor parameters"))
        if not self.info.wants_model and has_service and not has_model:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "building the model: the Load carries a model service and no parameters, but %s did not "
                          "ask for the service (Info.wants_model is False), so it computes with the parameters"
                          % self.info.id)
        try:
            if self.info.wants_model:
                m = Model.from_service(request.service, context)
            else:
                m = Model.from_wire(request.model if has_model else None)
        except CallTimeoutError as e:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, str(e))
        except (Error, ValueError, KeyError, TypeError, AttributeError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "building the model: %s" % e)
        # A host that gave up waiting never learns the handle: keep nothing.
        if not context.is_active():
            context.abort(grpc.StatusCode.CANCELLED, "the host cancelled the Load")
        with self._mu:
            self._next += 1
            self._models[self._next] = m
            return plugin_pb2.LoadResponse(handle=self._next)

    def Release(self, request, context):
        with self._mu:
            if self._models.pop(request.handle, None) is None:
                context.abort(grpc.StatusCode.NOT_FOUND, "no model with handle %d is loaded" % request.handle)
        return plugin_pb2.ReleaseResponse()

    def Explain(self, request, context):
        with self._mu:
            m = self._models.get(request.model)
        if m is None:
            context.abort(grpc.StatusCode.NOT_FOUND,
                          "no model with handle %d is loaded (Load it first)" % request.model)
        if m.service is not None and request.HasField("service"):
            s = (request.service.address, request.service.handle)
            if s != m.service:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              "the Explain names model service %r handle %d, but model %d was loaded from %r handle %d"
                              % (s[0], s[1], request.model, m.service[0], m.service[1]))
        try:
            x = wire.float32s(request.x)
        except wire.WireError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "x: %s" % e)
        try:
            cfg = wire.decode_config(request.config_json)
        except wire.WireError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        targets = np.array(request.targets, dtype=np.int64)
        seeds = np.array(request.seeds, dtype=np.uint64)
        try:
            check_batch(m.input_len, m.classes, len(x), targets, seeds, self.info.stochastic)
        except Error as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        b = len(targets)
        try:
            # The model bound to this call: its service calls end with it.
            maps = self.impl.explain(m.bound(context), x.reshape(b, m.input_len), targets, seeds, cfg)
            out = [wire.float64_bytes(np.ravel(mp)) for mp in maps]
        except CallTimeoutError as e:  # a request past the host's limit: the host stops the draw's server
            self._fail(context, "Explain", e, grpc.StatusCode.DEADLINE_EXCEEDED)
        except Exception as e:  # noqa: BLE001 - a plugin's error must not kill the server
            self._fail(context, "Explain", e, grpc.StatusCode.UNKNOWN)
        return plugin_pb2.ExplainResponse(maps=out)


class HealthServicer(health_pb2_grpc.HealthServicer):
    """grpc.health.v1: "plugin" (go-plugin's service name) and "" are
    SERVING; Watch is not offered (go-plugin's client does not call it)."""

    def Check(self, request, context):
        if request.service in ("", "plugin"):
            return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)
        context.abort(grpc.StatusCode.NOT_FOUND, "unknown service %r" % request.service)


class ControllerServicer(goplugin_pb2_grpc.GRPCControllerServicer):
    """go-plugin's controller: Shutdown asks the plugin to exit cleanly."""

    def __init__(self, stop):
        self.stop = stop

    def Shutdown(self, request, context):
        self.stop.set()
        return goplugin_pb2.Empty()


class StdioServicer(goplugin_pb2_grpc.GRPCStdioServicer):
    """go-plugin's stdio stream: the client opens it as it connects. The
    kit sends nothing on it (after the handshake the plugin's stdout is
    its stderr, which the host reads directly); the stream ends when the
    server stops."""

    def __init__(self, stop):
        self.stop = stop

    def StreamStdio(self, request, context):
        while not self.stop.is_set() and context.is_active():
            self.stop.wait(0.5)
        return
        yield  # a generator: a server stream with no messages


def handshake_line(network, address):
    """go-plugin's handshake line: CORE-PROTOCOL-VERSION|APP-PROTOCOL-
    VERSION|NETWORK-TYPE|NETWORK-ADDR|PROTOCOL."""
    return "%d|%d|%s|%s|grpc\n" % (CORE_PROTOCOL_VERSION, PROTOCOL_VERSION, network, address)


def socket_path(env):
    """A fresh path for the plugin's unix socket in go-plugin's socket
    directory (PLUGIN_UNIX_SOCKET_DIR, else the temporary directory), as
    go-plugin's Go server makes it."""
    d = env.get("PLUGIN_UNIX_SOCKET_DIR") or tempfile.gettempdir()
    fd, path = tempfile.mkstemp(prefix="plugin", dir=d)
    os.close(fd)
    os.remove(path)
    return path


def new_grpc_server(stop, workers):
    """A gRPC server (not started) with the message limits of the
    protocol and the kit's common services (health, go-plugin's
    controller and stdio); the caller adds its plugin's service."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers + 2),
        options=[("grpc.max_receive_message_length", MAX_MESSAGE_SIZE),
                 ("grpc.max_send_message_length", MAX_MESSAGE_SIZE)])
    add_common_services(server, stop)
    return server


def build_server(explainer, info, stop, workers=8):
    """The gRPC server with the kit's services (not started)."""
    server = new_grpc_server(stop, workers)
    plugin_pb2_grpc.add_ExplainerServicer_to_server(ExplainerServicer(explainer, info), server)
    return server


def read_info(explainer):
    """The explainer's Info, checked."""
    info = explainer.info()
    if not isinstance(info, Info):
        raise ValueError("info() returned %s, want a uaxai_plugin.Info" % type(info).__name__)
    info.validate()
    return info


def serve(explainer, workers=8):
    """Serves explainer as a uaxai plugin process and returns only by
    exiting the process: 0 after the host's Shutdown (go-plugin's
    Client.Kill), SIGTERM or SIGINT, or when the host process is gone; 1
    when run by hand (without the host's magic cookie) or for a bad Info.

    explainer has info() -> Info, check(config) and
    explain(model, x, targets, seeds, config) -> one map per input.

    serve owns stdout: the handshake line is the first thing on it, and
    then the process's stdout (file descriptor 1) is pointed at stderr, so
    that a print in the explainer goes to the host's log rather than
    corrupting the protocol. Nothing may be printed before serve.
    """
    refuse_by_hand()
    try:
        info = read_info(explainer)
    except Exception as e:  # noqa: BLE001
        sys.stderr.write("uaxai plugin: %s\n" % e)
        sys.exit(1)
    run_server(info.id, lambda stop: build_server(explainer, info, stop, workers))


def refuse_by_hand():
    """Exits with 1 and a sentence saying so unless the host started this
    process (its magic cookie is in the environment)."""
    if os.environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        sys.stderr.write("This program is a uaxai plugin: the uaxai host starts it (put it in a plugin "
                         "directory, e.g. --plugins DIR or $UAXAI_PLUGIN_PATH). It is not meant to be run by hand.\n")
        sys.exit(1)


def add_common_services(server, stop):
    """Adds grpc.health and go-plugin's controller and stdio to server."""
    health_pb2_grpc.add_HealthServicer_to_server(HealthServicer(), server)
    goplugin_pb2_grpc.add_GRPCControllerServicer_to_server(ControllerServicer(stop), server)
    goplugin_pb2_grpc.add_GRPCStdioServicer_to_server(StdioServicer(stop), server)


def run_server(plugin_id, build):
    """Runs a plugin process's gRPC server, build(stop) (not started), on
    a unix socket in go-plugin's socket directory: prints the handshake
    line, points stdout at stderr, and exits the process with 0 when stop
    is set (the host's Shutdown, SIGTERM, SIGINT) or the host is gone."""
    env = os.environ
    stop = threading.Event()
    parent = os.getppid()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    path = socket_path(env)
    server = build(stop)
    if server.add_insecure_port("unix:" + path) == 0:
        sys.stderr.write("uaxai plugin %s: cannot listen on unix socket %s\n" % (plugin_id, path))
        sys.exit(1)
    server.start()
    # The handshake goes to the real stdout, which is then kept open (the
    # host reads it to the end) but no longer written to.
    out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    os.write(out, handshake_line("unix", path).encode())
    _log(plugin_id, "debug", "plugin serving", socket=path, pid=os.getpid())
    while not stop.wait(0.5):
        if os.getppid() != parent:
            _log(plugin_id, "info", "the host process is gone; exiting")
            break
    server.stop(grace=1).wait()
    try:
        os.remove(path)
    except OSError:
        pass
    sys.exit(0)
