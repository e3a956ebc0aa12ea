"""Bench: timing a kernel inside the plugin, with no RPC in the timed loop,
exactly as the Go SDK does (harness/sdk/bench*.go), so a Python kernel's
numbers sit in the same table as a Go plugin's:

- per-launch mode times each launch alone (tail latency, host launch cost
  included); batched mode times ``batch`` launches back to back
  (throughput);
- cold mode writes ``flush_bytes`` of scratch memory before each timed
  launch, outside the timed region, to evict the caches; it needs
  per-launch timing, since a batch would flush only before its first;
- ``copy`` times a copy of ``copy_bytes`` (the roofline) and ``empty`` an
  empty launch (the launch-overhead floor) instead of the kernel;
- ``rotation`` gives the store more data sets (rows, slots, maybe another
  pool of the same layout), which launches take in turn, going on across
  Bench calls, so that no launch finds the last one's data in the caches;
  a copy rotates over as many buffer pairs;
- in graph mode the store is replayed from its captured CUDA graph, and
  the empty launch from a one-node graph.

On the host the clock is time.perf_counter_ns. On the GPU it is a pair of
torch.cuda.Event records on the plugin's stream; a batched measurement is
queued behind a spin kernel (torch.cuda._sleep) sized from the host's cost
per launch, so the events time the GPU running the batch, not Python
queueing it; a batch whose hold ended before it was queued is taken again
(up to 16 times a bench) and otherwise counted in host_paced.
"""

from __future__ import annotations

import time

import numpy as np

from . import protocol as pb
from ._gen import store_pb2  # BenchRequest.store is the store kind's call
from .errors import bad_request

DEFAULT_BATCH = 64  # launches per timing in batched mode when batch is 0
DEFAULT_DEVICE_FLUSH = 256 << 20  # several times the H200's 60 MiB L2
DEFAULT_HOST_FLUSH = 64 << 20  # several times a server CPU's L3
MAX_BENCH_BYTES = 16 << 30  # a typo in copy_bytes is an error, not an OOM kill

# Hold sizing for batched GPU timings, as harness/sdk/hold.go.
INITIAL_CALL_COST_NS = 50_000
HOLD_SLACK_NS = 20_000
MAX_HOLD_NS = 200_000_000


# Bounds on a request's counts, as harness/sdk/bench.go: a typo is an
# error, not gigabytes of samples or hours of launches.
MAX_BENCH_ITERATIONS = 100_000
MAX_BENCH_WARMUP = 1_000_000
MAX_BENCH_BATCH = 100_000


def check_counts(req) -> None:
    """Rejects counts out of bounds, cold caches with batched timing and a
    rotation that is not the store's call on other data, with the Go SDK's
    messages."""
    if req.iterations == 0:
        raise bad_request("bench: iterations is 0; ask for at least one measurement")
    if req.iterations > MAX_BENCH_ITERATIONS:
        raise bad_request(
            f"bench: {req.iterations} iterations; at most {MAX_BENCH_ITERATIONS} per call (call again for more)"
        )
    if req.warmup > MAX_BENCH_WARMUP:
        raise bad_request(f"bench: {req.warmup} warmup launches; at most {MAX_BENCH_WARMUP}")
    if req.batch > MAX_BENCH_BATCH:
        raise bad_request(f"bench: batch of {req.batch} launches; at most {MAX_BENCH_BATCH}")
    if req.cold and per_timing(req) > 1:
        raise bad_request(
            f"bench: cold caches with a batch of {per_timing(req)}: a batch flushes once, "
            "so its later launches run hot; time cold launches per launch"
        )
    check_rotation(req)


# A rotation's bound: enough sets to step past any cache's reuse, few
# enough that a typo does not stage gigabytes (harness/sdk/bench_rotation.go).
MAX_ROTATION = 63


def bench_stores(req) -> list:
    """What a store bench launches in turn: the store, then its rotation."""
    if not req.HasField("store"):
        return []
    return [req.store] + list(req.rotation)


