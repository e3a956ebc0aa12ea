"""tritonstore: a padding-aware store written in Triton, for the bf16 and
fp8-paged layouts, on the GPU only.

It is told the valid count n (in device memory, as a serving engine's
kernel is) and never touches a padded row, whatever its loc holds: the
Python twin of plugins/fusedstore, and the fix for the incident. fp8 is
bit-exact with the harness's reference quantizer; see tritonstore_kernels.py.

Triton and torch are imported on the first CUDA attach, so the plugin
still describes itself on a machine without them.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_here, ".."))
sys.path.insert(0, _here)

from kvharness_sdk import CUDA, Geometry, Kernel, serve  # noqa: E402

LAYOUTS = ("bf16", "fp8-paged")


def _kernels():
    import tritonstore_kernels as kernels  # triton; see the module docstring

    return kernels


def _block(d: int) -> int:
    """tl.arange needs a power of two: the row, rounded up and masked."""
    return 1 << max(d - 1, 0).bit_length()


class TritonStore(Kernel):
    name = "tritonstore"
    version = "1.0.0"
    doc = "padding-aware Triton store for bf16 and fp8-paged (GPU only; fp8 bit-exact with the reference)"
    backends = (CUDA,)

    def geometry(self, variant, head_dim, page_size):
        d, p = head_dim, page_size
        return [Geometry("bf16", 2 * d, 2 * d * p), Geometry("fp8-paged", d + 4, (d + 4) * p)]

    def prepare(self, attach):
        """Compiles each pool's kernel by launching it with n = 0 (it
        stores nothing), so compilation is neither in the first timed
        launch nor counted against a store's deadline."""
        import torch

        k = _kernels()
        zero = torch.zeros(1, dtype=torch.int32, device=f"cuda:{attach.device}")
        done = set()
        for pool in attach.pools:
            lay = pool.layout
            if lay.name not in LAYOUTS:
                raise ValueError(f"tritonstore stores {' and '.join(LAYOUTS)}, not {lay.name}")
            if (lay.name, lay.head_dim, lay.page_size) in done:
                continue
            done.add((lay.name, lay.head_dim, lay.page_size))
            rows = torch.zeros((1, lay.head_dim), dtype=torch.int16, device=zero.device)
            loc = torch.zeros(1, dtype=torch.int64, device=zero.device)
            pool_bytes = attach.arena[pool.base : pool.base + pool.nbytes]
            fn, args, kw = self._launch(k, lay, pool.slots, pool_bytes, rows, loc, zero, 1)
            fn[(1,)](*args, **kw)

    def _launch(self, k, lay, slots, pool_bytes, rows16, loc, valid_t, capacity):
        import torch

        d = lay.head_dim
        kw = dict(D=d, BLOCK_D=_block(d), ROWS=k.ROWS)
        if lay.name == "bf16":
            pool = pool_bytes[: slots * 2 * d].view(torch.int16)
            return k.store_bf16, (pool, rows16, loc, valid_t, capacity), kw
        if lay.name == "fp8-paged":
            scales = pool_bytes[: pool_bytes.numel() // 4 * 4].view(torch.float32)
            kw["P"] = lay.page_size
            return k.store_fp8_paged, (pool_bytes, scales, rows16, loc, valid_t, capacity), kw
        raise ValueError(f"tritonstore stores {' and '.join(LAYOUTS)}, not {lay.name}")

    def launcher(self, call):
        import torch

        k = _kernels()
        fn, args, kw = self._launch(k, call.pool.layout, call.pool.slots, call.pool_bytes(),
                                    call.rows.view(torch.int16), call.loc, call.valid_t, call.capacity)
        launch = fn[((call.capacity + k.ROWS - 1) // k.ROWS,)]
        return lambda: launch(*args, **kw)

    def store(self, call):
        self.launcher(call)()


if __name__ == "__main__":
    serve(TritonStore())
