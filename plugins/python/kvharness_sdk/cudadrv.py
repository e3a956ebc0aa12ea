"""The few CUDA driver calls the SDK makes itself, through ctypes on
libcuda.so.1: opening the harness's arena (an IPC handle, or a file
descriptor of virtual-memory-API memory), registering pinned host regions.
Everything else (streams, events, graphs, kernels) goes through torch.

Why not torch or cupy for this: torch has no public call that opens a
foreign IPC handle or imports a shareable handle, and cupy would be one
more package on the GPU machine for four driver calls. The calls run in
the device's primary context (retained once and pushed around each call),
the context torch's runtime uses, so a pointer opened here is valid for
torch and Triton kernels on the same device. The symbol names and struct
layouts are the Go SDK's (harness/cuda/driver.go, vmm.go).
"""

from __future__ import annotations

import contextlib
import ctypes
import threading

CUresult = ctypes.c_int
CUdeviceptr = ctypes.c_uint64

# Virtual memory API constants (cuda.h), as harness/cuda/vmm.go.
MEM_ALLOCATION_TYPE_PINNED = 1
MEM_HANDLE_TYPE_POSIX_FD = 1
MEM_LOCATION_TYPE_DEVICE = 1
MEM_ACCESS_READ_WRITE = 3
MEM_GRANULARITY_RECOMMENDED = 1
IPC_LAZY_ENABLE_PEER_ACCESS = 1
HOST_REGISTER_PORTABLE = 1


class CudaError(Exception):
    """A driver call failed; the message names the call and the error."""


