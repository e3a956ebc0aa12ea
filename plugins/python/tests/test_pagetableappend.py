"""pagetableappend (FlashInfer's append_paged_kv_cache, numpy on the CPU)
against a token-by-token reference written from the cache's shape, with
every other byte of the pool checked untouched; and the SDK's page-table
calls: described, handed over, refused when malformed or to a kernel of
slot lists."""

import unittest

import grpc
import numpy as np

from helpers import Aborted, ShmArena, call, kv, load_plugin, service

from kvharness_sdk import PAD_PAGE_TABLE, SHM, Geometry, Kernel, Layout, PageTable, Pool, StoreCall

pta = load_plugin("pagetableappend")

H, D, P, PAGES = 3, 8, 4, 12
TOKEN = 4 * H * D  # K and V, bf16


def table():
    """Three requests and a padded one: request 1 shares request 0's first
    page (a cached prefix), request 2's last page is empty; rows 4..6 are
    padding (a request of no pages, and positions at two requests' ends)."""
    return dict(kv_indptr=[0, 2, 4, 6, 6], kv_indices=[7, 3, 7, 9, 5, 2], kv_last_page_len=[3, 2, 0, 0],
                batch_indices=[0, 0, 1, 2, 3, 0, 2], positions=[5, 6, 5, 3, 0, 7, 4])


