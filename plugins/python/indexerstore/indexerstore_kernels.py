"""The Triton kernel of indexerstore: quantize a batch of bf16 index-K rows
to fp8 e4m3 with one float32 scale per token and store them into the
fp8-paged layout.

The layout, from its definition (harness/layout/builtin.go, SGLang's
indexer page): a page of P tokens is P × D e4m3 codes, token j's at byte
j·D, then P float32 scales, token j's at byte P·D + 4·j; a page is
P·(D + 4) bytes, and slot s lives in page s // P at position s % P.

The arithmetic is the engine's own: scale = max(amax, eps) / 448 with eps
1e-8, codes = e4m3(x · (1 / scale)) through Triton's cast (round to
nearest even, saturating after a clamp to ±448), Triton's own float32
division. The plugin declares exactly that recipe; the "default-recipe"
control computes the layout's default instead (eps 1e-4, IEEE x / scale).

The kernel reads the valid count n from device memory and covers the whole
captured capacity, ROWS rows per program, with every load and store of a
row i ≥ n masked off: whatever a padded row's loc holds (a stale slot, the
sink 0, -1) is never dereferenced, eager or replayed from a CUDA graph.
"""

import triton
import triton.language as tl

try:  # Triton ≥ 3.0
    _div_rn = tl.math.div_rn
except AttributeError:  # pragma: no cover - older Triton
    from triton.language.extra import libdevice as _libdevice

    _div_rn = _libdevice.div_rn

ROWS = 8  # rows per program


@triton.jit(do_not_specialize=["capacity"])
def indexer_store(pool_ptr, scales_ptr, rows_ptr, loc_ptr, valid_ptr, capacity,
                  D: tl.constexpr, P: tl.constexpr, BLOCK_D: tl.constexpr, ROWS: tl.constexpr, EPS: tl.constexpr,
                  IEEE_DIVIDE: tl.constexpr):
    """Rows of the batch into their slots, those with i < n only. pool_ptr
    is the pool as uint8, scales_ptr the same bytes as float32."""
    n = tl.load(valid_ptr)
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    live = (r < n) & (r < capacity)
    slot = tl.load(loc_ptr + r, mask=live, other=0).to(tl.int64)
    c = tl.arange(0, BLOCK_D)
    m = live[:, None] & (c < D)[None, :]
    x = tl.load(rows_ptr + r.to(tl.int64)[:, None] * D + c[None, :], mask=m, other=0.0).to(tl.float32)
    a = tl.maximum(tl.max(tl.abs(x), axis=1), tl.full([ROWS], EPS, tl.float32))
    if IEEE_DIVIDE:
        scale = _div_rn(a, tl.full([ROWS], 448.0, tl.float32))
        y = _div_rn(x, tl.broadcast_to(scale[:, None], (ROWS, BLOCK_D)))
    else:
        scale = a / 448.0
        y = x * (1.0 / scale)[:, None]
    y = tl.minimum(tl.maximum(y, -448.0), 448.0)
    page = slot // P
    j = slot % P
    base = page * (P * (D + 4))
    tl.store(pool_ptr + (base + j * D)[:, None] + c[None, :], y.to(tl.float8e4nv).to(tl.uint8, bitcast=True), mask=m)
    tl.store(scales_ptr + (base + P * D) // 4 + j, scale, mask=live)
