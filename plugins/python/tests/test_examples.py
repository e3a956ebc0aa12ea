"""The example stores' CPU twins (the numpy side of indexerstore and
dsv4store) against the SDK's reference quantizer with their declared
recipes, byte by byte, with every other byte of the pool checked
untouched. The reference's default recipe is itself checked against the
harness's encoder (python_test.go, TestFP8ReferenceMatchesHarness); the
Triton kernels run the same layout logic on the GPU (gpu_test.sh)."""

import os
import sys
import unittest

import numpy as np

from helpers import ROOT

from kvharness_sdk import PAD_COUNT, Layout, Pool, StoreCall, fp8

sys.path.insert(0, os.path.join(ROOT, "indexerstore"))
sys.path.insert(0, os.path.join(ROOT, "dsv4store"))

import dsv4store_host as dsv4  # noqa: E402
import indexerstore_host as indexer  # noqa: E402


def bf16(x) -> np.ndarray:
    """float32 values to bf16 bit patterns (round to nearest even)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def draw_rows(rng, c, d):
    """Normal rows at many magnitudes, tiny rows (below 1e-4), zero rows."""
    rows = []
    for i in range(c):
        kind = i % 4
        if kind == 0:
            rows.append(np.zeros(d, np.float32))
        elif kind == 1:
            rows.append(rng.uniform(-9e-5, 9e-5, d))
        else:
            rows.append(rng.standard_normal(d) * 2.0 ** rng.integers(-12, 12))
    return bf16(np.array(rows, np.float32))


def store_call(layout, rows, loc, valid, pool_bytes):
    c = len(loc)
    slots = pool_bytes.size // (layout.head_dim + 4) if layout.name == "fp8-paged" else 64
    pool = Pool("case", layout, slots, 0, pool_bytes.size)
    return StoreCall(variant="", backend="shm", pool=pool, arena=pool_bytes, capacity=c, valid=valid,
                     padding=PAD_COUNT, rows=rows, loc=np.asarray(loc, np.int64), slot_bits=64)


class TestIndexerStore(unittest.TestCase):
    D, P = 128, 64

    def run_store(self, eps, reciprocal):
        rng = np.random.default_rng(3)
        lay = Layout("fp8-paged", self.D, self.P)
        page = self.P * (self.D + 4)
        mem = rng.integers(0, 256, 4 * page, dtype=np.uint8)
        before = mem.copy()
        loc = [0, 63, 64, 130, 255, 17, 5, 9]  # page edges; the last two rows are padding
        rows = draw_rows(rng, len(loc), self.D)
        indexer.store_fp8_paged(store_call(lay, rows, loc, 6, mem), eps, reciprocal)
        return mem, before, rows, loc

    def test_bytes_are_the_recipe_at_the_layout_offsets(self):
        for eps, reciprocal in ((1e-8, True), (1e-4, False)):
            mem, before, rows, loc = self.run_store(eps, reciprocal)
            codes, scales = fp8.quantize(rows[:6], eps=np.float32(eps), reciprocal=reciprocal)
            want = before.copy()
            page = self.P * (self.D + 4)
            for i, slot in enumerate(loc[:6]):  # written out slot by slot, from the layout's definition
                p, j = divmod(slot, self.P)
                want[p * page + j * self.D : p * page + (j + 1) * self.D] = codes[i]
                at = p * page + self.P * self.D + 4 * j
                want[at : at + 4] = scales[i : i + 1].view(np.uint8)
            self.assertTrue(np.array_equal(mem, want), f"eps {eps}: {np.count_nonzero(mem != want)} bytes differ")

    def test_eps_changes_tiny_and_zero_rows_only(self):
        a, _, rows, _ = self.run_store(1e-8, False)
        b, _, _, _ = self.run_store(1e-4, False)
        s8 = fp8.scales(rows[:6], np.float32(1e-8))
        s4 = fp8.scales(rows[:6], np.float32(1e-4))
        self.assertEqual(list(np.nonzero(s8 != s4)[0]), [0, 1, 4, 5])  # zero and tiny rows
        self.assertFalse(np.array_equal(a, b))

    def test_reciprocal_is_what_it_says(self):
        rows = bf16(np.array([[3.0, 1.0, -7.0, 0.5]], np.float32))
        codes, s = fp8.quantize(rows, reciprocal=True)
        y = fp8.bf16_to_f32(rows) * (np.float32(1) / s[:, None])
        self.assertTrue(np.array_equal(codes, fp8.e4m3_rne(y.astype(np.float32))))


class TestDSV4Store(unittest.TestCase):
    P = 64

    def test_exponent_rule_is_frexp_rounding(self):
        """The kernel's division-free exponent equals rounding fl(a / 448) up
        to a power of two (the harness's rule), on random magnitudes and on
        the edges: a = 448·2^k exactly and its float32 neighbours."""
        rng = np.random.default_rng(5)
        a = np.abs(rng.standard_normal(200_000).astype(np.float32)) * np.float32(2.0) ** rng.integers(-60, 60, 200_000)
        edges = np.float32(448) * np.float32(2.0) ** np.arange(-60, 60, dtype=np.float32)
        a = np.concatenate([a, edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf), [np.float32(1e-8)]])
        a = a[(a >= np.float32(1e-8)) & np.isfinite(a)].astype(np.float32)
        want = fp8.ue8m0_exponents((a / np.float32(448)).astype(np.float32))
        self.assertTrue(np.array_equal(dsv4.exponents(a), want))

    def test_page_bytes(self):
        self.assertEqual([dsv4.page_bytes(p) for p in (1, 64, 256)], [1152, 37440, 149760])

    def run_store(self, eps, zero_pad):
        rng = np.random.default_rng(9)
        pb = dsv4.page_bytes(self.P)
        mem = np.full(3 * pb, 0xAB, np.uint8)
        loc = np.array([0, 63, 64, 127, 150, 3], np.int32)
        rows = draw_rows(rng, len(loc), 512)
        lay = Layout("dsv4-main", 512, self.P)
        call = StoreCall(variant="", backend="shm", pool=Pool("case", lay, 3 * self.P, 0, mem.size), arena=mem,
                         capacity=6, valid=5, padding=PAD_COUNT, rows=rows, loc=loc, slot_bits=32)
        dsv4.store_dsv4(call, eps, zero_pad)
        return mem, rows, loc

    def test_records_pad_and_padding(self):
        for eps, zero_pad in ((1e-8, False), (1e-4, True)):
            mem, rows, loc = self.run_store(eps, zero_pad)
            codes, exps = fp8.quantize_ue8m0(rows[:5, :448], 64, eps=np.float32(eps))
            want = np.full_like(mem, 0xAB)
            pb = dsv4.page_bytes(self.P)
            for i, slot in enumerate(loc[:5]):
                p, j = divmod(int(slot), self.P)
                rec = p * pb + j * 576
                want[rec : rec + 448] = codes[i]
                want[rec + 448 : rec + 576] = rows[i, 448:].view(np.uint8)
                sc = p * pb + self.P * 576 + j * 8
                want[sc : sc + 7] = exps[i]
                if zero_pad:
                    want[sc + 7] = 0
            self.assertTrue(np.array_equal(mem, want), f"eps {eps}: {np.count_nonzero(mem != want)} bytes differ")
            if not zero_pad:  # every pad byte of the pool is as it was
                pads = [p * pb + self.P * 576 + j * 8 + 7 for p in range(3) for j in range(self.P)]
                self.assertTrue((mem[pads] == 0xAB).all())


if __name__ == "__main__":
    unittest.main()
