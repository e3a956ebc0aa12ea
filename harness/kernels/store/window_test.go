package store

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
)

// TestCaptureAllSplitsByRun: one scan of several runs' footprints, some
// touching or interleaved with another run's, gives each run exactly what
// a scan of its own windows finds.
func TestCaptureAllSplitsByRun(t *testing.T) {
	const size = 1 << 16
	m, err := shm.New(&rundir.Dir{Path: t.TempDir()}, size)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Fill(pool.Window{Off: 0, Len: size}, 9); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 2))
	for range 200 {
		b := make([]byte, 1+rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if err := m.WriteAt(b, rng.IntN(size-40)); err != nil {
			t.Fatal(err)
		}
	}
	regions := []pool.Region{{Pool: pool.Window{Off: 0}}, {Pool: pool.Window{Off: 1000}}, {Pool: pool.Window{Off: 5}}}
	ws := make([][]pool.Window, len(regions))
	for at := 0; at+64 < size; {
		k := rng.IntN(len(regions))
		l := 1 + rng.IntN(64)
		ws[k] = append(ws[k], pool.Window{Off: at, Len: l})
		at += l + rng.IntN(3) // windows of different runs touch now and then
	}
	for k := range ws {
		ws[k] = mergeWindows(ws[k])
	}
	deltas, err := captureAll(m, regions, ws)
	if err != nil {
		t.Fatal(err)
	}
	for k := range ws {
		want, b, err := m.ChangedIn(ws[k])
		if err != nil {
			t.Fatal(err)
		}
		got := make([]pool.Window, len(deltas[k].Windows))
		for i, w := range deltas[k].Windows {
			got[i] = pool.Window{Off: w.Off + regions[k].Pool.Off, Len: w.Len}
		}
		if len(want) == 0 {
			want = []pool.Window{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: captureAll found %v; a scan of its own windows %v", k, got, want)
		}
		if !bytes.Equal(deltas[k].Bytes, b) {
			t.Fatalf("run %d: captureAll's bytes differ from its own scan's", k)
		}
		if len(want) == 0 {
			t.Fatalf("run %d changed nothing: the test means every run to see changes", k)
		}
	}
}
