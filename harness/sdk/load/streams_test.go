package load

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// hostExec is an Exec over two small host regions: region 0 "device",
// region 1 "host", the host region filled with a pattern.
func hostExec(t *testing.T) (*Exec, []byte, []byte) {
	t.Helper()
	dev, host := make([]byte, 4096), make([]byte, 4096)
	for i := range host {
		host[i] = byte(i*7 + 1)
	}
	return newHostExec([][]byte{dev, host}), dev, host
}

func streams(t *testing.T, x *Exec, names ...string) []*Stream {
	t.Helper()
	var out []*Stream
	for _, n := range names {
		s, err := x.NewStream(n)
		ok(t, err)
		out = append(out, s)
	}
	return out
}

// held marks every following op of s as behind the latch.
func held(t *testing.T, x *Exec, s *Stream) {
	t.Helper()
	ok(t, x.hold(s.id))
}

// copyAt is a 64-byte copy from host offset off to device offset off.
func copyAt(t *testing.T, s *Stream, off int) {
	t.Helper()
	ok(t, s.Copy(Ref{Mem: 0, Off: off}, Ref{Mem: 1, Off: off}, 64))
}

// TestStreamOrderUnderLatch: a held copy does not run until the release;
// a stream that waits on an event recorded after it waits too; one that
// waits on the event recorded before it does not.
func TestStreamOrderUnderLatch(t *testing.T) {
	x, dev, host := hostExec(t)
	ss := streams(t, x, "load", "gated", "early")
	load, gated, early := ss[0], ss[1], ss[2]
	before, after := mustEvent(t, x, "before"), mustEvent(t, x, "after")
	ok(t, x.beginCall(nil, true))
	ok(t, load.Record(before))
	held(t, x, load)
	copyAt(t, load, 0)
	ok(t, load.Record(after))
	ok(t, gated.Wait(after))
	ok(t, gated.Copy(Ref{Mem: 0, Off: 1024}, Ref{Mem: 0, Off: 0}, 64))
	ok(t, early.Wait(before))
	ok(t, early.Copy(Ref{Mem: 0, Off: 2048}, Ref{Mem: 0, Off: 0}, 64))
	if !bytes.Equal(dev[2048:2048+64], make([]byte, 64)) || dev[0] != 0 {
		t.Fatalf("before the release: the early reader saw % x, the load wrote % x; want zeros, nothing", dev[2048:2052], dev[:4])
	}
	deadlock, err := x.endCall()
	ok(t, err)
	if deadlock != "" {
		t.Fatal(deadlock)
	}
	if !bytes.Equal(dev[:64], host[:64]) || !bytes.Equal(dev[1024:1088], host[:64]) {
		t.Errorf("after the release: load % x, gated reader % x; want the host bytes % x", dev[:4], dev[1024:1028], host[:4])
	}
	tr := x.m.trace()
	if w := tr[4]; w.Kind != kvpb.LoadOpKind_LOAD_OP_KIND_WAIT || w.After != 3 || !w.Held {
		t.Errorf("the gated wait is %v after #%d held %v; want a held wait ordered after the record #3", w.Kind, w.After, w.Held)
	}
	if w := tr[6]; w.After != 0 || w.Held {
		t.Errorf("the early wait is ordered after #%d, held %v; want #0, not held", w.After, w.Held)
	}
}

func mustEvent(t *testing.T, x *Exec, name string) *Event {
	t.Helper()
	e, err := x.NewEvent(name)
	ok(t, err)
	return e
}

// TestWaitBeforeRecordWaitsForNothing is CUDA's rule: a wait captures the
// event's last record as of the wait; a record queued later does not
// count, and an event never recorded waits for nothing.
func TestWaitBeforeRecordWaitsForNothing(t *testing.T) {
	x, dev, _ := hostExec(t)
	ss := streams(t, x, "load", "consumer")
	load, consumer := ss[0], ss[1]
	e := mustEvent(t, x, "layer")
	ok(t, x.beginCall(nil, true))
	held(t, x, load)
	copyAt(t, load, 0)
	ok(t, consumer.Wait(e)) // before the record
	ok(t, load.Record(e))
	ok(t, consumer.Copy(Ref{Mem: 0, Off: 512}, Ref{Mem: 0, Off: 0}, 64))
	if consumer.x.m.streams[consumer.id].lastRun == nil || dev[0] != 0 {
		t.Fatal("the consumer's copy did not run before the release, or the held load did")
	}
	_, err := x.endCall()
	ok(t, err)
	if tr := x.m.trace(); tr[2].After != -1 {
		t.Errorf("the early wait is ordered after #%d; want nothing (-1)", tr[2].After)
	}
	if !bytes.Equal(dev[512:576], make([]byte, 64)) {
		t.Errorf("the consumer read % x; want the zeros before the load", dev[512:516])
	}
}