def reference(mem, name, t, rows, valid_rows):
    """What the cache must hold: each valid row's K and V heads written one
    element run at a time at the engine's index, (page, kv, entry, head) for
    NHD, (page, kv, head, entry) for HND."""
    want = mem.copy()
    for i in valid_rows:
        b, pos = t["batch_indices"][i], t["positions"][i]
        page = t["kv_indices"][t["kv_indptr"][b] + pos // P]
        entry = pos % P
        for kv_ in range(2):
            for h in range(H):
                if name == "flashinfer-nhd":
                    elem = ((page * 2 + kv_) * P + entry) * H + h
                else:
                    elem = ((page * 2 + kv_) * H + h) * P + entry
                src = rows[i, (kv_ * H + h) * D : (kv_ * H + h + 1) * D]
                want[elem * D * 2 : (elem + 1) * D * 2] = src.view(np.uint8)
    return want


def run(name, variant=""):
    rng = np.random.default_rng(5)
    mem = rng.integers(0, 256, PAGES * P * TOKEN, dtype=np.uint8)
    t = table()
    c = len(t["batch_indices"])
    rows = rng.integers(0, 1 << 16, (c, 2 * H * D), dtype=np.uint64).astype(np.uint16)
    pool = Pool("case", Layout(name, D, P, H), PAGES * P, 0, mem.size)
    got = mem.copy()
    arr = {k: np.asarray(v, np.int32) for k, v in t.items()}
    pt = PageTable(P, arr["kv_indptr"], arr["kv_indices"], arr["kv_last_page_len"], arr["batch_indices"], arr["positions"])
    sc = StoreCall(variant=variant, backend=SHM, pool=pool, arena=got, capacity=c, valid=4, padding=PAD_PAGE_TABLE,
                   rows=rows, loc=np.full(c, -1, np.int64), row_elems=2 * H * D, page_table=pt)
    pta.PageTableAppend().store(sc)
    return mem, got, t, rows


class TestPageTableAppend(unittest.TestCase):
    def test_layouts_match_the_reference(self):
        for name in pta.LAYOUTS:
            mem, got, t, rows = run(name)
            want = reference(mem, name, t, rows, range(4))
            bad = np.flatnonzero(got != want)
            self.assertEqual(bad.size, 0, f"{name}: {bad.size} bytes differ, first at {bad[:4]}")

    def test_overrun_writes_the_row_at_a_requests_length(self):
        # Rows 5 and 6 sit at requests 0's and 2's lengths: the overrun
        # stores them (into page 3 entry 3, and request 2's empty last page).
        for name in pta.LAYOUTS:
            mem, got, t, rows = run(name, "last-page-overrun")
            want = reference(mem, name, t, rows, [0, 1, 2, 3, 5, 6])
            self.assertTrue(np.array_equal(got, want), name)
            self.assertFalse(np.array_equal(got, reference(mem, name, t, rows, range(4))), name)


class SlotsOnly(Kernel):
    name, version = "slotsonly", "1.0.0"
    backends = (SHM,)

    def geometry(self, variant, head_dim, page_size, heads=1):
        return [Geometry("flashinfer-nhd", 4 * heads * head_dim, 4 * heads * head_dim * page_size)]

    def store(self, call):
        raise AssertionError("never called")


class TestPageTableCalls(unittest.TestCase):
    POOL_OFF, STAGE_OFF = 4096, 65536

    def setUp(self):
        self.a = ShmArena(1 << 17)

    def tearDown(self):
        self.a.close()

    def attach(self, svc):
        pool = kv.PoolDesc(name="case", layout=kv.LayoutRef(name="flashinfer-nhd", head_dim=D, page_size=P, heads=H),
                           slots=PAGES * P, pool=kv.Window(offset=self.POOL_OFF, size=PAGES * P * TOKEN))
        call(svc, "Attach", kv.AttachRequest(arena=self.a.desc, pools=[pool], staging=kv.Window(offset=self.STAGE_OFF, size=16384)))

    def store(self, svc, **edit):
        t = table()
        t.update(edit)
        c = len(t["batch_indices"])
        rows = np.arange(c * 2 * H * D, dtype=np.uint16).reshape(c, 2 * H * D)
        self.a.write(self.STAGE_OFF, rows)
        loc_off = self.STAGE_OFF + rows.nbytes
        self.a.write(loc_off, np.full(c, -1, np.int64))
        call(svc, "Store", kv.StoreRequest(pool=0, capacity=c, valid=4, rows_offset=self.STAGE_OFF, loc_offset=loc_off,
                                           padding=kv.PADDING_PAGE_TABLE, row_elems=2 * H * D, page_table=kv.PageTable(**t)))
        return rows

    def test_described_and_stored(self):
        svc = service(pta.PageTableAppend())
        d = call(svc, "Describe", kv.DescribeRequest(head_dim=D, page_size=P, heads=H))
        self.assertEqual(list(d.addressing), [kv.ADDRESSING_PAGE_TABLE])
        self.attach(svc)
        before = self.a.read(self.POOL_OFF, PAGES * P * TOKEN)
        rows = self.store(svc)
        got = self.a.read(self.POOL_OFF, PAGES * P * TOKEN)
        self.assertTrue(np.array_equal(got, reference(before, "flashinfer-nhd", table(), rows, range(4))))

    def test_malformed_tables_are_refused(self):
        svc = service(pta.PageTableAppend())
        self.attach(svc)
        for edit, want in [(dict(kv_indices=[7, 3, 7, 9, 5, PAGES]), "outside the pool's"),
                           (dict(kv_indptr=[0, 2, 1, 6, 6]), "kv_indptr decreases"),
                           (dict(batch_indices=[0, 0, 1, 2, 4, 0, 2]), "outside the 4 requests"),
                           (dict(kv_last_page_len=[3, 2, 0]), "3 kv_last_page_len for 4 requests")]:
            with self.assertRaises(Aborted) as e:
                self.store(svc, **edit)
            self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(want, e.exception.message)

    def test_a_kernel_of_slot_lists_refuses_a_page_table(self):
        svc = service(SlotsOnly())
        d = call(svc, "Describe", kv.DescribeRequest(head_dim=D, page_size=P, heads=H))
        self.assertEqual(list(d.addressing), [kv.ADDRESSING_SLOTS])
        self.attach(svc)
        with self.assertRaises(Aborted) as e:
            self.store(svc)
        self.assertIn("declares slot lists only", e.exception.message)


if __name__ == "__main__":
    unittest.main()
