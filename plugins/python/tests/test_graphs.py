"""CUDA-graph capture and replay (graphs.py), on a stand-in for torch that
records work queued during a capture and runs it at each replay, as CUDA
does: so the SDK's part (static inputs at capacity, loaded before every
replay; one capture per shape; the capture always ended) is checked on a
machine without a GPU. The real thing runs in gpu_test.sh."""

import dataclasses
import unittest

import numpy as np

from helpers import ROOT  # noqa: F401  (puts the SDK on sys.path)

from kvharness_sdk import PAD_COUNT, Layout, Pool, StoreCall
from kvharness_sdk.errors import RpcError
from kvharness_sdk.graphs import GRAPH_HINT, GraphCache, GraphKey


class Stream:
    """Where kernels go: run at once, or recorded while a capture is open."""

    capture = None

    @classmethod
    def enqueue(cls, fn):
        if cls.capture is not None:
            cls.capture.append(fn)
        else:
            fn()


class Tensor:
    def __init__(self, a):
        self.a = a

    def copy_(self, other):
        src = other.a if isinstance(other, Tensor) else other
        Stream.enqueue(lambda: self.a.__setitem__(..., src))

    def fill_(self, v):
        Stream.enqueue(lambda: self.a.__setitem__(..., v))


class CUDAGraph:
    captures = 0

    def capture_begin(self, pool=None, capture_error_mode="global"):
        assert Stream.capture is None, "nested capture"
        assert capture_error_mode == "relaxed"
        CUDAGraph.captures += 1
        Stream.capture, self.work = [], None

    def capture_end(self):
        self.work, Stream.capture = Stream.capture, None

    def replay(self):
        for fn in self.work:
            fn()


class FakeTorch:
    int32, int64 = np.int32, np.int64

    class cuda:
        CUDAGraph = CUDAGraph

        @staticmethod
        def graph_pool_handle():
            return ("pool",)

    @staticmethod
    def empty_like(t, device=None):
        return Tensor(np.zeros_like(t.a))

    @staticmethod
    def empty(n, dtype=None, device=None):
        return Tensor(np.zeros(n, dtype))

    @staticmethod
    def zeros(n, dtype=None, device=None):
        return Tensor(np.zeros(n, dtype))


D, SLOTS = 4, 16


def padding_aware(pool):
    """Reads n on the device when the work runs."""

    def store(call):
        rows, loc, valid = call.rows, call.loc, call.valid_t

        def work():
            n = int(valid.a[0])
            pool[loc.a[:n]] = rows.a[:n]

        Stream.enqueue(work)

    return store


def host_count(pool):
    """Reads n on the host when the kernel is called: baked into a capture."""

    def store(call):
        rows, loc, n = call.rows, call.loc, call.valid
        Stream.enqueue(lambda: pool.__setitem__(loc.a[:n], rows.a[:n]))

    return store


def make_call(slots, valid, seed):
    rows = np.full((len(slots), D), seed, np.uint16) + np.arange(len(slots), dtype=np.uint16)[:, None]
    pool = Pool("case", Layout("bf16", D, 4), SLOTS, 0, SLOTS * 2 * D)
    return StoreCall(variant="", backend="cuda", pool=pool, arena=None, capacity=len(slots), valid=valid,
                     padding=PAD_COUNT, rows=Tensor(rows), loc=Tensor(np.array(slots, np.int64)), graph=True)


KEY = GraphKey(0, 4, PAD_COUNT, 256, 512, 64)


class TestGraphs(unittest.TestCase):
    def setUp(self):
        CUDAGraph.captures = 0

    def test_replays_take_new_inputs_and_counts(self):
        pool = np.zeros((SLOTS, D), np.uint16)
        cache = GraphCache(FakeTorch, 0)
        store = padding_aware(pool)
        first = make_call([1, 2, 3, 4], 4, 10)
        cache.get(KEY, first, store).replay()
        self.assertTrue((pool[[1, 2, 3, 4]] == first.rows.a).all())
        again = make_call([5, 6, 7, 8], 2, 20)  # same shape: a replay, n = 2
        cache.get(KEY, again, store).replay()
        self.assertEqual(CUDAGraph.captures, 1)
        self.assertTrue((pool[[5, 6]] == again.rows.a[:2]).all())
        self.assertFalse(pool[[7, 8]].any(), "a padded row was stored")

    def test_the_kernel_sees_static_inputs(self):
        seen = []
        cache = GraphCache(FakeTorch, 0)
        call = make_call([1, 2, 3, 4], 3, 1)
        cache.get(KEY, call, lambda c: seen.append(c))
        self.assertIsNot(seen[0].rows, call.rows)
        self.assertIsNot(seen[0].loc, call.loc)
        self.assertEqual(seen[0].valid_t.a.dtype, np.int32)
        self.assertEqual(seen[0].capacity, 4)
        self.assertEqual(dataclasses.replace(seen[0], rows=call.rows, loc=call.loc, valid_t=None), call)

    def test_a_host_count_is_baked_into_the_graph(self):
        pool = np.zeros((SLOTS, D), np.uint16)
        cache = GraphCache(FakeTorch, 0)
        store = host_count(pool)
        cache.get(KEY, make_call([1, 2, 3, 4], 3, 10), store).replay()
        cache.get(KEY, make_call([5, 6, 7, 8], 1, 20), store).replay()
        self.assertTrue(pool[[6, 7]].any(), "the captured count of 3 should have stored padded rows")

    def test_shapes_are_captured_apart(self):
        cache = GraphCache(FakeTorch, 0)
        store = padding_aware(np.zeros((SLOTS, D), np.uint16))
        for key in (KEY, GraphKey(1, 4, PAD_COUNT, 256, 512, 64), GraphKey(0, 4, PAD_COUNT, 256, 512, 32), KEY):
            cache.get(key, make_call([1, 2, 3, 4], 4, 1), store).replay()
        self.assertEqual(CUDAGraph.captures, 3)

    def test_a_failed_capture_is_ended_and_named(self):
        cache = GraphCache(FakeTorch, 0)

        def sync(call):
            raise RuntimeError("operation not permitted when stream is capturing")

        with self.assertRaises(RpcError) as e:
            cache.get(KEY, make_call([1, 2, 3, 4], 4, 1), sync)
        self.assertIsNone(Stream.capture, "the capture was left open")
        self.assertIn(f"capture a CUDA graph for {KEY}: RuntimeError: operation not permitted", e.exception.message)
        self.assertIn(GRAPH_HINT, e.exception.message)
        self.assertNotIn(KEY, cache.graphs)

    def test_key_reads_as_the_shape(self):
        self.assertEqual(str(KEY), "pool 0, capacity 4, padding count, rows at 256, loc at 512 (int64)")


if __name__ == "__main__":
    unittest.main()
