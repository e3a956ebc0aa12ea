"""Attaches of several regions, and stores at either slot width."""

import unittest

import grpc
import numpy as np

from helpers import Aborted, ShmArena, call, kv, pb, pool_desc, service

from kvharness_sdk import SHM, Geometry, Kernel


class Scatter(Kernel):
    """A correct bf16 store that records the loc dtype it was handed."""

    name, version = "scatter", "1.0.0"
    backends = (SHM,)

    def __init__(self, bits=64):
        self.slot_bits = bits
        self.seen = []

    def geometry(self, variant, head_dim, page_size):
        return [Geometry("bf16", 2 * head_dim, 2 * head_dim * page_size)]

    def store(self, call):
        self.seen.append(call.loc.dtype)
        n = call.valid
        call.pool_rows()[call.loc[:n]] = call.rows[:n]


D, P, SLOTS = 16, 4, 64
POOL = SLOTS * 2 * D


def attach(svc, regions, pool_region=0, staging_region=0):
    req = kv.AttachRequest(arena=regions[0].desc, pools=[pool_desc("case", "bf16", D, P, SLOTS, 4096, POOL, pool_region)],
                           staging=kv.Window(offset=8192, size=4096, region=staging_region))
    if len(regions) > 1:
        req.regions.extend([r.desc for r in regions])
    return call(svc, "Attach", req)


def store(svc, arena, slots, bits=0, staged_bits=None, valid=None):
    """Stages rows and slots at offset 8192 of arena and stores them."""
    c = len(slots)
    rows = (np.arange(c * D, dtype=np.uint16) + 1).reshape(c, D)
    arena.write(8192, rows)
    loc_off = 8192 + rows.nbytes
    arena.write(loc_off, np.array(slots, np.int32 if (staged_bits or bits or 64) == 32 else np.int64))
    call(svc, "Store", kv.StoreRequest(pool=0, capacity=c, valid=c if valid is None else valid, rows_offset=8192,
                                       loc_offset=loc_off, slot_bits=bits, padding=kv.PADDING_COUNT))
    return rows


class TestRegions(unittest.TestCase):
    def setUp(self):
        self.a, self.b = ShmArena(1 << 16), ShmArena(1 << 16)

    def tearDown(self):
        self.a.close()
        self.b.close()

    def test_pool_in_a_second_region(self):
        k = Scatter()
        svc = service(k)
        attach(svc, [self.a, self.b], pool_region=1)
        rows = store(svc, self.a, [3, 9])
        got = self.b.read(4096, POOL).view(np.uint16).reshape(SLOTS, D)
        self.assertTrue((got[3] == rows[0]).all() and (got[9] == rows[1]).all())
        self.assertEqual(np.count_nonzero(self.a.read(4096, POOL)), 0, "the first region's bytes at the pool offset")

    def test_windows_in_different_regions_may_share_offsets(self):
        svc = service(Scatter())
        req = kv.AttachRequest(arena=self.a.desc, pools=[pool_desc("case", "bf16", D, P, SLOTS, 8192, POOL, 1)],
                               staging=kv.Window(offset=8192, size=4096))
        req.regions.extend([self.a.desc, self.b.desc])
        call(svc, "Attach", req)

    def test_refusals(self):
        svc = service(Scatter())
        cases = [
            ("names region 2; the attach has 2", lambda r: r.pools[0].pool.__setattr__("region", 2)),
            ("outside the 65536-byte region 1", lambda r: (r.pools[0].pool.__setattr__("region", 1),
                                                           r.pools[0].pool.__setattr__("offset", 65536 - 1024))),
            ("regions[0] differs from arena", lambda r: r.regions[0].__setattr__("size", 4096)),
            ("region 1: backend BACKEND_UNSPECIFIED", lambda r: r.regions[1].__setattr__("backend", 0)),
            ("region 1: cuda arena: ipc_handle has 0 bytes", lambda r: r.regions[1].__setattr__("backend", pb.BACKEND_CUDA)),
        ]
        for want, edit in cases:
            req = kv.AttachRequest(arena=self.a.desc, pools=[pool_desc("case", "bf16", D, P, SLOTS, 4096, POOL)],
                                   staging=kv.Window(offset=8192, size=4096))
            req.regions.extend([self.a.desc, self.b.desc])
            edit(req)
            with self.assertRaises(Aborted) as e:
                call(svc, "Attach", req)
            self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT, want)
            self.assertIn(want, e.exception.message)

    def test_pinned_region_without_a_gpu_is_plain_shared_memory(self):
        p = ShmArena(1 << 16, pinned=True)
        try:
            svc = service(Scatter())
            attach(svc, [self.a, p], pool_region=1)
            rows = store(svc, self.a, [1])
            self.assertTrue((p.read(4096 + 2 * D, 2 * D).view(np.uint16) == rows[0]).all())
        finally:
            p.close()

    def test_staging_and_pools_overlap_only_within_a_region(self):
        svc = service(Scatter())
        req = kv.AttachRequest(arena=self.a.desc, pools=[pool_desc("case", "bf16", D, P, SLOTS, 4096, POOL)],
                               staging=kv.Window(offset=4096, size=4096))
        with self.assertRaises(Aborted) as e:
            call(svc, "Attach", req)
        self.assertIn("overlaps pool case", e.exception.message)