def rotations(req) -> int:
    """How many data sets a bench's launches take in turn."""
    return 1 + len(req.rotation)


def _padding_name(p) -> str:
    return store_pb2.Padding.Name(p) if p in store_pb2.Padding.values() else str(p)


def check_rotation(req) -> None:
    """Every rotation entry must be the store's call on other data, maybe
    in another pool (whose layout same_layouts checks)."""
    if len(req.rotation) == 0:
        return
    if not req.HasField("store"):
        raise bad_request(f"bench: a rotation of {len(req.rotation)} stores without a store; send the first in store")
    if len(req.rotation) > MAX_ROTATION:
        raise bad_request(f"bench: rotation of {len(req.rotation)} stores; at most {MAX_ROTATION} "
                          f"(kvharness bench --rotate {MAX_ROTATION + 1} at the most)")
    st = req.store
    for i, r in enumerate(req.rotation):
        if (r.capacity, r.valid, r.padding, r.graph) != (st.capacity, st.valid, st.padding, st.graph):
            raise bad_request(
                f"bench: rotation[{i}] is not the store's call on other data (capacity {r.capacity}, valid {r.valid}, "
                f"padding {_padding_name(r.padding)}, graph {_go_bool(r.graph)}; the store has {st.capacity}, {st.valid}, "
                f"{_padding_name(st.padding)}, {_go_bool(st.graph)}): only the pool, rows_offset and loc_offset may differ")


def _go_bool(b: bool) -> str:
    return "true" if b else "false"


def same_layouts(req, pools) -> None:
    """A rotation into a pool of another layout than the store's would
    time another kernel. Pools out of range are left to the store's check,
    which names them."""
    if not req.HasField("store") or req.store.pool >= len(pools):
        return
    want = pools[req.store.pool].layout
    for i, r in enumerate(req.rotation):
        if r.pool < len(pools) and pools[r.pool].layout != want:
            raise bad_request(
                f"bench: rotation[{i}] stores into pool {r.pool} ({_layout(pools[r.pool].layout)}), the store into pool "
                f"{req.store.pool} ({_layout(want)}): a rotation's pools share one layout")


def _layout(l) -> str:
    """A layout as Go's %v prints sdk.Layout."""
    return f"{{{l.name} {l.head_dim} {l.page_size}}}"


# Rotations remembered across Bench calls: a bench run has a few cells at
# a time; a typo must not grow the table without end.
MAX_TURNS = 64


class Turns(dict):
    """Per rotation, which data set the next launch takes, across Bench
    calls: the harness splits a cell into many calls, and a call that
    started again at the first set would follow a launch on that set."""

    def in_turn(self, key: str, launches: list):
        if len(launches) == 1:
            return launches[0]
        if key not in self and len(self) >= MAX_TURNS:
            self.clear()

        def launch():
            i = self.get(key, 0) % len(launches)
            self[key] = (i + 1) % len(launches)
            launches[i]()

        return launch


def rotation_key(req) -> str:
    """What a bench rotates over: the kernel (store or copy) and every
    store's pool and data."""
    parts = ["copy" if req.copy else "store"]
    for st in bench_stores(req):
        parts.append(f"{st.pool}:{st.capacity}:{st.rows_offset}:{st.loc_offset}:{_go_bool(st.graph)}")
    return "/".join(parts)


def per_timing(req) -> int:
    """Launches one measurement covers."""
    if req.mode != pb.BENCH_BATCHED:
        return 1
    return req.batch or DEFAULT_BATCH


def flush_bytes(req, default: int) -> int:
    return default if req.flush_bytes == 0 else min(req.flush_bytes, MAX_BENCH_BYTES)


