package sdk_test

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"google.golang.org/grpc/codes"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	fused "github.com/kvharness/kvharness/plugins/fusedstore/kernel"
)

// readWindows places a read's staging in a plan's staging, 256-byte
// aligned: queries, list bounds, tokens, out slots, out scores.
type readWindows struct{ queries, indptr, tokens, outSlots, outScores int }

func placeRead(pl arenaPlan, requests, tokens, k, d int) readWindows {
	at := pl.rowsOff
	next := func(n int) int {
		x := at
		at += align256(n)
		return x
	}
	return readWindows{next(2 * requests * d), next(8 * (requests + 1)), next(8 * tokens), next(8 * requests * k), next(4 * requests * k)}
}

func (w readWindows) request(pool, requests, k int) *kvpb.ReadRequest {
	return &kvpb.ReadRequest{Pool: uint32(pool), Requests: uint32(requests), K: uint32(k),
		QueriesOffset: uint64(w.queries), IndptrOffset: uint64(w.indptr), TokensOffset: uint64(w.tokens),
		OutSlotsOffset: uint64(w.outSlots), OutScoresOffset: uint64(w.outScores)}
}

// stageRead writes random queries and the lists into staging.
func stageRead(mem []byte, w readWindows, rng *rand.Rand, d int, lists [][]int64) {
	for i := range len(lists) * d {
		binary.LittleEndian.PutUint16(mem[w.queries+2*i:], uint16(rng.Uint32()&0x3fff)) // finite, moderate
	}
	n := 0
	binary.LittleEndian.PutUint64(mem[w.indptr:], 0)
	for r, l := range lists {
		for _, s := range l {
			binary.LittleEndian.PutUint64(mem[w.tokens+8*n:], uint64(s))
			n++
		}
		binary.LittleEndian.PutUint64(mem[w.indptr+8*(r+1):], uint64(n))
	}
}

// directRead runs the fused kernel's Read on an arena image.
func directRead(t *testing.T, arena []byte, pl arenaPlan, pool int, w readWindows, requests, tokens, k int) {
	pd := pl.pools[pool]
	d := int(pd.Layout.HeadDim)
	view := func(off int) unsafe.Pointer { return unsafe.Pointer(&arena[off]) }
	call := &read.Call{Arena: arena, Requests: requests, K: k,
		Pool: sdk.Pool{Name: pd.Name, Slots: int(pd.Slots), Base: int(pd.Pool.Offset), Bytes: int(pd.Pool.Size),
			Layout: sdk.Layout{Name: pd.Layout.Name, HeadDim: d, PageSize: int(pd.Layout.PageSize)}},
		Queries:   unsafe.Slice((*uint16)(view(w.queries)), requests*d),
		Indptr:    unsafe.Slice((*int64)(view(w.indptr)), requests+1),
		Tokens:    unsafe.Slice((*int64)(view(w.tokens)), tokens),
		OutSlots:  unsafe.Slice((*int64)(view(w.outSlots)), requests*k),
		OutScores: unsafe.Slice((*float32)(view(w.outScores)), requests*k)}
	must(t, fused.Plugin.Kernel.(read.Reader).Read(context.Background(), call))
}

// TestReadHost: a read through the server over shared memory leaves what
// the kernel called directly on a copy of the arena leaves, and writes
// nothing but the out windows.
func TestReadHost(t *testing.T) {
	ctx := context.Background()
	pl := newPlan([]string{"bf16", "fp8-paged", "fp8-rows"}, 128, 64, 400, 130)
	h := newHostArena(t, pl.size)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range h.mem {
		h.mem[i] = byte(rng.Uint32() & 0x3f) // keys of moderate, finite values
	}
	srv := serve(fused.Plugin)
	_, err := srv.Attach(ctx, pl.attach(h.desc(), ""))
	must(t, err)
	lists := [][]int64{{0, 63, 64, 399}, nil, {5}, {7, 8, 9, 10, 11, 12}}
	const k = 3
	w := placeRead(pl, len(lists), 11, k, 128)
	for pool := range pl.pools {
		stageRead(h.mem, w, rng, 128, lists)
		want := slices.Clone(h.mem)
		directRead(t, want, pl, pool, w, len(lists), 11, k)
		before := slices.Clone(h.mem)
		_, err := srv.Read(ctx, w.request(pool, len(lists), k))
		must(t, err)
		if i := oracle.FirstDiff(h.mem, want); i >= 0 {
			t.Fatalf("pool %d: server and kernel differ at byte %d", pool, i)
		}
		for i := range h.mem {
			if h.mem[i] != before[i] && !(i >= w.outSlots && i < w.outSlots+8*len(lists)*k) && !(i >= w.outScores && i < w.outScores+4*len(lists)*k) {
				t.Fatalf("pool %d: byte %d outside the out windows changed", pool, i)
			}
		}
		if s := int64(binary.LittleEndian.Uint64(h.mem[w.outSlots+8*k:])); s != -1 { // request 1 is empty
			t.Errorf("pool %d: an empty list returned slot %d", pool, s)
		}
		if f := math.Float32frombits(binary.LittleEndian.Uint32(h.mem[w.outScores+4*k:])); f == f {
			t.Errorf("pool %d: an empty list returned score %v", pool, f)
		}
	}
}

