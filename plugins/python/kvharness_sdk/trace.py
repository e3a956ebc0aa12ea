"""Record an engine's KV-cache lifecycle as a kvharness sequence trace.

A trace is JSON lines: a header with the engine's geometry (the head
dimension of each layer's cache, the page size, the pool's pages and the
batch sizes its decode graphs were captured at), then one step per line
as the engine's scheduler took it. ``kvharness check --kernel sequence
--trace FILE --plugin P`` replays the trace against any store kernel,
judges every page's ownership after every step, shrinks a failure to its
fewest steps, and draws new sequences that begin as the trace does.

Switch the recorder on around the engine's allocator and KV-cache calls
(docs/sequences.md says which functions to wrap in SGLang and vLLM)::

    from kvharness_sdk.trace import Recorder

    rec = Recorder("run.trace.jsonl", head_dims=[128], page_size=16,
                   pages=4096, capacities=[1, 2, 4, 8, 16, 32])
    rec.arrive("req-7", tokens=412)                 # admitted, prompt stored
    rec.arrive("req-8", tokens=300, shared_from="req-7", shared=256)
    rec.decode(["req-7", "req-8"], capacity=2)      # one graph replay
    rec.read(["req-8"])                             # a read between steps
    rec.finish("req-7")
    rec.close()                                     # the file appears whole

With ``decode_side=True`` the trace has a decode side and records
``rec.transfer(rid)``: a finished prefill sent to the decode server.

Request ids may be anything hashable (engines use strings); the trace
numbers them 1, 2, ... in order of arrival. The file is written under a
temporary name and renamed at close, so a crashed engine leaves no half
trace behind.
"""

import json
import os
import tempfile

VERSION = 1

__all__ = ["Recorder", "TraceError", "wrap", "VERSION"]


class TraceError(ValueError):
    """A step the recorder cannot record: it names the step and the fix."""


