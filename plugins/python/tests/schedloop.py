"""A small serving engine's scheduler loop, driving kvharness_sdk.trace as
an engine hooked with it would: requests arrive with prompts (some
extending another resident request's prompt: a prefix-cache hit), are
admitted while the pool has pages, decode in batches padded to the graph
sizes captured at start, finish after their output length or are aborted,
and under memory pressure the longest waiting one is evicted to the host
and loaded back later. The engine's allocator and prefix cache are its
own; the recorder is hooked onto them with trace.wrap, not called from
the loop.

Run it to write a trace: python3 schedloop.py OUT.jsonl [steps] [seed]
"""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # plugins/python: the SDK

from kvharness_sdk import trace  # noqa: E402  (the recorder needs the standard library alone)


class Allocator:
    """Pages of one pool; page 0 is the padding sink, never handed out.
    The last page freed is the first reused, as engines' free lists do."""

    def __init__(self, pages):
        self.free = list(range(pages - 1, 0, -1))
        self.refs = {}

    def alloc(self, n):
        if n > len(self.free):
            return None
        out = [self.free.pop() for _ in range(n)]
        for p in out:
            self.refs[p] = 1
        return out

    def share(self, pages):
        for p in pages:
            self.refs[p] += 1

    def release(self, pages):
        for p in pages:
            self.refs[p] -= 1
            if self.refs[p] == 0:
                del self.refs[p]
                self.free.append(p)


class Engine:
    def __init__(self, page_size=4, pages=48, capacities=(1, 2, 4, 8), seed=1):
        self.P = page_size
        self.pages = pages
        self.capacities = list(capacities)
        self.rng = random.Random(seed)
        self.alloc = Allocator(pages)
        self.running = {}  # rid -> {"pages", "tokens", "left"}
        self.offloaded = {}  # rid -> tokens, left
        self.next = 0

    # The engine's own calls, which a recorder wraps.

    def admit(self, rid, tokens, prefix_of=None, shared=0):
        """Allocates a request's pages (sharing a prefix's full pages, copying
        a partial one) and runs its prefill; False when the pool is full."""
        full = shared // self.P
        src = self.running[prefix_of]["pages"][:full] if prefix_of else []
        need = -(-tokens // self.P) - full
        own = self.alloc.alloc(need)
        if own is None:
            return False
        self.alloc.share(src)
        self.running[rid] = {"pages": src + own, "tokens": tokens, "left": self.rng.randint(1, 12)}
        return True

    def decode(self, batch):
        """One forward of the decode graph at the smallest captured size that
        holds the batch; a request crossing a page boundary gets a page."""
        for rid in batch:
            r = self.running[rid]
            if r["tokens"] % self.P == 0:
                r["pages"] += self.alloc.alloc(1)
            r["tokens"] += 1
            r["left"] -= 1
        return next(c for c in self.capacities if c >= len(batch))

    def free(self, rid, aborted=False):
        r = self.running.pop(rid)
        self.alloc.release(r["pages"])

    def abort(self, rid):
        self.free(rid, aborted=True)

    def offload(self, rid):
        r = self.running.pop(rid)
        self.alloc.release(r["pages"])
        self.offloaded[rid] = r

    def load_back(self, rid):
        r = self.offloaded[rid]
        pages = self.alloc.alloc(-(-r["tokens"] // self.P))
        if pages is None:
            return False
        del self.offloaded[rid]
        r["pages"] = pages
        self.running[rid] = r
        return True

    # The loop.

    def step(self):
        rng = self.rng
        x = rng.random()
        if not self.running or x < 0.25:
            rid = f"req-{self.next}"
            self.next += 1
            tokens = rng.randint(1, 3 * self.P)
            if self.running and rng.random() < 0.3:
                src = rng.choice(sorted(self.running))
                shared = rng.randint(1, self.running[src]["tokens"])
                if self.admit(rid, shared + rng.randint(1, 2 * self.P), prefix_of=src, shared=shared):
                    return
            elif self.admit(rid, tokens):
                return
            if self.running:  # memory pressure: offload the longest waiting
                self.offload(sorted(self.running)[0])
            return
        if self.offloaded and x < 0.32:
            self.load_back(sorted(self.offloaded)[0])
            return
        if x < 0.36:
            self.abort(rng.choice(sorted(self.running)))
            return
        live = sorted(self.running)
        rng.shuffle(live)
        batch = live[:rng.randint(1, min(len(live), self.capacities[-1]))]
        need = sum(1 for r in batch if self.running[r]["tokens"] % self.P == 0)
        if need > len(self.alloc.free):
            self.offload(batch[-1])
            return
        self.decode(batch)
        for rid in batch:
            if self.running[rid]["left"] <= 0:
                self.free(rid)


def hook(engine, rec):
    """Hooks the recorder onto the engine's calls, as one would onto a real
    engine's allocator and model runner (docs/sequences.md)."""
    def on_admit(ok, rid, tokens, prefix_of=None, shared=0):
        if ok:
            rec.arrive(rid, tokens, shared_from=prefix_of, shared=shared if prefix_of else 0,
                       pages=engine.running[rid]["pages"])

    def on_decode(capacity, batch):
        rec.decode(batch, capacity=capacity)

    def on_free(_, rid, aborted=False):
        if not aborted:
            rec.finish(rid)

    def on_load(ok, rid):
        if ok:
            rec.load(rid, pages=engine.running[rid]["pages"])

    undo = [
        trace.wrap(engine, "admit", on_admit),
        trace.wrap(engine, "decode", on_decode),
        trace.wrap(engine, "free", on_free),
        trace.wrap(engine, "abort", lambda _, rid: rec.abort(rid)),
        trace.wrap(engine, "offload", lambda _, rid: rec.evict(rid)),
        trace.wrap(engine, "load_back", on_load),
    ]
    return lambda: [u() for u in undo]


def record(path, steps=60, seed=1):
    """Runs the engine for a number of steps with the recorder on."""
    engine = Engine(seed=seed)
    with trace.Recorder(path, head_dims=[64, 32], page_size=engine.P, pages=engine.pages,
                        capacities=engine.capacities, engine="schedloop") as rec:
        undo = hook(engine, rec)
        while rec.steps < steps:
            engine.step()
        undo()
    return rec


if __name__ == "__main__":
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    s = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    record(out, n, s)
