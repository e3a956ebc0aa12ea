"""The read kind: its service (Read), the request checked as the Go SDK
checks it (harness/sdk/read), the kernel's view of it (:class:`ReadCall`),
and the run on either backend.

A read scores, for every request r, the query against the key of each slot
in its token list and writes the K best: higher score first, of two equal
scores (+0 and -0 are equal) the lower slot first, a NaN score last; a
list shorter than K leaves its tail as slot -1 and score NaN. The score of
a slot is q·k with k decoded from the pool's layout (bf16 elements as they
are, e4m3 codes times their scale). A read kernel is read-only: it writes
the out windows and nothing else, neither the pool nor its inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ._gen import read_pb2, read_pb2_grpc
from .attach import go_quote
from .calls import attached_pool, run_kernel, sync_or_fault
from .errors import RpcError, bad_request, unimplemented
from .kernel import CUDA, SHM, Pool, Variant
from .kind import Kind


@dataclass
class ReadCall:
    """One read. On the shm backend every field is a numpy view of the
    harness's staging: ``queries`` uint16 (requests, D) bf16 bit patterns,
    ``indptr`` int64 (requests+1,), ``tokens`` int64 (token_count,) (all
    read-only), ``out_slots`` int64 (requests, k) and ``out_scores``
    float32 (requests, k), which the kernel writes. On the cuda backend they
    are torch tensors on the device (queries bfloat16) and ``indptr_host``
    and ``tokens_host`` hold numpy copies (the SDK read them to check the
    request): size a launch from them freely, reads are not captured in
    graphs. Enqueue on ``stream``; the SDK waits before it answers.

    The SDK has checked every offset against staging, that indptr starts at
    0 and never decreases, that every token is a slot of the pool, and that
    the out windows overlap neither each other nor the inputs."""

    variant: str
    backend: str
    pool: Pool
    arena: Any  # the pool's region
    requests: int
    k: int
    token_count: int
    queries: Any
    indptr: Any
    tokens: Any
    out_slots: Any
    out_scores: Any
    indptr_host: Optional[np.ndarray] = None
    tokens_host: Optional[np.ndarray] = None
    stream: Any = None
    device: Optional[int] = None

    def list(self, r: int):
        """Request r's token list (a view of tokens)."""
        ip = self.indptr_host if self.indptr_host is not None else self.indptr
        return self.tokens[int(ip[r]) : int(ip[r + 1])]

    def query(self, r: int):
        """Request r's query: D bf16 elements."""
        return self.queries[r]


def check_indptr(indptr: np.ndarray, max_tokens: int) -> None:
    """CSR bounds: starting at 0, never decreasing, and no more tokens than
    staging could hold."""
    if indptr[0] != 0:
        raise bad_request(f"indptr[0] is {indptr[0]}; token lists start at 0")
    down = np.nonzero(indptr[1:] < indptr[:-1])[0]
    if down.size:
        i = int(down[0]) + 1
        raise bad_request(f"indptr[{i}] = {indptr[i]} is below indptr[{i - 1}] = {indptr[i - 1]}; "
                          "list bounds never decrease")
    if indptr[-1] > max_tokens:
        raise bad_request(f"indptr ends at {indptr[-1]} tokens; staging holds at most {max_tokens}")


class _Span:
    """A named staging range, for overlap checks."""

    def __init__(self, name: str, off: int, n: int):
        self.name, self.off, self.len = name, off, n

    @property
    def end(self) -> int:
        return self.off + self.len

    def overlaps(self, b: "_Span") -> bool:
        return self.len > 0 and b.len > 0 and self.off < b.end and b.off < self.end


def _in(att, what: str, off: int, n: int, size: int) -> None:
    try:
        att.in_staging(off, n, size)
    except RpcError as e:
        raise e.prefixed(what)


def _check_outputs(att, req, requests: int, k: int, tokens: int, d: int) -> None:
    """The out windows lie in staging, apart from each other and from every
    input: a kernel may write them without clobbering what it reads."""
    n = requests * k
    _in(att, "out slots", req.out_slots_offset, n, 8)
    _in(att, "out scores", req.out_scores_offset, n, 4)
    slots = _Span("out slots", req.out_slots_offset, 8 * n)
    scores = _Span("out scores", req.out_scores_offset, 4 * n)
    for inp in (_Span("queries", req.queries_offset, 2 * requests * d),
                _Span("indptr", req.indptr_offset, 8 * (requests + 1)),
                _Span("tokens", req.tokens_offset, 8 * tokens), scores):
        for out in (slots, scores):
            if out.name != inp.name and out.overlaps(inp):
                raise bad_request(f"{out.name} [{out.off},{out.end}) overlaps {inp.name} [{inp.off},{inp.end})")


