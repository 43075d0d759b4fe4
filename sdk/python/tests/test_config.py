"""The kit's recipe-table accessors give the Go side's sdk.Config messages
(written here from sdk/config.go's format strings)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from uaxai_plugin import config as cf  # noqa: E402


class TestConfig(unittest.TestCase):
    def test_only(self):
        cf.only(None, "a")
        cf.only({"a": 1}, "a", "b")
        with self.assertRaises(ValueError) as cm:
            cf.only({"zz": 1, "c": 2, "a": 3}, "b", "a")
        self.assertEqual(str(cm.exception), 'unknown key "c" (accepted: a, b)')

    def test_number(self):
        self.assertEqual(cf.number(None, "k", 3), 3.0)
        self.assertEqual(cf.number({"k": 2}, "k", 3), 2.0)
        self.assertEqual(cf.number({"k": -0.5}, "k", 3), -0.5)
        for v, msg in [("a", 'key "k": want a number, got string "a"'),
                       (True, 'key "k": want a number, got bool true'),
                       (None, 'key "k": want a number, got <nil> <nil>'),
                       ([1, 2], 'key "k": want a number, got []interface {} [1 2]'),
                       ({"b": 1.5}, 'key "k": want a number, got map[string]interface {} map[b:1.5]'),
                       (float("inf"), 'key "k": +Inf is not a finite number')]:
            with self.assertRaises(ValueError) as cm:
                cf.number({"k": v}, "k", 0)
            self.assertEqual(str(cm.exception), msg)

    def test_integer_and_range(self):
        self.assertEqual(cf.int_range({"k": 4.0}, "k", 1, 1, 9), 4)
        self.assertEqual(cf.int_range({}, "k", 7, 1, 9), 7)
        for v, msg in [(2.5, 'key "k": want an integer, got 2.5'),
                       (2.0 ** 54, 'key "k": want an integer, got 1.8014398509481984e+16'),
                       ("3", 'key "k": want an integer, got string "3"'),
                       (False, 'key "k": want an integer, got bool false'),
                       (0, 'key "k": 0 is out of range (accepted: 1..9)'),
                       (10.0, 'key "k": 10 is out of range (accepted: 1..9)')]:
            with self.assertRaises(ValueError) as cm:
                cf.int_range({"k": v}, "k", 1, 1, 9)
            self.assertEqual(str(cm.exception), msg)

    def test_go_float(self):
        # fmt's %v of a float64 (checked against Go 1.26's output).
        for v, want in [(2.5, "2.5"), (2.0 ** 54, "1.8014398509481984e+16"), (1e6, "1e+06"), (1234567.0, "1.234567e+06"),
                        (123456.0, "123456"), (1e-5, "1e-05"), (0.0001, "0.0001"), (3.0, "3"), (-2.75, "-2.75"),
                        (120.0, "120"), (0.0, "0"), (float("nan"), "NaN"), (float("-inf"), "-Inf")]:
            self.assertEqual(cf.go_float(v), want)
        # FormatFloat(float64(float32(v)), 'g', -1, 32): float32's shortest digits.
        self.assertEqual(cf.go_float(0.1, bits=32), "0.1")
        self.assertEqual(cf.go_float(float(np.float32(0.1)), bits=32), "0.1")
        self.assertEqual(cf.go_float(float(np.float32(0.1))), "0.10000000149011612")
        self.assertEqual(cf.go_float(3e-7, bits=32), "3e-07")

    def test_string_and_quote(self):
        self.assertEqual(cf.string({"k": "x"}, "k", "d"), "x")
        self.assertEqual(cf.string(None, "k", "d"), "d")
        with self.assertRaises(ValueError) as cm:
            cf.string({"k": 3}, "k", "d")
        self.assertEqual(str(cm.exception), 'key "k": want a string, got float64 3')
        self.assertEqual(cf.quote('a"b'), '"a\\"b"')
        long = "é" * 100
        self.assertEqual(cf.quote(long), '"' + "é" * 80 + '"… (200 bytes)')


if __name__ == "__main__":
    unittest.main()
