package load

import (
	"errors"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// deviceEngine runs an Exec on the GPU: streams, events and copies are
// the driver's; a counter is a word of device memory that
// cuStreamWriteValue32 writes and cuStreamWaitValue32 waits on; the latch
// is another word, which every held stream waits on and the SDK sets from
// a stream of its own. After every operation of a latched call it records
// a marker event, so that before the release it can wait for exactly what
// the model says was free to run.
type deviceEngine struct {
	dev     *cuda.Device
	words   cuda.Ptr // word 0: the latch; word i: counter i-1
	nwords  int
	rel     *cuda.Stream // sets the latch and forced counters
	markers []*cuda.Event
	marks   bool // record markers in this call
	pinned  [][]byte
	allocs  []cuda.Ptr
	// lazy are the host regions too large to pin whole (far pools,
	// sparse files of which a case touches a few pages), by memory
	// index: each holds the 4 KiB pages pinned so far, pinned as copies
	// first touch them.
	lazy map[int]map[int]bool
}

// pinWholeMax is the largest host region pinned whole at attach; a larger
// one (a far pool's sparse file: pinning it would back every page) is
// pinned a page at a time as copies touch it.
const pinWholeMax = 256 << 20

// hostPage is the unit of lazy pinning: the host's page, which a sparse
// file allocates whole.
const hostPage = 4096

// wordStride keeps each counter on a cache line of its own.
const (
	wordStride = 64
	maxWords   = 64
)

// settleTimeout bounds the wait for what the latch does not hold: the GPU
// runs it in microseconds; past this the model and the driver disagree.
const settleTimeout = 5 * time.Second

// newDeviceExec is an Exec on a CUDA attach: region 0 the device arena,
// the host regions after it pinned for the GPU.
func newDeviceExec(a *sdk.DeviceArena, hosts [][]byte) (*Exec, error) {
	e := &deviceEngine{dev: a.GPU()}
	x := &Exec{m: &model{}, eng: e}
	x.mems = append(x.mems, memory{name: regionName(0), size: a.Size(), dev: uint64(a.Base())})
	for i, h := range hosts {
		x.mems = append(x.mems, memory{name: regionName(i + 1), size: len(h), host: h})
	}
	err := x.do(func() error {
		for i, h := range hosts {
			if len(h) > pinWholeMax {
				if e.lazy == nil {
					e.lazy = map[int]map[int]bool{}
				}
				e.lazy[i+1] = map[int]bool{}
				continue
			}
			if err := e.dev.HostRegister(h); err != nil {
				return fmt.Errorf("pin the host region: %w", err)
			}
			e.pinned = append(e.pinned, h)
		}
		var err error
		if e.words, err = e.dev.Alloc(wordStride * maxWords); err != nil {
			return err
		}
		if err := e.dev.Memset8(e.words, 0, wordStride*maxWords); err != nil {
			return err
		}
		e.nwords = 1
		e.rel, err = e.dev.NewStream()
		return err
	})
	if err != nil {
		return nil, errors.Join(err, x.close())
	}
	return x, nil
}

func (e *deviceEngine) device() *cuda.Device { return e.dev }

func (e *deviceEngine) stream(string) (any, error) { return e.dev.NewStream() }

func (e *deviceEngine) event() (any, error) { return e.dev.NewMarker() }

func (e *deviceEngine) counter() (any, error) {
	if e.nwords == maxWords {
		return nil, fmt.Errorf("at most %d counters per attach", maxWords-1)
	}
	p := e.words.Add(wordStride * e.nwords)
	e.nwords++
	return p, nil
}

func (e *deviceEngine) scratch(name string, n int) (memory, error) {
	p, err := e.dev.Alloc(n)
	if err != nil {
		return memory{}, err
	}
	e.allocs = append(e.allocs, p)
	return memory{name: "scratch " + name, size: n, dev: uint64(p)}, nil
}

// issue queues o on its CUDA stream, then a marker when the call keeps
// them.
func (e *deviceEngine) issue(x *Exec, o *op) error {
	s := x.m.streams[o.stream].handle.(*cuda.Stream)
	var err error
	switch o.kind {
	case kvpb.LoadOpKind_LOAD_OP_KIND_COPY:
		err = e.copy(x, s, o.writes[0], o.reads[0])
	case kvpb.LoadOpKind_LOAD_OP_KIND_RECORD:
		err = x.m.events[o.object].handle.(*cuda.Event).Record(s)
	case kvpb.LoadOpKind_LOAD_OP_KIND_WAIT:
		err = s.WaitEvent(x.m.events[o.object].handle.(*cuda.Event))
	case kvpb.LoadOpKind_LOAD_OP_KIND_WRITE_VALUE:
		err = s.WriteValue32(x.m.counters[o.object].handle.(cuda.Ptr), o.value)
	case kvpb.LoadOpKind_LOAD_OP_KIND_WAIT_VALUE:
		err = s.WaitValue32(x.m.counters[o.object].handle.(cuda.Ptr), o.value)
	case kvpb.LoadOpKind_LOAD_OP_KIND_LATCH:
		err = s.WaitValue32(e.words, 1)
	case kvpb.LoadOpKind_LOAD_OP_KIND_LAUNCH:
		if o.launch.Device == nil {
			return fmt.Errorf("launch %s has no device code for the CUDA backend", o.launch.Name)
		}
		err = o.launch.Device(s)
	}
	if err != nil || !e.marks {
		return err
	}
	m, err := e.marker(o.seq)
	if err != nil {
		return err
	}
	o.marker = m
	return m.Record(s)
}

// copy queues one copy by where its ends live: host to device, device to
// device, device to host.
func (e *deviceEngine) copy(x *Exec, s *cuda.Stream, dst, src Span) error {
	d, sm := x.mems[dst.At.Mem], x.mems[src.At.Mem]
	for _, sp := range []Span{dst, src} {
		if err := e.pin(x, sp); err != nil {
			return err
		}
	}
	switch {
	case d.host == nil && sm.host != nil:
		return e.eachPinned(src, func(at, n int) error {
			return s.HtoDAsync(cuda.Ptr(d.dev).Add(dst.At.Off+at), sm.host[src.At.Off+at:src.At.Off+at+n])
		})
	case d.host == nil:
		return s.DtoDAsync(cuda.Ptr(d.dev).Add(dst.At.Off), cuda.Ptr(sm.dev).Add(src.At.Off), src.N)
	case sm.host == nil:
		return e.eachPinned(dst, func(at, n int) error {
			return s.DtoHAsync(d.host[dst.At.Off+at:dst.At.Off+at+n], cuda.Ptr(sm.dev).Add(src.At.Off+at))
		})
	}
	return fmt.Errorf("host to host copy from %s to %s", sm.name, d.name)
}

// eachPinned calls f for the parts of host span sp, as offsets into it,
// that lie in one registration each: all of it where the region was
// pinned whole, else one part per host page (hostChunks). The driver
// refuses an async copy whose host range runs from one registration into
// another (CUDA_ERROR_INVALID_VALUE), and a region pinned lazily is
// registered in runs of pages as copies first touch them: a page-table
// page that is not a multiple of 4 KiB shares a host page with its
// neighbour, registered with the neighbour's run.
func (e *deviceEngine) eachPinned(sp Span, f func(at, n int) error) error {
	if _, ok := e.lazy[sp.At.Mem]; !ok {
		return f(0, sp.N)
	}
	for _, c := range hostChunks(sp.At.Off, sp.N) {
		if err := f(c[0], c[1]); err != nil {
			return err
		}
	}
	return nil
}

// hostChunks cuts n bytes from host offset off at host page boundaries:
// [at, length] pairs, at counted from off.
func hostChunks(off, n int) [][2]int {
	var out [][2]int
	for at := 0; at < n; {
		end := min(n, (off+at)/hostPage*hostPage+hostPage-off)
		out = append(out, [2]int{at, end - at})
		at = end
	}
	return out
}

// pin pins the host pages of sp not pinned yet, in a region pinned
// lazily: runs of them, each registered once (a page registered twice is
// an error), kept until the exec closes.
func (e *deviceEngine) pin(x *Exec, sp Span) error {
	pages, ok := e.lazy[sp.At.Mem]
	if !ok || sp.N <= 0 {
		return nil
	}
	h := x.mems[sp.At.Mem].host
	last := (sp.At.Off + sp.N - 1) / hostPage
	for p := sp.At.Off / hostPage; p <= last; {
		if pages[p] {
			p++
			continue
		}
		q := p
		for q <= last && !pages[q] {
			pages[q] = true
			q++
		}
		b := h[p*hostPage : min(q*hostPage, len(h))]
		if err := e.dev.HostRegister(b); err != nil {
			return fmt.Errorf("pin host pages [%d,%d) of %s: %w", p*hostPage, p*hostPage+len(b), x.mems[sp.At.Mem].name, err)
		}
		e.pinned = append(e.pinned, b)
		p = q
	}
	return nil
}

// marker is the call's i-th marker event, made on first use.
func (e *deviceEngine) marker(i int) (*cuda.Event, error) {
	for len(e.markers) <= i {
		m, err := e.dev.NewMarker()
		if err != nil {
			return nil, err
		}
		e.markers = append(e.markers, m)
	}
	return e.markers[i], nil
}

// begin clears the latch word, in order before anything of the call.
func (e *deviceEngine) begin(_ *Exec, latch bool) error {
	e.marks = latch
	if err := e.rel.WriteValue32(e.words, 0); err != nil {
		return err
	}
	return e.rel.Sync()
}

// settle waits, stream by stream, for the marker after the last operation
// the model ran: everything the latch does not hold.
func (e *deviceEngine) settle(x *Exec) error {
	deadline := time.Now().Add(settleTimeout)
	for _, s := range x.m.streams {
		if s.lastRun == nil || s.lastRun.call != x.m.call || s.lastRun.marker == nil {
			continue
		}
		m := s.lastRun.marker.(*cuda.Event)
		for {
			done, err := m.Query()
			if err != nil {
				return err
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("stream %s did not reach op #%d, which nothing holds, within %v", s.name, s.lastRun.seq, settleTimeout)
			}
			time.Sleep(5 * time.Microsecond)
		}
	}
	return nil
}

func (e *deviceEngine) release(*Exec) error { return e.rel.WriteValue32(e.words, 1) }

// force writes a stuck counter wait's value, so that its stream drains.
func (e *deviceEngine) force(x *Exec, o *op) error {
	return e.rel.WriteValue32(x.m.counters[o.object].handle.(cuda.Ptr), o.value)
}

// finish waits for every stream; a kernel fault shows here.
func (e *deviceEngine) finish(x *Exec) error {
	var errs []error
	for _, s := range x.m.streams {
		errs = append(errs, s.handle.(*cuda.Stream).Sync())
	}
	errs = append(errs, e.rel.Sync())
	return errors.Join(errs...)
}

// close waits for and frees everything the engine made, and unpins the
// host regions.
func (e *deviceEngine) close(x *Exec) error {
	var errs []error
	for _, s := range x.m.streams {
		if st, ok := s.handle.(*cuda.Stream); ok && st != nil {
			errs = append(errs, st.Sync(), st.Destroy())
		}
	}
	for _, ev := range x.m.events {
		if h, ok := ev.handle.(*cuda.Event); ok && h != nil {
			errs = append(errs, h.Destroy())
		}
	}
	for _, m := range e.markers {
		errs = append(errs, m.Destroy())
	}
	if e.rel != nil {
		errs = append(errs, e.rel.Sync(), e.rel.Destroy())
	}
	for _, p := range append(e.allocs, e.words) {
		if p != 0 {
			errs = append(errs, e.dev.Free(p))
		}
	}
	for _, h := range e.pinned {
		errs = append(errs, e.dev.HostUnregister(h))
	}
	return errors.Join(errs...)
}
