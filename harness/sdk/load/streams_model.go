package load

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// The model is the SDK's account of an Exec's streams: every operation
// queued, and which of them have run. On the CPU it is the executor: an
// operation runs as soon as its stream reaches it and what it waits for
// has happened, so whatever is not held has run by the time the kernel
// returns (the most adversarial timing a missing gate can meet, and a
// legal one). On the GPU the driver runs the operations and the model
// follows the same rules to know which of them the latch holds: before
// releasing it, the SDK waits for every operation the model says could
// run, so that a probe the plugin did not gate has read its page while
// the late copy was still held.

// memory is one of the Exec's memories: host bytes (the CPU backend's
// regions and scratch, the GPU backend's host region) or a device range.
type memory struct {
	name string
	size int
	host []byte
	dev  uint64 // device address of offset 0, on the GPU
}

// op is one queued stream operation.
type op struct {
	seq    int
	call   int // the model's call it was queued in
	epoch  int // the settle points before it was queued
	stream int
	kind   kvpb.LoadOpKind
	role   kvpb.LoadRole
	label  string
	reads  []Span
	writes []Span
	object int    // event or counter
	value  uint32 // counter value
	item   *kvpb.LoadItem
	launch *Launch

	record *op // a wait's captured record: the event's last as of the wait
	after  *op // what a wait was ordered after, once it ran
	done   bool
	held   bool // it ran after the latch was released
	marker any  // the backend's mark after it (a CUDA event), when kept
}

type mstream struct {
	name    string
	handle  any
	queue   []*op
	lastRun *op // the last op of this call that ran
}

type mevent struct {
	name   string
	handle any
	last   *op // the last record queued
}

type mcounter struct {
	name   string
	handle any
	value  uint32
	writes []*op // this call's writes, in the order they ran
}

// model tracks an Exec's operations.
type model struct {
	streams  []*mstream
	events   []*mevent
	counters []*mcounter
	call     int
	ops      []*op // this call's, in the order queued
	latched  bool
	released bool
	epoch    int // settle points so far in this call
	// run performs an op's effect when it runs (the CPU backend); nil on
	// the GPU, where the driver runs it.
	run func(o *op) error
	err error // the first effect that failed
}

func (m *model) addStream(name string, h any) int {
	m.streams = append(m.streams, &mstream{name: name, handle: h})
	return len(m.streams) - 1
}

func (m *model) addEvent(name string, h any) int {
	m.events = append(m.events, &mevent{name: name, handle: h})
	return len(m.events) - 1
}

func (m *model) addCounter(name string, h any) int {
	m.counters = append(m.counters, &mcounter{name: name, handle: h})
	return len(m.counters) - 1
}

// begin starts a call: a fresh log; the latch set when latch is true.
func (m *model) begin(latch bool) {
	m.call++
	m.ops, m.latched, m.released, m.err, m.epoch = nil, latch, false, nil, 0
	for _, s := range m.streams {
		s.queue, s.lastRun = nil, nil
	}
	for _, c := range m.counters {
		c.writes = nil
	}
}

// add logs o and queues it on its stream; a wait captures its event's
// last record now, as cuStreamWaitEvent does.
func (m *model) add(o *op) {
	o.seq, o.call, o.epoch = len(m.ops), m.call, m.epoch
	m.ops = append(m.ops, o)
	if o.kind == kvpb.LoadOpKind_LOAD_OP_KIND_WAIT {
		o.record = m.events[o.object].last
	}
	if o.kind == kvpb.LoadOpKind_LOAD_OP_KIND_RECORD {
		m.events[o.object].last = o
	}
	s := m.streams[o.stream]
	s.queue = append(s.queue, o)
}

// pendingLatch reports whether a latch queued on the stream has not run.
func (m *model) pendingLatch(stream int) bool {
	for _, o := range m.streams[stream].queue {
		if o.kind == kvpb.LoadOpKind_LOAD_OP_KIND_LATCH {
			return true
		}
	}
	return false
}

// pump runs every operation that can run, stream by stream in creation
// order, until none can.
func (m *model) pump() {
	for progress := true; progress; {
		progress = false
		for _, s := range m.streams {
			for len(s.queue) > 0 && m.ready(s.queue[0]) {
				m.execute(s, s.queue[0])
				s.queue = s.queue[1:]
				progress = true
			}
		}
	}
}

// geq is CU_STREAM_WAIT_VALUE_GEQ's test: the wrapping difference is not
// negative.
func geq(have, want uint32) bool { return int32(have-want) >= 0 }

