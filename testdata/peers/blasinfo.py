"""Which BLAS library a process has actually loaded, read from its
/proc/self/maps (no torch, no numpy: tested by test_blasinfo.py).

torch.__config__.show()'s BLAS_INFO is the string the build was configured
with (Debian's python3-torch says "generic"), not the library the dynamic
linker found at run time: Debian's libblas.so.3 is an alternative that
points at the reference BLAS, OpenBLAS (libopenblas0-pthread, -openmp,
-serial), BLIS or MKL, whichever is installed and selected. The mapped
files say which one runs.
"""

import os

# (name, test on the lower-cased path of a mapped file), first match wins:
# an optimised library is named before a generic libblas.so.3, since
# OpenBLAS's and BLIS's alternatives are themselves called libblas.so.3.
_KINDS = (
    ("mkl", lambda p: "libmkl_" in os.path.basename(p)),
    ("openblas", lambda p: "openblas" in p),
    ("blis", lambda p: "blis" in p),
    ("atlas", lambda p: "atlas" in p),
    ("reference", lambda p: os.path.basename(p).startswith("libblas.so")),
)


def mapped_libraries(maps_text):
    """The distinct file paths of a /proc/PID/maps text, in order of first
    appearance (lines without a path, and [heap]-like names, skipped)."""
    seen, out = set(), []
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6:
            continue
        path = parts[5].strip()
        if path.endswith(" (deleted)"):
            path = path[: -len(" (deleted)")]
        if not path.startswith("/") or path in seen:
            continue
        seen.add(path)
        out.append(path)
    return out


def loaded_blas(maps_text):
    """(kind, path) of the BLAS library a maps text shows mapped: kind is
    "mkl", "openblas", "blis", "atlas", "reference" (netlib's libblas.so.3)
    or "none" (then path is ""). An OpenBLAS kind names its threading when
    the path says it: "openblas (pthread)", "openblas (openmp)",
    "openblas (serial)"."""
    libs = [p for p in mapped_libraries(maps_text) if ".so" in os.path.basename(p)]
    # OpenBLAS's LAPACK (liblapack.so.3 in its folder) is mapped too, and
    # may come first: name the BLAS file itself when it is there.
    libs.sort(key=lambda p: os.path.basename(p).startswith("liblapack"))
    for kind, match in _KINDS:
        for p in libs:
            low = p.lower()
            if not match(low):
                continue
            if kind == "openblas":
                for t in ("pthread", "openmp", "serial"):
                    if "openblas-" + t in low or "openblas0-" + t in low:
                        return "openblas (%s)" % t, p
            return kind, p
    return "none", ""


def describe(maps_text):
    """One line: the kind and the file, as `uaxai bench` prints it."""
    kind, path = loaded_blas(maps_text)
    return kind if not path else "%s: %s" % (kind, path)


if __name__ == "__main__":
    with open("/proc/self/maps") as f:
        print(describe(f.read()))
