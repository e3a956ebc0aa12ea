"""The asynchronous prefill → decode transfer kernel ("pdasync") for Python
plugins: the Go SDK's harness/sdk/pdasync*.go, on the shm backend.

Two processes of one plugin play the two servers of a disaggregated
deployment; the harness is the wire between them. A kernel subclasses
:class:`AsyncKernel` and returns an engine per role::

    class MyEngine(AsyncKernel):
        name, version = "myengine", "1.0.0"

        def geometry(self, variant, head_dim, page_size): ...
        def new_prefill(self, attach):   # attach.post(handle, descriptors) -> Xfer
            return MyPrefill(attach)      # .post(room, src, dst), .poll()
        def new_decode(self, attach):    # attach.read(off, n) -> bytes
            return MyDecode(attach)       # .admit(room, virt, table), .notify(notes), .abort(room_id)

The SDK starts a fresh engine at AsyncAttach and at every AsyncReset.
The transport (``attach.post``) never lies: an :class:`Xfer` is done only
once its copies landed. It holds each handle's copies behind the gate word
the harness writes in the prefill arena (0 held, 1 go, 2 fail: a failed
handle lands the first half of its copies, then reports failure) and runs
them on a watcher thread. Validation and error codes are the Go SDK's.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from typing import List, Sequence

import numpy as np

from . import protocol as pb
from ._gen import pdasync_pb2, pdasync_pb2_grpc
from .arena import HostRegion
from .errors import aborted, bad_request, precondition, unimplemented
from .attach import buffer_of, pool_buffer
from .kernel import SHM, SIDE_DST, SIDE_SRC, Kernel, Layout, Pool
from .kind import Kind
from .buffers import Buffer, Descriptor

kv = pdasync_pb2

ROLE_PREFILL = kv.AsyncRole.Value("ASYNC_ROLE_PREFILL")
ROLE_DECODE = kv.AsyncRole.Value("ASYNC_ROLE_DECODE")
HANDLE_DONE = kv.AsyncNote.Value("ASYNC_NOTE_HANDLE_DONE")
HANDLE_FAILED = kv.AsyncNote.Value("ASYNC_NOTE_HANDLE_FAILED")
COMPONENT_DONE = kv.AsyncNote.Value("ASYNC_NOTE_COMPONENT_DONE")
COMPONENT_FAILED = kv.AsyncNote.Value("ASYNC_NOTE_COMPONENT_FAILED")
READY = kv.AsyncEventKind.Value("ASYNC_EVENT_READY")
FREED = kv.AsyncEventKind.Value("ASYNC_EVENT_FREED")

PENDING, DONE, FAILED = "pending", "done", "failed"
_GATE_HELD, _GATE_GO, _GATE_FAIL = 0, 1, 2


# AsyncBuffer is one buffer of an asynchronous transfer (buffers.Buffer):
# its prefill pool (src, None on the decode) and decode pool (dst).
AsyncBuffer = Buffer


@dataclass(frozen=True)
class AsyncHandle:
    id: int
    first_page: int
    pages: int


@dataclass(frozen=True)
class AsyncComponent:
    id: int
    buffers: Sequence[int]
    handles: Sequence[AsyncHandle]


@dataclass(frozen=True)
class AsyncRoom:
    id: int
    components: Sequence[AsyncComponent]


@dataclass(frozen=True)
class Notification:
    room: int
    component: int
    handle: int
    note: int  # HANDLE_DONE, HANDLE_FAILED, COMPONENT_DONE, COMPONENT_FAILED


@dataclass
class Event:
    room: int
    kind: int  # READY or FREED
    digests: List[bytes] = field(default_factory=list)


class Xfer:
    """One posted handle. ``state()`` is PENDING until its copies landed."""

    def __init__(self, handle: int):
        self.handle = handle
        self._state = PENDING

    def state(self) -> str:
        return self._state


class AsyncKernel(Kernel):
    """Base class of a pdasync plugin: override geometry, new_prefill and
    new_decode. Only the shm backend is served from Python."""

    backends = (SHM,)

    def new_prefill(self, attach: "PrefillAttach"):
        raise NotImplementedError

    def new_decode(self, attach: "DecodeAttach"):
        raise NotImplementedError


def serves_async(kernel) -> bool:
    return isinstance(kernel, AsyncKernel)


class _HostTransport:
    """Gated copies on the host: a watcher thread polls the gate of every
    held handle and copies each as its gate opens."""

    def __init__(self, src: np.ndarray, dst: np.ndarray, gates: np.ndarray):
        self.src, self.dst, self.gates = src, dst, gates
        self.lock = threading.Lock()
        self.held: list = []
        self.posted: list = []  # every handle posted since the last drain
        self.thread = None
        self.cancel = False

    def post(self, handle: int, ds: Sequence[Descriptor]) -> Xfer:
        if handle >= len(self.gates):
            raise ValueError(f"handle {handle}: the gate window holds {len(self.gates)} gates")
        for i, d in enumerate(ds):
            if d.length < 0 or d.src < 0 or d.dst < 0 or d.src + d.length > len(self.src) or d.dst + d.length > len(self.dst):
                raise ValueError(f"descriptor {i} {d} leaves the arenas (prefill {len(self.src)} bytes, decode {len(self.dst)} bytes)")
        x = Xfer(handle)
        with self.lock:
            self.held.append((x, list(ds)))
            self.posted.append(x)
            if self.thread is None:
                self.thread = threading.Thread(target=self._watch, daemon=True)
                self.thread.start()
        return x

    def _watch(self) -> None:
        idle = 0
        while True:
            with self.lock:
                opened = [h for h in self.held if self.cancel or self.gates[h[0].handle] != _GATE_HELD]
                self.held = [h for h in self.held if h not in opened]
                if not opened and not self.held:
                    self.thread = None
                    return
            for x, ds in opened:
                self._run(x, ds)
            idle = 0 if opened else idle + 1
            if idle > 64:
                time.sleep(min((idle - 64) * 1e-6, 1e-4))

    def _run(self, x: Xfer, ds) -> None:
        v = int(self.gates[x.handle])
        if v == _GATE_HELD:  # cancelled: never opened
            x._state = FAILED
            return
        n = len(ds) // 2 if v == _GATE_FAIL else len(ds)
        for d in ds[:n]:
            self.dst[d.dst : d.dst + d.length] = self.src[d.src : d.src + d.length]
        x._state = FAILED if v == _GATE_FAIL else DONE

    def quiet(self) -> bool:
        """Whether every handle whose gate the harness opened or failed has
        ended: no copy is in flight (the poll's ``settled``)."""
        with self.lock:
            return all(self.gates[x.handle] == _GATE_HELD or x.state() != PENDING for x in self.posted)

    def drain(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                t = self.thread
            if t is None:
                with self.lock:
                    self.posted = []
                return
            if time.monotonic() > deadline:
                self.cancel = True
                t.join()
                self.cancel = False
                raise RuntimeError(f"handles still held {timeout} s after the reset: the harness opens every gate first")
            t.join(0.01)


class PrefillAttach:
    """What a prefill engine runs on: its buffers and the transport."""

    def __init__(self, variant: str, buffers, transport: _HostTransport):
        self.variant, self.buffers, self._t = variant, buffers, transport

    def post(self, handle: int, descriptors: Sequence[Descriptor]) -> Xfer:
        """Starts a handle's copies behind its gate and returns at once."""
        return self._t.post(handle, descriptors)


class DecodeAttach:
    """What a decode engine runs on: its buffers and its arena."""

    def __init__(self, variant: str, buffers, arena: HostRegion):
        self.variant, self.buffers, self._mem = variant, buffers, arena.mem

    def read(self, off: int, n: int) -> bytes:
        if off < 0 or n < 0 or off + n > len(self._mem):
            raise ValueError(f"read [{off},{off + n}) outside the {len(self._mem)}-byte decode arena")
        return self._mem[off : off + n].tobytes()


def digest(pages) -> bytes:
    """SHA-256 of pages in order, first 8 bytes: what a READY event holds
    per buffer."""
    h = hashlib.sha256()
    for p in pages:
        h.update(p)
    return h.digest()[:8]


class PDAsyncServicer(pdasync_pb2_grpc.PDAsyncServicer):
    """The pdasync service on the plugin's service ``core`` (its kernel
    ``k``, its ``lock``): the role this process plays, apart from the base
    attachment."""

    def __init__(self, core):
        self.core, self.k, self.lock = core, core.k, core.lock
        self._async = None  # the role state while attached for one

    def AsyncAttach(self, request, context):
        return self.core.rpc(context, self._async_attach, request)

    def AsyncReset(self, request, context):
        return self.core.rpc(context, self._async_reset)

    def AsyncAdmit(self, request, context):
        return self.core.rpc(context, self._async_admit, request)

    def AsyncPost(self, request, context):
        return self.core.rpc(context, self._async_post, request)

    def AsyncPoll(self, request, context):
        return self.core.rpc(context, self._async_poll, request)

    def AsyncNotify(self, request, context):
        return self.core.rpc(context, self._async_notify, request)

    def AsyncAbort(self, request, context):
        return self.core.rpc(context, self._async_abort, request)

    # --- attach ---------------------------------------------------------------

    def _async_attach(self, req):
        if not serves_async(self.k):
            raise unimplemented(f"{self.k.name} has no pdasync kernel (it does not subclass AsyncKernel)")
        att = req.attach
        self.core.known_variant(att.variant)
        regions = list(att.regions) or [att.arena]
        want = {ROLE_PREFILL: 2, ROLE_DECODE: 1}.get(req.role)
        if want is None:
            raise bad_request(f"pdasync attach: role {req.role}; want ASYNC_ROLE_PREFILL or ASYNC_ROLE_DECODE")
        if len(regions) != want:
            raise bad_request(f"pdasync attach: {len(regions)} regions; want {want} (prefill: its arena, then the decode arena; decode: its arena)")
        if any(r.backend != pb.BACKEND_SHM for r in regions):
            raise unimplemented("the Python SDK serves pdasync on the shm backend only; use a Go plugin for CUDA arenas")
        buffers, staging = self._async_layout(req.role, att, [r.size for r in regions])
        with self.lock:
            self._async = None
            maps = [HostRegion(r.path, r.size) for r in regions]
            st = {"role": req.role, "variant": att.variant, "buffers": buffers, "maps": maps}
            if req.role == ROLE_PREFILL:
                gates = maps[0].mem[staging[0] : staging[0] + staging[1]].view(np.uint32)
                st["transport"] = _HostTransport(maps[0].mem, maps[1].mem, gates)
            self._async_start(st)
            self._async = st
        return kv.AsyncAttachResponse(geometry=self._async_geometry(att))

    def _async_layout(self, role, att, sizes):
        pools = []
        for p in att.pools:
            w = p.pool
            if w.region >= len(sizes) or w.offset + w.size > sizes[w.region]:
                raise bad_request(f"window {{offset: {w.offset}, size: {w.size}}} outside its region")
            lay = Layout(p.layout.name, p.layout.head_dim, p.layout.page_size)
            pools.append((Pool(name=p.name, layout=lay, slots=p.slots, base=w.offset, nbytes=w.size,
                               buffer=pool_buffer(p)), w.region))
        st = att.staging
        if st.region != 0 or st.offset + st.size > sizes[0] or st.offset % 4:
            raise bad_request("pdasync attach: the staging (gate) window must be 4-byte aligned in region 0")
        dst_region = 1 if role == ROLE_PREFILL else 0
        src, out = {}, []
        for p, region in pools:
            try:
                b = buffer_of(p)
            except ValueError as e:
                raise bad_request(f"pdasync attach: {e}") from None
            if b.side == SIDE_SRC and role == ROLE_PREFILL and region == 0:
                src[b.name] = p
            elif b.side == SIDE_DST and region == dst_region and p.layout.page_size > 0:
                out.append(AsyncBuffer(len(out), b.name, None, p, b.alloc_key, b.shift))
            else:
                raise bad_request(f"pdasync attach: pool \"{p.name}\" in region {region}; want source pools in region 0 and destination pools in region {dst_region}")
        if not out:
            raise bad_request("pdasync attach: no destination pool")
        if role == ROLE_PREFILL:
            if len(src) != len(out):
                raise bad_request(f"pdasync attach: {len(src)} source pools for {len(out)} destination pools")
            for i, b in enumerate(out):
                s = src.get(b.name)
                if s is None or s.layout != b.dst.layout or s.slots != b.dst.slots:
                    raise bad_request(f"pdasync attach: buffer {b.name} has no source pool of its layout and size")
                out[i] = AsyncBuffer(b.index, b.name, s, b.dst, b.alloc, b.shift)
        return out, (st.offset, st.size)

    def _async_geometry(self, att):
        """Each pool's declared bytes per token and per page."""
        out = []
        for p in att.pools:
            g = pb.kv.Geometry(layout=p.layout.name)
            d = self.core.declared(att.variant, p.layout)
            if d is not None:
                g.bytes_per_token, g.bytes_per_page = d.bytes_per_token, d.bytes_per_page
            out.append(g)
        return out

    def _async_start(self, st) -> None:
        try:
            if st["role"] == ROLE_PREFILL:
                st["engine"] = self.k.new_prefill(PrefillAttach(st["variant"], st["buffers"], st["transport"]))
            else:
                st["engine"] = self.k.new_decode(DecodeAttach(st["variant"], st["buffers"], st["maps"][0]))
        except Exception as e:  # noqa: BLE001
            raise precondition(f"start the engine: {type(e).__name__}: {e}")

    def _async_reset(self):
        with self.lock:
            st = self._role("AsyncReset", None)
            if "transport" in st:
                st["transport"].drain()
            self._async_start(st)
        return kv.AsyncResetResponse()

    # --- calls ----------------------------------------------------------------

    def _role(self, call: str, role):
        st = self._async
        if st is None:
            raise precondition(f"{call} before AsyncAttach")
        if role is not None and st["role"] != role:
            raise precondition(f"{call} on a process attached as {kv.AsyncRole.Name(st['role'])}; it goes to the {kv.AsyncRole.Name(role)} process")
        return st

    def _engine(self, call: str, fn, *args):
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001  an engine's error is the call's answer
            raise aborted(f"pdasync engine failed in {call}: {type(e).__name__}: {e}")

    def _pages(self, st) -> int:
        return min(b.pages() for b in st["buffers"])

    def _room(self, st, r, pages: int, gates: int) -> AsyncRoom:
        if not r.components or pages == 0:
            raise bad_request("room: want a plan with at least one component and one page")
        comps = []
        for c in r.components:
            for b in c.buffers:
                if b >= len(st["buffers"]):
                    raise bad_request(f"room {r.id} component {c.id}: buffer {b} of {len(st['buffers'])}")
            hs = []
            for h in c.handles:
                if h.pages == 0 or h.first_page + h.pages > pages or h.id >= gates:
                    raise bad_request(f"room {r.id} handle {h.id}: pages [{h.first_page},+{h.pages}) of {pages}, gate {h.id} of {gates}")
                hs.append(AsyncHandle(h.id, h.first_page, h.pages))
            comps.append(AsyncComponent(c.id, tuple(c.buffers), tuple(hs)))
        return AsyncRoom(r.id, tuple(comps))

    @staticmethod
    def _page_list(what: str, ps, limit: int):
        for i, p in enumerate(ps):
            if p >= limit:
                raise bad_request(f"{what} {p} (#{i}) outside 0..{limit - 1}")
        return [int(p) for p in ps]

    def _async_admit(self, req):
        with self.lock:
            st = self._role("AsyncAdmit", ROLE_DECODE)
            pages = self._pages(st)
            # An empty page table is the identity over the pool's pages.
            table = self._page_list("page table entry", req.page_table, pages) if req.page_table else list(range(pages))
            virt = self._page_list("virtual page", req.virtual_pages, len(table))
            room = self._room(st, req.room, len(virt), 1 << 62)
            dst = self._engine("Admit", st["engine"].admit, room, virt, table)
            if any(p < 0 for p in dst):
                raise aborted("pdasync engine failed in Admit: a destination page is negative")
            return kv.AsyncAdmitResponse(dst_pages=list(dst))

    def _async_post(self, req):
        with self.lock:
            st = self._role("AsyncPost", ROLE_PREFILL)
            if len(req.src_pages) != len(req.dst_pages):
                raise bad_request(f"post: {len(req.src_pages)} source and {len(req.dst_pages)} destination pages")
            src = self._page_list("source page", req.src_pages, self._pages(st))
            dst = self._page_list("destination page", req.dst_pages, self._pages(st))
            room = self._room(st, req.room, len(src), len(st["transport"].gates))
            posted = self._engine("Post", st["engine"].post, room, src, dst)
            out = kv.AsyncPostResponse()
            for handle, ds in posted:
                hd = out.handles.add(handle=handle)
                for d in ds:
                    hd.descriptors.add(room=d.room, buffer=d.buffer, src_offset=d.src, dst_offset=d.dst,
                                       length=d.length, item_len=d.item_len, run=d.run)
            return out

    def _async_poll(self, req):
        with self.lock:
            st = self._role("AsyncPoll", ROLE_PREFILL)
            deadline = time.monotonic() + req.wait_us * 1e-6
            pause = 2e-6
            while True:
                # quiet before the engine polls: it then sees every end
                # there is, and a poll that finds no note need not wait.
                settled = st["transport"].quiet()
                ns = self._engine("Poll", st["engine"].poll)
                if ns or settled or time.monotonic() >= deadline:
                    break
                time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
                pause = min(2 * pause, 5e-5)
            out = kv.AsyncPollResponse(settled=settled)
            for n in ns:
                out.notifications.add(room=n.room, component=n.component, handle=n.handle, note=n.note)
            return out

    def _async_notify(self, req):
        with self.lock:
            st = self._role("AsyncNotify", ROLE_DECODE)
            ns = []
            for i, n in enumerate(req.notifications):
                if n.note not in (HANDLE_DONE, HANDLE_FAILED, COMPONENT_DONE, COMPONENT_FAILED):
                    raise bad_request(f"notification {i}: note {n.note}")
                ns.append(Notification(n.room, n.component, n.handle, n.note))
            return kv.AsyncNotifyResponse(events=self._events(self._engine("Notify", st["engine"].notify, ns)))

    def _async_abort(self, req):
        with self.lock:
            st = self._role("AsyncAbort", ROLE_DECODE)
            return kv.AsyncAbortResponse(events=self._events(self._engine("Abort", st["engine"].abort, req.room)))

    @staticmethod
    def _events(evs):
        return [kv.AsyncEvent(room=e.room, kind=e.kind, digests=list(e.digests)) for e in evs]


KIND = Kind(pdasync_pb2.DESCRIPTOR.services_by_name["PDAsync"], serves_async, PDAsyncServicer,
            pdasync_pb2_grpc.add_PDAsyncServicer_to_server)
