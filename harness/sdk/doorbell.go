package sdk

import (
	"context"
	"fmt"
	"runtime"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

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
		return badRequest("doorbell window %v: want %d bytes at a 64-byte aligned offset of region 0's %d", w, doorbell.Size, size)
	}
	return nil
}

// openBell starts serving the doorbell an attach names (checked by
// checkBell) in the mapping of region 0.
func (s *server) openBell(req *kvpb.AttachRequest, region0 []byte) error {
	w := req.GetDoorbell()
	if w == nil || !s.rings {
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
		box.Serve(last, s.ring)
	}()
	s.bell = b
	return nil
}

// stopBell stops serving the doorbell, if one is served, and waits for
// its goroutine, which may be running a request under s.mu: callers hold
// no lock.
func (s *server) stopBell() {
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

// ring runs one StoreBatch posted through the doorbell, exactly as the
// RPC would, and answers its status.
func (s *server) ring(data []byte) (uint32, string) {
	var req kvpb.StoreBatchRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		return uint32(codes.InvalidArgument), fmt.Sprintf("doorbell request: %v", err)
	}
	err := s.storeBatch(context.Background(), &req)
	st, _ := status.FromError(err)
	return uint32(st.Code()), st.Message()
}
