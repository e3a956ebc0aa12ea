"""A stand-in for the parts of torch and libcuda the SDK's CUDA path uses,
over host memory, so that every line of that path (attach by IPC handle
or file descriptor, eager and graph stores, reads, transfers, benches,
detach) runs on a machine without a GPU.

Device memory is host memory: the fake driver "opens" an IPC handle or a
file descriptor by mapping the test's shared-memory file, and
torch.as_tensor finds the mapping by the pointer the CUDA array interface
carries. Work on the stream runs at once, except during a graph capture,
when tensor writes are recorded and run at each replay (as CUDA does), so
a graph replays the static inputs' values at replay time.

Not a model of CUDA's timing or of torch's full semantics: what is faked
is what the SDK and the example plugins' torch code call.
"""

import contextlib
import mmap
import os
import sys
import types

import numpy as np

# --- the stream: run now, or record during a capture --------------------

_capture = None


def enqueue(fn):
    if _capture is not None:
        _capture.append(fn)
    else:
        fn()


# --- dtypes and tensors ----------------------------------------------------

class DType:
    def __init__(self, name, np_dtype):
        self.name, self.np, self.itemsize = name, np.dtype(np_dtype), np.dtype(np_dtype).itemsize

    def __repr__(self):
        return f"torch.{self.name}"


uint8 = DType("uint8", np.uint8)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
float32 = DType("float32", np.float32)
bfloat16 = DType("bfloat16", np.uint16)  # bit patterns: views keep every bit
float8_e4m3fn = DType("float8_e4m3fn", np.uint8)
bool_ = DType("bool", np.bool_)
_BY_NP = {d.np: d for d in (uint8, int8, int16, int32, int64, float32)}


def _decode(t):
    """A tensor's values as numpy floats (bf16 and fp8 decoded)."""
    if t.dtype is bfloat16:
        return (t.a.astype(np.uint32) << 16).view(np.float32)
    if t.dtype is float8_e4m3fn:
        c = np.arange(256)
        e, m = (c >> 3) & 0xF, c & 7
        v = np.where(e == 0, m / 8 * 2.0**-6, (1 + m / 8) * 2.0 ** (e - 7.0))
        v = np.where((e == 0xF) & (m == 7), np.nan, v)
        return np.where(c & 0x80, -v, v).astype(np.float32)[t.a]
    return t.a


def _val(x):
    return x.a if isinstance(x, Tensor) else x


