"""The Python tests' side of internal/testdep: a test module that would
skip for a missing dependency calls missing() first, which raises where
$UAXAI_REQUIRE (comma-separated: python, torch, chromium, slurm; .ci/run
sets it) lists that dependency, so the module fails to load and the run
fails instead of skipping."""
import os

ENV = "UAXAI_REQUIRE"
KNOWN = ("python", "torch", "chromium", "slurm")


def required():
    """The dependencies $UAXAI_REQUIRE lists; ValueError for an unknown one."""
    out = []
    for f in os.environ.get(ENV, "").split(","):
        f = f.strip()
        if not f:
            continue
        if f not in KNOWN:
            raise ValueError("%s=%r: unknown dependency %r (accepted: %s)"
                             % (ENV, os.environ.get(ENV), f, ", ".join(KNOWN)))
        out.append(f)
    return out


def missing(dep, why):
    """Says that dep is missing (why): returns where a skip is allowed,
    raises RuntimeError where $UAXAI_REQUIRE lists dep."""
    if dep not in KNOWN:
        raise ValueError("unknown dependency %r (accepted: %s)" % (dep, ", ".join(KNOWN)))
    if dep in required():
        raise RuntimeError("%s is required (%s=%s) but missing: %s"
                           % (dep, ENV, os.environ.get(ENV), why))
