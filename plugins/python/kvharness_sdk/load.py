"""The load kind for Python plugins: layer loads and stream ordering, the
twin of the Go SDK's harness/sdk/load: its service (Load, LoadBench) and
the engine around the kernel (streams.py runs its streams).

A load kernel implements, on its :class:`~kvharness_sdk.Kernel` subclass:

- ``start_load(call)``: queue the copies of ``call.pages`` of every layer and
  buffer, from ``call.src(l, b, i)`` to ``call.dst(l, b, i)``, on streams of
  its own (``call.exec.new_stream``, made once in ``prepare_load``), and
  record, however it likes, when each layer is in; never wait on the host.
  A copy the harness makes fail raises :class:`~kvharness_sdk.streams.LoadFailed`.
- ``wait_layer(call, layer, buffer, stream)``: the consumer's gate: make
  ``stream`` wait until the layer's buffer is in; raise when its load failed.
- optionally ``store_pages(call)``: copy a layer's pages from inputs to the
  pool on a side stream for ``call.caller``, and ``prepare_load(x)``.

The harness is the consumer; the SDK holds late copies behind its latch,
runs probes and readers, and answers the log of every stream operation.
See plugins/python/torchload for a complete plugin.
"""

from __future__ import annotations

import mmap
import os
import time
from dataclasses import dataclass, field
from typing import Any, List

import numpy as np

from . import fdpass, protocol as pb
from ._gen import load_pb2, load_pb2_grpc
from .errors import RpcError, aborted, bad_request, device_fault, precondition, unimplemented
from .kind import Kind
from .streams import Exec, LoadFailed, Ref, Stream, TorchEngine, _Memory, host_exec

kv = load_pb2

MAX_LAYERS, MAX_BUFFERS, MAX_PAGES = 64, 8, 256


@dataclass(frozen=True)
class LoadBuffer:
    name: str
    page_bytes: int


@dataclass(frozen=True)
class LoadPage:
    src: int
    dst: int


@dataclass
class _Copies:
    """What a load and a page store are both handed: the variant, the
    exec, ``first_layer`` (the global id of local layer 0), the buffers
    and pages, and the SDK's Refs of every copy, indexed
    [layer][buffer][page] (the calls' ``src`` and ``dst`` read them)."""

    variant: str
    exec: Exec
    first_layer: int
    buffers: List[LoadBuffer]
    pages: List[LoadPage]
    _srcs: Any
    _dsts: Any


def _copies(variant, x, inp) -> dict:
    """The _Copies fields of a call on inp."""
    return dict(variant=variant, exec=x, first_layer=inp.first, buffers=inp.buffers, pages=inp.pages,
                _srcs=inp.srcs, _dsts=inp.dsts)


@dataclass
class LoadCall(_Copies):
    """One load: pages of layers 0..layers-1 of every buffer. ``prior`` is
    the stream where readers of the destination pages may still run (no
    copy may overwrite a page before the work queued there has finished);
    ``state`` is the kernel's."""

    layers: int
    prior: Stream
    state: Any = None

    def src(self, layer: int, buffer: int, i: int) -> Ref:
        return self._srcs[layer][buffer][i]

    def dst(self, layer: int, buffer: int, i: int) -> Ref:
        return self._dsts[layer][buffer][i]


@dataclass
class PageStoreCall(_Copies):
    """One layer's store for ``caller``: its copies must not read their
    inputs before the work queued on ``caller`` before the call, and work
    queued on ``caller`` after it must see the pages."""

    layer: int
    caller: Stream

    def src(self, buffer: int, i: int) -> Ref:
        return self._srcs[self.layer][buffer][i]

    def dst(self, buffer: int, i: int) -> Ref:
        return self._dsts[self.layer][buffer][i]


def has_load(k) -> bool:
    return callable(getattr(k, "start_load", None)) or callable(getattr(k, "store_pages", None))


