package store

import (
	"context"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/workload"
)

// TestStrayWriteAnywhereIsCaught: a write into the case pool far from
// every slot a case names, made through a mapping of the arena file of
// its own (as a plugin writes), fails the next check, whether the pool is
// held as bytes (4,096 slots) or as holes of the sparse file (131,072
// slots, lazy.go); without the write the same case passes.
func TestStrayWriteAnywhereIsCaught(t *testing.T) {
	for _, slots := range []int{4096, 1 << 17} {
		for _, stray := range []bool{false, true} {
			tg := openTargetSets(t, "fusedstore", "bf16", "", slots, false)
			c := &Case{Padding: PadNone, Valid: 1, Loc: []int64{3}, Rows: []workload.Row{{Kind: workload.RowNormal, Seed: 1}}}
			if stray {
				pool := tg.Region().Pool
				strayByte(t, tg.Mem().Desc().Path, pool.Off+pool.Len*3/4+77)
			}
			res, err := tg.Check(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed() != stray {
				t.Errorf("%d slots, stray write %v: failed = %v (%v)", slots, stray, res.Failed(), res)
			}
		}
	}
}

// strayByte flips the byte at arena offset off through a new shared
// mapping of the arena file at path.
func strayByte(t *testing.T, path string, off int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := off &^ (os.Getpagesize() - 1)
	m, err := unix.Mmap(int(f.Fd()), int64(page), os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	m[off-page] ^= 0x5A
	if err := unix.Munmap(m); err != nil {
		t.Fatal(err)
	}
}
