package sdk_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	fused "github.com/kvharness/kvharness/plugins/fusedstore/kernel"
)

// rotationRows is how many rows each set of a rotation test stores.
const rotationRows = 16

// stageRotation stages sets stores of rotationRows rows side by side in
// the plan's staging window: set i's rows all hold the bf16 value 2^i and
// go to slots 100·i + 3·j of pool i mod the plan's pools, so each set's
// slots are its own. It returns the bench request's store and rotation.
func stageRotation(arena []byte, pl arenaPlan, sets int) (*kvpb.StoreRequest, []*kvpb.StoreRequest) {
	const d = 128
	var stores []*kvpb.StoreRequest
	for i := range sets {
		rowsOff, locOff := pl.rowsOff+i*rotationRows*2*d, pl.locOff+i*rotationRows*8
		for j := range rotationRows {
			for e := range d {
				binary.LittleEndian.PutUint16(arena[rowsOff+(j*d+e)*2:], rotationValue(i))
			}
			binary.LittleEndian.PutUint64(arena[locOff+8*j:], uint64(rotationSlot(i, j)))
		}
		stores = append(stores, &kvpb.StoreRequest{Pool: uint32(i % len(pl.pools)), Capacity: rotationRows, Valid: rotationRows,
			RowsOffset: uint64(rowsOff), LocOffset: uint64(locOff)})
	}
	return stores[0], stores[1:]
}

func rotationValue(set int) uint16 { return 0x3f80 + uint16(set)<<7 } // bf16 1, 2, 4, ...
func rotationSlot(set, j int) int  { return 100*set + 3*j }

// storedSets reports, per set, whether every one of its slots in its bf16
// pool holds its rows (true), or none does (false); a mix is an error.
func storedSets(t *testing.T, arena []byte, pl arenaPlan, sets int) []bool {
	t.Helper()
	const rowBytes = 256
	var got []bool
	for i := range sets {
		pool := int(pl.pools[i%len(pl.pools)].Pool.Offset)
		n := 0
		for j := range rotationRows {
			at := pool + rotationSlot(i, j)*rowBytes
			if binary.LittleEndian.Uint16(arena[at:]) == rotationValue(i) &&
				binary.LittleEndian.Uint16(arena[at+rowBytes-2:]) == rotationValue(i) {
				n++
			}
		}
		if n != 0 && n != rotationRows {
			t.Errorf("set %d: %d of its %d rows stored", i, n, rotationRows)
		}
		got = append(got, n == rotationRows)
	}
	return got
}

// rotationHost is the fused plugin attached to a shared-memory arena with
// a pool of each layout.
func rotationHost(t *testing.T, layouts ...string) (served, *hostArena, arenaPlan) {
	t.Helper()
	pl := newPlan(layouts, 128, 64, 1000, 64)
	h := newHostArena(t, pl.size)
	srv := serve(fused.Plugin)
	_, err := srv.Attach(context.Background(), pl.attach(h.desc(), ""))
	must(t, err)
	return srv, h, pl
}

// TestBenchRotation: launches take the store and its rotation in turn,
// here over two pools of one layout (sets 0 and 2 in the first, set 1 in
// the second). Two launches over three sets store the first two sets and
// leave the third's slots untouched; a third launch stores it.
func TestBenchRotation(t *testing.T) {
	for _, mode := range []kvpb.BenchMode{kvpb.BenchMode_BENCH_PER_LAUNCH, kvpb.BenchMode_BENCH_BATCHED} {
		t.Run(mode.String(), func(t *testing.T) {
			srv, h, pl := rotationHost(t, "bf16", "bf16")
			store, rotation := stageRotation(h.mem, pl, 3)
			req := &kvpb.BenchRequest{Store: store, Rotation: rotation,
				Iterations: 2, Mode: mode, Batch: 1}
			_, err := srv.Bench(context.Background(), req)
			must(t, err)
			if got := storedSets(t, h.mem, pl, 3); !got[0] || !got[1] || got[2] {
				t.Errorf("after 2 launches, sets stored: %v; want [true true false]", got)
			}
			req.Iterations = 3
			_, err = srv.Bench(context.Background(), req)
			must(t, err)
			if got := storedSets(t, h.mem, pl, 3); !got[0] || !got[1] || !got[2] {
				t.Errorf("after 3 launches, sets stored: %v; want all", got)
			}
		})
	}
}

// TestBenchRotationCopy: a rotating copy needs its bytes per buffer pair
// within the bench's bound, and times as many pairs.
func TestBenchRotationCopy(t *testing.T) {
	srv, store := attachedHost(t)
	req := &kvpb.BenchRequest{Store: store, Copy: true, CopyBytes: 1 << 20, Iterations: 3,
		Rotation: []*kvpb.StoreRequest{store, store, store}}
	resp, err := srv.Bench(context.Background(), req)
	must(t, err)
	checkSamples(t, "rotating copy", req, resp, "monotonic")
	req.CopyBytes = 5 << 30 // 4 pairs of 5 GiB: over the 16 GiB bound
	_, err = srv.Bench(context.Background(), req)
	wantStatus(t, err, codes.InvalidArgument, "over 4 buffer pairs")
	req.CopyBytes = 1 << 62 // 4 pairs of 2^62 bytes: 2^64, which wraps to 0 in uint64
	_, err = srv.Bench(context.Background(), req)
	wantStatus(t, err, codes.InvalidArgument, "over 4 buffer pairs")
}

