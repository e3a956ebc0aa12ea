"""go-plugin's AutoMTLS, for a plugin that cannot import ``cryptography``.

With AutoMTLS on (the harness's default), go-plugin's client generates a
certificate, passes it in PLUGIN_CLIENT_CERT (PEM), and expects the plugin
to present a certificate of its own as the handshake's sixth field: the
DER bytes in unpadded standard base64. The client trusts exactly that
certificate (as its root, for the name "localhost"), and the plugin must
trust exactly the client's and require it.

The server certificate is made with the ``openssl`` command: a
self-signed P-256 key for localhost, valid for a day, written to a private
temporary directory that is removed at once. The private key never leaves
this process otherwise.

Whether the channel then comes up depends on grpcio's TLS library, not on
this module. go-plugin's client certificate is ECDSA P-521, and in TLS 1.3
the server must list ecdsa_secp521r1_sha512 among the signature algorithms
it accepts: grpcio linked against the system OpenSSL does (Debian's
python3-grpcio: verified end to end), grpcio on BoringSSL (pip's wheels)
does not, so Go sends no certificate and the handshake fails with
PEER_DID_NOT_RETURN_A_CERTIFICATE (seen with grpcio 1.84 on the GPU
machine). That is why the shipped manifests say "mtls": false.
"""

from __future__ import annotations

import base64
import os
import shutil
import ssl
import subprocess
import tempfile


class TLSUnavailable(Exception):
    """AutoMTLS cannot be served here; the message says what to do."""


def server_certificate() -> tuple:
    """Returns (cert_pem, key_pem, handshake_field) for a fresh server
    certificate, or raises TLSUnavailable."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TLSUnavailable(
            "the harness asked for AutoMTLS but the openssl command is not installed; "
            'install openssl, or set "mtls": false in the plugin manifest (or run kvharness with --no-mtls)'
        )
    with tempfile.TemporaryDirectory(prefix="kvharness-tls-") as d:
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        cmd = [
            openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/O=kvharness/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign",
            "-addext", "extendedKeyUsage=serverAuth,clientAuth",
        ]  # fmt: skip
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if r.returncode != 0:
            raise TLSUnavailable(
                f"openssl could not make the AutoMTLS certificate ({r.stderr.strip()[-300:]}); "
                'set "mtls": false in the plugin manifest (or run kvharness with --no-mtls)'
            )
        with open(cert, "rb") as f:
            cert_pem = f.read()
        with open(key, "rb") as f:
            key_pem = f.read()
    der = ssl.PEM_cert_to_DER_cert(cert_pem.decode())
    field = base64.b64encode(der).decode().rstrip("=")  # Go's base64.RawStdEncoding
    return cert_pem, key_pem, field
