"""Test helpers: a shared-memory arena the test maps too, a gRPC context
whose abort raises, and loading an example plugin's module by path."""

import importlib
import importlib.util
import os
import pkgutil
import sys
import tempfile
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # plugins/python
sys.path.insert(0, ROOT)

from kvharness_sdk import _gen  # noqa: E402
from kvharness_sdk import protocol as pb  # noqa: E402
from kvharness_sdk.service import KernelService  # noqa: E402

# kv is every message and enum of the protocol's generated modules, by
# name: the tests speak to every kind.
kv = types.SimpleNamespace()
for _info in pkgutil.iter_modules(_gen.__path__):
    if _info.name.endswith("_pb2"):
        kv.__dict__.update({k: v for k, v in vars(importlib.import_module(f"{_gen.__name__}.{_info.name}")).items()
                            if not k.startswith("_")})


class Aborted(Exception):
    def __init__(self, code, message):
        super().__init__(f"{code.name}: {message}")
        self.code, self.message = code, message


class Context:
    """The part of grpc.ServicerContext the service uses."""

    def abort(self, code, message):
        raise Aborted(code, message)

    def set_trailing_metadata(self, md):
        self.trailer = dict(md)


def call(service, method: str, request):
    """service.method(request) through the RPC wrapper, as gRPC calls it."""
    return getattr(service, method)(request, Context())


class ShmArena:
    """A file the service maps as a BACKEND_SHM region and the test reads
    and writes through numpy."""

    def __init__(self, size: int, pinned: bool = False):
        f = tempfile.NamedTemporaryFile(prefix="kvh-test-", delete=False)
        f.truncate(size)
        f.close()
        self.path, self.size = f.name, size
        self.mem = np.memmap(self.path, dtype=np.uint8, mode="r+", shape=(size,))
        self.desc = kv.Arena(backend=pb.BACKEND_SHM, path=self.path, size=size, pinned=pinned)

    def write(self, off: int, data: np.ndarray) -> None:
        b = np.ascontiguousarray(data).view(np.uint8).ravel()
        self.mem[off : off + b.size] = b

    def read(self, off: int, n: int) -> np.ndarray:
        return np.array(self.mem[off : off + n])

    def close(self) -> None:
        del self.mem
        os.unlink(self.path)


def pool_desc(name, layout, head_dim, page_size, slots, off, size, region=0):
    """A pool's description; a pool named side/buffer (a transfer's) carries
    that buffer, as the harness describes it."""
    d = kv.PoolDesc(name=name, layout=kv.LayoutRef(name=layout, head_dim=head_dim, page_size=page_size),
                    slots=slots, pool=kv.Window(offset=off, size=size, region=region))
    side, _, buffer = name.partition("/")
    if side in ("src", "dst") and buffer:
        d.buffer.CopyFrom(kv.PoolBuffer(side=kv.SIDE_SRC if side == "src" else kv.SIDE_DST, name=buffer))
    return d


def load_plugin(name: str):
    """An example plugin's module (plugins/python/NAME/plugin.py), under a
    module name of its own."""
    path = os.path.join(ROOT, name, "plugin.py")
    spec = importlib.util.spec_from_file_location(f"plugin_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Registrar:
    """The part of a grpc server that registering services uses."""

    def __init__(self):
        self.handlers = []

    def add_generic_rpc_handlers(self, handlers):
        self.handlers.extend(handlers)


class Served:
    """A plugin's services as one object, as the harness sees them on one
    connection: a call by method name goes to the service that has it (the
    base service, then each kind's)."""

    def __init__(self, core: KernelService):
        self.core = core

    def __getattr__(self, name):
        for s in [self.core] + self.core.servicers:
            if name in type(s).__dict__ or (s is self.core and hasattr(s, name)):
                return getattr(s, name)
        raise AttributeError(f"no service of {self.core.k.name} serves {name}")


def service(kernel) -> Served:
    """kernel's services, its kinds registered as serve() registers them."""
    s = KernelService(kernel)
    s.register(_Registrar())
    return Served(s)
