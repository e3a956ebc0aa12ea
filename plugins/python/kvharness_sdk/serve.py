"""go-plugin's server side for a non-Go plugin (see go-plugin's
docs/guide-plugin-write-non-go.md), with kvharness's handshake values:

1. refuse to run without the magic cookie the harness sets, with a message
   a person who ran the script by hand can act on (exit 1);
2. listen on a unix socket in PLUGIN_UNIX_SOCKET_DIR (the private run
   directory the harness made for this plugin);
3. serve grpc.health.v1.Health ("plugin" is SERVING: go-plugin pings it),
   plugin.GRPCController/Shutdown (so the harness can stop the plugin
   without killing it), no-op plugin.GRPCStdio and plugin.GRPCBroker
   streams that end at once (go-plugin's client opens both and treats an
   ended stream as "nothing to relay"; kvharness uses neither), and the
   kvharness.v1.Plugin service beside the service of every kind the
   kernel implements;
4. print the handshake line ``1|2|unix|<socket>|grpc[|<cert>]`` on stdout
   and flush it; afterwards stdout is pointed at stderr, so a kernel's
   print() (and native libraries' output) lands in the stderr tail the
   harness shows with a fault instead of in a pipe nobody reads.

With AutoMTLS (PLUGIN_CLIENT_CERT set) the socket speaks TLS, requires the
harness's client certificate, and the handshake carries this plugin's
certificate (see tls.py).
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
from concurrent import futures

import grpc

from . import protocol as pb
from ._gen import (
    grpc_broker_pb2_grpc,
    grpc_controller_pb2,
    grpc_controller_pb2_grpc,
    grpc_stdio_pb2_grpc,
    health_pb2,
    health_pb2_grpc,
)
from .kernel import CUDA, Kernel, check_declaration
from .service import KernelService
from .tls import TLSUnavailable, server_certificate

HEALTH_SERVICE = "plugin"  # go-plugin's GRPCServiceName

BORINGSSL_HINT = (
    "kvharness_sdk: note: AutoMTLS is on; if the harness fails to connect with PEER_DID_NOT_RETURN_A_CERTIFICATE, "
    "this grpcio uses BoringSSL, which refuses go-plugin's P-521 client certificate: "
    'set "mtls": false in the plugin manifest or pass --no-mtls\n'
)


class Health(health_pb2_grpc.HealthServicer):
    """Check answers SERVING for "plugin" and the server as a whole; Watch
    stays unimplemented (go-plugin never calls it; the health protocol
    tells clients to treat UNIMPLEMENTED as "not supported")."""

    def Check(self, request, context):
        if request.service not in ("", HEALTH_SERVICE):
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service!r}")
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


class Controller(grpc_controller_pb2_grpc.GRPCControllerServicer):
    """Shutdown stops the server after answering; serve() then releases the
    arena and exits 0."""

    def __init__(self, stop):
        self._stop = stop

    def Shutdown(self, request, context):
        threading.Thread(target=self._stop, daemon=True).start()
        return grpc_controller_pb2.Empty()


class Stdio(grpc_stdio_pb2_grpc.GRPCStdioServicer):
    """No stdio relay: the stream ends at once, freeing its worker thread.
    The plugin's stdout and stderr reach the harness through the pipes."""

    def StreamStdio(self, request, context):
        return iter(())


class Broker(grpc_broker_pb2_grpc.GRPCBrokerServicer):
    """No sub-connections: kvharness's protocol needs none. The stream ends
    at once rather than holding a worker thread for the plugin's life."""

    def StartStream(self, request_iterator, context):
        return iter(())


def _not_by_hand(kernel: Kernel) -> None:
    if os.environ.get(pb.COOKIE_KEY) == pb.COOKIE_VALUE:
        return
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else "this script"
    sys.stderr.write(
        f"{kernel.name or 'this'} is a kvharness plugin: the harness starts it and talks to it over gRPC.\n"
        f"Run it through kvharness instead, for example:\n"
        f"  kvharness check --plugin {os.path.join(os.path.dirname(script), 'kvharness-plugin.json')}\n"
        f"  kvharness check --plugin 'python3 {script}'\n"
    )
    sys.exit(1)


