"""kvharness_sdk: write a kvharness kernel plugin in Python.

Subclass :class:`Kernel`, describe it (geometry, fp8 recipe, slot width),
implement ``store``, ``read`` or ``transfer``, and call :func:`serve` from
the script's main block; ship a ``kvharness-plugin.json`` manifest beside
the script. See plugins/python/README.md, and plugins/python/torchscatter
for the smallest complete plugin.

The package needs grpcio, protobuf and numpy; the cuda backend also needs
torch (and triton for Triton kernels) and the NVIDIA driver's libcuda. Its
gRPC stubs are generated into ``_gen`` by plugins/python/gen.sh and
committed. ``pip install plugins/python`` installs it outside the
repository.
"""

import sys as _sys

if _sys.version_info < (3, 8):  # pragma: no cover
    raise ImportError("kvharness_sdk needs Python 3.8 or later")

try:
    import grpc as _grpc  # noqa: F401
    import google.protobuf as _protobuf  # noqa: F401
    import numpy as _numpy  # noqa: F401
except ImportError as _e:  # pragma: no cover - depends on the interpreter
    raise ImportError(
        f"kvharness_sdk needs grpcio, protobuf and numpy ({_e}); on Debian/Ubuntu: "
        "apt-get install python3-grpcio python3-protobuf python3-numpy, "
        "or set KVHARNESS_PYTHON to a python that has them"
    ) from _e

from .kernel import (  # noqa: E402
    CUDA,
    PAD_COUNT,
    PAD_MINUS1,
    PAD_NONE,
    PAD_PAGE_TABLE,
    PAD_SINK,
    PADDING_NAMES,
    PAGE_TABLE,
    SHM,
    SLOTS,
    Attach,
    Geometry,
    Kernel,
    LaunchedStore,
    Layout,
    PageTable,
    Pool,
    PoolBuffer,
    Recipe,
    StoreCall,
    Variant,
)
from .pdasync import AsyncKernel  # noqa: E402
from .read import ReadCall, read_variant  # noqa: E402
from .serve import serve  # noqa: E402
from .transfer import Descriptor, TransferBuffer, TransferCall, TransferRoom, transfer_variant  # noqa: E402

__version__ = "2.0.0"

__all__ = [
    "CUDA",
    "SHM",
    "PAD_NONE",
    "PAD_COUNT",
    "PAD_SINK",
    "PAD_MINUS1",
    "PAD_PAGE_TABLE",
    "PAGE_TABLE",
    "SLOTS",
    "PADDING_NAMES",
    "AsyncKernel",
    "Attach",
    "Descriptor",
    "Geometry",
    "Kernel",
    "LaunchedStore",
    "Layout",
    "PageTable",
    "Pool",
    "PoolBuffer",
    "ReadCall",
    "Recipe",
    "StoreCall",
    "TransferBuffer",
    "TransferCall",
    "TransferRoom",
    "Variant",
    "read_variant",
    "serve",
    "transfer_variant",
]
