"""The arena as a Python plugin sees it: the harness's memory regions,
mapped into this process, viewed as numpy arrays (host shared memory) or
torch tensors (CUDA device memory). Nothing is copied: a kernel writes the
harness's bytes directly, which is what lets the oracle diff every byte of
pool and guards after a call.

An attach names one region (the arena) or several (AttachRequest.regions,
each a memory space of its own). A host region is a shared-memory file,
registered with the GPU (cuMemHostRegister) when the harness asks for it
pinned and the attach has a GPU; a CUDA region is the harness's
allocation, imported from the file descriptor its socket hands out or
opened through its IPC handle (see cudadrv.py).

torch is imported only for CUDA attaches, so a CPU-only plugin runs on a
python with just grpcio, protobuf and numpy.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys

import numpy as np

from . import fdpass
from .cudadrv import CudaError, DeviceMemory, Driver
from .errors import precondition
from .kernel import CUDA, SHM


class HostRegion:
    """A host shared-memory region: the harness's file, mapped read-write
    and shared. The path is a Unix socket that hands this plugin the
    file's descriptor (the file itself is already unlinked); see
    fdpass.open_arena."""

    backend = SHM
    device = None

    def __init__(self, path: str, size: int, pinned: bool = False):
        try:
            fd = fdpass.open_arena(path)
        except OSError as e:  # worded as the Go SDK's
            raise precondition(f"open arena: open {path}: {_go_errno(e)}")
        try:
            st = os.fstat(fd)
            if st.st_size < size:
                raise precondition(f"arena file {path} is {st.st_size} bytes, harness says {size}")
            self._map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) if size else None
        except OSError as e:
            raise precondition(f"map arena: {_go_errno(e)}")
        finally:
            os.close(fd)
        self.size = size
        self.pinned = pinned
        self.mem = np.frombuffer(self._map, dtype=np.uint8) if size else np.zeros(0, np.uint8)
        self._registered = None  # (driver, device) once registered with a GPU
        self._tensor = None

    def register(self, driver: Driver, device: int) -> None:
        """Page-locks the region for device, so copies from and to it run
        asynchronously on the plugin's streams (Arena.pinned)."""
        if not self.size:
            return
        try:
            driver.host_register(self.mem.ctypes.data, self.size, device)
        except CudaError as e:
            raise precondition(f"pin the {self.size}-byte host region for device {device}: {e}; "
                               "raise the locked-memory limit (ulimit -l) or attach it unpinned")
        self._registered = (driver, device)

    def tensor(self):
        """The region as a torch uint8 CPU tensor (pinned when registered),
        for kernels on a CUDA attach."""
        if self._tensor is None:
            import torch

            self._tensor = torch.from_numpy(self.mem)
        return self._tensor

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

    def loc(self, off: int, capacity: int, bits: int = 64):
        return self.view(off, capacity, np.int32 if bits == 32 else np.int64)

    def int64s(self, off: int, n: int) -> np.ndarray:
        """n int64s at off, as the host reads them (validation)."""
        return self.view(off, n, np.int64)

    def close(self) -> None:
        """Unpins and unmaps the region. A kernel that kept a view alive past
        its call keeps the mapping until that view is collected; nothing
        else leaks."""
        errs = []
        if self._registered is not None:
            driver, device = self._registered
            try:
                driver.host_unregister(self.mem.ctypes.data, device)
            except CudaError as e:
                errs.append(f"unpin the host region: {e}")
            self._registered = None
        self.mem = self._tensor = None
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                pass
        if errs:
            raise RuntimeError("; ".join(errs))


def _go_errno(e: OSError) -> str:
    """An errno's text as Go prints it ("no such file or directory")."""
    text = e.strerror or str(e)
    return text[:1].lower() + text[1:]


def import_torch():
    """torch with a CUDA device, or an error that says how to get it."""
    try:
        import torch
    except ImportError as e:
        raise precondition(
            f"the cuda backend needs torch in the plugin's python ({e}); "
            "point KVHARNESS_PYTHON at a python that has it, or use --backend cpu"
        )
    if not torch.cuda.is_available():
        raise precondition("torch sees no CUDA device; run on the GPU machine or use --backend cpu")
    return torch


def _driver() -> Driver:
    try:
        return Driver.get()
    except CudaError as e:
        raise precondition(f"cuda arena: {e}")


