// Package load serves the load kind: layer loads and stream ordering. A
// kernel ([LayerLoader], [PageStorer]) queues its work on the SDK's
// streams, events and counters ([Exec]), which have CUDA's semantics on
// both backends: real CUDA streams, events and stream memory operations
// on the GPU, streams the SDK runs itself on the CPU, so one source runs
// and is tested on either. The SDK plays the engine around the kernel:
// for a Load request it holds the case's late copies behind a latch
// (cuStreamWaitValue32 on a flag on the GPU), fails the copies the case
// makes fail, calls the kernel's gate for each layer and buffer and
// queues the consumer's probe of the pages after it, waits at each step
// until everything not held has run, releases the latch, and answers the
// gates and the log of every stream operation, which the harness's
// happens-before checker reads. A plugin lists [Kind] in
// sdk.Plugin.Kinds.
package load

import "context"

// LayerLoader is a layer-load kernel, shaped as the engines' are (SGLang's
// HiCache load_to_device_per_layer and wait_layer_transfer, vLLM's
// start_load_kv and wait_for_layer_load): StartLoad queues every layer's
// copies from the host pool to the device pools on the plugin's own
// streams and records, however the plugin likes (events, a counter, a
// ring), when each layer is in; WaitLayer is the consumer's gate, called
// before the consumer reads a layer's buffer.
//
// The harness is the consumer: for each layer in order, and each buffer
// in the case's reading order, it calls WaitLayer with its consumer
// stream and then queues a read of that buffer's pages of the layer on
// that stream. The gate must make the stream wait (not the host): the
// harness holds some of the plugin's copies until the consumer is queued,
// so a gate that waits on the host never returns.
type LayerLoader interface {
	// StartLoad queues the copies of c.Pages of every layer and buffer,
	// from c.Src to c.Dst, and returns without waiting for them. A copy
	// the harness made fail returns an error wrapping ErrLoadFailed; the
	// load goes on, and that layer's gate reports the failure. An error
	// from StartLoad itself fails every gate of the call.
	StartLoad(ctx context.Context, c *Call) error
	// WaitLayer makes s wait until the layer's pages of the buffer are in
	// the device pool. An error says they will not be (the layer's load
	// failed): the consumer then does not read them.
	WaitLayer(ctx context.Context, c *Call, layer, buffer int, s *Stream) error
}

// PageStorer writes device pages for a caller's stream on streams of its
// own (the multi-stream overlap of DeepSeek-V4's indexer: the store runs
// on a side stream while the main stream goes on). The call is made "on"
// c.Caller: its copies must not read their inputs before the work queued
// on c.Caller before the call (the caller wrote them there, and readers
// there may still hold the destination pages), and work queued on
// c.Caller after it returns must see the pages stored.
type PageStorer interface {
	StorePages(ctx context.Context, c *PageStoreCall) error
}

// Preparer is optionally implemented by a LayerLoader or PageStorer
// that makes its streams, events and counters once per attach.
type Preparer interface {
	PrepareLoad(ctx context.Context, x *Exec) error
}

// Buffer is one buffer of every layer of a call: "kv", "indexk",
// "scales", and the bytes of one of its pages.
type Buffer struct {
	Name      string
	PageBytes int
}

// Page is one page of a call, the same in every layer and buffer:
// page Src of the source goes to page Dst of the device pool.
type Page struct {
	Src, Dst int
}

// Call is one load: pages of layers 0..Layers-1 of every buffer.
type Call struct {
	Variant string
	Exec    *Exec
	Layers  int
	// FirstLayer is the global id of local layer 0: a pipeline stage's
	// first layer. Layer arguments are local.
	FirstLayer int
	Buffers    []Buffer
	Pages      []Page
	// Prior is the stream where readers of the destination pages may
	// still run (the previous step's attention): no copy may overwrite a
	// page before the work queued there has finished.
	Prior *Stream
	// State is the plugin's: what StartLoad leaves for WaitLayer.
	State any

	pages *pageTable
}

// Src is the host page i of a layer's buffer.
func (c *Call) Src(layer, buffer, i int) Ref { return c.pages.src(layer, buffer, i) }

// Dst is the device page i of a layer's buffer.
func (c *Call) Dst(layer, buffer, i int) Ref { return c.pages.dst(layer, buffer, i) }

// SrcPool is the start of a layer's buffer's host pool, for a kernel
// that computes page addresses itself, as engines do: host page p is
// p × PageBytes bytes on (Src(layer, buffer, i) is Pages[i].Src's).
// A far pool's offsets pass 2^32.
func (c *Call) SrcPool(layer, buffer int) Ref { return c.pages.srcPools[layer][buffer] }

// DstPool is the start of a layer's buffer's device pool: device page p
// is p × PageBytes bytes on.
func (c *Call) DstPool(layer, buffer int) Ref { return c.pages.dstPools[layer][buffer] }

// PageStoreCall is one layer's store: every buffer's c.Pages, from the
// inputs (c.Src) to the device pool (c.Dst), for c.Caller.
type PageStoreCall struct {
	Variant    string
	Exec       *Exec
	Layer      int
	FirstLayer int
	Buffers    []Buffer
	Pages      []Page
	Caller     *Stream

	pages *pageTable
}

// Src is the input page i of the layer's buffer.
func (c *PageStoreCall) Src(buffer, i int) Ref { return c.pages.src(c.Layer, buffer, i) }

// Dst is the device page i of the layer's buffer.
func (c *PageStoreCall) Dst(buffer, i int) Ref { return c.pages.dst(c.Layer, buffer, i) }

// DstPool is the start of the layer's buffer's device pool: device page
// p is p × PageBytes bytes on.
func (c *PageStoreCall) DstPool(buffer int) Ref { return c.pages.dstPools[c.Layer][buffer] }

// pageTable resolves a call's pages to memory: by layer, buffer and page,
// where each page's source and destination start; by layer and buffer,
// where their pools start (a store's sources are staging, no pool).
type pageTable struct {
	srcs, dsts         [][][]Ref
	srcPools, dstPools [][]Ref
}

func (t *pageTable) src(layer, buffer, i int) Ref { return t.srcs[layer][buffer][i] }
func (t *pageTable) dst(layer, buffer, i int) Ref { return t.dsts[layer][buffer][i] }

// implements reports whether a kernel value implements K.
func implements[K any](kernel any) bool {
	_, ok := kernel.(K)
	return ok
}