// TestCounterWaitAndDeadlock: a counter wait holds its stream until a
// write reaches its value, in the wrapping order cuStreamWaitValue32
// uses; a wait nothing satisfies is a deadlock, described and forced
// through.
func TestCounterWaitAndDeadlock(t *testing.T) {
	x, dev, host := hostExec(t)
	ss := streams(t, x, "load", "consumer")
	load, consumer := ss[0], ss[1]
	c, err := x.NewCounter("done")
	ok(t, err)
	ok(t, x.beginCall(nil, false))
	ok(t, consumer.WaitValue(c, 2))
	ok(t, consumer.Copy(Ref{Mem: 0, Off: 512}, Ref{Mem: 0, Off: 0}, 64))
	copyAt(t, load, 0)
	ok(t, load.WriteValue(c, 1))
	if dev[512] != 0 {
		t.Fatal("the consumer ran at counter 1, waiting for 2")
	}
	ok(t, load.WriteValue(c, 2))
	if !bytes.Equal(dev[512:576], host[:64]) {
		t.Fatalf("after the write of 2 the consumer read % x, want % x", dev[512:516], host[:4])
	}
	if tr := x.m.trace(); tr[0].After != 4 {
		t.Errorf("the counter wait is ordered after #%d; want the write of 2 (#4)", tr[0].After)
	}
	_, err = x.endCall()
	ok(t, err)
	if !geq(1, 0xffffffff) || geq(0xffffffff, 1) {
		t.Error("geq does not wrap as CU_STREAM_WAIT_VALUE_GEQ does")
	}

	ok(t, x.beginCall(nil, false))
	ok(t, consumer.WaitValue(c, 9))
	copyAt(t, consumer, 1024)
	deadlock, err := x.endCall()
	ok(t, err)
	if !strings.Contains(deadlock, "waits for counter done ≥ 9, which holds 2") {
		t.Errorf("deadlock %q; want the stuck wait named", deadlock)
	}
	if !bytes.Equal(dev[1024:1088], host[1024:1088]) {
		t.Error("the op behind the forced wait did not run")
	}
}

// TestCopyScheduleFailsAndHolds: a copy the case makes fail queues
// nothing and says ErrLoadFailed; a late copy holds its stream.
func TestCopyScheduleFailsAndHolds(t *testing.T) {
	x, dev, _ := hostExec(t)
	load := streams(t, x, "load")[0]
	in := &loadInput{op: kvpb.LoadOp_LOAD_OP_LOAD, layers: 1, latch: true, buffers: []Buffer{{Name: "kv", PageBytes: 64}},
		pages: []Page{{0, 0}, {1, 1}}, late: map[itemKey]bool{{0, 0, 1}: true}, fail: map[itemKey]bool{{0, 0, 0}: true},
		table: &pageTable{srcs: [][][]Ref{{{{1, 0}, {1, 64}}}}, dsts: [][][]Ref{{{{0, 0}, {0, 64}}}}}}
	ok(t, x.beginCall(newSchedule(in), true))
	if err := load.Copy(Ref{0, 0}, Ref{1, 0}, 64); !errors.Is(err, ErrLoadFailed) {
		t.Fatalf("the failing copy returned %v; want ErrLoadFailed", err)
	}
	ok(t, load.Copy(Ref{0, 64}, Ref{1, 64}, 64))
	tr := x.m.trace()
	if len(tr) != 2 || tr[0].Kind != kvpb.LoadOpKind_LOAD_OP_KIND_LATCH || tr[1].Item.GetPage() != 1 || dev[64] != 0 {
		t.Fatalf("trace %v, page 1 byte %d; want the latch then the held copy of page 1, not run", tr, dev[64])
	}
	_, err := x.endCall()
	ok(t, err)
	if dev[64] == 0 || dev[0] != 0 {
		t.Error("after the release the late page is not loaded, or the failed one is")
	}
}

// TestLaunchHostCodeInOrder: a launch's host code runs when its stream
// reaches it, after the wait before it.
func TestLaunchHostCodeInOrder(t *testing.T) {
	x, dev, _ := hostExec(t)
	ss := streams(t, x, "a", "b")
	e := mustEvent(t, x, "e")
	ok(t, x.beginCall(nil, true))
	held(t, x, ss[0])
	copyAt(t, ss[0], 0)
	ok(t, ss[0].Record(e))
	ok(t, ss[1].Wait(e))
	ran := false
	ok(t, ss[1].Launch(Launch{Name: "double", Reads: []Span{{Ref{0, 0}, 1}}, Writes: []Span{{Ref{0, 100}, 1}},
		Host: func() error {
			b, err := x.HostBytes(Ref{0, 0}, 101)
			ran = true
			b[100] = 2 * b[0]
			return err
		}}))
	if ran {
		t.Fatal("the launch ran before the copy it waits for")
	}
	_, err := x.endCall()
	ok(t, err)
	if !ran || dev[100] != 2*dev[0] {
		t.Errorf("ran %v, wrote %d for %d", ran, dev[100], dev[0])
	}
	if err := ss[0].Copy(Ref{0, 4000}, Ref{1, 0}, 200); err == nil {
		t.Error("a copy past the region's end was accepted")
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