func (m *model) ready(o *op) bool {
	switch o.kind {
	case kvpb.LoadOpKind_LOAD_OP_KIND_WAIT:
		return o.record == nil || o.record.done
	case kvpb.LoadOpKind_LOAD_OP_KIND_WAIT_VALUE:
		return geq(m.counters[o.object].value, o.value)
	case kvpb.LoadOpKind_LOAD_OP_KIND_LATCH:
		return !m.latched
	}
	return true
}

func (m *model) execute(s *mstream, o *op) {
	switch o.kind {
	case kvpb.LoadOpKind_LOAD_OP_KIND_WAIT:
		o.after = o.record
	case kvpb.LoadOpKind_LOAD_OP_KIND_WRITE_VALUE:
		c := m.counters[o.object]
		c.value = o.value
		c.writes = append(c.writes, o)
	case kvpb.LoadOpKind_LOAD_OP_KIND_WAIT_VALUE:
		for _, w := range m.counters[o.object].writes {
			if geq(w.value, o.value) {
				o.after = w
				break
			}
		}
	}
	if m.run != nil && m.err == nil {
		if err := m.run(o); err != nil {
			m.err = fmt.Errorf("%s on stream %s: %w", o.kind, s.name, err)
		}
	}
	o.done, o.held = true, m.released
	s.lastRun = o
}

// release opens the latch and runs what it held.
func (m *model) release() {
	m.latched, m.released = false, true
	m.pump()
}

// stuck lists the operations that cannot run: after the release, a
// deadlock (a counter wait that nothing will satisfy).
func (m *model) stuck() []*op {
	var out []*op
	for _, s := range m.streams {
		out = append(out, s.queue...)
	}
	return out
}

// force makes the value of the first stuck counter wait come true, so
// that its stream can drain; it returns that wait, false when no stream
// is stuck on one.
func (m *model) force() (*op, bool) {
	for _, s := range m.streams {
		if len(s.queue) > 0 && s.queue[0].kind == kvpb.LoadOpKind_LOAD_OP_KIND_WAIT_VALUE {
			o := s.queue[0]
			m.counters[o.object].value = o.value
			return o, true
		}
	}
	return nil, false
}

// describe names a stuck op for the deadlock report.
func (m *model) describe(o *op) string {
	switch o.kind {
	case kvpb.LoadOpKind_LOAD_OP_KIND_WAIT_VALUE:
		c := m.counters[o.object]
		return fmt.Sprintf("op #%d on stream %s waits for counter %s ≥ %d, which holds %d and nothing queued will raise",
			o.seq, m.streams[o.stream].name, c.name, o.value, c.value)
	default:
		return fmt.Sprintf("op #%d (%s) on stream %s waits behind it", o.seq, o.kind, m.streams[o.stream].name)
	}
}

func (m *model) deadlock(stuck []*op) string {
	parts := make([]string, 0, len(stuck))
	for _, o := range stuck {
		parts = append(parts, m.describe(o))
		if len(parts) == 4 {
			parts = append(parts, fmt.Sprintf("… %d more", len(stuck)-4))
			break
		}
	}
	return strings.Join(parts, "; ")
}

// trace is the call's log as the protocol carries it.
func (m *model) trace() []*kvpb.LoadAccess {
	out := make([]*kvpb.LoadAccess, len(m.ops))
	for i, o := range m.ops {
		a := &kvpb.LoadAccess{Seq: uint32(o.seq), Stream: uint32(o.stream), Kind: o.kind, Role: o.role, Label: o.label,
			Object: uint32(o.object), Value: o.value, After: -1, Item: o.item, Held: o.held, Epoch: uint32(o.epoch),
			Reads: ranges(o.reads), Writes: ranges(o.writes)}
		if o.after != nil && o.after.call == m.call {
			a.After = int32(o.after.seq)
		}
		out[i] = a
	}
	return out
}

func ranges(ss []Span) []*kvpb.LoadRange {
	out := make([]*kvpb.LoadRange, len(ss))
	for i, s := range ss {
		out[i] = &kvpb.LoadRange{Memory: uint32(s.At.Mem), Offset: uint64(s.At.Off), Size: uint64(s.N)}
	}
	return out
}

// names lists the streams', events' and counters' names for the answer.
func (m *model) names() (streams, events, counters []string) {
	for _, s := range m.streams {
		streams = append(streams, s.name)
	}
	for _, e := range m.events {
		events = append(events, e.name)
	}
	for _, c := range m.counters {
		counters = append(counters, c.name)
	}
	return streams, events, counters
}
