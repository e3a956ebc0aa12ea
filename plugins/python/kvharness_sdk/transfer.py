"""The transfer kind: its service (Transfer), a prefill → decode page
transfer checked as the Go SDK checks it (harness/sdk/transfer), with the
kernel's view of it (:class:`TransferCall`), its buffers paired from the
pools' buffer descriptions (allocation and page table: :class:`PoolBuffer`).

A transfer kernel builds descriptors the way a serving engine does (NIXL,
Mooncake: one contiguous copy each, src = base + page × item_len, length =
item_len × run), executes them (:meth:`TransferCall.copy`, or its own
transport) and returns them; the harness checks both the bytes and the
descriptors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

from ._gen import transfer_pb2, transfer_pb2_grpc
from .attach import buffer_of, go_quote
from .buffers import Buffer, Descriptor, descriptor_fields, pool_pages  # noqa: F401  (Descriptor: re-exported)
from .calls import run_kernel, sync_or_fault
from .errors import RpcError, aborted, bad_request, precondition, unimplemented
from .kernel import CUDA, SHM, SIDE_DST, SIDE_SRC, Pool, Variant
from .kind import Kind


# TransferBuffer is one buffer of a transfer (buffers.Buffer).
TransferBuffer = Buffer


@dataclass(frozen=True)
class TransferRoom:
    """One request: its i-th page on the prefill side, src[i], goes to
    dst[i] on the decode side, in every buffer. Pages are logical: each
    buffer maps them through its page table."""

    id: int
    src: Sequence[int]
    dst: Sequence[int]


@dataclass
class TransferCall:
    """One transfer: copy every room's pages of every buffer from its
    prefill pool to its decode pool. ``regions`` are the attach's memory
    (numpy on shm, torch on cuda; ``arena`` is the first), ``pools`` every
    attached pool, both sides: the memory an engine registers."""

    variant: str
    backend: str
    arena: Any
    regions: Sequence[Any]
    pools: Sequence[Pool]
    buffers: List[TransferBuffer]
    rooms: List[TransferRoom]
    stream: Any = None
    device: Optional[int] = None

    def copy(self, ds: Sequence[Descriptor]) -> None:
        """Executes descriptors the way a transfer engine does: one copy
        each, in order, trusting every offset (on the GPU one
        device-to-device copy per descriptor on the stream). It refuses only
        a copy that leaves its region (the real engine would fault); a copy
        to the wrong place inside it is the harness's to find."""
        spans = [self._spans(i, d) for i, d in enumerate(ds)]
        for (sm, s0), (dm, d0), n in spans:
            src, dst = sm[s0 : s0 + n], dm[d0 : d0 + n]
            if self.backend == CUDA:
                if sm is dm and s0 < d0 + n and d0 < s0 + n:
                    src = src.clone()  # an overlapping copy moves as memmove would
                dst.copy_(src)
            else:
                dst[...] = src  # numpy copies through a temporary when the two overlap

    def _spans(self, i: int, d: Descriptor):
        b = self.buffers[d.buffer] if 0 <= d.buffer < len(self.buffers) else None
        sr, dr = (b.src.region, b.dst.region) if b is not None else (0, 0)
        sm, dm = self.regions[sr], self.regions[dr]
        for off, mem, r in ((d.src, sm, sr), (d.dst, dm, dr)):
            size = _size(mem)
            if d.length < 0 or off < 0 or off > size - d.length:
                where = "arena" if r == 0 else f"region {r}"
                raise ValueError(f"descriptor {i} {d} leaves the {size}-byte {where}")
        return (sm, d.src), (dm, d.dst), d.length


def _size(mem) -> int:
    return mem.numel() if hasattr(mem, "numel") else mem.size


def _layout_v(l) -> str:
    """A layout as Go's %+v prints sdk.Layout."""
    return f"{{Name:{l.name} HeadDim:{l.head_dim} PageSize:{l.page_size} Heads:{l.heads}}}"


