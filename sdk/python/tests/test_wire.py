"""The kit's byte encodings against layouts written by hand from the Go
side's definitions (sdk/internal/wire: little-endian IEEE 754 binary32 and
binary64; configs and architectures as JSON)."""

import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from uaxai_plugin import wire  # noqa: E402

# binary32 bit patterns: sign | exponent (8) | fraction (23), stored low
# byte first.
F32 = [
    (1.0, bytes([0x00, 0x00, 0x80, 0x3F])),    # 0x3f800000
    (-2.5, bytes([0x00, 0x00, 0x20, 0xC0])),   # 0xc0200000
    (0.0, bytes([0x00, 0x00, 0x00, 0x00])),
    (-0.0, bytes([0x00, 0x00, 0x00, 0x80])),   # the sign bit only
    (float("inf"), bytes([0x00, 0x00, 0x80, 0x7F])),
    (2.0 ** -149, bytes([0x01, 0x00, 0x00, 0x00])),  # the smallest subnormal
]
# binary64: sign | exponent (11) | fraction (52).
F64 = [
    (1.0, bytes([0, 0, 0, 0, 0, 0, 0xF0, 0x3F])),                  # 0x3ff0000000000000
    (0.1, bytes([0x9A, 0x99, 0x99, 0x99, 0x99, 0x99, 0xB9, 0x3F])),  # 0x3fb999999999999a
    (-3.0, bytes([0, 0, 0, 0, 0, 0, 0x08, 0xC0])),                 # 0xc008000000000000
    (-0.0, bytes([0, 0, 0, 0, 0, 0, 0, 0x80])),
]


class TestFloats(unittest.TestCase):
    def test_float32_layout(self):
        vals = [v for v, _ in F32]
        raw = b"".join(b for _, b in F32)
        self.assertEqual(wire.float32_bytes(np.array(vals, dtype=np.float32)), raw)
        got = wire.float32s(raw)
        self.assertEqual(got.dtype, np.float32)
        self.assertEqual(got.tobytes(), np.array(vals, dtype="<f4").tobytes())
        self.assertTrue(np.signbit(got[3]))

    def test_float64_layout(self):
        vals = [v for v, _ in F64]
        raw = b"".join(b for _, b in F64)
        self.assertEqual(wire.float64_bytes(vals), raw)
        got = wire.float64s(raw)
        self.assertEqual(list(got), vals)
        self.assertTrue(np.signbit(got[3]))

    def test_nan_payload_kept(self):
        # Go's Float32frombits/Float32bits keep a NaN's payload bits.
        raw = struct.pack("<I", 0x7FC00001) + struct.pack("<Q", 0xFFF8000000000123)
        self.assertEqual(wire.float32_bytes(wire.float32s(raw[:4])), raw[:4])
        self.assertEqual(wire.float64_bytes(wire.float64s(raw[4:])), raw[4:])

    def test_round_trip_against_struct(self):
        rng = np.random.default_rng(7)
        v = rng.standard_normal(257) * 1e3
        self.assertEqual(wire.float64_bytes(v), struct.pack("<257d", *v))
        np.testing.assert_array_equal(wire.float64s(struct.pack("<257d", *v)), v)
        v32 = v.astype(np.float32)
        self.assertEqual(wire.float32_bytes(v32), struct.pack("<257f", *v32))
        np.testing.assert_array_equal(wire.float32s(struct.pack("<257f", *v32)), v32)

    def test_big_endian_input_is_encoded_little_endian(self):
        v = np.array([1.0, -2.5], dtype=">f8")
        self.assertEqual(wire.float64_bytes(v), F64[0][1] + struct.pack("<d", -2.5))

    def test_empty(self):
        self.assertEqual(len(wire.float32s(b"")), 0)
        self.assertEqual(len(wire.float64s(b"")), 0)
        self.assertEqual(wire.float64_bytes([]), b"")

    def test_decoded_arrays_are_writable_copies(self):
        raw = F64[0][1]
        got = wire.float64s(raw)
        got[0] = 5
        self.assertEqual(raw, F64[0][1])

    def test_bad_lengths(self):
        # The Go side's messages.
        with self.assertRaisesRegex(wire.WireError, "^float32 array of 6 bytes is not a multiple of 4$"):
            wire.float32s(b"\0" * 6)
        with self.assertRaisesRegex(wire.WireError, "^float64 array of 12 bytes is not a multiple of 8$"):
            wire.float64s(b"\0" * 12)


class TestConfig(unittest.TestCase):
    def test_decode(self):
        self.assertIsNone(wire.decode_config(b""))
        self.assertEqual(wire.decode_config(b"null"), {})
        c = wire.decode_config(b'{"window":8,"p":0.5,"on":true,"name":"x","t":{"a":[1,2]}}')
        self.assertEqual(c, {"window": 8, "p": 0.5, "on": True, "name": "x", "t": {"a": [1, 2]}})
        self.assertIsInstance(c["window"], int)

    def test_round_trip(self):
        c = {"window": 8, "p": 0.5, "names": ["a", "b"], "t": {"x": -1}}
        self.assertEqual(wire.decode_config(wire.encode_config(c)), c)
        self.assertEqual(wire.encode_config(None), b"")

    def test_errors(self):
        with self.assertRaisesRegex(wire.WireError, "^decoding config: a JSON list, want an object$"):
            wire.decode_config(b"[1]")
        with self.assertRaisesRegex(wire.WireError, "^decoding config: "):
            wire.decode_config(b'{"a":')
        with self.assertRaisesRegex(wire.WireError, "^decoding config: "):
            wire.decode_config(b"\xff")
        with self.assertRaisesRegex(wire.WireError, "^encoding config: "):
            wire.encode_config({"x": float("nan")})

    def test_arch(self):
        self.assertEqual(wire.decode_arch(b'{"name":"a","in_channels":1}'), {"name": "a", "in_channels": 1})
        with self.assertRaisesRegex(wire.WireError, "^decoding architecture: a JSON str, want an object$"):
            wire.decode_arch(b'"a"')


if __name__ == "__main__":
    unittest.main()
