"""require.missing: a skip allowed unless $UAXAI_REQUIRE lists the
dependency."""
import os
import unittest
from unittest import mock

import require


class TestRequire(unittest.TestCase):
    def test_missing(self):
        for env, dep, raises in [("", "torch", None), ("python,chromium", "torch", None),
                                 ("python, torch", "torch", "torch is required"),
                                 ("pytorch", "torch", "unknown dependency 'pytorch'"),
                                 ("", "cuda", "unknown dependency 'cuda'")]:
            with mock.patch.dict(os.environ, {require.ENV: env}):
                if raises is None:
                    self.assertIsNone(require.missing(dep, "no torch"))
                else:
                    with self.assertRaisesRegex((RuntimeError, ValueError), raises):
                        require.missing(dep, "no torch")


if __name__ == "__main__":
    unittest.main()