def read_call(att, req) -> ReadCall:
    """Checks a read request against the attachment, reading the list
    bounds and the tokens (the tokens window's size and every slot's range
    depend on them: a kernel must never be handed a slot outside its pool),
    and builds the kernel's view."""
    p = attached_pool(att, req.pool, "read")
    r, k, d = req.requests, req.k, p.layout.head_dim
    if r * max(k, 1) > att.staging.size:
        raise bad_request(f"{r} requests × k {k} do not fit the {att.staging.size}-byte staging")
    _in(att, "queries", req.queries_offset, r * d, 2)
    _in(att, "indptr", req.indptr_offset, r + 1, 8)
    st = att.staging_region()
    indptr = np.array(st.int64s(req.indptr_offset, r + 1))
    check_indptr(indptr, att.staging.size // 8)
    n = int(indptr[r])
    _in(att, "tokens", req.tokens_offset, n, 8)
    tokens = np.array(st.int64s(req.tokens_offset, n))
    bad = np.nonzero((tokens < 0) | (tokens >= p.slots))[0]
    if bad.size:
        i = int(bad[0])
        raise bad_request(f"token {i} is slot {tokens[i]}, outside pool {go_quote(p.name)}'s slots 0..{p.slots - 1}")
    _check_outputs(att, req, r, k, n, d)
    att.kernel_region(f"pool {p.name}", p.region)
    att.kernel_region("staging", att.staging.region)
    return _view(att, req, p, r, k, n, indptr, tokens)


def _view(att, req, p, r, k, n, indptr, tokens) -> ReadCall:
    st, d = att.staging_region(), p.layout.head_dim
    call = ReadCall(variant=att.variant, backend=att.backend, pool=p, arena=att.mem(p.region), requests=r, k=k,
                    token_count=n, queries=st.rows(req.queries_offset, r, d), indptr=None, tokens=None,
                    out_slots=None, out_scores=None, device=att.device)
    if att.backend == CUDA:
        import torch

        call.indptr = st.view(req.indptr_offset, r + 1, torch.int64)
        call.tokens = st.view(req.tokens_offset, n, torch.int64)
        call.out_slots = st.view(req.out_slots_offset, r * k, torch.int64, (r, k))
        call.out_scores = st.view(req.out_scores_offset, r * k, torch.float32, (r, k))
        call.indptr_host, call.tokens_host, call.stream = indptr, tokens, att.ctx.stream
        return call
    call.indptr = st.view(req.indptr_offset, r + 1, np.int64)
    call.tokens = st.view(req.tokens_offset, n, np.int64)
    call.out_slots = st.view(req.out_slots_offset, r * k, np.int64, (r, k), writable=True)
    call.out_scores = st.view(req.out_scores_offset, r * k, np.float32, (r, k), writable=True)
    return call


def run_read(kernel, att, req) -> None:
    """Checks the request and runs the kernel on the attached backend; on
    CUDA it waits for the stream (even after a failed launch) before it
    answers, so the harness reads finished outputs."""
    if att is not None and att.backend == CUDA:
        if not kernel.has_read():
            raise unimplemented(f"{kernel.name} has no CUDA read kernel (it defines no read): "
                                "read with the shm backend (--backend cpu)")
        with att.ctx.context():
            call = read_call(att, req)
            err = None
            try:
                run_kernel(kernel.read, call, "read")
            except RpcError as e:
                err = e
        sync_or_fault(att, "read", err)
        if err is not None:
            raise err
        return
    if SHM not in kernel.backends or not kernel.has_read():
        raise unimplemented(f"{kernel.name} has no read kernel for host memory")
    run_kernel(kernel.read, read_call(att, req), "read")


def read_variant(name: str, doc: str) -> Variant:
    """A variant that changes only the read kernel (the Go SDK's read.Variant)."""
    return Variant(name, doc, kernel=KIND.name)


class ReadServicer(read_pb2_grpc.ReadServicer):
    """The read service on the plugin's service ``core``."""

    def __init__(self, core):
        self.core = core

    def Read(self, request, context):
        return self.core.rpc(context, self._read, request)

    def _read(self, req):
        with self.core.lock:
            run_read(self.core.k, self.core.att, req)
        return read_pb2.ReadResponse()


KIND = Kind(read_pb2.DESCRIPTOR.services_by_name["Read"], lambda k: k.has_read(), ReadServicer,
            read_pb2_grpc.add_ReadServicer_to_server)
