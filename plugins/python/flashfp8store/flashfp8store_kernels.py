"""The Triton kernel of flashfp8store: vLLM's FlashAttention KV cache,
kv_cache_dtype fp8_e4m3, with static scales.

The cache is one tensor ``(2, num_blocks, P, H, D)`` of e4m3 codes: every
K page, then every V page. Slot s is token s % P of block s // P, so K's
element (h, d) of slot s sits at byte

    ((s // P) * P + s % P) * H * D + h * D + d

and V's at the same offset past the K half (num_blocks * P * H * D bytes).
The code is e4m3(x / k_scale) for K and e4m3(x / v_scale) for V: the
scales are per tensor, passed in by the caller, and not stored.

The kernel reads the valid count n from device memory (``valid_ptr``), as
an engine's kernel reads num_tokens from a static buffer before a CUDA
graph replays, and stores rows i < n only: whatever a padded row's slot
holds (-1, a stale slot, 0) is never dereferenced.

Bit-exact with the harness's reference (the "divide" recipe):

- x / scale is IEEE round-to-nearest division (tl.math.div_rn): Triton's
  ``/`` on float32 is div.full.f32, an approximation off by an ulp often
  enough to change codes;
- the e4m3 conversion is integer arithmetic on the float32 bits (round to
  nearest even, saturation to ±448, NaN to 0x7f), the same rule as
  kvharness_sdk.fp8.e4m3_rne, rather than a cast to tl.float8e4nv whose
  rounding and saturation depend on the Triton version and the GPU.
"""

import triton
import triton.language as tl

try:  # Triton ≥ 3.0
    _div_rn = tl.math.div_rn
except AttributeError:  # pragma: no cover - older Triton
    from triton.language.extra import libdevice as _libdevice

    _div_rn = _libdevice.div_rn

ROWS = 16  # tokens per program


@triton.jit
def e4m3_rne(y):
    """float32 → e4m3 code (int32 0..255): round to nearest even, ±448
    past the range, 0x7f for NaN."""
    u = y.to(tl.int32, bitcast=True)
    sign = (u >> 24) & 0x80
    a = u & 0x7FFFFFFF
    hi = a >> 20
    rem = a & 0xFFFFF
    up = (rem > 0x80000) | ((rem == 0x80000) & ((hi & 1) == 1))
    normal = tl.minimum(hi - 960 + tl.where(up, 1, 0), 0x7E)
    e = a >> 23
    mant = (a & 0x7FFFFF) | 0x800000
    shift = tl.minimum(tl.maximum(141 - e, 21), 31)
    one = shift * 0 + 1
    q = mant >> shift
    r = mant & ((one << shift) - 1)
    half = one << (shift - 1)
    sub = q + tl.where((r > half) | ((r == half) & ((q & 1) == 1)), 1, 0)
    code = tl.where(e < 121, sub, normal)
    code = tl.where(a >= 0x43E00000, 0x7E, code) | sign
    code = tl.where(a > 0x7F800000, 0x7F, code)
    return code


@triton.jit(do_not_specialize=["capacity", "half_bytes", "k_scale", "v_scale"])
def reshape_and_cache_flash_fp8(cache_ptr, key_value_ptr, slot_ptr, valid_ptr, capacity, half_bytes,
                                k_scale, v_scale, H: tl.constexpr, D: tl.constexpr, P: tl.constexpr,
                                BLOCK_D: tl.constexpr, ROWS: tl.constexpr):
    """Program (i, t·H + h) quantizes head h of tensor t (0 K, 1 V) of
    tokens i·ROWS .. i·ROWS + ROWS - 1 and stores the codes of those below
    n. cache_ptr is the cache as uint8 (K half, then V half, half_bytes
    each); key_value_ptr the tokens' bf16 bits as int16, a token's K heads
    then its V heads (2·H·D elements); slot_ptr int64 slots."""
    n = tl.load(valid_ptr)
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    th = tl.program_id(1)
    t = th // H
    h = th % H
    live = (r < n) & (r < capacity)
    slot = tl.load(slot_ptr + r, mask=live, other=0).to(tl.int64)
    c = tl.arange(0, BLOCK_D)
    m = live[:, None] & (c < D)[None, :]
    src = r.to(tl.int64)[:, None] * (2 * H * D) + (t * H + h) * D + c[None, :]
    bits = tl.load(key_value_ptr + src, mask=m, other=0).to(tl.int32) & 0xFFFF
    x = (bits << 16).to(tl.float32, bitcast=True)
    scale = tl.where(t == 0, k_scale, v_scale).to(tl.float32)
    y = _div_rn(x, tl.full([ROWS, BLOCK_D], 1.0, tl.float32) * scale)
    code = e4m3_rne(y)
    block = slot // P
    tok = slot % P
    dst = t.to(tl.int64) * half_bytes + (block * P + tok) * (H * D) + h * D
    tl.store(cache_ptr + dst[:, None] + c[None, :], code.to(tl.uint8), mask=m)