class Recorder:
    """Writes a trace of one engine run; use it as a context manager or
    call close()."""

    def __init__(self, path, *, head_dims, page_size, pages, capacities, engine="", decode_side=False):
        if not head_dims or any(d <= 0 or d % 8 for d in head_dims):
            raise TraceError(f"head_dims {head_dims!r}: want one positive multiple of 8 per layer")
        if page_size < 1 or pages < 2:
            raise TraceError(f"page_size {page_size}, pages {pages}: want page_size >= 1 and pages >= 2 (page 0 is the padding sink)")
        caps = list(capacities)
        if not caps or caps != sorted(set(caps)) or caps[0] < 1:
            raise TraceError(f"capacities {capacities!r}: want the captured batch sizes, ascending")
        self.path = path
        self.capacities = caps
        self.decode_side = bool(decode_side)
        self._ids = {}
        self._tokens = {}
        self.steps = 0
        folder = os.path.dirname(os.path.abspath(path))
        fd, self._tmp = tempfile.mkstemp(prefix=".trace-", dir=folder)
        self._f = os.fdopen(fd, "w")
        header = {"kvharness_trace": VERSION, "geometry": {
            "head_dims": list(head_dims), "page_size": page_size, "pages": pages, "capacities": caps}}
        if decode_side:
            header["geometry"]["decode"] = True
        if engine:
            header["engine"] = engine
        self._write(header)

    # The steps.

    def arrive(self, rid, tokens, *, shared_from=None, shared=0, pages=None, slots=None):
        """A request admitted with its prompt stored (a prefill). With
        shared_from, its first `shared` tokens come from that resident
        request's pages (a prefix-cache hit)."""
        if rid in self._ids:
            raise TraceError(f"arrive {rid!r}: the request arrived before; give each request one id")
        if tokens < 1:
            raise TraceError(f"arrive {rid!r}: {tokens} prompt tokens; want at least 1")
        self._ids[rid] = len(self._ids) + 1
        step = {"op": "arrive", "req": self._ids[rid], "tokens": int(tokens)}
        if shared_from is not None:
            step["from"] = self._id(shared_from, "arrive's shared_from")
            step["shared"] = int(shared)
        self._tokens[rid] = int(tokens)
        self._write(step, pages=pages, slots=slots)

    def decode(self, rids, *, capacity=None, slots=None):
        """One decode step: a token appended to each request of the batch,
        stored by the graph captured at `capacity` (the smallest captured
        size that holds the batch, when not given)."""
        rids = list(rids)
        if not rids:
            raise TraceError("decode of an empty batch: record only steps that run")
        fit = next((c for c in self.capacities if c >= len(rids)), None)
        if fit is None:
            raise TraceError(f"decode of {len(rids)} requests: more than the largest captured capacity {self.capacities[-1]}")
        if capacity is not None and capacity != fit:
            raise TraceError(f"decode of {len(rids)} requests at capacity {capacity}: the captured sizes {self.capacities} give {fit}")
        step = {"op": "decode", "batch": [self._id(r, "decode") for r in rids], "capacity": fit}
        for r in rids:
            self._tokens[r] += 1
        self._write(step, slots=slots)

    def finish(self, rid):
        """A request done: its pages freed (a shared page when its last holder goes)."""
        self._write({"op": "finish", "req": self._id(rid, "finish")})

    def abort(self, rid):
        """A request cancelled mid-flight."""
        self._write({"op": "abort", "req": self._id(rid, "abort")})

    def evict(self, rid):
        """A request's KV copied to the host and its pages freed."""
        self._write({"op": "evict", "req": self._id(rid, "evict")})

    def load(self, rid, *, pages=None):
        """An evicted request's KV brought back into fresh pages."""
        self._write({"op": "load", "req": self._id(rid, "load")}, pages=pages)

    def read(self, rids):
        """A read of the requests' KV between steps (attention, an
        indexer's top-k): the harness calls the plugin's read kernel on
        their pages."""
        rids = list(rids)
        if not rids:
            raise TraceError("read of no requests: record only steps that run")
        self._write({"op": "read", "batch": [self._id(r, "read") for r in rids]})

    def transfer(self, rid, *, pages=None):
        """A finished prefill's KV sent to the decode side (disaggregated
        serving): its prefill pages released, the decode side's taken.
        Needs Recorder(..., decode_side=True)."""
        if not self.decode_side:
            raise TraceError(f"transfer {rid!r}: the trace has no decode side; open the recorder with decode_side=True")
        self._write({"op": "transfer", "req": self._id(rid, "transfer")}, pages=pages)

    # The file.

    def close(self):
        """Ends the trace: the file appears whole under its name."""
        if self._f is None:
            return
        self._f.close()
        self._f = None
        os.replace(self._tmp, self.path)

    def discard(self):
        """Drops the trace: nothing is left behind."""
        if self._f is not None:
            self._f.close()
            self._f = None
            os.unlink(self._tmp)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.discard()
        return False

    def _id(self, rid, what):
        if rid not in self._ids:
            raise TraceError(f"{what} {rid!r}: the request never arrived; record its arrive first")
        return self._ids[rid]

    def _write(self, obj, pages=None, slots=None):
        if self._f is None:
            raise TraceError("the trace is closed")
        if pages is not None:
            obj["pages"] = [int(p) for p in pages]
        if slots is not None:
            obj["slots"] = [int(s) for s in slots]
        self._f.write(json.dumps(obj, separators=(",", ":")) + "\n")
        if "op" in obj:
            self.steps += 1


def wrap(owner, name, after):
    """Wraps method `name` of `owner` (a class or an object) so that
    after(result, *args, **kwargs) runs once the original returns: how a
    recorder hooks an engine's allocator or scheduler without editing it.
    Returns a function that puts the original back."""
    original = getattr(owner, name)

    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        after(result, *args, **kwargs)
        return result

    wrapped.__wrapped__ = original
    setattr(owner, name, wrapped)
    return lambda: setattr(owner, name, original)
