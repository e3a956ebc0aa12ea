"""Bench rotation on the host: launches take the store and its rotation in
turn, going on across Bench calls; a rotation that is not the store's call
on other data, or goes into a pool of another layout, is refused."""

import unittest

import grpc
import numpy as np

from helpers import Aborted, ShmArena, call, kv, pool_desc, service

from kvharness_sdk import SHM, Geometry, Kernel

D = 16


class Recorder(Kernel):
    name, version = "recorder", "1.0.0"
    backends = (SHM,)

    def __init__(self):
        self.launched = []

    def geometry(self, variant, head_dim, page_size):
        return [Geometry("bf16", 2 * head_dim, 2 * head_dim * page_size),
                Geometry("fp8-paged", head_dim + 4, (head_dim + 4) * page_size)]

    def store(self, call):
        self.launched.append((call.pool.name, int(call.loc[0])))


class TestRotation(unittest.TestCase):
    def setUp(self):
        self.a = ShmArena(1 << 18)
        self.k = Recorder()
        self.svc = service(self.k)
        pools = [pool_desc(f"p{i}", "bf16", D, 4, 64, 4096 + i * 4096, 64 * 2 * D) for i in range(3)]
        pools.append(pool_desc("fp8", "fp8-paged", D, 4, 64, 4096 * 4, 64 * (D + 4)))
        call(self.svc, "Attach", kv.AttachRequest(arena=self.a.desc, pools=pools, staging=kv.Window(offset=65536, size=65536)))
        self.stores = []
        for i in range(3):  # set i: rows at 65536 + 1024 i, one slot i + 1
            off = 65536 + 1024 * i
            self.a.write(off + 2 * D, np.array([i + 1], np.int64))
            self.stores.append(kv.StoreRequest(pool=i, capacity=1, valid=1, rows_offset=off, loc_offset=off + 2 * D))

    def tearDown(self):
        self.a.close()

    def bench(self, **kw):
        req = kv.BenchRequest(store=self.stores[0], rotation=self.stores[1:], **kw)
        return call(self.svc, "Bench", req)

    def test_launches_take_the_sets_in_turn_across_calls(self):
        r = self.bench(warmup=1, iterations=2)
        self.assertEqual(len(r.ns), 2)
        r = self.bench(iterations=3, mode=kv.BENCH_BATCHED, batch=2)
        want = [("p0", 1), ("p1", 2), ("p2", 3)] * 3
        self.assertEqual(self.k.launched, want)

    def test_copy_rotates_over_buffer_pairs(self):
        r = self.bench(iterations=4, copy=True, copy_bytes=1 << 10)
        self.assertEqual(len(r.ns), 4)
        with self.assertRaises(Aborted) as e:
            self.bench(iterations=1, copy=True, copy_bytes=8 << 30)
        self.assertIn("over 3 buffer pairs: more than 17179869184 bytes in all", e.exception.message)

    def test_refusals(self):
        other = kv.StoreRequest()
        other.CopyFrom(self.stores[1])
        other.valid = 0
        fp8 = kv.StoreRequest()
        fp8.CopyFrom(self.stores[1])
        fp8.pool = 3
        for rotation, want in [
            ([other], "bench: rotation[0] is not the store's call on other data (capacity 1, valid 0, padding PADDING_NONE, "
                      "graph false; the store has 1, 1, PADDING_NONE, false): only the pool, rows_offset and loc_offset may differ"),
            ([self.stores[1]] * 64, "bench: rotation of 64 stores; at most 63 (kvharness bench --rotate 64 at the most)"),
            ([fp8], "bench: rotation[0] stores into pool 3 ({fp8-paged 16 4}), the store into pool 0 ({bf16 16 4}): "
                    "a rotation's pools share one layout"),
        ]:
            with self.assertRaises(Aborted) as e:
                call(self.svc, "Bench", kv.BenchRequest(store=self.stores[0], rotation=rotation, iterations=1))
            self.assertEqual((e.exception.code, e.exception.message), (grpc.StatusCode.INVALID_ARGUMENT, want))
        with self.assertRaises(Aborted) as e:
            call(self.svc, "Bench", kv.BenchRequest(rotation=self.stores[1:], iterations=1, empty=True))
        self.assertIn("a rotation of 2 stores without a store", e.exception.message)
        self.assertEqual(self.k.launched, [])


if __name__ == "__main__":
    unittest.main()
