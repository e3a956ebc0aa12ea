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
_testdata = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [_testdata, os.path.join(_testdata, "..")]

from kvharness_sdk import SHM, Variant, serve  # noqa: E402

from hostcount import HostCount  # noqa: E402


class Faulty(HostCount):
    """Without a variant, hostcount's store (correct: shm runs no graph)."""

    name = "pyfaulty"
    doc = "misbehaves on purpose, one way per variant"
    backends = (SHM,)
    variants = (
        Variant("raise", "store raises RuntimeError"),
        Variant("exit", "store calls os._exit(3)"),
        Variant("segfault", "store dies of SIGSEGV"),
    )

    def store(self, call):
        if call.variant == "raise":
            raise RuntimeError(f"pyfaulty: deliberate failure storing {call.capacity} rows")
        if call.variant == "exit":
            os._exit(3)
        if call.variant == "segfault":
            signal.pthread_kill(threading.get_ident(), signal.SIGSEGV)  # this thread: no answer first
            time.sleep(5)
        super().store(call)


if __name__ == "__main__":
    serve(Faulty())