def copy_bytes(req, pools) -> int:
    """copy_bytes, or the store's input rows (capacity × head_dim bf16); a
    rotating copy needs that many bytes per buffer pair, within the same
    bound in all."""
    n = req.copy_bytes
    st = req.store if req.HasField("store") else None
    if n == 0 and st is not None and st.pool < len(pools):
        n = st.capacity * pools[st.pool].layout.head_dim * 2
    r = rotations(req)
    if n == 0 or (r == 1 and n > MAX_BENCH_BYTES):
        raise bad_request(
            f"copy bench of {n} bytes: set copy_bytes between 1 and {MAX_BENCH_BYTES} (or send the store whose rows to copy)"
        )
    if n > MAX_BENCH_BYTES // r:
        raise bad_request(f"copy bench of {n} bytes over {r} buffer pairs: more than {MAX_BENCH_BYTES} bytes in all; "
                          "copy fewer bytes or rotate over fewer sets")
    return n


class Retake(Exception):
    """A measurement that is not what it claims to be (a batch whose hold
    ended before it was queued): measure takes it again."""


MAX_RETAKES = 16  # per bench, as the Go SDK


class Ops:
    """One backend's side of a bench: launch (queue or run one launch),
    flush(i) (cold mode), start/stop (the timed region; stop returns ns or
    raises Retake) and settle (wait for the warmup)."""

    def __init__(self, launch, flush, start, stop, settle):
        self.launch, self.flush, self.start, self.stop, self.settle = launch, flush, start, stop, settle


def measure(req, ops: Ops, per: int):
    """Warmup, then the timed measurements, as (samples, host_paced). A
    measurement below the clock's resolution is reported as 1 ns, so every
    sample is positive. A measurement to retake is taken again up to
    MAX_RETAKES times per bench, then kept and counted as host paced."""
    for _ in range(req.warmup):
        ops.launch()
    ops.settle()
    out, host_paced, retakes = [], 0, 0
    while len(out) < req.iterations:
        i = len(out)
        if req.cold:
            ops.flush(i)
        ops.start()
        for _ in range(per):
            ops.launch()
        try:
            ns = ops.stop()
        except Retake as r:
            if retakes < MAX_RETAKES:
                retakes += 1
                continue
            host_paced += 1
            ns = r.args[0]
        out.append(float(max(ns, 1)))
    return out, host_paced


class HostBench:
    """CPU benches; the scratch buffers live as long as the plugin, so a
    nightly run of many benches does not churn memory."""

    def __init__(self):
        self._flush = self._src = self._dst = None

    @staticmethod
    def _grow(buf, n):
        return buf if buf is not None and buf.size >= n else np.empty(n, dtype=np.uint8)

    def copy_launch(self, req, pools, turns: Turns):
        """The roofline: a memory copy of copy_bytes, or a rotation's buffer
        pairs in turn."""
        n, r = copy_bytes(req, pools), rotations(req)
        self._src, self._dst = self._grow(self._src, r * n), self._grow(self._dst, r * n)
        launches = []
        for i in range(r):
            src, dst = self._src[i * n : (i + 1) * n], self._dst[i * n : (i + 1) * n]
            launches.append(lambda src=src, dst=dst: np.copyto(dst, src))
        return turns.in_turn(rotation_key(req), launches)

    def run(self, req, launch):
        """Times launch (the store, the copy or None for the empty call) on
        the monotonic clock: (samples, host_paced), nothing host paced."""
        launch = launch or _nothing
        fb = flush_bytes(req, DEFAULT_HOST_FLUSH)
        t0 = [0]

        def flush(i):
            self._flush = self._grow(self._flush, fb)
            self._flush[:fb] = i & 0xFF

        def start():
            t0[0] = time.perf_counter_ns()

        ops = Ops(launch, flush, start, lambda: time.perf_counter_ns() - t0[0], _nothing)
        return measure(req, ops, per_timing(req))


def _nothing():
    """The CPU's empty launch: a call that does nothing."""


