"""Streams, events and counters with CUDA's semantics, on either backend:
the Python twin of the Go SDK's Exec (harness/sdk/streams*.go).

A load kernel queues its work on :class:`Stream` objects: copies, event
records and waits, counter writes and waits. Operations of one stream run
in order; ``wait(event)`` waits for the work before the event's last
``record`` as of the wait (a wait before any record waits for nothing, as
cudaStreamWaitEvent does); ``wait_value(counter, v)`` holds the stream until
the counter is at least v (CU_STREAM_WAIT_VALUE_GEQ).

The SDK keeps a model of every operation. On the CPU the model is the
executor: an operation runs as soon as its stream reaches it and what it
waits for has happened (numpy copies). On the GPU the streams and events
are torch's, copies and stream memory operations go to the driver (ctypes
on libcuda: cuMemcpy*Async, cuStreamWaitValue32, cuStreamWriteValue32), and
the model follows the same rules to know what the harness's latch holds.
The same kernel source runs on both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, List, Optional

import numpy as np

from ._gen import load_pb2

kv = load_pb2

COPY = kv.LOAD_OP_KIND_COPY
LAUNCH = kv.LOAD_OP_KIND_LAUNCH
RECORD = kv.LOAD_OP_KIND_RECORD
WAIT = kv.LOAD_OP_KIND_WAIT
WRITE_VALUE = kv.LOAD_OP_KIND_WRITE_VALUE
WAIT_VALUE = kv.LOAD_OP_KIND_WAIT_VALUE
LATCH = kv.LOAD_OP_KIND_LATCH

PLUGIN = kv.LOAD_ROLE_PLUGIN


class LoadFailed(Exception):
    """Raised by a copy the harness made fail: its source page cannot be
    read; nothing was queued. A correct loader reports the layer as failed
    from its gate instead of letting the consumer read it."""


@dataclass(frozen=True)
class Ref:
    """A place in one of the exec's memories: 0 the device region (device
    pools, staging), 1 the host region (host pools), 2 and up scratch."""

    mem: int
    off: int = 0

    def add(self, n: int) -> "Ref":
        return Ref(self.mem, self.off + n)


@dataclass
class _Op:
    seq: int
    call: int
    epoch: int
    stream: int
    kind: int
    role: int = PLUGIN
    label: str = ""
    reads: list = field(default_factory=list)  # [(Ref, n)]
    writes: list = field(default_factory=list)
    obj: int = 0
    value: int = 0
    item: Any = None  # kv.LoadItem
    record: Optional["_Op"] = None
    after: Optional["_Op"] = None
    done: bool = False
    held: bool = False
    marker: Any = None


class _MStream:
    def __init__(self, name, handle):
        self.name, self.handle, self.queue, self.last_run = name, handle, [], None


class _MEvent:
    def __init__(self, name, handle):
        self.name, self.handle, self.last = name, handle, None


class _MCounter:
    def __init__(self, name, handle):
        self.name, self.handle, self.value, self.writes = name, handle, 0, []


def geq(have: int, want: int) -> bool:
    """CU_STREAM_WAIT_VALUE_GEQ: the wrapping 32-bit difference is not negative."""
    d = (have - want) & 0xFFFFFFFF
    return d < 0x80000000


class Stream:
    """A stream of an :class:`Exec`."""

    def __init__(self, x: "Exec", sid: int):
        self._x, self._id = x, sid

    @property
    def name(self) -> str:
        return self._x._streams[self._id].name

    def copy(self, dst: Ref, src: Ref, n: int) -> None:
        """Queues a copy of n bytes; raises LoadFailed for a copy the case
        makes fail (nothing queued)."""
        x = self._x
        x._in_range(dst, n, "copy to")
        x._in_range(src, n, "copy from")
        if x._mems[dst.mem].host is not None and x._mems[src.mem].host is not None and x.device is not None:
            raise ValueError(f"copy from {x._mems[src.mem].name} to {x._mems[dst.mem].name}: host to host is no stream operation")
        o = _Op(0, 0, 0, self._id, COPY, reads=[(src, n)], writes=[(dst, n)])
        sc = x._schedule
        if sc is not None:
            it = sc.failing(src, n)
            if it is not None:
                raise LoadFailed(f"the source page of {sc.name(it)} cannot be read")
            it = sc.destination(dst, n)
            if it is not None:
                o.item, o.label = it, sc.name(it)
            if sc.late_at(dst, n):
                x._hold(self._id)
        x._enqueue(o)

    def record(self, e: "Event") -> None:
        self._x._enqueue(_Op(0, 0, 0, self._id, RECORD, obj=self._x._own(e)))

    def wait(self, e: "Event") -> None:
        self._x._enqueue(_Op(0, 0, 0, self._id, WAIT, obj=self._x._own(e)))

    def wait_stream(self, o: "Stream") -> None:
        """Waits for everything queued on o so far (an internal event)."""
        e = self._x._internal_event(f"{o.name}→{self.name}")
        o.record(e)
        self.wait(e)

    def write_value(self, c: "Counter", v: int) -> None:
        self._x._enqueue(_Op(0, 0, 0, self._id, WRITE_VALUE, obj=self._x._own(c), value=v & 0xFFFFFFFF))

    def wait_value(self, c: "Counter", v: int) -> None:
        self._x._enqueue(_Op(0, 0, 0, self._id, WAIT_VALUE, obj=self._x._own(c), value=v & 0xFFFFFFFF))


class Event:
    def __init__(self, x: "Exec", eid: int):
        self._x, self._id = x, eid


class Counter:
    def __init__(self, x: "Exec", cid: int):
        self._x, self._id = x, cid


@dataclass
class _Memory:
    name: str
    size: int
    host: Any = None  # numpy uint8 on the host
    dev: int = 0  # device address on the GPU


class Exec:
    """Where a load kernel queues its work for one attach. A kernel only
    queues: it never waits on the host for what it queued (the harness
    holds some of it until the kernel has returned)."""

    def __init__(self, engine, memories):
        self._eng = engine
        self._mems: List[_Memory] = list(memories)
        self._streams: List[_MStream] = []
        self._events: List[_MEvent] = []
        self._counters: List[_MCounter] = []
        self._internal: List[Event] = []
        self._waits = 0
        self._schedule = None
        self._call = 0
        self._ops: List[_Op] = []
        self._latched = self._released = False
        self._epoch = 0

    # --- what kernels use ---------------------------------------------------

    @property
    def device(self):
        """The CUDA device ordinal, or None on the CPU backend."""
        return self._eng.device

    def new_stream(self, name: str) -> Stream:
        self._streams.append(_MStream(name, self._eng.stream()))
        return Stream(self, len(self._streams) - 1)

    def new_event(self, name: str) -> Event:
        self._events.append(_MEvent(name, self._eng.event()))
        return Event(self, len(self._events) - 1)

    def new_counter(self, name: str) -> Counter:
        self._counters.append(_MCounter(name, self._eng.counter()))
        return Counter(self, len(self._counters) - 1)

    def scratch(self, name: str, n: int) -> Ref:
        """n bytes of the kernel's own memory where the load runs."""
        if n <= 0:
            raise ValueError(f"scratch {name} of {n} bytes: want a positive size")
        self._mems.append(self._eng.scratch(name, n))
        return Ref(len(self._mems) - 1)

    # --- the model ------------------------------------------------------------

    def _own(self, h):
        if h is None or h._x is not self:
            raise ValueError("an event, counter or stream of another exec, or None")
        return h._id

    def _in_range(self, r: Ref, n: int, what: str) -> None:
        if r.mem < 0 or r.mem >= len(self._mems):
            raise ValueError(f"{what} memory {r.mem}: the exec has {len(self._mems)}")
        m = self._mems[r.mem]
        if n < 0 or r.off < 0 or r.off > m.size - n:
            raise ValueError(f"{what} [{r.off}, {r.off + n}) outside memory {m.name} of {m.size} bytes")

    def _internal_event(self, name: str) -> Event:
        if self._waits == len(self._internal):
            self._internal.append(self.new_event(name))
        e = self._internal[self._waits]
        self._waits += 1
        self._events[e._id].name = name
        return e

    def _enqueue(self, o: _Op) -> None:
        o.seq, o.call, o.epoch = len(self._ops), self._call, self._epoch
        self._ops.append(o)
        if o.kind == WAIT:
            o.record = self._events[o.obj].last
        elif o.kind == RECORD:
            self._events[o.obj].last = o
        self._streams[o.stream].queue.append(o)
        self._eng.issue(self, o)
        self._pump()

    def _hold(self, stream: int) -> None:
        if not self._latched or any(o.kind == LATCH for o in self._streams[stream].queue):
            return
        self._enqueue(_Op(0, 0, 0, stream, LATCH, role=kv.LOAD_ROLE_LATCH, label="latch"))

    def _ready(self, o: _Op) -> bool:
        if o.kind == WAIT:
            return o.record is None or o.record.done
        if o.kind == WAIT_VALUE:
            return geq(self._counters[o.obj].value, o.value)
        if o.kind == LATCH:
            return not self._latched
        return True

    def _execute(self, s: _MStream, o: _Op) -> None:
        if o.kind == WAIT:
            o.after = o.record
        elif o.kind == WRITE_VALUE:
            c = self._counters[o.obj]
            c.value = o.value
            c.writes.append(o)
        elif o.kind == WAIT_VALUE:
            o.after = next((w for w in self._counters[o.obj].writes if geq(w.value, o.value)), None)
        self._eng.run(self, o)
        o.done, o.held = True, self._released
        s.last_run = o

    def _pump(self) -> None:
        progress = True
        while progress:
            progress = False
            for s in self._streams:
                while s.queue and self._ready(s.queue[0]):
                    self._execute(s, s.queue.pop(0))
                    progress = True

    def begin(self, schedule, latch: bool) -> None:
        self._call += 1
        self._schedule, self._waits = schedule, 0
        self._ops, self._latched, self._released, self._epoch = [], latch, False, 0
        for s in self._streams:
            s.queue, s.last_run = [], None
        for c in self._counters:
            c.writes = []
        self._eng.begin(self, latch)

    def settle(self) -> None:
        """A settle point: on the GPU, wait until everything the model ran
        has run, so that the next step never races what is not held."""
        self._epoch += 1
        if self._latched:
            self._eng.settle(self)

    def end(self) -> str:
        """Releases the latch, forces through a deadlock (described in the
        answer) and waits for every stream."""
        self._schedule = None
        if self._latched:
            self._eng.settle(self)
            self._eng.release(self)
            self._latched, self._released = False, True
            self._pump()
        deadlock = ""
        stuck = [o for s in self._streams for o in s.queue]
        if stuck:
            deadlock = self._describe(stuck)
            while True:
                o = next((s.queue[0] for s in self._streams if s.queue and s.queue[0].kind == WAIT_VALUE), None)
                if o is None:
                    break
                self._counters[o.obj].value = o.value
                self._eng.force(self, o)
                self._pump()
            left = [o for s in self._streams for o in s.queue]
            if left:
                raise RuntimeError(f"stream operations that can never run: {self._describe(left)}")
        self._eng.finish(self)
        return deadlock

    def _describe(self, stuck) -> str:
        parts = []
        for o in stuck[:4]:
            name = self._streams[o.stream].name
            if o.kind == WAIT_VALUE:
                c = self._counters[o.obj]
                parts.append(f"op #{o.seq} on stream {name} waits for counter {c.name} ≥ {o.value}, "
                             f"which holds {c.value} and nothing queued will raise")
            else:
                parts.append(f"op #{o.seq} ({kv.LoadOpKind.Name(o.kind)}) on stream {name} waits behind it")
        if len(stuck) > 4:
            parts.append(f"… {len(stuck) - 4} more")
        return "; ".join(parts)

    def sdk_copy(self, s: Stream, dst: Ref, src: Ref, n: int, role: int, item, what: str) -> None:
        """One of the SDK's own copies (probe, reader, producer)."""
        o = _Op(0, 0, 0, s._id, COPY, role=role, item=item, reads=[(src, n)], writes=[(dst, n)])
        if self._schedule is not None:
            o.label = f"{what} {self._schedule.name(item)}"
        self._enqueue(o)

    def trace(self):
        out = []
        for o in self._ops:
            a = kv.LoadAccess(seq=o.seq, stream=o.stream, kind=o.kind, role=o.role, label=o.label, object=o.obj,
                              value=o.value, after=-1, held=o.held, epoch=o.epoch)
            if o.item is not None:
                a.item.CopyFrom(o.item)
            if o.after is not None and o.after.call == self._call:
                a.after = o.after.seq
            for r, n in o.reads:
                a.reads.add(memory=r.mem, offset=r.off, size=n)
            for r, n in o.writes:
                a.writes.add(memory=r.mem, offset=r.off, size=n)
            out.append(a)
        return out

    def names(self):
        return ([s.name for s in self._streams], [e.name for e in self._events],
                [c.name for c in self._counters], [m.name for m in self._mems])

    def close(self) -> None:
        self._eng.close(self)


