package store

import (
	"fmt"
	"io"
	"strings"

	"github.com/kvharness/kvharness/harness/workload"
)

// MaxCapacity bounds a store batch.
const MaxCapacity = 1 << 20

// Case is one store-kernel call: Loc and Rows have one entry per row of
// the captured batch (the capacity); the first Valid rows are real.
type Case struct {
	Padding Padding        `json:"padding"`
	Valid   int            `json:"valid"`
	Loc     []int64        `json:"loc"`
	Rows    []workload.Row `json:"rows"`
	// Table, under page-table addressing, is what the kernel is given
	// instead of Loc; Loc is then its slots (PageTable.Slots).
	Table *PageTable `json:"page_table,omitempty"`
}

// Capacity is the batch size the call was captured for.
func (s *Case) Capacity() int { return len(s.Loc) }

// Clone returns a deep copy.
func (s *Case) Clone() *Case {
	c := *s
	c.Loc = append([]int64(nil), s.Loc...)
	c.Rows = append([]workload.Row(nil), s.Rows...)
	c.Table = s.Table.Clone()
	return &c
}

// Unpadded returns the same call with only the valid rows: what a correct
// kernel's padded run must be byte-identical to.
func (s *Case) Unpadded() *Case {
	if s.Table != nil {
		return &Case{Padding: PadTable, Valid: s.Valid, Loc: s.Loc[:s.Valid:s.Valid], Rows: s.Rows[:s.Valid:s.Valid],
			Table: s.Table.Pick(seq(s.Valid))}
	}
	return &Case{Padding: PadNone, Valid: s.Valid, Loc: s.Loc[:s.Valid:s.Valid], Rows: s.Rows[:s.Valid:s.Valid]}
}

// seq is 0..n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Validate checks a case against a pool of slots, so that a hand-edited or
// corrupt repro file fails with a reason instead of confusing the oracle.
func (s *Case) Validate(slots int) error {
	c := s.Capacity()
	switch {
	case c < 1 || c > MaxCapacity:
		return fmt.Errorf("capacity %d: want 1..%d", c, MaxCapacity)
	case len(s.Rows) != c:
		return fmt.Errorf("%d rows for %d loc entries", len(s.Rows), c)
	case s.Valid < 0 || s.Valid > c:
		return fmt.Errorf("valid count %d outside 0..%d", s.Valid, c)
	case s.Padding == PadNone && s.Valid != c:
		return fmt.Errorf("padding none but only %d of %d rows valid", s.Valid, c)
	case s.Padding < PadNone || s.Padding > PadTable:
		return fmt.Errorf("unknown padding %d", s.Padding)
	case (s.Padding == PadTable) != (s.Table != nil):
		return fmt.Errorf("padding %s with page table %v: page-table padding goes with a page table, and only it", s.Padding, s.Table != nil)
	}
	if s.Table != nil {
		return s.validateTable(slots)
	}
	seen := make(map[int64]bool, s.Valid)
	for i, slot := range s.Loc[:s.Valid] {
		lo := int64(0)
		if s.Padding == PadSink {
			lo = 1 // slot 0 is the sink; no request owns it
		}
		if slot < lo || slot >= int64(slots) {
			return fmt.Errorf("row %d: valid slot %d outside %d..%d", i, slot, lo, slots-1)
		}
		if seen[slot] {
			return fmt.Errorf("row %d: slot %d already taken by an earlier valid row", i, slot)
		}
		seen[slot] = true
		if s.Rows[i].Kind == workload.RowGarbage {
			return fmt.Errorf("row %d: valid rows hold a value class, not garbage", i)
		}
	}
	for i := s.Valid; i < c; i++ {
		if err := s.checkPadded(i, slots); err != nil {
			return err
		}
	}
	return nil
}

func (s *Case) checkPadded(i, slots int) error {
	slot := s.Loc[i]
	switch s.Padding {
	case PadSink, PadMinus1:
		if slot != s.Padding.Canonical() {
			return fmt.Errorf("row %d: %s padding must hold %d, not %d", i, s.Padding, s.Padding.Canonical(), slot)
		}
	case PadCount:
		if slot < 0 || slot >= int64(slots) {
			return fmt.Errorf("row %d: stale slot %d outside 0..%d", i, slot, slots-1)
		}
	}
	return nil
}

// validateTable checks a page-table case: its table, and Loc its slots.
func (s *Case) validateTable(slots int) error {
	if len(s.Table.Batch) != s.Capacity() {
		return fmt.Errorf("page table: %d batch_indices for %d rows", len(s.Table.Batch), s.Capacity())
	}
	if err := s.Table.Validate(slots, s.Valid); err != nil {
		return err
	}
	for i, slot := range s.Table.Slots() {
		if s.Loc[i] != slot {
			return fmt.Errorf("row %d: loc %d, but its page table places it at %d (%s)", i, s.Loc[i], slot, s.Table.Where(i))
		}
		if i < s.Valid && s.Rows[i].Kind == workload.RowGarbage {
			return fmt.Errorf("row %d: valid rows hold a value class, not garbage", i)
		}
	}
	return nil
}

// String is a one-line summary, e.g. "C=2 n=1 count loc=[5 0]".
func (s *Case) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "C=%d n=%d %s loc=", s.Capacity(), s.Valid, s.Padding)
	if len(s.Loc) <= 16 {
		fmt.Fprint(&b, s.Loc)
	} else {
		fmt.Fprintf(&b, "%v…(%d more)", s.Loc[:16], len(s.Loc)-16)
	}
	if t := s.Table; t != nil {
		fmt.Fprintf(&b, " requests=%d pages=%d", t.Requests(), len(t.Indices))
	}
	return b.String()
}

// where is row i's place in the page table, for a page-table case.
func (s *Case) where(i int) string {
	if s.Table == nil {
		return ""
	}
	return "  (" + s.Table.Where(i) + ")"
}

// Kernel implements Case.
func (s *Case) Kernel() string { return "store" }

// Describe implements Case: the rows, valid then padded, at most 8.
func (s *Case) Describe(w io.Writer, indent string) {
	fmt.Fprintf(w, "%s%v\n", indent, s)
	if t := s.Table; t != nil {
		fmt.Fprintf(w, "%s  kv_indptr %v kv_last_page_len %v kv_indices %v\n", indent, clip32(t.Indptr), clip32(t.LastPageLen), clip32(t.Indices))
	}
	const maxRows = 8
	for i := range min(s.Capacity(), maxRows) {
		role := "valid "
		if i >= s.Valid {
			role = "padded"
		}
		fmt.Fprintf(w, "%s  row %-3d %s loc %-6d %s seed %d%s\n", indent, i, role, s.Loc[i], s.Rows[i].Kind, s.Rows[i].Seed, s.where(i))
	}
	if s.Capacity() > maxRows {
		fmt.Fprintf(w, "%s  … %d more rows in the repro file\n", indent, s.Capacity()-maxRows)
	}
}
