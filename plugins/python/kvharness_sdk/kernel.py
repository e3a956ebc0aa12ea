"""What a kernel author writes: one subclass of :class:`Kernel`.

The SDK does everything else (the go-plugin handshake, the gRPC service,
request validation, mapping the arena, timing benches), so a plugin is the
kernel's own code and a few lines of description::

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
reads the same in the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

# Padding conventions (kvharness.proto's Padding enum): what padded rows
# valid..capacity-1 of a store hold in loc.
PAD_NONE = 0  # every row is valid
PAD_COUNT = 1  # padded rows hold stale slots; skip them by count
PAD_SINK = 2  # padded rows hold slot 0, a reserved slot that must not change
PAD_MINUS1 = 3  # padded rows hold -1

PADDING_NAMES = {PAD_NONE: "none", PAD_COUNT: "count", PAD_SINK: "sink", PAD_MINUS1: "minus1"}

# Backends a kernel can serve: host shared memory and CUDA device memory.
SHM = "shm"
CUDA = "cuda"


@dataclass(frozen=True)
class Variant:
    """A named build of the kernel, usually a mutant reproducing a real bug
    class. The harness selects it with --variant; the SDK refuses names not
    listed here, as the Go SDK does."""

    name: str
    doc: str = ""


@dataclass(frozen=True)
class Geometry:
    """What the kernel's own code believes about a layout. The harness
    compares it with the layout before running any case, so a kernel that
    computes bytes per token as an element count fails up front."""

    layout: str
    bytes_per_token: int
    bytes_per_page: int


@dataclass(frozen=True)
class Layout:
    """A layout's name and parameters, as the harness attached it."""

    name: str
    head_dim: int
    page_size: int


@dataclass(frozen=True)
class Pool:
    """One KV-cache pool in the arena: slot 0's page starts at offset
    ``base`` of its region; the pool window is ``nbytes`` long (whole pages,
    aligned)."""

    name: str
    layout: Layout
    slots: int
    base: int
    nbytes: int
    region: int = 0  # the attach's region the pool lives in (a load's host pools: 1)


@dataclass(frozen=True)
class Attach:
    """What a kernel learns once per Attach (see :meth:`Kernel.prepare`)."""

    variant: str
    backend: str  # SHM or CUDA
    pools: Sequence[Pool]
    device: Optional[int] = None  # CUDA device ordinal on the cuda backend
    arena: Any = None  # the whole arena: numpy uint8 on shm, torch uint8 on cuda


@dataclass
class StoreCall:
    """One store: write ``rows[i]`` into slot ``loc[i]`` of ``pool`` for the
    rows that are real (``i < valid``). Rows valid..capacity-1 are padding:
    under PAD_COUNT their loc holds stale slots, under PAD_SINK slot 0, under
    PAD_MINUS1 -1.

    On the shm backend ``arena`` is a numpy uint8 array over the whole
    shared-memory arena, ``rows`` a read-only numpy uint16 (C, D) array of
    bf16 bit patterns and ``loc`` a read-only numpy int64 (C,) array, both
    views of the harness's staging. On the cuda backend they are torch
    tensors on the device (uint8, bfloat16 (C, D), int64 (C,)) over the
    harness's allocation, and the kernel must enqueue its work on ``stream``
    (the SDK makes it current) without synchronising: the SDK waits once
    per batch, before it answers. ``valid_t`` is a device int32 tensor that
    holds ``valid``, written in stream order before the call, as serving
    engines copy num_tokens into a static buffer before replaying a graph.
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

    def pool_bytes(self) -> Any:
        """The pool's window of the arena as uint8 (numpy or torch)."""
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
    and :meth:`geometry` and :meth:`store`; optionally :meth:`prepare` and
    :meth:`launcher`.

    ``backends`` lists where the kernel can run: SHM (numpy on the host)
    and/or CUDA (torch/triton on the GPU). Describe reports them; the
    harness's ``--backend auto`` picks cuda only when it is listed.
    """

    name: str = ""
    version: str = "0.0.0"
    doc: str = ""
    variants: Sequence[Variant] = ()
    backends: Sequence[str] = (SHM,)

    def geometry(self, variant: str, head_dim: int, page_size: int) -> Sequence[Geometry]:
        """The layouts the kernel stores for a variant, head dimension and
        page size, with the bytes per token and per page its code uses."""
        raise NotImplementedError(f"{type(self).__name__} must define geometry(variant, head_dim, page_size)")

    def store(self, call: StoreCall) -> None:
        """Runs one store. An exception becomes the RPC's ABORTED error with
        its message (and its traceback on the plugin's stderr, which the
        harness shows); it never kills the plugin."""
        raise NotImplementedError

    def prepare(self, attach: Attach) -> None:
        """Called once per Attach, before any store: compile or warm up the
        kernels for the pools here, so that compilation is neither inside the
        first timed launch nor a surprise in the middle of a run. An
        exception fails the Attach (FAILED_PRECONDITION)."""

    def launcher(self, call: StoreCall) -> Callable[[], None]:
        """Returns a function that runs ``call`` once; Bench times it. The
        default calls :meth:`store`; override it to hoist per-call setup
        (views, argument packing) out of the timed loop."""
        return lambda: self.store(call)

    # --- used by the SDK -------------------------------------------------

    def has_store(self) -> bool:
        """Whether the subclass implements store (Describe's "kernels")."""
        return type(self).store is not Kernel.store

    def variant_names(self) -> list:
        return [v.name for v in self.variants]
