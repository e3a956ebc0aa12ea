package store

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/workload"
)

// eachDrawn calls f on n cases of each padding convention, drawn from
// one stream of seed by generators of slots slots in pages of pageSize
// and at most maxCapacity rows.
func eachDrawn(seed int64, slots, pageSize, maxCapacity, n int, f func(c *Case)) {
	rng := rand.New(rand.NewSource(seed))
	for _, p := range Paddings {
		g := &Gen{Slots: slots, PageSize: pageSize, Padding: p, MaxCapacity: maxCapacity}
		for range n {
			f(g.Draw(rng))
		}
	}
}

func TestGeneratedCasesAreValid(t *testing.T) {
	eachDrawn(1, 300, 64, 512, 500, func(c *Case) {
		if err := c.Validate(300); err != nil {
			t.Fatalf("%s: %v: %v", c.Padding, c, err)
		}
	})
}

// TestGeneratorIsAdversarial checks that the places kernels get wrong are
// actually drawn, not just possible.
func TestGeneratorIsAdversarial(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	g := &Gen{Slots: 4096, PageSize: 64, Padding: PadCount, MaxCapacity: 64}
	seen := map[string]bool{}
	for range 300 {
		c := g.Draw(rng)
		valid := map[int64]bool{}
		for i, s := range c.Loc {
			if i < c.Valid {
				valid[s] = true
				seen["slot0"] = seen["slot0"] || s == 0
				seen["last"] = seen["last"] || s == 4095
				seen["edge"] = seen["edge"] || (s%64 == 0 || s%64 == 63) && s != 0 && s != 4095
				seen["neighbour"] = seen["neighbour"] || valid[s-1] || valid[s+1]
			} else {
				seen["stale-live"] = seen["stale-live"] || valid[s]
			}
			seen["zero-row"] = seen["zero-row"] || c.Rows[i].Kind == workload.RowZero
		}
		seen["n=0"] = seen["n=0"] || c.Valid == 0
		seen["n=C"] = seen["n=C"] || c.Valid == c.Capacity()
	}
	for _, k := range []string{"slot0", "last", "edge", "neighbour", "stale-live", "zero-row", "n=0", "n=C"} {
		if !seen[k] {
			t.Errorf("300 count cases never drew %s", k)
		}
	}
}

func TestShrinkKeepsValidityAndShrinks(t *testing.T) {
	eachDrawn(3, 500, 16, 40, 50, func(c *Case) {
		kindtest.Shrinks(t, c, 500, Shrink, func(s, c *Case) bool { return s.Capacity() <= c.Capacity() })
	})
	big := &Case{Padding: PadSink, Valid: 1, Loc: []int64{9, 0, 0}, Rows: make([]workload.Row, 3)}
	var single bool
	for _, s := range Shrink(big) {
		single = single || (s.Capacity() == 1 && s.Valid == 0)
	}
	if !single {
		t.Error("no one-row padded candidate among the shrinks of a padded case")
	}
}

func TestDecodeAlwaysValid(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for i := range 2000 {
		data := make([]byte, rng.Intn(200))
		rng.Read(data)
		c := Decode(data, 100, 8, 64)
		if err := c.Validate(100); err != nil {
			t.Fatalf("input %d (%x): %v: %v", i, data, c, err)
		}
	}
	if err := Decode(nil, 100, 8, 64).Validate(100); err != nil {
		t.Fatalf("empty input: %v", err)
	}
}

// TestFreeProbesAsDefined: free, which walks its sorted taken slots
// alongside the probe, picks the slot a probe that looks each next slot
// up picks (the definition), wrap-around included, so decoded inputs keep
// their cases.
func TestFreeProbesAsDefined(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	for _, p := range Paddings {
		for _, slots := range []int{8, 100, 1 << 17} {
			g := &Gen{Slots: slots, Padding: p}
			u := int64(g.usable())
			for range 300 {
				taken, set := []int64(nil), map[int64]bool{}
				for range rng.Intn(int(min(u, 64))) {
					x := int64(rng.Uint32()) // a raw choice, or one that collides
					if rng.Intn(2) == 0 {
						x = int64(slots - 1 - rng.Intn(3))
					}
					slot := g.free(x, taken)
					want := g.lowest() + (x-g.lowest()%u+u)%u
					for set[want] {
						want = g.lowest() + (want-g.lowest()+1)%u
					}
					if slot != want || set[slot] {
						t.Fatalf("%s, %d slots: free = %d; want %d (taken %v)", p, slots, slot, want, taken)
					}
					set[slot] = true
					at, _ := slices.BinarySearch(taken, slot)
					taken = slices.Insert(taken, at, slot)
				}
			}
		}
	}
}

func TestEncodeInvertsDecode(t *testing.T) {
	eachDrawn(5, 4096, 64, 64, 200, func(c *Case) {
		for i := range c.Rows {
			c.Rows[i].Seed %= 256 // fuzz rows carry one seed byte
		}
		back := Decode(Encode(c, 64), 4096, 64, 64)
		if diff := cmp.Diff(c, back); diff != "" {
			t.Fatalf("Decode(Encode(%v)) differs (-want +got):\n%s", c, diff)
		}
	})
}

func TestValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Case
	}{
		{"duplicate valid slot", Case{Padding: PadCount, Valid: 2, Loc: []int64{3, 3}, Rows: make([]workload.Row, 2)}},
		{"sink valid at 0", Case{Padding: PadSink, Valid: 1, Loc: []int64{0}, Rows: make([]workload.Row, 1)}},
		{"minus1 wrong pad", Case{Padding: PadMinus1, Valid: 0, Loc: []int64{0}, Rows: make([]workload.Row, 1)}},
		{"slot past end", Case{Padding: PadNone, Valid: 1, Loc: []int64{100}, Rows: make([]workload.Row, 1)}},
		{"garbage valid row", Case{Padding: PadNone, Valid: 1, Loc: []int64{1}, Rows: []workload.Row{{Kind: workload.RowGarbage}}}},
		{"none with padding", Case{Padding: PadNone, Valid: 0, Loc: []int64{1}, Rows: make([]workload.Row, 1)}},
		{"empty", Case{Padding: PadNone}},
		{"rows mismatch", Case{Padding: PadNone, Valid: 1, Loc: []int64{1}}},
	} {
		if err := tc.c.Validate(100); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