class DeviceBench:
    """GPU benches on one attach: events, scratch buffers, the empty
    kernel's graph and the spin kernel's calibration are kept until
    Detach."""

    def __init__(self, ctx):
        import torch

        self.ctx = ctx
        self.torch = torch
        self.start_ev = torch.cuda.Event(enable_timing=True)
        self.end_ev = torch.cuda.Event(enable_timing=True)
        self._flush = self._src = self._dst = None
        self._empty_graph = None
        self._cycles_per_ns = None
        self._call_cost_ns = INITIAL_CALL_COST_NS

    def _grow(self, buf, n):
        if buf is not None and buf.numel() >= n:
            return buf
        return self.torch.empty(n, dtype=self.torch.uint8, device=f"cuda:{self.ctx.device}")

    def copy_launch(self, req, pools, turns: Turns):
        """The roofline: a device-to-device copy of copy_bytes between two
        plugin-owned buffers, or between a rotation's pairs in turn."""
        n, r = copy_bytes(req, pools), rotations(req)
        self._src, self._dst = self._grow(self._src, r * n), self._grow(self._dst, r * n)
        launches = []
        for i in range(r):
            src, dst = self._src[i * n : (i + 1) * n], self._dst[i * n : (i + 1) * n]
            launches.append(lambda src=src, dst=dst: dst.copy_(src))  # cudaMemcpyAsync device to device
        return turns.in_turn(rotation_key(req), launches)

    def empty_launch(self, graph: bool, graphs):
        """The launch-overhead floor: an empty kernel through torch's launch
        path, or (graph mode) replayed from a one-node graph, as a store's
        launch or replay."""
        torch = self.torch
        launch = lambda: torch.cuda._sleep(0)  # noqa: E731
        if not graph:
            return launch
        if self._empty_graph is None:
            self._empty_graph = graphs.capture(launch, "the empty kernel")
        return self._empty_graph.replay

    def _calibrate(self) -> float:
        """torch.cuda._sleep spins for clock cycles; measure cycles per ns
        once (CUDA 13 no longer reports the clock rate in the device
        properties)."""
        if self._cycles_per_ns is None:
            torch = self.torch
            cycles = 2_000_000
            torch.cuda._sleep(cycles)  # wake the clocks
            self.start_ev.record()
            torch.cuda._sleep(cycles)
            self.end_ev.record()
            self.end_ev.synchronize()
            ns = self.start_ev.elapsed_time(self.end_ev) * 1e6
            self._cycles_per_ns = cycles / ns if ns > 0 else 2.0
        return self._cycles_per_ns

    def run(self, req, launch):
        """Times launch on CUDA events recorded on the attach's stream:
        (samples, host_paced)."""
        torch = self.torch
        per = per_timing(req)
        batched = req.mode == pb.BENCH_BATCHED
        cycles_per_ns = self._calibrate() if batched else 0.0
        flush = self._flush_op(req)
        queued = [0]

        def start():
            # A batch is queued behind a hold: its timing is the GPU's. A
            # single launch is not: per-launch mode is the latency a
            # caller sees, host launch cost included.
            queued[0] = time.perf_counter_ns()
            if batched:
                hold = min(MAX_HOLD_NS, 2 * self._call_cost_ns * (per + 2) + HOLD_SLACK_NS)
                torch.cuda._sleep(int(hold * cycles_per_ns))
            self.start_ev.record()

        def stop():
            # The hold ended before the batch was queued when the start
            # event, right behind it, has already been reached: the GPU may
            # then have waited for launches, timing the host's pace.
            outrun = batched and self.start_ev.query()
            self.end_ev.record()
            self._call_cost_ns = (time.perf_counter_ns() - queued[0]) // (per + 2)
            self.end_ev.synchronize()
            ns = self.start_ev.elapsed_time(self.end_ev) * 1e6
            if outrun:
                raise Retake(ns)
            return ns

        ops = Ops(launch, flush, start, stop, self.ctx.sync)
        try:
            return measure(req, ops, per)
        finally:
            self.ctx.sync()

    def _flush_op(self, req):
        """Cold mode's flush: a fill of flush_bytes (default 256 MiB) on the
        stream, before the start event. Allocated only when asked for."""
        if not req.cold:
            return lambda i: None
        n = flush_bytes(req, DEFAULT_DEVICE_FLUSH)
        self._flush = self._grow(self._flush, n)
        buf = self._flush[:n]
        return lambda i: buf.fill_(i & 0xFF)
