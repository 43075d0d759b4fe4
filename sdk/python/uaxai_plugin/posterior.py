"""uaxai_plugin.posterior: write a uaxai posterior plugin in Python.

A posterior plugin is an executable named uaxai-posterior-NAME in a
plugin directory whose main calls serve_posterior:

    from uaxai_plugin.posterior import PosteriorInfo, Artifact, Served, serve_posterior

    class Mine:
        def info(self):
            return PosteriorInfo(id="posterior.mine", version="1.0.0", serves_models=True)
        def check(self, config, draws):          # the recipe table (a dict or None), S
            ...                                  # raise ValueError to refuse it
        def fit(self, req):                      # a FitRequest
            return Artifact(req.arch_json, meta={"k": "v"})
        def sample(self, artifact, req):         # an Artifact, a SampleRequest
            return [Served(address, handle) for s in req.seeds]

    serve_posterior(Mine())

The methods are sdk.Posterior's (Check, Fit, Sample) and, optionally,
parts(config) -> K (sdk.Parted; without it the plugin answers 0, not
parted, and refuses a FitRequest that asks for a part). sample returns
one draw a seed, in the seeds' order: all Served (a reference to a model
service the plugin's own process serves, see uaxai_plugin.torchmodel;
needs PosteriorInfo.serves_models, and the socket must lie directly
inside req.socket_dir) or all Params (an architecture and its flat
float32 parameters in state_dict order, as every posterior may answer).

Errors follow the Go side's conventions (sdk.Serve): a ValueError or
uaxai_plugin.Error raised by check or parts is InvalidArgument, by fit
or sample Unknown, and its message goes to the host as is (the host
prefixes the plugin ID and the call); any other exception is Internal,
its type and message to the host and its traceback to the plugin's log
(stderr, which the host re-levels into its own). Nothing may be written
to stdout before serve_posterior: go-plugin's handshake is the first
line there. Fit streams no progress reports.
"""

import json
import sys
from dataclasses import dataclass, field

import grpc
import numpy as np

from . import wire
from ._pb import plugin_pb2, plugin_pb2_grpc
from .errors import Error
from .server import abort_call, check_id_name, new_grpc_server, refuse_by_hand, run_server


@dataclass(frozen=True)
class PosteriorInfo:
    """sdk.Info of a posterior. id is "posterior.NAME"; files lists the
    keys of the recipe table that hold file paths (the host resolves them
    against the recipe's folder, checks they open, and keys its cache by
    their contents); serves_models says that sample may answer Served
    draws; finite that the posterior has K members and accepts at most K
    draws; replicates that fit derives its training seeds from
    FitRequest.replicate (sdk.ReplicateSeed)."""

    id: str
    version: str
    summary: str = ""
    finite: bool = False
    files: tuple = ()
    serves_models: bool = False
    replicates: bool = False

    def validate(self):
        """Raises ValueError for an Info the host would refuse."""
        kind, dot, _ = self.id.partition(".")
        if not dot or kind != "posterior":
            raise ValueError("plugin ID %r: want posterior.<name> (serve_posterior serves posteriors)" % self.id)
        check_id_name(self.id)
        if not self.version:
            raise ValueError("%s: PosteriorInfo.version is empty (want the plugin's version, e.g. \"1.0.0\")" % self.id)
        for k in self.files:
            if not isinstance(k, str) or not k:
                raise ValueError("%s: PosteriorInfo.files holds %r; want the names of recipe keys" % (self.id, k))


@dataclass
class Artifact:
    """sdk.Artifact: the architecture (nn.Arch as JSON bytes), named
    float32 tensors (flat numpy arrays) and string metadata."""

    arch_json: bytes
    tensors: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    @property
    def arch(self):
        """The architecture as a dict."""
        return wire.decode_arch(self.arch_json)

    def to_pb(self):
        for k, v in self.meta.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError("artifact meta %r: %r; want strings" % (k, v))
        return plugin_pb2.Artifact(arch_json=bytes(self.arch_json),
                                   tensors={k: wire.float32_bytes(np.ravel(v)) for k, v in self.tensors.items()},
                                   meta=dict(self.meta))

    @classmethod
    def from_pb(cls, a):
        return cls(arch_json=bytes(a.arch_json), tensors={k: wire.float32s(v) for k, v in a.tensors.items()},
                   meta=dict(a.meta))