class Tensor:
    def __init__(self, a, dtype=None):
        self.a = a
        self.dtype = dtype or _BY_NP.get(a.dtype, None) or DType(str(a.dtype), a.dtype)
        self.device = "cuda:0"

    # shape and views
    @property
    def shape(self):
        return self.a.shape

    def numel(self):
        return self.a.size

    def element_size(self):
        return self.dtype.itemsize

    def data_ptr(self):
        return self.a.__array_interface__["data"][0]

    def view(self, *args):
        if len(args) == 1 and isinstance(args[0], DType):
            return Tensor(self.a.view(args[0].np), args[0])
        shape = args[0] if len(args) == 1 and isinstance(args[0], tuple) else args
        return Tensor(self.a.reshape(shape), self.dtype)

    def __getitem__(self, key):
        key = tuple(_val(k) for k in key) if isinstance(key, tuple) else _val(key)
        return Tensor(self.a[key], self.dtype)

    def __setitem__(self, key, value):
        def write():
            k = tuple(_val(x) for x in key) if isinstance(key, tuple) else _val(key)
            self.a[k] = _val(value)

        enqueue(write)

    def __len__(self):
        return len(self.a)

    # writes, in stream order
    def copy_(self, src):
        enqueue(lambda: self.a.__setitem__(..., _val(src).astype(self.a.dtype)))
        return self

    def fill_(self, v):
        enqueue(lambda: self.a.__setitem__(..., v))
        return self

    # conversions
    def to(self, dtype):
        return Tensor(self.a.astype(dtype.np), dtype)

    def float(self):
        return Tensor(_decode(self).astype(np.float32), float32)

    def clone(self):
        return Tensor(self.a.copy(), self.dtype)

    def cpu(self):
        return self

    def numpy(self):
        return self.a

    # arithmetic (the examples' torch code)
    def _op(self, other, fn):
        return Tensor(np.asarray(fn(_decode(self), _val(other) if not isinstance(other, Tensor) else _decode(other))))

    def __matmul__(self, o):
        return self._op(o, lambda a, b: (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float32))

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b)

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b)

    def __rmul__(self, o):
        return self._op(o, lambda a, b: b * a)

    def __floordiv__(self, o):
        return self._op(o, lambda a, b: a // b)

    def __mod__(self, o):
        return self._op(o, lambda a, b: a % b)

    def __neg__(self):
        return Tensor(-_decode(self))


def as_tensor(obj, device=None):
    ptr, _ = obj.__cuda_array_interface__["data"]
    (size,) = obj.__cuda_array_interface__["shape"]
    base, mem = Driver.memory[ptr]
    return Tensor(mem[ptr - base : ptr - base + size])


def from_numpy(a):
    return Tensor(a)


def empty(n, dtype=uint8, device=None):
    return Tensor(np.zeros(n, dtype.np), dtype)


zeros = empty


def empty_like(t, device=None):
    return Tensor(np.zeros_like(t.a), t.dtype)


def arange(n, device=None):
    return Tensor(np.arange(n, dtype=np.int64))


def argsort(t, stable=True):
    return Tensor(np.argsort(_decode(t), kind="stable").astype(np.int64))


def isnan(t):
    return Tensor(np.isnan(_decode(t)), bool_)


def nan_to_num(t, nan=0.0):
    return Tensor(np.nan_to_num(_decode(t), nan=nan))


# --- torch.cuda ----------------------------------------------------------------

class Stream:
    def __init__(self, device=None):
        self.cuda_stream = 1

    def synchronize(self):
        pass


class Event:
    def __init__(self, enable_timing=False):
        self.t = 0

    def record(self):
        enqueue(lambda: None)

    def query(self):
        return False

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 0.002  # ms


class CUDAGraph:
    captures = 0

    def capture_begin(self, pool=None, capture_error_mode="global"):
        global _capture
        assert _capture is None and capture_error_mode == "relaxed"
        CUDAGraph.captures += 1
        _capture, self.work = [], None

    def capture_end(self):
        global _capture
        self.work, _capture = _capture, None

    def replay(self):
        for fn in self.work:
            fn()


cuda = types.SimpleNamespace(
    is_available=lambda: True, device_count=lambda: 1, init=lambda: None, get_device_name=lambda d: "Fake GPU",
    device=lambda d: contextlib.nullcontext(), stream=lambda s: contextlib.nullcontext(), Stream=Stream, Event=Event,
    CUDAGraph=CUDAGraph, graph_pool_handle=lambda: ("pool",), empty_cache=lambda: None, _sleep=lambda cycles: enqueue(lambda: None),
)


# --- the driver ------------------------------------------------------------------

class Driver:
    """cudadrv.Driver over the test's files: an IPC handle names a file path
    (padded to 64 bytes), a file descriptor maps its file."""

    memory = {}  # ptr → (base ptr, numpy view of the mapping)
    opened = []

    def __init__(self):
        self.closed = []

    def _map(self, fd, size):
        m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        a = np.frombuffer(m, np.uint8)
        ptr = a.__array_interface__["data"][0]
        Driver.memory[ptr] = (ptr, a)
        return ptr

    def ipc_open(self, handle, ordinal):
        path = bytes(handle).rstrip(b"\0").decode()
        fd = os.open(path, os.O_RDWR)
        try:
            ptr = self._map(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        Driver.opened.append(("ipc", path))
        return ptr

    def ipc_close(self, ptr, ordinal):
        self.closed.append(ptr)

    def import_fd(self, fd, size, ordinal):
        ptr = self._map(fd, size)
        Driver.opened.append(("fd", size))
        driver = self

        class Shared:
            def __init__(self):
                self.ptr = ptr

            def free(self):
                driver.closed.append(ptr)
                self.ptr = 0

        return Shared()

    def host_register(self, ptr, size, ordinal):
        Driver.opened.append(("pinned", size))

    def host_unregister(self, ptr, ordinal):
        pass


def install():
    """Puts the stand-ins in place of torch and the SDK's driver."""
    mod = types.ModuleType("torch")
    for name, value in globals().items():
        if not name.startswith("__"):
            setattr(mod, name, value)
    mod.bool = bool_
    sys.modules["torch"] = mod
    from kvharness_sdk import arena

    drv = Driver()
    arena._driver = lambda: drv
    return drv
