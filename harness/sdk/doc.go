// Package sdk turns a Go kernel into a kvharness plugin.
//
// A plugin author fills in a [Plugin] — name, variants, the geometry the
// kernel's own code uses — and a kernel value implementing [Storer] (host
// memory), [DeviceStorer] (CUDA), or both, then calls [Serve] from main.
// The SDK speaks the go-plugin handshake, maps the harness's arena, checks
// every request's offsets against it, and hands the kernel plain slices or
// device pointers: the arena, the input rows, the slot list.
//
//	func main() {
//		sdk.Serve(sdk.Plugin{
//			Name: "mystore", Version: "0.1.0",
//			Geometry: func(variant string, headDim, pageSize int) []sdk.Geometry {
//				return []sdk.Geometry{{Layout: "bf16", BytesPerToken: 2 * headDim, BytesPerPage: 2 * headDim * pageSize}}
//			},
//			Kernel: store{},
//		})
//	}
//
// The kernel writes through StoreCall.Arena at StoreCall.Pool.Base plus its
// own offsets. The arena includes the guard zones, so a kernel that writes
// slot -1 lands in a guard the harness checks, exactly as a CUDA kernel
// would; a write outside the arena panics, and the harness reports the
// plugin as crashed.
//
// # What a kernel declares
//
// Besides its bytes per token and page, a kernel declares per layout how it
// quantizes ([Geometry].Recipe: its floor, x/s or x*(1/s), its scale
// tolerance), and once its slot index width ([Plugin].SlotBits, 32 or 64,
// a variant may differ). The harness judges fp8 bytes against the
// declared recipe, and stages loc at the declared width; the SDK refuses
// a store staged at another width, and hands a 32-bit kernel both the
// int32 staging ([StoreCall].Loc32) and the slots widened (Loc). A
// declaration no harness can honour (a recipe out of bounds, 16-bit
// slots) fails the first Describe, naming the field.
//
// # CUDA
//
// When the harness attaches a CUDA arena (Arena.backend BACKEND_CUDA), the
// SDK opens the device once per process, maps the arena (imported from
// the file descriptor the harness's socket hands out, or opened through
// its IPC handle) and creates a stream, then calls the kernel's StoreDevice with device
// pointers ([DeviceStoreCall]). StoreDevice only enqueues on that stream;
// the SDK synchronises before it answers. Before every launch or graph
// replay the SDK writes the valid count n into a per-pool device int32
// (DeviceStoreCall.Valid), the way serving engines feed a captured graph.
//
// In graph mode (StoreRequest.graph) the first call of each shape — pool,
// capacity, padding, rows and loc offsets, variant — is captured into a
// CUDA graph and later calls replay it with only n rewritten. That is how
// the incident happened: a pad-unaware scatter captured at capacity C and
// replayed with fewer valid rows writes the padded rows' slots.
//
// # Layer loads and streams
//
// A load kernel ([LayerLoader], [PageStorer]) queues its work on the SDK's
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
// happens-before checker reads.
//
// # Bench
//
// Bench times, inside the plugin and with no RPC in the timed loop, the
// store, a same-size copy (the roofline) or an empty launch (the overhead
// floor): per launch (CUDA events around each launch and a sync, or the
// monotonic clock on the CPU) or per batch of back-to-back launches,
// optionally flushing the caches before each measurement.
package sdk
