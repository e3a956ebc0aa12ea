package sdk

import (
	"context"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// The asynchronous prefill → decode transfer kernel ("pdasync"). Two
// processes of one plugin play the two servers of a disaggregated
// deployment; the harness is the wire between them. The prefill process
// posts a room's copies, handle by handle, on a Transport the SDK provides
// (what NIXL or Mooncake is to an engine's connector): each handle's copies
// wait behind a gate the harness opens, or fails, when it chooses, and
// land asynchronously (goroutines on the host, CUDA streams on the GPU,
// peer copies over IPC when the decode arena lives on another GPU). The
// engine polls its handles and raises notifications per handle and per
// component. The decode process answers a room's destination pages,
// tracks its completion from the notifications the harness delivers, and
// reports when it reads the room and when it frees its pages.
//
// What the harness judges is the engine: when it says done, when it reads,
// when it frees. The Transport never lies: a handle's State is Done only
// once its copies have landed.

// AsyncKernel is an asynchronous transfer engine. The SDK starts a fresh
// engine for the role a process is attached to, at AsyncAttach and at
// every AsyncReset (a new case), so an engine keeps its rooms in itself.
type AsyncKernel interface {
	NewPrefill(ctx context.Context, a *AsyncPrefillAttach) (AsyncPrefill, error)
	NewDecode(ctx context.Context, a *AsyncDecodeAttach) (AsyncDecode, error)
}

// AsyncPrefill is the prefill server's side of the engine.
type AsyncPrefill interface {
	// Post posts every handle of a room with a.Post, at once, and returns
	// each handle's descriptors: the i-th page of the room goes from
	// source page src[i] to destination page dst[i] (the decode's answer),
	// through each buffer's page table.
	Post(ctx context.Context, room AsyncRoom, src, dst []int64) ([]AsyncPosted, error)
	// Poll returns the notifications raised since the last poll.
	Poll(ctx context.Context) ([]AsyncNotification, error)
}

// AsyncDecode is the decode server's side of the engine.
type AsyncDecode interface {
	// Admit takes a room whose pages the scheduler numbers virt (virtual
	// pages: table[v] is virtual page v's physical page) and returns the
	// physical destination pages the prefill is to write.
	Admit(ctx context.Context, room AsyncRoom, virt, table []int64) ([]int64, error)
	// Notify takes notifications the harness delivers and returns what the
	// engine did with its rooms: read one (AsyncReady, with the digests of
	// what it read, from a.Read), or free its pages (AsyncFreed).
	Notify(ctx context.Context, ns []AsyncNotification) ([]AsyncEvent, error)
	// Abort aborts a room: it must never be read, and its pages are freed
	// once no copy can land in them any more.
	Abort(ctx context.Context, room uint64) ([]AsyncEvent, error)
}

// AsyncBuffer is one buffer of an asynchronous transfer, with a
// TransferBuffer's fields: its pool on the prefill side (Src, in the
// prefill arena; zero on the decode) and on the decode side (Dst, in the
// decode arena), and what their names say. Index is what
// AsyncComponent.Buffers and Descriptor.Buffer name.
type AsyncBuffer TransferBuffer

// Pages is the number of pages of the buffer's pools, from Dst: the one
// pool both sides have.
func (b AsyncBuffer) Pages() int { return poolPages(b.Dst) }

// Phys maps a room's page to the buffer's physical page.
func (b AsyncBuffer) Phys(page int64) int64 { return physPage(page, b.Shift, b.Pages()) }

// AsyncHandle is one transfer request of a room: its pages [FirstPage,
// FirstPage+Pages) in every buffer of its component, posted behind gate ID.
type AsyncHandle struct {
	ID        uint32
	FirstPage int
	Pages     int
}

// AsyncComponent is one sender of a room: its buffers and its handles. A
// room is complete once every handle of every component is.
type AsyncComponent struct {
	ID      uint32
	Buffers []int
	Handles []AsyncHandle
}

// AsyncRoom is one request's transfer plan, the same on both sides.
type AsyncRoom struct {
	ID         uint64
	Components []AsyncComponent
}

// Pages is the room's page count: the end of its last handle.
func (r AsyncRoom) Pages() int {
	n := 0
	for _, c := range r.Components {
		for _, h := range c.Handles {
			n = max(n, h.FirstPage+h.Pages)
		}
	}
	return n
}

// AsyncPosted is one handle's descriptors: source offsets in the prefill
// arena, destination offsets in the decode arena.
type AsyncPosted struct {
	Handle      uint32
	Descriptors []Descriptor
}

// AsyncNote is what a notification says.
type AsyncNote = kvpb.AsyncNote

// The notes.
const (
	NoteHandleDone      = kvpb.AsyncNote_ASYNC_NOTE_HANDLE_DONE
	NoteHandleFailed    = kvpb.AsyncNote_ASYNC_NOTE_HANDLE_FAILED
	NoteComponentDone   = kvpb.AsyncNote_ASYNC_NOTE_COMPONENT_DONE
	NoteComponentFailed = kvpb.AsyncNote_ASYNC_NOTE_COMPONENT_FAILED
)

// AsyncNotification is one notification of a room's component (and, for
// handle notes, of one of its handles).
type AsyncNotification struct {
	Room      uint64
	Component uint32
	Handle    uint32
	Note      AsyncNote
}

// AsyncEventKind is what the decode did with a room.
type AsyncEventKind = kvpb.AsyncEventKind

// The events.
const (
	AsyncReady = kvpb.AsyncEventKind_ASYNC_EVENT_READY
	AsyncFreed = kvpb.AsyncEventKind_ASYNC_EVENT_FREED
)

// AsyncEvent is one thing the decode did with a room. A ready room's
// Digests hold, per buffer in buffer order, SHA-256 (first 8 bytes) of its
// pages in room order as the decode read them.
type AsyncEvent struct {
	Room    uint64
	Kind    AsyncEventKind
	Digests [][]byte
}

// AsyncPrefillAttach is what a prefill engine runs on.
type AsyncPrefillAttach struct {
	Variant string
	Buffers []AsyncBuffer
	// Device is the GPU the copies run on; nil on the host.
	Device *cuda.Device
	t      transport
}

// Post starts handle's copies and returns at once: they wait behind the
// handle's gate, then land asynchronously, in order. It refuses only a
// copy that leaves an arena (a transport would fault); a copy to the wrong
// place inside one is the harness's to find.
func (a *AsyncPrefillAttach) Post(handle uint32, ds []Descriptor) (*Xfer, error) {
	return a.t.post(handle, ds)
}

// AsyncDecodeAttach is what a decode engine runs on.
type AsyncDecodeAttach struct {
	Variant string
	Buffers []AsyncBuffer
	Device  *cuda.Device // nil on the host
	read    func(off, n int) ([]byte, error)
}

// Read copies n bytes at offset off of the decode arena into a new slice:
// from the mapping on the host, by a device-to-host copy on the GPU.
func (a *AsyncDecodeAttach) Read(off, n int) ([]byte, error) { return a.read(off, n) }

// XferState is where a posted handle is.
type XferState int

// The states of a handle.
const (
	XferPending XferState = iota // behind its gate, or its copies still running
	XferDone                     // every copy landed
	XferFailed                   // the harness failed it; none of its copies will land any more
)

func (s XferState) String() string {
	return [...]string{"pending", "done", "failed"}[s]
}

// Xfer is one posted handle.
type Xfer struct {
	Handle uint32
	check  func() (XferState, error) // asks the backend; nil once final
	final  XferState
}

// State asks the transport where the handle is, without waiting. Posting
// a handle only starts it: a handle is done when State says so.
func (x *Xfer) State() (XferState, error) {
	if x.check == nil {
		return x.final, nil
	}
	s, err := x.check()
	if err == nil && s != XferPending {
		x.final, x.check = s, nil
	}
	return s, err
}

// transport is a backend's copy engine.
type transport interface {
	post(handle uint32, ds []Descriptor) (*Xfer, error)
	// drain waits for every posted handle to end (the harness has opened
	// every gate) and forgets them.
	drain(ctx context.Context) error
	// quiet reports whether every posted handle whose gate the harness
	// opened (or failed) has ended: no copy is in flight, so an engine
	// that polls now sees every handle's end.
	quiet() (bool, error)
	close() error
}
