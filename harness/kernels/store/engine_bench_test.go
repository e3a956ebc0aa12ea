package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/layout"
)

// BenchmarkEngineStore checks fusedstore's store of every engine cache as
// a default check run does: 8 heads × 128 (the layout's fixed shape where
// it has one), page size 64 (16 for the preshuffled indexer's tiles is a
// divisor; 64 is a multiple of every layout's page unit), pools past 4 GiB
// of byte offsets checked in live windows, capacity ≤ 512, checked ahead.
// Its cases/s is the rate a long `kvharness check --layout engines
// --heads 8` row settles at, its pools filled before the clock starts.
func BenchmarkEngineStore(b *testing.B) {
	for _, name := range layout.ModelNames() {
		d := layout.Dims{Heads: 8, HeadDim: 128, PageSize: 64}
		if layout.OneHead(name) {
			d.Heads = 1
		}
		if fixed := layout.FixedHeadDim(name); fixed != 0 {
			d.HeadDim = fixed
		}
		l, err := layout.BuiltinDims(name, d)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("layout=%s/H=%d/D=%d", name, d.Heads, d.HeadDim), func(b *testing.B) {
			p, dir := plugintest.Start(b, "fusedstore")
			tg, err := Open(context.Background(), p, dir, Config{Backend: arena.SHM{}, Layout: l,
				Slots: RowSlots(l, 1<<17, true, false), MaxCapacity: 512, Seed: 7, Sets: AutoSets})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { tg.Close(context.Background()) })
			if err := tg.fillAhead(); err != nil { // a run's setup, once a row: not a case's cost
				b.Fatal(err)
			}
			tg.Phases = Phases{}
			runCases(b, tg, 512)
			reportPhases(b, tg.Phases)
		})
	}
}
