"""Conversions between numpy/Python values and the byte encodings of the
uaxai protocol, exactly as the Go side does them (sdk/internal/wire):

* float32 arrays (waveforms, parameters): little-endian IEEE 754
  binary32, 4 bytes a value; float64 arrays (maps): little-endian
  binary64, 8 bytes a value. A length that is not a multiple of the
  value size is an error; empty bytes decode to an empty array.
* recipe tables (configs): JSON objects; empty bytes decode to None (no
  table), JSON null to an empty table. Numbers decode as Python's json
  module reads them: `3` is the int 3, `3.0` and `3e0` the float 3.0 (Go
  reads both as float64; its sdk.Config accessors accept whole floats as
  ints, so a Python plugin should accept both too).
* architectures: JSON objects (nn.Arch).
"""

import json

import numpy as np

# MaxMessageSize of sdk/internal/proto: the largest message either side
# of a connection sends or accepts (the plugin's server and its client of
# the model service).
MAX_MESSAGE_SIZE = 1 << 30

_F32 = np.dtype("<f4")
_F64 = np.dtype("<f8")


class WireError(ValueError):
    """Bytes that do not decode to what the protocol says they hold."""


def float32s(b):
    """Decodes little-endian binary32 values into a new float32 array."""
    if len(b) % 4 != 0:
        raise WireError("float32 array of %d bytes is not a multiple of 4" % len(b))
    return np.frombuffer(bytes(b), dtype=_F32).astype(np.float32)


def float32_bytes(v):
    """Encodes v as little-endian binary32 values (v is cast to float32)."""
    return np.ascontiguousarray(v, dtype=_F32).tobytes()


def float64s(b):
    """Decodes little-endian binary64 values into a new float64 array."""
    if len(b) % 8 != 0:
        raise WireError("float64 array of %d bytes is not a multiple of 8" % len(b))
    return np.frombuffer(bytes(b), dtype=_F64).astype(np.float64)


def float64_bytes(v):
    """Encodes v as little-endian binary64 values (v is cast to float64)."""
    return np.ascontiguousarray(v, dtype=_F64).tobytes()


def decode_config(b):
    """Decodes a JSON recipe table: None for empty bytes, a dict otherwise."""
    if len(b) == 0:
        return None
    try:
        c = json.loads(bytes(b).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise WireError("decoding config: %s" % e) from None
    if c is None:
        return {}
    if not isinstance(c, dict):
        raise WireError("decoding config: a JSON %s, want an object" % type(c).__name__)
    return c


def encode_config(c):
    """Encodes a recipe table as JSON; None encodes to nothing."""
    if c is None:
        return b""
    try:
        return json.dumps(c, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise WireError("encoding config: %s" % e) from None


def decode_arch(b):
    """Decodes a JSON architecture (nn.Arch) into a dict."""
    try:
        a = json.loads(bytes(b).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise WireError("decoding architecture: %s" % e) from None
    if not isinstance(a, dict):
        raise WireError("decoding architecture: a JSON %s, want an object" % type(a).__name__)
    return a
