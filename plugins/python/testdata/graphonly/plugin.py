"""A bf16 store that is correct when run eagerly and wrong when replayed
from a CUDA graph: it sizes its work from the host's valid count
(call.valid) instead of reading it on the device (call.valid_t), so a
graph captured for one count stores that count at every replay. It proves
that --graph really replays: kvharness check passes it eagerly and fails
it with --graph on any padding convention but none.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from kvharness_sdk import CUDA, SHM, Geometry, Kernel, serve  # noqa: E402


class HostCount(Kernel):
    name = "pygraphonly"
    version = "1.0.0"
    doc = "stores call.valid rows, a count read on the host: right eagerly, wrong under graph replay"
    backends = (SHM, CUDA)

    def geometry(self, variant, head_dim, page_size):
        return [Geometry("bf16", 2 * head_dim, 2 * head_dim * page_size)]

    def store(self, call):
        n = call.valid  # the bug under --graph: baked into the captured launch
        call.pool_rows()[call.loc[:n]] = call.rows[:n]


if __name__ == "__main__":
    serve(HostCount())
