"""pagetableappend: FlashInfer's ``append_paged_kv_cache`` in PyTorch (numpy
on the CPU), for a kernel author to copy: K and V rows appended by page
table into a paged cache of NHD or HND pages.

The cache is one tensor per layer, ``(max_pages, 2, P, H, D)`` (NHD) or
``(max_pages, 2, H, P, D)`` (HND), bf16: a page's K, then its V. The call
says where each row goes by request and position, not by slot:

    request b's pages   kv_indices[kv_indptr[b] : kv_indptr[b + 1]]
    its length          (pages - 1) * P + kv_last_page_len[b]   (0: no pages)
    row i               request batch_indices[i], position positions[i]
    stored at           page kv_indices[kv_indptr[b] + pos // P], entry pos % P

A row whose position is not below its request's length is padding (a
captured batch's rows past the real tokens, pointing at padded requests of
no pages or past a request's end) and is not stored: that bound is the
whole of this kernel's padding logic. kvharness checks it with
``kvharness check --plugin plugins/python/pagetableappend/kvharness-plugin.json``
(page-table addressing, which it declares alone, is the default).

Variant ``last-page-overrun`` bounds each request by kv_last_page_len + 1:
the row at a request's length lands one entry past its last page's tokens.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kvharness_sdk import CUDA, PAGE_TABLE, SHM, Geometry, Kernel, Variant, serve  # noqa: E402

LAYOUTS = ("flashinfer-nhd", "flashinfer-hnd")


def cache_view(call, lib):
    """The pool as the engine's cache tensor: (pages, 2, P, H, D) for NHD,
    (pages, 2, H, P, D) for HND; bf16 on cuda, uint16 bit patterns on shm."""
    lay = call.pool.layout
    h, d, p = lay.heads, lay.head_dim, lay.page_size
    pages = call.pool.slots // p
    raw = call.pool_bytes()[: pages * 2 * p * h * d * 2]
    if lay.name == "flashinfer-nhd":
        shape = (pages, 2, p, h, d)
    else:
        shape = (pages, 2, h, p, d)
    if lib == "torch":
        import torch

        return raw.view(torch.bfloat16).view(*shape)
    import numpy as np

    return raw.view(np.uint16).reshape(shape)


def append(call, overrun=0):
    """append_paged_kv_cache over call's page table: rows (C, 2·H·D), K then V."""
    lay, t = call.pool.layout, call.page_table
    h, d, p = lay.heads, lay.head_dim, lay.page_size
    if call.backend == CUDA:
        import torch as xp

        lib = "torch"

        def long(a):
            return a.long()
    else:
        import numpy as xp

        lib = "numpy"

        def long(a):
            return a.astype(xp.int64)

    b, pos = long(t.batch_indices), long(t.positions)
    indptr, last = long(t.kv_indptr), long(t.kv_last_page_len)
    pages = indptr[b + 1] - indptr[b]
    length = xp.where(pages > 0, (pages - 1) * p + last[b] + overrun, 0)
    keep = (pos >= 0) & (pos < length)
    b, pos = b[keep], pos[keep]
    page = long(t.kv_indices)[indptr[b] + pos // p]
    entry = pos % p
    rows = call.rows[keep].reshape(-1, 2, h, d)
    cache = cache_view(call, lib)
    if lay.name == "flashinfer-nhd":
        cache[page, :, entry] = rows  # (n, 2, H, D): page and entry index apart, so they lead
    else:
        cache[page, :, :, entry] = rows


class PageTableAppend(Kernel):
    name = "pagetableappend"
    version = "1.0.0"
    doc = "FlashInfer append_paged_kv_cache in PyTorch (numpy on the CPU): K/V rows appended by page table into NHD or HND pages"
    backends = (SHM, CUDA)
    addressing = (PAGE_TABLE,)
    variants = (
        Variant("last-page-overrun", "bounds each request by kv_last_page_len + 1: the row at its length is stored one entry past its last page's tokens"),
    )

    def geometry(self, variant, head_dim, page_size, heads=1):
        if head_dim > 256:
            return []  # FlashInfer's attention kernels read head dims up to 256
        n = 4 * heads * head_dim  # K and V, bf16
        return [Geometry(name, n, n * page_size) for name in LAYOUTS]

    def store(self, call):
        if call.page_table is None:
            raise ValueError("pagetableappend takes page-table calls only (it declares addressing page-table)")
        if call.pool.layout.name not in LAYOUTS:
            raise ValueError(f"pagetableappend stores {', '.join(LAYOUTS)}, not {call.pool.layout.name}")
        append(call, overrun=1 if call.variant == "last-page-overrun" else 0)


if __name__ == "__main__":
    serve(PageTableAppend())
