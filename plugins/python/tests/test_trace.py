"""kvharness_sdk.trace: the recorder's file (a header, then a step a line,
whole or not at all), its refusals, and the scheduler loop of
schedloop.py hooked onto it the way an engine would be."""

import json
import os
import tempfile
import unittest

from helpers import ROOT  # noqa: F401  (puts the SDK on sys.path)

from kvharness_sdk import trace

import schedloop


def lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


class RecorderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "t.jsonl")

    def recorder(self):
        return trace.Recorder(self.path, head_dims=[64], page_size=4, pages=16, capacities=[1, 2, 4])

    def test_reads_and_transfers(self):
        with trace.Recorder(self.path, head_dims=[64], page_size=4, pages=16, capacities=[1, 2, 4], decode_side=True) as rec:
            rec.arrive("x", 5)
            rec.arrive("y", 3)
            rec.read(["y", "x"])
            rec.transfer("x")
            rec.read(["x"])
            rec.finish("x")
        got = lines(self.path)
        self.assertTrue(got[0]["geometry"]["decode"])
        self.assertEqual(got[3:], [{"op": "read", "batch": [2, 1]}, {"op": "transfer", "req": 1},
                                   {"op": "read", "batch": [1]}, {"op": "finish", "req": 1}])

    def test_transfer_needs_a_decode_side(self):
        rec = self.recorder()
        rec.arrive("x", 5)
        with self.assertRaisesRegex(trace.TraceError, "decode_side=True"):
            rec.transfer("x")
        with self.assertRaisesRegex(trace.TraceError, "never arrived"):
            rec.read(["nobody"])
        rec.discard()

    def test_steps_numbered_in_arrival_order(self):
        with self.recorder() as rec:
            rec.arrive("b", 5)
            rec.arrive("a", 7, shared_from="b", shared=4)
            rec.decode(["a", "b"])
            rec.evict("b")
            rec.load("b")
            rec.abort("a")
            rec.finish("b")
        got = lines(self.path)
        self.assertEqual(got[0], {"kvharness_trace": 1, "geometry": {"head_dims": [64], "page_size": 4, "pages": 16, "capacities": [1, 2, 4]}})
        self.assertEqual(got[1:], [
            {"op": "arrive", "req": 1, "tokens": 5},
            {"op": "arrive", "req": 2, "tokens": 7, "from": 1, "shared": 4},
            {"op": "decode", "batch": [2, 1], "capacity": 2},
            {"op": "evict", "req": 1},
            {"op": "load", "req": 1},
            {"op": "abort", "req": 2},
            {"op": "finish", "req": 1},
        ])
        self.assertEqual(os.listdir(self.dir), ["t.jsonl"])

    def test_refusals_name_the_step(self):
        rec = self.recorder()
        with self.assertRaisesRegex(trace.TraceError, "never arrived"):
            rec.finish("ghost")
        rec.arrive("a", 3)
        with self.assertRaisesRegex(trace.TraceError, "arrived before"):
            rec.arrive("a", 3)
        with self.assertRaisesRegex(trace.TraceError, "captured sizes \\[1, 2, 4\\] give 1"):
            rec.decode(["a"], capacity=2)
        with self.assertRaisesRegex(trace.TraceError, "largest captured capacity 4"):
            rec.decode(["a"] * 5)
        rec.discard()
        with self.assertRaisesRegex(trace.TraceError, "ascending"):
            trace.Recorder(self.path, head_dims=[64], page_size=4, pages=16, capacities=[4, 2])

    def test_a_failed_run_leaves_no_file(self):
        with self.assertRaises(RuntimeError):
            with self.recorder() as rec:
                rec.arrive("a", 3)
                raise RuntimeError("the engine crashed")
        self.assertEqual(os.listdir(self.dir), [])

    def test_wrap_and_unwrap(self):
        class Alloc:
            def alloc(self, n):
                return list(range(n))

        seen = []
        a = Alloc()
        undo = trace.wrap(a, "alloc", lambda result, n: seen.append((n, result)))
        self.assertEqual(a.alloc(2), [0, 1])
        undo()
        a.alloc(3)
        self.assertEqual(seen, [(2, [0, 1])])


class SchedulerLoopTest(unittest.TestCase):
    def test_loop_records_a_replayable_lifecycle(self):
        path = os.path.join(tempfile.mkdtemp(), "loop.jsonl")
        rec = schedloop.record(path, steps=80, seed=3)
        got = lines(path)
        self.assertEqual(len(got), 81)
        self.assertEqual(rec.steps, 80)
        ops = {s["op"] for s in got[1:]}
        for op in ("arrive", "decode", "finish"):
            self.assertIn(op, ops)
        # every step names only requests that arrived before it
        arrived = set()
        for s in got[1:]:
            if s["op"] == "arrive":
                arrived.add(s["req"])
                if "from" in s:
                    self.assertIn(s["from"], arrived)
                    self.assertLess(s["shared"], s["tokens"])
            for r in s.get("batch", [s.get("req")]):
                self.assertIn(r, arrived)


if __name__ == "__main__":
    unittest.main()
