"""The kvharness.v1.Kernel service over a :class:`Kernel`.

Validation is the Go SDK's (harness/sdk/server.go, store.go, bench.go),
check for check and message for message where it matters, so the harness
classifies a Python plugin's answers as it does a Go plugin's:

- a window outside the arena, a pool index past the attached pools,
  capacity < 1 or valid > capacity, rows or loc outside staging or
  misaligned, an unknown variant: INVALID_ARGUMENT;
- a store or bench before Attach, an arena that cannot be mapped, a kernel
  whose prepare failed: FAILED_PRECONDITION;
- a kernel the plugin lacks (store on a backend it does not list, read,
  transfer, CUDA-graph replay): UNIMPLEMENTED;
- a kernel that raised: ABORTED with its message (its traceback goes to
  stderr, which the harness shows with the fault);
- a failed stream wait after the kernel (an illegal address, a trap):
  DATA_LOSS, a crash: the CUDA context is unusable until a restart.

Calls are serialised: one attachment, one kernel call at a time.
"""

from __future__ import annotations

import json
import sys
import threading
import traceback

import grpc

from . import protocol as pb
from .arena import DeviceArena, HostArena
from .bench import DeviceBench, HostBench, check_counts
from .errors import RpcError, aborted, bad_request, device_fault, precondition, unimplemented
from .kernel import CUDA, SHM, Attach, Kernel, Layout, Pool, StoreCall
from .pdasync import AsyncService, serves_async

kv = pb.kv

# The CUDA backend hands kernels 16-byte aligned rows (vector loads), as
# the Go SDK's deviceRowsAlign.
DEVICE_ROWS_ALIGN = 16

NO_GRAPH = (
    "the Python SDK runs kernels eagerly: CUDA-graph capture and replay (--graph, --mode graph) "
    "is not supported for Python plugins; run without it"
)


def go_quote(s: str) -> str:
    """s quoted as Go's %q does (for printable text), so messages read the
    same from a Python plugin as from a Go one."""
    return json.dumps(s, ensure_ascii=False)


def _backend_name(b: int) -> str:
    return kv.Backend.Name(b) if b in kv.Backend.values() else str(b)


class Window:
    """A byte range of the arena."""

    __slots__ = ("off", "size")

    def __init__(self, off: int, size: int):
        self.off, self.size = off, size

    @property
    def end(self) -> int:
        return self.off + self.size


def _window(msg, has: bool, arena_size: int) -> Window:
    if not has or msg.offset + msg.size > arena_size:
        shown = f"{{offset: {msg.offset}, size: {msg.size}}}" if has else "<nil>"
        raise bad_request(f"window {shown} outside the {arena_size}-byte arena")
    return Window(msg.offset, msg.size)


def _disjoint(pools, staging: Window) -> None:
    """Rejects pools that overlap each other or the staging window, as the
    Go SDK's disjoint: a kernel writing one pool would write another."""
    ws = [("staging", staging)] + [(f"pool {p.name}", Window(p.base, p.nbytes)) for p in pools]
    for i, (an, a) in enumerate(ws):
        for bn, b in ws[i + 1 :]:
            if a.size > 0 and b.size > 0 and a.off < b.end and b.off < a.end:
                raise bad_request(
                    f"{an} [{a.off}, {a.end}) overlaps {bn} [{b.off}, {b.end}); "
                    "give each pool and the staging its own bytes of the arena"
                )


