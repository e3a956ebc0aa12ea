package load

import (
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Exec is where a load kernel queues its work: streams, events, counters
// and scratch memory with CUDA's semantics, on whichever backend the
// harness attached. On the GPU they are real CUDA streams, events and
// stream memory operations; on the CPU the SDK runs them itself, with the
// same rules: operations of one stream run in order; a stream's Wait on an
// event waits for the work before the event's last Record as of the Wait
// (a Wait before any Record waits for nothing, as cuStreamWaitEvent does);
// a WaitValue holds its stream until a counter reaches a value. The same
// plugin source runs on both.
//
// The SDK sees every operation, so it can hold the ones a case makes late
// behind its latch (see LoadRequest), fail the copies a case makes fail,
// and answer the whole log for the harness's happens-before checker.
//
// A kernel only queues: it never waits on the host for what it queued
// (the harness holds some of it until the kernel has returned). An Exec
// and everything made from it belong to one attach; they are released at
// Detach. Its methods must be called from the goroutine the SDK called the
// kernel on.
type Exec struct {
	// State is the kernel's: the streams, events and counters it made in
	// PrepareLoad, kept for the attach's calls.
	State any

	m     *model
	eng   engine
	mems  []memory // 0: region 0 (device pools, staging), 1: region 1 (host pool), 2…: scratch
	sched *schedule
	// waits counts the internal events of WaitStream in this call, which
	// reuses them from one call to the next.
	waits    int
	internal []*Event
}

// Ref is a place in memory a stream operation reads or writes: an offset
// in one of the Exec's memories (the attach's regions, a scratch
// allocation).
type Ref struct {
	Mem int
	Off int
}

// Add offsets r by n bytes.
func (r Ref) Add(n int) Ref { return Ref{r.Mem, r.Off + n} }

// Span is n bytes from a Ref: what a launch declares it reads or writes.
type Span struct {
	At Ref
	N  int
}

// Stream is a stream of the Exec: operations run in the order queued.
type Stream struct {
	x  *Exec
	id int
}

// Event marks a point of a stream, as a CUDA event does.
type Event struct {
	x  *Exec
	id int
}

// Counter is a 32-bit word streams write and wait on, as a flag in device
// memory that cuStreamWriteValue32 and cuStreamWaitValue32 use. It starts
// at 0 and keeps its value from call to call.
type Counter struct {
	x  *Exec
	id int
}

// Launch is a kernel a plugin queues itself: its name, the bytes it
// declares it reads and writes (what the happens-before checker sees of
// it), and its code for each backend. Host runs on the CPU backend when
// the stream reaches it, reading and writing through HostBytes; Device
// queues the kernel on the CUDA stream given.
type Launch struct {
	Name          string
	Reads, Writes []Span
	Host          func() error
	Device        func(s *cuda.Stream) error
}

// ErrLoadFailed is wrapped by a copy the harness made fail: its source
// page cannot be read (a host page evicted, a storage backend's error).
// Nothing was queued. A correct loader reports the layer as failed from
// its gate instead of letting the consumer read it.
var ErrLoadFailed = errors.New("load failed")

// NewStream creates a stream.
func (x *Exec) NewStream(name string) (*Stream, error) {
	h, err := x.eng.stream(name)
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", name, err)
	}
	return &Stream{x: x, id: x.m.addStream(name, h)}, nil
}

// NewEvent creates an event, never recorded.
func (x *Exec) NewEvent(name string) (*Event, error) {
	h, err := x.eng.event()
	if err != nil {
		return nil, fmt.Errorf("create event %s: %w", name, err)
	}
	return &Event{x: x, id: x.m.addEvent(name, h)}, nil
}

// NewCounter creates a counter holding 0.
func (x *Exec) NewCounter(name string) (*Counter, error) {
	h, err := x.eng.counter()
	if err != nil {
		return nil, fmt.Errorf("create counter %s: %w", name, err)
	}
	return &Counter{x: x, id: x.m.addCounter(name, h)}, nil
}

// Scratch allocates n bytes of the kernel's own memory where the load
// runs (device memory on the GPU), for staging buffers and the like. It
// lives until Detach.
func (x *Exec) Scratch(name string, n int) (Ref, error) {
	if n <= 0 {
		return Ref{}, fmt.Errorf("scratch %s of %d bytes: want a positive size", name, n)
	}
	mem, err := x.eng.scratch(name, n)
	if err != nil {
		return Ref{}, fmt.Errorf("scratch %s of %d bytes: %w", name, n, err)
	}
	x.mems = append(x.mems, mem)
	return Ref{Mem: len(x.mems) - 1}, nil
}

// Device is the GPU the streams run on; nil on the CPU backend.
func (x *Exec) Device() *cuda.Device { return x.eng.device() }

// HostBytes views n bytes at r for a host launch's code; an error on the
// GPU backend, or when the range leaves its memory.
func (x *Exec) HostBytes(r Ref, n int) ([]byte, error) {
	if err := x.inRange(r, n); err != nil {
		return nil, err
	}
	b := x.mems[r.Mem].host
	if b == nil {
		return nil, fmt.Errorf("memory %s is device memory: no host view", x.mems[r.Mem].name)
	}
	return b[r.Off : r.Off+n], nil
}

func (x *Exec) inRange(r Ref, n int) error {
	if r.Mem < 0 || r.Mem >= len(x.mems) {
		return fmt.Errorf("memory %d: the exec has %d", r.Mem, len(x.mems))
	}
	m := x.mems[r.Mem]
	if n < 0 || r.Off < 0 || r.Off > m.size-n {
		return fmt.Errorf("[%d, %d) outside memory %s of %d bytes", r.Off, r.Off+n, m.name, m.size)
	}
	return nil
}