func TestBenchRotationRefusals(t *testing.T) {
	srv, store := attachedHost(t)
	other := func(edit func(*kvpb.StoreRequest)) []*kvpb.StoreRequest {
		r := &kvpb.StoreRequest{Pool: store.Pool, Capacity: store.Capacity, Valid: store.Valid, Padding: store.Padding,
			RowsOffset: store.RowsOffset, LocOffset: store.LocOffset, Graph: store.Graph}
		edit(r)
		return []*kvpb.StoreRequest{r}
	}
	for name, tc := range map[string]struct {
		req  *kvpb.BenchRequest
		says string
	}{
		"no store": {&kvpb.BenchRequest{Empty: true, Iterations: 1, Rotation: []*kvpb.StoreRequest{store}}, "without a store"},
		"too many": {&kvpb.BenchRequest{Store: store, Iterations: 1,
			Rotation: make([]*kvpb.StoreRequest, 64)}, "at most 63"},
		"other valid": {&kvpb.BenchRequest{Store: store, Iterations: 1,
			Rotation: other(func(r *kvpb.StoreRequest) { r.Valid-- })}, "rotation[0]"},
		"other graph": {&kvpb.BenchRequest{Store: store, Iterations: 1,
			Rotation: other(func(r *kvpb.StoreRequest) { r.Graph = !r.Graph })}, "only the pool, rows_offset and loc_offset"},
		"bad offset": {&kvpb.BenchRequest{Store: store, Iterations: 1,
			Rotation: other(func(r *kvpb.StoreRequest) { r.RowsOffset = 1 << 40 })}, ""},
		"no such pool": {&kvpb.BenchRequest{Store: store, Iterations: 1,
			Rotation: other(func(r *kvpb.StoreRequest) { r.Pool = 5 })}, "pool 5"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := srv.Bench(context.Background(), tc.req)
			if tc.says == "" {
				wantStatus(t, err, codes.InvalidArgument)
				return
			}
			wantStatus(t, err, codes.InvalidArgument, tc.says)
		})
	}
}

// TestBenchRotationDevice: on the GPU too, launches (eager, and graph
// replays, one graph per data set) take the store and its rotation in
// turn.
func TestBenchRotationDevice(t *testing.T) {
	dev := openDevice(t)
	for _, graph := range []bool{false, true} {
		t.Run(fmt.Sprintf("graph=%v", graph), func(t *testing.T) {
			ctx := context.Background()
			p := startPlugin(t, "fusedstore")
			pl := newPlan([]string{"bf16", "bf16"}, 128, 64, 1000, 64)
			ga := newGPUArena(t, dev, pl.size)
			t.Cleanup(ga.free)
			t.Cleanup(func() { p.Detach(ctx) })
			_, err := p.Attach(ctx, ga, pl.attach(ga.desc(), ""))
			must(t, err)
			img := make([]byte, pl.size)
			store, rotation := stageRotation(img, pl, 3)
			ga.write(t, pl.rowsOff, img[pl.rowsOff:])
			for _, st := range append(rotation, store) {
				st.Graph = graph
			}
			req := &kvpb.BenchRequest{Store: store, Rotation: rotation, Iterations: 2}
			_, err = p.Bench(ctx, req)
			must(t, err)
			if got := storedSets(t, ga.read(t), pl, 3); !got[0] || !got[1] || got[2] {
				t.Errorf("after 2 launches, sets stored: %v; want [true true false]", got)
			}
			req.Iterations, req.Mode, req.Batch = 1, kvpb.BenchMode_BENCH_BATCHED, 3
			_, err = p.Bench(ctx, req)
			must(t, err)
			if got := storedSets(t, ga.read(t), pl, 3); !got[0] || !got[1] || !got[2] {
				t.Errorf("after a batch of 3, sets stored: %v; want all", got)
			}
		})
	}
}

// TestBenchRotationOtherLayout: a rotation into a pool of another layout
// would time another kernel; it is refused, naming both pools.
func TestBenchRotationOtherLayout(t *testing.T) {
	srv, h, pl := rotationHost(t, "bf16", "fp8-paged")
	store, rotation := stageRotation(h.mem, pl, 2)
	_, err := srv.Bench(context.Background(), &kvpb.BenchRequest{Store: store, Rotation: rotation, Iterations: 1})
	wantStatus(t, err, codes.InvalidArgument, "rotation[0] stores into pool 1", "share one layout")
}

// TestBenchRotationAcrossCalls: the harness splits a cell into Bench calls;
// each goes on with the set after the last one launched, so one launch a
// call over three sets still stores every set, and a copy's cursor does
// not move the store's.
func TestBenchRotationAcrossCalls(t *testing.T) {
	srv, h, pl := rotationHost(t, "bf16", "bf16")
	store, rotation := stageRotation(h.mem, pl, 3)
	one := &kvpb.BenchRequest{Store: store, Rotation: rotation, Iterations: 1}
	copyOne := &kvpb.BenchRequest{Store: store, Rotation: rotation, Iterations: 1,
		Copy: true, CopyBytes: 4096}
	for i, want := range [][]bool{{true, false, false}, {true, true, false}, {true, true, true}} {
		_, err := srv.Bench(context.Background(), one)
		must(t, err)
		_, err = srv.Bench(context.Background(), copyOne)
		must(t, err)
		if got := storedSets(t, h.mem, pl, 3); !slices.Equal(got, want) {
			t.Errorf("after call %d of one launch: sets stored %v; want %v", i+1, got, want)
		}
	}
}
