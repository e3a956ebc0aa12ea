// Package kernel is the pdtransfer plugin: a prefill → decode page transfer
// that builds descriptors the way serving engines do (SGLang's NIXL and
// Mooncake connectors) and executes them, on host shared memory or with
// cuMemcpyDtoDAsync on the GPU. For every buffer and every room it sends
// one descriptor per run of pages contiguous on both sides, from the
// buffer's registered base: src = base + page × item_len, length =
// item_len × run, item_len = the buffer's bytes per page.
//
// Its variants put back, one at a time, the transfer bugs real deployments
// shipped.
package kernel

import (
	"context"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/transfer"
)

var variants = []sdk.Variant{
	{Name: "fp8-item-len", Doc: "the bf16 buffer's descriptors use an fp8 buffer's item_len, (D+4)·P: every page is copied short and shifted"},
	{Name: "skip-buffer", Doc: "the index-K (fp8-paged) buffer is never sent (sglang #24878: Mooncake lacked the state branch)"},
	{Name: "base-addr-dedup", Doc: "buffers carved from one allocation are registered once by base address and sent as one, with the first buffer's item_len (vllm #57661)"},
	{Name: "legacy-page-map", Doc: "the first buffer's page table is applied to every buffer (tokenspeed #660)"},
	{Name: "last-run-truncated", Doc: "each room's last run of pages is sent one page short"},
	{Name: "offset-int32", Doc: "computes a page's byte offset, page × item_len, in a signed 32-bit integer: in a pool past 2 GiB the offset wraps, and the copy lands 4 GiB early (or leaves the arena)"},
	{Name: "run-crosses-64", Doc: "a run of pages that crosses a multiple of 64 pages (a registration chunk) is split there, and its part past the boundary is read from the run's first page again"},
}

// kernel is the transfer on both backends: the descriptors are built on
// the host either way; only the copy differs.
type kernel struct{}

// Transfer implements transfer.Transferer.
func (kernel) Transfer(_ context.Context, c *transfer.Call) ([]sdk.Descriptor, error) {
	ds, err := newEngine(c.Variant, c.Pools, c.Buffers).build(c.Rooms)
	if err != nil {
		return nil, err
	}
	return ds, c.Copy(ds)
}

// TransferDevice implements transfer.DeviceTransferer: one cuMemcpyDtoDAsync per
// descriptor on the plugin's stream.
func (kernel) TransferDevice(_ context.Context, c *transfer.DeviceCall) ([]sdk.Descriptor, error) {
	ds, err := newEngine(c.Variant, c.Pools, c.Buffers).build(c.Rooms)
	if err != nil {
		return nil, err
	}
	return ds, c.Copy(ds)
}

// Plugin is what the plugin serves; tests link it in-process.
var Plugin = sdk.Plugin{
	Name:     "pdtransfer",
	Version:  "1.0.0",
	Doc:      "descriptor-based prefill → decode page transfer over multi-buffer KV caches",
	Variants: variants,
	Geometry: geometry,
	Kernel:   kernel{},
	Kinds:    []sdk.Kind{transfer.Kind},
}
