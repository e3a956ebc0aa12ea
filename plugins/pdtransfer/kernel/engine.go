package kernel

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/transfer"
)

// engine builds the descriptors of one transfer.
type engine struct {
	variant string
	pools   []sdk.Pool // every attached pool: what the engine registered
	buffers []transfer.Buffer
}

func newEngine(variant string, pools []sdk.Pool, buffers []transfer.Buffer) *engine {
	return &engine{variant: variant, pools: pools, buffers: buffers}
}

// registration is the memory a buffer's descriptors are computed from: the
// base addresses of its two pools and the size of a page.
type registration struct {
	srcBase, dstBase, itemLen int
}

// build returns, buffer by buffer and room by room, a descriptor per run.
func (e *engine) build(rooms []transfer.Room) ([]sdk.Descriptor, error) {
	var out []sdk.Descriptor
	for _, b := range e.buffers {
		if e.variant == "skip-buffer" && b.Src.Layout.Name == "fp8-paged" {
			continue
		}
		reg, merged, err := e.register(b)
		if err != nil {
			return nil, err
		}
		if merged {
			continue // sent as part of the buffer it was merged with
		}
		for _, r := range rooms {
			out = append(out, e.room(b, reg, r)...)
		}
	}
	return out, nil
}

// register returns the registration a buffer's descriptors use. Correctly,
// each buffer is registered on its own. Under base-addr-dedup, the engine
// keyed its registrations by base address, so a buffer carved from another
// buffer's allocation resolves to that buffer's registration: it is merged
// into it when both are sent, and sent with its base and item_len when not.
func (e *engine) register(b transfer.Buffer) (registration, bool, error) {
	owner := b
	if e.variant == "base-addr-dedup" {
		o, err := e.allocOwner(b)
		if err != nil {
			return registration{}, false, err
		}
		owner = o
	}
	itemLen, err := e.itemLen(owner)
	reg := registration{srcBase: owner.Src.Base, dstBase: owner.Dst.Base, itemLen: itemLen}
	return reg, owner.Name != b.Name && e.sends(owner.Name), err
}

// allocOwner is the first attached buffer of b's allocation: the one whose
// base address the allocation was registered under.
func (e *engine) allocOwner(b transfer.Buffer) (transfer.Buffer, error) {
	for _, p := range e.pools {
		n, err := sdk.BufferOf(p)
		if err != nil {
			return b, err
		}
		if n.Side != sdk.SideSrc || n.AllocKey() != b.Alloc {
			continue
		}
		dst, err := e.pool(sdk.SideDst, n.Name)
		return transfer.Buffer{Name: n.Name, Src: p, Dst: dst, Alloc: n.AllocKey(), Shift: n.Shift}, err
	}
	return b, nil
}

func (e *engine) pool(side, buffer string) (sdk.Pool, error) {
	for _, p := range e.pools {
		if n, err := sdk.BufferOf(p); err == nil && n.Side == side && n.Name == buffer {
			return p, nil
		}
	}
	return sdk.Pool{}, fmt.Errorf("no %s pool of buffer %s is attached", side, buffer)
}

func (e *engine) sends(buffer string) bool {
	for _, b := range e.buffers {
		if b.Name == buffer {
			return true
		}
	}
	return false
}

// itemLen is the bytes of one page of a buffer, as the engine computes it.
func (e *engine) itemLen(b transfer.Buffer) (int, error) {
	l := b.Src.Layout
	if e.variant == "fp8-item-len" && l.Name == "bf16" {
		return (l.HeadDim + 4) * l.PageSize, nil // the index-K cache's item_len
	}
	return pageBytes(l)
}

// room returns buffer b's descriptors for one room: a descriptor per run
// of pages that are consecutive on both sides, in room order.
func (e *engine) room(b transfer.Buffer, reg registration, r transfer.Room) []sdk.Descriptor {
	table := b
	if e.variant == "legacy-page-map" {
		table = e.buffers[0]
	}
	pages := int64(b.Pages())
	phys := func(p int64) int64 { return (p + int64(table.Shift)) % pages }
	var out []sdk.Descriptor
	for i := 0; i < len(r.Src); {
		src, dst := phys(r.Src[i]), phys(r.Dst[i])
		n := 1
		for i+n < len(r.Src) && phys(r.Src[i+n]) == src+int64(n) && phys(r.Dst[i+n]) == dst+int64(n) {
			n++
		}
		run := n
		if e.variant == "last-run-truncated" && i+n == len(r.Src) {
			run--
		}
		if e.variant == "run-crosses-64" && src/chunkPages != (src+int64(run)-1)/chunkPages {
			// The bug: the part past the chunk boundary restarts at src.
			head := int((src/chunkPages+1)*chunkPages - src)
			out = append(out, descriptor(r.ID, b.Index, reg, src, dst, head), descriptor(r.ID, b.Index, reg, src, dst+int64(head), run-head))
		} else if run > 0 {
			out = append(out, e.descriptor(r.ID, b.Index, reg, src, dst, run))
		}
		i += n
	}
	return out
}

// chunkPages is the registration chunk run-crosses-64 splits runs at.
const chunkPages = 64

// descriptor is the package's descriptor, or, under offset-int32, one whose
// page offsets were computed in 32 bits.
func (e *engine) descriptor(room uint64, buffer int, reg registration, src, dst int64, run int) sdk.Descriptor {
	d := descriptor(room, buffer, reg, src, dst, run)
	if e.variant == "offset-int32" {
		// The bug: int32 page × int32 item_len, which wraps past 2 GiB.
		d.Src = reg.srcBase + int(int32(src)*int32(reg.itemLen))
		d.Dst = reg.dstBase + int(int32(dst)*int32(reg.itemLen))
	}
	return d
}

// descriptor copies run pages from source page src to destination page dst.
func descriptor(room uint64, buffer int, reg registration, src, dst int64, run int) sdk.Descriptor {
	return sdk.Descriptor{Room: room, Buffer: buffer, Src: reg.srcBase + int(src)*reg.itemLen, Dst: reg.dstBase + int(dst)*reg.itemLen,
		Length: run * reg.itemLen, ItemLen: reg.itemLen, Run: run}
}
