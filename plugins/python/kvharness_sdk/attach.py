"""One attachment: the regions an Attach mapped, the pools and staging
window in them, and (on the GPU) the stream, graphs and bench state of the
attach. The checks on an AttachRequest live here too, with the Go SDK's
messages (harness/sdk/server.go, attach_cuda.go).
"""

from __future__ import annotations

import json
from typing import NamedTuple

from . import protocol as pb
from .arena import DeviceContext, DeviceRegion, HostRegion, close_all
from .errors import bad_request
from .kernel import CUDA, SHM, SIDE_DST, SIDE_SRC, Layout, Pool, PoolBuffer

kv = pb.kv

BACKENDS = {pb.BACKEND_SHM: SHM, pb.BACKEND_CUDA: CUDA}


def go_quote(s: str) -> str:
    """s quoted as Go's %q does (for printable text), so messages read the
    same from a Python plugin as from a Go one."""
    return json.dumps(s, ensure_ascii=False)


def backend_name(b: int) -> str:
    return kv.Backend.Name(b) if b in kv.Backend.values() else str(b)


class Window(NamedTuple):
    """A byte range of one memory region."""

    off: int
    size: int
    region: int = 0

    @property
    def end(self) -> int:
        return self.off + self.size


def regions_of(req) -> list:
    """The attach's regions: AttachRequest.regions, or the arena alone."""
    if len(req.regions) == 0:
        return [req.arena]
    if req.regions[0] != req.arena:
        raise bad_request("regions[0] differs from arena; the first region must be the arena itself")
    return list(req.regions)


def check_shared(a, label: str = "cuda arena") -> None:
    """A CUDA region names either a 64-byte IPC handle or a socket with a
    mapped size that covers it."""
    if a.fd_socket and len(a.ipc_handle):
        raise bad_request(f"{label}: both ipc_handle and fd_socket are set; want one")
    if a.fd_socket and a.mapped_size < a.size:
        raise bad_request(f"{label}: mapped_size {a.mapped_size} is less than size {a.size}")
    if not a.fd_socket and len(a.ipc_handle) != 64:
        raise bad_request(
            f"{label}: ipc_handle has {len(a.ipc_handle)} bytes; want the 64-byte CUipcMemHandle from cuIpcGetMemHandle")


def check_regions(regions) -> None:
    """Every region after the first names a backend this SDK maps, and
    every CUDA region a way to share it."""
    for i, a in enumerate(regions):
        if i > 0 and a.backend not in BACKENDS:
            raise bad_request(f"region {i}: backend {backend_name(a.backend)}; this SDK maps shm and cuda regions")
        if a.backend == pb.BACKEND_CUDA:
            check_shared(a, "cuda arena" if i == 0 else f"region {i}: cuda arena")


def _window(msg, has: bool, sizes) -> Window:
    """A request's window, inside the region it names."""
    if has and msg.region >= len(sizes):
        raise bad_request(f"window {{offset: {msg.offset}, size: {msg.size}, region: {msg.region}}} "
                          f"names region {msg.region}; the attach has {len(sizes)}")
    size = sizes[msg.region] if has else sizes[0]
    if not has or msg.offset + msg.size > size:
        shown = f"{{offset: {msg.offset}, size: {msg.size}}}" if has else "<nil>"
        where = "arena" if not has or msg.region == 0 else f"region {msg.region}"
        raise bad_request(f"window {shown} outside the {size}-byte {where}")
    return Window(msg.offset, msg.size, msg.region)


_SIDES = {kv.SIDE_SRC: SIDE_SRC, kv.SIDE_DST: SIDE_DST}


def pool_buffer(p):
    """A pool's buffer (PoolDesc.buffer), or None when the attach gives none."""
    if not p.HasField("buffer"):
        return None
    b = p.buffer
    return PoolBuffer(_SIDES.get(b.side, ""), b.layer, b.name, b.alloc, b.shift)


def buffer_of(pool):
    """The buffer pool holds, as the Go SDK's sdk.BufferOf: a transfer kind
    pairs its pools by buffer. A pool without one (or without a side)
    raises ValueError naming it."""
    b = pool.buffer
    if b is None or not b.name or b.side not in (SIDE_SRC, SIDE_DST):
        raise ValueError(f"pool {go_quote(pool.name)} has no buffer with side src or dst (PoolDesc.buffer); "
                         "each pool of a transfer carries its own")
    return b


