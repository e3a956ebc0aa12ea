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

The kernel reads the valid count n from device memory and launches one
program per row of the captured capacity: rows i ≥ n return at once, so
whatever a padded row's loc holds (a stale slot, the sink 0, -1) is never
dereferenced, eager or replayed from a CUDA graph.
"""

import triton
import triton.language as tl

try:  # Triton ≥ 3.0
    _div_rn = tl.math.div_rn
except AttributeError:  # pragma: no cover - older Triton
    from triton.language.extra import libdevice as _libdevice

    _div_rn = _libdevice.div_rn

FP8_MAX = 448.0


@triton.jit(do_not_specialize=["capacity"])
def indexer_store(pool_ptr, scales_ptr, rows_ptr, loc_ptr, valid_ptr, capacity,
                  D: tl.constexpr, P: tl.constexpr, BLOCK_D: tl.constexpr, EPS: tl.constexpr,
                  IEEE_DIVIDE: tl.constexpr):
    """Row i of the batch into its slot, if i < n. pool_ptr is the pool as
    uint8, scales_ptr the same bytes as float32."""
    i = tl.program_id(0)
    n = tl.load(valid_ptr)
    if i < n:
        slot = tl.load(loc_ptr + i).to(tl.int64)
        c = tl.arange(0, BLOCK_D)
        m = c < D
        x = tl.load(rows_ptr + i * D + c, mask=m, other=0.0).to(tl.float32)
        amax = tl.max(tl.abs(x), axis=0)
        if IEEE_DIVIDE:
            scale = _div_rn(tl.maximum(amax, EPS), FP8_MAX)
            y = _div_rn(x, scale)
        else:
            scale = tl.maximum(amax, EPS) / FP8_MAX
            y = x * (1.0 / scale)
        y = tl.minimum(tl.maximum(y, -FP8_MAX), FP8_MAX)
        page = slot // P
        j = slot % P
        base = page * (P * (D + 4))
        tl.store(pool_ptr + base + j * D + c, y.to(tl.float8e4nv).to(tl.uint8, bitcast=True), mask=m)
        tl.store(scales_ptr + (base + P * D) // 4 + j, scale)
