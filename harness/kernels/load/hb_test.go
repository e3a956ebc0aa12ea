package load

import (
	"testing"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// op is a trace entry for tests: seq, stream, after, held, epoch, and a
// read or a write of bytes [off, off+16) of memory 0.
func op(seq, stream, after int, held bool, epoch int, write bool, off uint64) *kvpb.LoadAccess {
	r := []*kvpb.LoadRange{{Memory: 0, Offset: off, Size: 16}}
	a := &kvpb.LoadAccess{Seq: uint32(seq), Stream: uint32(stream), After: int32(after), Held: held, Epoch: uint32(epoch)}
	if write {
		a.Writes = r
	} else {
		a.Reads = r
	}
	return a
}

func races(t *testing.T, trace ...*kvpb.LoadAccess) []race {
	t.Helper()
	o, err := newOrder(trace, []string{"load", "consumer"})
	if err != nil {
		t.Fatal(err)
	}
	return o.races()
}

// TestHappensBefore: a wait orders what follows it after what it waited
// for, transitively through program order; unordered conflicting accesses
// race, and whether the latch or a settle point forced their order is
// told apart from luck.
func TestHappensBefore(t *testing.T) {
	// load: write page; record. consumer: wait(record) ; read page.
	ordered := races(t, op(0, 0, -1, false, 0, true, 0), op(1, 0, -1, false, 0, false, 999),
		op(2, 1, 1, false, 0, false, 999), op(3, 1, -1, false, 0, false, 0))
	if len(ordered) != 0 {
		t.Errorf("a read after a wait on the writer's record races: %+v", ordered)
	}
	for _, tc := range []struct {
		name                   string
		writeHeld, readHeld    bool
		writeEpoch, readEpoch  int
		wantRace, wantForced   bool
		disjoint, bothReadOnly bool
	}{
		{name: "latched write, early read", writeHeld: true, wantRace: true, wantForced: true},
		{name: "both held", writeHeld: true, readHeld: true, wantRace: true},
		{name: "both early, one epoch", wantRace: true},
		{name: "both early, a settle between", readEpoch: 1, wantRace: true, wantForced: true},
		{name: "disjoint bytes", writeHeld: true, disjoint: true},
		{name: "two reads", writeHeld: true, bothReadOnly: true},
	} {
		off := uint64(0)
		if tc.disjoint {
			off = 16
		}
		rs := races(t, op(0, 0, -1, tc.writeHeld, tc.writeEpoch, !tc.bothReadOnly, 0), op(1, 1, -1, tc.readHeld, tc.readEpoch, false, off))
		switch {
		case len(rs) != b2i(tc.wantRace):
			t.Errorf("%s: %d races, want race %v", tc.name, len(rs), tc.wantRace)
		case tc.wantRace && (rs[0].forced != tc.wantForced || rs[0].hazard != "read after write"):
			t.Errorf("%s: %+v; want forced %v, read after write", tc.name, rs[0], tc.wantForced)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestHappensBeforeCounterAfterLater: a counter wait may be satisfied by
// a write queued after it; the order still follows the edge, and a cycle
// of waits is an error, not a hang.
func TestHappensBeforeCounterAfterLater(t *testing.T) {
	// consumer: wait-value (after #2); read. load: write page; write-value.
	trace := []*kvpb.LoadAccess{
		{Seq: 0, Stream: 1, After: 2, Kind: kvpb.LoadOpKind_LOAD_OP_KIND_WAIT_VALUE},
		op(1, 0, -1, false, 0, true, 0),
		{Seq: 2, Stream: 0, After: -1, Kind: kvpb.LoadOpKind_LOAD_OP_KIND_WRITE_VALUE},
		op(3, 1, -1, false, 0, false, 0),
	}
	if rs := races(t, trace...); len(rs) != 0 {
		t.Errorf("a read behind a counter wait on the writer's counter races: %+v", rs)
	}
	trace[2].After = 3 // the write now waits for what waits for it
	if _, err := newOrder(trace, []string{"load", "consumer"}); err == nil {
		t.Error("a cycle of waits was accepted")
	}
}
