"""The store kind: its service (Store, StoreBatch), its requests checked
as the Go SDK checks them (harness/sdk/store), turned into a
:class:`StoreCall` and run eagerly or through a captured CUDA graph
(graphs.py), and the launches Bench times for stores.
"""

from __future__ import annotations

import sys
import time

from . import protocol as pb
from ._gen import store_pb2, store_pb2_grpc
from .calls import attached_pool, label, labelled, run_kernel, sync_or_fault
from .errors import RpcError, bad_request, unimplemented
from .graphs import GraphKey, graph_cache
from .kernel import CUDA, PAGE_TABLE, SHM, PageTable, StoreCall
from .kind import Kind

kv = store_pb2

# The CUDA backend hands kernels 16-byte aligned rows (vector loads), as
# the Go SDK's deviceRowsAlign.
DEVICE_ROWS_ALIGN = 16


def slot_bits(req) -> int:
    """The width loc is staged at: StoreRequest.slot_bits, 0 meaning 64."""
    bits = req.slot_bits or 64
    if bits not in (32, 64):
        raise bad_request(f"slot_bits {req.slot_bits}: want 32 or 64 (0 means 64)")
    return bits


class Widths:
    """Hands a kernel loc at the width it declared. A harness that staged
    loc at another width (one older than slot_bits, which stages int64
    whatever the plugin declares) gets its slots converted as the kernel's
    own cast would, with a note on stderr once."""

    def __init__(self, name: str, declared: int, addressing=("slots",)):
        self.name, self.declared, self._noted = name, declared, False
        self.addressing = tuple(addressing)

    def convert(self, loc, staged: int, backend: str):
        if staged == self.declared:
            return loc
        if not self._noted:
            self._noted = True
            sys.stderr.write(f"kvharness_sdk: the harness staged loc as int{staged} but {self.name} declares "
                             f"slot_bits {self.declared}: converting each call's slots (update kvharness to stage "
                             "them at the declared width)\n")
        if backend == CUDA:
            import torch

            return loc.to(torch.int32 if self.declared == 32 else torch.int64)
        import numpy as np

        out = loc.astype(np.int32 if self.declared == 32 else np.int64)
        out.setflags(write=False)
        return out


