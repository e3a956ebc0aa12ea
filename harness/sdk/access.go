package sdk

import (
	"unsafe"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// What a kind's service reads of the attachment. Every method but Lock
// and Unlock is called with the lock held.

// Lock takes the attachment for one call: a kind's handler holds it from
// its checks to its answer.
func (s *Server) Lock() { s.mu.Lock() }

// Unlock releases the attachment.
func (s *Server) Unlock() { s.mu.Unlock() }

// Name is the plugin's name, for messages.
func (s *Server) Name() string { return s.p.Name }

// Kernel is the plugin's kernel value, whose interfaces a kind asks for.
func (s *Server) Kernel() any { return s.p.Kernel }

// Variant is the attached variant.
func (s *Server) Variant() string { return s.variant }

// Attached reports whether an arena is attached, on either backend.
func (s *Server) Attached() bool { return s.attached() }

// Pools are the attached pools, in the attach's order.
func (s *Server) Pools() []Pool { return s.pools }

// Pool is attached pool i, or an InvalidArgument error naming how many
// there are.
func (s *Server) Pool(i uint32) (Pool, error) {
	if int(i) >= len(s.pools) {
		return Pool{}, BadRequest("pool %d: only %d attached", i, len(s.pools))
	}
	return s.pools[i], nil
}

// Arena is the mapping of region 0 on a shared-memory attach (nil on a
// CUDA one): where staging lives.
func (s *Server) Arena() []byte { return s.arena }

// Regions are the mappings of the attach's host regions, by index; on a
// CUDA attach regions[0] is nil (the device arena: Device).
func (s *Server) Regions() [][]byte { return s.regions }

// Region is the mapping of the host region pool p lives in.
func (s *Server) Region(p Pool) []byte { return s.regionOf(p) }

// Device is the attached CUDA arena, nil on a shared-memory attach.
func (s *Server) Device() *DeviceArena { return s.dev }

// Staging is the staging window: the inputs and outputs of calls, in
// region 0.
func (s *Server) Staging() Window { return s.staging }

// SlotBits is the slot width the kernel declares for the attached
// variant: 64 or 32.
func (s *Server) SlotBits() int { return s.slotBits(s.variant) }

// OnRelease registers what frees a kind's state of the attach (streams,
// pinned memory): it runs when the attachment is released (another
// attach, a detach), before the regions are unmapped.
func (s *Server) OnRelease(f func() error) { s.onRelease = append(s.onRelease, f) }

// OnDetach registers what frees an attachment a kind makes of its own
// (pdasync's role): it runs at Detach, after the base attachment is
// released.
func (s *Server) OnDetach(f func() error) { s.onDetach = append(s.onDetach, f) }

// InStaging checks that n elements of size bytes at off lie inside the
// staging window and are aligned for their type.
func (s *Server) InStaging(off uint64, n, size int) error {
	end := off + uint64(n*size)
	if off < uint64(s.staging.Off) || end > uint64(s.staging.End()) || end < off || n < 0 {
		return BadRequest("[%d,%d) outside staging [%d,%d)", off, end, s.staging.Off, s.staging.End())
	}
	if off%uint64(size) != 0 {
		return BadRequest("offset %d not aligned to %d bytes", off, size)
	}
	return nil
}

// Staged views n elements of T at a staging offset of a shared-memory
// attach that InStaging accepted.
func Staged[T uint16 | int32 | int64 | float32](s *Server, off uint64, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&s.arena[off])), n)
}

// BadRequest is a request the SDK refuses: InvalidArgument, which the
// harness reports as the plugin's refusal.
func BadRequest(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// KernelFailed is a kernel's own error, on either backend: the call's
// answer, not a fault.
func KernelFailed(kind string, err error) error {
	return status.Errorf(codes.Aborted, "%s kernel failed: %v", kind, err)
}

// DeviceFault reports a failed stream wait: an illegal address or a trap
// in the kernel. It is a crash, not a refusal, because the CUDA context is
// now unusable; the harness restarts the plugin.
func DeviceFault(kind string, err error) error {
	return status.Errorf(codes.DataLoss, "%s kernel faulted on the device (the CUDA context is unusable until the plugin restarts): %v", kind, err)
}
