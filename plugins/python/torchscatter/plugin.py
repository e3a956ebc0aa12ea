"""torchscatter: the incident's store, ``pool[loc] = rows``, in its native
language: PyTorch on the GPU, numpy on the CPU.

It writes all ``capacity`` rows of the captured batch and ignores the valid
count and every padding convention, exactly as SGLang's bf16 index-K path
did (``buf[loc] = k``). It is correct without padding and corrupts other
requests' slots with it; kvharness keeps it as the Python twin of
plugins/bf16scatter. Do not fix it.

One difference from the Go scatter is Python's own: indexing with -1 wraps
to the pool's last slot, so under the minus1 convention the padded rows
overwrite slot ``slots-1`` (a padding violation) instead of landing in the
leading guard (vLLM's "minus1-wraps" bug class).
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kvharness_sdk import CUDA, SHM, Geometry, Kernel, serve  # noqa: E402


class TorchScatter(Kernel):
    name = "torchscatter"
    version = "1.0.0"
    doc = "pool[loc] = rows in PyTorch (numpy on the CPU): the incident's pad-unaware bf16 scatter (a deliberate bug)"
    backends = (SHM, CUDA)

    def geometry(self, variant, head_dim, page_size):
        return [Geometry("bf16", 2 * head_dim, 2 * head_dim * page_size)]

    def store(self, call):
        if call.pool.layout.name != "bf16":
            raise ValueError(f"torchscatter stores the bf16 layout only, not {call.pool.layout.name}")
        pool = call.pool_rows()
        pool[call.loc] = call.rows  # all C rows: the bug


if __name__ == "__main__":
    serve(TorchScatter())