def _item(l, b, i):
    return kv.LoadItem(layer=l, buffer=b, page=i)


@dataclass
class _Input:
    op: int
    layers: int
    first: int
    buffers: List[LoadBuffer]
    pages: List[LoadPage]
    order: List[int]
    srcs: Any
    dsts: Any
    late: set = field(default_factory=set)
    inputs: set = field(default_factory=set)
    fail: set = field(default_factory=set)
    readers: List[int] = field(default_factory=list)
    latch: bool = False
    trace: bool = False
    probes: list = field(default_factory=list)
    reader_refs: list = field(default_factory=list)
    truths: list = field(default_factory=list)


class _Schedule:
    """Which page of the case a copy moves, which are late, which fail:
    pages are found by where they start (a dictionary), or by a scan for a
    copy that starts inside one."""

    def __init__(self, inp: _Input):
        self.inp = inp
        self.dst_at, self.src_at = {}, {}
        for l in range(inp.layers):
            for b, buf in enumerate(inp.buffers):
                for i in range(len(inp.pages)):
                    self.dst_at[(inp.dsts[l][b][i].mem, inp.dsts[l][b][i].off)] = (l, b, i)
                    if inp.srcs[l][b] is not None:
                        self.src_at[(inp.srcs[l][b][i].mem, inp.srcs[l][b][i].off)] = (l, b, i)

    def name(self, it) -> str:
        return f"L{it.layer}/{self.inp.buffers[it.buffer].name} page {it.page}"

    def _find(self, r: Ref, n: int, at: dict, refs, keep):
        k = at.get((r.mem, r.off))
        if k is not None and keep(k):
            return _item(*k)
        for (mem, off), k in at.items():
            pb_ = self.inp.buffers[k[1]].page_bytes
            if mem == r.mem and off < r.off + n and r.off < off + pb_ and keep(k):
                return _item(*k)
        return None

    def destination(self, r, n):
        return self._find(r, n, self.dst_at, self.inp.dsts, lambda k: True)

    def late_at(self, r, n) -> bool:
        if not self.inp.latch or not self.inp.late:
            return False
        return self._find(r, n, self.dst_at, self.inp.dsts, lambda k: k in self.inp.late) is not None

    def failing(self, r, n):
        if not self.inp.fail or self.inp.op != kv.LOAD_OP_LOAD:
            return None
        return self._find(r, n, self.src_at, self.inp.srcs, lambda k: k in self.inp.fail)


