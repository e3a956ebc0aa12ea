"""The fp8 reference quantizer in numpy, bit for bit the harness's
(harness/layout/encode.go, e4m3.go): per row,

    scale = max(1e-4, max|x|) / 448          (float32, IEEE division; NaNs ignored)
    code  = e4m3(x / scale)                  (float32 IEEE division, then round to
                                              nearest even, saturating to ±448,
                                              every NaN to 0x7f)

``e4m3_rne`` works on the float32 bit pattern with integer operations only,
so it cannot depend on a platform's rounding mode, flush-to-zero or fused
multiply-adds; plugins/python/tritonstore runs the same integer recipe in
Triton, and this module is what the GPU self-test compares it with. A CPU
fp8 kernel can use ``quantize`` directly.
"""

from __future__ import annotations

import numpy as np

E4M3_MAX = 448.0
SCALE_FLOOR = np.float32(1e-4)


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) to float32, exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def scales(rows: np.ndarray) -> np.ndarray:
    """Per-row float32 scale of (C, D) bf16 bit patterns."""
    mag = (rows.astype(np.uint32) & 0x7FFF) << 16  # |x| as float32 bits
    nan = (rows & 0x7FFF) > 0x7F80
    a = np.where(nan, 0, mag).view(np.float32)
    amax = a.max(axis=-1, initial=np.float32(0))
    return (np.maximum(amax, SCALE_FLOOR) / np.float32(E4M3_MAX)).astype(np.float32)


def e4m3_rne(y: np.ndarray) -> np.ndarray:
    """float32 → e4m3 codes: round to nearest even, saturate to 0x7e, NaN
    to 0x7f (CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)
    with the harness's NaN code)."""
    u = np.ascontiguousarray(y, dtype=np.float32).view(np.int32).astype(np.int64)
    sign = (u >> 24) & 0x80
    a = u & 0x7FFFFFFF
    # Normal e4m3 range (float32 exponent ≥ -6): the code is the top 12
    # bits of a, rebased from float32's exponent bias to e4m3's, plus a
    # round-half-even increment that carries into the exponent.
    hi = a >> 20
    rem = a & 0xFFFFF
    up = (rem > 0x80000) | ((rem == 0x80000) & ((hi & 1) == 1))
    normal = np.minimum(hi - 960 + up, 0x7E)
    # Subnormal e4m3 range: m = round_half_even(|y| · 2^9) from the
    # significand, shifted right by 141 - exponent (21..31 here).
    e = a >> 23
    mant = (a & 0x7FFFFF) | 0x800000
    shift = np.clip(141 - e, 21, 31)
    q = mant >> shift
    r = mant & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    sub = q + ((r > half) | ((r == half) & ((q & 1) == 1)))
    code = np.where(e < 121, sub, normal)
    code = np.where(a >= 0x43E00000, 0x7E, code) | sign
    code = np.where(a > 0x7F800000, 0x7F, code)
    return code.astype(np.uint8)


def quantize(rows: np.ndarray):
    """(C, D) bf16 bit patterns → ((C, D) e4m3 codes, (C,) float32 scales)."""
    s = scales(rows)
    y = (bf16_to_f32(rows) / s[..., None]).astype(np.float32)
    return e4m3_rne(y), s
