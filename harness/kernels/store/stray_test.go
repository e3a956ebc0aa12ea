package store

import (
	"context"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/fdpass"
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fd, err := fdpass.Receive(ctx, path) // the arena's descriptor, as a plugin receives it
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), path)
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

// TestStrayWriteToKeptPageIsCaught: a lazy target keeps the pages recent
// cases named materialized (release); a write into one of them, through
// a mapping of its own, by the kernel of a later case that names other
// slots, fails that case, as a write into a hole does. Without the write
// the same cases pass.
func TestStrayWriteToKeptPageIsCaught(t *testing.T) {
	for _, stray := range []bool{false, true} {
		tg := openTargetSets(t, "fusedstore", "bf16", "", 1<<17, false)
		far := &Case{Padding: PadNone, Valid: 1, Loc: []int64{100_000}, Rows: []workload.Row{{Kind: workload.RowNormal, Seed: 1}}}
		near := &Case{Padding: PadNone, Valid: 1, Loc: []int64{3}, Rows: []workload.Row{{Kind: workload.RowNormal, Seed: 2}}}
		if res, err := tg.Check(context.Background(), far); err != nil || res.Failed() {
			t.Fatalf("case at slot 100000: %v %v", res, err)
		}
		at := tg.Region().Pool.Off + tg.Layout.Footprint(100_000)[0].Off + 17 // inside the far case's row
		page := pool.Window{Off: at &^ (os.Getpagesize() - 1), Len: os.Getpagesize()}
		if tg.lazy == nil || tg.lazy.HeldIn(page, 0) == 0 {
			t.Fatalf("the page of slot 100000 is not held after its case: the test needs it kept")
		}
		if stray {
			strayByte(t, tg.Mem().Desc().Path, at)
		}
		res, err := tg.Check(context.Background(), near)
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed() != stray {
			t.Errorf("stray write into a kept page %v: failed = %v (%v)", stray, res.Failed(), res)
		}
	}
}
