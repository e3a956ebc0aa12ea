"""The plugin's side of harness/protocol/fdpass: receive one file
descriptor from the harness's Unix socket (SCM_RIGHTS). A CUDA arena made
with the virtual memory API is shared as a POSIX file descriptor, which
cannot travel in a gRPC message; the harness serves one socket per arena
and each connection gets a fresh descriptor for the same memory.

The wire format is fdpass.Server.send's: one byte 0 with the descriptor as
ancillary data, or one byte 1 followed by the harness's error text.
"""

from __future__ import annotations

import array
import os
import socket
import stat


class FDPassError(Exception):
    """The descriptor could not be had; the message says why and what to do."""


def receive(path: str, timeout: float = 10.0) -> int:
    """Connects to the socket at path and returns the descriptor it hands
    out; the caller closes it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        try:
            s.connect(path)
        except OSError as e:
            raise FDPassError(f"connect to the harness's fd socket: {e} (the harness must still hold the arena)")
        try:
            msg, anc, flags, _ = s.recvmsg(4096, socket.CMSG_SPACE(array.array("i").itemsize))
        except OSError as e:
            raise FDPassError(f"receive the arena's descriptor: {e}")
    finally:
        s.close()
    fds = _rights(anc)
    if flags & socket.MSG_CTRUNC:
        _close(fds)
        raise FDPassError("receive the arena's descriptor: the kernel dropped it "
                          "(this process is out of file descriptors: raise ulimit -n)")
    if msg[:1] == b"\x01":
        _close(fds)
        raise FDPassError(f"the harness could not export the arena: {msg[1:].decode(errors='replace')}")
    if msg[:1] == b"\x02":
        _close(fds)
        raise FDPassError(f"the harness refused the arena to this process: {msg[1:].decode(errors='replace')}")
    if len(msg) != 1 or msg[0] != 0 or len(fds) != 1:
        _close(fds)
        raise FDPassError(f"the fd socket sent {len(msg)} bytes and {len(fds)} descriptors; want 1 and 1")
    return fds[0]


def open_arena(path: str) -> int:
    """Opens a shared-memory arena read-write and returns its descriptor.
    The harness names a Unix socket that hands this process, alone, the
    arena's descriptor (the harness is not dumpable: /proc/<pid>/fd of it
    is closed to plugins); a path that is no socket is the arena file."""
    try:
        is_socket = stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        is_socket = False
    if not is_socket:
        return os.open(path, os.O_RDWR)
    try:
        return receive(path)
    except FDPassError as e:
        raise OSError(0, str(e)) from None


def _rights(anc) -> list:
    fds = []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            a = array.array("i")
            a.frombytes(data[: len(data) - len(data) % a.itemsize])
            fds.extend(a)
    return fds


def _close(fds) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
