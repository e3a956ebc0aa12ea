"""torchload: a layer-wise host → device KV load and a side-stream page
store in Python, on the SDK's streams: torch streams and events on the GPU,
the SDK's host streams (numpy copies) on the CPU, one source for both.

The load waits for the prior stream (attention may still read the pages it
overwrites), queues every layer's pages on its load stream and records one
event per layer; the gate makes the consumer's stream wait on the layer's
event, or fails the layer when one of its copies could not be read. The
store forks a side stream from the caller's, copies, and joins back.

Its variants put two of the ordering bugs back: the index-K buffer left
ungated (the seed incident's HiCache path) and the side-stream store never
joined back to the caller's stream (multi-stream overlap).
"""

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kvharness_sdk import CUDA, SHM, Geometry, Kernel, Variant, serve  # noqa: E402
from kvharness_sdk.streams import LoadFailed  # noqa: E402


class TorchLoad(Kernel):
    name = "torchload"
    version = "1.0.0"
    doc = "layer-wise host → device KV load with per-layer gates and a side-stream page store, on torch streams (numpy on the CPU)"
    backends = (SHM, CUDA)
    variants = (
        Variant("indexk-gate-missing", "the index-K buffer has no gate while KV is gated (the seed incident's HiCache path)"),
        Variant("store-no-join", "the side-stream store is never joined back to the caller's stream"),
    )

    def geometry(self, variant, head_dim, page_size):
        return [Geometry("bf16", 2 * head_dim, 2 * head_dim * page_size)]

    def prepare_load(self, x):
        self.x = x
        self.load = x.new_stream("load")
        self.side = x.new_stream("side")
        self.layer_events = []

    def _event(self, layer):
        while len(self.layer_events) <= layer:
            self.layer_events.append(self.x.new_event("layer loaded"))
        return self.layer_events[layer]

    def start_load(self, call):
        failed = {}
        call.state = failed
        self.load.wait_stream(call.prior)
        for layer in range(call.layers):
            for b, buf in enumerate(call.buffers):
                for i in range(len(call.pages)):
                    try:
                        self.load.copy(call.dst(layer, b, i), call.src(layer, b, i), buf.page_bytes)
                    except LoadFailed as e:
                        failed[(layer, b)] = e
            self.load.record(self._event(layer))

    def wait_layer(self, call, layer, buffer, stream):
        err = call.state.get((layer, buffer))
        if err is not None:
            raise err
        if call.variant == "indexk-gate-missing" and call.buffers[buffer].name == "indexk":
            return
        stream.wait(self._event(layer))

    def store_pages(self, call):
        self.side.wait_stream(call.caller)
        for b, buf in enumerate(call.buffers):
            for i in range(len(call.pages)):
                self.side.copy(call.dst(b, i), call.src(b, i), buf.page_bytes)
        if call.variant != "store-no-join":
            call.caller.wait_stream(self.side)


if __name__ == "__main__":
    serve(TorchLoad())
