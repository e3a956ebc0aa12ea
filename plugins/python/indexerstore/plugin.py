"""indexerstore: DeepSeek's sparse-attention index-K store into SGLang's
fp8-paged indexer layout, written the way serving engines write it: a
Triton kernel that quantizes each token with scale = max(amax, 1e-8) / 448
and codes = e4m3(x * (1/scale)), and declares that recipe, so the harness
judges it by the arithmetic it does rather than by the default (eps 1e-4,
x / scale).

It reads the valid count from device memory and never touches a padded
row, eager or under --graph (the SDK captures it at capacity and replays
it). On the CPU the same store runs in numpy (indexerstore_host.py), with the same
recipe, so the layout logic is checked on machines without a GPU.

Variants:
- undeclared-eps: the same arithmetic, but declares the default recipe:
  the harness must say that the stored bytes match eps 1e-8 and how to
  declare it (a mutant of the declaration, not of the kernel);
- default-recipe: computes the layout's default recipe (eps 1e-4, IEEE
  x / scale) and declares nothing: a control, bit-exact with the harness's
  reference on any harness.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
if os.path.isdir(os.path.join(_here, "..", "kvharness_sdk")):  # in the source tree; else the installed SDK
    sys.path.insert(0, os.path.join(_here, ".."))

from kvharness_sdk import CUDA, SHM, Geometry, LaunchedStore, Recipe, Variant, serve  # noqa: E402

import indexerstore_host as host  # noqa: E402

LAYOUT = "fp8-paged"
EPS = 1e-8
# Triton's float32 "/" is div.full.f32, an approximation within 2 ulps of
# IEEE division: the stored scale may be that far from max(amax, eps)/448.
RECIPE = Recipe(scale="f32", eps=EPS, quantize="reciprocal", scale_ulps=2)


def arithmetic(variant: str):
    """(eps, IEEE division) the variant computes with."""
    return (1e-4, True) if variant == "default-recipe" else (EPS, False)


class IndexerStore(LaunchedStore):
    name = "indexerstore"
    version = "1.0.0"
    doc = "fp8-paged index-K store in Triton: scale max(amax, 1e-8)/448, x*(1/scale), declared as its recipe"
    backends = (SHM, CUDA)
    variants = (
        Variant("undeclared-eps", "computes with eps 1e-8 and x*(1/scale) but declares the default recipe"),
        Variant("default-recipe", "computes the layout's default recipe (eps 1e-4, IEEE x/scale)", correct=True),
    )

    def geometry(self, variant, head_dim, page_size):
        d, p = head_dim, page_size
        recipe = RECIPE if variant == "" else None
        return [Geometry(LAYOUT, d + 4, (d + 4) * p, recipe)]

    def check_pool(self, pool):
        if pool.layout.name != LAYOUT:
            raise ValueError(f"indexerstore stores {LAYOUT}, not {pool.layout.name}")

    def launch(self, variant, pool, arena, rows, loc, valid_t, capacity):
        import indexerstore_kernels as k
        import torch

        lay = pool.layout
        d = lay.head_dim
        pool_bytes = arena[pool.base : pool.base + pool.nbytes]
        scales = pool_bytes[: pool.nbytes // 4 * 4].view(torch.float32)
        eps, ieee = arithmetic(variant)
        fn = k.indexer_store[((capacity + k.ROWS - 1) // k.ROWS,)]
        kw = dict(D=d, P=lay.page_size, BLOCK_D=1 << max(d - 1, 0).bit_length(), ROWS=k.ROWS, EPS=eps,
                  IEEE_DIVIDE=ieee)
        return lambda: fn(pool_bytes, scales, rows, loc, valid_t, capacity, **kw)

    def host_store(self, call):
        eps, ieee = arithmetic(call.variant)
        host.store_fp8_paged(call, eps, reciprocal=not ieee)

if __name__ == "__main__":
    serve(IndexerStore())
