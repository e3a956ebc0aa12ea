// Package sdk turns a Go kernel into a kvharness plugin: what every plugin
// needs, whatever kinds of kernel it serves.
//
// A plugin author fills in a [Plugin] — name, variants, the geometry the
// kernel's own code uses — with a kernel value and the kinds it serves,
// each from its own package (store.Kind, read.Kind, transfer.Kind,
// load.Kind, pdasync.Kind), then calls [Serve] from main:
//
//	func main() {
//		sdk.Serve(sdk.Plugin{
//			Name: "mystore", Version: "0.1.0",
//			Geometry: func(variant string, headDim, pageSize int) []sdk.Geometry {
//				return []sdk.Geometry{{Layout: "bf16", BytesPerToken: 2 * headDim, BytesPerPage: 2 * headDim * pageSize}}
//			},
//			Kernel: mystore{}, // implements store.Storer
//			Kinds:  []sdk.Kind{store.Kind},
//		})
//	}
//
// The SDK speaks the go-plugin handshake and serves the base service
// (Describe, Attach, Detach, Bench) beside each kind's service on the one
// connection: the services a plugin registers are the kinds it advertises.
// It maps the harness's arena (host shared memory, or a CUDA allocation it
// imports), checks the attach's pools and staging against it, and keeps
// the attachment ([Server]) that each kind's handlers read under one
// lock. A kind's package checks its own requests and hands the kernel
// plain slices or device pointers.
//
// # What a kernel declares
//
// Besides its bytes per token and page, a kernel declares per layout how it
// quantizes ([Geometry].Recipe: its floor, x/s or x*(1/s), its scale
// tolerance), and once its slot index width ([Plugin].SlotBits, 32 or 64,
// a variant may differ) and what its read does with ±Inf and NaN
// ([Plugin].ReadNonFinite: layout.Contained, or nothing for finite values
// only). The harness judges fp8 bytes against the declared recipe, and
// stages loc at the declared width. A declaration no harness can honour (a
// recipe out of bounds, 16-bit slots, a read policy other than contained)
// fails the first Describe, naming the field; a kind the kernel does not
// implement stops the plugin as it starts.
//
// # CUDA
//
// When the harness attaches a CUDA arena (Arena.backend BACKEND_CUDA), the
// SDK opens the device once per process, maps the arena (imported from the
// file descriptor the harness's socket hands out, or opened through its
// IPC handle) and creates a stream ([DeviceArena]), and lets a kernel that
// implements [DevicePreparer] compile for the pools. Kinds queue their
// kernels on that stream and wait for it before they answer; a failed wait
// is a device fault ([DeviceFault]), which the harness reports as a crash.
// [DeviceArena.Graph] captures and replays CUDA graphs per key.
//
// # Bench
//
// Bench times, inside the plugin and with no RPC in the timed loop, the
// store (the launches its kind registers, [Bencher]), a same-size copy
// (the roofline) or an empty launch (the overhead floor): per launch (CUDA
// events around each launch and a sync, or the monotonic clock on the CPU)
// or per batch of back-to-back launches, optionally flushing the caches
// before each measurement.
//
// # Doorbell
//
// A kind may answer a batched call through a doorbell in host shared
// memory ([Server.Ring]): the store's StoreBatch, a round trip of two futex
// wakes instead of a gRPC call.
package sdk
