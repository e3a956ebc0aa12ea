"""A Python plugin that misbehaves on purpose, one way per variant, so the
harness's fault handling is tested against a real Python process (as
plugins/faulty does for Go). Without a variant it is a correct bf16 store.

- raise:    store raises RuntimeError (the SDK answers ABORTED; the plugin lives on)
- exit:     store calls os._exit(3) (a crash)
- segfault: store kills the process with SIGSEGV (a crash by signal)
"""

import os
import signal
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from kvharness_sdk import SHM, Geometry, Kernel, Variant, serve  # noqa: E402


class Faulty(Kernel):
    name = "pyfaulty"
    version = "1.0.0"
    doc = "misbehaves on purpose, one way per variant"
    backends = (SHM,)
    variants = (
        Variant("raise", "store raises RuntimeError"),
        Variant("exit", "store calls os._exit(3)"),
        Variant("segfault", "store dies of SIGSEGV"),
    )

    def geometry(self, variant, head_dim, page_size):
        return [Geometry("bf16", 2 * head_dim, 2 * head_dim * page_size)]

    def store(self, call):
        if call.variant == "raise":
            raise RuntimeError(f"pyfaulty: deliberate failure storing {call.capacity} rows")
        if call.variant == "exit":
            os._exit(3)
        if call.variant == "segfault":
            signal.pthread_kill(threading.get_ident(), signal.SIGSEGV)  # this thread: no answer first
            time.sleep(5)
        n = call.valid
        call.pool_rows()[call.loc[:n]] = call.rows[:n]


if __name__ == "__main__":
    serve(Faulty())
