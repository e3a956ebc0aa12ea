package cuda

// streamNonBlocking is CU_STREAM_NON_BLOCKING: the stream does not
// synchronise with the legacy default stream, so synchronous copies on the
// legacy stream cannot stall it, nor break a capture in progress on it.
const streamNonBlocking = 1

// Stream is a CUDA stream of one device. A nil *Stream passed to Launch or a
// graph launch means the legacy default stream.
type Stream object

// NewStream creates a non-blocking stream.
func (d *Device) NewStream() (*Stream, error) {
	s := &Stream{d: d}
	return created(d, s, "cuStreamCreate", func(a *driverAPI) Result {
		return a.cuStreamCreate(&s.h, streamNonBlocking)
	})
}

func (s *Stream) dev() *Device { return (*object)(s).dev() }

// handle is the CUstream; 0 (the legacy default stream) for a nil *Stream.
func (s *Stream) handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// Sync waits for all work queued on s.
func (s *Stream) Sync() error {
	return s.dev().checked("cuStreamSynchronize", func(a *driverAPI) Result { return a.cuStreamSynchronize(s.h) })
}

// Destroy releases the stream once its queued work is done.
func (s *Stream) Destroy() error {
	return s.dev().checked("cuStreamDestroy", func(a *driverAPI) Result { return a.cuStreamDestroy(s.h) })
}
