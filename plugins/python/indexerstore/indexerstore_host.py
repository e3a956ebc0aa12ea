"""indexerstore's store in numpy, for the shm backend: the Triton kernel's
layout logic and recipe, row for row, on the CPU (see
indexerstore_kernels.py for the layout)."""

import numpy as np

from kvharness_sdk import fp8


def fp8_paged_offsets(slots: np.ndarray, head_dim: int, page_size: int):
    """Byte offsets, from the pool base, of each slot's codes and scale."""
    d, p = head_dim, page_size
    page, j = np.divmod(slots.astype(np.int64), p)
    base = page * (p * (d + 4))
    return base + j * d, base + p * d + 4 * j


def store_fp8_paged(call, eps: float, reciprocal: bool) -> None:
    """Quantizes the valid rows and writes codes and scales into their
    pages; padded rows are never read."""
    n, lay = call.valid, call.pool.layout
    if n == 0:
        return
    codes, scales = fp8.quantize(call.rows[:n], eps=np.float32(eps), reciprocal=reciprocal)
    values, scale_at = fp8_paged_offsets(call.loc[:n], lay.head_dim, lay.page_size)
    pool = call.pool_bytes()
    pool[values[:, None] + np.arange(lay.head_dim)] = codes
    pool[scale_at[:, None] + np.arange(4)] = scales.view(np.uint8).reshape(n, 4)
