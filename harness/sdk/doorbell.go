package sdk

import (
	"context"
	"runtime"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/doorbell"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// bell is the doorbell of the current attach: its window and the
// goroutine that serves it (package doorbell).
type bell struct {
	box  *doorbell.Box
	done chan struct{} // closed when Serve returns
}

// checkBell rejects a doorbell window that is not inside region 0, of
// size bytes, or is too small; nil when the attach asks for none.
func checkBell(req *kvpb.AttachRequest, size int) error {
	w := req.GetDoorbell()
	if w != nil && (w.Region != 0 || w.Offset+w.Size > uint64(size) || w.Offset+w.Size < w.Offset || w.Size < doorbell.Size || w.Offset%64 != 0) {
		return BadRequest("doorbell window %v: want %d bytes at a 64-byte aligned offset of region 0's %d", w, doorbell.Size, size)
	}
	return nil
}

// openBell starts serving the doorbell an attach names (checked by
// checkBell) in the mapping of region 0.
func (s *Server) openBell(req *kvpb.AttachRequest, region0 []byte) error {
	w := req.GetDoorbell()
	if w == nil || !s.rings || s.ring == nil {
		return nil
	}
	box, err := doorbell.Open(region0[w.Offset : w.Offset+w.Size])
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	b := &bell{box: box, done: make(chan struct{})}
	last := box.Begin()
	go func() {
		runtime.LockOSThread() // it lives in futex waits
		defer close(b.done)
		box.Serve(last, s.answer)
	}()
	s.bell = b
	return nil
}

// stopBell stops serving the doorbell, if one is served, and waits for
// its goroutine, which may be running a request under s.mu: callers hold
// no lock.
func (s *Server) stopBell() {
	s.bellMu.Lock()
	defer s.bellMu.Unlock()
	s.mu.Lock()
	b := s.bell
	s.bell = nil
	s.mu.Unlock()
	if b != nil {
		b.box.Stop()
		<-b.done
	}
}

// RingFunc runs one request posted through the doorbell (its serialized
// bytes), exactly as the kind's RPC would, and returns the RPC's error.
type RingFunc func(ctx context.Context, data []byte) error

// Ring makes f what the doorbell runs: the kind whose batched call it
// serves (the store's StoreBatch, on host memory) registers it. Describe
// offers a doorbell only once one is registered.
func (s *Server) Ring(f RingFunc) { s.ring = f }

// answer runs one request posted through the doorbell and answers its
// status.
func (s *Server) answer(data []byte) (uint32, string) {
	err := s.ring(context.Background(), data)
	st, _ := status.FromError(err)
	return uint32(st.Code()), st.Message()
}