def windows(req, regions):
    """The pools and the staging window of an attach, checked."""
    sizes = [a.size for a in regions]
    pools = []
    for p in req.pools:
        w = _window(p.pool, p.HasField("pool"), sizes)
        lay = Layout(p.layout.name, p.layout.head_dim, p.layout.page_size, max(p.layout.heads, 1))
        pools.append(Pool(name=p.name, layout=lay, slots=p.slots, base=w.off, nbytes=w.size, region=w.region,
                          buffer=pool_buffer(p)))
    staging = _window(req.staging, req.HasField("staging"), sizes)
    _disjoint(pools, staging)
    return pools, staging


def _disjoint(pools, staging: Window) -> None:
    """Rejects pools that overlap each other or the staging window in one
    region, as the Go SDK's disjoint: a kernel writing one pool would write
    another."""
    ws = [("staging", staging)] + [(f"pool {p.name}", Window(p.base, p.nbytes, p.region)) for p in pools]
    for i, (an, a) in enumerate(ws):
        for bn, b in ws[i + 1 :]:
            if a.region == b.region and a.size > 0 and b.size > 0 and a.off < b.end and b.off < a.end:
                raise bad_request(
                    f"{an} [{a.off}, {a.end}) overlaps {bn} [{b.off}, {b.end}); "
                    "give each pool and the staging its own bytes of the arena"
                )


class Attachment:
    """What an Attach mapped and checked, until Detach."""

    def __init__(self, variant: str, descs, pools, staging: Window):
        self.variant, self.pools, self.staging = variant, pools, staging
        self.backend = BACKENDS[descs[0].backend]
        self.regions = []
        self.ctx = None  # DeviceContext on a CUDA attach
        self.graphs = None
        self.device_bench = None
        try:
            for d in descs:
                self.regions.append(DeviceRegion(d) if d.backend == pb.BACKEND_CUDA else
                                    HostRegion(d.path, d.size, d.pinned))
            cuda = [r for r in self.regions if r.backend == CUDA]
            if cuda:
                self._pin(cuda[0].device)
            if self.backend == CUDA:
                self.ctx = DeviceContext(self.regions[0].device)
        except BaseException:
            try:
                self.close()
            except Exception:  # noqa: BLE001  the first error is the one to report
                pass
            raise

    def _pin(self, device: int) -> None:
        """Registers pinned host regions with the attach's GPU. Without a
        GPU in the attach a pinned region is plain shared memory."""
        from .arena import _driver

        for r in self.regions:
            if r.backend == SHM and r.pinned:
                r.register(_driver(), device)

    @property
    def device(self):
        return self.ctx.device if self.ctx is not None else None

    def mem(self, region: int):
        """What a kernel sees of a region: numpy on a host attach, torch (a
        CPU tensor for a host region) on a CUDA one."""
        r = self.regions[region]
        return r.tensor() if self.backend == CUDA else r.mem

    def mems(self) -> tuple:
        return tuple(self.mem(i) for i in range(len(self.regions)))

    def staging_region(self):
        return self.regions[self.staging.region]

    def kernel_region(self, what: str, region: int) -> None:
        """Refuses a call whose memory is not where the kernels run: a CUDA
        kernel cannot store into host memory, nor a numpy one into device
        memory."""
        r = self.regions[region]
        if r.backend != self.backend:
            raise bad_request(f"{what} lives in region {region} ({r.backend}) while the kernels run on {self.backend}: "
                              f"this SDK runs a call's kernels on the memory of its first region's backend")

    def in_staging(self, off: int, n: int, size: int) -> None:
        """n elements of size bytes at off lie inside staging, aligned."""
        end = off + n * size
        st = self.staging
        if off < st.off or end > st.end or n < 0:
            raise bad_request(f"[{off},{end}) outside staging [{st.off},{st.end})")
        if off % size:
            raise bad_request(f"offset {off} not aligned to {size} bytes")

    def close(self) -> None:
        """Releases the graphs, the stream and every region."""
        if self.graphs is not None:
            self.graphs.clear()
        self.device_bench = None
        regions, self.regions = self.regions, []
        ctx, self.ctx = self.ctx, None
        close_all(regions, ctx)
