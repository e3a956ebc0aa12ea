"""pytest checks of flashfp8store, the way a kernel author runs them.

On any machine (numpy): the host twin stores what the layout facts say,
against a per-element reference written here in another style (slots
walked one by one, e4m3 by a search of the code table).

On the GPU machine (torch, Triton, CUDA): the Triton kernel writes the
same bytes as the host twin, padded rows untouched. Elsewhere it skips,
saying so.

With kvharness (the pytest plugin, -p kvharness_sdk.pytest_plugin, and a
binary): kvharness check over every padding, on the GPU where there is
one. From plugins/python:

    python3 -m pytest flashfp8store                        # numpy checks; the rest skip, saying why
    python3 -m pytest -p kvharness_sdk.pytest_plugin flashfp8store --kvharness ../../dist/gpu/kvharness --kvharness-backend cuda
"""

import math
import os
import sys

sys.dont_write_bytecode = True
_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_here, ".."))
sys.path.insert(0, _here)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kvharness_sdk import SHM, CUDA  # noqa: E402
from kvharness_sdk.kernel import Layout, Pool, StoreCall  # noqa: E402
from plugin import LAYOUT, FlashFP8Store, store_host  # noqa: E402

MANIFEST = os.path.join(_here, "kvharness-plugin.json")


def e4m3_value(code: int) -> float:
    """The value of an e4m3 code (0x7f and 0xff are NaN)."""
    sign = -1.0 if code & 0x80 else 1.0
    e, m = (code >> 3) & 0xF, code & 7
    if e == 0:
        return sign * m / 8 * 2.0**-6
    return sign * (1 + m / 8) * 2.0 ** (e - 7)


_CODES = [c for c in range(0x7F)]  # the non-negative finite codes, in order of value


def e4m3_by_search(x: float) -> int:
    """The nearest e4m3 code to x (ties to the even code), ±448 past the
    range: by a walk of the code table, not by bit arithmetic."""
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    a = abs(x)
    if math.isinf(a):
        return 0x7E | sign
    best = min(_CODES, key=lambda c: (abs(e4m3_value(c) - a), c & 1))
    return best | sign


def bf16_value(bits: int) -> float:
    return float(np.array([bits << 16], dtype=np.uint32).view(np.float32)[0])