// TestReadRejects: the SDK refuses what would make a kernel read or write
// outside its windows, before the kernel runs.
func TestReadRejects(t *testing.T) {
	ctx := context.Background()
	pl := newPlan([]string{"bf16"}, 128, 64, 100, 130)
	h := newHostArena(t, pl.size)
	srv := serve(fused.Plugin)
	w := placeRead(pl, 2, 4, 2, 128)
	if _, err := srv.Read(ctx, w.request(0, 2, 2)); err == nil {
		t.Fatal("read before attach accepted")
	}
	_, err := srv.Attach(ctx, pl.attach(h.desc(), ""))
	must(t, err)
	good := func() { stageRead(h.mem, w, rand.New(rand.NewPCG(1, 1)), 128, [][]int64{{1, 2}, {3, 4}}) }
	put := func(off int, v int64) { binary.LittleEndian.PutUint64(h.mem[off:], uint64(v)) }
	for _, tc := range []struct {
		name  string
		spoil func(r *kvpb.ReadRequest)
		says  string
	}{
		{"pool", func(r *kvpb.ReadRequest) { r.Pool = 3 }, "only 1 attached"},
		{"queries outside", func(r *kvpb.ReadRequest) { r.QueriesOffset = uint64(pl.size) }, "queries"},
		{"indptr misaligned", func(r *kvpb.ReadRequest) { r.IndptrOffset++ }, "aligned"},
		{"indptr start", func(r *kvpb.ReadRequest) { put(w.indptr, 1) }, "indptr[0]"},
		{"indptr decreasing", func(r *kvpb.ReadRequest) { put(w.indptr+8, 3); put(w.indptr+16, 2) }, "never decrease"},
		{"token slot", func(r *kvpb.ReadRequest) { put(w.tokens+8, 100) }, "slot 100"},
		{"negative token", func(r *kvpb.ReadRequest) { put(w.tokens, -1) }, "slot -1"},
		{"outputs over tokens", func(r *kvpb.ReadRequest) { r.OutSlotsOffset = uint64(w.tokens) }, "overlaps tokens"},
		{"outputs over each other", func(r *kvpb.ReadRequest) { r.OutScoresOffset = uint64(w.outSlots) }, "overlaps"},
		{"huge k", func(r *kvpb.ReadRequest) { r.K = 1 << 31 }, "do not fit"},
	} {
		good()
		r := w.request(0, 2, 2)
		tc.spoil(r)
		_, err := srv.Read(ctx, r)
		wantStatus(t, err, codes.InvalidArgument, tc.says)
	}
	good()
	_, err = srv.Read(ctx, w.request(0, 2, 2))
	must(t, err)
}

func TestReadWithoutReader(t *testing.T) {
	ctx := context.Background()
	pl := newPlan([]string{"bf16"}, 128, 64, 100, 130)
	h := newHostArena(t, pl.size)
	srv := serve(testPlugin(hostOnly{}))
	_, err := srv.Attach(ctx, pl.attach(h.desc(), ""))
	must(t, err)
	w := placeRead(pl, 1, 0, 1, 128)
	_, err = srv.Read(ctx, w.request(0, 1, 1))
	wantStatus(t, err, codes.Unimplemented, "unknown service kvharness.v1.Read")
}

func TestReadVariantsAreMarked(t *testing.T) {
	v := read.Variant("x", "does y")
	if !read.IsVariant(v) || read.IsVariant(sdk.Variant{Name: "x", Doc: "does y"}) || v.Doc != "does y" {
		t.Errorf("ReadVariant = %+v", v)
	}
}
