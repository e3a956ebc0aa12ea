package cuda

import (
	"fmt"
	"unsafe"
)

// Ptr is a device address (CUdeviceptr). It is a plain number: the Go
// garbage collector neither sees nor frees what it points to.
type Ptr uint64

// Add offsets p by n bytes.
func (p Ptr) Add(n int) Ptr { return p + Ptr(n) }

// Alloc allocates n bytes of device memory (cuMemAlloc), aligned to at
// least 256 bytes. The memory is not cleared.
func (d *Device) Alloc(n int) (Ptr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cuda: Alloc(%d): size must be positive", n)
	}
	var p uint64
	err := d.checked("cuMemAlloc", func(a *driverAPI) Result { return a.cuMemAlloc(&p, uint64(n)) })
	if err != nil {
		return 0, fmt.Errorf("allocate %d bytes of device memory: %w", n, err)
	}
	return Ptr(p), nil
}

// Free releases an allocation made by Alloc.
func (d *Device) Free(p Ptr) error {
	return d.checked("cuMemFree", func(a *driverAPI) Result { return a.cuMemFree(uint64(p)) })
}

// The synchronous copies and sets run on the legacy default stream. The
// driver returns from cuMemcpyHtoD once a pageable source is staged, and from
// cuMemcpyDtoD and cuMemsetD8 once they are queued, before the bytes land; so
// HtoD, DtoD and Memset8 also wait for the legacy stream. Then work on any
// stream, or in another process mapping the memory, sees the new bytes.

// HtoD copies src to device address dst and waits until it has landed.
func (d *Device) HtoD(dst Ptr, src []byte) error {
	if len(src) == 0 {
		return d.usable()
	}
	return d.call(func(a *driverAPI) error {
		r := a.cuMemcpyHtoD(uint64(dst), unsafe.Pointer(&src[0]), uint64(len(src)))
		return settle(a, "cuMemcpyHtoD", r)
	})
}

// settle checks r and waits for the legacy stream.
func settle(a *driverAPI, op string, r Result) error {
	if err := check(op, r); err != nil {
		return err
	}
	return check("cuStreamSynchronize", a.cuStreamSynchronize(0))
}

// DtoH copies len(dst) bytes from device address src; into pageable memory
// the driver returns only when the copy is complete.
func (d *Device) DtoH(dst []byte, src Ptr) error {
	if len(dst) == 0 {
		return d.usable()
	}
	return d.checked("cuMemcpyDtoH", func(a *driverAPI) Result {
		return a.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), uint64(src), uint64(len(dst)))
	})
}

// DtoD copies n bytes between device addresses and waits for the copy.
func (d *Device) DtoD(dst, src Ptr, n int) error {
	if n < 0 {
		return fmt.Errorf("cuda: DtoD of %d bytes: size must not be negative", n)
	}
	return d.call(func(a *driverAPI) error {
		return settle(a, "cuMemcpyDtoD", a.cuMemcpyDtoD(uint64(dst), uint64(src), uint64(n)))
	})
}

// Memset8 sets n bytes at p to v and waits until they are set.
func (d *Device) Memset8(p Ptr, v byte, n int) error {
	if n < 0 {
		return fmt.Errorf("cuda: Memset8 of %d bytes: size must not be negative", n)
	}
	return d.call(func(a *driverAPI) error { return settle(a, "cuMemsetD8", a.cuMemsetD8(uint64(p), v, uint64(n))) })
}
