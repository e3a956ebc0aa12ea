"""CUDA-graph capture and replay of store kernels, as serving engines do it
(SGLang's and vLLM's CUDA-graph runners):

- per shape (pool, capacity, padding, staging offsets, slot width), static
  input tensors of the captured capacity C: rows, loc and a device int32
  holding the valid count n;
- on first use, the kernel's store is captured into a torch.cuda.CUDAGraph
  with its call pointing at those static tensors (the capture runs
  nothing);
- every call, the first included, copies its inputs into the static
  tensors in stream order, writes n into the static count and replays the
  graph.

That is how the incident happened: a pad-unaware scatter captured at
capacity C and replayed with fewer valid rows writes the padded rows'
slots, whatever loc holds there, and a kernel that sized its launch from
the host's n replays the captured n forever.

The whole C rows of loc are copied, not only the valid ones: what padded
rows hold (stale slots, the sink, -1) is the harness's padding convention,
the part of the engine's static buffer the test is about.

Capture is relaxed (torch's capture_error_mode="relaxed", as the Go SDK's
cuStreamBeginCapture): calls the kernel makes outside the stream, such as
Triton compiling a specialisation it has not seen, do not break it. The
graphs of one attach share a memory pool: they replay one at a time on one
stream and have no outputs, so the temporaries of one may reuse another's.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict

from .errors import aborted
from .kernel import PADDING_NAMES

# Captured graphs kept per attach: enough for every capacity of a check
# (512 capacities × 3 pools × a padding), few enough that a long run cannot
# fill the device with static inputs.
MAX_GRAPHS = 4096

GRAPH_HINT = ("a store captured in a CUDA graph may only enqueue work on the current stream: "
              "no synchronisation, no host reads of device data (.item(), .cpu(), .tolist()), no allocation "
              "that must outlive the call")


class GraphKey(tuple):
    """What a captured store depends on. The valid count is not in it:
    replays read n from the static count."""

    __slots__ = ()

    def __new__(cls, pool: int, capacity: int, padding: int, rows: int, loc: int, slot_bits: int):
        return super().__new__(cls, (pool, capacity, padding, rows, loc, slot_bits))

    def __str__(self):
        pool, capacity, padding, rows, loc, bits = self
        return (f"pool {pool}, capacity {capacity}, padding {PADDING_NAMES.get(padding, padding)}, "
                f"rows at {rows}, loc at {loc} (int{bits})")


class StoreGraph:
    """One captured store and its static inputs."""

    def __init__(self, rows, loc, valid_t):
        self.rows, self.loc, self.valid_t = rows, loc, valid_t
        self.graph = None

    def load(self, rows, loc, n: int) -> None:
        """Copies a call's inputs into the static tensors, in stream order
        (a loc staged at another width is converted as it is copied)."""
        self.rows.copy_(rows)
        self.loc.copy_(loc)
        self.valid_t.fill_(n)

    def replay(self) -> None:
        self.graph.replay()


class GraphCache:
    """The captured stores of one CUDA attach."""

    def __init__(self, torch, device: int):
        self.torch, self.device = torch, device
        self.graphs = OrderedDict()
        self._pool = None

    def _mempool(self):
        if self._pool is None:
            self._pool = self.torch.cuda.graph_pool_handle()
        return self._pool

    def get(self, key, call, store) -> StoreGraph:
        """The graph for key, capturing store(static call) the first time.
        call is the request's StoreCall on the staged inputs; the graph's
        static inputs are loaded from it either way."""
        g = self.graphs.get(key)
        if g is not None:
            g.load(call.rows, call.loc, call.valid)
            return g
        torch = self.torch
        dev = f"cuda:{self.device}"
        g = StoreGraph(torch.empty_like(call.rows, device=dev),
                       torch.empty(call.capacity, dtype=torch.int32 if call.slot_bits == 32 else torch.int64, device=dev),
                       torch.zeros(1, dtype=torch.int32, device=dev))
        g.load(call.rows, call.loc, call.valid)
        static = dataclasses.replace(call, rows=g.rows, loc=g.loc, valid_t=g.valid_t)
        g.graph = self._capture(lambda: store(static), key)
        if len(self.graphs) >= MAX_GRAPHS:
            self.graphs.popitem(last=False)
        self.graphs[key] = g
        return g

    def capture(self, fn, key):
        """A graph of what fn queues (the empty kernel of benches)."""
        return self._capture(fn, key)

    def _capture(self, fn, key):
        torch = self.torch
        graph = torch.cuda.CUDAGraph()
        try:
            graph.capture_begin(pool=self._mempool(), capture_error_mode="relaxed")
        except TypeError:  # torch before 2.1 has no capture_error_mode
            graph.capture_begin(pool=self._mempool())
        err = None
        try:
            fn()
        except Exception as e:  # noqa: BLE001  reported below, after the capture is ended
            err = e
        try:
            graph.capture_end()
        except Exception as e:  # noqa: BLE001
            if err is None:
                err = e
        if err is not None:
            raise aborted(f"store kernel failed: capture a CUDA graph for {key}: {type(err).__name__}: {err}; "
                          f"{GRAPH_HINT}") from err
        return graph

    def clear(self) -> None:
        self.graphs.clear()
        self._pool = None


def graph_cache(att) -> GraphCache:
    """The attachment's graphs, made on first use."""
    if att.graphs is None:
        import torch

        att.graphs = GraphCache(torch, att.device)
    return att.graphs
