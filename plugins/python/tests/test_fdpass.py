"""The fd socket's receiving side against a server speaking
harness/protocol/fdpass's wire format (python_test.go checks it against the
Go server itself)."""

import array
import os
import socket
import tempfile
import threading
import unittest

from helpers import ROOT  # noqa: F401

from kvharness_sdk import fdpass


def serve_once(path, payload: bytes, fds):
    """Accepts one connection and sends payload with fds as SCM_RIGHTS."""
    ln = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ln.bind(path)
    ln.listen(1)

    def run():
        c, _ = ln.accept()
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else []
        c.sendmsg([payload], anc)
        c.close()
        ln.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


class TestReceive(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kvh-fd-")
        self.path = os.path.join(self.dir, "arena.sock")

    def tearDown(self):
        for f in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, f))
        os.rmdir(self.dir)

    def receive_from(self, payload: bytes, fds):
        """fdpass.receive against a server that answers payload and fds
        once; the server is done when it returns or raises."""
        t = serve_once(self.path, payload, fds)
        try:
            return fdpass.receive(self.path)
        finally:
            t.join()

    def test_a_descriptor_arrives(self):
        r, w = os.pipe()
        fd = self.receive_from(b"\x00", [r])
        os.close(r)
        os.write(w, b"kv")
        self.assertEqual(os.read(fd, 2), b"kv")
        os.close(fd)
        os.close(w)

    def test_the_harness_error_is_named(self):
        with self.assertRaisesRegex(fdpass.FDPassError, "could not export the arena: cuMemExport.*SHARING=ipc"):
            self.receive_from(b"\x01cuMemExportToShareableHandle failed; set KVHARNESS_CUDA_SHARING=ipc", [])

    def test_two_descriptors_are_refused(self):
        r, w = os.pipe()
        with self.assertRaises(fdpass.FDPassError) as e:
            self.receive_from(b"\x00", [r, w])
        # CMSG_SPACE(4) is padded to 8 bytes on 64-bit Linux, so both
        # arrive (and are closed); a third would be cut (MSG_CTRUNC).
        self.assertIn("sent 1 bytes and 2 descriptors; want 1 and 1", str(e.exception))
        os.close(r)
        os.close(w)

    def test_no_descriptor(self):
        with self.assertRaisesRegex(fdpass.FDPassError, "sent 1 bytes and 0 descriptors; want 1 and 1"):
            self.receive_from(b"\x00", [])

    def test_no_server(self):
        with self.assertRaisesRegex(fdpass.FDPassError, "connect to the harness's fd socket.*must still hold the arena"):
            fdpass.receive(self.path)


if __name__ == "__main__":
    unittest.main()