class _Location(ctypes.Structure):  # CUmemLocation
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compression", ctypes.c_ubyte), ("rdma", ctypes.c_ubyte), ("usage", ctypes.c_ushort),
                ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):  # CUmemAllocationProp, 32 bytes
    _fields_ = [("type", ctypes.c_int), ("handle_types", ctypes.c_int), ("location", _Location),
                ("win32", ctypes.c_void_p), ("flags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class _IpcHandle(ctypes.Structure):  # CUipcMemHandle, passed by value
    _fields_ = [("reserved", ctypes.c_char * 64)]


_SIGNATURES = {
    "cuInit": [ctypes.c_uint],
    "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
    "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int],
    "cuCtxPushCurrent_v2": [ctypes.c_void_p],
    "cuCtxPopCurrent_v2": [ctypes.POINTER(ctypes.c_void_p)],
    "cuGetErrorName": [CUresult, ctypes.POINTER(ctypes.c_char_p)],
    "cuIpcOpenMemHandle_v2": [ctypes.POINTER(CUdeviceptr), _IpcHandle, ctypes.c_uint],
    "cuIpcCloseMemHandle": [CUdeviceptr],
    "cuMemGetAllocationGranularity": [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(_AllocationProp), ctypes.c_int],
    "cuMemImportFromShareableHandle": [ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p, ctypes.c_int],
    "cuMemAddressReserve": [ctypes.POINTER(CUdeviceptr), ctypes.c_size_t, ctypes.c_size_t, CUdeviceptr,
                            ctypes.c_ulonglong],
    "cuMemAddressFree": [CUdeviceptr, ctypes.c_size_t],
    "cuMemMap": [CUdeviceptr, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_ulonglong],
    "cuMemUnmap": [CUdeviceptr, ctypes.c_size_t],
    "cuMemSetAccess": [CUdeviceptr, ctypes.c_size_t, ctypes.POINTER(_AccessDesc), ctypes.c_size_t],
    "cuMemRelease": [ctypes.c_uint64],
    "cuMemHostRegister_v2": [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint],
    "cuMemHostUnregister": [ctypes.c_void_p],
}


class Driver:
    """libcuda, loaded and initialised once per process (see get)."""

    _lock = threading.Lock()
    _instance = None

    def __init__(self, lib):
        self.lib = lib
        self._fns = {}
        for name, args in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, CUresult
            self._fns[name] = fn
        self._contexts = {}
        self.check("cuInit", self._fns["cuInit"](0))

    @classmethod
    def get(cls) -> "Driver":
        """The process's driver; raises CudaError when libcuda is missing."""
        with cls._lock:
            if cls._instance is None:
                try:
                    lib = ctypes.CDLL("libcuda.so.1")
                except OSError as e:
                    raise CudaError(f"load libcuda.so.1: {e} (no NVIDIA driver on this machine)")
                try:
                    cls._instance = cls(lib)
                except AttributeError as e:
                    raise CudaError(f"libcuda.so.1 lacks a driver call the SDK needs: {e}; update the NVIDIA driver")
            return cls._instance

    def check(self, name: str, rc: int) -> None:
        if rc == 0:
            return
        text = ctypes.c_char_p()
        self._fns["cuGetErrorName"](rc, ctypes.byref(text))
        raise CudaError(f"{name}: {text.value.decode() if text.value else 'CUDA error'} ({rc})")

    def call(self, name: str, *args) -> None:
        self.check(name, self._fns[name](*args))

    @contextlib.contextmanager
    def on(self, ordinal: int):
        """Makes device ordinal's primary context current around a call."""
        ctx = self._contexts.get(ordinal)
        if ctx is None:
            dev = ctypes.c_int()
            self.call("cuDeviceGet", ctypes.byref(dev), ordinal)
            ctx = ctypes.c_void_p()
            self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev.value)
            self._contexts[ordinal] = ctx  # kept for the process, as torch keeps it
        self.call("cuCtxPushCurrent_v2", ctx)
        try:
            yield
        finally:
            self.call("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))

    # --- IPC handles ------------------------------------------------------

    def ipc_open(self, handle: bytes, ordinal: int) -> int:
        if len(handle) != 64:
            raise CudaError(f"IPC handle of {len(handle)} bytes; want 64")
        h = _IpcHandle.from_buffer_copy(bytes(handle))
        p = CUdeviceptr()
        with self.on(ordinal):
            self.call("cuIpcOpenMemHandle_v2", ctypes.byref(p), h, IPC_LAZY_ENABLE_PEER_ACCESS)
        return p.value

    def ipc_close(self, ptr: int, ordinal: int) -> None:
        with self.on(ordinal):
            self.call("cuIpcCloseMemHandle", ptr)

    # --- shareable (file descriptor) memory -------------------------------

    def _prop(self, ordinal: int) -> _AllocationProp:
        prop = _AllocationProp()
        prop.type, prop.handle_types = MEM_ALLOCATION_TYPE_PINNED, MEM_HANDLE_TYPE_POSIX_FD
        prop.location = _Location(MEM_LOCATION_TYPE_DEVICE, ordinal)
        return prop

    def import_fd(self, fd: int, size: int, ordinal: int) -> "Shared":
        """Maps memory another process exported as a POSIX file descriptor
        (cuMemExportToShareableHandle): size is the exporter's mapped size.
        The mapping is aligned to the allocation granularity, so the GPU
        translates it with large pages. The caller may close fd afterwards."""
        if size <= 0:
            raise CudaError(f"import shared device memory of {size} bytes: size must be positive")
        with self.on(ordinal):
            prop = self._prop(ordinal)
            g = ctypes.c_size_t()
            self.call("cuMemGetAllocationGranularity", ctypes.byref(g), ctypes.byref(prop), MEM_GRANULARITY_RECOMMENDED)
            if size % g.value:
                raise CudaError(f"mapped_size {size} is not a multiple of the allocation granularity {g.value}")
            handle = ctypes.c_uint64()
            self.call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd),
                      MEM_HANDLE_TYPE_POSIX_FD)
            try:
                ptr = self._map(handle.value, size, g.value, ordinal)
            except CudaError:
                self._fns["cuMemRelease"](handle.value)
                raise
        return Shared(self, ordinal, ptr, size, handle.value)

    def _map(self, handle: int, size: int, align: int, ordinal: int) -> int:
        p = CUdeviceptr()
        self.call("cuMemAddressReserve", ctypes.byref(p), size, align, 0, 0)
        try:
            self.call("cuMemMap", p.value, size, 0, handle, 0)
        except CudaError:
            self._fns["cuMemAddressFree"](p.value, size)
            raise
        desc = _AccessDesc(_Location(MEM_LOCATION_TYPE_DEVICE, ordinal), MEM_ACCESS_READ_WRITE)
        try:
            self.call("cuMemSetAccess", p.value, size, ctypes.byref(desc), 1)
        except CudaError:
            self._fns["cuMemUnmap"](p.value, size)
            self._fns["cuMemAddressFree"](p.value, size)
            raise
        return p.value

    # --- pinned host memory -------------------------------------------------

    def host_register(self, ptr: int, size: int, ordinal: int) -> None:
        with self.on(ordinal):
            self.call("cuMemHostRegister_v2", ctypes.c_void_p(ptr), size, HOST_REGISTER_PORTABLE)

    def host_unregister(self, ptr: int, ordinal: int) -> None:
        with self.on(ordinal):
            self.call("cuMemHostUnregister", ctypes.c_void_p(ptr))


class Shared:
    """Imported shareable device memory, mapped in this process."""

    def __init__(self, driver: Driver, ordinal: int, ptr: int, size: int, handle: int):
        self.driver, self.ordinal, self.ptr, self.size, self.handle = driver, ordinal, ptr, size, handle

    def free(self) -> None:
        """Unmaps the memory and releases this process's handle; the memory
        goes when every process has released it."""
        if not self.ptr:
            return
        d, errs = self.driver, []
        with d.on(self.ordinal):
            for name, args in (("cuMemUnmap", (self.ptr, self.size)), ("cuMemAddressFree", (self.ptr, self.size)),
                               ("cuMemRelease", (self.handle,))):
                try:
                    d.call(name, *args)
                except CudaError as e:
                    errs.append(str(e))
        self.ptr = 0
        if errs:
            raise CudaError("; ".join(errs))


class DeviceMemory:
    """A raw device range as the CUDA array interface describes it, so that
    torch.as_tensor views it without a copy (torch keeps this object alive
    as long as any tensor over it)."""

    def __init__(self, ptr: int, size: int):
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1", "data": (ptr, False), "version": 2}
