package store

import (
	"context"
	"math/rand"
	"testing"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
)

// bugResult is a predicate's verdict as a property run reads it.
type bugResult bool

func (r bugResult) Failed() bool           { return bool(r) }
func (r bugResult) Has(k oracle.Kind) bool { return bool(r) && k == oracle.Value }
func (r bugResult) Primary() oracle.Kind {
	if r {
		return oracle.Value
	}
	return ""
}

// bugSystem is a store bug written as a predicate on the case, run
// through the property runner with the real shrinker: how many
// candidates a shrink takes and where it stops, without a plugin.
type bugSystem struct {
	gen   *Gen
	bug   func(*Case) bool
	first *Case // the first case that failed
}

func (b *bugSystem) Draw(rng *rand.Rand) *Case { return b.gen.Draw(rng) }
func (b *bugSystem) Shrink(c *Case) []*Case    { return Shrink(c) }
func (b *bugSystem) Restart(context.Context) error {
	return nil
}

func (b *bugSystem) Check(_ context.Context, c *Case) (bugResult, error) {
	failed := b.bug(c)
	if failed && b.first == nil {
		b.first = c
	}
	return bugResult(failed), nil
}

// tileBug is the tile-offset mutant's bug: a valid row past the first
// tile of 256 is stored from the row before it, which shows when the
// two differ.
func tileBug(c *Case) bool {
	for i := 256; i < c.Valid; i++ {
		if c.Rows[i] != c.Rows[i-1] {
			return true
		}
	}
	return false
}

// TestShrinkReachesManyRowMinimumWithinTheBound: a bug that needs 257
// valid rows shrinks to exactly 257, no padded row, within the default
// candidate bound, from the large cases a default run draws; bugs of one
// row shrink to one row in as few candidates as before.
func TestShrinkReachesManyRowMinimumWithinTheBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		bug      func(*Case) bool
		capacity int
		valid    int
		within   int // candidates, at most
	}{
		{"tile-offset", tileBug, 257, 257, property.DefaultShrinkChecks},
		{"any-valid-row", func(c *Case) bool { return c.Valid > 0 }, 1, 1, 200},
		{"padded-row", func(c *Case) bool { return c.Capacity() > c.Valid }, 1, 0, 200},
		{"two-far-rows", func(c *Case) bool { return c.Valid >= 2 && c.Loc[0] > c.Loc[c.Valid-1] }, 2, 2, 500},
	} {
		for _, pad := range Paddings {
			for seed := range int64(4) {
				sys := &bugSystem{gen: &Gen{Slots: 4096, PageSize: 64, Padding: pad, MaxCapacity: 512}, bug: tc.bug}
				o := property.Run(context.Background(), sys, property.Config{Cases: 300, Seed: seed})
				f := o.Failure
				if f == nil {
					if tc.name == "padded-row" && pad == PadNone || tc.name == "tile-offset" && pad != PadNone && seed > 1 {
						continue // never drawn: no padding, or no case of 257 valid rows in these seeds
					}
					t.Errorf("%s %s seed %d: not found", tc.name, pad, seed)
					continue
				}
				c := f.Case
				if c.Capacity() != tc.capacity || c.Valid != tc.valid || f.ShrinkCut {
					t.Errorf("%s %s seed %d: shrunk to C=%d n=%d (cut: %v) in %d candidates, want C=%d n=%d",
						tc.name, pad, seed, c.Capacity(), c.Valid, f.ShrinkCut, f.ShrinkChecks, tc.capacity, tc.valid)
				}
				if f.ShrinkChecks > tc.within {
					t.Errorf("%s %s seed %d: %d candidates, want at most %d", tc.name, pad, seed, f.ShrinkChecks, tc.within)
				}
				t.Logf("%s %s seed %d: from C=%d to C=%d n=%d: %d steps of %d candidates",
					tc.name, pad, seed, sys.first.Capacity(), c.Capacity(), c.Valid, f.Shrinks, f.ShrinkChecks)
			}
		}
	}
}
