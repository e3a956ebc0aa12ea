package store

import (
	"math/rand"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
)

// flashinferTable is FlashInfer's own test's shape, cut down: page size
// 4, three real requests (the second sharing the first's prefix page,
// the third of an empty last page) and a padded one.
func flashinferTable() *PageTable {
	return &PageTable{PageSize: 4,
		Indptr:      []int32{0, 2, 4, 6, 6},
		Indices:     []int32{7, 3, 7, 9, 5, 2},
		LastPageLen: []int32{3, 2, 0, 0},
		//           req 0 at 5, 6; req 1 at 5; req 2 at 3; padded: req 3, req 0 at its length, req 2 at its length
		Batch:     []int32{0, 0, 1, 2, 3, 0, 2},
		Positions: []int32{5, 6, 5, 3, 0, 7, 4},
	}
}

// TestPageTablePlace: slots written out by hand from the page lists.
func TestPageTablePlace(t *testing.T) {
	tb := flashinferTable()
	// req 0: pages 7, 3 → positions 0..3 in slots 28..31, 4..6 in 12..14 (length 7)
	// req 1: pages 7, 9 → position 5 is slot 37 (length 6)
	// req 2: pages 5, 2, last empty → length 4; position 3 is slot 23
	// padded: req 3 has no pages; req 0 position 7 is entry 3 of page 3 = slot 15;
	// req 2 position 4 is entry 0 of its empty last page 2 = slot 8.
	want := []int64{13, 14, 37, 23, -1, 15, 8}
	if got := tb.Slots(); !slices.Equal(got, want) {
		t.Fatalf("slots %v; want %v", got, want)
	}
	for i, ok := range []bool{true, true, true, true, false, false, false} {
		if _, _, got := tb.Place(i); got != ok {
			t.Errorf("row %d (%s): inside its request %v; want %v", i, tb.Where(i), got, ok)
		}
	}
	if err := tb.Validate(64, 4); err != nil {
		t.Fatal(err)
	}
	if err := tb.Validate(64, 5); err == nil || !strings.Contains(err.Error(), "row 4") {
		t.Errorf("a padded row counted valid: %v", err)
	}
	if got := tb.Where(5); got != "request 0, position 7 (length 7), page 3, slot 15" {
		t.Errorf("Where(5) = %q", got)
	}
	if got := tb.Holders(28); !strings.Contains(got, "position 0 of request 0") || !strings.Contains(got, "position 0 of request 1") {
		t.Errorf("Holders(28) = %q: want both requests sharing page 7", got)
	}
}

// TestPageTableRefusals: a malformed table fails with the reason.
func TestPageTableRefusals(t *testing.T) {
	for _, tc := range []struct {
		edit func(*PageTable)
		want string
	}{
		{func(t *PageTable) { t.Indptr[1] = 5 }, "kv_indptr decreases"},
		{func(t *PageTable) { t.Indices[0] = 99 }, "outside the pool's pages"},
		{func(t *PageTable) { t.LastPageLen[0] = 5 }, "kv_last_page_len 5"},
		{func(t *PageTable) { t.LastPageLen[3] = 1 }, "0 for a request of no pages"},
		{func(t *PageTable) { t.Indices = t.Indices[:5] }, "kv_indptr ends at 6 but kv_indices holds 5"},
		{func(t *PageTable) { t.Positions[1] = 5 }, "both land on slot 13"},
	} {
		tb := flashinferTable()
		tc.edit(tb)
		if err := tb.Validate(64, 4); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v; want %q", err, tc.want)
		}
	}
}

