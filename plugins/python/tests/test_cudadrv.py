"""The SDK's driver calls (cudadrv.py) against a stand-in for libcuda that
records each call and its arguments: struct layouts, the order of the
virtual-memory calls, the unwinding after a failure, and the primary
context around every call. The real driver runs in gpu_test.sh."""

import ctypes
import unittest

from helpers import ROOT  # noqa: F401

from kvharness_sdk import cudadrv
from kvharness_sdk.cudadrv import CudaError, Driver


class FakeLib:
    """libcuda's entry points as Python callables; fail names the call
    that returns an error (CUDA_ERROR_OUT_OF_MEMORY, 2)."""

    def __init__(self, fail=None, granularity=2 << 20):
        self.calls, self.fail, self.granularity = [], fail, granularity
        for name in cudadrv._SIGNATURES:
            setattr(self, name, self._fn(name))

    def _fn(self, name):
        def fn(*args):
            self.calls.append((name, args))
            if name == self.fail:
                return 2
            out = args[0]._obj if args and hasattr(args[0], "_obj") else None
            if name == "cuGetErrorName":
                args[1]._obj.value = b"CUDA_ERROR_OUT_OF_MEMORY"
            elif name == "cuMemGetAllocationGranularity":
                out.value = self.granularity
            elif name in ("cuMemAddressReserve", "cuIpcOpenMemHandle_v2"):
                out.value = 0x7F0000000000
            elif name == "cuMemImportFromShareableHandle":
                out.value = 42
            elif name == "cuDevicePrimaryCtxRetain":
                out.value = 0xC0
            return 0

        return fn

    def names(self):
        return [n for n, _ in self.calls if n not in ("cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2")]


class TestStructs(unittest.TestCase):
    def test_sizes_are_the_driver_headers(self):
        self.assertEqual(ctypes.sizeof(cudadrv._AllocationProp), 32)
        self.assertEqual(ctypes.sizeof(cudadrv._AccessDesc), 12)
        self.assertEqual(ctypes.sizeof(cudadrv._IpcHandle), 64)
        self.assertEqual(cudadrv._AllocationProp.win32.offset, 16)


class TestDriver(unittest.TestCase):
    def test_import_fd_maps_and_grants_access(self):
        lib = FakeLib()
        d = Driver(lib)
        s = d.import_fd(7, 4 << 20, 1)
        self.assertEqual(lib.names(), ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuMemGetAllocationGranularity",
                                       "cuMemImportFromShareableHandle", "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess"])
        calls = dict(lib.calls)
        prop = calls["cuMemGetAllocationGranularity"][1]._obj
        self.assertEqual((prop.type, prop.handle_types, prop.location.type, prop.location.id), (1, 1, 1, 1))
        fd_arg = calls["cuMemImportFromShareableHandle"][1]
        self.assertEqual((fd_arg.value, calls["cuMemImportFromShareableHandle"][2]), (7, 1))
        self.assertEqual(calls["cuMemAddressReserve"][1:3], (4 << 20, 2 << 20))
        self.assertEqual(calls["cuMemMap"], (0x7F0000000000, 4 << 20, 0, 42, 0))
        desc = calls["cuMemSetAccess"][2]._obj
        self.assertEqual((desc.location.id, desc.flags), (1, 3))
        self.assertEqual((s.ptr, s.size, s.handle), (0x7F0000000000, 4 << 20, 42))
        pushes = [n for n, _ in lib.calls if n == "cuCtxPushCurrent_v2"]
        pops = [n for n, _ in lib.calls if n == "cuCtxPopCurrent_v2"]
        self.assertEqual((len(pushes), len(pops)), (1, 1))
        lib.calls.clear()
        s.free()
        self.assertEqual(lib.names(), ["cuMemUnmap", "cuMemAddressFree", "cuMemRelease"])

    def test_a_failed_map_releases_what_it_took(self):
        lib = FakeLib(fail="cuMemMap")
        with self.assertRaisesRegex(CudaError, r"cuMemMap: CUDA_ERROR_OUT_OF_MEMORY \(2\)"):
            Driver(lib).import_fd(7, 2 << 20, 0)
        self.assertEqual(lib.names()[-4:], ["cuMemMap", "cuGetErrorName", "cuMemAddressFree", "cuMemRelease"])
        self.assertEqual([n for n, _ in lib.calls].count("cuCtxPopCurrent_v2"), 1, "the context was left pushed")

    def test_size_must_be_whole_granules(self):
        with self.assertRaisesRegex(CudaError, "not a multiple of the allocation granularity 2097152"):
            Driver(FakeLib()).import_fd(7, 3 << 20, 0)

    def test_ipc_open_passes_the_handle_by_value(self):
        lib = FakeLib()
        handle = bytes(range(64))
        ptr = Driver(lib).ipc_open(handle, 0)
        args = dict(lib.calls)["cuIpcOpenMemHandle_v2"]
        self.assertEqual((bytes(args[1]), args[2], ptr), (handle, 1, 0x7F0000000000))
        with self.assertRaisesRegex(CudaError, "IPC handle of 10 bytes"):
            Driver(lib).ipc_open(b"x" * 10, 0)

    def test_device_memory_is_a_cuda_array(self):
        m = cudadrv.DeviceMemory(0x1000, 256).__cuda_array_interface__
        self.assertEqual((m["shape"], m["typestr"], m["data"]), ((256,), "|u1", (0x1000, False)))


if __name__ == "__main__":
    unittest.main()
