package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/target"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Page-table addressing. FlashInfer's append_paged_kv_cache does not take
// a slot per row: it takes the requests' pages, CSR (kv_indptr delimits
// each request's run of kv_indices; kv_last_page_len is how full its last
// page is), and for each appended token its request (batch_indices) and
// position (positions). A token's slot is
//
//	kv_indices[kv_indptr[b] + pos / P] * P + pos % P
//
// for a position inside its request, pos < (pages - 1) * P + last_page_len.
// A position at or past that length is padding: the rows of a captured
// batch past the real tokens point at padded requests (no pages) or past
// a request's end, and a correct kernel stores none of them. The harness
// computes every slot from the table (Slots), so the oracle judges the
// kernel's writes as it judges a slot list's, and names each violation's
// request, position and page (Where).

// Addressing is how a store call names where each row goes.
type Addressing int

// The addressing modes.
const (
	BySlots     Addressing = iota // loc: one slot per row
	ByPageTable                   // a page table, a request and position per row
)

var addressingNames = []string{"slots", "page-table"}

func (a Addressing) String() string {
	if a >= 0 && int(a) < len(addressingNames) {
		return addressingNames[a]
	}
	return "addressing(" + strconv.Itoa(int(a)) + ")"
}

// ParseAddressing reads a mode's name.
func ParseAddressing(s string) (Addressing, error) {
	for i, n := range addressingNames {
		if s == n {
			return Addressing(i), nil
		}
	}
	return 0, fmt.Errorf("--addressing %q: want slots or page-table", s)
}

// PageTable is one append's addressing, as FlashInfer takes it; every
// array int32, as the engine's are. Batch and Positions have a row per
// row of the case; requests past the real ones have no pages.
type PageTable struct {
	PageSize    int     `json:"page_size"`
	Indptr      []int32 `json:"kv_indptr"`
	Indices     []int32 `json:"kv_indices"`
	LastPageLen []int32 `json:"kv_last_page_len"`
	Batch       []int32 `json:"batch_indices"`
	Positions   []int32 `json:"positions"`
}

// Requests is the number of requests, padded ones included.
func (t *PageTable) Requests() int { return len(t.Indptr) - 1 }

// Pages is request b's page count.
func (t *PageTable) Pages(b int) int { return int(t.Indptr[b+1] - t.Indptr[b]) }

// Len is request b's length in tokens: its full pages and the fill of its
// last one; 0 for a request of no pages.
func (t *PageTable) Len(b int) int {
	n := t.Pages(b)
	if n == 0 {
		return 0
	}
	return (n-1)*t.PageSize + int(t.LastPageLen[b])
}

// Place is row i's page and slot; ok is false for a padded row (its
// position outside its request). page and slot are then where a kernel
// that ignored the bound would write, while the position lies in the
// request's pages (an empty or part-filled last page), else -1.
func (t *PageTable) Place(i int) (page int32, slot int64, ok bool) {
	b, pos := int(t.Batch[i]), int(t.Positions[i])
	if b < 0 || b >= t.Requests() || pos < 0 {
		return -1, -1, false
	}
	if k := pos / t.PageSize; k < t.Pages(b) {
		page = t.Indices[int(t.Indptr[b])+k]
		slot = int64(page)*int64(t.PageSize) + int64(pos%t.PageSize)
		return page, slot, pos < t.Len(b)
	}
	return -1, -1, false
}

// Slots is each row's slot as a slot list would name it: the slot a valid
// row is stored in; for a padded row, where an overrunning kernel would
// write it, or -1.
func (t *PageTable) Slots() []int64 {
	out := make([]int64, len(t.Batch))
	for i := range out {
		_, out[i], _ = t.Place(i)
	}
	return out
}

// Where names row i's place: "request 2, position 17, page 41, slot 659".
func (t *PageTable) Where(i int) string {
	if i < 0 || i >= len(t.Batch) {
		return ""
	}
	b, pos := t.Batch[i], t.Positions[i]
	s := fmt.Sprintf("request %d, position %d", b, pos)
	if int(b) >= 0 && int(b) < t.Requests() {
		s += fmt.Sprintf(" (length %d)", t.Len(int(b)))
	}
	if page, slot, _ := t.Place(i); page >= 0 {
		s += fmt.Sprintf(", page %d, slot %d", page, slot)
	} else {
		s += ", no page"
	}
	return s
}

