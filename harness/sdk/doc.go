// Package sdk turns a Go kernel into a kvharness plugin.
//
// A plugin author fills in a [Plugin] — name, variants, the geometry the
// kernel's own code uses — and a kernel value implementing [Storer] (and,
// as they land, the read and transfer interfaces), then calls [Serve] from
// main. The SDK speaks the go-plugin handshake, maps the harness's arena,
// checks every request's offsets against it, and hands the kernel plain
// slices: the arena, the input rows, the slot list.
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
package sdk
