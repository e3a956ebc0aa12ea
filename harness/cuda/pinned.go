package cuda

import (
	"fmt"
	"unsafe"
)

// Pinned is page-locked host memory. Copies between it and the device are
// DMA straight from its pages, where a copy from Go's pageable memory goes
// through the driver's staging buffers; for the small copies a checked case
// makes, that is most of their latency.
type Pinned struct {
	d *Device
	p unsafe.Pointer
	n int
}

// AllocPinned allocates n bytes of page-locked host memory (cuMemAllocHost).
func (d *Device) AllocPinned(n int) (*Pinned, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: AllocPinned(%d): size must be positive", n)
	}
	h := &Pinned{d: d, n: n}
	err := d.call(func(a *driverAPI) error { return check("cuMemAllocHost", a.cuMemAllocHost(&h.p, uint64(n))) })
	if err != nil {
		return nil, fmt.Errorf("allocate %d bytes of pinned host memory: %w", n, err)
	}
	return h, nil
}

// Bytes is the memory, valid until Free.
func (h *Pinned) Bytes() []byte { return unsafe.Slice((*byte)(h.p), h.n) }

// Free releases the memory; Bytes must not be used afterwards.
func (h *Pinned) Free() error {
	if h == nil || h.p == nil {
		return nil
	}
	err := h.d.call(func(a *driverAPI) error { return check("cuMemFreeHost", a.cuMemFreeHost(h.p)) })
	h.p = nil
	return err
}
