package shm

import (
	"os"
	"testing"

	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
)

// BenchmarkFarArenas is what a check pays per cell in the arena before
// its first case: an arena of three far pools (past 4 GiB each, holes but
// for their live windows) filled lazily with the run's seed, their live
// windows materialized and scanned once, and closed. A check opens one
// such arena per cell, every one with the same seed.
func BenchmarkFarArenas(b *testing.B) {
	root, err := os.MkdirTemp("/dev/shm", "kvharness-bench-")
	if err != nil {
		b.Skipf("no /dev/shm to hold a sparse arena: %v", err)
	}
	defer os.RemoveAll(root)
	b.Setenv("KVHARNESS_RUNTIME_DIR", root)
	dir, err := rundir.Open()
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	const far = pool.FarBytes
	live := func(at int) []pool.Window { // a pool's live windows, as pool.LiveWindows draws them
		var ws []pool.Window
		for _, w := range []pool.Window{{Off: 0, Len: 1 << 20}, {Off: 16 << 20, Len: 256 << 10}, {Off: 1 << 31, Len: 256 << 10},
			{Off: 1 << 32, Len: 256 << 10}, {Off: far - 256<<10, Len: 256 << 10}} {
			ws = append(ws, pool.Window{Off: at + w.Off, Len: w.Len})
		}
		return ws
	}
	b.SetBytes(3 * (1<<20 + 4*256<<10))
	for b.Loop() {
		m, err := NewSparse(dir, 3*far+pageBytes, 64<<20)
		if err != nil {
			b.Fatal(err)
		}
		for i := range 3 {
			w := pool.Window{Off: pageBytes + i*far, Len: far}
			if err := m.FillLazy(w, 1); err != nil {
				b.Fatal(err)
			}
			ws := live(w.Off)
			if err := m.Materialize(ws); err != nil {
				b.Fatal(err)
			}
			for _, x := range ws {
				if changed, err := m.Changed(x); err != nil || len(changed) > 0 {
					b.Fatalf("Changed(%v) = %v, %v", x, changed, err)
				}
			}
		}
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
