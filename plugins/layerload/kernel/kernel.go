// Package kernel is the layerload plugin: a layer-wise KV load from a host
// pool into device pools, and a page store on a side stream, written the
// way serving engines write them (SGLang's HiCache load_to_device_per_layer
// with wait_layer_transfer, vLLM's start_load_kv with wait_for_layer_load,
// DeepSeek-V4's index-K store overlapped on an alternate stream), on the
// SDK's streams so that one source runs on the CPU and on the GPU.
//
// The load queues every layer's copies on a load stream of its own, after
// waiting for the prior stream (attention may still read the pages it
// overwrites), and records one event per layer after that layer's copies;
// the gate makes the consumer's stream wait on the layer's event, or
// reports the layer failed when one of its copies could not be read. Two
// correct variants record completion differently: "counter" writes a
// monotonic device counter after each layer and gates with a counter wait
// (SGLang's LayerDoneCounter as a flag), "staged" bounces every page
// through a ring of two device staging slots, copying host → slot on the
// load stream and slot → page on a scatter stream, each slot's reuse
// guarded by the event of its last scatter.
//
// The mutants put back, one at a time, the ordering bugs real engines
// shipped.
package kernel

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/load"
)

// The variants. Correct ones are controls; the rest are mutants.
const (
	varCounter       = "counter"
	varStaged        = "staged"
	mutIndexKGate    = "indexk-gate-missing"
	mutWaitFirst     = "wait-before-record"
	mutRecordEarly   = "record-before-copies"
	mutRecordStream  = "record-wrong-stream"
	mutPrevLayer     = "gate-previous-layer"
	mutRingReuse     = "ring-reuse"
	mutGlobalLayerID = "counter-global-id"
	mutFailedDone    = "done-on-failure"
	mutStoreNoJoin   = "store-no-join"
	mutStoreNoFork   = "store-no-fork"
	mutOverwrite     = "load-overwrites-reader"
	mutOffsetInt32   = "offset-int32"
)

var variants = sdk.KernelVariants(load.Name, []sdk.Variant{
	{Name: varCounter, Correct: true,
		Doc: "completion as a monotonic device counter written after each layer, gated by a counter wait (a LayerDoneCounter as a flag)"},
	{Name: varStaged, Correct: true,
		Doc: "every page bounced through a ring of two device staging slots, host → slot on the load stream, slot → page on a scatter stream"},
	{Name: mutIndexKGate,
		Doc: "the index-K buffer has no gate while KV is gated: the indexer reads index-K before its load (the seed incident's HiCache path)"},
	{Name: mutWaitFirst,
		Doc: "a layer's event is recorded when the consumer first asks for the layer, after its wait: a wait before the record waits for nothing"},
	{Name: mutRecordEarly,
		Doc: "each layer's event is recorded before its copies are queued"},
	{Name: mutRecordStream,
		Doc: "each layer's event is recorded on the compute (prior) stream, torch's current stream, instead of the load stream"},
	{Name: mutPrevLayer,
		Doc: "the gate for layer L waits on layer L-1's event"},
	{Name: mutRingReuse,
		Doc: "staged, but a staging slot of the ring is reused before the scatter out of it has run (its event is not waited)"},
	{Name: mutGlobalLayerID,
		Doc: "counter, but the load writes the global layer id while gates wait on the local one (sglang PR #39876)"},
	{Name: mutFailedDone,
		Doc: "a layer whose copy failed is reported done: the forward runs on garbage (LMCache PR #4816)"},
	{Name: mutStoreNoJoin,
		Doc: "the side-stream store is never joined back: the caller's stream reads the pages without an event (multi-stream overlap)"},
	{Name: mutStoreNoFork,
		Doc: "the side-stream store does not wait for the caller's stream: it copies its inputs before the caller wrote them (vllm #45704, Mooncake #699)"},
	{Name: mutOverwrite,
		Doc: "the load does not wait for the prior stream: it overwrites pages attention still reads (vllm #47282)"},
	{Name: mutOffsetInt32,
		Doc: "each page's byte offset is int32 page × int32 page bytes: past 2 GiB of a pool it wraps, before the pool or, past 4 GiB, onto its first pages"},
})

// ringSlots is the staged variant's double buffering, of slotBytes each:
// made once per attach, since an allocation in the middle of a load could
// wait for the very streams the harness holds.
const (
	ringSlots = 2
	slotBytes = 1 << 20
)

// kernel keeps each attach's streams in its Exec's State: one process may
// serve several servers (in-process fuzzing), each attach its own.
type kernel struct{}

// state is an attach's streams, events and ring.
type state struct {
	load, scatter, side *load.Stream
	layers              []*load.Event // one per layer, re-recorded every load
	counter             *load.Counter
	epoch               uint32 // the counter's value after the last load's last layer
	slots               []load.Ref
	in, out             []*load.Event // the ring: slot filled; slot emptied
	used                []bool        // the slot has been emptied once (its out event was recorded)
}

// PrepareLoad implements load.Preparer: the streams, the counter and
// the ring's events of an attach.
func (k *kernel) PrepareLoad(_ context.Context, x *load.Exec) error {
	st := &state{used: make([]bool, ringSlots)}
	var err error
	if st.load, err = x.NewStream("load"); err != nil {
		return err
	}
	if st.scatter, err = x.NewStream("scatter"); err != nil {
		return err
	}
	if st.side, err = x.NewStream("side"); err != nil {
		return err
	}
	if st.counter, err = x.NewCounter("layers done"); err != nil {
		return err
	}
	for i := range ringSlots {
		slot, err := x.Scratch(fmt.Sprintf("staging slot %d", i), slotBytes)
		if err != nil {
			return err
		}
		st.slots = append(st.slots, slot)
		in, err := x.NewEvent("slot filled")
		if err != nil {
			return err
		}
		out, err := x.NewEvent("slot emptied")
		if err != nil {
			return err
		}
		st.in, st.out = append(st.in, in), append(st.out, out)
	}
	x.State = st
	return nil
}

func (k *kernel) state(x *load.Exec) (*state, error) {
	st, ok := x.State.(*state)
	if !ok {
		return nil, errors.New("layerload: no streams for this attach (PrepareLoad was not called)")
	}
	return st, nil
}

// layerEvent is layer l's event, made on first use and reused by every
// later load.
func (st *state) layerEvent(x *load.Exec, l int) (*load.Event, error) {
	for len(st.layers) <= l {
		e, err := x.NewEvent("layer loaded")
		if err != nil {
			return nil, err
		}
		st.layers = append(st.layers, e)
	}
	return st.layers[l], nil
}

// Plugin is what the plugin serves; tests link it in-process.
var Plugin = sdk.Plugin{
	Name:     "layerload",
	Version:  "1.0.0",
	Doc:      "layer-wise host → device KV load with per-layer gates, and a side-stream page store (DeepSeek-V4's KV, index-K and scales)",
	Variants: variants,
	Geometry: geometry,
	Kernel:   &kernel{},
	Kinds:    []sdk.Kind{load.Kind},
}

// geometry lists the layouts of the buffers it loads; it copies whole
// pages of whatever bytes per page the harness says.
func geometry(_ string, headDim, pageSize int) []sdk.Geometry {
	var out []sdk.Geometry
	for _, name := range []string{"bf16", "fp8-paged", "fp8-rows"} {
		if l, err := layout.Builtin(name, headDim, pageSize); err == nil {
			out = append(out, sdk.Geometry{Layout: name, BytesPerToken: l.BytesPerToken(), BytesPerPage: l.PageBytes()})
		}
	}
	return out
}
