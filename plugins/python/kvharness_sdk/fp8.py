"""The fp8 reference quantizer in numpy. With its defaults it is, bit for
bit, the harness's default recipe (harness/layout/encode.go, e4m3.go): per
group of elements,

    scale = max(1e-4, max|x|) / 448          (float32, IEEE division; NaNs ignored)
    code  = e4m3(x / scale)                  (float32 IEEE division, then round to
                                              nearest even, saturating to ±448,
                                              every NaN to 0x7f)

and a ue8m0 scale is that scale rounded up to a power of two, stored as
its exponent + 127. The other recipes a kernel may declare (eps 1e-8 or
any floor, ``x * (1/scale)``) are parameters, so a test can compute what a
kernel that declares them should store.

``e4m3_rne`` works on the float32 bit pattern with integer operations only,
so it cannot depend on a platform's rounding mode, flush-to-zero or fused
multiply-adds; plugins/python/tritonstore runs the same integer recipe in
Triton, and this module is what the GPU self-test compares it with. A CPU
fp8 kernel can use ``quantize`` directly.
"""

from __future__ import annotations

import numpy as np

E4M3_MAX = 448.0
SCALE_FLOOR = np.float32(1e-4)  # the default recipe's eps


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) to float32, exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def amax(rows: np.ndarray) -> np.ndarray:
    """max|x| over the last axis of bf16 bit patterns, NaNs ignored, as float32."""
    mag = (rows.astype(np.uint32) & 0x7FFF) << 16  # |x| as float32 bits
    nan = (rows & 0x7FFF) > 0x7F80
    a = np.where(nan, 0, mag).view(np.float32)
    return a.max(axis=-1, initial=np.float32(0))


def scales(rows: np.ndarray, eps=SCALE_FLOOR) -> np.ndarray:
    """Per-row float32 scale of (..., D) bf16 bit patterns: max(amax, eps) / 448."""
    return (np.maximum(amax(rows), np.float32(eps)) / np.float32(E4M3_MAX)).astype(np.float32)


def ue8m0_exponents(s: np.ndarray) -> np.ndarray:
    """The exponent of each float32 scale rounded up to a power of two (the
    harness's ue8m0Exponent: frexp, one less for an exact power), clamped to
    [-127, 127]: -127 for a zero scale, 127 for an infinite one."""
    s = s.astype(np.float64)
    with np.errstate(invalid="ignore"):
        frac, exp = np.frexp(s)
    exp = exp - (frac == 0.5)
    exp = np.where(s <= 0, -127, np.where(np.isposinf(s), 127, exp))
    return np.clip(exp, -127, 127).astype(np.int32)


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


def _codes(x: np.ndarray, s: np.ndarray, reciprocal: bool) -> np.ndarray:
    with np.errstate(all="ignore"):  # NaN and Inf inputs are part of the contract
        if reciprocal:
            y = x * (np.float32(1) / s).astype(np.float32)[..., None]
        else:
            y = x / s[..., None]
    return e4m3_rne(y.astype(np.float32))


def quantize(rows: np.ndarray, eps=SCALE_FLOOR, reciprocal: bool = False):
    """(C, D) bf16 bit patterns → ((C, D) e4m3 codes, (C,) float32 scales),
    one scale per row."""
    s = scales(rows, eps)
    return _codes(bf16_to_f32(rows), s, reciprocal), s


def quantize_ue8m0(rows: np.ndarray, group: int, eps=SCALE_FLOOR, reciprocal: bool = False):
    """(C, G·group) bf16 bit patterns → ((C, G·group) e4m3 codes, (C, G)
    ue8m0 scale bytes), one power-of-two scale per group of elements."""
    c, d = rows.shape
    g = rows.reshape(c, d // group, group)
    exp = ue8m0_exponents(scales(g, eps))
    s = np.ldexp(np.float32(1), exp).astype(np.float32)
    codes = _codes(bf16_to_f32(g), s, reciprocal)
    return codes.reshape(c, d), (exp + 127).astype(np.uint8)
