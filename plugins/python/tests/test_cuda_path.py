"""The SDK's CUDA path end to end on stand-ins for torch and libcuda
(fake_torch.py): attach by IPC handle and by file descriptor, eager and
graph stores, a graph that replays a host count, reads and transfers
through the example plugins' torch code, benches, detach. It checks the
SDK's plumbing, not CUDA: gpu_test.sh runs the real thing."""

import os
import sys
import unittest

import numpy as np

import fake_torch
from helpers import ShmArena, call, kv, load_plugin, pb, pool_desc, service
from test_fdpass import serve_once

import kvharness_sdk.arena as arena_mod

D, P, SLOTS = 16, 4, 64
POOL = SLOTS * 2 * D
STAGING = 16384
_saved = {}


def setUpModule():
    _saved["torch"] = sys.modules.get("torch")
    _saved["driver"] = arena_mod._driver
    _saved["drv"] = fake_torch.install()


def tearDownModule():
    if _saved["torch"] is None:
        sys.modules.pop("torch", None)
    else:
        sys.modules["torch"] = _saved["torch"]
    arena_mod._driver = _saved["driver"]


def cuda_arena(a: ShmArena):
    return kv.Arena(backend=pb.BACKEND_CUDA, device=0, size=a.size, ipc_handle=a.path.encode().ljust(64, b"\0"))


def attach(svc, a, pools=None, desc=None, variant=""):
    pools = pools or [pool_desc("case", "bf16", D, P, SLOTS, 4096, POOL), pool_desc("repeat", "bf16", D, P, SLOTS, 8192, POOL)]
    return call(svc, "Attach", kv.AttachRequest(arena=desc or cuda_arena(a), pools=pools, variant=variant,
                                                staging=kv.Window(offset=STAGING, size=16384)))


def stage(a, slots, seed=1):
    rows = (np.arange(len(slots) * D, dtype=np.uint16) + seed).reshape(len(slots), D) & 0x3FFF
    a.write(STAGING, rows)
    a.write(STAGING + rows.nbytes, np.array(slots, np.int64))
    return rows, STAGING + rows.nbytes


def pool_rows(a, base=4096):
    return a.read(base, POOL).view(np.uint16).reshape(SLOTS, D)


class TestCUDAStores(unittest.TestCase):
    def setUp(self):
        self.a = ShmArena(1 << 16)
        fake_torch.CUDAGraph.captures = 0

    def tearDown(self):
        self.a.close()

    def test_eager_store_by_ipc_handle(self):
        ts = load_plugin("torchscatter").TorchScatter()
        svc = service(ts)
        g = attach(svc, self.a)
        self.assertEqual(len(g.geometry), 2)
        rows, loc = stage(self.a, [3, 4, 9])
        call(svc, "StoreBatch", kv.StoreBatchRequest(calls=[kv.StoreRequest(pool=0, capacity=3, valid=2, padding=kv.PADDING_COUNT,
                                                                            rows_offset=STAGING, loc_offset=loc)]))
        got = pool_rows(self.a)
        self.assertTrue((got[[3, 4, 9]] == rows).all(), "torchscatter writes every row, padded ones too")
        call(svc, "Detach", kv.DetachRequest())
        self.assertEqual(len(_saved["drv"].closed), 1)

    def test_graph_replays_with_new_inputs(self):
        ts = load_plugin("torchscatter").TorchScatter()
        svc = service(ts)
        attach(svc, self.a)
        for seed, slots in ((1, [1, 2, 3, 4]), (50, [5, 6, 7, 8])):
            rows, loc = stage(self.a, slots, seed)
            call(svc, "Store", kv.StoreRequest(pool=0, capacity=4, valid=2, padding=kv.PADDING_COUNT, rows_offset=STAGING,
                                               loc_offset=loc, graph=True))
            self.assertTrue((pool_rows(self.a)[slots] == rows).all(), f"replay {seed}")
        self.assertEqual(fake_torch.CUDAGraph.captures, 1)

    def test_a_host_count_is_replayed(self):
        k = load_plugin(os.path.join("testdata", "graphonly")).HostCount()
        svc = service(k)
        attach(svc, self.a)
        for graph in (False, True):
            for valid, slots in ((3, [1, 2, 3, 4]), (1, [5, 6, 7, 8])):
                rows, loc = stage(self.a, slots, valid)
                call(svc, "Store", kv.StoreRequest(pool=1, capacity=4, valid=valid, padding=kv.PADDING_COUNT,
                                                   rows_offset=STAGING, loc_offset=loc, graph=graph))
            stored = pool_rows(self.a, 8192)[[6, 7]].any()
            self.assertEqual(stored, graph, "padded rows stored" if stored else "the captured count was not replayed")

    def test_bench_eager_graph_empty_copy_rotation(self):
        ts = load_plugin("torchscatter").TorchScatter()
        svc = service(ts)
        attach(svc, self.a)
        _, loc = stage(self.a, [1, 2])
        st = kv.StoreRequest(pool=0, capacity=2, valid=2, rows_offset=STAGING, loc_offset=loc)
        other = kv.StoreRequest(pool=1, capacity=2, valid=2, rows_offset=STAGING, loc_offset=loc)
        for graph in (False, True):
            st.graph = other.graph = graph
            for kw in ({}, {"mode": kv.BENCH_BATCHED, "batch": 3}, {"cold": True, "flush_bytes": 1 << 12},
                       {"empty": True}, {"copy": True}):
                r = call(svc, "Bench", kv.BenchRequest(store=st, rotation=[other], iterations=2, warmup=1, **kw))
                self.assertEqual((len(r.ns), r.clock, r.device), (2, "cuda-event", "Fake GPU"), kw)
        self.assertEqual(fake_torch.CUDAGraph.captures, 3)  # two stores and the empty kernel

    def test_fd_shared_arena_and_pinned_region(self):
        fd = os.open(self.a.path, os.O_RDWR)
        sock = os.path.join(os.path.dirname(self.a.path), f"kvh-{os.getpid()}.sock")
        t = serve_once(sock, b"\x00", [fd])
        try:
            desc = kv.Arena(backend=pb.BACKEND_CUDA, device=0, size=self.a.size, fd_socket=sock, mapped_size=self.a.size)
            host = ShmArena(1 << 14, pinned=True)
            try:
                ts = load_plugin("torchscatter").TorchScatter()
                svc = service(ts)
                req = kv.AttachRequest(arena=desc, pools=[pool_desc("case", "bf16", D, P, SLOTS, 4096, POOL)],
                                       staging=kv.Window(offset=STAGING, size=16384))
                req.regions.extend([desc, host.desc])
                call(svc, "Attach", req)
                t.join()
                self.assertIn(("fd", self.a.size), fake_torch.Driver.opened)
                self.assertIn(("pinned", host.size), fake_torch.Driver.opened)
                rows, loc = stage(self.a, [7])
                call(svc, "Store", kv.StoreRequest(pool=0, capacity=1, valid=1, rows_offset=STAGING, loc_offset=loc))
                self.assertTrue((pool_rows(self.a)[7] == rows[0]).all())
                call(svc, "Detach", kv.DetachRequest())
            finally:
                host.close()
        finally:
            os.close(fd)
            if os.path.exists(sock):
                os.unlink(sock)


