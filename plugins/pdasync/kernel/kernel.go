// Package kernel is the pdasync plugin: an asynchronous prefill → decode
// transfer engine in the shape of SGLang's and vLLM's NIXL connectors.
// One process of it plays the prefill server: it builds a descriptor per
// run of pages contiguous on both sides (pdtransfer's rule), posts each
// handle's descriptors on the SDK's transport, polls the handles and
// raises a notification per handle and per component once it has ended.
// Another process plays the decode server: it translates a room's virtual
// pages through its page table, counts the notifications, reads the room
// (digests) once every handle and every component completed, and frees an
// aborted or failed room's pages once every handle has ended.
//
// Its variants put back, one at a time, the completion bugs real
// deployments shipped.
package kernel

import (
	"context"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/pdasync"
	pdtransfer "github.com/kvharness/kvharness/plugins/pdtransfer/kernel"
)

// The variants: each the bug of one public report.
const (
	AbortFreesInFlight = "abort-frees-in-flight"
	FirstComponentDone = "first-component-done"
	FirstFailureFrees  = "first-failure-frees"
	VirtualAsPhysical  = "virtual-as-physical"
	PollAsCompletion   = "poll-as-completion"
	FailureUnreported  = "failure-unreported"
	OffsetInt32        = "offset-int32"
)

var variants = sdk.KernelVariants(pdasync.Name, []sdk.Variant{
	{Name: AbortFreesInFlight,
		Doc: "an aborted room's pages are freed at once, while the prefill's copies into them are still in flight (sglang #24527)"},
	{Name: FirstComponentDone,
		Doc: "the decode declares a room done on the first component's notification, not the last (sglang #39846)"},
	{Name: FirstFailureFrees,
		Doc: "the first failed handle frees the room's pages while its sibling handles still write (vllm PR #56104)"},
	{Name: VirtualAsPhysical,
		Doc: "the decode sends its virtual page indices as physical ones, which differ once pages were compacted (sglang PR #31471)"},
	{Name: PollAsCompletion,
		Doc: "the prefill takes a successful poll for completion, though it only means the transfer started (ai-dynamo/nixl #182)"},
	{Name: FailureUnreported,
		Doc: "the prefill never reports a failed handle: it waits for the transfer to succeed, and the room never completes (a swallowed transfer error)"},
	{Name: OffsetInt32,
		Doc: "the prefill computes a page's byte offset, page × item_len, in a signed 32-bit integer: in a pool past 2 GiB the offset wraps, and the copy reads and lands 4 GiB early (or outside the arena)"},
})

// kernel starts an engine per role.
type kernel struct{}

// NewPrefill implements pdasync.Kernel.
func (kernel) NewPrefill(_ context.Context, a *pdasync.PrefillAttach) (pdasync.Prefill, error) {
	sizes, err := itemLens(a.Buffers)
	if err != nil {
		return nil, err
	}
	return &prefill{a: a, itemLen: sizes}, nil
}

// NewDecode implements pdasync.Kernel.
func (kernel) NewDecode(_ context.Context, a *pdasync.DecodeAttach) (pdasync.Decode, error) {
	sizes, err := itemLens(a.Buffers)
	if err != nil {
		return nil, err
	}
	return &decode{a: a, itemLen: sizes, rooms: map[uint64]*recvRoom{}}, nil
}

// itemLens is each buffer's page bytes as the engine computes them.
func itemLens(bufs []pdasync.Buffer) ([]int, error) {
	out := make([]int, len(bufs))
	for i, b := range bufs {
		n, err := pdtransfer.PageBytes(b.Dst.Layout)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// Plugin is what the plugin serves; tests link it in-process.
var Plugin = sdk.Plugin{
	Name:     "pdasync",
	Version:  "1.0.0",
	Doc:      "asynchronous prefill → decode transfer across two processes: gated copies, completion by notification",
	Variants: variants,
	Geometry: pdtransfer.Geometry,
	Kernel:   kernel{},
	Kinds:    []sdk.Kind{pdasync.Kind},
}
