package cuda

import (
	"fmt"
	"sync"

	"github.com/ebitengine/purego"
)

// Stream memory operations and peer access: optional entry points, bound
// on first use, so that a driver without them still runs everything else.
// An asynchronous transfer holds a copy behind a gate word in device
// memory (WaitGE32) that another process opens; the harness's reference
// copy between two GPUs enables peer access (EnablePeer).

// streamWaitGE is CU_STREAM_WAIT_VALUE_GEQ: wait until (int32)(*addr -
// value) >= 0, i.e. the word has reached value.
const streamWaitGE = 0x0

type streamOpsAPI struct {
	cuStreamWaitValue32   func(s uintptr, addr uint64, value, flags uint32) Result
	cuStreamWriteValue32  func(s uintptr, addr uint64, value, flags uint32) Result
	cuDeviceCanAccessPeer func(can *int32, dev, peer int32) Result
	cuCtxEnablePeerAccess func(peer uintptr, flags uint32) Result
}

var streamOps struct {
	once sync.Once
	api  *streamOpsAPI
	err  error
}

// streamOpsOf binds the entry points once: the _v2 stream memory
// operations (CUDA 11.7 and later, enabled without a device attribute),
// else the first ones.
func streamOpsOf() (*streamOpsAPI, error) {
	streamOps.once.Do(func() {
		if _, err := driver(); err != nil {
			streamOps.err = err
			return
		}
		lib, err := dlopen(driverLib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			streamOps.err = fmt.Errorf("%w: %v", ErrNoDriver, err)
			return
		}
		s := new(streamOpsAPI)
		if err := bindFirst(lib, &s.cuStreamWaitValue32, "cuStreamWaitValue32_v2", "cuStreamWaitValue32"); err != nil {
			streamOps.err = err
			return
		}
		if err := bindFirst(lib, &s.cuStreamWriteValue32, "cuStreamWriteValue32_v2", "cuStreamWriteValue32"); err != nil {
			streamOps.err = err
			return
		}
		streamOps.err = bind(lib, driverLib, []symbol{{"cuDeviceCanAccessPeer", &s.cuDeviceCanAccessPeer},
			{"cuCtxEnablePeerAccess", &s.cuCtxEnablePeerAccess}})
		streamOps.api = s
	})
	return streamOps.api, streamOps.err
}

// bindFirst binds fn to the first of names lib has.
func bindFirst(lib uintptr, fn any, names ...string) error {
	for _, n := range names {
		if bind(lib, driverLib, []symbol{{n, fn}}) == nil {
			return nil
		}
	}
	return fmt.Errorf("cuda: the driver has none of %v; update it (CUDA 11.7 or later)", names)
}

// WaitGE32 makes s wait, before the work queued after it, until the 32-bit
// word at p holds at least v. p may be memory another process maps (an IPC
// mapping of the harness's allocation) and writes at any time.
func (s *Stream) WaitGE32(p Ptr, v uint32) error {
	ops, err := streamOpsOf()
	if err != nil {
		return err
	}
	return s.dev().call(func(*driverAPI) error {
		return check("cuStreamWaitValue32", ops.cuStreamWaitValue32(s.handle(), uint64(p), v, streamWaitGE))
	})
}

// Write32 writes v into the word at p in stream order.
func (s *Stream) Write32(p Ptr, v uint32) error {
	ops, err := streamOpsOf()
	if err != nil {
		return err
	}
	return s.dev().call(func(*driverAPI) error {
		return check("cuStreamWriteValue32", ops.cuStreamWriteValue32(s.handle(), uint64(p), v, 0))
	})
}

// errPeerEnabled is CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED.
const errPeerEnabled Result = 704

// CanAccessPeer reports whether d's context can map peer's memory.
func (d *Device) CanAccessPeer(peer *Device) (bool, error) {
	ops, err := streamOpsOf()
	if err != nil {
		return false, err
	}
	var can int32
	err = d.call(func(*driverAPI) error {
		return check("cuDeviceCanAccessPeer", ops.cuDeviceCanAccessPeer(&can, d.dev, peer.dev))
	})
	return can == 1, err
}

// EnablePeer lets work in d's context access peer's memory directly (over
// NVLink or PCIe), so that a copy between the two is one peer copy rather
// than two through host memory. Enabling it twice is not an error.
func (d *Device) EnablePeer(peer *Device) error {
	if d == peer {
		return nil
	}
	ops, err := streamOpsOf()
	if err != nil {
		return err
	}
	return d.call(func(*driverAPI) error {
		r := ops.cuCtxEnablePeerAccess(peer.ctx, 0)
		if r == errPeerEnabled {
			return nil
		}
		return check("cuCtxEnablePeerAccess", r)
	})
}