class KernelService(AsyncService, pb.kv_grpc.KernelServicer):
    def __init__(self, kernel: Kernel):
        self.k = kernel
        self.lock = threading.Lock()
        self.arena = None  # HostArena or DeviceArena while attached
        self.pools = []
        self.staging = Window(0, 0)
        self.variant = ""
        self.host_bench = HostBench()
        self.device_bench = None

    # --- plumbing -----------------------------------------------------------

    def _rpc(self, context, fn, *args):
        """Runs fn, turning RpcError into its status and any other exception
        into INTERNAL (a bug in the SDK or the kernel's description, not a
        kernel failure: those are caught where the kernel is called)."""
        try:
            return fn(*args)
        except RpcError as e:
            context.abort(e.code, e.message)
        except Exception as e:  # noqa: BLE001  the harness must get an answer
            traceback.print_exc(file=sys.stderr)
            context.abort(grpc.StatusCode.INTERNAL, f"{self.k.name}: {type(e).__name__}: {e}")

    def _known_variant(self, v: str) -> None:
        if v and v not in self.k.variant_names():
            raise bad_request(f"{self.k.name} has no variant {go_quote(v)}")

    def _geometries(self, variant: str, head_dim: int, page_size: int):
        return list(self.k.geometry(variant, head_dim, page_size) or ())

    def close(self) -> None:
        """Releases the arena at shutdown."""
        with self.lock:
            try:
                self._release()
            except Exception:  # noqa: BLE001  shutting down anyway
                traceback.print_exc(file=sys.stderr)

    # --- Describe -------------------------------------------------------------

    def Describe(self, request, context):
        return self._rpc(context, self._describe, request)

    def _describe(self, req):
        self._known_variant(req.variant)
        resp = kv.DescribeResponse(name=self.k.name, version=self.k.version, doc=self.k.doc)
        if self.k.has_store():
            resp.kernels.append("store")
        if serves_async(self.k):
            resp.kernels.append("pdasync")
        if SHM in self.k.backends or CUDA not in self.k.backends:
            resp.backends.append(pb.BACKEND_SHM)
        if CUDA in self.k.backends:
            resp.backends.append(pb.BACKEND_CUDA)
        for g in self._geometries(req.variant, req.head_dim, req.page_size):
            resp.layouts.add(layout=g.layout, bytes_per_token=g.bytes_per_token, bytes_per_page=g.bytes_per_page)
        for v in self.k.variants:
            resp.variants.add(name=v.name, doc=v.doc)
        return resp

    # --- Attach / Detach -----------------------------------------------------

    def Attach(self, request, context):
        return self._rpc(context, self._attach, request)

    def _attach(self, req):
        self._known_variant(req.variant)
        a = req.arena
        if a.backend not in (pb.BACKEND_SHM, pb.BACKEND_CUDA):
            raise unimplemented(f"{self.k.name} supports the shm and cuda backends, not {_backend_name(a.backend)}")
        if a.backend == pb.BACKEND_CUDA and CUDA not in self.k.backends:
            raise unimplemented(
                f"{self.k.name} has no CUDA kernel (its backends are {list(self.k.backends)}): "
                "attach it with the shm backend (--backend cpu)"
            )
        if a.backend == pb.BACKEND_CUDA and a.fd_socket:
            # This SDK does not declare cuda_fd_arenas, so a harness shares by IPC handle.
            raise bad_request(
                "cuda arena: shared by file descriptor (fd_socket), which the Python SDK does not map; "
                "share it by IPC handle (the harness does for plugins whose Describe lacks cuda_fd_arenas)"
            )
        if a.backend == pb.BACKEND_CUDA and len(a.ipc_handle) != 64:
            raise bad_request(
                f"cuda arena: ipc_handle has {len(a.ipc_handle)} bytes; want the 64-byte CUipcMemHandle from cuIpcGetMemHandle"
            )
        pools, staging = self._windows(req, a.size)
        with self.lock:
            if a.backend == pb.BACKEND_SHM:
                arena = HostArena(a.path, a.size)
                self._release()
            else:
                self._release()  # one process may not open one IPC handle twice
                arena = DeviceArena(a.ipc_handle, a.size, a.device)
            self.arena, self.pools, self.staging, self.variant = arena, pools, staging, req.variant
            try:
                self._prepare()
            except Exception as e:  # noqa: BLE001
                traceback.print_exc(file=sys.stderr)
                self._release()
                raise precondition(f"prepare the kernels: {type(e).__name__}: {e}")
            return kv.AttachResponse(geometry=self._pool_geometry(pools))

    def _windows(self, req, size: int):
        pools = []
        for p in req.pools:
            w = _window(p.pool, p.HasField("pool"), size)
            lay = Layout(p.layout.name, p.layout.head_dim, p.layout.page_size)
            pools.append(Pool(name=p.name, layout=lay, slots=p.slots, base=w.off, nbytes=w.size))
        staging = _window(req.staging, req.HasField("staging"), size)
        _disjoint(pools, staging)
        return pools, staging

    def _prepare(self) -> None:
        at = Attach(variant=self.variant, backend=self.arena.backend, pools=tuple(self.pools),
                    device=self.arena.device, arena=self.arena.mem)
        if self.arena.backend == CUDA:
            with self.arena.context():
                self.k.prepare(at)
            self.arena.sync()
            self.device_bench = DeviceBench(self.arena)
        elif SHM in self.k.backends:  # else Store answers UNIMPLEMENTED, as the Go SDK does
            self.k.prepare(at)

    def _pool_geometry(self, pools):
        out = []
        for p in pools:
            g = kv.Geometry(layout=p.layout.name)
            for d in self._geometries(self.variant, p.layout.head_dim, p.layout.page_size):
                if d.layout == p.layout.name:
                    g.bytes_per_token, g.bytes_per_page = d.bytes_per_token, d.bytes_per_page
            out.append(g)
        return out

    def Detach(self, request, context):
        return self._rpc(context, self._detach)

    def _detach(self):
        with self.lock:
            try:
                self._release()
            except Exception as e:  # noqa: BLE001
                raise RpcError(grpc.StatusCode.INTERNAL, f"detach: {e}")
        return kv.DetachResponse()

    def _release(self) -> None:
        """Unmaps whichever arena is attached; the state is cleared even if
        closing fails, so the harness can attach again."""
        arena, self.arena, self.pools, self.device_bench = self.arena, None, [], None
        if arena is not None:
            arena.close()

    # --- Store ---------------------------------------------------------------

    def Store(self, request, context):
        return self._rpc(context, self._store_batch, [request], kv.StoreResponse)

    def StoreBatch(self, request, context):
        return self._rpc(context, self._store_batch, list(request.calls), kv.StoreBatchResponse)

    def _store_batch(self, calls, response):
        with self.lock:
            if self.arena is not None and self.arena.backend == CUDA:
                self._store_device(calls)
            else:
                self._store_host(calls)
        return response()

    def _store_host(self, calls) -> None:
        if SHM not in self.k.backends or not self.k.has_store():
            raise unimplemented(f"{self.k.name} has no store kernel for host memory")
        for i, r in enumerate(calls):
            call = _labelled(len(calls), i, self._call, r)
            self._run_kernel(call, len(calls), i)

    def _store_device(self, calls) -> None:
        if not self.k.has_store():
            raise unimplemented(f"{self.k.name} has no store kernel")
        err = None
        with self.arena.context():
            for i, r in enumerate(calls):
                try:
                    call = _labelled(len(calls), i, self._call, r)
                    self.arena.valid_t.fill_(call.valid)
                    self._run_kernel(call, len(calls), i)
                except RpcError as e:
                    err = e
                    break
        # Wait even after a failed call, so no write is still in flight
        # when the harness reads the arena.
        try:
            self.arena.sync()
        except Exception as e:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            msg = f"store kernel failed: {e}"
            if err is not None:
                msg += f" (after: {err.message})"
            raise device_fault(msg + "; a fault leaves the CUDA context unusable: the harness restarts the plugin")
        if err is not None:
            raise err

    def _run_kernel(self, call, n: int, i: int) -> None:
        try:
            self.k.store(call)
        except RpcError:
            raise
        except Exception as e:  # noqa: BLE001  a kernel failure is the call's answer
            traceback.print_exc(file=sys.stderr)
            raise aborted(f"store kernel failed{_label(n, i)}: {type(e).__name__}: {e}")

    def _call(self, req) -> StoreCall:
        """Validates a store request against the attachment and builds the
        kernel's view of it."""
        if self.arena is None:
            raise precondition("store before attach")
        if req.pool >= len(self.pools):
            raise bad_request(f"pool {req.pool}: only {len(self.pools)} attached")
        p = self.pools[req.pool]
        c, n, d = req.capacity, req.valid, p.layout.head_dim
        if c < 1 or n > c:
            raise bad_request(f"capacity {c}, valid {n}: want 1 <= capacity and valid <= capacity")
        try:
            self._in_staging(req.rows_offset, c * d, 2)
        except RpcError as e:
            raise e.prefixed("rows")
        try:
            self._in_staging(req.loc_offset, c, 8)
        except RpcError as e:
            raise e.prefixed("loc")
        a = self.arena
        call = StoreCall(variant=self.variant, backend=a.backend, pool=p, arena=a.mem, capacity=c, valid=n,
                         padding=req.padding, rows=None, loc=None, graph=req.graph, device=a.device)
        if a.backend == CUDA:
            if req.graph:
                raise unimplemented(NO_GRAPH)
            if req.rows_offset % DEVICE_ROWS_ALIGN:
                raise bad_request(
                    f"rows offset {req.rows_offset}: the CUDA backend needs {DEVICE_ROWS_ALIGN}-byte aligned rows; "
                    "stage them at an aligned offset"
                )
            call.valid_t, call.stream = a.valid_t, a.stream
        call.rows = a.rows(req.rows_offset, c, d)
        call.loc = a.loc(req.loc_offset, c)
        return call

    def _in_staging(self, off: int, n: int, size: int) -> None:
        """n elements of size bytes at off lie inside staging, aligned."""
        end = off + n * size
        st = self.staging
        if off < st.off or end > st.end or n < 0:
            raise bad_request(f"[{off},{end}) outside staging [{st.off},{st.end})")
        if off % size:
            raise bad_request(f"offset {off} not aligned to {size} bytes")

    # --- kernels this SDK does not serve -------------------------------------

    def Read(self, request, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{self.k.name} has no read kernel")

    def Transfer(self, request, context):
        context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{self.k.name} has no transfer kernel")

    # --- Bench -----------------------------------------------------------------

    def Bench(self, request, context):
        return self._rpc(context, self._bench, request)

    def _bench(self, req):
        check_counts(req)
        which = "store" if req.HasField("store") else None
        if which is None and not req.copy and not req.empty:
            raise bad_request("bench: no kernel; send a store request, or set copy or empty")
        with self.lock:
            if self.arena is None:
                raise precondition("bench before attach")
            if self.arena.backend == CUDA:
                return self._bench_device(req, which)
            return self._bench_host(req, which)

    def _bench_host(self, req, which):
        launch = None
        if not req.copy and not req.empty:
            if SHM not in self.k.backends or not self.k.has_store():
                raise unimplemented(f"{self.k.name} has no store kernel for host memory")
            launch = self.k.launcher(self._call(req.store))
        try:
            ns = self.host_bench.run(req, launch, self.pools)
        except RpcError:
            raise
        except Exception as e:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            raise aborted(f"bench: {type(e).__name__}: {e}")
        return kv.BenchResponse(ns=ns, clock="monotonic", device="cpu")

    def _bench_device(self, req, which):
        a = self.arena
        if which == "store" and req.store.graph and not req.copy:
            raise unimplemented(NO_GRAPH)
        with a.context():
            launch = None
            if not req.copy and not req.empty:
                call = self._call(req.store)
                a.valid_t.fill_(call.valid)  # once: it does not change during a bench
                launch = self.k.launcher(call)
            try:
                ns = self.device_bench.run(req, launch, self.pools)
            except RpcError:
                raise
            except Exception as e:  # noqa: BLE001
                traceback.print_exc(file=sys.stderr)
                raise aborted(f"bench: {type(e).__name__}: {e}")
        return kv.BenchResponse(ns=ns, clock="cuda-event", device=a.name)


def _label(n: int, i: int) -> str:
    return "" if n == 1 else f" on call {i}"


def _labelled(n: int, i: int, fn, *args):
    """fn(*args), prefixing a batch's errors with the failing call's index
    (a single Store's error is kept as it is), as the Go SDK's callError."""
    try:
        return fn(*args)
    except RpcError as e:
        raise e if n == 1 else e.prefixed(f"call {i}")
