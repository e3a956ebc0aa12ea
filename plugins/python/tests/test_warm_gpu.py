"""warm_gpu makes the CUDA context of the GPU the harness names
(KVHARNESS_WARM_GPU) in the background, for kernels that run on CUDA, and
does nothing otherwise."""

import os
import sys
import types
import unittest
from unittest import mock

from kvharness_sdk import CUDA, SHM, Geometry, Kernel
from kvharness_sdk import protocol as pb
from kvharness_sdk.serve import warm_gpu


class OnCuda(Kernel):
    name, version = "oncuda", "1.0.0"
    backends = (SHM, CUDA)

    def geometry(self, variant, head_dim, page_size):
        return [Geometry("bf16", 2 * head_dim, 2 * head_dim * page_size)]

    def store(self, call):
        pass


class OnHost(OnCuda):
    name = "onhost"
    backends = (SHM,)


def recording_torch(calls):
    """A torch that records which device a context was made on."""
    cuda = types.SimpleNamespace()
    state = {"device": None}

    class device:
        def __init__(self, d):
            self.d = d

        def __enter__(self):
            state["device"] = self.d

        def __exit__(self, *exc):
            state["device"] = None

    cuda.device = device
    cuda.init = lambda: calls.append(("init", state["device"]))
    return types.SimpleNamespace(cuda=cuda, empty=lambda n, device: calls.append(("empty", device)))


class TestWarmGPU(unittest.TestCase):
    def run_with(self, env, kernel, gpu=True):
        calls = []
        with mock.patch.dict(os.environ, {pb.WARM_GPU_ENV: env} if env is not None else {}, clear=False), \
                mock.patch.dict(sys.modules, {"torch": recording_torch(calls)}), \
                mock.patch("os.path.exists", lambda p: gpu if p == "/dev/nvidiactl" else os.path.isfile(p)):
            if env is None:
                os.environ.pop(pb.WARM_GPU_ENV, None)
            t = warm_gpu(kernel)
            if t is not None:
                t.join(5)
        return t, calls

    def test_warms_the_named_gpu(self):
        t, calls = self.run_with("1", OnCuda())
        self.assertIsNotNone(t)
        self.assertEqual(calls, [("init", 1), ("empty", "cuda:1")])

    def test_nothing_to_warm(self):
        for env, kernel, gpu in [(None, OnCuda(), True), ("x", OnCuda(), True), ("-1", OnCuda(), True),
                                 ("0", OnHost(), True), ("0", OnCuda(), False)]:
            t, calls = self.run_with(env, kernel, gpu)
            self.assertIsNone(t, (env, kernel.name, gpu))
            self.assertEqual(calls, [], (env, kernel.name, gpu))


if __name__ == "__main__":
    unittest.main()
