"""topkread: the sparse-attention indexer's read, in numpy on the CPU and
PyTorch on the GPU: for each request, gather the keys of its token list
from the pool (bf16 rows, or fp8 e4m3 codes times their float32 scale in
the fp8-paged and fp8-rows layouts), score them against the request's
query and keep the k best, in the read contract's order (higher score
first, ties to the lower slot, NaN last; a short list padded with slot -1
and a NaN score).

The key addresses come from the layouts' definitions, not from the
harness: bf16 rows of 2·D bytes; fp8-paged pages of P·D codes then P
float32 scales; fp8-rows records of D codes then the scale.

Variant:
- next-token (read): each request also scores the token after its list
  (the next request's first), as an unmasked tile tail does: a read of
  another request's key, caught by the read properties.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
_here = os.path.dirname(os.path.abspath(__file__))
if os.path.isdir(os.path.join(_here, "..", "kvharness_sdk")):  # in the source tree; else the installed SDK
    sys.path.insert(0, os.path.join(_here, ".."))

import numpy as np  # noqa: E402

from kvharness_sdk import CUDA, SHM, Geometry, Kernel, read_variant, serve  # noqa: E402
from kvharness_sdk.fp8 import bf16_to_f32  # noqa: E402

LAYOUTS = ("bf16", "fp8-paged", "fp8-rows")


def e4m3_table() -> np.ndarray:
    """Every e4m3 code's value as float32 (0x7f and 0xff are NaN)."""
    c = np.arange(256)
    e, m = (c >> 3) & 0xF, c & 7
    v = np.where(e == 0, m / 8 * 2.0**-6, (1 + m / 8) * 2.0 ** (e - 7.0))
    v = np.where((e == 0xF) & (m == 7), np.nan, v)
    return np.where(c & 0x80, -v, v).astype(np.float32)


E4M3 = e4m3_table()


def key_offsets(layout, slots):
    """(first code byte, scale byte) of each slot's key, from the pool base;
    the scale offset is None for bf16."""
    d, p = layout.head_dim, layout.page_size
    if layout.name == "bf16":
        return slots * (2 * d), None
    if layout.name == "fp8-rows":
        return slots * (d + 4), slots * (d + 4) + d
    page, j = slots // p, slots % p
    base = page * (p * (d + 4))
    return base + j * d, base + p * d + 4 * j


class TopKRead(Kernel):
    name = "topkread"
    version = "1.0.0"
    doc = "indexer top-k read (q·k over a token list) in numpy and PyTorch, for bf16, fp8-paged and fp8-rows"
    backends = (SHM, CUDA)
    variants = (read_variant("next-token", "each request also scores the token after its list (an unmasked tail)"),)
    # Each request is scored and ranked alone: a NaN or infinite score
    # ranks within its own request (NaN last) and touches no other.
    read_non_finite = "contained"

    def geometry(self, variant, head_dim, page_size):
        d, p = head_dim, page_size
        return [Geometry("bf16", 2 * d, 2 * d * p), Geometry("fp8-paged", d + 4, (d + 4) * p),
                Geometry("fp8-rows", d + 4, (d + 4) * p)]

    def span(self, call, r):
        """The tokens request r reads, as indices into call.tokens."""
        ip = call.indptr_host if call.indptr_host is not None else call.indptr
        lo, hi = int(ip[r]), int(ip[r + 1])
        if call.variant == "next-token":
            hi = min(hi + 1, call.token_count)
        return lo, hi

    def read(self, call):
        if call.pool.layout.name not in LAYOUTS:
            raise ValueError(f"topkread reads {', '.join(LAYOUTS)}, not {call.pool.layout.name}")
        if call.backend == CUDA:
            self._read_torch(call)
        else:
            self._read_numpy(call)

    # --- numpy -------------------------------------------------------------

    def _read_numpy(self, call):
        pool = call.arena[call.pool.base : call.pool.base + call.pool.nbytes]
        lay = call.pool.layout
        d = lay.head_dim
        for r in range(call.requests):
            lo, hi = self.span(call, r)
            slots = call.tokens[lo:hi].astype(np.int64)
            at, sat = key_offsets(lay, slots)
            if lay.name == "bf16":
                raw = pool[at[:, None] + np.arange(2 * d)]
                keys = bf16_to_f32(np.ascontiguousarray(raw).view(np.uint16))
            else:
                scale = np.ascontiguousarray(pool[sat[:, None] + np.arange(4)]).view(np.float32)
                keys = E4M3[pool[at[:, None] + np.arange(d)]] * scale
            q = bf16_to_f32(np.ascontiguousarray(call.query(r)))
            with np.errstate(all="ignore"):
                scores = (keys.astype(np.float32) @ q).astype(np.float32) + np.float32(0)  # -0 becomes +0
            order = np.lexsort((slots, -np.nan_to_num(scores, nan=0.0), np.isnan(scores)))[: call.k]
            m = order.size
            call.out_slots[r, :m], call.out_scores[r, :m] = slots[order], scores[order]
            call.out_slots[r, m:], call.out_scores[r, m:] = -1, np.nan

    # --- torch -------------------------------------------------------------

    def _read_torch(self, call):
        import torch

        pool = call.arena[call.pool.base : call.pool.base + call.pool.nbytes]
        lay = call.pool.layout
        d = lay.head_dim
        dev = pool.device
        for r in range(call.requests):
            lo, hi = self.span(call, r)
            slots = call.tokens[lo:hi]
            at, sat = key_offsets(lay, slots)
            if lay.name == "bf16":
                keys = pool[at[:, None] + torch.arange(2 * d, device=dev)].view(torch.bfloat16).float()
            else:
                codes = pool[at[:, None] + torch.arange(d, device=dev)]
                scale = pool[sat[:, None] + torch.arange(4, device=dev)].view(torch.float32)
                keys = codes.view(torch.float8_e4m3fn).float() * scale
            scores = keys @ call.query(r).float() + 0.0  # -0 becomes +0
            order = torch.argsort(slots, stable=True)
            order = order[torch.argsort(-torch.nan_to_num(scores[order], nan=0.0), stable=True)]
            order = order[torch.argsort(torch.isnan(scores[order]).to(torch.int8), stable=True)][: call.k]
            m = order.numel()
            call.out_slots[r, :m] = slots[order]
            call.out_scores[r, :m] = scores[order]
            call.out_slots[r, m:] = -1
            call.out_scores[r, m:] = float("nan")


if __name__ == "__main__":
    serve(TopKRead())
