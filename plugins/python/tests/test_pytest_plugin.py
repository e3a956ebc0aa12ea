"""The pytest plugin's collection logic: which rows a test asks for."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import pytest  # noqa: F401
except ImportError:  # pragma: no cover - the plugin needs pytest
    pytest = None

if pytest is not None:
    from kvharness_sdk import pytest_plugin as plug


def literal(kvharness):
    kvharness.check(object, layouts=["bf16", "fp8-paged"], paddings=["count", "sink"], cases=10)


def computed(kvharness):
    layouts = ["bf16"]
    kvharness.check(object, layouts=layouts)


@unittest.skipIf(pytest is None, "no pytest")
class RowsTest(unittest.TestCase):
    def test_expand(self):
        self.assertEqual(plug._expand(None, "all"), [("all", p) for p in plug.PADDINGS])
        self.assertEqual(plug._expand("bf16", "count"), [("bf16", "count")])
        self.assertEqual(plug._expand(["a", "b"], ["none"]), [("a", "none"), ("b", "none")])
        with self.assertRaises(pytest.UsageError):
            plug._expand(None, "zero")

    def test_literal_call(self):
        call = plug._check_call(literal)
        self.assertEqual(sorted(call), ["cases", "layouts", "paddings"])

    def test_computed_call_is_not_read(self):
        call = plug._check_call(computed)
        import ast
        with self.assertRaises(ValueError):
            ast.literal_eval(call["layouts"])

    def test_merge(self):
        rows = plug._expand(["bf16"], "all") + [("fp8-paged", "count")]
        self.assertEqual(plug._merge(rows), [("bf16", "all"), ("fp8-paged", "count")])


if __name__ == "__main__":
    unittest.main()