def _buffer(att, i: int, bp) -> TransferBuffer:
    n = len(att.pools)
    if bp.src_pool >= n or bp.dst_pool >= n or bp.src_pool == bp.dst_pool:
        raise bad_request(f"buffer {i}: pools {bp.src_pool} → {bp.dst_pool}; want two different pools of the {n} attached")
    src, dst = att.pools[bp.src_pool], att.pools[bp.dst_pool]
    try:
        sn = buffer_of(src)
        dn = buffer_of(dst)
    except ValueError as e:
        raise bad_request(f"buffer {i}: {e}")
    if sn.side != SIDE_SRC or dn.side != SIDE_DST or sn.name != dn.name:
        raise bad_request(f"buffer {i} pairs pool {go_quote(src.name)} with {go_quote(dst.name)}; "
                          "want buffer B's src pool with its dst pool")
    if src.layout != dst.layout or src.slots != dst.slots or src.layout.page_size < 1:
        raise bad_request(f"buffer {sn.name}: the two sides differ ({_layout_v(src.layout)}, {src.slots} slots vs "
                          f"{_layout_v(dst.layout)}, {dst.slots} slots)")
    return TransferBuffer(i, sn.name, src, dst, sn.alloc_key, sn.shift)


def _room(i: int, r, pages: int) -> TransferRoom:
    if len(r.src_pages) != len(r.dst_pages):
        raise bad_request(f"room {i}: {len(r.src_pages)} source and {len(r.dst_pages)} destination pages")
    for s, d in zip(r.src_pages, r.dst_pages):
        if s >= pages or d >= pages:
            raise bad_request(f"room {i}: page pair {s} → {d} outside the {pages} pages of a buffer")
    return TransferRoom(r.id, tuple(r.src_pages), tuple(r.dst_pages))


def check_transfer(att, req):
    """Each buffer pairs a src pool with the dst pool of the same buffer and
    layout, and every room's pages exist in every buffer."""
    if len(req.buffers) == 0:
        raise bad_request("transfer of no buffers")
    buffers = [_buffer(att, i, bp) for i, bp in enumerate(req.buffers)]
    pages = min((b.pages() for b in buffers), default=math.inf)
    rooms = [_room(i, r, pages) for i, r in enumerate(req.rooms)]
    for b in buffers:
        att.kernel_region(f"pool {b.src.name}", b.src.region)
        att.kernel_region(f"pool {b.dst.name}", b.dst.region)
    return buffers, rooms


def descriptors_pb(ds) -> "transfer_pb2.TransferResponse":
    """The kernel's answer. A negative field cannot be sent, and is the
    kernel's fault."""
    out = transfer_pb2.TransferResponse()
    for i, d in enumerate(ds):
        try:
            fields = descriptor_fields(i, d)
        except ValueError as e:
            raise aborted(f"transfer kernel failed: {e}") from None
        out.descriptors.add(room=fields[0], buffer=fields[1], src_offset=fields[2], dst_offset=fields[3],
                            length=fields[4], item_len=fields[5], run=fields[6])
    return out


def run_transfer(kernel, att, req):
    """Checks the request, runs the kernel on the attached backend and
    answers its descriptors; on CUDA it waits for the stream first (even
    when the kernel failed half way), so the harness reads finished
    copies."""
    if att is None:
        raise precondition("transfer before attach")
    buffers, rooms = check_transfer(att, req)
    call = TransferCall(variant=att.variant, backend=att.backend, arena=att.mem(0), regions=att.mems(),
                        pools=list(att.pools), buffers=buffers, rooms=rooms, device=att.device)
    if att.backend == CUDA:
        if not kernel.has_transfer():
            raise unimplemented(f"{kernel.name} has no CUDA transfer kernel (it defines no transfer): "
                                "transfer with the shm backend (--backend cpu)")
        call.stream = att.ctx.stream
        err, ds = None, None
        with att.ctx.context():
            try:
                ds = run_kernel(kernel.transfer, call, "transfer")
            except RpcError as e:
                err = e
        sync_or_fault(att, "transfer", err)
        if err is not None:
            raise err
        return descriptors_pb(ds or ())
    if SHM not in kernel.backends or not kernel.has_transfer():
        raise unimplemented(f"{kernel.name} has no transfer kernel for host memory")
    return descriptors_pb(run_kernel(kernel.transfer, call, "transfer") or ())


def transfer_variant(name: str, doc: str) -> Variant:
    """A variant that changes only the transfer kernel."""
    return Variant(name, doc, kernel=KIND.name)


class TransferServicer(transfer_pb2_grpc.TransferServicer):
    """The transfer service on the plugin's service ``core``."""

    def __init__(self, core):
        self.core = core

    def Transfer(self, request, context):
        return self.core.rpc(context, self.core.locked, run_transfer, self.core.k, self.core.att, request)


KIND = Kind(transfer_pb2.DESCRIPTOR.services_by_name["Transfer"], lambda k: k.has_transfer(), TransferServicer,
            transfer_pb2_grpc.add_TransferServicer_to_server)