def _nothing(*_args) -> None:
    """A hook of the host engine: there is nothing on the host to make,
    issue, wait for or release."""


class HostEngine:
    """The CPU backend: the model runs each copy as a numpy copy. It has no
    device streams, events or counters, and no device work: the other
    hooks do nothing."""

    device = None

    stream = event = counter = _nothing
    issue = begin = settle = release = force = finish = close = _nothing

    def scratch(self, name, n):
        return _Memory(f"scratch {name}", n, host=np.zeros(n, dtype=np.uint8))

    def run(self, x, o):
        if o.kind == COPY:
            (d, n), (s, _) = o.writes[0], o.reads[0]
            x._mems[d.mem].host[d.off:d.off + n] = x._mems[s.mem].host[s.off:s.off + n]


def host_exec(regions) -> Exec:
    """An Exec over host regions (numpy uint8 arrays)."""
    return Exec(HostEngine(), [_Memory(_region_name(i), len(r), host=r) for i, r in enumerate(regions)])


def _region_name(i: int) -> str:
    return {0: "device", 1: "host"}.get(i, f"region{i}")


class TorchEngine:
    """The GPU backend: torch streams and events; copies and stream memory
    operations through the driver (ctypes on libcuda), on the torch
    streams' handles; the latch and the counters words of one device
    allocation."""

    WORD = 64  # bytes between words: a cache line each
    WORDS = 64

    def __init__(self, device: int):
        import ctypes

        import torch

        self._torch, self.device = torch, device
        self._cu = ctypes.CDLL("libcuda.so.1")
        self._c = ctypes
        for name in ("cuStreamWaitValue32_v2", "cuStreamWriteValue32_v2", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoDAsync_v2",
                     "cuMemcpyDtoHAsync_v2"):
            getattr(self._cu, name).restype = ctypes.c_int
        self._words = torch.zeros(self.WORD * self.WORDS // 4, dtype=torch.int32, device=f"cuda:{device}")
        self._next = 1
        self._rel = torch.cuda.Stream(device=device)
        self._markers: list = []
        self._marks = False
        self._scratch = []

    def _word(self, i: int) -> int:
        return self._words.data_ptr() + self.WORD * i

    def _check(self, what, r):
        if r != 0:
            raise RuntimeError(f"{what}: CUDA driver error {r}")

    def stream(self):
        return self._torch.cuda.Stream(device=self.device)

    def event(self):
        return self._torch.cuda.Event()

    def counter(self):
        if self._next == self.WORDS:
            raise RuntimeError(f"at most {self.WORDS - 1} counters per attach")
        self._next += 1
        return self._word(self._next - 1)

    def scratch(self, name, n):
        t = self._torch.empty(n, dtype=self._torch.uint8, device=f"cuda:{self.device}")
        self._scratch.append(t)
        return _Memory(f"scratch {name}", n, dev=t.data_ptr())

    def _ptr(self, x, r: Ref):
        m = x._mems[r.mem]
        if m.host is not None:
            return m.host.ctypes.data + r.off, True
        return m.dev + r.off, False

    def issue(self, x, o):
        c, cu = self._c, self._cu
        s = x._streams[o.stream].handle
        h = c.c_void_p(s.cuda_stream)
        if o.kind == COPY:
            (d, n), (src, _) = o.writes[0], o.reads[0]
            dp, dh = self._ptr(x, d)
            sp, sh = self._ptr(x, src)
            if sh and not dh:
                self._check("cuMemcpyHtoDAsync", cu.cuMemcpyHtoDAsync_v2(c.c_uint64(dp), c.c_void_p(sp), c.c_size_t(n), h))
            elif not dh:
                self._check("cuMemcpyDtoDAsync", cu.cuMemcpyDtoDAsync_v2(c.c_uint64(dp), c.c_uint64(sp), c.c_size_t(n), h))
            else:
                self._check("cuMemcpyDtoHAsync", cu.cuMemcpyDtoHAsync_v2(c.c_void_p(dp), c.c_uint64(sp), c.c_size_t(n), h))
        elif o.kind == RECORD:
            x._events[o.obj].handle.record(s)
        elif o.kind == WAIT:
            s.wait_event(x._events[o.obj].handle)
        elif o.kind == WRITE_VALUE:
            self._check("cuStreamWriteValue32", cu.cuStreamWriteValue32_v2(h, c.c_uint64(x._counters[o.obj].handle), c.c_uint32(o.value), c.c_uint(0)))
        elif o.kind == WAIT_VALUE:
            self._check("cuStreamWaitValue32", cu.cuStreamWaitValue32_v2(h, c.c_uint64(x._counters[o.obj].handle), c.c_uint32(o.value), c.c_uint(0)))
        elif o.kind == LATCH:
            self._check("cuStreamWaitValue32", cu.cuStreamWaitValue32_v2(h, c.c_uint64(self._word(0)), c.c_uint32(1), c.c_uint(0)))
        if self._marks:
            while len(self._markers) <= o.seq:
                self._markers.append(self._torch.cuda.Event())
            o.marker = self._markers[o.seq]
            o.marker.record(s)

    def run(self, x, o):
        pass

    def _write(self, word_ptr: int, v: int) -> None:
        c = self._c
        h = c.c_void_p(self._rel.cuda_stream)
        self._check("cuStreamWriteValue32", self._cu.cuStreamWriteValue32_v2(h, c.c_uint64(word_ptr), c.c_uint32(v), c.c_uint(0)))

    def begin(self, x, latch):
        self._marks = latch
        self._write(self._word(0), 0)
        self._rel.synchronize()

    def settle(self, x):
        deadline = time.monotonic() + 5
        for s in x._streams:
            o = s.last_run
            if o is None or o.call != x._call or o.marker is None:
                continue
            while not o.marker.query():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"stream {s.name} did not reach op #{o.seq}, which nothing holds, within 5 s")
                time.sleep(5e-6)

    def release(self, x):
        self._write(self._word(0), 1)

    def force(self, x, o):
        self._write(x._counters[o.obj].handle, o.value)

    def finish(self, x):
        for s in x._streams:
            s.handle.synchronize()
        self._rel.synchronize()

    def close(self, x):
        self.finish(x)
        self._scratch.clear()