// Clone returns a deep copy.
func (t *PageTable) Clone() *PageTable {
	if t == nil {
		return nil
	}
	c := *t
	c.Indptr = append([]int32(nil), t.Indptr...)
	c.Indices = append([]int32(nil), t.Indices...)
	c.LastPageLen = append([]int32(nil), t.LastPageLen...)
	c.Batch = append([]int32(nil), t.Batch...)
	c.Positions = append([]int32(nil), t.Positions...)
	return &c
}

// Pick is the table with only rows idx, in that order.
func (t *PageTable) Pick(idx []int) *PageTable {
	c := t.Clone()
	c.Batch, c.Positions = make([]int32, len(idx)), make([]int32, len(idx))
	for k, i := range idx {
		c.Batch[k], c.Positions[k] = t.Batch[i], t.Positions[i]
	}
	return c
}

// Validate checks the table against a pool of slots and a case of valid
// rows: the CSR well formed, every page in the pool, no two valid rows on
// one slot, rows 0..valid-1 inside their requests and the rest outside.
func (t *PageTable) Validate(slots, valid int) error {
	p := t.PageSize
	switch {
	case p < 1:
		return fmt.Errorf("page table: page size %d: want at least 1", p)
	case len(t.Indptr) < 1 || t.Indptr[0] != 0:
		return fmt.Errorf("page table: kv_indptr %v: want requests+1 entries from 0", clip32(t.Indptr))
	case int(t.Indptr[len(t.Indptr)-1]) != len(t.Indices):
		return fmt.Errorf("page table: kv_indptr ends at %d but kv_indices holds %d pages", t.Indptr[len(t.Indptr)-1], len(t.Indices))
	case len(t.LastPageLen) != t.Requests():
		return fmt.Errorf("page table: %d kv_last_page_len entries for %d requests", len(t.LastPageLen), t.Requests())
	case len(t.Positions) != len(t.Batch):
		return fmt.Errorf("page table: %d positions for %d batch_indices", len(t.Positions), len(t.Batch))
	}
	pages := slots / p
	for b := range t.Requests() {
		if t.Indptr[b+1] < t.Indptr[b] {
			return fmt.Errorf("page table: kv_indptr decreases at request %d (%d to %d)", b, t.Indptr[b], t.Indptr[b+1])
		}
		if l := t.LastPageLen[b]; l < 0 || int(l) > p || (t.Pages(b) == 0 && l != 0) {
			return fmt.Errorf("page table: request %d: kv_last_page_len %d outside 0..%d (0 for a request of no pages)", b, l, p)
		}
	}
	for k, pg := range t.Indices {
		if pg < 0 || int(pg) >= pages {
			return fmt.Errorf("page table: kv_indices[%d] = %d outside the pool's pages 0..%d", k, pg, pages-1)
		}
	}
	seen := map[int64]int{}
	for i := range t.Batch {
		_, slot, ok := t.Place(i)
		if ok != (i < valid) {
			return fmt.Errorf("page table: row %d (%s) is %s, but rows 0..%d are the valid ones", i, t.Where(i), map[bool]string{true: "inside its request", false: "padding"}[ok], valid-1)
		}
		if !ok {
			continue
		}
		if j, dup := seen[slot]; dup {
			return fmt.Errorf("page table: rows %d and %d both land on slot %d", j, i, slot)
		}
		seen[slot] = i
	}
	return nil
}

func clip32(xs []int32) []int32 {
	if len(xs) > 8 {
		return xs[:8]
	}
	return xs
}

// tableProto is t on the wire; nil for a slot-list case.
func tableProto(t *PageTable) *kvpb.PageTable {
	if t == nil {
		return nil
	}
	return &kvpb.PageTable{KvIndptr: t.Indptr, KvIndices: t.Indices, KvLastPageLen: t.LastPageLen,
		BatchIndices: t.Batch, Positions: t.Positions}
}

// takesAddressing refuses a target whose plugin (for its variant) does not
// take the addressing asked for.
func takesAddressing(ctx context.Context, p *plugin.Plugin, cfg Config) error {
	d, err := p.Describe(ctx, target.QueryFor(cfg.Variant, cfg.Layout))
	if err != nil {
		return err
	}
	if cfg.Addressing == ByPageTable && !d.PageTable {
		return fmt.Errorf("plugin %s%s takes slot lists only, not page-table addressing: drop --addressing page-table", p.Name, variantLabel(cfg.Variant))
	}
	if cfg.Addressing == BySlots && !d.Slots {
		return fmt.Errorf("plugin %s%s takes page-table addressing only: run it with --addressing page-table", p.Name, variantLabel(cfg.Variant))
	}
	return nil
}

func variantLabel(v string) string {
	if v == "" {
		return ""
	}
	return " (variant " + v + ")"
}