// Name is the stream's name.
func (s *Stream) Name() string { return s.x.m.streams[s.id].name }

// Copy queues a copy of n bytes from src to dst. A copy the case makes
// fail returns an error wrapping ErrLoadFailed and queues nothing.
func (s *Stream) Copy(dst, src Ref, n int) error {
	x := s.x
	if err := x.inRange(dst, n); err != nil {
		return fmt.Errorf("copy to %w", err)
	}
	if err := x.inRange(src, n); err != nil {
		return fmt.Errorf("copy from %w", err)
	}
	if x.mems[dst.Mem].host != nil && x.mems[src.Mem].host != nil && x.eng.device() != nil {
		return fmt.Errorf("copy from %s to %s: host to host is no stream operation", x.mems[src.Mem].name, x.mems[dst.Mem].name)
	}
	o := &op{kind: kvpb.LoadOpKind_LOAD_OP_KIND_COPY, role: kvpb.LoadRole_LOAD_ROLE_PLUGIN,
		reads: []Span{{src, n}}, writes: []Span{{dst, n}}}
	if sc := x.sched; sc != nil {
		if it, ok := sc.failing(src, n); ok {
			return fmt.Errorf("%w: the source page of %s cannot be read", ErrLoadFailed, sc.name(it))
		}
		if it, ok := sc.destination(dst, n); ok {
			o.item, o.label = it, sc.name(it)
		}
		if sc.lateAt(dst, n) {
			if err := x.hold(s.id); err != nil {
				return err
			}
		}
	}
	return x.enqueue(s.id, o)
}

// Record marks the current end of s with e: a later Wait on e waits for
// everything queued on s before this point.
func (s *Stream) Record(e *Event) error {
	if e == nil || e.x != s.x {
		return errors.New("record: an event of another exec, or nil")
	}
	return s.x.enqueue(s.id, &op{kind: kvpb.LoadOpKind_LOAD_OP_KIND_RECORD, object: e.id})
}

// Wait makes s wait for the work before e's last Record as of now. An
// event never recorded waits for nothing.
func (s *Stream) Wait(e *Event) error {
	if e == nil || e.x != s.x {
		return errors.New("wait: an event of another exec, or nil")
	}
	return s.x.enqueue(s.id, &op{kind: kvpb.LoadOpKind_LOAD_OP_KIND_WAIT, object: e.id})
}

// WaitStream makes s wait for everything queued on o so far: a record on
// o of an internal event, and a wait on it.
func (s *Stream) WaitStream(o *Stream) error {
	if o == nil || o.x != s.x {
		return errors.New("wait stream: a stream of another exec, or nil")
	}
	e, err := s.x.internalEvent(o.Name() + "→" + s.Name())
	if err != nil {
		return err
	}
	if err := o.Record(e); err != nil {
		return err
	}
	return s.Wait(e)
}

// WriteValue writes v into c when s reaches this point.
func (s *Stream) WriteValue(c *Counter, v uint32) error {
	if c == nil || c.x != s.x {
		return errors.New("write value: a counter of another exec, or nil")
	}
	return s.x.enqueue(s.id, &op{kind: kvpb.LoadOpKind_LOAD_OP_KIND_WRITE_VALUE, object: c.id, value: v})
}

// WaitValue holds s until c is at least v (as CU_STREAM_WAIT_VALUE_GEQ
// compares: the wrapping difference c - v is not negative).
func (s *Stream) WaitValue(c *Counter, v uint32) error {
	if c == nil || c.x != s.x {
		return errors.New("wait value: a counter of another exec, or nil")
	}
	return s.x.enqueue(s.id, &op{kind: kvpb.LoadOpKind_LOAD_OP_KIND_WAIT_VALUE, object: c.id, value: v})
}

// Launch queues a kernel of the plugin's own on s.
func (s *Stream) Launch(l Launch) error {
	x := s.x
	o := &op{kind: kvpb.LoadOpKind_LOAD_OP_KIND_LAUNCH, role: kvpb.LoadRole_LOAD_ROLE_PLUGIN, label: l.Name, launch: &l}
	for _, sp := range l.Reads {
		if err := x.inRange(sp.At, sp.N); err != nil {
			return fmt.Errorf("launch %s reads %w", l.Name, err)
		}
		o.reads = append(o.reads, sp)
	}
	for _, sp := range l.Writes {
		if err := x.inRange(sp.At, sp.N); err != nil {
			return fmt.Errorf("launch %s writes %w", l.Name, err)
		}
		o.writes = append(o.writes, sp)
	}
	return x.enqueue(s.id, o)
}

// internalEvent is the next of the events WaitStream records, reused
// from call to call.
func (x *Exec) internalEvent(name string) (*Event, error) {
	if x.waits == len(x.internal) {
		e, err := x.NewEvent(name)
		if err != nil {
			return nil, err
		}
		x.internal = append(x.internal, e)
	}
	e := x.internal[x.waits]
	x.waits++
	x.m.events[e.id].name = name
	return e, nil
}

// enqueue hands an operation to the backend and the model.
func (x *Exec) enqueue(stream int, o *op) error {
	o.stream = stream
	x.m.add(o)
	if err := x.eng.issue(x, o); err != nil {
		return fmt.Errorf("%s on stream %s: %w", o.kind, x.m.streams[stream].name, err)
	}
	x.m.pump()
	return nil
}

// hold queues the latch on a stream, unless one is already pending there:
// everything queued on the stream after it waits for the release.
func (x *Exec) hold(stream int) error {
	if !x.m.latched || x.m.pendingLatch(stream) {
		return nil
	}
	return x.enqueue(stream, &op{kind: kvpb.LoadOpKind_LOAD_OP_KIND_LATCH, role: kvpb.LoadRole_LOAD_ROLE_LATCH, label: "latch"})
}
