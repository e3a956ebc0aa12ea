package sdk

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// The transfer kinds (transfer, pdasync) move pages of multi-buffer KV
// caches between a prefill server's pools and a decode server's; these
// are the types they share, as their wire shares kvpb.Descriptor.

// Buffer is one buffer of a transfer: its pool on the prefill side (Src)
// and on the decode side (Dst), and what the harness says about it.
type Buffer struct {
	Index int    // position in the request's buffers: what Descriptor.Buffer names
	Name  string // the buffer, e.g. "L0.kv"
	Src   Pool
	Dst   Pool
	// Alloc is the allocation the buffer is carved from: buffers of a side
	// with the same key share one registered base address, as tensors
	// shared by two layer groups do.
	Alloc string
	Shift int // page table: a room's page p is physical page (p+Shift) mod Pages()
}

// Pages is the number of pages of the buffer's pools.
func (b Buffer) Pages() int {
	if b.Src.Layout.PageSize > 0 {
		return b.Src.Pages()
	}
	return b.Dst.Pages()
}

// Phys maps a room's page to the buffer's physical page, through its page
// table: a rotation by Shift of its pages.
func (b Buffer) Phys(page int64) int64 { return (page + int64(b.Shift)) % int64(b.Pages()) }

// String names a transfer buffer for errors and logs.
func (b Buffer) String() string {
	return fmt.Sprintf("buffer %d %s (%s, %d pages, alloc %s, shift %d)", b.Index, b.Name, b.Dst.Layout.Name, b.Pages(), b.Alloc, b.Shift)
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

// InArena checks that every descriptor's two ranges lie in an arena of
// size bytes: a copy that leaves it would fault in a real engine.
func InArena(ds []Descriptor, size int) error {
	for i, d := range ds {
		if d.Length < 0 || d.Src < 0 || d.Dst < 0 || d.Src > size-d.Length || d.Dst > size-d.Length {
			return fmt.Errorf("descriptor %d %+v leaves the %d-byte arena", i, d, size)
		}
	}
	return nil
}

// DescriptorsProto puts a kernel's descriptors on the wire. A negative
// field cannot be sent, and is the kernel's fault.
func DescriptorsProto(ds []Descriptor) ([]*kvpb.Descriptor, error) {
	out := make([]*kvpb.Descriptor, len(ds))
	for i, d := range ds {
		if d.Buffer < 0 || d.Src < 0 || d.Dst < 0 || d.Length < 0 || d.ItemLen < 0 || d.Run < 0 {
			return nil, status.Errorf(codes.Aborted, "transfer kernel failed: descriptor %d %+v has a negative field", i, d)
		}
		out[i] = &kvpb.Descriptor{Room: d.Room, Buffer: uint32(d.Buffer), SrcOffset: uint64(d.Src), DstOffset: uint64(d.Dst),
			Length: uint64(d.Length), ItemLen: uint64(d.ItemLen), Run: uint64(d.Run)}
	}
	return out, nil
}

// BufferOf is the buffer pool p holds, or an error naming the pool when
// the attach gave it none with a side (PoolDesc.buffer): a transfer kind
// pairs its pools by buffer.
func BufferOf(p Pool) (PoolBuffer, error) {
	if b := p.Buffer; b != nil && b.Name != "" && (b.Side == SideSrc || b.Side == SideDst) {
		return *b, nil
	}
	return PoolBuffer{}, fmt.Errorf("pool %q has no buffer with side src or dst (PoolDesc.buffer); each pool of a transfer carries its own", p.Name)
}
