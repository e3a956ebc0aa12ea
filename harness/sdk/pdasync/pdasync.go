// Package pdasync serves the pdasync kind: asynchronous prefill → decode
// transfer engines ([Kernel]), on either backend. A plugin lists [Kind] in
// sdk.Plugin.Kinds.
package pdasync

import (
	"context"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// The asynchronous prefill → decode transfer kernel. Two
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

// Kernel is an asynchronous transfer engine. The SDK starts a fresh
// engine for the role a process is attached to, at AsyncAttach and at
// every AsyncReset (a new case), so an engine keeps its rooms in itself.
type Kernel interface {
	NewPrefill(ctx context.Context, a *PrefillAttach) (Prefill, error)
	NewDecode(ctx context.Context, a *DecodeAttach) (Decode, error)
}

// Prefill is the prefill server's side of the engine.
type Prefill interface {
	// Post posts every handle of a room with a.Post, at once, and returns
	// each handle's descriptors: the i-th page of the room goes from
	// source page src[i] to destination page dst[i] (the decode's answer),
	// through each buffer's page table.
	Post(ctx context.Context, room Room, src, dst []int64) ([]Posted, error)
	// Poll returns the notifications raised since the last poll.
	Poll(ctx context.Context) ([]Notification, error)
}

// Decode is the decode server's side of the engine.
type Decode interface {
	// Admit takes a room whose pages the scheduler numbers virt (virtual
	// pages: table[v] is virtual page v's physical page) and returns the
	// physical destination pages the prefill is to write.
	Admit(ctx context.Context, room Room, virt, table []int64) ([]int64, error)
	// Notify takes notifications the harness delivers and returns what the
	// engine did with its rooms: read one (Ready, with the digests of
	// what it read, from a.Read), or free its pages (Freed).
	Notify(ctx context.Context, ns []Notification) ([]Event, error)
	// Abort aborts a room: it must never be read, and its pages are freed
	// once no copy can land in them any more.
	Abort(ctx context.Context, room uint64) ([]Event, error)
}

// Buffer is one buffer of an asynchronous transfer: its pool on the
// prefill side (Src, in the prefill arena; zero on the decode) and on the
// decode side (Dst, in the decode arena), its allocation and its page
// table. Index is what Component.Buffers and sdk.Descriptor.Buffer name.
type Buffer = sdk.Buffer

// Handle is one transfer request of a room: its pages [FirstPage,
// FirstPage+Pages) in every buffer of its component, posted behind gate ID.
type Handle struct {
	ID        uint32
	FirstPage int
	Pages     int
}

// Component is one sender of a room: its buffers and its handles. A
// room is complete once every handle of every component is.
type Component struct {
	ID      uint32
	Buffers []int
	Handles []Handle
}

// Room is one request's transfer plan, the same on both sides.
type Room struct {
	ID         uint64
	Components []Component
}

// Pages is the room's page count: the end of its last handle.
func (r Room) Pages() int {
	n := 0
	for _, c := range r.Components {
		for _, h := range c.Handles {
			n = max(n, h.FirstPage+h.Pages)
		}
	}
	return n
}

// Posted is one handle's descriptors: source offsets in the prefill
// arena, destination offsets in the decode arena.
type Posted struct {
	Handle      uint32
	Descriptors []sdk.Descriptor
}

// Note is what a notification says.
type Note = kvpb.AsyncNote

// The notes.
const (
	NoteHandleDone      = kvpb.AsyncNote_ASYNC_NOTE_HANDLE_DONE
	NoteHandleFailed    = kvpb.AsyncNote_ASYNC_NOTE_HANDLE_FAILED
	NoteComponentDone   = kvpb.AsyncNote_ASYNC_NOTE_COMPONENT_DONE
	NoteComponentFailed = kvpb.AsyncNote_ASYNC_NOTE_COMPONENT_FAILED
)

// Notification is one notification of a room's component (and, for
// handle notes, of one of its handles).
type Notification struct {
	Room      uint64
	Component uint32
	Handle    uint32
	Note      Note
}

// EventKind is what the decode did with a room.
type EventKind = kvpb.AsyncEventKind

// The events.
const (
	Ready = kvpb.AsyncEventKind_ASYNC_EVENT_READY
	Freed = kvpb.AsyncEventKind_ASYNC_EVENT_FREED
)

// Event is one thing the decode did with a room. A ready room's
// Digests hold, per buffer in buffer order, SHA-256 (first 8 bytes) of its
// pages in room order as the decode read them.
type Event struct {
	Room    uint64
	Kind    EventKind
	Digests [][]byte
}

// PrefillAttach is what a prefill engine runs on.
type PrefillAttach struct {
	Variant string
	Buffers []Buffer
	// Device is the GPU the copies run on; nil on the host.
	Device *cuda.Device
	t      transport
}

// Post starts handle's copies and returns at once: they wait behind the
// handle's gate, then land asynchronously, in order. It refuses only a
// copy that leaves an arena (a transport would fault); a copy to the wrong
// place inside one is the harness's to find.
func (a *PrefillAttach) Post(handle uint32, ds []sdk.Descriptor) (*Xfer, error) {
	return a.t.post(handle, ds)
}

// DecodeAttach is what a decode engine runs on.
type DecodeAttach struct {
	Variant string
	Buffers []Buffer
	Device  *cuda.Device // nil on the host
	read    func(off, n int) ([]byte, error)
}

// Read copies n bytes at offset off of the decode arena into a new slice:
// from the mapping on the host, by a device-to-host copy on the GPU.
func (a *DecodeAttach) Read(off, n int) ([]byte, error) { return a.read(off, n) }

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
	post(handle uint32, ds []sdk.Descriptor) (*Xfer, error)
	// drain waits for every posted handle to end (the harness has opened
	// every gate) and forgets them.
	drain(ctx context.Context) error
	// quiet reports whether every posted handle whose gate the harness
	// opened (or failed) has ended: no copy is in flight, so an engine
	// that polls now sees every handle's end.
	quiet() (bool, error)
	close() error
}