def map_host_regions(req) -> list:
    """Maps an attach's regions after the first (host shared memory) as
    numpy uint8 arrays; raises RpcError as the Go SDK words it."""
    out = []
    for i, a in enumerate(req.regions[1:], start=1):
        if a.backend != pb.BACKEND_SHM:
            raise unimplemented(f"region {i} on {pb.kv.Backend.Name(a.backend)}: host regions after the first must be shared memory")
        try:
            fd = fdpass.open_arena(a.path)
        except OSError as e:
            raise precondition(f"open arena: open {a.path}: {e.strerror}")
        try:
            m = mmap.mmap(fd, a.size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        out.append((m, np.frombuffer(m, dtype=np.uint8)))
    return out


class LoadService:
    """Load and LoadBench for the service: an Exec per attach, made on the
    first call, with the SDK's consumer and prior streams."""

    def __init__(self, kernel):
        self.k = kernel
        self.exec = None
        self.hosts = []  # (mmap, numpy) of regions 1..
        self.pinned = []
        self.bench_ref = None
        self.bench_bytes = 0

    # --- attach ---------------------------------------------------------------

    def attach(self, req) -> None:
        self.release()
        self.hosts = map_host_regions(req) if len(req.regions) > 1 else []

    def release(self) -> None:
        if self.exec is not None:
            try:
                self.exec.close()
            finally:
                self.exec = None
        if self.pinned:
            import torch

            for p in self.pinned:
                torch.cuda.cudart().cudaHostUnregister(p)
            self.pinned = []
        for m, _ in self.hosts:
            try:
                m.close()
            except BufferError:  # a view outlived its call; the mapping goes with it
                pass
        self.hosts, self.bench_ref, self.bench_bytes = [], None, 0

    def region_sizes(self, arena_size: int) -> list:
        return [arena_size] + [len(a) for _, a in self.hosts]

    def _exec(self, arena, variant):
        if self.exec is not None:
            return self.exec
        hosts = [a for _, a in self.hosts]
        if arena.backend == "cuda":
            import torch

            for a in hosts:
                r = torch.cuda.cudart().cudaHostRegister(a.ctypes.data, a.nbytes, 0)
                if int(r) != 0:
                    raise precondition(f"pin the host region: cudaHostRegister returned {r}")
                self.pinned.append(a.ctypes.data)
            mems = [_Memory("device", arena.size, dev=arena.mem.data_ptr())]
            mems += [_Memory(f"host" if i == 0 else f"region{i + 1}", a.nbytes, host=a) for i, a in enumerate(hosts)]
            x = Exec(TorchEngine(arena.device), mems)
        else:
            x = host_exec([arena.mem] + hosts)
        x.consumer, x.prior = x.new_stream("consumer"), x.new_stream("prior")
        prep = getattr(self.k, "prepare_load", None)
        if callable(prep):
            prep(x)
        self.exec = x
        return x

    # --- requests ---------------------------------------------------------------

    def check(self, req, pools, staging) -> _Input:
        L, nb, np_ = req.layers, len(req.buffers), len(req.pages)
        if req.op not in (kv.LOAD_OP_LOAD, kv.LOAD_OP_STORE):
            raise bad_request(f"load op {req.op}: want LOAD_OP_LOAD or LOAD_OP_STORE")
        if not 1 <= L <= MAX_LAYERS:
            raise bad_request(f"{L} layers: want 1..{MAX_LAYERS}")
        if not 1 <= nb <= MAX_BUFFERS:
            raise bad_request(f"{nb} buffers: want 1..{MAX_BUFFERS}")
        if not 1 <= np_ <= MAX_PAGES:
            raise bad_request(f"{np_} pages: want 1..{MAX_PAGES}")
        if req.op == kv.LOAD_OP_STORE and len(req.fail):
            raise bad_request("fail: a store's inputs are in staging; only a load's copies can fail")
        pages = [LoadPage(p.src, p.dst) for p in req.pages]
        buffers, srcs, dsts = [], [[None] * nb for _ in range(L)], [[None] * nb for _ in range(L)]
        for b, buf in enumerate(req.buffers):
            if not 1 <= buf.page_bytes <= 1 << 24:
                raise bad_request(f"buffer {buf.name}: page_bytes {buf.page_bytes}: want 1..{1 << 24}")
            buffers.append(LoadBuffer(buf.name, buf.page_bytes))
            if len(buf.device_pools) != L or (req.op == kv.LOAD_OP_LOAD and len(buf.host_pools) != L):
                raise bad_request(f"buffer {buf.name}: {len(buf.device_pools)} device and {len(buf.host_pools)} host pools "
                                  f"for {L} layers; want one per layer")
            for l in range(L):
                dsts[l][b] = self._pool_pages(pools, buf.name, buf.device_pools[l], buf.page_bytes, [p.dst for p in pages])
                if req.op == kv.LOAD_OP_LOAD:
                    srcs[l][b] = self._pool_pages(pools, buf.name, buf.host_pools[l], buf.page_bytes, [p.src for p in pages])
        order = list(req.order)
        if sorted(order) != list(range(nb)):
            raise bad_request(f"order {order}: want each of the {nb} buffers once")
        inp = _Input(req.op, L, req.first_layer, buffers, pages, order, srcs, dsts, latch=req.latch, trace=req.trace)
        inp.late, inp.inputs, inp.fail = (self._items(f, v, inp) for f, v in
                                          (("late", req.late), ("late_inputs", req.late_inputs), ("fail", req.fail)))
        for r in req.readers:
            if r >= np_:
                raise bad_request(f"reader of page {r}: the case has {np_} pages")
            inp.readers.append(r)
        self._staging(req, inp, staging)
        return inp

    @staticmethod
    def _pool_pages(pools, name, index, pb_, numbers):
        if index >= len(pools):
            raise bad_request(f"buffer {name}: pool {index}: only {len(pools)} attached")
        p = pools[index]
        out = []
        for n in numbers:
            if (n + 1) * pb_ > p.nbytes:
                raise bad_request(f"buffer {name}: page {n} of pool {p.name}: the pool holds {p.nbytes // pb_} pages of {pb_} bytes")
            out.append(Ref(p.region, p.base + n * pb_))
        return out

    @staticmethod
    def _items(field_, items, inp):
        out = set()
        for it in items:
            if it.layer >= inp.layers or it.buffer >= len(inp.buffers) or it.page >= len(inp.pages):
                raise bad_request(f"{field_} {it}: outside {inp.layers} layers, {len(inp.buffers)} buffers, {len(inp.pages)} pages")
            out.add((it.layer, it.buffer, it.page))
        return out

    @staticmethod
    def _staging(req, inp, st):
        nb, np_, nr = len(inp.buffers), len(inp.pages), len(inp.readers)

        def pages(field_, offs, n, size):
            if len(offs) != n:
                raise bad_request(f"{field_}: {len(offs)} offsets; want {n}")
            out = []
            for i, off in enumerate(offs):
                end = off + size(i)
                if off < st.off or end > st.end:
                    raise bad_request(f"{field_}[{i}]: [{off},{end}) outside staging [{st.off},{st.end})")
                out.append(Ref(0, off))
            return out

        inp.probes = pages("probe_offsets", req.probe_offsets, inp.layers * nb * np_,
                           lambda i: inp.buffers[inp.order[(i // np_) % nb]].page_bytes)
        inp.reader_refs = pages("reader_offsets", req.reader_offsets, inp.layers * nb * nr,
                                lambda i: inp.buffers[(i // max(nr, 1)) % nb].page_bytes)
        if inp.op != kv.LOAD_OP_STORE:
            return
        by_page = lambda i: inp.buffers[(i // np_) % nb].page_bytes  # noqa: E731
        ins = pages("input_offsets", req.input_offsets, inp.layers * nb * np_, by_page)
        inp.truths = pages("truth_offsets", req.truth_offsets, inp.layers * nb * np_, by_page)
        for l in range(inp.layers):
            for b in range(nb):
                inp.srcs[l][b] = ins[(l * nb + b) * np_:(l * nb + b + 1) * np_]

    def _serves(self, op):
        if op == kv.LOAD_OP_STORE and not callable(getattr(self.k, "store_pages", None)):
            raise unimplemented(f"{self.k.name} has no page store (no store_pages)")
        if op != kv.LOAD_OP_STORE and not callable(getattr(self.k, "start_load", None)):
            raise unimplemented(f"{self.k.name} has no layer loader (no start_load)")

    # --- Load ---------------------------------------------------------------------

    def load(self, req, arena, pools, staging, variant):
        if arena is None:
            raise precondition("load before attach")
        self._serves(req.op)
        inp = self.check(req, pools, staging)
        x = self._exec(arena, variant)
        with _context(arena):
            try:
                resp = self._run(x, inp, variant)
            except RpcError:
                raise
            except Exception as e:  # noqa: BLE001
                if arena.backend == "cuda":
                    raise device_fault(f"load kernel faulted on the device: {type(e).__name__}: {e}")
                raise aborted(f"load: {type(e).__name__}: {e}")
        return resp

    def _run(self, x, inp, variant):
        x.begin(_Schedule(inp), inp.latch)
        resp = kv.LoadResponse()
        err = None
        try:
            if inp.op == kv.LOAD_OP_STORE:
                self._store(x, inp, variant, resp)
            else:
                self._load(x, inp, variant, resp)
        except Exception as e:  # noqa: BLE001  finish the call before answering
            err = e
        deadlock = x.end()
        if err is not None:
            raise err
        resp.deadlock = deadlock
        if inp.trace:
            resp.trace.extend(x.trace())
        streams, events, counters, mems = x.names()
        resp.streams.extend(streams)
        resp.events.extend(events)
        resp.counters.extend(counters)
        resp.memories.extend(mems)
        return resp

    def _call(self, x, inp, variant):
        return LoadCall(layers=inp.layers, prior=x.prior, **_copies(variant, x, inp))

    def _load(self, x, inp, variant, resp):
        self._readers(x, x.prior, inp)
        call = self._call(x, inp, variant)
        start_err = _kernel(lambda: self.k.start_load(call), "start load")
        x.settle()
        for l in range(inp.layers):
            for k, b in enumerate(inp.order):
                err = start_err or _kernel(lambda: self.k.wait_layer(call, l, b, x.consumer), "")
                resp.gates.add(layer=l, buffer=b, error=err or "")
                if err:
                    continue
                x.settle()
                self._probe(x, inp, l, k, b)

    def _store(self, x, inp, variant, resp):
        caller, nb, np_ = x.consumer, len(inp.buffers), len(inp.pages)
        self._readers(x, caller, inp)
        for l in range(inp.layers):
            for b in range(nb):
                for i in range(np_):
                    if inp.latch and (l, b, i) in inp.inputs:
                        x._hold(caller._id)
                    x.sdk_copy(caller, inp.srcs[l][b][i], inp.truths[(l * nb + b) * np_ + i], inp.buffers[b].page_bytes,
                               kv.LOAD_ROLE_PRODUCER, _item(l, b, i), "input")
            x.settle()
            call = PageStoreCall(layer=l, caller=caller, **_copies(variant, x, inp))
            err = _kernel(lambda: self.k.store_pages(call), "")
            x.settle()
            for k, b in enumerate(inp.order):
                resp.gates.add(layer=l, buffer=b, error=err or "")
                if not err:
                    self._probe(x, inp, l, k, b)

    def _readers(self, x, s, inp):
        if not inp.readers:
            return
        if inp.latch:
            x._hold(s._id)
        nb, nr = len(inp.buffers), len(inp.readers)
        for l in range(inp.layers):
            for b in range(nb):
                for r, i in enumerate(inp.readers):
                    x.sdk_copy(s, inp.reader_refs[(l * nb + b) * nr + r], inp.dsts[l][b][i], inp.buffers[b].page_bytes,
                               kv.LOAD_ROLE_READER, _item(l, b, i), "reader")

    def _probe(self, x, inp, l, k, b):
        nb, np_ = len(inp.buffers), len(inp.pages)
        for i in range(np_):
            x.sdk_copy(x.consumer, inp.probes[(l * nb + k) * np_ + i], inp.dsts[l][b][i], inp.buffers[b].page_bytes,
                       kv.LOAD_ROLE_PROBE, _item(l, b, i), "probe")

    # --- LoadBench -------------------------------------------------------------

    def bench(self, req, arena, pools, staging, variant):
        if arena is None:
            raise precondition("load bench before attach")
        if not req.HasField("load") or req.load.op != kv.LOAD_OP_LOAD:
            raise bad_request("load bench: want a load case (op LOAD_OP_LOAD)")
        if not 1 <= req.iterations <= 100_000 or req.warmup > 100_000:
            raise bad_request(f"load bench: {req.iterations} iterations and {req.warmup} warmup: want 1..100000 and at most 100000")
        if not self.hosts:
            raise bad_request("load bench: the attach has no host region to load from")
        self._serves(kv.LOAD_OP_LOAD)
        bare = kv.LoadRequest()
        bare.CopyFrom(req.load)
        bare.latch, bare.trace = False, False
        for f in ("late", "fail", "readers", "reader_offsets"):
            bare.ClearField(f)
        inp = self.check(bare, pools, staging)
        n = inp.layers * len(inp.pages) * sum(b.page_bytes for b in inp.buffers)
        if n > len(self.hosts[0][1]):
            raise bad_request(f"load bench: a load moves {n} bytes, more than the host region's {len(self.hosts[0][1])}")
        x = self._exec(arena, variant)
        if self.bench_bytes < n:
            self.bench_ref, self.bench_bytes = x.scratch("bench copy", n), n
        loads, copies = [], []
        with _context(arena):
            for it in range(req.warmup + req.iterations):
                dl = self._timed(x, inp, lambda: self._bench_load(x, inp, variant))
                dc = self._timed(x, inp, lambda: x.consumer.copy(self.bench_ref, Ref(1), n))
                if it >= req.warmup:
                    loads.append(dl)
                    copies.append(dc)
        device = "cpu" if arena.backend != "cuda" else arena.name
        return kv.LoadBenchResponse(load_ns=loads, copy_ns=copies, bytes=n, clock="monotonic", device=device)

    def _bench_load(self, x, inp, variant):
        call = self._call(x, inp, variant)
        self.k.start_load(call)
        for l in range(inp.layers):
            for b in inp.order:
                self.k.wait_layer(call, l, b, x.consumer)

    @staticmethod
    def _timed(x, inp, f):
        x.begin(_Schedule(inp), False)
        t0 = time.perf_counter_ns()
        try:
            f()
        finally:
            x.end()
        return float(time.perf_counter_ns() - t0)


def _kernel(f, what: str):
    """Runs a kernel hook; its exception is the gate's (or load's) answer."""
    try:
        f()
        return None
    except LoadFailed as e:
        return f"{what + ': ' if what else ''}load failed: {e}"
    except RpcError:
        raise
    except Exception as e:  # noqa: BLE001
        return f"{what + ': ' if what else ''}{type(e).__name__}: {e}"


class _context:
    """The arena's device and a torch stream current, on the cuda backend."""

    def __init__(self, arena):
        self.arena, self.stack = arena, None

    def __enter__(self):
        if getattr(self.arena, "backend", None) == "cuda":
            self.stack = self.arena.context()
            self.stack.__enter__()
        return self

    def __exit__(self, *exc):
        if self.stack is not None:
            return self.stack.__exit__(*exc)
        return False


class LoadServicer(load_pb2_grpc.LoadServicer):
    """The load service on the plugin's service ``core``: the host regions
    after the first, mapped at each Attach, and an Exec per attach
    (LoadService)."""

    def __init__(self, core):
        self.core = core
        self.loads = LoadService(core.k)
        core.on_attach(self.loads.attach)
        core.on_release(self.loads.release)

    def Load(self, request, context):
        return self.core.rpc(context, self._locked, self.loads.load, request)

    def LoadBench(self, request, context):
        return self.core.rpc(context, self._locked, self.loads.bench, request)

    def _locked(self, fn, req):
        with self.core.lock:
            att = self.core.att
            if att is None:
                return fn(req, None, [], None, "")
            return fn(req, _LoadArena(att), att.pools, att.staging, att.variant)


class _LoadArena:
    """An attachment's first region as the load kind reads it: its backend,
    memory, size, device and a context on the device."""

    def __init__(self, att):
        self.att, self.backend = att, att.backend
        self.mem = att.mem(0)
        self.size = att.regions[0].size
        self.device = att.device
        self.name = att.ctx.name if att.ctx is not None else "cpu"

    def context(self):
        return self.att.ctx.context()


KIND = Kind(load_pb2.DESCRIPTOR.services_by_name["Load"], has_load, LoadServicer,
            load_pb2_grpc.add_LoadServicer_to_server)
