package kernel

import (
	"context"
	"sync"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/transfer"
)

// Transfer implements transfer.Transferer: a descriptor per page of every
// room in every buffer, each page's bytes through the buffer's page
// table, copied in order.
func (k *kernel) Transfer(_ context.Context, c *transfer.Call) ([]sdk.Descriptor, error) {
	var ds []sdk.Descriptor
	for _, b := range c.Buffers {
		n := b.Src.Bytes / b.Pages()
		for _, r := range c.Rooms {
			for i := range r.Src {
				ds = append(ds, sdk.Descriptor{Room: r.ID, Buffer: b.Index, Src: b.Src.Base + int(b.Phys(r.Src[i]))*n,
					Dst: b.Dst.Base + int(b.Phys(r.Dst[i]))*n, Length: n, ItemLen: n, Run: 1})
			}
		}
	}
	if c.Variant == "transfer-resend" {
		ds = k.sent.resend(ds)
	}
	return ds, c.Copy(ds)
}

// resent is the transfer-resend variant's memory: the previous call's
// descriptors.
type resent struct {
	mu   sync.Mutex
	last []sdk.Descriptor
}

// reset forgets the previous call.
func (r *resent) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = nil
}

// resend returns the previous call's descriptors followed by ds (a retry
// queue drained before the new room is sent), and keeps ds for the next
// call: delivery at least once, without deduplication.
func (r *resent) resend(ds []sdk.Descriptor) []sdk.Descriptor {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append(append([]sdk.Descriptor(nil), r.last...), ds...)
	r.last = ds
	return out
}
