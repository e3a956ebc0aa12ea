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
  empty launch (the launch-overhead floor) instead of the kernel.

On the host the clock is time.perf_counter_ns. On the GPU it is a pair of
torch.cuda.Event records on the plugin's stream; a batched measurement is
queued behind a spin kernel (torch.cuda._sleep) sized from the host's cost
per launch, so the events time the GPU running the batch, not Python
queueing it.
"""

from __future__ import annotations

import time

import numpy as np

from . import protocol as pb
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
    """Rejects counts out of bounds and cold caches with batched timing,
    with the Go SDK's messages."""
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
    if len(req.rotation) > 0:
        raise bad_request(
            f"bench: rotation over {len(req.rotation) + 1} stores: this SDK times one store "
            "(it does not declare bench_rotation); bench it without rotation"
        )
    if req.cold and per_timing(req) > 1:
        raise bad_request(
            f"bench: cold caches with a batch of {per_timing(req)}: a batch flushes once, "
            "so its later launches run hot; time cold launches per launch"
        )


def per_timing(req) -> int:
    """Launches one measurement covers."""
    if req.mode != pb.BENCH_BATCHED:
        return 1
    return req.batch or DEFAULT_BATCH


def flush_bytes(req, default: int) -> int:
    return default if req.flush_bytes == 0 else min(req.flush_bytes, MAX_BENCH_BYTES)


def copy_bytes(req, pools) -> int:
    """copy_bytes, or the store's input rows (capacity × head_dim bf16)."""
    n = req.copy_bytes
    st = req.store if req.HasField("store") else None
    if n == 0 and st is not None and st.pool < len(pools):
        n = st.capacity * pools[st.pool].layout.head_dim * 2
    if n == 0 or n > MAX_BENCH_BYTES:
        raise bad_request(
            f"copy bench of {n} bytes: set copy_bytes between 1 and {MAX_BENCH_BYTES} (or send the store whose rows to copy)"
        )
    return n


class Ops:
    """One backend's side of a bench: launch (queue or run one launch),
    flush(i) (cold mode), start/stop (the timed region; stop returns ns)
    and settle (wait for the warmup)."""

    def __init__(self, launch, flush, start, stop, settle):
        self.launch, self.flush, self.start, self.stop, self.settle = launch, flush, start, stop, settle


def measure(req, ops: Ops, per: int) -> list:
    """Warmup, then the timed measurements. A measurement below the
    clock's resolution is reported as 1 ns, so every sample is positive."""
    for _ in range(req.warmup):
        ops.launch()
    ops.settle()
    out = []
    for i in range(req.iterations):
        if req.cold:
            ops.flush(i)
        ops.start()
        for _ in range(per):
            ops.launch()
        out.append(float(max(ops.stop(), 1)))
    return out


class HostBench:
    """CPU benches; the scratch buffers live as long as the plugin, so a
    nightly run of many benches does not churn memory."""

    def __init__(self):
        self._flush = self._src = self._dst = None

    @staticmethod
    def _grow(buf, n):
        return buf if buf is not None and buf.size >= n else np.empty(n, dtype=np.uint8)

    def run(self, req, launch, pools) -> list:
        if req.empty:
            launch = _nothing
        elif req.copy:
            n = copy_bytes(req, pools)
            self._src, self._dst = self._grow(self._src, n), self._grow(self._dst, n)
            src, dst = self._src[:n], self._dst[:n]
            launch = lambda: np.copyto(dst, src)  # noqa: E731
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
    """GPU benches on one attach: events, scratch buffers and the spin
    kernel's calibration are kept until Detach."""

    def __init__(self, arena):
        import torch

        self.arena = arena
        self.torch = torch
        self.start_ev = torch.cuda.Event(enable_timing=True)
        self.end_ev = torch.cuda.Event(enable_timing=True)
        self._flush = self._src = self._dst = None
        self._cycles_per_ns = None
        self._call_cost_ns = INITIAL_CALL_COST_NS

    def _grow(self, buf, n):
        if buf is not None and buf.numel() >= n:
            return buf
        return self.torch.empty(n, dtype=self.torch.uint8, device=f"cuda:{self.arena.device}")

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

    def run(self, req, launch, pools) -> list:
        torch = self.torch
        if req.empty:
            launch = lambda: torch.cuda._sleep(0)  # noqa: E731  an empty kernel through torch's launch path
        elif req.copy:
            n = copy_bytes(req, pools)
            self._src, self._dst = self._grow(self._src, n), self._grow(self._dst, n)
            src, dst = self._src[:n], self._dst[:n]
            launch = lambda: dst.copy_(src)  # noqa: E731  cudaMemcpyAsync device to device
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
            self.end_ev.record()
            self._call_cost_ns = (time.perf_counter_ns() - queued[0]) // (per + 2)
            self.end_ev.synchronize()
            return self.start_ev.elapsed_time(self.end_ev) * 1e6

        ops = Ops(launch, flush, start, stop, self.arena.sync)
        try:
            return measure(req, ops, per)
        finally:
            self.arena.sync()

    def _flush_op(self, req):
        """Cold mode's flush: a fill of flush_bytes (default 256 MiB) on the
        stream, before the start event. Allocated only when asked for."""
        if not req.cold:
            return lambda i: None
        n = flush_bytes(req, DEFAULT_DEVICE_FLUSH)
        self._flush = self._grow(self._flush, n)
        buf = self._flush[:n]
        return lambda i: buf.fill_(i & 0xFF)