def reference_cache(rows, slots, n, heads, dim, page, blocks, k_scale, v_scale, before):
    """What the cache holds after a correct store: token i < n's element
    (t, h, d) coded at [t][slot // page][slot % page][h][d] of the
    (2, blocks, page, heads, dim) cache."""
    cache = before.copy().reshape(2, blocks, page, heads, dim)
    for i in range(n):
        s = int(slots[i])
        for t, scale in enumerate((k_scale, v_scale)):
            for h in range(heads):
                for d in range(dim):
                    x = np.float32(bf16_value(int(rows[i, (t * heads + h) * dim + d])))
                    cache[t, s // page, s % page, h, d] = e4m3_by_search(float(x / np.float32(scale)))
    return cache.reshape(-1)


def host_call(rows, slots, n, heads, dim, page, blocks, k_scale, v_scale, arena):
    lay = Layout(LAYOUT, dim, page, heads)
    pool = Pool("case", lay, blocks * page, 0, arena.size)
    return StoreCall(variant="", backend=SHM, pool=pool, arena=arena, capacity=len(slots), valid=n, padding=0,
                     rows=rows, loc=slots, row_elems=2 * heads * dim, scales={"k": [k_scale], "v": [v_scale]})


def draw(rng, heads, dim, page, blocks, capacity, n):
    rows = (rng.standard_normal((capacity, 2 * heads * dim)) * rng.choice([1e-3, 1.0, 30.0, 600.0])).astype(np.float32)
    bits = (rows.view(np.uint32) >> 16).astype(np.uint16)  # bf16 by truncation: any bf16 will do
    slots = rng.permutation(blocks * page)[:capacity].astype(np.int64)
    slots[n:] = -1  # padded rows: never dereferenced
    return bits, slots


@pytest.mark.parametrize("heads,dim,page", [(1, 8, 4), (3, 16, 2), (2, 24, 16)])
def test_host_twin_stores_the_layout(heads, dim, page):
    rng = np.random.default_rng(heads * 100 + dim)
    blocks, capacity, n = 3, 7, 5
    rows, slots = draw(rng, heads, dim, page, blocks, capacity, n)
    k_scale, v_scale = 0.0625, 1.7  # a power of two and not
    before = rng.integers(0, 256, 2 * blocks * page * heads * dim, dtype=np.uint8)
    arena = before.copy()
    store_host(host_call(rows, slots, n, heads, dim, page, blocks, k_scale, v_scale, arena))
    want = reference_cache(rows, slots, n, heads, dim, page, blocks, k_scale, v_scale, before)
    wrong = np.flatnonzero(arena != want)
    assert wrong.size == 0, f"{wrong.size} bytes differ, first at {wrong[0]}: got {arena[wrong[0]]:#04x}, want {want[wrong[0]]:#04x}"


def test_scales_are_per_tensor():
    rng = np.random.default_rng(1)
    rows, slots = draw(rng, 1, 8, 4, 2, 2, 2)
    arena = np.zeros(2 * 2 * 4 * 8, np.uint8)
    call = host_call(rows, slots, 2, 1, 8, 4, 2, 0.5, 0.5, arena)
    call.scales = {"k": [0.5, 0.25], "v": [0.5]}
    with pytest.raises(ValueError, match="one static scale"):
        store_host(call)


def _gpu():
    """torch, Triton and a CUDA device, or the reason to skip."""
    try:
        import torch
        import triton  # noqa: F401
    except ImportError as e:
        pytest.skip(f"needs torch and Triton ({e}); run on the GPU machine: python3 -m pytest plugins/python/flashfp8store")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device; run on the GPU machine: python3 -m pytest plugins/python/flashfp8store")
    return torch


@pytest.mark.parametrize("heads,dim,page", [(8, 128, 16), (3, 96, 1), (2, 576, 64)])
def test_triton_kernel_matches_the_host_twin(heads, dim, page):
    torch = _gpu()
    import flashfp8store_kernels as k

    rng = np.random.default_rng(heads + dim)
    blocks, capacity, n = 40, 33, 29
    rows, slots = draw(rng, heads, dim, page, blocks, capacity, n)
    before = rng.integers(0, 256, 2 * blocks * page * heads * dim, dtype=np.uint8)
    want = before.copy()
    store_host(host_call(rows, slots, n, heads, dim, page, blocks, 0.02, 3.0, want))
    dev = torch.device("cuda")
    cache = torch.from_numpy(before.copy()).to(dev)
    half = blocks * page * heads * dim
    kern = FlashFP8Store()
    grid = kern._grid(k, capacity, heads)
    grid(cache, torch.from_numpy(rows.view(np.int16)).to(dev), torch.from_numpy(slots).to(dev),
         torch.tensor([n], dtype=torch.int32, device=dev), capacity, half, 0.02, 3.0, **kern._meta(k, heads, dim, page))
    got = cache.cpu().numpy()
    wrong = np.flatnonzero(got != want)
    assert wrong.size == 0, f"{wrong.size} bytes differ, first at {wrong[0]}: got {got[wrong[0]]:#04x}, want {want[wrong[0]]:#04x}"


def test_kvharness_check(request):
    """kvharness check of the plugin as its manifest serves it, every
    padding, on the GPU where there is one (the host twin elsewhere)."""
    try:
        kvharness = request.getfixturevalue("kvharness")
    except pytest.FixtureLookupError:
        pytest.skip("needs the kvharness pytest plugin: python3 -m pytest -p kvharness_sdk.pytest_plugin "
                    "flashfp8store --kvharness PATH (from plugins/python)")
    kvharness.check(MANIFEST, layouts=[LAYOUT], paddings="all", cases=300)
    kvharness.check(MANIFEST, layouts=[LAYOUT], paddings="all", cases=300, args=("--heads", "8", "--head-dim", "128"))
