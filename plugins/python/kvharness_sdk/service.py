"""The kvharness.v1.Plugin service over a :class:`Kernel`, and the kinds'
services registered beside it (kind.py; each kind's module serves its
own).

Validation is the Go SDK's (harness/sdk and its kind packages), check for
check and message for message where it matters, so the harness classifies
a Python plugin's answers as it does a Go plugin's:

- a window outside its region, a pool index past the attached pools,
  capacity < 1 or valid > capacity, rows or loc outside staging or
  misaligned, a slot width other than 32 or 64, read bounds that decrease
  or name a slot outside the pool, a transfer pairing the wrong pools, a
  rotation that is not the store's call on other data, an unknown
  variant: INVALID_ARGUMENT;
- a call before Attach, a region that cannot be mapped, a kernel whose
  prepare failed: FAILED_PRECONDITION;
- a kernel the plugin lacks (a backend not in ``backends``, no read or
  transfer method): UNIMPLEMENTED;
- a kernel that raised (or could not be captured into a CUDA graph):
  ABORTED with its message (its traceback goes to stderr, which the
  harness shows with the fault);
- a failed stream wait after the kernel (an illegal address, a trap):
  DATA_LOSS, a crash: the CUDA context is unusable until a restart.

Calls are serialised: one attachment, one kernel call at a time.
"""

from __future__ import annotations

import inspect
import sys
import threading
import traceback

import grpc

from . import protocol as pb
from ._gen import kvharness_pb2_grpc, store_pb2
from .attach import Attachment, backend_name, check_regions, go_quote, regions_of, windows
from .bench import DeviceBench, HostBench, Turns, bench_stores, check_counts, rotation_key, same_layouts
from .graphs import graph_cache
from .errors import RpcError, aborted, bad_request, precondition, unimplemented
from .kernel import CUDA, PAGE_TABLE, SHM, SLOTS, Attach, Kernel
from .kinds import KINDS

kv = pb.kv

# The Recipe enums by the names kernel.Recipe uses.
_SCALE = {"default": kv.SCALE_RULE_DEFAULT, "f32": kv.SCALE_RULE_F32, "ue8m0": kv.SCALE_RULE_UE8M0}
_QUANTIZE = {"divide": kv.QUANTIZE_DIVIDE, "reciprocal": kv.QUANTIZE_RECIPROCAL}
_ROUNDING = {"nearest-even": kv.ROUNDING_NEAREST_EVEN}
_NON_FINITE = {"": kv.NON_FINITE_UNDECLARED, "propagate": kv.NON_FINITE_PROPAGATE, "saturate": kv.NON_FINITE_SATURATE,
               "contained": kv.NON_FINITE_CONTAINED}


def recipe_pb(r):
    """A declared Recipe as the protocol's message (unset fields stay unset)."""
    m = kv.Recipe(scale=_SCALE[r.scale], quantize=_QUANTIZE[r.quantize], rounding=_ROUNDING[r.rounding])
    if r.eps is not None:
        m.eps = float(r.eps)
    if r.saturate is not None:
        m.saturate = r.saturate
    if r.scale_ulps is not None:
        m.scale_ulps = r.scale_ulps
    m.non_finite = _NON_FINITE[r.non_finite]
    return m


PAD_POLICIES = {None: kv.PAD_POLICY_LAYOUT, "any": kv.PAD_POLICY_ANY, "zero": kv.PAD_POLICY_ZERO,
                "keep": kv.PAD_POLICY_KEEP}


def geometry_pb(g, layout: str = ""):
    m = kv.Geometry(layout=layout or g.layout, bytes_per_token=g.bytes_per_token, bytes_per_page=g.bytes_per_page)
    if g.recipe is not None:
        m.recipe.CopyFrom(recipe_pb(g.recipe))
    policy = getattr(g, "pad_policy", None)
    if policy not in PAD_POLICIES:
        raise ValueError(f"{g.layout}: pad_policy {policy!r}: want 'any', 'zero', 'keep' or None (the layout's)")
    m.pad_policy = PAD_POLICIES[policy]
    return m


