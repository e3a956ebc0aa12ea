"""RPC errors with the gRPC status codes the Go SDK uses, so the harness
classifies a Python plugin's answers exactly as a Go plugin's: a malformed
request is INVALID_ARGUMENT, a call in the wrong state FAILED_PRECONDITION,
a kernel the plugin lacks UNIMPLEMENTED, a kernel that raised ABORTED, and
a device fault (the stream wait failed) DATA_LOSS, which the harness
reports as a crash and answers by restarting the plugin."""

from __future__ import annotations

import grpc


class RpcError(Exception):
    """An error the servicer turns into the RPC's status."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def prefixed(self, prefix: str) -> "RpcError":
        """The same error with ``prefix: `` before its message."""
        return RpcError(self.code, f"{prefix}: {self.message}")


def bad_request(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.INVALID_ARGUMENT, message)


def precondition(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.FAILED_PRECONDITION, message)


def unimplemented(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.UNIMPLEMENTED, message)


def aborted(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.ABORTED, message)


def device_fault(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.DATA_LOSS, message)
