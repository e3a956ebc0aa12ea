"""The bf16 store the Python test plugins share: it sizes its work from
the host's valid count (call.valid) instead of reading it on the device
(call.valid_t). Run eagerly that is a correct store; a CUDA graph
captured for one count stores that count at every replay (graphonly).
Plugins import it with this folder on sys.path.
"""

from kvharness_sdk import CUDA, SHM, Geometry, Kernel


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
