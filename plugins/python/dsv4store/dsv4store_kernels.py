"""The Triton kernel of dsv4store: DeepSeek-V4's main MLA KV store.

The layout, from its definition (harness/layout/builtin.go, SGLang's
DeepSeekV4SingleKVPool): an input row is 512 bf16 elements, 448 "nope"
elements then 64 rope elements. A token's first record is 576 bytes: the
448 nope elements as e4m3 codes, in 7 tiles of 64 elements, then the 64
rope elements as bf16 (128 bytes). Its second record is 8 bytes: the 7
tiles' ue8m0 scales (a power of two, stored as its exponent + 127) and one
pad byte. A page of P tokens holds P first records, then P second records,
padded to a multiple of 576 bytes: ceil(P·584 / 576)·576 bytes.

A tile's scale is max(amax, eps) / 448 rounded up to a power of two. The
kernel gets its exponent exactly from the bits of a = max(amax, eps) =
1.m · 2^k: since 448 = 1.75 · 2^8, a / 448 lies in (2^(k-9), 2^(k-8)] when
1.m ≤ 1.75 and in (2^(k-8), 2^(k-7)) otherwise, so the exponent is k - 8,
plus one when the mantissa of a exceeds 1.75's. No division, no log2 (an
approximate log2 rounds up the wrong way just above a power of two), and
1 / scale = 2^-exponent is exact, so x * (1 / scale) = x / scale.

The pad byte is never written: the layout does not ask for it, and a
store that leaves it as it was is as correct as one that zeroes it. (The
"default-recipe" control zeroes it, as the harness's reference encoding
does.) Slot indices are int32, as the engine passes them.
"""

import triton
import triton.language as tl

@triton.jit(do_not_specialize=["capacity"])
def dsv4_store(pool_ptr, pool16_ptr, rows_ptr, rows16_ptr, loc_ptr, valid_ptr, capacity,
               P: tl.constexpr, PAGE_BYTES: tl.constexpr, EPS: tl.constexpr, ZERO_PAD: tl.constexpr):
    """Row i of the batch into its slot, with every load and store masked
    off unless i < n. pool_ptr is the pool as uint8 and pool16_ptr as
    int16; rows_ptr the rows as bf16 and rows16_ptr as int16 (the rope is
    copied as bits)."""
    i = tl.program_id(0)
    live = (i < tl.load(valid_ptr)) & (i < capacity)
    slot = tl.load(loc_ptr + i, mask=live, other=0).to(tl.int64)
    page = slot // P
    j = slot % P
    record = page * PAGE_BYTES + j * 576  # 448 e4m3 codes, then 64 bf16 rope elements
    scales = page * PAGE_BYTES + P * 576 + j * 8  # 7 ue8m0 exponents, then the pad byte
    g = tl.arange(0, 8)  # tiles, 7 of them real
    e = tl.arange(0, 64)
    at = g[:, None] * 64 + e[None, :]
    m = (g[:, None] < 7) & (e[None, :] < 64) & live
    x = tl.load(rows_ptr + i * 512 + at, mask=m, other=0.0).to(tl.float32)
    a = tl.maximum(tl.max(tl.abs(x), axis=1), tl.full([8], EPS, tl.float32))
    bits = a.to(tl.int32, bitcast=True)
    exponent = ((bits >> 23) & 0xFF) - 127 - 8 + tl.where((bits & 0x7FFFFF) > 0x600000, 1, 0)
    inverse = ((127 - exponent) << 23).to(tl.float32, bitcast=True)  # 1 / scale, exactly
    y = tl.minimum(tl.maximum(x * inverse[:, None], -448.0), 448.0)
    tl.store(pool_ptr + record + at, y.to(tl.float8e4nv).to(tl.uint8, bitcast=True), mask=m)
    tl.store(pool_ptr + scales + g, (exponent + 127).to(tl.uint8), mask=(g < 7) & live)
    if ZERO_PAD:
        tl.store(pool_ptr + scales + g, tl.zeros([8], dtype=tl.uint8), mask=(g == 7) & live)
    r = tl.arange(0, 64)
    rope = tl.load(rows16_ptr + i * 512 + 448 + r, mask=(r < 64) & live, other=0)
    tl.store(pool16_ptr + (record + 448) // 2 + r, rope, mask=(r < 64) & live)