def _socket_path() -> str:
    """A fresh socket name in the directory go-plugin made for this plugin
    (kept short: a unix socket path is limited to 107 bytes)."""
    d = os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or tempfile.gettempdir()
    fd, path = tempfile.mkstemp(prefix="plugin", dir=d)
    os.close(fd)
    os.unlink(path)
    return path


def _preload_cuda(kernel: Kernel) -> None:
    """Imports torch before the handshake when the kernel runs on CUDA and
    a GPU is present: importing torch takes seconds, which the harness's
    start timeout (20 s) absorbs but a per-call deadline (10 s) might not."""
    if CUDA not in kernel.backends or not os.path.exists("/dev/nvidiactl"):
        return
    try:
        import torch  # noqa: F401
    except ImportError:
        pass  # Attach on cuda says what is missing; shm still works


def warm_gpu(kernel: Kernel):
    """Makes the CUDA context of the GPU the harness named (WARM_GPU_ENV) in
    a background thread, when the kernel runs on CUDA: the first Attach
    then finds it made instead of making it (a few hundred milliseconds,
    which overlap the harness's own setup). Returns the thread, or None
    when there is nothing to warm; an error here is met again, and
    reported, by the Attach."""
    try:
        ordinal = int(os.environ.get(pb.WARM_GPU_ENV, ""))
    except ValueError:
        return None
    if ordinal < 0 or CUDA not in kernel.backends or not os.path.exists("/dev/nvidiactl"):
        return None

    def warm():
        try:
            import torch

            with torch.cuda.device(ordinal):
                torch.cuda.init()
                torch.empty(1, device=f"cuda:{ordinal}")
        except Exception:  # noqa: BLE001 - the Attach reports it
            pass

    t = threading.Thread(target=warm, name="kvharness-warm-gpu", daemon=True)
    t.start()
    return t


def serve(kernel: Kernel) -> None:
    """Serves kernel until the harness shuts the plugin down or kills it.
    Call it from the plugin's ``if __name__ == "__main__":``."""
    try:
        check_declaration(kernel)
    except ValueError as e:
        sys.stderr.write(f"kvharness_sdk: {e}\n")
        sys.exit(1)
    _not_by_hand(kernel)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as go-plugin: Ctrl-C is for the harness
    _preload_cuda(kernel)

    service = KernelService(kernel)
    opts = [("grpc.max_receive_message_length", pb.MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", pb.MAX_MESSAGE_BYTES)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=opts)
    service.register(server)
    health_pb2_grpc.add_HealthServicer_to_server(Health(), server)
    grpc_controller_pb2_grpc.add_GRPCControllerServicer_to_server(Controller(lambda: server.stop(1)), server)
    grpc_stdio_pb2_grpc.add_GRPCStdioServicer_to_server(Stdio(), server)
    grpc_broker_pb2_grpc.add_GRPCBrokerServicer_to_server(Broker(), server)

    path = _socket_path()
    address = "unix:" + path
    cert_field = ""
    client_cert = os.environ.get("PLUGIN_CLIENT_CERT", "")
    if client_cert:
        try:
            cert_pem, key_pem, cert_field = server_certificate()
        except TLSUnavailable as e:
            sys.stderr.write(f"{kernel.name}: {e}\n")
            sys.exit(1)
        # Printed now, shown by the harness only if the TLS handshake fails.
        sys.stderr.write(BORINGSSL_HINT)
        sys.stderr.flush()
        creds = grpc.ssl_server_credentials(
            [(key_pem, cert_pem)], root_certificates=client_cert.encode(), require_client_auth=True
        )
        port = server.add_secure_port(address, creds)
    else:
        port = server.add_insecure_port(address)
    if not port:
        sys.stderr.write(f"{kernel.name}: cannot listen on {path}\n")
        sys.exit(1)
    server.start()

    line = f"{pb.CORE_PROTOCOL_VERSION}|{pb.APP_PROTOCOL_VERSION}|unix|{path}|grpc"
    if cert_field:
        line += "|" + cert_field
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    warm_gpu(kernel)

    try:
        server.wait_for_termination()
    finally:
        service.close()
        try:
            os.unlink(path)
        except OSError:
            pass
    sys.exit(0)