class Dataset:
    """sdk.Dataset: n rows of length values, decoded when first read (x:
    float32 (n, length); y: int64 (n,))."""

    def __init__(self, d):
        self._d = d
        self.n, self.length = int(d.n), int(d.len)
        self._x = None

    @property
    def x(self):
        if self._x is None:
            self._x = wire.float32s(self._d.x).reshape(self.n, self.length)
        return self._x

    @property
    def y(self):
        return np.array(self._d.y, dtype=np.int64)


@dataclass
class FitRequest:
    """sdk.FitRequest: arch_json (and arch, a dict), train and val
    (Datasets), training (the recipe's [train] table, a dict), config (the
    posterior's table, a dict or None), seed, workers, part and parts (a
    parted fit; parts 0 for a whole one), replicate, base (the base
    posterior's Artifact, or None)."""

    arch_json: bytes
    arch: dict
    train: Dataset
    val: Dataset
    training: dict
    config: dict
    seed: int
    workers: int
    part: int
    parts: int
    replicate: int
    base: Artifact = None


@dataclass
class SampleRequest:
    """sdk.SampleRequest and where to serve: seeds (one draw each), config
    (the posterior's table) and socket_dir, the private directory the host
    made for the sockets of served draws ("" from a host that does not
    know served draws)."""

    seeds: list
    config: dict
    socket_dir: str

    def need_socket_dir(self, plugin_id):
        """socket_dir, or an Error saying that the host gives none."""
        if not self.socket_dir:
            raise Error("%s serves its draws (PosteriorInfo.serves_models), and the host sent no socket_dir for their "
                        "sockets: the host predates served draws (use a uaxai that knows them)" % plugin_id)
        return self.socket_dir


@dataclass(frozen=True)
class Served:
    """A served draw: the unix socket of the model service that computes it
    and its handle there (not 0)."""

    address: str
    handle: int


@dataclass(frozen=True)
class Params:
    """A draw by its parameters: nn.Arch JSON bytes and the flat float32
    vector in state_dict order."""

    arch_json: bytes
    data: np.ndarray


