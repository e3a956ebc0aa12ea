"""The protocol's constants and generated messages, in one place.

The handshake values are harness/protocol/protocol.go's: a plugin that
disagrees with them is refused by the harness before any RPC.
"""

from ._gen import kvharness_pb2 as kv  # noqa: F401  (re-exported)
from ._gen import kvharness_pb2_grpc as kv_grpc  # noqa: F401

COOKIE_KEY = "KVHARNESS_PLUGIN_COOKIE"
COOKIE_VALUE = "kv-cache-kernels-under-test"
CORE_PROTOCOL_VERSION = 1  # go-plugin's own protocol
APP_PROTOCOL_VERSION = 1  # protocol.Version
MAX_MESSAGE_BYTES = 64 << 20  # protocol.MaxMessageBytes
WARM_GPU_ENV = "KVHARNESS_WARM_GPU"  # protocol.WarmGPUEnv: the GPU the harness will attach arenas on
HANDLER_TIME_KEY = "kvharness-handler-ns"  # protocol.HandlerTimeKey: a StoreBatch's time in the plugin

BACKEND_SHM = kv.BACKEND_SHM
BACKEND_CUDA = kv.BACKEND_CUDA
BENCH_PER_LAUNCH = kv.BENCH_PER_LAUNCH
BENCH_BATCHED = kv.BENCH_BATCHED
