"""Tests of blasinfo: /usr/bin/python3 -m unittest discover -s testdata/peers -p 'test_*.py'
(host/bench's TestHarnessBLASParsing runs them when /usr/bin/python3 exists)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blasinfo  # noqa: E402


def maps(*paths):
    """A /proc/self/maps text mapping each path twice (text and data), with
    anonymous and special mappings between them, as the kernel writes it."""
    lines = ["55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]"]
    for i, p in enumerate(paths):
        a = 0x7f0000000000 + i * 0x100000
        lines.append("%x-%x r-xp 00000000 08:01 %d                    %s" % (a, a + 0x1000, 1000 + i, p))
        lines.append("%x-%x rw-p 00001000 08:01 %d                    %s" % (a + 0x1000, a + 0x2000, 1000 + i, p))
        lines.append("%x-%x rw-p 00000000 00:00 0 " % (a + 0x2000, a + 0x3000))
    lines.append("7ffd1a2c0000-7ffd1a2e1000 rw-p 00000000 00:00 0                          [stack]")
    return "\n".join(lines) + "\n"


TORCH = "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
PYTHON = "/usr/bin/python3.13"


class LoadedBLAS(unittest.TestCase):
    def test_debian_openblas_pthread(self):
        # libblas.so.3 resolved through the alternatives to OpenBLAS's copy:
        # the maps show the real file, which the kind must not call "reference"
        # (libblas.so.3 is a link to libopenblasp-*.so; its liblapack.so.3,
        # mapped first in torch's process, is not the file to name)
        d = "/usr/lib/x86_64-linux-gnu/openblas-pthread/"
        t = maps(PYTHON, LIBC, TORCH, d + "liblapack.so.3", d + "libopenblasp-r0.3.21.so")
        self.assertEqual(blasinfo.loaded_blas(t), ("openblas (pthread)", d + "libopenblasp-r0.3.21.so"))
        t = maps(PYTHON, TORCH, d + "libblas.so.3")
        self.assertEqual(blasinfo.loaded_blas(t), ("openblas (pthread)", d + "libblas.so.3"))

    def test_openblas_openmp_and_plain(self):
        t = maps(TORCH, "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3")
        self.assertEqual(blasinfo.loaded_blas(t)[0], "openblas (openmp)")
        t = maps("/opt/conda/lib/libopenblas.so.0", TORCH)
        self.assertEqual(blasinfo.loaded_blas(t), ("openblas", "/opt/conda/lib/libopenblas.so.0"))

    def test_reference_blas(self):
        # Debian's default alternative: netlib's reference BLAS
        ref = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.12.0"
        t = maps(PYTHON, LIBC, TORCH, ref, "/usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3.12.0")
        self.assertEqual(blasinfo.loaded_blas(t), ("reference", ref))
        self.assertEqual(blasinfo.describe(t), "reference: " + ref)

    def test_mkl_before_everything(self):
        mkl = "/opt/intel/oneapi/mkl/lib/libmkl_core.so.2"
        t = maps("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3", mkl, TORCH)
        self.assertEqual(blasinfo.loaded_blas(t), ("mkl", mkl))

    def test_blis(self):
        blis = "/usr/lib/x86_64-linux-gnu/blis-pthread/libblas.so.3"
        self.assertEqual(blasinfo.loaded_blas(maps(TORCH, blis)), ("blis", blis))

    def test_none(self):
        # a torch that links its BLAS statically (PyPI's wheels link MKL)
        t = maps(PYTHON, LIBC, TORCH, "/usr/lib/x86_64-linux-gnu/libgomp.so.1")
        self.assertEqual(blasinfo.loaded_blas(t), ("none", ""))
        self.assertEqual(blasinfo.describe(t), "none")
        self.assertEqual(blasinfo.loaded_blas(""), ("none", ""))

    def test_mapped_libraries(self):
        t = maps(LIBC, LIBC, "/tmp/x.so (deleted)")
        t += "7f0000900000-7f0000901000 r--p 00000000 00:00 0                          [vdso]\n"
        self.assertEqual(blasinfo.mapped_libraries(t), [LIBC, "/tmp/x.so"])

    def test_own_process(self):
        # this interpreter maps at least libc (or is static): the function
        # reads a real maps file without error, whatever it finds
        if not os.path.exists("/proc/self/maps"):
            self.skipTest("no /proc")
        with open("/proc/self/maps") as f:
            text = f.read()
        kind, path = blasinfo.loaded_blas(text)
        self.assertIn(kind.split(" ")[0], ("mkl", "openblas", "blis", "atlas", "reference", "none"))
        self.assertTrue(path == "" or path in text)


if __name__ == "__main__":
    unittest.main()
