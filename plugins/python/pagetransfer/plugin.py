"""pagetransfer: a prefill → decode KV page transfer as serving engines'
Python connectors build it (SGLang's NIXL and Mooncake connectors): for
every buffer and every room, one descriptor per run of pages contiguous on
both sides, from the buffer's registered base, src = base + page ×
item_len, length = item_len × run, with item_len the buffer's bytes per
page; then the descriptors are executed (numpy copies on the CPU, one
device-to-device copy each on the GPU).

Pages are logical: each buffer maps a room's pages through its own page
table (the shift its pool name carries). Page sizes come from the layouts'
definitions, not from the harness.

Variant:
- token-item-len (transfer): item_len is a token's bytes instead of a
  page's (sglang #26490): every page but the first lands at the wrong
  offset and is copied short.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
_here = os.path.dirname(os.path.abspath(__file__))
if os.path.isdir(os.path.join(_here, "..", "kvharness_sdk")):  # in the source tree; else the installed SDK
    sys.path.insert(0, os.path.join(_here, ".."))

from kvharness_sdk import CUDA, SHM, Descriptor, Geometry, Kernel, serve, transfer_variant  # noqa: E402

FIXED_DIMS = {"dsv4-main": 512}


def token_bytes(name: str, d: int) -> int:
    return {"bf16": 2 * d, "fp8-paged": d + 4, "fp8-rows": d + 4, "dsv4-main": 584}[name]


def page_bytes(name: str, d: int, p: int) -> int:
    """A page's bytes: P tokens, dsv4-main's padded to a multiple of 576."""
    if name == "dsv4-main":
        return -(-p * 584 // 576) * 576
    return token_bytes(name, d) * p


def runs(src_pages, dst_pages):
    """(src, dst, n) runs of pages consecutive on both sides, in order."""
    out, i = [], 0
    while i < len(src_pages):
        n = 1
        while i + n < len(src_pages) and src_pages[i + n] == src_pages[i] + n and dst_pages[i + n] == dst_pages[i] + n:
            n += 1
        out.append((src_pages[i], dst_pages[i], n))
        i += n
    return out


class PageTransfer(Kernel):
    name = "pagetransfer"
    version = "1.0.0"
    doc = "descriptor-based prefill → decode page transfer (one descriptor per contiguous run), in numpy and PyTorch"
    backends = (SHM, CUDA)
    variants = (transfer_variant("token-item-len", "item_len is a token's bytes, not a page's (sglang #26490)"),)

    def geometry(self, variant, head_dim, page_size):
        out = []
        for name in ("bf16", "fp8-paged", "fp8-rows", "dsv4-main"):
            if FIXED_DIMS.get(name, head_dim) != head_dim:
                continue
            out.append(Geometry(name, token_bytes(name, head_dim), page_bytes(name, head_dim, page_size)))
        return out

    def item_len(self, variant, layout) -> int:
        if variant == "token-item-len":
            return token_bytes(layout.name, layout.head_dim)
        return page_bytes(layout.name, layout.head_dim, layout.page_size)

    def descriptors(self, call):
        out = []
        for b in call.buffers:
            item = self.item_len(call.variant, b.src.layout)
            for room in call.rooms:
                src = [b.phys(p) for p in room.src]
                dst = [b.phys(p) for p in room.dst]
                for s, d, n in runs(src, dst):
                    out.append(Descriptor(room=room.id, buffer=b.index, src=b.src.base + s * item,
                                          dst=b.dst.base + d * item, length=n * item, item_len=item, run=n))
        return out

    def transfer(self, call):
        ds = self.descriptors(call)
        call.copy(ds)
        return ds


if __name__ == "__main__":
    serve(PageTransfer())
