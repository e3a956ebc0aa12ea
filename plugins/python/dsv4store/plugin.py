"""dsv4store: DeepSeek-V4's main MLA KV store (layout dsv4-main, head dim
512) written as an engine's Triton kernel is: 448 nope elements quantized
to e4m3 in 7 tiles of 64 with ue8m0 (power-of-two) scales, eps 1e-8, the
64 rope elements copied as bf16, int32 slot indices, and the pad byte of
each 8-byte scale record left untouched. It declares that recipe and that
slot width.

It reads the valid count from device memory and never touches a padded
row, eager or under --graph. On the CPU the same store runs in numpy
(dsv4store_host.py).

Variants:
- undeclared-eps: the same arithmetic, but declares the default recipe:
  the harness must name the eps difference and how to declare it;
- default-recipe: eps 1e-4 and a zeroed pad byte, declaring nothing: a
  control, bit-exact with the harness's reference encoding on any harness.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
if os.path.isdir(os.path.join(_here, "..", "kvharness_sdk")):  # in the source tree; else the installed SDK
    sys.path.insert(0, os.path.join(_here, ".."))

from kvharness_sdk import CUDA, SHM, Geometry, LaunchedStore, Recipe, Variant, serve  # noqa: E402

import dsv4store_host as host  # noqa: E402

LAYOUT = "dsv4-main"
HEAD_DIM = 512
EPS = 1e-8
RECIPE = Recipe(scale="ue8m0", eps=EPS, quantize="reciprocal")


def arithmetic(variant: str):
    """(eps, zero the pad byte) the variant computes with."""
    return (1e-4, True) if variant == "default-recipe" else (EPS, False)


class DSV4Store(LaunchedStore):
    name = "dsv4store"
    version = "1.0.0"
    doc = "DeepSeek-V4 main KV store in Triton: e4m3 nope with ue8m0 tile scales (eps 1e-8), bf16 rope, pad byte untouched"
    backends = (SHM, CUDA)
    slot_bits = 32
    variants = (
        Variant("undeclared-eps", "computes with eps 1e-8 but declares the default recipe"),
        Variant("default-recipe", "eps 1e-4 and a zeroed pad byte: the layout's default encoding", correct=True),
    )

    def geometry(self, variant, head_dim, page_size):
        if head_dim != HEAD_DIM:
            return []
        recipe = RECIPE if variant == "" else None
        return [Geometry(LAYOUT, 584, host.page_bytes(page_size), recipe)]

    def check_pool(self, pool):
        if pool.layout.name != LAYOUT or pool.layout.head_dim != HEAD_DIM:
            raise ValueError(f"dsv4store stores {LAYOUT} with head dim {HEAD_DIM}, not {pool.layout}")

    def launch(self, variant, pool, arena, rows, loc, valid_t, capacity):
        import dsv4store_kernels as k
        import torch

        p = pool.layout.page_size
        pool_bytes = arena[pool.base : pool.base + pool.nbytes]
        eps, zero_pad = arithmetic(variant)
        fn = k.dsv4_store[(capacity,)]
        args = (pool_bytes, pool_bytes.view(torch.int16), rows, rows.view(torch.int16), loc, valid_t, capacity)
        kw = dict(P=p, PAGE_BYTES=host.page_bytes(p), EPS=eps, ZERO_PAD=zero_pad)
        return lambda: fn(*args, **kw)

    def host_store(self, call):
        eps, zero_pad = arithmetic(call.variant)
        host.store_dsv4(call, eps, zero_pad)

if __name__ == "__main__":
    serve(DSV4Store())