def takes_heads(fn) -> bool:
    """Whether a kernel's geometry takes the KV heads (a ``heads``
    parameter, or ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "heads" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


class KernelService(kvharness_pb2_grpc.PluginServicer):
    """The plugin's base service, and the core every kind's servicer works
    on: the kernel ``k``, the ``lock`` a call holds, the attachment ``att``
    and the hooks a kind registers (on_attach, on_release, benches)."""

    def __init__(self, kernel: Kernel, kinds=KINDS):
        self.k = kernel
        self.all_kinds = kinds
        self.kinds = []  # the kinds whose services register() registered: Describe's kernels
        self.servicers = []  # their servicers, in the same order
        self.lock = threading.Lock()
        self.att = None  # Attachment while attached
        self.host_bench = HostBench()
        self.turns = Turns()
        self.bencher = None  # what Bench launches for stores: the store kind's (store.py)
        self._on_attach, self._on_release = [], []

    # --- plumbing -----------------------------------------------------------

    def register(self, server) -> None:
        """Registers the base service and the service of every kind the
        kernel implements on a grpc server, and keeps the kinds' names
        (their services') for Describe."""
        kvharness_pb2_grpc.add_PluginServicer_to_server(self, server)
        for kind in self.all_kinds:
            if kind.serves(self.k):
                servicer = kind.servicer(self)
                kind.add(servicer, server)
                self.kinds.append(kind.name)
                self.servicers.append(servicer)

    def on_attach(self, fn) -> None:
        """Registers what a kind does with each Attach request, under the
        lock, once the attachment is made and before the kernel prepares
        (load.py maps the host regions after the first)."""
        self._on_attach.append(fn)

    def on_release(self, fn) -> None:
        """Registers what frees a kind's state of an attachment, before the
        attachment itself is closed."""
        self._on_release.append(fn)

    def benches(self, bencher) -> None:
        """Makes bencher what Bench launches for stores: an object with
        host_launches(att, stores) and device_launches(att, stores), each a
        list of zero-argument launches (store.py's)."""
        self.bencher = bencher

    def rpc(self, context, fn, *args):
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

    def locked(self, fn, *args):
        """fn(*args) under the lock."""
        with self.lock:
            return fn(*args)

    def known_variant(self, v: str) -> None:
        if v and v not in self.k.variant_names():
            raise bad_request(f"{self.k.name} has no variant {go_quote(v)}")

    def _geometries(self, variant: str, head_dim: int, page_size: int, heads: int = 1):
        heads = max(heads, 1)
        if takes_heads(self.k.geometry):
            return list(self.k.geometry(variant, head_dim, page_size, heads=heads) or ())
        return list(self.k.geometry(variant, head_dim, page_size) or ())

    def declared(self, variant: str, layout):
        """The geometry the kernel declares for an attached pool's layout
        (the last it names that layout in), or None: what Attach and
        AsyncAttach answer for the pool."""
        found = None
        for g in self._geometries(variant, layout.head_dim, layout.page_size, layout.heads):
            if g.layout == layout.name:
                found = g
        return found

    def close(self) -> None:
        """Releases the attachment at shutdown."""
        with self.lock:
            try:
                self._release()
            except Exception:  # noqa: BLE001  shutting down anyway
                traceback.print_exc(file=sys.stderr)

    # --- Describe -------------------------------------------------------------

    def Describe(self, request, context):
        return self.rpc(context, self._describe, request)

    def _describe(self, req):
        self.known_variant(req.variant)
        k = self.k
        resp = kv.DescribeResponse(name=k.name, version=k.version, doc=k.doc, kernels=self.kinds,
                                   cuda_fd_arenas=CUDA in k.backends and bool(k.cuda_fd_arenas),
                                   bench_rotation=True, slot_bits=k.slot_bits,
                                   read_non_finite=_NON_FINITE[k.read_non_finite])
        for a in k.addressing:
            resp.addressing.append({SLOTS: store_pb2.ADDRESSING_SLOTS, PAGE_TABLE: store_pb2.ADDRESSING_PAGE_TABLE}[a])
        if SHM in k.backends or CUDA not in k.backends:
            resp.backends.append(pb.BACKEND_SHM)
        if CUDA in k.backends:
            resp.backends.append(pb.BACKEND_CUDA)
        for g in self._geometries(req.variant, req.head_dim, req.page_size, req.heads):
            resp.layouts.append(geometry_pb(g))
        for v in k.variants:
            resp.variants.add(name=v.name, doc=v.doc, correct=v.correct, kernel=v.kernel, layouts=list(v.layouts))
        return resp

    # --- Attach / Detach -----------------------------------------------------

    def Attach(self, request, context):
        return self.rpc(context, self._attach, request)

    def _attach(self, req):
        self.known_variant(req.variant)
        descs = regions_of(req)
        a = descs[0]
        if a.backend not in (pb.BACKEND_SHM, pb.BACKEND_CUDA):
            raise unimplemented(f"{self.k.name} supports the shm and cuda backends, not {backend_name(a.backend)}")
        if a.backend == pb.BACKEND_CUDA and CUDA not in self.k.backends:
            raise unimplemented(
                f"{self.k.name} has no CUDA kernel (its backends are {list(self.k.backends)}): "
                "attach it with the shm backend (--backend cpu)"
            )
        check_regions(descs)
        pools, staging = windows(req, descs)
        with self.lock:
            self._release()  # one process may not open one IPC handle twice
            try:
                att = Attachment(req.variant, descs, pools, staging)
            except RuntimeError as e:
                raise precondition(str(e))
            self.att = att
            for fn in self._on_attach:
                fn(req)
            try:
                self._prepare(att)
            except Exception as e:  # noqa: BLE001
                traceback.print_exc(file=sys.stderr)
                self._release()
                raise precondition(f"prepare the kernels: {type(e).__name__}: {e}")
            return kv.AttachResponse(geometry=self._pool_geometry(att))

    def _prepare(self, att) -> None:
        at = Attach(variant=att.variant, backend=att.backend, pools=tuple(att.pools), device=att.device,
                    arena=att.mem(0), regions=att.mems())
        if att.backend == CUDA:
            with att.ctx.context():
                self.k.prepare(at)
            att.ctx.sync()
            att.device_bench = DeviceBench(att.ctx)
        elif SHM in self.k.backends:  # else calls answer UNIMPLEMENTED, as the Go SDK does
            self.k.prepare(at)

    def _pool_geometry(self, att):
        """Each pool's declared geometry, recipe included; a layout the
        kernel does not declare is answered by its name alone."""
        out = []
        for p in att.pools:
            d = self.declared(att.variant, p.layout)
            out.append(kv.Geometry(layout=p.layout.name) if d is None else geometry_pb(d))
        return out

    def Detach(self, request, context):
        return self.rpc(context, self._detach)

    def _detach(self):
        with self.lock:
            try:
                self._release()
            except Exception as e:  # noqa: BLE001
                raise RpcError(grpc.StatusCode.INTERNAL, f"detach: {e}")
        return kv.DetachResponse()

    def _release(self) -> None:
        """Unmaps whatever is attached; the state is cleared even if closing
        fails, so the harness can attach again."""
        att, self.att = self.att, None
        try:
            for fn in self._on_release:
                fn()
        finally:
            if att is not None:
                att.close()

    # --- Bench -----------------------------------------------------------------

    def Bench(self, request, context):
        return self.rpc(context, self._bench, request)

    def _bench(self, req):
        check_counts(req)
        if not req.HasField("store") and not req.copy and not req.empty:
            raise bad_request("bench: no kernel; send a store request, or set copy or empty")
        with self.lock:
            att = self.att
            if att is None:
                raise precondition("bench before attach")
            same_layouts(req, att.pools)
            if att.backend == CUDA:
                return self._bench_device(att, req)
            return self._bench_host(att, req)

    def _bench_host(self, att, req):
        if req.empty:
            launch = None
        elif req.copy:
            launch = self.host_bench.copy_launch(req, att.pools, self.turns)
        else:
            if self.bencher is None:
                raise unimplemented(f"{self.k.name} has no store kernel for host memory")
            launch = self.turns.in_turn(rotation_key(req), self.bencher.host_launches(att, bench_stores(req)))
        ns, _ = _timed(self.host_bench.run, req, launch)
        return kv.BenchResponse(ns=ns, clock="monotonic", device="cpu")

    def _bench_device(self, att, req):
        b = att.device_bench
        with att.ctx.context():
            if req.empty:
                launch = b.empty_launch(req.store.graph, graph_cache(att))
            elif req.copy:
                launch = b.copy_launch(req, att.pools, self.turns)
            else:
                if self.bencher is None:
                    raise unimplemented(f"{self.k.name} has no CUDA store kernel (it defines no store): "
                                        "store with a plugin that has one")
                launch = self.turns.in_turn(rotation_key(req), self.bencher.device_launches(att, bench_stores(req)))
            ns, paced = _timed(b.run, req, launch)
        return kv.BenchResponse(ns=ns, clock="cuda-event", device=att.ctx.name, host_paced=paced)


def _timed(run, req, launch):
    """run(req, launch), a failure inside the timed loop being the bench's
    ABORTED answer."""
    try:
        return run(req, launch)
    except RpcError:
        raise
    except Exception as e:  # noqa: BLE001
        traceback.print_exc(file=sys.stderr)
        raise aborted(f"bench: {type(e).__name__}: {e}")
