"""flashfp8store: a K/V store for vLLM's FlashAttention cache with
kv_cache_dtype fp8_e4m3 and static scales (kvharness layout
vllm-flash-fp8), written in Triton for the GPU, with a numpy twin for
host memory so that the same checks run on a machine without a GPU.

The cache is ``(2, num_blocks, P, H, D)`` e4m3: every K page, then every
V page. Each token's row holds its K heads then its V heads (2·H·D bf16
elements); the caller passes per-tensor scales (``call.scales["k"]``,
``["v"]``), the codes are e4m3(x / scale) and no scale is stored. Only
rows i < n are stored, n read from the device on the GPU: a padded row's
slot is never dereferenced. See flashfp8store_kernels.py for the index
formula and the arithmetic (bit-exact with the harness's reference).

Copy this folder to start your own: the manifest beside it serves it,
``test_flashfp8store.py`` checks it with pytest.

    kvharness check --plugin plugins/python/flashfp8store/kvharness-plugin.json --layout vllm-flash-fp8
    kvharness check --plugin plugins/python/flashfp8store/kvharness-plugin.json --layout vllm-flash-fp8 --backend cuda --graph

Triton and torch are imported on the first CUDA attach, so the plugin
describes itself and stores host pools where they are not installed.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_here, ".."))
sys.path.insert(0, _here)

import numpy as np  # noqa: E402

from kvharness_sdk import CUDA, SHM, Geometry, Kernel, serve  # noqa: E402
from kvharness_sdk import fp8  # noqa: E402  (bf16_to_f32)

LAYOUT = "vllm-flash-fp8"


def _kernels():
    import flashfp8store_kernels as kernels  # triton; see the module docstring

    return kernels


def _block(d: int) -> int:
    """tl.arange needs a power of two: the head, rounded up and masked."""
    return 1 << max(d - 1, 0).bit_length()


def cache_shape(pool):
    """(H, D, P, num_blocks, half) of a pool of layout vllm-flash-fp8:
    half is the bytes of the K half (num_blocks·P·H·D), where V starts."""
    lay = pool.layout
    if lay.name != LAYOUT:
        raise ValueError(f"flashfp8store stores {LAYOUT}, not {lay.name}")
    h, d, p = lay.heads, lay.head_dim, lay.page_size
    blocks = (pool.slots + p - 1) // p
    half = blocks * p * h * d
    if 2 * half > pool.nbytes:
        raise ValueError(f"pool {pool.name}: {pool.nbytes} bytes cannot hold K and V of {blocks} blocks "
                         f"of {p} tokens × {h} heads × {d} ({2 * half} bytes)")
    return h, d, p, blocks, half


def static_scales(call):
    """The per-tensor k_scale and v_scale the caller passed."""
    got = call.scales or {}
    out = []
    for t in ("k", "v"):
        vals = got.get(t)
        if not vals or len(vals) != 1:
            raise ValueError(f"{LAYOUT} wants one static scale for {t!r} (per tensor); got {vals!r} "
                             "(a per-head scale is another layout)")
        out.append(float(vals[0]))
    return out


def _e4m3_midpoints() -> np.ndarray:
    """The 126 midpoints between consecutive non-negative finite e4m3
    values (codes 0..0x7e), exact in float32."""
    e, m = np.arange(0x7F) >> 3, np.arange(0x7F) & 7
    vals = np.where(e == 0, m / 8 * 2.0**-6, (1 + m / 8) * 2.0 ** (e - 7))
    return ((vals[:-1] + vals[1:]) / 2).astype(np.float32)


_MIDS = _e4m3_midpoints()


def e4m3_codes(y: np.ndarray) -> np.ndarray:
    """float32 → e4m3 codes by the midpoints between the codes' values:
    nearest, ties to the even code, ±448 past the range, 0x7f for NaN."""
    a = np.abs(y)
    code = np.searchsorted(_MIDS, a, side="left")  # the midpoints below |y|
    tie = (code < _MIDS.size) & (_MIDS[np.minimum(code, _MIDS.size - 1)] == a) & (code % 2 == 1)
    code = (code + tie).astype(np.uint8) | np.where(np.signbit(y), 0x80, 0).astype(np.uint8)
    return np.where(np.isnan(y), np.uint8(0x7F), code)


def store_host(call) -> None:
    """The numpy twin of the Triton kernel: the same formula, vectorised
    over the valid tokens."""
    h, d, p, _, half = cache_shape(call.pool)
    n = call.valid
    if n == 0:
        return
    k_scale, v_scale = static_scales(call)
    x = fp8.bf16_to_f32(np.asarray(call.rows[:n], dtype=np.uint16)).reshape(n, 2, h * d)
    with np.errstate(over="ignore"):  # past float32's range: ±inf, which saturates to ±448
        y = x / np.array([k_scale, v_scale], dtype=np.float32)[None, :, None]  # IEEE float32 division
    codes = e4m3_codes(y).reshape(n, 2, h * d)
    cache = call.pool_bytes()
    hd = h * d
    for i, s in enumerate(np.asarray(call.loc[:n], dtype=np.int64).tolist()):
        at = ((s // p) * p + s % p) * hd  # a token's H×D codes are contiguous in each half
        cache[at : at + hd] = codes[i, 0]
        cache[half + at : half + at + hd] = codes[i, 1]


class FlashFP8Store(Kernel):
    name = "flashfp8store"
    version = "1.0.0"
    doc = "vLLM flash KV cache, fp8_e4m3 with static k_scale/v_scale: Triton on the GPU, numpy on the host"
    backends = (SHM, CUDA)

    def geometry(self, variant, head_dim, page_size, heads=1):
        tok = 2 * heads * head_dim  # a K code and a V code per element
        return [Geometry(LAYOUT, tok, tok * page_size)]

    def prepare(self, attach):
        """Compiles each pool's kernel by launching it with n = 0 (it
        stores nothing), so compilation is neither in the first timed
        launch nor counted against a store's deadline."""
        if attach.backend != CUDA:
            return
        import torch

        k = _kernels()
        dev = f"cuda:{attach.device}"
        zero = torch.zeros(1, dtype=torch.int32, device=dev)
        done = set()
        for pool in attach.pools:
            h, d, p, _, half = cache_shape(pool)
            if (h, d, p) in done:
                continue
            done.add((h, d, p))
            rows = torch.zeros((1, 2 * h * d), dtype=torch.int16, device=dev)
            loc = torch.zeros(1, dtype=torch.int64, device=dev)
            cache = attach.arena[pool.base : pool.base + pool.nbytes]
            self._grid(k, 1, h)(cache, rows, loc, zero, 1, half, 1.0, 1.0, **self._meta(k, h, d, p))

    @staticmethod
    def _meta(k, h, d, p):
        return dict(H=h, D=d, P=p, BLOCK_D=_block(d), ROWS=k.ROWS)

    @staticmethod
    def _grid(k, capacity, h):
        return k.reshape_and_cache_flash_fp8[((capacity + k.ROWS - 1) // k.ROWS, 2 * h)]

    def launcher(self, call):
        import torch

        k = _kernels()
        h, d, p, _, half = cache_shape(call.pool)
        k_scale, v_scale = static_scales(call)
        launch = self._grid(k, call.capacity, h)
        args = (call.pool_bytes(), call.rows.view(torch.int16), call.loc, call.valid_t, call.capacity, half,
                k_scale, v_scale)
        meta = self._meta(k, h, d, p)
        return lambda: launch(*args, **meta)

    def store(self, call):
        if call.backend == CUDA:
            self.launcher(call)()
            return
        store_host(call)


if __name__ == "__main__":
    serve(FlashFP8Store())
