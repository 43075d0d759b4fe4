"""Reading a recipe table (a dict decoded from JSON, or None) with the
checks and messages of the Go side's sdk.Config accessors, so that a
Python plugin rejects a key as a Go plugin does:

    only(cfg, "window", "stride")      unknown key "x" (accepted: stride, window)
    int_range(cfg, "window", 60, 1, 1 << 20)
                                       key "window": 0 is out of range (accepted: 1..1048576)
    number(cfg, "baseline", 0)         key "baseline": want a number, got string "a"
    string(cfg, "surrogate", "lasso")  key "surrogate": want a string, got float64 3

JSON numbers: Go reads every number as a float64 and accepts a whole one
as an integer; Python's json module gives an int or a float, and both
are accepted the same way here. true and false are not numbers.
"""

import math

import numpy as np

QUOTE_LIMIT = 80


def go_value(v):
    """v as Go's %v prints the value JSON decoding gives (float64, string,
    bool, nil, []interface {}, map[string]interface {}), near enough for a
    message."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return go_float(float(v))
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        return "[" + " ".join(go_value(e) for e in v) + "]"
    if isinstance(v, dict):
        return "map[" + " ".join("%s:%s" % (k, go_value(v[k])) for k in sorted(v)) + "]"
    return str(v)


def go_float(v, bits=64):
    """A float64 as Go's %v prints it (strconv.FormatFloat(v, 'g', -1,
    bits)): the shortest digits that read back as v (as a float32 when
    bits is 32), in exponent form (1e+06, 1.5e-05) when the decimal
    exponent is below -4 or at least 6, else positional (123456, 0.0001,
    3)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "-0" if math.copysign(1, v) < 0 else "0"
    sign = "-" if v < 0 else ""
    if bits == 32:
        r = np.format_float_scientific(np.float32(abs(v)), unique=True, trim="-")
    else:
        r = "%r" % abs(v)
    m, _, e = r.partition("e")  # shortest round trip, as strconv's
    digits, _, frac = m.partition(".")
    exp = int(e or 0)
    allds = (digits + frac).lstrip("0")
    # decimal exponent of the first significant digit
    if digits.strip("0"):
        exp += len(digits.lstrip("0")) - 1
    else:
        exp -= len(frac) - len(frac.lstrip("0")) + 1
    allds = allds.rstrip("0") or "0"
    if exp < -4 or exp >= 6:
        mant = allds[0] + ("." + allds[1:] if len(allds) > 1 else "")
        return "%s%se%s%02d" % (sign, mant, "-" if exp < 0 else "+", abs(exp))
    if exp < 0:
        return sign + "0." + "0" * (-exp - 1) + allds
    if len(allds) <= exp + 1:
        return sign + allds + "0" * (exp + 1 - len(allds))
    return sign + allds[:exp + 1] + "." + allds[exp + 1:]


def go_type(v):
    """The Go type JSON decoding gives v (%T)."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (list, tuple)):
        return "[]interface {}"
    if isinstance(v, dict):
        return "map[string]interface {}"
    return type(v).__name__


def quote(v):
    """sdk.Quote: a string in double quotes, anything else as Go's %v, cut
    after QUOTE_LIMIT characters with "…" and the full length in bytes."""
    s = v if isinstance(v, str) else go_value(v)
    n = len(s.encode("utf-8"))
    cut = len(s) > QUOTE_LIMIT
    if cut:
        s = s[:QUOTE_LIMIT]
    if isinstance(v, str):
        s = '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
    if cut:
        s += "… (%d bytes)" % n
    return s


def only(cfg, *allowed):
    """Raises ValueError naming the first (sorted) key of cfg that is not
    allowed, and the accepted keys."""
    bad = sorted(k for k in (cfg or {}) if k not in allowed)
    if bad:
        raise ValueError("unknown key %s (accepted: %s)" % (quote(bad[0]), ", ".join(sorted(allowed))))


def is_number(v):
    """Whether v is a JSON number (not a bool)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def number(cfg, key, default):
    """key as a finite float, or default if it is absent (sdk.Config.Float)."""
    cfg = cfg or {}
    if key not in cfg:
        return float(default)
    v = cfg[key]
    if not is_number(v):
        raise ValueError("key %s: want a number, got %s %s" % (_q(key), go_type(v), quote(v)))
    f = float(v)
    if not math.isfinite(f):
        raise ValueError("key %s: %s is not a finite number" % (_q(key), go_value(v)))
    return f


def integer(cfg, key, default):
    """key as an int, or default if it is absent; a float must be whole and
    at most 2^53 in magnitude (sdk.Config.Int)."""
    cfg = cfg or {}
    if key not in cfg:
        return default
    v = cfg[key]
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float):
        if not math.isfinite(v) or v != math.trunc(v) or abs(v) > 1 << 53:
            raise ValueError("key %s: want an integer, got %s" % (_q(key), go_value(v)))
        return int(v)
    raise ValueError("key %s: want an integer, got %s %s" % (_q(key), go_type(v), quote(v)))


def int_range(cfg, key, default, lo, hi):
    """key as an int in lo..hi, or default if it is absent
    (sdk.Config.IntRange)."""
    v = integer(cfg, key, default)
    if v < lo or v > hi:
        raise ValueError("key %s: %d is out of range (accepted: %d..%d)" % (_q(key), v, lo, hi))
    return v


def string(cfg, key, default):
    """key as a string, or default if it is absent (sdk.Config.String)."""
    cfg = cfg or {}
    if key not in cfg:
        return default
    v = cfg[key]
    if not isinstance(v, str):
        raise ValueError("key %s: want a string, got %s %s" % (_q(key), go_type(v), quote(v)))
    return v


def one_of(cfg, key, default, choices):
    """key as one of the strings choices, or default if it is absent."""
    v = string(cfg, key, default)
    if v not in choices:
        raise ValueError("key %s is %s (accepted: %s)" % (_q(key), quote(v), ", ".join(quote(c) for c in choices)))
    return v


def _q(key):
    # %q of a key: keys are plain words, so double quotes suffice.
    return '"%s"' % key
