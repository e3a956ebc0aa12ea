"""dsv4store's store in numpy, for the shm backend: the Triton kernel's
layout logic and arithmetic, row for row, on the CPU (see
dsv4store_kernels.py for the layout and the exponent rule)."""

import numpy as np

from kvharness_sdk import fp8

NOPE, ROPE, TILE = 448, 64, 64
RECORD, SCALES = 576, 8


def page_bytes(page_size: int) -> int:
    """P·584 bytes of records, padded to a multiple of 576."""
    return -(-page_size * (RECORD + SCALES) // RECORD) * RECORD


def offsets(slots: np.ndarray, page_size: int):
    """Byte offsets, from the pool base, of each slot's 576-byte record and
    8-byte scale record."""
    page, j = np.divmod(slots.astype(np.int64), page_size)
    base = page * page_bytes(page_size)
    return base + j * RECORD, base + page_size * RECORD + j * SCALES


def exponents(a: np.ndarray) -> np.ndarray:
    """The exponent of a / 448 rounded up to a power of two, from the bits
    of a (positive, normal float32): a = 1.m · 2^k and 448 = 1.75 · 2^8."""
    bits = a.astype(np.float32).view(np.int32)
    return ((bits >> 23) & 0xFF) - 127 - 8 + ((bits & 0x7FFFFF) > 0x600000)


def store_dsv4(call, eps: float, zero_pad: bool) -> None:
    """Quantizes the valid rows' nope tiles, copies their rope and writes
    the tiles' exponents; the pad byte is left as it is unless zero_pad.
    Padded rows are never read."""
    n = call.valid
    if n == 0:
        return
    rows = call.rows[:n]
    x = fp8.bf16_to_f32(rows[:, :NOPE]).reshape(n, NOPE // TILE, TILE)
    a = np.maximum(np.abs(x).max(axis=2), np.float32(eps))
    exp = exponents(a)
    inverse = ((127 - exp) << 23).astype(np.int32).view(np.float32)
    codes = fp8.e4m3_rne((x * inverse[..., None]).astype(np.float32)).reshape(n, NOPE)
    record, scales = offsets(call.loc[:n], call.pool.layout.page_size)
    pool = call.pool_bytes()
    pool[record[:, None] + np.arange(NOPE)] = codes
    pool[record[:, None] + NOPE + np.arange(2 * ROPE)] = np.ascontiguousarray(rows[:, NOPE:]).view(np.uint8)
    pool[scales[:, None] + np.arange(NOPE // TILE)] = (exp + 127).astype(np.uint8)
    if zero_pad:
        pool[scales + NOPE // TILE] = 0
