"""The protocol's constants and the base service's generated messages
(kvharness.proto); each kind's module imports its own (store_pb2, ...).

The handshake values are harness/protocol/protocol.go's: a plugin that
disagrees with them is refused by the harness before any RPC.
"""

from ._gen import kvharness_pb2 as kv  # noqa: F401  (re-exported: the base service's messages; each kind imports its own)

COOKIE_KEY = "KVHARNESS_PLUGIN_COOKIE"
COOKIE_VALUE = "kv-cache-kernels-under-test"
CORE_PROTOCOL_VERSION = 1  # go-plugin's own protocol
APP_PROTOCOL_VERSION = 2  # protocol.Version
MAX_MESSAGE_BYTES = 64 << 20  # protocol.MaxMessageBytes
WARM_GPU_ENV = "KVHARNESS_WARM_GPU"  # protocol.WarmGPUEnv: the GPU the harness will attach arenas on
HANDLER_TIME_KEY = "kvharness-handler-ns"  # protocol.HandlerTimeKey: a StoreBatch's time in the plugin

BACKEND_SHM = kv.BACKEND_SHM
BACKEND_CUDA = kv.BACKEND_CUDA
BENCH_PER_LAUNCH = kv.BENCH_PER_LAUNCH
BENCH_BATCHED = kv.BENCH_BATCHED

SERVICE_PREFIX = "kvharness.v1."  # protocol.ServicePrefix
BASE_SERVICE = SERVICE_PREFIX + "Plugin"  # protocol.BaseService


def kernel_of(service: str) -> str:
    """The kind a service serves: its name in lower case, as
    protocol.KernelOf ("kvharness.v1.Store" serves "store"); "" for the base
    service and services outside the protocol."""
    if not service.startswith(SERVICE_PREFIX) or service == BASE_SERVICE:
        return ""
    return service[len(SERVICE_PREFIX):].lower()
