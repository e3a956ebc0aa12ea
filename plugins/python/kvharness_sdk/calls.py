"""What every kind's calls share: the attached pool a call names, a
kernel run whose exception is the call's answer, a stream wait whose
failure is a device fault, and a batch's call labels (the Go SDK's
sdk.Server.Pool, sdk.KernelFailed, DeviceArena.Settle and the store's
callError).
"""

from __future__ import annotations

import sys
import traceback

from .errors import RpcError, aborted, bad_request, device_fault, precondition
from .kernel import Pool


def attached_pool(att, index: int, call: str) -> Pool:
    """The pool a call names by index, checked against the attachment: a
    call before attach is out of order, an index past the pools a bad
    request."""
    if att is None:
        raise precondition(f"{call} before attach")
    if index >= len(att.pools):
        raise bad_request(f"pool {index}: only {len(att.pools)} attached")
    return att.pools[index]


def label(n: int, i: int) -> str:
    return "" if n == 1 else f" on call {i}"


def labelled(n: int, i: int, fn, *args):
    """fn(*args), prefixing a batch's errors with the failing call's index
    (a single Store's error is kept as it is), as the Go SDK's callError."""
    try:
        return fn(*args)
    except RpcError as e:
        raise e if n == 1 else e.prefixed(f"call {i}")


def run_kernel(fn, call, what: str = "store", where: str = ""):
    """Runs a kernel and returns what it returns; its exception is the
    call's ABORTED answer (with the traceback on stderr), never the
    plugin's death."""
    try:
        return fn(call)
    except RpcError:
        raise
    except Exception as e:  # noqa: BLE001  a kernel failure is the call's answer
        traceback.print_exc(file=sys.stderr)
        raise aborted(f"{what} kernel failed{where}: {type(e).__name__}: {e}")


def sync_or_fault(att, kind: str, err=None) -> None:
    """Waits for the attach's stream; a failure is a device fault (DATA_LOSS:
    the harness restarts the plugin), naming the call's own error too."""
    try:
        att.ctx.sync()
    except Exception as e:  # noqa: BLE001
        traceback.print_exc(file=sys.stderr)
        msg = f"{kind} kernel faulted on the device (the CUDA context is unusable until the plugin restarts): {e}"
        if err is not None:
            msg += f" (after: {err.message})"
        raise device_fault(msg)
