"""The Triton kernels of tritonstore: padding-aware stores of bf16 rows and
of fp8-paged tokens (SGLang's indexer page: P × D e4m3 values, then P
float32 scales).

Both read the valid count n from device memory (``valid_ptr``), as a
serving engine's kernel reads num_tokens from a static buffer, and store
only rows i < n: whatever a padded row's loc holds (a stale slot, the sink
slot 0, -1) is never dereferenced. That is fusedstore's rule, and the fix
for the incident.

fp8 is bit-exact with the harness's reference (harness/layout/encode.go):

- amax ignores NaN elements (integer test on the bf16 bits);
- scale = max(1e-4, amax) / 448 and x / scale use IEEE round-to-nearest
  division (tl.math.div_rn): Triton's ``/`` on float32 is div.full.f32, an
  approximation that is off by an ulp often enough to change codes;
- the e4m3 conversion is done with integer operations on the float32 bits
  (round to nearest even, saturation to ±448, NaN → 0x7f), the same recipe
  as kvharness_sdk.fp8.e4m3_rne, instead of a cast to tl.float8e4nv whose
  rounding and saturation depend on the Triton version and GPU generation.
"""

import triton
import triton.language as tl

try:  # Triton ≥ 3.0
    _div_rn = tl.math.div_rn
except AttributeError:  # pragma: no cover - older Triton
    from triton.language.extra import libdevice as _libdevice

    _div_rn = _libdevice.div_rn

ROWS = 8  # rows per program


@triton.jit
def e4m3_rne(y):
    """float32 → e4m3 code (int32 0..255); see kvharness_sdk.fp8.e4m3_rne."""
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


@triton.jit
def valid_rows(loc_ptr, valid_ptr, capacity, D: tl.constexpr, BLOCK_D: tl.constexpr, ROWS: tl.constexpr):
    """This program's rows r, which of them are live (r < n, n read from
    the device, and inside the batch), their slots (0 where not live, never
    dereferenced), the element columns c and the rows × columns mask m."""
    n = tl.load(valid_ptr)
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    live = (r < n) & (r < capacity)
    slot = tl.load(loc_ptr + r, mask=live, other=0)
    c = tl.arange(0, BLOCK_D)
    m = live[:, None] & (c < D)[None, :]
    return r, live, slot, c, m


@triton.jit(do_not_specialize=["capacity"])
def store_bf16(pool_ptr, rows_ptr, loc_ptr, valid_ptr, capacity, D: tl.constexpr, BLOCK_D: tl.constexpr, ROWS: tl.constexpr):
    """pool[loc[i]] = rows[i] for i < n; pool and rows are int16 views."""
    r, live, slot, c, m = valid_rows(loc_ptr, valid_ptr, capacity, D, BLOCK_D, ROWS)
    x = tl.load(rows_ptr + r.to(tl.int64)[:, None] * D + c[None, :], mask=m, other=0)
    tl.store(pool_ptr + slot[:, None] * D + c[None, :], x, mask=m)


@triton.jit(do_not_specialize=["capacity"])
def store_fp8_paged(values_ptr, scales_ptr, rows_ptr, loc_ptr, valid_ptr, capacity,
                    D: tl.constexpr, P: tl.constexpr, BLOCK_D: tl.constexpr, ROWS: tl.constexpr):
    """Quantizes rows i < n and stores them into their pages: values_ptr is
    the pool as uint8, scales_ptr the same bytes as float32."""
    r, live, slot, c, m = valid_rows(loc_ptr, valid_ptr, capacity, D, BLOCK_D, ROWS)
    bits = tl.load(rows_ptr + r.to(tl.int64)[:, None] * D + c[None, :], mask=m, other=0).to(tl.int32) & 0xFFFF
    x = (bits << 16).to(tl.float32, bitcast=True)
    nan = (bits & 0x7FFF) > 0x7F80
    mag = tl.where(nan, 0, (bits & 0x7FFF) << 16).to(tl.float32, bitcast=True)
    amax = tl.max(mag, axis=1)
    floor = tl.full([ROWS], 1e-4, tl.float32)
    scale = _div_rn(tl.maximum(amax, floor), tl.full([ROWS], 448.0, tl.float32))
    y = _div_rn(x, tl.broadcast_to(scale[:, None], (ROWS, BLOCK_D)))
    code = e4m3_rne(y)
    page = slot // P
    j = slot % P
    base = page * (P * (D + 4))
    tl.store(values_ptr + (base + j * D)[:, None] + c[None, :], code.to(tl.uint8), mask=m)
    tl.store(scales_ptr + (base + P * D + 4 * j) // 4, scale, mask=live)


@triton.jit
def convert_e4m3(y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """The explicit conversion alone, for the GPU self-test."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = tl.load(y_ptr + i, mask=i < n, other=0.0)
    tl.store(out_ptr + i, e4m3_rne(y).to(tl.uint8), mask=i < n)


@triton.jit
def cast_e4m3(y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Triton's own cast to tl.float8e4nv, which the self-test compares with
    the reference (for the record: the store does not use it)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = tl.load(y_ptr + i, mask=i < n, other=0.0)
    tl.store(out_ptr + i, y.to(tl.float8e4nv).to(tl.uint8, bitcast=True), mask=i < n)


@triton.jit
def divide(x_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """x / s with div_rn, for the GPU self-test."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n, other=1.0)
    s = tl.load(s_ptr + i, mask=i < n, other=1.0)
    tl.store(out_ptr + i, _div_rn(x, s), mask=i < n)
