package store

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/rundir"
)

// TestArenaRotation: a rotating arena stages one pool, rows and slots per
// data set (a model's layers), each set's slots distinct and inside its
// pool, and a cell's request names the first set as its store and the
// others, in order, as its rotation.
func TestArenaRotation(t *testing.T) {
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	dir, err := rundir.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	l, err := layout.Builtin("bf16", 128, 16)
	if err != nil {
		t.Fatal(err)
	}
	m := kind.BenchSetup{Tokens: []int{8, 64}, Slots: 256, Rotate: 3, Seed: 1, HeadDim: 128, PageSize: 16}
	a, err := stageArena(func(size int) (arena.Memory, error) { return shm.New(dir, size) }, l, m)
	if err != nil {
		t.Fatal(err)
	}
	defer a.mem.Close()
	if len(a.sets) != 3 || len(a.geo.Regions) != 3 {
		t.Fatalf("%d data sets in %d pools, want 3 in 3", len(a.sets), len(a.geo.Regions))
	}
	rows := map[string]bool{}
	for k, set := range a.sets {
		if r := a.geo.Regions[set.pool]; set.pool != k || r.Layout != l || r.Slots != m.Slots {
			t.Errorf("set %d in pool %d (%s, %d slots); want pool %d of the layout's %d slots", k, set.pool, r.Layout.Name, r.Slots, k, m.Slots)
		}
		loc := make([]byte, 8*64)
		row := make([]byte, l.RowBytes())
		if err := a.mem.ReadAt(loc, set.locOff); err != nil {
			t.Fatal(err)
		}
		if err := a.mem.ReadAt(row, set.rowsOff); err != nil {
			t.Fatal(err)
		}
		rows[string(row)] = true
		var slots []int64
		for i := range 64 {
			s := int64(binary.LittleEndian.Uint64(loc[8*i:]))
			if s < 0 || s >= int64(m.Slots) {
				t.Errorf("set %d, row %d: slot %d outside the pool's %d", k, i, s, m.Slots)
			}
			slots = append(slots, s)
		}
		slices.Sort(slots)
		if n := len(slices.Compact(slots)); n != 64 {
			t.Errorf("set %d: %d distinct slots of 64", k, n)
		}
	}
	if len(rows) != 3 {
		t.Errorf("the sets' first rows: %d distinct of 3", len(rows))
	}
	req := a.Request(results.Identity{Kernel: string(Name), Tokens: 8, Mode: results.Graph, Cache: results.Hot})
	stores := append([]*kvpb.StoreRequest{req.GetStore()}, req.Rotation...)
	if len(stores) != 3 {
		t.Fatalf("request rotates over %d stores, want 3", len(stores))
	}
	for k, st := range stores {
		if st.Pool != uint32(k) || st.Capacity != 8 || st.Valid != 8 || !st.Graph {
			t.Errorf("store %d: %+v; want pool %d, capacity and valid 8, graph", k, st, k)
		}
		if st.RowsOffset != uint64(a.sets[k].rowsOff) || st.LocOffset != uint64(a.sets[k].locOff) {
			t.Errorf("store %d at rows %d, slots %d; want set %d's %+v", k, st.RowsOffset, st.LocOffset, k, a.sets[k])
		}
	}
}

// TestDrawSlots: slots come in whole runs of consecutive slots, each run
// aligned to its length and the runs distinct; run 1 draws distinct
// slots; a short draw ends inside a run.
func TestDrawSlots(t *testing.T) {
	for _, tc := range []struct{ slots, run, n int }{{1000, 1, 1000}, {1000, 1, 7}, {1000, 64, 960}, {1000, 64, 100}, {4096, 16, 1}} {
		got := drawSlots(rand.New(rand.NewPCG(1, 2)), tc.slots, tc.run, tc.n)
		if len(got) != tc.n {
			t.Fatalf("%+v: %d slots", tc, len(got))
		}
		seen := map[int]bool{}
		for i, s := range got {
			if s < 0 || s >= tc.slots/tc.run*tc.run || seen[s] {
				t.Errorf("%+v: slot %d = %d out of the whole runs or repeated", tc, i, s)
			}
			seen[s] = true
			if s%tc.run != i%tc.run || (i%tc.run != 0 && s != got[i-1]+1) {
				t.Errorf("%+v: slot %d = %d is not at offset %d of a run that follows slot %d", tc, i, s, i%tc.run, i-1)
			}
		}
	}
	if a, b := drawSlots(rand.New(rand.NewPCG(1, 2)), 1<<20, 1, 64), drawSlots(rand.New(rand.NewPCG(1, 2)), 1<<20, 1, 64); !slices.Equal(a, b) {
		t.Error("the same seed drew other slots")
	}
}

// BytesMoved counts a store's rows, slots and token bytes, and a copy's
// rows read and written: the two differ, which is why only their times
// are compared.
func TestBytesMoved(t *testing.T) {
	l, err := layout.Builtin("bf16", 128, 64)
	if err != nil {
		t.Fatal(err)
	}
	store := results.Identity{Kernel: string(Name), Tokens: 10}
	copyID := results.Identity{Kernel: results.KernelCopy, Tokens: 10}
	if got, want := BytesMoved(l, store), int64(10*(256+8+256)); got != want { // 128 bf16 in, an 8-byte slot, 256 bytes out
		t.Errorf("store bytes %d, want %d", got, want)
	}
	if got, want := BytesMoved(l, copyID), int64(10*2*256); got != want {
		t.Errorf("copy bytes %d, want %d", got, want)
	}
	if got := BytesMoved(l, results.Identity{Kernel: results.KernelEmpty, Tokens: 1}); got != 0 {
		t.Errorf("empty kernel moves %d bytes", got)
	}
}

func TestCheckRotates(t *testing.T) {
	old := &plugin.Description{Name: "tritonstore"}
	if err := checkRotates(old, kind.BenchSetup{Rotate: 1}); err != nil {
		t.Errorf("rotate 1 refused for a plugin that does not rotate: %v", err)
	}
	if err := checkRotates(old, kind.BenchSetup{Rotate: 4}); err == nil || !strings.Contains(err.Error(), "tritonstore does not declare bench_rotation") {
		t.Errorf("rotate 4 for a plugin that does not rotate: %v; want a refusal naming it", err)
	}
	if err := checkRotates(&plugin.Description{Name: "p", BenchRotation: true}, kind.BenchSetup{Rotate: 4}); err != nil {
		t.Errorf("rotate 4 for a plugin that rotates: %v", err)
	}
}
