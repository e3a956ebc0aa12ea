package cuda

import (
	"fmt"
	"unsafe"
)

// The stream-ordered copies below take Go (pageable) memory. The driver stages
// a pageable source before HtoDAsync returns, and DtoHAsync into pageable
// memory returns only once the copy is done, so the Go slice may be reused as
// soon as the call returns; what is asynchronous is the ordering on the
// stream, not the lifetime of the host buffer.

// HtoDAsync copies src to dst in stream order.
func (s *Stream) HtoDAsync(dst Ptr, src []byte) error {
	if len(src) == 0 {
		return s.dev().usable()
	}
	return s.dev().checked("cuMemcpyHtoDAsync", func(a *driverAPI) Result {
		return a.cuMemcpyHtoDAsync(uint64(dst), unsafe.Pointer(&src[0]), uint64(len(src)), s.handle())
	})
}

// DtoHAsync copies len(dst) bytes from src in stream order.
func (s *Stream) DtoHAsync(dst []byte, src Ptr) error {
	if len(dst) == 0 {
		return s.dev().usable()
	}
	return s.dev().checked("cuMemcpyDtoHAsync", func(a *driverAPI) Result {
		return a.cuMemcpyDtoHAsync(unsafe.Pointer(&dst[0]), uint64(src), uint64(len(dst)), s.handle())
	})
}

// DtoDAsync copies n bytes between device addresses in stream order.
func (s *Stream) DtoDAsync(dst, src Ptr, n int) error {
	if n < 0 {
		return fmt.Errorf("cuda: DtoDAsync of %d bytes: size must not be negative", n)
	}
	return s.dev().checked("cuMemcpyDtoDAsync", func(a *driverAPI) Result {
		return a.cuMemcpyDtoDAsync(uint64(dst), uint64(src), uint64(n), s.handle())
	})
}

// Memset8Async sets n bytes at p to v in stream order.
func (s *Stream) Memset8Async(p Ptr, v byte, n int) error {
	if n < 0 {
		return fmt.Errorf("cuda: Memset8Async of %d bytes: size must not be negative", n)
	}
	return s.dev().checked("cuMemsetD8Async", func(a *driverAPI) Result {
		return a.cuMemsetD8Async(uint64(p), v, uint64(n), s.handle())
	})
}