// addressingOf resolves a run's addressing: the one asked for, else
// page-table where the plugin declares that alone; and the paddings it
// runs under (page-table addressing has its own).
func addressingOf(ctx context.Context, s *kind.Session, p kind.Params, paddings []Padding) (Addressing, []Padding, error) {
	a := BySlots
	if p.Addressing != "" {
		var err error
		if a, err = ParseAddressing(p.Addressing); err != nil {
			return 0, nil, err
		}
	} else {
		d, err := s.Plugin.Describe(ctx, plugin.Query{Variant: p.Variant})
		if err != nil {
			return 0, nil, err
		}
		if d.PageTable && !d.Slots {
			a = ByPageTable
		}
	}
	if a == BySlots {
		return a, paddings, nil
	}
	if p.Padding != "" && p.Padding != "all" {
		return 0, nil, fmt.Errorf("--padding %s is a slot list's convention; page-table addressing pads by its table: drop --padding", p.Padding)
	}
	return a, []Padding{PadTable}, nil
}

// addressingFor is the addressing of a row of padding pad.
func addressingFor(pad Padding) Addressing {
	if pad == PadTable {
		return ByPageTable
	}
	return BySlots
}

// placeInTable adds to a violation of a page-table case where its row and
// slot lie in the table: the row's request, position, page and slot, and
// the requests whose pages hold the slot.
func placeInTable(v *oracle.Violation, t *PageTable) {
	var parts []string
	if v.Row >= 0 && v.Row < len(t.Batch) {
		parts = append(parts, "row "+strconv.Itoa(v.Row)+" is "+t.Where(v.Row))
	}
	if _, slot, _ := t.placeOf(v.Row); v.HasSlot && (v.Row < 0 || slot != v.Slot) {
		parts = append(parts, t.Holders(v.Slot))
	}
	for _, p := range parts {
		if p != "" {
			v.Detail = joinDetail(v.Detail, p)
		}
	}
}

// Holders says which requests' pages hold slot, and at which position:
// "slot 659 is entry 3 of page 41, position 19 of request 2 (length 19)".
func (t *PageTable) Holders(slot int64) string {
	if slot < 0 {
		return ""
	}
	p := int64(t.PageSize)
	page, entry := int32(slot/p), int(slot%p)
	s := fmt.Sprintf("slot %d is entry %d of page %d", slot, entry, page)
	held := 0
	for b := range t.Requests() {
		for k := range t.Pages(b) {
			if t.Indices[int(t.Indptr[b])+k] != page {
				continue
			}
			if held < 3 {
				s += fmt.Sprintf(", position %d of request %d (length %d)", k*t.PageSize+entry, b, t.Len(b))
			}
			held++
		}
	}
	switch {
	case held == 0:
		s += ", in no request's pages"
	case held > 3:
		s += fmt.Sprintf(" and %d more", held-3)
	}
	return s
}

// placeOf is Place for a row that may be none (-1).
func (t *PageTable) placeOf(i int) (int32, int64, bool) {
	if i < 0 || i >= len(t.Batch) {
		return -1, -1, false
	}
	return t.Place(i)
}

// Trim is the table with only the requests its rows name, renumbered in
// order; false when it names them all. The rows keep their pages, so
// their slots stay.
func (t *PageTable) Trim() (*PageTable, bool) {
	used := make([]bool, t.Requests())
	for _, b := range t.Batch {
		if b >= 0 && int(b) < len(used) {
			used[b] = true
		}
	}
	out := &PageTable{PageSize: t.PageSize, Indptr: []int32{0}}
	renum := make([]int32, t.Requests())
	for b, u := range used {
		if !u {
			continue
		}
		renum[b] = int32(out.Requests())
		out.Indices = append(out.Indices, t.Indices[t.Indptr[b]:t.Indptr[b+1]]...)
		out.Indptr = append(out.Indptr, int32(len(out.Indices)))
		out.LastPageLen = append(out.LastPageLen, t.LastPageLen[b])
	}
	if out.Requests() == t.Requests() {
		return nil, false
	}
	for i, b := range t.Batch {
		out.Batch = append(out.Batch, renum[b])
		out.Positions = append(out.Positions, t.Positions[i])
	}
	return out, true
}

// trimTable is a page-table case without the requests no row names.
func trimTable(s *Case) []*Case {
	if s.Table == nil {
		return nil
	}
	t, ok := s.Table.Trim()
	if !ok {
		return nil
	}
	c := s.Clone()
	c.Table = t
	return []*Case{c}
}
