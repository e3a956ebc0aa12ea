"""A bf16 store that is correct when run eagerly and wrong when replayed
from a CUDA graph: it sizes its work from the host's valid count
(call.valid) instead of reading it on the device (call.valid_t), so a
graph captured for one count stores that count at every replay. It proves
that --graph really replays: kvharness check passes it eagerly and fails
it with --graph on any padding convention but none. The store is
testdata/hostcount.py's.
"""

import os
import sys

sys.dont_write_bytecode = True
_testdata = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [_testdata, os.path.join(_testdata, "..")]

from kvharness_sdk import serve  # noqa: E402

from hostcount import HostCount  # noqa: E402

if __name__ == "__main__":
    serve(HostCount())
