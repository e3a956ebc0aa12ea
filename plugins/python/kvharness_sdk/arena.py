"""The arena as a Python plugin sees it: the harness's memory, mapped into
this process, viewed as numpy arrays (host shared memory) or torch tensors
(CUDA device memory). Nothing is copied: a kernel writes the harness's
bytes directly, which is what lets the oracle diff every byte of pool and
guards after a call.

torch and cupy are imported only for the cuda backend, so a CPU-only
plugin runs on a python with just grpcio, protobuf and numpy.
"""

from __future__ import annotations

import mmap
import os

import numpy as np

from .errors import precondition
from .kernel import CUDA, SHM


class HostArena:
    """A host shared-memory arena: the harness's file, mapped read-write and
    shared. The path is /proc/<harness pid>/fd/<n> (the file itself is
    already unlinked), which opens the same file for a process of the same
    user."""

    backend = SHM
    device = None

    def __init__(self, path: str, size: int):
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError as e:  # worded as the Go SDK's
            raise precondition(f"open arena: open {path}: {_go_errno(e)}")
        try:
            st = os.fstat(fd)
            if st.st_size < size:
                raise precondition(f"arena file {path} is {st.st_size} bytes, harness says {size}")
            self._map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as e:
            raise precondition(f"map arena: {_go_errno(e)}")
        finally:
            os.close(fd)
        self.size = size
        self.mem = np.frombuffer(self._map, dtype=np.uint8)

    def view(self, off: int, count: int, dtype, shape=None, writable: bool = False):
        """count elements of dtype at byte offset off, read-only unless asked.
        Staging inputs are handed out read-only: a store that writes its
        inputs is a protocol fault the harness would report anyway."""
        item = np.dtype(dtype).itemsize
        v = self.mem[off : off + count * item].view(dtype)
        if shape is not None:
            v = v.reshape(shape)
        if not writable:
            v.setflags(write=False)
        return v

    def rows(self, off: int, capacity: int, head_dim: int):
        return self.view(off, capacity * head_dim, np.uint16, (capacity, head_dim))

    def loc(self, off: int, capacity: int):
        return self.view(off, capacity, np.int64)

    def close(self) -> None:
        """Unmaps the arena. A kernel that kept a view alive past its call
        keeps the mapping until that view is collected; nothing else leaks."""
        self.mem = None
        try:
            self._map.close()
        except BufferError:
            pass


def _go_errno(e: OSError) -> str:
    """An errno's text as Go prints it ("no such file or directory")."""
    text = e.strerror or str(e)
    return text[:1].lower() + text[1:]


def import_cuda():
    """torch and cupy, or an error that says how to get them."""
    try:
        import cupy
        import torch
    except ImportError as e:
        raise precondition(
            f"the cuda backend needs torch and cupy in the plugin's python ({e}); "
            "point KVHARNESS_PYTHON at a python that has them, or use --backend cpu"
        )
    if not torch.cuda.is_available():
        raise precondition("torch sees no CUDA device; run on the GPU machine or use --backend cpu")
    return torch, cupy


class DeviceArena:
    """A CUDA arena: the harness's allocation opened through its 64-byte IPC
    handle (cudaIpcOpenMemHandle, via cupy), exposed as one torch uint8
    tensor over the device memory (zero-copy, through the CUDA array
    interface). Every kernel of this attach runs on ``stream``; the SDK
    waits for it before each answer. Closing waits, drops every tensor and
    closes the handle, so the harness can free its allocation."""

    backend = CUDA

    def __init__(self, handle: bytes, size: int, device: int):
        torch, cupy = import_cuda()
        if device < 0 or device >= torch.cuda.device_count():
            raise precondition(f"cuda arena on device {device}: this process sees {torch.cuda.device_count()} devices")
        self.device = device
        self.size = size
        self._ptr = 0
        try:
            with cupy.cuda.Device(device):
                self._ptr = cupy.cuda.runtime.ipcOpenMemHandle(bytes(handle))
        except Exception as e:
            raise precondition(
                f"cuda arena on device {device}: open the IPC handle: {e}; "
                "the harness must export it from another live process, on the same device"
            )
        mem = cupy.cuda.UnownedMemory(self._ptr, size, None, device)
        arr = cupy.ndarray((size,), dtype=cupy.uint8, memptr=cupy.cuda.MemoryPointer(mem, 0))
        with torch.cuda.device(device):
            self.mem = torch.as_tensor(arr, device=f"cuda:{device}")
            if self.mem.data_ptr() != self._ptr:  # a copy would make every store invisible
                self.close()
                raise precondition("torch copied the IPC mapping instead of viewing it; update torch/cupy")
            self.stream = torch.cuda.Stream(device=device)
            self.valid_t = torch.zeros(1, dtype=torch.int32, device=f"cuda:{device}")
        self.name = torch.cuda.get_device_name(device)

    def context(self):
        """Makes this arena's device and stream current for the calling
        thread (gRPC runs calls on a thread pool; CUDA's current device and
        torch's current stream are per thread)."""
        import contextlib

        import torch

        stack = contextlib.ExitStack()
        stack.enter_context(torch.cuda.device(self.device))
        stack.enter_context(torch.cuda.stream(self.stream))
        return stack

    def view(self, off: int, count: int, dtype, shape=None):
        import torch

        item = torch.empty(0, dtype=dtype).element_size()
        v = self.mem[off : off + count * item].view(dtype)
        return v.view(shape) if shape is not None else v

    def rows(self, off: int, capacity: int, head_dim: int):
        import torch

        return self.view(off, capacity * head_dim, torch.bfloat16, (capacity, head_dim))

    def loc(self, off: int, capacity: int):
        import torch

        return self.view(off, capacity, torch.int64)

    def sync(self) -> None:
        """Waits for everything queued on the stream: a kernel fault shows
        here, and leaves the CUDA context unusable (restart the plugin)."""
        self.stream.synchronize()

    def close(self) -> None:
        import cupy
        import torch

        errs = []
        try:
            if getattr(self, "stream", None) is not None:
                self.stream.synchronize()
        except Exception as e:  # the context may be broken; still close the handle
            errs.append(f"wait for the stream: {e}")
        self.mem = self.valid_t = self.stream = None
        if self._ptr:
            try:
                with cupy.cuda.Device(self.device):
                    cupy.cuda.runtime.ipcCloseMemHandle(self._ptr)
            except Exception as e:
                errs.append(f"close the IPC handle: {e}")
            self._ptr = 0
        torch.cuda.empty_cache()
        if errs:
            raise RuntimeError("; ".join(errs))