def store_call(att, widths: Widths, req) -> StoreCall:
    """Checks a store request against the attachment and builds the
    kernel's view of it."""
    p = attached_pool(att, req.pool, "store")
    c, n, d = req.capacity, req.valid, req.row_elems or p.layout.head_dim
    if c < 1 or n > c:
        raise bad_request(f"capacity {c}, valid {n}: want 1 <= capacity and valid <= capacity")
    try:
        att.in_staging(req.rows_offset, c * d, 2)
    except RpcError as e:
        raise e.prefixed("rows")
    bits = slot_bits(req)
    try:
        att.in_staging(req.loc_offset, c, bits // 8)
    except RpcError as e:
        raise e.prefixed("loc")
    if att.backend == CUDA and req.rows_offset % DEVICE_ROWS_ALIGN:
        raise bad_request(
            f"rows offset {req.rows_offset}: the CUDA backend needs {DEVICE_ROWS_ALIGN}-byte aligned rows; "
            "stage them at an aligned offset"
        )
    att.kernel_region(f"pool {p.name}", p.region)
    att.kernel_region("staging", att.staging.region)
    st = att.staging_region()
    call = StoreCall(variant=att.variant, backend=att.backend, pool=p, arena=att.mem(p.region), capacity=c, valid=n,
                     padding=req.padding, rows=st.rows(req.rows_offset, c, d),
                     loc=widths.convert(st.loc(req.loc_offset, c, bits), bits, att.backend), graph=req.graph,
                     device=att.device, slot_bits=widths.declared, row_elems=d,
                     scales={s.tensor: list(s.values) for s in req.scales} or None)
    if req.HasField("page_table"):
        call.page_table = page_table(att, widths, req, p, c)
    if att.backend == CUDA:
        call.valid_t, call.stream = att.ctx.valid_t, att.ctx.stream
    return call


def page_table(att, widths, req, p, capacity: int) -> PageTable:
    """Checks a call's page table as the Go SDK does (the kernel indexes it
    unchecked) and hands it over as int32 arrays: numpy on shm, tensors on
    the device on cuda (eager calls only: a captured graph would replay the
    first call's table)."""
    if PAGE_TABLE not in widths.addressing:
        raise bad_request(f"a page-table call, but {widths.name} declares slot lists only (Kernel.addressing); "
                          f"add {PAGE_TABLE!r} to take it")
    t = req.page_table
    indptr, indices, last = list(t.kv_indptr), list(t.kv_indices), list(t.kv_last_page_len)
    batch, pos = list(t.batch_indices), list(t.positions)
    r = len(indptr) - 1
    if r < 0 or indptr[0] != 0 or indptr[-1] != len(indices):
        raise bad_request(f"page table: kv_indptr must run from 0 to len(kv_indices) = {len(indices)}")
    if len(last) != r:
        raise bad_request(f"page table: {len(last)} kv_last_page_len for {r} requests")
    if len(batch) != capacity or len(pos) != capacity:
        raise bad_request(f"page table: {len(batch)} batch_indices and {len(pos)} positions for {capacity} rows")
    if any(indptr[b + 1] < indptr[b] for b in range(r)):
        raise bad_request("page table: kv_indptr decreases")
    pages = (p.slots + p.layout.page_size - 1) // p.layout.page_size
    for k, pg in enumerate(indices):
        if not 0 <= pg < pages:
            raise bad_request(f"page table: kv_indices[{k}] = {pg} outside the pool's {pages} pages")
    for i, b in enumerate(batch):
        if not 0 <= b < r:
            raise bad_request(f"page table: batch_indices[{i}] = {b} outside the {r} requests")
    if att.backend == CUDA:
        if req.graph:
            raise unimplemented("page-table addressing runs eagerly only: a captured graph would replay the first "
                                "call's page table; drop --graph")
        import torch

        def arr(xs):
            return torch.tensor(xs, dtype=torch.int32, device=f"cuda:{att.device}")
    else:
        import numpy as np

        def arr(xs):
            out = np.asarray(xs, dtype=np.int32)
            out.setflags(write=False)
            return out

    return PageTable(p.layout.page_size, arr(indptr), arr(indices), arr(last), arr(batch), arr(pos))


def graph_key(req, bits: int) -> GraphKey:
    return GraphKey(req.pool, req.capacity, req.padding, req.rows_offset, req.loc_offset, bits)


class Stores:
    """The store side of the service for one kernel."""

    def __init__(self, kernel):
        self.k = kernel
        self.widths = Widths(kernel.name, kernel.slot_bits, kernel.addressing)

    def batch(self, att, calls) -> None:
        if att is not None and att.backend == CUDA:
            self._device(att, calls)
        else:
            self._host(att, calls)

    def _host(self, att, calls) -> None:
        if SHM not in self.k.backends or not self.k.has_store():
            raise unimplemented(f"{self.k.name} has no store kernel for host memory")
        for i, r in enumerate(calls):
            call = labelled(len(calls), i, store_call, att, self.widths, r)
            run_kernel(self.k.store, call, "store", label(len(calls), i))

    def _device(self, att, calls) -> None:
        if not self.k.has_store():
            raise unimplemented(f"{self.k.name} has no CUDA store kernel (it defines no store): "
                                "store with a plugin that has one")
        err = None
        with att.ctx.context():
            for i, r in enumerate(calls):
                try:
                    labelled(len(calls), i, self.enqueue, att, r)
                except RpcError as e:
                    err = e
                    break
        # Wait even after a failed call, so no write is still in flight
        # when the harness reads the arena.
        sync_or_fault(att, "store", err)
        if err is not None:
            raise err

    def enqueue(self, att, req) -> None:
        """Queues one store: the kernel itself, or a replay of the graph
        captured for the request's shape."""
        call = store_call(att, self.widths, req)
        if not req.graph:
            att.ctx.valid_t.fill_(call.valid)
            run_kernel(self.k.store, call)
            return
        self.graph(att, req, call).replay()

    def graph(self, att, req, call):
        """The captured graph of call's shape, its static inputs loaded
        with call's."""
        return graph_cache(att).get(graph_key(req, slot_bits(req)), call, lambda c: run_kernel(self.k.store, c))


class StoreServicer(store_pb2_grpc.StoreServicer):
    """The store service on the plugin's service ``core``."""

    def __init__(self, core):
        self.core = core
        self.stores = Stores(core.k)
        core.benches(_Bencher(self.stores))

    def Store(self, request, context):
        return self.core.rpc(context, self._batch, [request], kv.StoreResponse)

    def StoreBatch(self, request, context):
        start = time.perf_counter_ns()
        try:
            return self.core.rpc(context, self._batch, list(request.calls), kv.StoreBatchResponse)
        finally:
            # The handler's own time, which the harness reports apart from
            # the round trip (as the Go SDK's trailer).
            ns = time.perf_counter_ns() - start
            context.set_trailing_metadata(((pb.HANDLER_TIME_KEY, str(ns)),))

    def _batch(self, calls, response):
        with self.core.lock:
            self.stores.batch(self.core.att, calls)
        return response()


class _Bencher:
    """What Bench launches for stores (the base service's bencher)."""

    def __init__(self, stores: Stores):
        self.stores = stores

    def host_launches(self, att, stores) -> list:
        k = self.stores.k
        if SHM not in k.backends or not k.has_store():
            raise unimplemented(f"{k.name} has no store kernel for host memory")
        return [k.launcher(store_call(att, self.stores.widths, st)) for st in stores]

    def device_launches(self, att, stores) -> list:
        return [self._device_launch(att, st) for st in stores]

    def _device_launch(self, att, st):
        """What one timed launch of store st queues: the kernel's launcher,
        or the replay of its captured graph. The valid count is written
        once, before the warmup: it does not change during a bench."""
        k = self.stores.k
        if not k.has_store():
            raise unimplemented(f"{k.name} has no CUDA store kernel (it defines no store): "
                                "store with a plugin that has one")
        call = store_call(att, self.stores.widths, st)
        if st.graph:
            return self.stores.graph(att, st, call).replay
        att.ctx.valid_t.fill_(call.valid)
        return run_kernel(k.launcher, call, "store")


KIND = Kind(store_pb2.DESCRIPTOR.services_by_name["Store"], lambda k: k.has_store(), StoreServicer,
            store_pb2_grpc.add_StoreServicer_to_server)
