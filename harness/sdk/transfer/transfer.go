// Package transfer serves the transfer kind: a kernel that copies rooms'
// pages from a prefill server's pools to a decode server's and returns
// the descriptors it built (disaggregated serving's KV transfer), on host
// memory ([Transferer]), CUDA memory ([DeviceTransferer]) or both. A
// plugin lists [Kind] in sdk.Plugin.Kinds.
package transfer

import (
	"context"

	"github.com/kvharness/kvharness/harness/sdk"
)

// Buffer is one buffer of a transfer: its pool on the prefill side (Src)
// and on the decode side (Dst), its allocation and its page table.
type Buffer = sdk.Buffer

// Room is one request: its i-th page on the prefill side, Src[i],
// goes to Dst[i] on the decode side, in every buffer. Pages are logical:
// each buffer maps them through its page table.
type Room struct {
	ID  uint64
	Src []int64
	Dst []int64
}

// Call is one transfer on host shared memory: copy every room's
// pages of every buffer from its prefill pool to its decode pool, building
// descriptors the way a serving engine does and executing them.
type Call struct {
	Variant string
	Arena   []byte     // the whole arena, guards and staging included
	Pools   []sdk.Pool // every attached pool, both sides: the memory an engine registers
	Buffers []Buffer
	Rooms   []Room
}

// Transferer is a transfer kernel over host memory. Transfer returns the
// descriptors it built and has executed (with Copy, or its own transport)
// by the time it returns; the harness checks both.
type Transferer interface {
	Transfer(ctx context.Context, call *Call) ([]sdk.Descriptor, error)
}

// Copy executes descriptors the way a transfer engine does: one memmove
// each, in order, trusting every offset. It refuses only a copy that
// leaves the arena (the real engine would fault); a copy to the wrong place
// inside it is the harness's to find.
func (c *Call) Copy(ds []sdk.Descriptor) error {
	if err := sdk.InArena(ds, len(c.Arena)); err != nil {
		return err
	}
	for _, d := range ds {
		copy(c.Arena[d.Dst:d.Dst+d.Length], c.Arena[d.Src:d.Src+d.Length])
	}
	return nil
}