class TestCUDAReadTransfer(unittest.TestCase):
    def setUp(self):
        self.a = ShmArena(1 << 17)

    def tearDown(self):
        self.a.close()

    def read_once(self, desc):
        rng = np.random.default_rng(2)
        k = load_plugin("topkread").TopKRead()
        svc = service(k)
        pools = [pool_desc("read", "fp8-paged", D, P, SLOTS, 4096, SLOTS * (D + 4))]
        call(svc, "Attach", kv.AttachRequest(arena=desc, pools=pools, staging=kv.Window(offset=STAGING, size=16384)))
        self.a.write(4096, rng.integers(0, 0x70, SLOTS * (D + 4), dtype=np.uint8))
        for s in range(SLOTS):  # float32 scales between 0.5 and 1
            page, j = divmod(s, P)
            self.a.write(4096 + page * P * (D + 4) + P * D + 4 * j, np.array([0.5 + s / 128], np.float32))
        self.a.write(STAGING, (rng.integers(0, 0x3FFF, 2 * D)).astype(np.uint16))
        self.a.write(STAGING + 1024, np.array([0, 5, 9], np.int64))
        self.a.write(STAGING + 2048, np.array([3, 8, 1, 60, 33, 7, 2, 9, 0], np.int64))
        call(svc, "Read", kv.ReadRequest(requests=2, k=4, queries_offset=STAGING, indptr_offset=STAGING + 1024,
                                         tokens_offset=STAGING + 2048, out_slots_offset=STAGING + 4096,
                                         out_scores_offset=STAGING + 8192))
        return self.a.read(STAGING + 4096, 64).view(np.int64), self.a.read(STAGING + 8192, 32).view(np.float32)

    def test_read_matches_the_numpy_path(self):
        gpu_slots, gpu_scores = self.read_once(cuda_arena(self.a))
        cpu_slots, cpu_scores = self.read_once(self.a.desc)
        self.assertTrue(np.array_equal(gpu_slots, cpu_slots), (gpu_slots, cpu_slots))
        np.testing.assert_allclose(gpu_scores, cpu_scores, rtol=1e-6)
        self.assertEqual(gpu_slots[4:].tolist().count(-1), 0)

    def transfer_once(self, desc):
        pt = load_plugin("pagetransfer").PageTransfer()
        svc = service(pt)
        pools = [pool_desc("src/L0.kv", "bf16", D, P, SLOTS, 4096, POOL), pool_desc("dst/L0.kv", "bf16", D, P, SLOTS, 8192, POOL)]
        call(svc, "Attach", kv.AttachRequest(arena=desc, pools=pools, staging=kv.Window(offset=STAGING, size=16384)))
        self.a.write(4096, np.arange(POOL, dtype=np.uint32).astype(np.uint8))
        self.a.write(8192, np.zeros(POOL, np.uint8))
        r = call(svc, "Transfer", kv.TransferRequest(buffers=[kv.BufferPair(src_pool=0, dst_pool=1)],
                                                     rooms=[kv.Room(id=3, src_pages=[0, 1, 5], dst_pages=[2, 3, 0])]))
        return [(d.src_offset, d.dst_offset, d.length, d.run) for d in r.descriptors], self.a.read(8192, POOL)

    def test_transfer_matches_the_numpy_path(self):
        gpu = self.transfer_once(cuda_arena(self.a))
        cpu = self.transfer_once(self.a.desc)
        self.assertEqual(gpu[0], cpu[0])
        self.assertEqual(len(gpu[0]), 2)
        self.assertTrue(np.array_equal(gpu[1], cpu[1]) and gpu[1].any())


if __name__ == "__main__":
    unittest.main()