class PosteriorServicer(plugin_pb2_grpc.PosteriorServicer):
    """The Posterior service around a Python posterior (sdk.posteriorServer)."""

    def __init__(self, impl, info):
        self.impl = impl
        self.info = info

    def _fail(self, context, method, e, code):
        abort_call(context, self.info.id, method, e, code)

    def _config(self, context, b):
        try:
            return wire.decode_config(b)
        except wire.WireError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))

    def Info(self, request, context):
        i = self.info
        return plugin_pb2.PosteriorInfo(info=plugin_pb2.Info(id=i.id, version=i.version, summary=i.summary),
                                        finite=i.finite, files=list(i.files), replicates=i.replicates,
                                        serves_models=i.serves_models)

    def Check(self, request, context):
        cfg = self._config(context, request.config_json)
        try:
            self.impl.check(cfg, int(request.draws))
        except Exception as e:  # noqa: BLE001 - every error of the plugin goes to the host
            self._fail(context, "Check", e, grpc.StatusCode.INVALID_ARGUMENT)
        return plugin_pb2.CheckResponse()

    def Parts(self, request, context):
        parts = getattr(self.impl, "parts", None)
        if parts is None:
            return plugin_pb2.PartsResponse(parts=0)
        cfg = self._config(context, request.config_json)
        try:
            k = int(parts(cfg))
        except Exception as e:  # noqa: BLE001
            self._fail(context, "Parts", e, grpc.StatusCode.INVALID_ARGUMENT)
        return plugin_pb2.PartsResponse(parts=k)

    def Fit(self, request, context):
        cfg = self._config(context, request.config_json)
        try:
            arch = wire.decode_arch(request.arch_json)
            training = json.loads(bytes(request.training_json).decode("utf-8")) if request.training_json else {}
        except (wire.WireError, UnicodeDecodeError, ValueError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "decoding the fit request: %s" % e)
        if request.parts > 0 and getattr(self.impl, "parts", None) is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "part %d of %d asked of %s, whose fit is not parted (it answers Parts with 0)"
                          % (request.part, request.parts, self.info.id))
        req = FitRequest(arch_json=bytes(request.arch_json), arch=arch, train=Dataset(request.train),
                         val=Dataset(request.val), training=training, config=cfg, seed=int(request.seed),
                         workers=int(request.workers), part=int(request.part), parts=int(request.parts),
                         replicate=int(request.replicate),
                         base=Artifact.from_pb(request.base) if request.HasField("base") else None)
        try:
            a = self.impl.fit(req)
            if not isinstance(a, Artifact):
                raise TypeError("fit returned a %s, want a uaxai_plugin.posterior.Artifact" % type(a).__name__)
            pa = a.to_pb()
        except Exception as e:  # noqa: BLE001
            self._fail(context, "Fit", e, grpc.StatusCode.UNKNOWN)
        yield plugin_pb2.FitEvent(artifact=pa)

    def Sample(self, request, context):
        cfg = self._config(context, request.config_json)
        if not request.HasField("artifact"):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "missing artifact")
        try:
            a = Artifact.from_pb(request.artifact)
        except wire.WireError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "artifact: %s" % e)
        req = SampleRequest(seeds=[int(s) for s in request.seeds], config=cfg, socket_dir=request.socket_dir)
        try:
            draws = list(self.impl.sample(a, req))
            resp = self._response(draws, len(req.seeds))
        except Exception as e:  # noqa: BLE001
            self._fail(context, "Sample", e, grpc.StatusCode.UNKNOWN)
        return resp

    def _response(self, draws, want):
        if len(draws) != want:
            raise TypeError("sample returned %d draws for %d seeds (want one a seed)" % (len(draws), want))
        if all(isinstance(d, Served) for d in draws):
            if draws and not self.info.serves_models:
                raise TypeError("sample returned served draws, but PosteriorInfo.serves_models is False")
            return plugin_pb2.SampleResponse(
                served=[plugin_pb2.ModelService(address=d.address, handle=d.handle) for d in draws])
        if all(isinstance(d, Params) for d in draws):
            return plugin_pb2.SampleResponse(
                draws=[plugin_pb2.Params(arch_json=bytes(d.arch_json), data=wire.float32_bytes(d.data)) for d in draws])
        raise TypeError("sample returned %s; want all Served or all Params" % sorted({type(d).__name__ for d in draws}))


def read_posterior_info(posterior):
    """The posterior's PosteriorInfo, checked."""
    info = posterior.info()
    if not isinstance(info, PosteriorInfo):
        raise ValueError("info() returned %s, want a uaxai_plugin.posterior.PosteriorInfo" % type(info).__name__)
    info.validate()
    return info


def build_posterior_server(posterior, info, stop, workers=4):
    """The gRPC server of a posterior plugin (not started)."""
    server = new_grpc_server(stop, workers)
    plugin_pb2_grpc.add_PosteriorServicer_to_server(PosteriorServicer(posterior, info), server)
    return server


def serve_posterior(posterior, workers=4):
    """Serves posterior as a uaxai plugin process, as serve does an
    explainer: go-plugin's handshake on stdout (then stdout points at
    stderr), the Posterior service, grpc.health and go-plugin's
    controller; exits 0 after the host's Shutdown, SIGTERM or SIGINT, or
    when the host is gone, and 1 when run by hand or for a bad Info."""
    refuse_by_hand()
    try:
        info = read_posterior_info(posterior)
    except Exception as e:  # noqa: BLE001
        sys.stderr.write("uaxai plugin: %s\n" % e)
        sys.exit(1)
    run_server(info.id, lambda stop: build_posterior_server(posterior, info, stop, workers))
