package benchrun

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
)

// TestArenaRotation: a rotating arena stages one pool, rows and slots per
// data set (a model's layers), each set's slots distinct and inside its
// pool, and a cell's request names the first set as its store and the
// others, in order, as its rotation.
func TestArenaRotation(t *testing.T) {
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	dir, err := pool.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	l, err := layout.Builtin("bf16", 128, 16)
	if err != nil {
		t.Fatal(err)
	}
	m := Default("p")
	m.Tokens, m.Slots, m.Rotate = []int{8, 64}, 256, 3
	a, err := stageArena(func(size int) (pool.Memory, error) { return pool.NewSHM(dir, size) }, l, m)
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
	req := a.Request(results.Identity{Kernel: KernelStore, Tokens: 8, Mode: results.Graph, Cache: results.Hot})
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
