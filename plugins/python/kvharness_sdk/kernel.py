"""What a kernel author writes: one subclass of :class:`Kernel`.

The SDK does everything else (the go-plugin handshake, the gRPC service,
request validation, mapping the arena, CUDA-graph capture and replay,
timing benches), so a plugin is the kernel's own code and a few lines of
description::

    class MyStore(Kernel):
        name, version = "mystore", "1.0.0"
        backends = ("shm", "cuda")

        def geometry(self, variant, head_dim, page_size):
            return [Geometry("bf16", 2 * head_dim, 2 * head_dim * page_size)]

        def store(self, call):
            pool = call.pool_rows()           # (slots, D) view of the pool
            n = call.valid
            pool[call.loc[:n]] = call.rows[:n]

    if __name__ == "__main__":
        serve(MyStore())

The types mirror the Go SDK's (harness/sdk): a kernel written against one
reads the same in the other. Read and transfer kernels live in read.py and
transfer.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

# Padding conventions (kvharness.proto's Padding enum): what padded rows
# valid..capacity-1 of a store hold in loc.
PAD_NONE = 0  # every row is valid
PAD_COUNT = 1  # padded rows hold stale slots; skip them by count
PAD_SINK = 2  # padded rows hold slot 0, a reserved slot that must not change
PAD_MINUS1 = 3  # padded rows hold -1
PAD_PAGE_TABLE = 4  # the call is addressed by StoreCall.page_table; rows past their request's length are padding

PADDING_NAMES = {PAD_NONE: "none", PAD_COUNT: "count", PAD_SINK: "sink", PAD_MINUS1: "minus1", PAD_PAGE_TABLE: "page-table"}

# Backends a kernel can serve: host shared memory and CUDA device memory.
SHM = "shm"
CUDA = "cuda"

@dataclass(frozen=True)
class Variant:
    """A named build of the kernel, usually a mutant reproducing a real bug
    class. The harness selects it with --variant; the SDK refuses names not
    listed here, as the Go SDK does.

    ``correct`` marks a variant that behaves correctly but differently (a
    control for the mutant suite, not a mutant). ``kernel`` is the kind of
    kernel the variant changes ("read", "transfer", ...; "" is the plugin's
    first kind); the mutant suite runs each variant against that kind's
    properties. ``layouts`` name the layouts the variant's bug lives in,
    where the mutant suite checks it instead of the run's (an engine
    cache's mistake); empty: the run's."""

    name: str
    doc: str = ""
    correct: bool = False
    kernel: str = ""
    layouts: tuple = ()

    def __post_init__(self):
        from .kinds import KINDS  # the kinds the SDK serves, known once the package is imported

        names = [k.name for k in KINDS]
        if self.kernel not in ("", *names):
            raise ValueError(f"variant {self.name!r}: kernel {self.kernel!r}; want '' or one of {', '.join(names)}")


# Recipe names, as kvharness.proto's ScaleRule, Quantize and Rounding.
SCALE_RULES = ("default", "f32", "ue8m0")
QUANTIZE_RULES = ("divide", "reciprocal")
ROUNDINGS = ("nearest-even",)
NON_FINITE = ("propagate", "saturate", "contained")


@dataclass(frozen=True)
class Recipe:
    """How the kernel quantizes a layout's fp8 fields: what its code
    believes, declared as its bytes per token are. The harness judges
    stored scales and codes against it, not against one hard-coded formula.

    - ``scale``: "f32" (scale = max(amax, eps) / 448, stored as float32),
      "ue8m0" (that scale rounded up to a power of two, stored as its 8-bit
      exponent), or "default" (what the layout's scale field says);
    - ``eps``: the floor on amax; None leaves the layout's default (1e-4),
      0 means no floor;
    - ``quantize``: "divide" (e4m3(x / s)) or "reciprocal" (e4m3(x * (1/s)),
      what most engine kernels compute);
    - ``rounding``: "nearest-even";
    - ``saturate``: clamp codes past the e4m3 range to ±448 (None: true);
    - ``scale_ulps``: how many float32 ulps a stored scale may lie from the
      recipe's (None: 1), for approximate division;
    - ``non_finite``: what the kernel does with a ±Inf or NaN element of a
      valid row: "propagate" (the recipe's IEEE arithmetic: ∞ makes the
      group's scale ∞, NaN codes NaN), "saturate" (the scale over the
      finite elements, ±∞ codes ±448) or "contained" (the row's own
      record may hold anything, nothing else may change); "" (the
      default) declares nothing, and valid rows then hold finite values.

    The SDK checks names and types; the harness judges the values' sanity
    (a recipe outside its bounds is a usage error naming the field)."""

    scale: str = "default"
    eps: Optional[float] = None
    quantize: str = "divide"
    rounding: str = "nearest-even"
    saturate: Optional[bool] = None
    scale_ulps: Optional[int] = None
    non_finite: str = ""

    def __post_init__(self):
        for field, value, allowed in (("scale", self.scale, SCALE_RULES), ("quantize", self.quantize, QUANTIZE_RULES),
                                      ("rounding", self.rounding, ROUNDINGS),
                                      ("non_finite", self.non_finite, ("",) + NON_FINITE)):
            if value not in allowed:
                raise ValueError(f"recipe {field} {value!r}: want one of {', '.join(a for a in allowed if a)}")
        if self.eps is not None and (isinstance(self.eps, bool) or not isinstance(self.eps, (int, float))
                                     or math.isnan(self.eps)):
            raise ValueError(f"recipe eps {self.eps!r}: want a number (or None for the layout's default)")
        if self.saturate is not None and not isinstance(self.saturate, bool):
            raise ValueError(f"recipe saturate {self.saturate!r}: want True, False or None")
        if self.scale_ulps is not None and (isinstance(self.scale_ulps, bool) or not isinstance(self.scale_ulps, int)
                                            or not 0 <= self.scale_ulps < 1 << 32):
            raise ValueError(f"recipe scale_ulps {self.scale_ulps!r}: want a count of ulps (or None for 1)")


@dataclass(frozen=True)
class Geometry:
    """What the kernel's own code believes about a layout. The harness
    compares it with the layout before running any case, so a kernel that
    computes bytes per token as an element count fails up front. ``recipe``
    declares its fp8 arithmetic (None: the layout's default recipe).
    ``pad_policy`` is what the kernel leaves in the layout's pad bytes, over
    the layout's own policy: ``"keep"`` for a kernel that never writes them
    (the harness then checks it does not), ``"zero"``, ``"any"``; None
    keeps the layout's."""

    layout: str
    bytes_per_token: int
    bytes_per_page: int
    recipe: Optional[Recipe] = None
    pad_policy: Optional[str] = None


@dataclass(frozen=True)
class Layout:
    """A layout's name and parameters, as the harness attached it."""

    name: str
    head_dim: int
    page_size: int
    heads: int = 1  # KV heads per token of each tensor (K, V) of an engine layout


SIDE_SRC, SIDE_DST = "src", "dst"  # the sides of a transfer: PoolBuffer.side


@dataclass(frozen=True)
class PoolBuffer:
    """One side's pool of a buffer of a multi-buffer KV cache (a layer's
    KV, its index-K, a compressor state), as the harness describes it
    (kvharness.proto's PoolBuffer; the Go SDK's sdk.PoolBuffer)."""

    side: str  # SIDE_SRC (prefill) or SIDE_DST (decode)
    layer: int
    name: str  # the buffer, the same on both sides: "L0.kv"
    alloc: str = ""  # the allocation the buffer is carved from; "" when it owns one
    shift: int = 0  # page table: a room's page p lives in physical page (p + shift) mod pages

    @property
    def alloc_key(self) -> str:
        """The allocation the buffer belongs to: buffers of one side with
        the same key share one registered base address."""
        return self.alloc or self.name


@dataclass(frozen=True)
class Pool:
    """One KV-cache pool: slot 0's page starts at offset ``base`` of memory
    region ``region`` (0, the arena, unless the attach carried several);
    the pool window is ``nbytes`` long (whole pages, aligned). A transfer's
    pools each carry their ``buffer``."""

    name: str
    layout: Layout
    slots: int
    base: int
    nbytes: int
    region: int = 0
    buffer: Optional[PoolBuffer] = None  # the transfer kinds' pools: the buffer the pool holds


@dataclass(frozen=True)
class Attach:
    """What a kernel learns once per Attach (see :meth:`Kernel.prepare`)."""

    variant: str
    backend: str  # SHM or CUDA: where the kernels run (the first region's)
    pools: Sequence[Pool]
    device: Optional[int] = None  # CUDA device ordinal on the cuda backend
    arena: Any = None  # the first region: numpy uint8 on shm, torch uint8 on cuda
    regions: Sequence[Any] = ()  # every region's memory, in order (regions[0] is arena)


SLOTS, PAGE_TABLE = "slots", "page-table"  # the addressing modes a store kernel declares (Kernel.addressing)


@dataclass
class PageTable:
    """A store call's page-table addressing, FlashInfer's
    ``append_paged_kv_cache`` arguments, each an int32 array (numpy on
    shm, a torch tensor on the device on cuda): request ``b``'s pages are
    ``kv_indices[kv_indptr[b]:kv_indptr[b + 1]]``, its last page holding
    ``kv_last_page_len[b]`` tokens (0: empty); row ``i`` appends to request
    ``batch_indices[i]`` at position ``positions[i]``. A request's length
    is ``(pages - 1) * page_size + kv_last_page_len[b]`` (0 with no pages);
    a row at or past it is padding and must not be stored."""

    page_size: int
    kv_indptr: Any
    kv_indices: Any
    kv_last_page_len: Any
    batch_indices: Any
    positions: Any


@dataclass
class StoreCall:
    """One store: write ``rows[i]`` into slot ``loc[i]`` of ``pool`` for the
    rows that are real (``i < valid``). Rows valid..capacity-1 are padding:
    under PAD_COUNT their loc holds stale slots, under PAD_SINK slot 0, under
    PAD_MINUS1 -1.

    On the shm backend ``arena`` is a numpy uint8 array over the pool's
    memory region, ``rows`` a read-only numpy uint16 (C, D) array of bf16
    bit patterns and ``loc`` a read-only numpy int64 (C,) array (int32 for
    a kernel that declares ``slot_bits = 32``). On the cuda backend they are
    torch tensors on the device (uint8, bfloat16 (C, D), int64 or int32
    (C,)), and the kernel must enqueue its work on ``stream`` (the SDK makes
    it current) without synchronising: the SDK waits once per batch, before
    it answers. ``valid_t`` is a device int32 tensor that holds ``valid``,
    written in stream order before the call, as serving engines copy
    num_tokens into a static buffer before replaying a graph.

    With ``graph`` (kvharness check --graph) the SDK captures the first
    call of each shape into a torch.cuda.CUDAGraph, with ``rows``, ``loc``
    and ``valid_t`` pointing at static tensors of capacity C, and replays
    it for later calls after copying their inputs into those tensors: read
    n from ``valid_t`` on the device, never from ``valid`` on the host, or
    every replay stores the captured count.
    """

    variant: str
    backend: str
    pool: Pool
    arena: Any
    capacity: int
    valid: int
    padding: int
    rows: Any
    loc: Any
    graph: bool = False
    valid_t: Any = None
    stream: Any = None
    device: Optional[int] = None
    slot_bits: int = 64
    # The elements of a row: the layout's tensors (K then V) of heads ×
    # head_dim each, head-major; rows is (capacity, row_elems).
    row_elems: int = 0
    # Static scales by tensor name ("k", "v"; "" for one tensor): a layout
    # that stores none (vLLM's fp8 cache) wants code(x / scale).
    scales: Optional[dict] = None
    # page_table, for a kernel that declares PAGE_TABLE addressing, is
    # where rows go instead of loc (which then holds -1 for every row).
    page_table: Optional[PageTable] = None

    def pool_bytes(self) -> Any:
        """The pool's window of its region as uint8 (numpy or torch)."""
        return self.arena[self.pool.base : self.pool.base + self.pool.nbytes]

    def pool_rows(self) -> Any:
        """The pool as (slots, head_dim) bf16 rows, for the bf16 layout: numpy
        uint16 bit patterns on shm, torch.bfloat16 on cuda. Indexing it with
        a negative slot wraps to the end, as Python indexing does."""
        d = self.pool.layout.head_dim
        raw = self.pool_bytes()[: self.pool.slots * 2 * d]
        if self.backend == CUDA:
            import torch

            return raw.view(torch.bfloat16).view(self.pool.slots, d)
        import numpy as np

        return raw.view(np.uint16).reshape(self.pool.slots, d)


class Kernel:
    """Base class of a kvharness kernel plugin. Override the class attributes
    and :meth:`geometry`, then any of :meth:`store`, :meth:`read` and
    :meth:`transfer`; optionally :meth:`prepare` and :meth:`launcher`.

    ``backends`` lists where the kernels run: SHM (numpy on the host)
    and/or CUDA (torch/triton on the GPU). Describe reports them; the
    harness's ``--backend auto`` picks cuda only when it is listed.

    ``slot_bits`` is the width of the slot indices the store reads, 64 or
    32: the harness stages loc at that width, and the SDK hands ``loc`` to
    the kernel as int64 or int32.

    ``cuda_fd_arenas`` lets the harness share CUDA arenas by file
    descriptor (imported with cuMemImportFromShareableHandle, mapped with
    large pages) instead of by IPC handle; set it to False to keep IPC.

    ``read_non_finite`` is what the read kernel does with ±Inf and NaN in
    a query or a key it scores: "contained" for a kernel whose requests
    share nothing (a request that holds one may answer any ranking of its
    own list; every other request of the call stays exact); "" (the
    default) declares nothing, and the harness then gives reads finite
    keys and queries only.
    """

    name: str = ""
    version: str = "0.0.0"
    doc: str = ""
    variants: Sequence[Variant] = ()
    backends: Sequence[str] = (SHM,)
    slot_bits: int = 64
    cuda_fd_arenas: bool = True
    # How the store takes its calls: SLOTS (loc), PAGE_TABLE
    # (StoreCall.page_table), or both. A kernel that declares PAGE_TABLE
    # alone is checked under page-table addressing by default.
    addressing: Sequence[str] = (SLOTS,)
    read_non_finite: str = ""

    def geometry(self, variant: str, head_dim: int, page_size: int) -> Sequence[Geometry]:
        """The layouts the kernel serves for a variant, head dimension and
        page size, with the bytes per token and per page its code uses and
        the fp8 recipe it computes."""
        raise NotImplementedError(f"{type(self).__name__} must define geometry(variant, head_dim, page_size)")

    # A kernel of the engines' K/V layouts, whose bytes per token depend on
    # the KV heads, defines geometry(variant, head_dim, page_size, heads=1)
    # instead: the SDK passes heads to a geometry that takes it.

    def store(self, call: StoreCall) -> None:
        """Runs one store. An exception becomes the RPC's ABORTED error with
        its message (and its traceback on the plugin's stderr, which the
        harness shows); it never kills the plugin."""
        raise NotImplementedError

    def read(self, call) -> None:
        """Runs one read (a :class:`kvharness_sdk.ReadCall`): score each
        request's query against its token list's keys and write the top k.
        A read kernel writes the out windows and nothing else."""
        raise NotImplementedError

    def transfer(self, call) -> Sequence:
        """Runs one transfer (a :class:`kvharness_sdk.TransferCall`): build
        the descriptors, execute them (``call.copy``) and return them."""
        raise NotImplementedError

    def prepare(self, attach: Attach) -> None:
        """Called once per Attach, before any call: compile or warm up the
        kernels for the pools here, so that compilation is neither inside
        the first timed launch nor inside a CUDA-graph capture. An exception
        fails the Attach (FAILED_PRECONDITION)."""

    def launcher(self, call: StoreCall) -> Callable[[], None]:
        """Returns a function that runs ``call`` once; Bench times it. The
        default calls :meth:`store`; override it to hoist per-call setup
        (views, argument packing) out of the timed loop."""
        return lambda: self.store(call)

    # --- used by the SDK -------------------------------------------------

    def has_store(self) -> bool:
        """Whether the subclass implements store (its kind is then served:
        store.KIND)."""
        return type(self).store is not Kernel.store

    def has_read(self) -> bool:
        return type(self).read is not Kernel.read

    def has_transfer(self) -> bool:
        return type(self).transfer is not Kernel.transfer

    def variant_names(self) -> list:
        return [v.name for v in self.variants]


class LaunchedStore(Kernel):
    """A store that runs one compiled launch on CUDA and a host copy of its
    arithmetic elsewhere (the Triton examples). A subclass defines
    :meth:`check_pool`, :meth:`launch` and :meth:`host_store`; prepare,
    launcher and store are one copy here, so that every such kernel
    compiles before it is timed or captured, the same way."""

    def check_pool(self, pool: Pool) -> None:
        """Raises ValueError for a pool the kernel does not store."""

    def launch(self, variant, pool, arena, rows, loc, valid_t, capacity) -> Callable[[], None]:
        """A zero-argument launch over the whole captured capacity (the
        kernel skips rows past n itself)."""
        raise NotImplementedError

    def host_store(self, call: StoreCall) -> None:
        """Runs one store on the host, with the launch's arithmetic."""
        raise NotImplementedError

    def prepare(self, attach: Attach) -> None:
        """Checks every pool; on CUDA, compiles each pool's kernel by
        launching it with n = 0 (it stores nothing)."""
        for pool in attach.pools:
            self.check_pool(pool)
        if attach.backend != CUDA:
            return
        import torch

        dev = f"cuda:{attach.device}"
        zero = torch.zeros(1, dtype=torch.int32, device=dev)
        loc_dtype = torch.int32 if self.slot_bits == 32 else torch.int64
        for pool in attach.pools:
            rows = torch.zeros((1, pool.layout.head_dim), dtype=torch.bfloat16, device=dev)
            loc = torch.zeros(1, dtype=loc_dtype, device=dev)
            self.launch(attach.variant, pool, attach.arena, rows, loc, zero, 1)()

    def launcher(self, call: StoreCall) -> Callable[[], None]:
        if call.backend != CUDA:
            return lambda: self.host_store(call)
        return self.launch(call.variant, call.pool, call.arena, call.rows, call.loc, call.valid_t, call.capacity)

    def store(self, call: StoreCall) -> None:
        if call.backend == CUDA:
            self.launcher(call)()
            return
        self.host_store(call)


def check_declaration(kernel: Kernel) -> None:
    """Rejects a kernel whose class attributes the SDK cannot serve, before
    the handshake: a typo here is the author's to fix, not a fault."""
    if not kernel.name:
        raise ValueError(f"{type(kernel).__name__}: set name")
    if kernel.slot_bits not in (32, 64):
        raise ValueError(f"{kernel.name}: slot_bits {kernel.slot_bits!r}; want 32 or 64")
    if not kernel.addressing or any(a not in (SLOTS, PAGE_TABLE) for a in kernel.addressing):
        raise ValueError(f"{kernel.name}: addressing {list(kernel.addressing)!r}; want {SLOTS!r} and/or {PAGE_TABLE!r}")
    if kernel.read_non_finite not in ("", "contained"):
        raise ValueError(f"{kernel.name}: read_non_finite {kernel.read_non_finite!r}; want 'contained' or '' (none)")
    bad = [b for b in kernel.backends if b not in (SHM, CUDA)]
    if bad:
        raise ValueError(f"{kernel.name}: backends {list(kernel.backends)}; want {SHM!r} and/or {CUDA!r}")
    names = kernel.variant_names()
    if len(set(names)) != len(names) or "" in names:
        raise ValueError(f"{kernel.name}: variant names {names}: want distinct, non-empty names")
