"""pyasync: the pdasync engine in Python, on the shm backend.

The prefill side builds a descriptor per run of pages contiguous on both
sides, posts each handle on the SDK's gated transport and notifies each
handle and component once it has ended; the decode side translates pages
through its page table, reads a room (digests) once every handle and
component completed, and frees an aborted or failed room once every handle
has ended. Its variants are the Go plugin's mutants:

    kvharness check --plugin plugins/python/pyasync/kvharness-plugin.json --kernel pdasync --backend cpu
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kvharness_sdk import AsyncKernel, Geometry, Variant, serve  # noqa: E402
from kvharness_sdk import pdasync as pa  # noqa: E402

ABORT_FREES, FIRST_COMPONENT, FIRST_FAILURE = "abort-frees-in-flight", "first-component-done", "first-failure-frees"
VIRTUAL, POLL_DONE = "virtual-as-physical", "poll-as-completion"


def page_bytes(layout):
    d, p = layout.head_dim, layout.page_size
    return {"bf16": 2 * d * p, "fp8-paged": (d + 4) * p, "fp8-rows": (d + 4) * p}[layout.name]


class Prefill:
    def __init__(self, attach):
        self.a, self.rooms = attach, []  # rooms: [room id, [[component id, [[xfer, told state]]], told]]

    def post(self, room, src, dst):
        out, comps = [], []
        for c in room.components:
            hs = []
            for h in c.handles:
                ds = self.descriptors(room.id, c.buffers, h, src, dst)
                hs.append([self.a.post(h.id, ds), None])
                out.append((h.id, ds))
            comps.append([c.id, hs, False])
        self.rooms.append((room.id, comps))
        return out

    def descriptors(self, room, bufs, h, src, dst):
        out = []
        for bi in bufs:
            b, n = self.a.buffers[bi], page_bytes(self.a.buffers[bi].dst.layout)
            i, end = h.first_page, h.first_page + h.pages
            while i < end:
                s, d, run = b.phys(src[i]), b.phys(dst[i]), 1
                while i + run < end and b.phys(src[i + run]) == s + run and b.phys(dst[i + run]) == d + run:
                    run += 1
                out.append(pa.Descriptor(room, bi, b.src.base + s * n, b.dst.base + d * n, run * n, n, run))
                i += run
        return out

    def poll(self):
        out = []
        for room, comps in self.rooms:
            for comp in comps:
                cid, hs, told = comp
                for h in hs:
                    if h[1] is None:
                        st = h[0].state()
                        if st == pa.PENDING and self.a.variant == POLL_DONE:
                            st = pa.DONE  # the poll answered: taken as completion
                        if st != pa.PENDING:
                            h[1] = st
                            note = pa.HANDLE_FAILED if st == pa.FAILED else pa.HANDLE_DONE
                            out.append(pa.Notification(room, cid, h[0].handle, note))
                if not told and all(h[1] is not None for h in hs):
                    comp[2] = True
                    failed = any(h[1] == pa.FAILED for h in hs)
                    out.append(pa.Notification(room, cid, 0, pa.COMPONENT_FAILED if failed else pa.COMPONENT_DONE))
        return out


class Decode:
    def __init__(self, attach):
        self.a, self.rooms = attach, {}

    def admit(self, room, virt, table):
        if room.id in self.rooms:
            raise ValueError(f"room {room.id} admitted twice")
        dst = list(virt) if self.a.variant == VIRTUAL else [table[v] for v in virt]
        handles = {h.id: None for c in room.components for h in c.handles}
        comps = {c.id: None for c in room.components}
        self.rooms[room.id] = {"dst": dst, "handles": handles, "comps": comps, "aborted": False, "failed": False, "over": False}
        return dst

    def notify(self, notes):
        out = []
        for n in notes:
            r = self.rooms.get(n.room)
            if r is None:
                raise ValueError(f"notification for room {n.room}, which was never admitted")
            if n.note in (pa.HANDLE_DONE, pa.HANDLE_FAILED):
                r["handles"][n.handle] = n.note
            else:
                r["comps"][n.component] = n.note
            failed = n.note in (pa.HANDLE_FAILED, pa.COMPONENT_FAILED)
            r["failed"] = r["failed"] or failed
            if failed and self.a.variant == FIRST_FAILURE and not r["over"]:
                out += self.free(n.room, r)
            else:
                out += self.settle(n.room, r)
        return out

    def abort(self, room):
        r = self.rooms.get(room)
        if r is None:
            raise ValueError(f"abort of room {room}, which was never admitted")
        r["aborted"] = True
        if self.a.variant == ABORT_FREES and not r["over"]:
            return self.free(room, r)
        return self.settle(room, r)

    def settle(self, room, r):
        if r["over"]:
            return []
        if r["aborted"] or r["failed"]:
            return self.free(room, r) if all(v is not None for v in r["handles"].values()) else []
        comps = r["comps"].values()
        done = any(v == pa.COMPONENT_DONE for v in comps) if self.a.variant == FIRST_COMPONENT else \
            all(v == pa.COMPONENT_DONE for v in comps) and all(v == pa.HANDLE_DONE for v in r["handles"].values())
        return self.read(room, r) if done else []

    def free(self, room, r):
        r["over"] = True
        return [pa.Event(room, pa.FREED)]

    def read(self, room, r):
        r["over"] = True
        ev = pa.Event(room, pa.READY)
        for b in self.a.buffers:
            n = page_bytes(b.dst.layout)
            ev.digests.append(pa.digest(self.a.read(b.dst.base + b.phys(p) * n, n) for p in r["dst"]))
        return [ev]


class PyAsync(AsyncKernel):
    name, version = "pyasync", "1.0.0"
    doc = "the pdasync engine in Python: gated copies on the host, completion by notification"
    variants = (
        Variant(ABORT_FREES, "an aborted room's pages are freed at once, while copies into them are in flight (sglang #24527)"),
        Variant(FIRST_COMPONENT, "a room is declared done on the first component's notification (sglang #39846)"),
        Variant(FIRST_FAILURE, "the first failed handle frees the room while its siblings still write (vllm PR #56104)"),
        Variant(VIRTUAL, "virtual page indices sent as physical ones (sglang PR #31471)"),
        Variant(POLL_DONE, "a successful poll taken as completion (ai-dynamo/nixl #182)"),
    )

    def geometry(self, variant, head_dim, page_size):
        return [Geometry("bf16", 2 * head_dim, 2 * head_dim * page_size),
                Geometry("fp8-paged", head_dim + 4, (head_dim + 4) * page_size),
                Geometry("fp8-rows", head_dim + 4, (head_dim + 4) * page_size)]

    def new_prefill(self, attach):
        return Prefill(attach)

    def new_decode(self, attach):
        return Decode(attach)


if __name__ == "__main__":
    serve(PyAsync())