class DeviceRegion:
    """A CUDA region: the harness's allocation, imported from a file
    descriptor (fd_socket; the virtual memory API, mapped 2 MiB aligned) or
    opened through its 64-byte IPC handle, and exposed as one torch uint8
    tensor over the device memory (zero-copy, through the CUDA array
    interface). Closing drops the tensor and unmaps, so the harness can
    free its allocation."""

    backend = CUDA

    def __init__(self, desc):
        torch = import_torch()
        device, size = desc.device, desc.size
        if device < 0 or device >= torch.cuda.device_count():
            raise precondition(f"cuda arena on device {device}: this process sees {torch.cuda.device_count()} devices")
        self.device, self.size = device, size
        self._shared = None
        self._ipc = 0
        with torch.cuda.device(device):
            torch.cuda.init()
            ptr = self._open(desc)
            try:
                self.mem = torch.as_tensor(DeviceMemory(ptr, size), device=f"cuda:{device}")
            except Exception as e:
                self.close()
                raise precondition(f"cuda arena on device {device}: view the mapping as a tensor: {e}")
        if self.mem.data_ptr() != ptr:  # a copy would make every store invisible
            self.close()
            raise precondition("torch copied the arena's mapping instead of viewing it; update torch")

    def _open(self, desc) -> int:
        d = _driver()
        if desc.fd_socket:
            try:
                fd = fdpass.receive(desc.fd_socket)
            except fdpass.FDPassError as e:
                raise precondition(f"cuda arena on device {self.device}: {e}")
            try:
                self._shared = d.import_fd(fd, desc.mapped_size, self.device)
            except CudaError as e:
                raise precondition(f"cuda arena on device {self.device}: import the harness's descriptor: {e}; "
                                   "set KVHARNESS_CUDA_SHARING=ipc to share arenas by IPC handle instead")
            finally:
                os.close(fd)
            return self._shared.ptr
        try:
            self._ipc = d.ipc_open(bytes(desc.ipc_handle), self.device)
        except CudaError as e:
            raise precondition(f"cuda arena on device {self.device}: open the IPC handle: {e}; "
                               "the harness must export it from another live process, on the same device")
        return self._ipc

    def tensor(self):
        return self.mem

    def view(self, off: int, count: int, dtype, shape=None, writable: bool = True):
        import torch

        item = getattr(dtype, "itemsize", None) or torch.empty(0, dtype=dtype).element_size()
        v = self.mem[off : off + count * item].view(dtype)
        return v.view(shape) if shape is not None else v

    def rows(self, off: int, capacity: int, head_dim: int):
        import torch

        return self.view(off, capacity * head_dim, torch.bfloat16, (capacity, head_dim))

    def loc(self, off: int, capacity: int, bits: int = 64):
        import torch

        return self.view(off, capacity, torch.int32 if bits == 32 else torch.int64)

    def int64s(self, off: int, n: int) -> np.ndarray:
        """n int64s at off, copied to the host (validation)."""
        import torch

        return self.view(off, n, torch.int64).cpu().numpy()

    def close(self) -> None:
        self.mem = None
        errs = []
        if self._shared is not None:
            try:
                self._shared.free()
            except CudaError as e:
                errs.append(f"unmap the arena: {e}")
            self._shared = None
        if self._ipc:
            try:
                _driver().ipc_close(self._ipc, self.device)
            except Exception as e:  # noqa: BLE001
                errs.append(f"close the IPC handle: {e}")
            self._ipc = 0
        if errs:
            raise RuntimeError("; ".join(errs))


class DeviceContext:
    """The per-attach CUDA state of a kernel running on the GPU: the stream
    every kernel of this attach runs on, a device int32 holding the valid
    count, and the device's name. The SDK waits for the stream before each
    answer."""

    def __init__(self, device: int):
        torch = import_torch()
        self.device = device
        with torch.cuda.device(device):
            self.stream = torch.cuda.Stream(device=device)
            self.valid_t = torch.zeros(1, dtype=torch.int32, device=f"cuda:{device}")
        self.name = torch.cuda.get_device_name(device)

    def context(self):
        """Makes this attach's device and stream current for the calling
        thread (gRPC runs calls on a thread pool; CUDA's current device and
        torch's current stream are per thread)."""
        import torch

        stack = contextlib.ExitStack()
        stack.enter_context(torch.cuda.device(self.device))
        stack.enter_context(torch.cuda.stream(self.stream))
        return stack

    def sync(self) -> None:
        """Waits for everything queued on the stream: a kernel fault shows
        here, and leaves the CUDA context unusable (restart the plugin)."""
        self.stream.synchronize()

    def close(self) -> None:
        try:
            if self.stream is not None:
                self.stream.synchronize()
        finally:
            self.stream = self.valid_t = None


def close_all(regions, ctx=None) -> None:
    """Waits for the attach's stream, then unmaps every region; errors are
    collected so that every region is closed."""
    errs = []
    if ctx is not None:
        try:
            ctx.close()
        except Exception as e:  # noqa: BLE001  the context may be broken; still unmap
            errs.append(f"wait for the stream: {e}")
    for r in regions:
        try:
            r.close()
        except Exception as e:  # noqa: BLE001
            errs.append(str(e))
    if ctx is not None or any(r.backend == CUDA for r in regions):
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.cuda.empty_cache()
    if errs:
        raise RuntimeError("; ".join(errs))