class TestSlotBits(unittest.TestCase):
    def setUp(self):
        self.a = ShmArena(1 << 16)

    def tearDown(self):
        self.a.close()

    def pool(self):
        return self.a.read(4096, POOL).view(np.uint16).reshape(SLOTS, D)

    def stored_at(self, kernel_bits, staged_bits, slots, dtype):
        """A store staged at staged_bits reaches a kernel of kernel_bits as
        dtype slots and lands in them."""
        k = Scatter(bits=kernel_bits)
        svc = service(k)
        attach(svc, [self.a])
        rows = store(svc, self.a, slots, bits=staged_bits)
        self.assertEqual(k.seen, [np.dtype(dtype)])
        self.assertTrue((self.pool()[slots] == rows).all())

    def test_int32_slots_to_a_kernel_that_reads_int32(self):
        self.stored_at(32, 32, [5, 63, 0], np.int32)

    def test_int64_staging_is_converted_for_an_int32_kernel(self):
        self.stored_at(32, 0, [7, 8], np.int32)  # a harness that does not know slot_bits

    def test_int32_staging_is_converted_for_an_int64_kernel(self):
        self.stored_at(64, 32, [2, 4, 6], np.int64)

    def test_width_and_alignment_are_checked(self):
        svc = service(Scatter(bits=32))
        attach(svc, [self.a])
        base = kv.StoreRequest(pool=0, capacity=2, valid=2, rows_offset=8192, loc_offset=8192 + 4 * D)
        for bits, off, want in [(16, 0, "slot_bits 16: want 32 or 64 (0 means 64)"),
                                (32, 2, "loc: offset 8258 not aligned to 4 bytes"),
                                (64, 4, "loc: offset 8260 not aligned to 8 bytes")]:
            req = kv.StoreRequest()
            req.CopyFrom(base)
            req.slot_bits, req.loc_offset = bits, base.loc_offset + off
            with self.assertRaises(Aborted) as e:
                call(svc, "Store", req)
            self.assertEqual((e.exception.code, e.exception.message), (grpc.StatusCode.INVALID_ARGUMENT, want))
        req = kv.StoreRequest()
        req.CopyFrom(base)
        req.slot_bits, req.loc_offset = 32, base.loc_offset + 4  # 4-aligned is enough for int32
        call(svc, "Store", req)

    def test_padded_rows_are_handed_over_too(self):
        k = Scatter(bits=32)
        svc = service(k)
        attach(svc, [self.a])
        rows = store(svc, self.a, [1, 2, -1], bits=32, valid=2)
        got = self.pool()
        self.assertTrue((got[[1, 2]] == rows[:2]).all() and not got[SLOTS - 1].any())


if __name__ == "__main__":
    unittest.main()
