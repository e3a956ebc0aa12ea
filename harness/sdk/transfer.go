package sdk

import (
	"context"
	"fmt"
)

// TransferBuffer is one buffer of a transfer: its pool on the prefill side
// (Src) and on the decode side (Dst), and what their names say about it.
type TransferBuffer struct {
	Index int    // position in the request's buffers: what Descriptor.Buffer names
	Name  string // the buffer, e.g. "L0.kv"
	Src   Pool
	Dst   Pool
	Alloc string // allocation key (PoolName.AllocKey): buffers of one key share a base address
	Shift int    // page table: a room's page p is physical page (p+Shift) mod Pages()
}

// Pages is the number of pages of the buffer's pools.
func (b TransferBuffer) Pages() int { return poolPages(b.Src) }

// Phys maps a room's page to the buffer's physical page, through its page
// table.
func (b TransferBuffer) Phys(page int64) int64 { return physPage(page, b.Shift, b.Pages()) }

// poolPages is the number of pages of a pool: its slots, a partial last
// page included.
func poolPages(p Pool) int {
	return (p.Slots + p.Layout.PageSize - 1) / p.Layout.PageSize
}

// physPage maps a room's page through a buffer's page table: a rotation by
// shift of its pages.
func physPage(page int64, shift, pages int) int64 { return (page + int64(shift)) % int64(pages) }

// TransferRoom is one request: its i-th page on the prefill side, Src[i],
// goes to Dst[i] on the decode side, in every buffer. Pages are logical:
// each buffer maps them through its page table.
type TransferRoom struct {
	ID  uint64
	Src []int64
	Dst []int64
}

// Descriptor is one contiguous copy, as NIXL and Mooncake take them: Length
// bytes from arena offset Src to arena offset Dst. ItemLen and Run say
// what the kernel believed: the bytes of one page of the buffer, and how
// many consecutive pages the copy covers (Length = ItemLen × Run).
type Descriptor struct {
	Room    uint64
	Buffer  int
	Src     int
	Dst     int
	Length  int
	ItemLen int
	Run     int
}

// TransferCall is one transfer on host shared memory: copy every room's
// pages of every buffer from its prefill pool to its decode pool, building
// descriptors the way a serving engine does and executing them.
type TransferCall struct {
	Variant string
	Arena   []byte // the whole arena, guards and staging included
	Pools   []Pool // every attached pool, both sides: the memory an engine registers
	Buffers []TransferBuffer
	Rooms   []TransferRoom
}

// Transferer is a transfer kernel over host memory. Transfer returns the
// descriptors it built and has executed (with Copy, or its own transport)
// by the time it returns; the harness checks both.
type Transferer interface {
	Transfer(ctx context.Context, call *TransferCall) ([]Descriptor, error)
}

// Copy executes descriptors the way a transfer engine does: one memmove
// each, in order, trusting every offset. It refuses only a copy that
// leaves the arena (the real engine would fault); a copy to the wrong place
// inside it is the harness's to find.
func (c *TransferCall) Copy(ds []Descriptor) error {
	if err := inArena(ds, len(c.Arena)); err != nil {
		return err
	}
	for _, d := range ds {
		copy(c.Arena[d.Dst:d.Dst+d.Length], c.Arena[d.Src:d.Src+d.Length])
	}
	return nil
}

// inArena checks that every descriptor's two ranges lie in an arena of
// size bytes.
func inArena(ds []Descriptor, size int) error {
	for i, d := range ds {
		if d.Length < 0 || d.Src < 0 || d.Dst < 0 || d.Src > size-d.Length || d.Dst > size-d.Length {
			return fmt.Errorf("descriptor %d %+v leaves the %d-byte arena", i, d, size)
		}
	}
	return nil
}
