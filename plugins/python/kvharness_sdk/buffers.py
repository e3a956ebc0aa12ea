"""What the transfer kinds (transfer, pdasync) share, as their wire shares
kvpb.Descriptor: a buffer's two pools and the copies a kernel builds (the
Go SDK's sdk.Buffer and sdk.Descriptor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .kernel import Pool


def pool_pages(p: Pool) -> int:
    """The number of pages of a pool: its slots, a partial last page included."""
    return (p.slots + p.layout.page_size - 1) // p.layout.page_size


@dataclass(frozen=True)
class Buffer:
    """One buffer of a transfer: its pool on the prefill side (src; None on
    a pdasync decode) and on the decode side (dst), its allocation key and
    its page table (the Go SDK's sdk.Buffer)."""

    index: int  # position in the request's buffers: what Descriptor.buffer names
    name: str
    src: Optional[Pool]
    dst: Pool
    alloc: str
    shift: int

    def pages(self) -> int:
        """The number of pages of the buffer's pools (dst's: the one pool
        both sides of a pdasync pair have)."""
        return pool_pages(self.dst)

    def phys(self, page: int) -> int:
        """A room's page in this buffer's physical pages, through its page table."""
        return (page + self.shift) % self.pages()


@dataclass(frozen=True)
class Descriptor:
    """One contiguous copy, as NIXL and Mooncake take them: length bytes
    from offset src of the buffer's src pool's region to offset dst of its
    dst pool's region (with one region, both arena offsets). item_len and
    run say what the kernel believed: the bytes of one page of the buffer
    and how many consecutive pages the copy covers."""

    room: int
    buffer: int
    src: int
    dst: int
    length: int
    item_len: int
    run: int


def descriptor_fields(i: int, d) -> list:
    """A descriptor's fields as the wire carries them; a negative one cannot
    be sent, and is the kernel's fault (ValueError)."""
    fields = [int(d.room), int(d.buffer), int(d.src), int(d.dst), int(d.length), int(d.item_len), int(d.run)]
    if any(f < 0 for f in fields):
        raise ValueError(f"descriptor {i} {d} has a negative field")
    return fields