// TestDrawTable: drawn page-table cases are valid, their slots those of
// an independent walk over each request's pages, and over many draws
// they hold what kernels get wrong: shared and out-of-order pages,
// padded requests, empty last pages, padded rows at a request's end.
func TestDrawTable(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	seen := map[string]int{}
	for _, p := range []int{1, 4, 16} {
		g := &Gen{Slots: 64 * p, PageSize: p, Padding: PadTable, MaxCapacity: 48}
		for range 300 {
			c := g.Draw(rng)
			if err := c.Validate(g.Slots); err != nil {
				t.Fatalf("P=%d: %v: %v", p, c, err)
			}
			tb := c.Table
			// The walk: request b's slots in position order.
			slotsOf := make([][]int64, tb.Requests())
			owner := map[int32]map[int]bool{}
			for b := range tb.Requests() {
				pages := tb.Indices[tb.Indptr[b]:tb.Indptr[b+1]]
				for k, pg := range pages {
					for e := range p {
						slotsOf[b] = append(slotsOf[b], int64(pg)*int64(p)+int64(e))
					}
					if owner[pg] == nil {
						owner[pg] = map[int]bool{}
					}
					owner[pg][b] = true
					if k > 0 && pg < pages[k-1] {
						seen["out of order"]++
					}
				}
				n := len(pages)
				switch {
				case n == 0:
					seen["no pages"]++
				case tb.LastPageLen[b] == 0:
					seen["empty last page"]++
				}
			}
			for _, o := range owner {
				if len(o) > 1 {
					seen["shared page"]++
				}
			}
			for i := range c.Capacity() {
				b, pos := tb.Batch[i], int(tb.Positions[i])
				length := 0
				if n := int(tb.Indptr[b+1] - tb.Indptr[b]); n > 0 {
					length = (n-1)*p + int(tb.LastPageLen[b])
				}
				if i < c.Valid {
					if pos >= length || c.Loc[i] != slotsOf[b][pos] {
						t.Fatalf("%v: row %d at position %d of request %d (length %d): loc %d", c, i, pos, b, length, c.Loc[i])
					}
					continue
				}
				if pos < length {
					t.Fatalf("%v: padded row %d inside request %d", c, i, b)
				}
				if pos == length && length > 0 {
					seen["padded at a request's length"]++
				}
				if length == 0 {
					seen["padded into a request of no pages"]++
				}
			}
		}
	}
	for _, k := range []string{"out of order", "no pages", "empty last page", "shared page", "padded at a request's length", "padded into a request of no pages"} {
		if seen[k] == 0 {
			t.Errorf("never drawn: %s (drawn: %v)", k, seen)
		}
	}
}

// TestPageTableStores: fusedstore stores FlashInfer's caches by page
// table without a finding, and its page-table-last-overrun mutant is
// caught, its report naming the row's request, position, page and slot.
func TestPageTableStores(t *testing.T) {
	for _, name := range []string{"flashinfer-nhd", "flashinfer-hnd"} {
		d := layout.Dims{Heads: 3, HeadDim: 64, PageSize: 16}
		for _, variant := range []string{"", "page-table-last-overrun"} {
			s := suite(t, "fusedstore", variant)
			s.Layouts = []*layout.Layout{engineLayout(t, name, d)}
			s.Paddings = []Padding{PadTable}
			s.Cases, s.Slots, s.MaxCapacity, s.StopAtFirst = 60, 256*d.PageSize, 48, variant != ""
			for _, v := range s.verdicts(t) {
				switch {
				case variant == "" && !v.Outcome.Passed():
					t.Errorf("%s: %s", name, failureText(v.Outcome.Failure))
				case variant != "" && v.Outcome.Passed():
					t.Errorf("%s: %s passed %d cases", name, variant, v.Outcome.Cases)
				case variant != "":
					f := v.Outcome.Failure
					if f.Property != oracle.Padding {
						t.Errorf("%s: %s caught by %s; want padding", name, variant, f.Property)
					}
					text := failureText(f)
					if !strings.Contains(text, " is request ") || !strings.Contains(text, "page ") {
						t.Errorf("%s: the report does not place the row in the table: %s", name, text)
					}
					t.Logf("%s: %s caught at case %d: %s", name, variant, v.Outcome.Cases, text)
				}
			}
		}
	}
}

// TestPageTableOnCUDA: fusedstore's CUDA page-table store
// (enginestore.cu's enginestore_table) passes on FlashInfer's caches, and
// page-table-last-overrun dies there. Skips without a GPU; on the GPU
// machine: ./scripts/gpu-build, then dist/gpu/store.test -test.run
// 'TestPageTableOnCUDA' -test.v.
func TestPageTableOnCUDA(t *testing.T) {
	backend := arena.CUDA{Dev: cudatest.Device(t)}
	for _, name := range []string{"flashinfer-nhd", "flashinfer-hnd"} {
		for _, d := range []layout.Dims{{Heads: 1, HeadDim: 128, PageSize: 16}, {Heads: 5, HeadDim: 64, PageSize: 32}} {
			for _, variant := range []string{"", "page-table-last-overrun"} {
				s := suite(t, "fusedstore", variant)
				s.Layouts = []*layout.Layout{engineLayout(t, name, d)}
				s.Paddings = []Padding{PadTable}
				s.Cases, s.Slots, s.MaxCapacity, s.Backend, s.StopAtFirst = 200, 512*d.PageSize, 256, backend, variant != ""
				for _, v := range s.verdicts(t) {
					if v.Outcome.Passed() != (variant == "") || len(v.Outcome.Faults) > 0 {
						t.Errorf("%s H=%d D=%d P=%d %q: passed %v after %d cases, faults %v: %s", name, d.Heads, d.HeadDim, d.PageSize,
							variant, v.Outcome.Passed(), v.Outcome.Cases, v.Outcome.Faults, failureText(v.Outcome.Failure))
					} else if variant != "" {
						t.Logf("%s H=%d: %s caught at case %d: %s", name, d.Heads, variant, v.Outcome.Cases, v.Outcome.Failure.Property)
					}
				}
			}
		}
	}
}
